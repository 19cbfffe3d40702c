package tinkerapi

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fastCases are listing bodies the fast reader must either decode exactly
// as encoding/json does or hand back to it.
var fastCases = []string{
	checkpointPage(3),
	`{"checkpoints": [], "cursor": null}`,
	`{"checkpoints": null}`,
	`{}`,
	` {"cursor": {"offset": 0, "limit": 2, "total_count": -0}, "checkpoints": [null, {}]} `,
	`{"checkpoints": [{"checkpoint_id": null, "time": null, "expires_at": "2026-01-02T03:04:05Z", "public": true, "size_bytes": null}]}`,
	`{"checkpoints": [{"checkpoint_id": "weights/é", "checkpoint_type": "training", "time": "2026-01-02 03:04:05", "tinker_path": "tinker://r/weights/é", "training_run_id": "r"}]}`,
	`{"checkpoints": [{"time": "yesterday"}]}`,
	`{"checkpoints": [{"time": 1767000000.5}]}`,
	`{"checkpoints": [{"checkpoint_id": "a\"b"}]}`,
	`{"checkpoints": [{"checkpoint_id": "a\u0041"}]}`,
	"{\"checkpoints\": [{\"checkpoint_id\": \"a\xffb\"}]}",
	`{"checkpoints": [{"Checkpoint_ID": "x"}]}`,
	`{"checkpoints": [{"checkpoint_id": "x", "checkpoint_id": "y"}]}`,
	`{"checkpoints": [{"extra": [1, {"a": 2}], "checkpoint_id": "x"}]}`,
	`{"checkpoints": [{"size_bytes": 1.5}]}`,
	`{"checkpoints": [{"size_bytes": 1e3}]}`,
	`{"checkpoints": [{"size_bytes": 012}]}`,
	`{"checkpoints": [{"size_bytes": 99999999999999999999}]}`,
	`{"checkpoints": [{"size_bytes": "5"}]}`,
	`{"checkpoints": [{"public": nul}]}`,
	`{"checkpoints": [{"public": truex}]}`,
	`{"checkpoints": [{},]}`,
	`{"checkpoints": [{"checkpoint_id": "x",}]}`,
	`{"checkpoints": []} trailing`,
	`{"checkpoints": {}}`,
	`{"checkpoints": [], "checkpoints": []}`,
	`{"cursor": {"offset": 1, "offset": 2}}`,
	// Complete entries, which the fast reader takes.
	`{"checkpoints": [{"checkpoint_id": "weights/0001", "checkpoint_type": "training", "time": "2026-11-28T20:07:40.000000Z", "tinker_path": "tinker://r:train:0/weights/0001", "size_bytes": 92520, "public": false, "expires_at": null}], "cursor": {"offset": 0, "limit": 1, "total_count": 10000}}`,
	`{"checkpoints":[{"checkpoint_id":"sampler_weights/final","checkpoint_type":"sampler","time":"2026-11-28T20:07:40.5Z","tinker_path":"tinker://r/sampler_weights/final","size_bytes":null,"public":true,"expires_at":"2026-12-01T00:00:00Z","training_run_id":"r"},{"checkpoint_id":"weights/é","checkpoint_type":"training","time":"2026-01-02 03:04:05","tinker_path":"tinker://r/weights/é","public":null,"training_run_id":null}]}`,
	`{"cursor": null, "checkpoints": [{"tinker_path": "p", "time": "2026-02-29T00:00:00Z", "checkpoint_type": "training", "checkpoint_id": "x", "size_bytes": -0}]}`,
	`{"checkpoints": [{"checkpoint_id": "x", "checkpoint_type": "training", "time": "2026-01-02T03:04:05+02:00", "tinker_path": "p"}]}`,
	// The compact layout servers write, which compactEntry reads, and near
	// misses of it that the general lexer (or encoding/json) must decide.
	`{"checkpoints":[` + compactEntry1 + `,` + compactEntry2 + `],"cursor":{"offset":0,"limit":2,"total_count":2}}`,
	`{"checkpoints":[{"checkpoint_id":"a\"b","checkpoint_type":"training","time":"2026-01-02T03:04:05Z","tinker_path":"p","size_bytes":1,"public":false,"expires_at":null}]}`,
	"{\"checkpoints\":[{\"checkpoint_id\":\"a\xffb\",\"checkpoint_type\":\"training\",\"time\":\"2026-01-02T03:04:05Z\",\"tinker_path\":\"p\",\"size_bytes\":1,\"public\":false,\"expires_at\":null}]}",
	"{\"checkpoints\":[{\"checkpoint_id\":\"a\tb\",\"checkpoint_type\":\"training\",\"time\":\"2026-01-02T03:04:05Z\",\"tinker_path\":\"p\",\"size_bytes\":1,\"public\":false,\"expires_at\":null}]}",
	`{"checkpoints":[{"checkpoint_id":"x","checkpoint_type":"training","time":"2026-01-02T03:04:05Z","tinker_path":"p","size_bytes":1.5,"public":false,"expires_at":null}]}`,
	`{"checkpoints":[{"checkpoint_id":"x","checkpoint_type":"training","time":"2026-01-02T03:04:05Z","tinker_path":"p","size_bytes":012,"public":false,"expires_at":null}]}`,
	`{"checkpoints":[{"checkpoint_id":"x","checkpoint_type":"training","time":"2026-01-02T03:04:05Z","tinker_path":"p","size_bytes":1e3,"public":false,"expires_at":null}]}`,
	`{"checkpoints":[{"checkpoint_id":"x","checkpoint_type":"training","time":"2026-01-02T03:04:05Z","tinker_path":"p","size_bytes":-,"public":false,"expires_at":null}]}`,
	`{"checkpoints":[{"checkpoint_id":"x","checkpoint_type":"training","time":"2026-01-02T03:04:05Z","tinker_path":"p","size_bytes":-17,"public":null,"expires_at":null}]}`,
	`{"checkpoints":[{"checkpoint_id":"x","checkpoint_type":"training","time":"2026-01-02T03:04:05Z","tinker_path":"p","size_bytes":1234567890123456789,"public":false,"expires_at":null}]}`,
	`{"checkpoints":[{"checkpoint_id":"x","checkpoint_type":"training","time":"2026-11-31T03:04:05Z","tinker_path":"p","size_bytes":1,"public":false,"expires_at":null}]}`,
	`{"checkpoints":[{"checkpoint_id":"x","checkpoint_type":"training","time":"2026-01-02T03:04:05+02:00","tinker_path":"p","size_bytes":1,"public":false,"expires_at":"2026-01-02 03:04:05"}]}`,
	`{"checkpoints":[{"checkpoint_id":"x","checkpoint_type":"weights","time":"2026-01-02T03:04:05Z","tinker_path":"p","size_bytes":1,"public":false,"expires_at":null}]}`,
	`{"checkpoints":[{"checkpoint_id":"x","checkpoint_type":"training","time":"2026-01-02T03:04:05Z","tinker_path":"p","size_bytes":1,"public":nul,"expires_at":null}]}`,
	`{"checkpoints":[{"checkpoint_id":"x","checkpoint_type":"training","time":"2026-01-02T03:04:05Z","tinker_path":"p","size_bytes":1,"public":false,"expires_at":null,"training_run_id":"r"}]}`,
	`{"checkpoints":[{"checkpoint_id":"x","checkpoint_type":"training","time":"2026-01-02T03:04:05Z","tinker_path":"p","size_bytes":1,"public":false,"expires_at":"2026-01-02T03:04:05Z"`,
	// Complete but invalid, which it leaves to the generic reader's errors.
	`{"checkpoints": [{"checkpoint_id": "x", "checkpoint_type": "weights", "time": "2026-01-02T03:04:05Z", "tinker_path": "p"}]}`,
	`{"checkpoints": [{"checkpoint_id": "x", "checkpoint_type": "training", "time": "2026-01-02T03:04:05Z"}]}`,
	`{"checkpoints": [{"checkpoint_id": "x", "checkpoint_type": "training", "time": "2026-01-02T03:04:05Z", "tinker_path": "p", "expires_at": "soon"}]}`,
	`{"checkpoints": [{"checkpoint_id": "x", "checkpoint_type": "training", "time": "2026-01-02T03:04:05Z", "tinker_path": "p"}], "cursor": {"offset": null}}`,
	`[]`,
	``,
	`{"checkpoints": [`,
}

// compactEntry1 and compactEntry2 are entries as lib/server writes them.
const (
	compactEntry1 = `{"checkpoint_id":"sampler_weights/final","checkpoint_type":"sampler","time":"2026-11-29T22:40:50.000000Z","tinker_path":"tinker://1454ab9c-834d-5208-b8d2-65487221f2e7:train:0/sampler_weights/final","size_bytes":48448,"public":false,"expires_at":null}`
	compactEntry2 = `{"checkpoint_id":"weights/été","checkpoint_type":"training","time":"2024-02-29T23:59:59.5Z","tinker_path":"tinker://r:train:0/weights/été","size_bytes":null,"public":true,"expires_at":"2026-12-31T00:00:00Z"}`
)

// TestCompactEntryTakesTheServersForm: the servers' layout is read by the
// compact path (not only accepted by the general one), and a near miss
// leaves the position where it was for the general lexer.
func TestCompactEntryTakesTheServersForm(t *testing.T) {
	for _, e := range []string{compactEntry1, compactEntry2} {
		l := &wireLex{b: []byte(e), ok: true, text: e}
		var c Checkpoint
		if !l.compactEntry(&c) || l.i != len(e) || c.CheckpointID == "" || c.Time.IsZero() {
			t.Fatalf("compactEntry(%s) = %+v at %d: not taken", e, c, l.i)
		}
	}
	miss := compactEntry1[:len(compactEntry1)-1] + `,"training_run_id":"r"}`
	l := &wireLex{b: []byte(miss), ok: true, text: miss}
	var c Checkpoint
	if l.compactEntry(&c) || l.i != 0 || c != (Checkpoint{}) {
		t.Fatalf("compactEntry took %s: %+v at %d", miss, c, l.i)
	}
}

// The fast reader agrees with encoding/json wherever it answers.
func TestFastCheckpointsMatchesEncodingJSON(t *testing.T) {
	fast := 0
	for _, body := range fastCases {
		if checkFastAgrees(t, body) {
			fast++
		}
	}
	if fast < 4 {
		t.Errorf("the fast reader took only %d of the plain bodies", fast)
	}
}

// checkFastAgrees compares the two readers on body and says whether the
// fast one answered: where it does, encoding/json and checkCheckpoints
// give the same listing without error.
func checkFastAgrees(t *testing.T, body string) bool {
	t.Helper()
	got, ok := fastCheckpoints([]byte(body), nil)
	if !ok {
		return false
	}
	want, err := decodeCheckpointsGeneric([]byte(body))
	if err != nil {
		t.Errorf("fast reader accepted %q, which the generic reader refuses: %v", body, err)
		return true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q:\nfast    %+v\nreflect %+v", body, got, want)
	}
	// What a JSON listing keeps of it: the pack gives the entries back.
	checkPackRoundTrip(t, got.Checkpoints)
	return true
}

// The checked results and errors of a listing are the same through either
// reader.
func TestDecodeCheckpointsSameEitherWay(t *testing.T) {
	for _, body := range fastCases {
		got, gerr := decodeCheckpoints([]byte(body), nil)
		want, werr := decodeCheckpointsGeneric([]byte(body))
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %+v, %v; want %+v, %v", body, got, gerr, want, werr)
		}
	}
}

// decodeCheckpointsGeneric is decodeCheckpoints through encoding/json only.
func decodeCheckpointsGeneric(body []byte) (*CheckpointsListResponse, error) {
	var w checkpointsWire
	if err := wireDecode(body, &w); err != nil {
		return nil, err
	}
	return checkCheckpoints(&w, nil)
}

func FuzzFastCheckpoints(f *testing.F) {
	for _, body := range fastCases {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) { checkFastAgrees(t, body) })
}

// TestParseUTCDatetimeMatchesTimeParse: the fast path gives time.Parse's
// time (==, so the location too) wherever it answers, and answers for the
// form servers send.
func TestParseUTCDatetimeMatchesTimeParse(t *testing.T) {
	cases := []string{
		"2026-11-28T20:07:40.000000Z", "2026-11-28T20:07:40Z", "2026-11-28T20:07:40.1Z", "2026-11-28T20:07:40.123456789Z",
		"2026-11-28T20:07:40.1234567891Z", "2026-02-29T00:00:00Z", "2024-02-29T00:00:00Z", "2026-02-30T00:00:00Z",
		"2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z",
		"2026-01-01T23:59:60Z", "2026-11-29T00:00:00Z", "2026-11-30T23:59:59.5Z", "2026-11-31T00:00:00Z", "2026-12-31T00:00:00Z", "2000-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-01-01t23:59:59Z", "2026-01-01T23:59:59z", "2026-01-01T23:59:59.Z", "2026-01-01T23:59:59,5Z",
		"0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "+026-01-01T00:00:00Z", "2026-1-01T00:00:00Z",
		"2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00.5+02:00", "2026-01-01 00:00:00Z", "2026-01-01T00:00:0aZ", "",
	}
	r := rand.New(rand.NewSource(3))
	for range 3000 {
		ts := time.Unix(r.Int63n(1<<37)-(1<<36), r.Int63n(1e9)).UTC()
		cases = append(cases, ts.Format(time.RFC3339Nano), ts.Format("2006-01-02T15:04:05.000000Z"))
	}
	answered := 0
	for _, s := range cases {
		got, ok := parseUTCDatetime(s)
		if !ok {
			// Every valid time in the servers' form with a four-digit
			// year is answered here, whatever its day of the month.
			if _, err := time.Parse(time.RFC3339Nano, s); err == nil && serversForm(s) {
				t.Fatalf("parseUTCDatetime(%q) left a valid time of the servers' form to time.Parse", s)
			}
			continue
		}
		answered++
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || got != want {
			t.Fatalf("parseUTCDatetime(%q) = %v, time.Parse gives %v, %v", s, got, want, err)
		}
	}
	if _, ok := parseUTCDatetime("2026-11-28T20:07:40.000000Z"); !ok || answered < 3000 {
		t.Fatalf("the fast path answered %d of %d, not the servers' form", answered, len(cases))
	}
}

// TestParseUTCDatetimeDayMatches: a date taken from the last one read
// gives what reading it again gives, valid or not, in a sequence where
// each date comes back with other clocks (valid and not) and other dates
// come between.
func TestParseUTCDatetimeDayMatches(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	dates := []string{"2026-11-29", "2026-11-30", "2024-02-29", "2026-02-29", "0000-01-01", "9999-12-31", "2026-13-01", "1969-12-31"}
	clocks := []string{"T00:00:00Z", "T23:59:59.999999Z", "T20:07:40.000000Z", "T24:00:00Z", "T23:60:00Z", "T12:00:00.Z", "T12:00:00", "t12:00:00Z", "T1:00:00Z"}
	var last lastDay
	for range 20000 {
		s := dates[r.Intn(len(dates))] + clocks[r.Intn(len(clocks))]
		got, gotOK := parseUTCDatetimeDay(s, &last)
		want, wantOK := parseUTCDatetime(s)
		if got != want || gotOK != wantOK {
			t.Fatalf("parseUTCDatetimeDay(%q) after %q = %v, %v; without it %v, %v", s, last.date[:], got, gotOK, want, wantOK)
		}
	}
}

// serversForm: YYYY-MM-DDTHH:MM:SS, an optional fraction of 1 to 9
// digits, and Z.
func serversForm(s string) bool {
	return len(s) >= 20 && len(s) <= 30 && s[0] >= '0' && s[0] <= '9' && s[10] == 'T' && s[len(s)-1] == 'Z' &&
		(len(s) == 20 || s[19] == '.')
}

// TestPlainStringMatchesBytewise: the word-at-a-time test agrees with the
// plain loop on strings built from the bytes at its edges, at every length
// and alignment.
func TestPlainStringMatchesBytewise(t *testing.T) {
	edge := []byte{0x00, 0x1f, 0x20, 0x21, '"', '\\', 0x5b, 0x5d, 0x7e, 0x7f, 0x80, 0xbf, 0xc3, 0xa9, 0xe6, 0x97, 0xa5, 0xff, 'a', 'Z'}
	r := rand.New(rand.NewSource(5))
	for range 20000 {
		b := make([]byte, r.Intn(40))
		for i := range b {
			if r.Intn(4) == 0 {
				b[i] = edge[r.Intn(len(edge))]
			} else {
				b[i] = byte('a' + r.Intn(26))
			}
		}
		want := utf8.Valid(b)
		for _, c := range b {
			if c == '\\' || c < 0x20 {
				want = false
			}
		}
		if got := plainString(b); got != want {
			t.Fatalf("plainString(%q) = %v, want %v", b, got, want)
		}
	}
}

// TestDecodeCheckpointsAppendsToDst: through either reader, a listing
// decoded into dst keeps dst's entries, appends the same entries as a
// decode of its own, and lands in dst's spare capacity when they fit.
func TestDecodeCheckpointsAppendsToDst(t *testing.T) {
	mark := Checkpoint{CheckpointID: "kept"}
	for _, body := range fastCases {
		want, werr := decodeCheckpoints([]byte(body), nil)
		dst := append(make([]Checkpoint, 0, 64), mark)
		got, gerr := decodeCheckpoints([]byte(body), dst)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%q: err %v, want %v", body, gerr, werr)
			continue
		}
		if werr != nil {
			continue
		}
		if got.Checkpoints[0] != mark || !reflect.DeepEqual(got.Checkpoints[1:], want.Checkpoints) {
			t.Errorf("%q: got %+v, want %+v after the kept entry", body, got.Checkpoints, want.Checkpoints)
		}
		if &got.Checkpoints[0] != &dst[0] {
			t.Errorf("%q: decoded into a slice of its own, not dst", body)
		}
	}
}

// TestPlainStringEveryPosition: plainString agrees with a byte-by-byte
// reading at every length up to 40 with one unusual byte (or a multi-byte
// rune, valid or cut) at every position, the overlapping last word
// included.
func TestPlainStringEveryPosition(t *testing.T) {
	ref := func(s []byte) bool {
		for _, c := range s {
			if c == '\\' || c < 0x20 {
				return false
			}
		}
		return utf8.Valid(s)
	}
	for n := 0; n <= 40; n++ {
		for pos := 0; pos < n; pos++ {
			for _, odd := range []string{"\\", "\x1f", "\x00", "\x7f", "é", "\xc3", "\xe2\x82", "€", "\xff", `"`} {
				s := []byte(strings.Repeat("a", pos) + odd + strings.Repeat("b", n))[:n]
				if got, want := plainString(s), ref(s); got != want {
					t.Fatalf("plainString(%q) = %v, want %v", s, got, want)
				}
			}
		}
	}
}
