package server

import "time"

// ts renders times like the service: RFC 3339, UTC, microseconds.
type ts time.Time

const tsLayout = "2006-01-02T15:04:05.000000Z"

func (t ts) MarshalJSON() ([]byte, error) {
	return appendTS(nil, time.Time(t)), nil
}

func appendTS(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	if y < 0 || y > 9999 {
		b = append(b, '"')
		b = t.AppendFormat(b, tsLayout)
		return append(b, '"')
	}
	// Fixed-width digits: this runs for every checkpoint of every listing.
	b = append(b, '"')
	b = appendDigits(b, y, 4)
	b = append(b, '-')
	b = appendDigits(b, int(mo), 2)
	b = append(b, '-')
	b = appendDigits(b, d, 2)
	b = append(b, 'T')
	b = appendDigits(b, h, 2)
	b = append(b, ':')
	b = appendDigits(b, mi, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond()/1000, 6)
	return append(b, 'Z', '"')
}

func appendDigits(b []byte, v, width int) []byte {
	var buf [8]byte
	for i := width - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, buf[:width]...)
}
