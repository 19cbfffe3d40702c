package render

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/tinkershell/tinker/lib/pylit"
)

// Size formats a byte count like the official CLI: binary units, one
// decimal, the unit chosen before rounding (1048575 B is "1024.0 KB").
func Size(n int64) string {
	if n < 0 {
		return "N/A"
	}
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, unit := range []string{"KB", "MB", "GB", "TB", "PB"} {
		v /= 1024
		if v < 1024 {
			return roundHalfEven1(v) + " " + unit
		}
	}
	return roundHalfEven1(v/1024) + " EB"
}

func roundHalfEven1(v float64) string {
	return strconv.FormatFloat(math.RoundToEven(v*10)/10, 'f', 1, 64)
}

// SizePtr formats an optional size, "N/A" when absent.
func SizePtr(n *int64) string {
	if n == nil {
		return "N/A"
	}
	return Size(*n)
}

// Ago formats t relative to now the way the official CLI does:
// "just now", "3 minutes ago", "in 2 days", "2 weeks ago", or a date.
func Ago(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	days := int64(d / (24 * time.Hour))
	secs := int64(d / time.Second)
	var n int64
	var unit string
	switch {
	case days > 30:
		return t.Format("2006-01-02")
	case days > 7:
		n, unit = days/7, "week"
	case days > 0:
		n, unit = days, "day"
	case secs > 3600:
		n, unit = secs/3600, "hour"
	case secs > 60:
		n, unit = secs/60, "minute"
	default:
		if future {
			return "in less than a minute"
		}
		return "just now"
	}
	s := fmt.Sprintf("%d %s", n, unit)
	if n != 1 {
		s += "s"
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// AgoPtr formats an optional time, using missing when absent.
func AgoPtr(t *time.Time, now time.Time, missing string) string {
	if t == nil {
		return missing
	}
	return Ago(*t, now)
}

// PyTime renders t the way Python's str(datetime) does for an aware UTC
// time, which the official CLI's JSON output uses:
// "2026-11-22 07:35:45.684189+00:00" (microseconds only when non-zero).
func PyTime(t time.Time) string {
	var b [40]byte
	return string(AppendPyTime(b[:0], t))
}

// AppendPyTime appends PyTime(t) to dst; a listing of 10,000 checkpoints
// formats 10,000 times, and time.Format with fmt showed in its profile.
func AppendPyTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	dst, ok := AppendDateTime(dst, t, ' ')
	if !ok {
		dst = t.AppendFormat(dst, "2006-01-02 15:04:05")
	}
	if us := t.Nanosecond() / 1000; us != 0 {
		dst = AppendDigits(append(dst, '.'), us, 6)
	}
	return append(dst, "+00:00"...)
}

// PyTimes appends times as AppendPyTime does, keeping the date of the
// last one: a listing's times mostly share their day, and t.Date was a
// third of each time's cost. The zero value is ready to use.
type PyTimes struct {
	day   int64    // Unix day of date, when valid
	date  [10]byte // YYYY-MM-DD
	valid bool
}

// Append appends AppendPyTime(dst, t).
func (p *PyTimes) Append(dst []byte, t time.Time) []byte {
	unix := t.Unix()
	day := unix / 86400
	if unix%86400 < 0 {
		day--
	}
	if p.valid && day == p.day {
		sod := int(unix - day*86400)
		var b [19]byte
		copy(b[:], p.date[:])
		b[10], b[13], b[16] = ' ', ':', ':'
		put2(b[11:], sod/3600)
		put2(b[14:], sod/60%60)
		put2(b[17:], sod%60)
		dst = append(dst, b[:]...)
	} else {
		start := len(dst)
		var ok bool
		if dst, ok = AppendDateTime(dst, t, ' '); !ok {
			p.valid = false
			return AppendPyTime(dst, t)
		}
		copy(p.date[:], dst[start:])
		p.day, p.valid = day, true
	}
	if us := t.Nanosecond() / 1000; us != 0 {
		dst = AppendDigits(append(dst, '.'), us, 6)
	}
	return append(dst, "+00:00"...)
}

// AppendDateTime appends t in UTC as YYYY-MM-DD, sep, HH:MM:SS: how both
// the official CLI's JSON (sep ' ') and the service's wire times (sep 'T')
// begin. It runs for every time of every listing, so the date comes from
// one t.Date, the clock from the Unix seconds, and the digits are laid
// into a fixed array (t.Clock and a digit loop per field cost as much
// again). A year outside 0-9999 appends nothing and reports false: its
// digits and sign follow time's own rules (t.AppendFormat).
func AppendDateTime(dst []byte, t time.Time, sep byte) ([]byte, bool) {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return dst, false
	}
	sod := int(t.Unix() % 86400)
	if sod < 0 {
		sod += 86400
	}
	var b [19]byte
	put2(b[0:], year/100)
	put2(b[2:], year%100)
	b[4], b[7], b[10], b[13], b[16] = '-', '-', sep, ':', ':'
	put2(b[5:], int(month))
	put2(b[8:], day)
	put2(b[11:], sod/3600)
	put2(b[14:], sod/60%60)
	put2(b[17:], sod%60)
	return append(dst, b[:]...), true
}

// put2 writes n (0-99) as two digits at b[0:2].
func put2(b []byte, n int) {
	b[0], b[1] = byte('0'+n/10), byte('0'+n%10)
}

// AppendDigits appends n (>= 0) zero-padded to width (at most 8) digits.
func AppendDigits(dst []byte, n, width int) []byte {
	var b [8]byte
	for i := width - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return append(dst, b[:width]...)
}

// YesNo formats a boolean as the official CLI does.
func YesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

// Thousands formats n with comma separators.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// PyFloat formats f like Python's repr: "2.0", "1.5", "1e-05", "1e+16".
func PyFloat(f float64) string { return pylit.Float(f) }
