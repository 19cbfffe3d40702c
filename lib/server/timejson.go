package server

import (
	"time"

	"github.com/tinkershell/tinker/lib/render"
)

// ts renders times like the service: RFC 3339, UTC, microseconds.
type ts time.Time

func (t ts) MarshalJSON() ([]byte, error) {
	return appendTS(nil, time.Time(t)), nil
}

func appendTS(b []byte, t time.Time) []byte {
	t = t.UTC()
	b = append(b, '"')
	b, ok := render.AppendDateTime(b, t, 'T')
	if !ok {
		b = t.AppendFormat(b, "2006-01-02T15:04:05")
	}
	b = render.AppendDigits(append(b, '.'), t.Nanosecond()/1000, 6)
	return append(b, 'Z', '"')
}
