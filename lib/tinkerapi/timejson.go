package tinkerapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// The SDK parses datetimes with pydantic, which also accepts timestamps
// without a zone (taken as UTC), a space instead of "T", and unix seconds.
// encoding/json's time.Time accepts only RFC 3339, so the response types
// that carry times decode them through flexTime.

type flexTime struct{ t *time.Time }

var naiveLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02",
}

func (f flexTime) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] != '"' {
		secs, err := strconv.ParseFloat(string(b), 64)
		if err != nil || math.IsInf(secs, 0) || math.IsNaN(secs) {
			return fmt.Errorf("invalid datetime %s", b)
		}
		whole, frac := math.Modf(secs)
		*f.t = time.Unix(int64(whole), int64(frac*1e9)).UTC()
		return nil
	}
	var s string
	if n := len(b); n >= 2 && b[n-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
		s = string(b[1 : n-1]) // the common case: no escapes to decode
	} else if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	return parseDatetime(s, f.t)
}

// parseDatetime reads the text of a datetime string into *t.
func parseDatetime(s string, t *time.Time) error {
	if v, ok := parseUTCDatetime(s); ok {
		*t = v
		return nil
	}
	if v, err := time.Parse(time.RFC3339Nano, s); err == nil {
		*t = v
		return nil
	}
	for _, layout := range naiveLayouts {
		if v, err := time.Parse(layout, s); err == nil {
			*t = v
			return nil
		}
	}
	return fmt.Errorf("invalid datetime %q", s)
}

// flexTimePtr decodes an optional datetime; null leaves the pointer nil.
type flexTimePtr struct{ t **time.Time }

func (f flexTimePtr) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*f.t = nil
		return nil
	}
	var t time.Time
	if err := (flexTime{&t}).UnmarshalJSON(b); err != nil {
		return err
	}
	*f.t = &t
	return nil
}

// UnmarshalJSON accepts the datetime forms pydantic accepts.
func (c *Checkpoint) UnmarshalJSON(b []byte) error {
	type plain Checkpoint
	aux := struct {
		*plain
		Time      flexTime    `json:"time"`
		ExpiresAt flexTimePtr `json:"expires_at"`
	}{plain: (*plain)(c), Time: flexTime{&c.Time}, ExpiresAt: flexTimePtr{&c.ExpiresAt}}
	return json.Unmarshal(b, &aux)
}

// UnmarshalJSON accepts the datetime forms pydantic accepts.
func (r *TrainingRun) UnmarshalJSON(b []byte) error {
	type plain TrainingRun
	aux := struct {
		*plain
		LastRequestTime flexTime `json:"last_request_time"`
	}{plain: (*plain)(r), LastRequestTime: flexTime{&r.LastRequestTime}}
	return json.Unmarshal(b, &aux)
}

// UnmarshalJSON accepts the datetime forms pydantic accepts.
func (a *CheckpointArchiveURL) UnmarshalJSON(b []byte) error {
	type plain CheckpointArchiveURL
	aux := struct {
		*plain
		Expires flexTime `json:"expires"`
	}{plain: (*plain)(a), Expires: flexTime{&a.Expires}}
	return json.Unmarshal(b, &aux)
}

// parseUTCDatetime reads the form servers send, 2026-11-28T20:07:40.123456Z
// (fraction optional, 1 to 9 digits), giving what time.Parse with
// RFC3339Nano gives; anything else reports false for time.Parse to
// decide. A listing of 10,000 checkpoints parses 10,000 such times, so
// the 29th to the 31st are checked here too: sent to time.Parse, those
// days cost several times as much.
func parseUTCDatetime(s string) (time.Time, bool) { return parseUTCDatetimeDay(s, nil) }

// lastDay is the date part of the last time parseUTCDatetimeDay read and
// its day number: a listing's entries mostly share their day, and the
// date's checks and calendar arithmetic were half of each time's cost.
type lastDay struct {
	date  [10]byte // YYYY-MM-DD, valid when set
	days  int64
	valid bool
}

// parseUTCDatetimeDay is parseUTCDatetime, taking the date from last
// (nil: none) when s starts with the same ten bytes, and leaving s's date
// in last.
func parseUTCDatetimeDay(s string, last *lastDay) (time.Time, bool) {
	if len(s) < 20 || s[len(s)-1] != 'Z' || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	var days int64
	if last != nil && last.valid && s[:10] == string(last.date[:]) {
		days = last.days
	} else {
		hi, lo := two(s, 0), two(s, 2)
		year, month, day := hi*100+lo, two(s, 5), two(s, 8)
		if (hi|lo) < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
			return time.Time{}, false
		}
		days = daysFromCivil(year, month, day)
		if last != nil {
			copy(last.date[:], s[:10])
			last.days, last.valid = days, true
		}
	}
	hour, minute, sec := two(s, 11), two(s, 14), two(s, 17)
	if (hour|minute|sec) < 0 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := s[19 : len(s)-1]; frac != "" {
		n, ok := digits(frac[1:])
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 || !ok {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			n *= 10
		}
		nsec = n
	}
	// What time.Date gives (its location UTC is stored as nil, as UTC's
	// is), without its normalisation and calendar tables.
	unix := days*86400 + int64(hour*3600+minute*60+sec)
	return time.Unix(unix, int64(nsec)).UTC(), true
}

// two reads the two ASCII digits at s[i:], or gives -1.
func two(s string, i int) int {
	a, b := int(s[i])-'0', int(s[i+1])-'0'
	if uint(a) > 9 || uint(b) > 9 {
		return -1
	}
	return a*10 + b
}

// daysFromCivil is the number of days from 1970-01-01 to a valid date of
// the proleptic Gregorian calendar (year 0 to 9999), by Howard Hinnant's
// days_from_civil: years start in March, so a leap day ends its year.
func daysFromCivil(year, month, day int) int64 {
	y := year
	if month <= 2 {
		y--
	}
	era := (y+400)/400 - 1 // floor(y/400) for y >= -400
	yoe := y - era*400
	doy := (153*((month+9)%12)+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// daysIn is the number of days in month (1-12) of year, in the
// proleptic Gregorian calendar time.Parse checks against.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// digits reads s, all ASCII digits (at most 9), as a number.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(s) > 0
}
