package builtins

import (
	"encoding/json"
	"time"

	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/starlark"
)

// The shell's display step asks values for these interfaces, in the spirit
// of IPython's display hook: String() stays a short repr, tables come from here.

// Tabular is a value that is a table by itself (table(), SampleResult, ...).
// A nil Table means this value has no rows worth a table and displays as
// its String (a delete that matched nothing).
type Tabular interface {
	starlark.Value
	Table(now time.Time) *render.Table
}

// RecordValue is one record: shown vertically on its own, as one row when
// it appears in a list of values of the same type.
type RecordValue interface {
	starlark.Value
	Record(now time.Time) *render.Record
	RowColumns() []render.Column
	Row(now time.Time) []string
	// ListTitle titles a table of n such records, e.g. "3 checkpoints".
	ListTitle(n int) string
}

// JSONValue gives the official CLI's JSON shape of a value
// (render.Object and friends; see render.WriteJSON). Its MarshalJSON
// (marshalJSON of itself) is what json.encode uses, so that json.encode
// gives the same shape rather than walking the value's attributes.
type JSONValue interface {
	starlark.Value
	JSON() any
	json.Marshaler
}

// TextValue displays as raw text rather than a repr (help pages).
type TextValue interface {
	starlark.Value
	Text() string
}

// ChartValue adds a chart drawn below its table on a terminal.
type ChartValue interface {
	starlark.Value
	Chart(width int) string
}
