package tinkerapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
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
	`[]`,
	``,
	`{"checkpoints": [`,
}

// The fast reader agrees with encoding/json wherever it answers.
func TestFastCheckpointsMatchesEncodingJSON(t *testing.T) {
	fast := 0
	for _, body := range fastCases {
		if checkFastAgrees(t, body) {
			fast++
		}
	}
	if fast < 6 {
		t.Errorf("the fast reader took only %d of the plain bodies", fast)
	}
}

// checkFastAgrees compares the two readers on body and says whether the
// fast one answered.
func checkFastAgrees(t *testing.T, body string) bool {
	t.Helper()
	var got, want checkpointsWire
	if !fastCheckpoints([]byte(body), &got) {
		return false
	}
	if err := json.Unmarshal([]byte(body), &want); err != nil {
		t.Errorf("fast reader accepted %q, which encoding/json refuses: %v", body, err)
		return true
	}
	if g, w := wireString(got), wireString(want); g != w {
		t.Errorf("%q:\nfast    %s\nreflect %s", body, g, w)
	}
	return true
}

// wireString spells out a listing with its pointers followed.
func wireString(w checkpointsWire) string {
	var b strings.Builder
	deref := func(v any) string {
		rv := reflect.ValueOf(v)
		if rv.IsNil() {
			return "nil"
		}
		return fmt.Sprintf("%q", fmt.Sprint(rv.Elem().Interface()))
	}
	tm := func(t wireTime) string { return fmt.Sprintf("{%v %v %v}", t.t, t.set, t.err) }
	if w.Cursor != nil {
		fmt.Fprintf(&b, "cursor %s %s %s; ", deref(w.Cursor.Offset), deref(w.Cursor.Limit), deref(w.Cursor.TotalCount))
	}
	if w.Checkpoints == nil {
		return b.String() + "checkpoints nil"
	}
	for _, c := range *w.Checkpoints {
		fmt.Fprintf(&b, "[%s %s %s %s %s %s %s %s] ", deref(c.CheckpointID), deref(c.CheckpointType), tm(c.Time),
			deref(c.TinkerPath), deref(c.SizeBytes), deref(c.Public), tm(c.ExpiresAt), deref(c.TrainingRunID))
	}
	return b.String()
}

// The checked results and errors of a listing are the same through either
// reader.
func TestDecodeCheckpointsSameEitherWay(t *testing.T) {
	for _, body := range fastCases {
		got, gerr := decodeCheckpoints([]byte(body))
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
	return checkCheckpoints(&w)
}

func FuzzFastCheckpoints(f *testing.F) {
	for _, body := range fastCases {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) { checkFastAgrees(t, body) })
}
