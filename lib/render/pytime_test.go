package render

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// pyTimeByFormat is PyTime as time.Format and fmt write it: the reference
// AppendPyTime's hand-laid digits must equal.
func pyTimeByFormat(t time.Time) string {
	t = t.UTC()
	s := t.Format("2006-01-02 15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		s += fmt.Sprintf(".%06d", us)
	}
	return s + "+00:00"
}

func TestAppendPyTimeMatchesFormat(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	times := []time.Time{
		{},
		time.Date(1, 1, 1, 0, 0, 0, 999, time.UTC), // under a microsecond
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 3, 4, 5, 6, 7, 8000, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 2, 29, 23, 59, 59, 0, time.UTC),
		time.Date(0, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2100, 2, 28, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 22, 7, 35, 45, 684189000, time.UTC),
		time.Date(2026, 1, 1, 2, 0, 0, 1000, east), // the previous day in UTC
	}
	r := rand.New(rand.NewSource(1))
	for range 2000 {
		times = append(times, time.Unix(r.Int63n(1<<36)-(1<<35), r.Int63n(1e9)).In(east))
	}
	for range 2000 { // the whole range AppendDateTime lays out itself, years 0-9999
		times = append(times, time.Unix(r.Int63n(320_000_000_000)-62_200_000_000, 0).UTC())
	}
	for _, ts := range times {
		want := pyTimeByFormat(ts)
		if got := string(AppendPyTime([]byte("x"), ts)); got != "x"+want {
			t.Fatalf("AppendPyTime(%v) = %q, want x%q", ts, got, want)
		}
		if got := PyTime(ts); got != want {
			t.Fatalf("PyTime(%v) = %q, want %q", ts, got, want)
		}
	}
}

// TestPyTimesMatchesAppendPyTime: keeping the last date gives
// AppendPyTime's bytes, over times that share days (before 1970 too),
// the ends of years 0 and 9999 and years outside them.
func TestPyTimesMatchesAppendPyTime(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	days := []int64{-719529, -719528, -1, 0, 20421, 2932896, 2932897}
	var p PyTimes
	for range 20000 {
		unix := days[r.Intn(len(days))]*86400 + r.Int63n(86400)
		if r.Intn(8) == 0 {
			unix = r.Int63n(1<<40) - 1<<39
		}
		tm := time.Unix(unix, r.Int63n(1e9)*int64(r.Intn(2))).In(time.FixedZone("x", r.Intn(50000)-25000))
		got, want := p.Append([]byte("x"), tm), AppendPyTime([]byte("x"), tm)
		if !bytes.Equal(got, want) {
			t.Fatalf("PyTimes.Append(%v) = %q, AppendPyTime gives %q", tm, got, want)
		}
	}
}
