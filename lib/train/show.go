package train

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/tinkershell/tinker/lib/render"
)

// Fields is a record's fields as JSON members, in declaration order and
// named by their json tags (a nil pointer is JSON null). The DPO and RL
// tables, JSON and script values are all read from it, so a new metric
// shows everywhere once it is in the record.
func Fields(m Record) render.Object {
	v := reflect.ValueOf(m)
	t := v.Type()
	var o render.Object
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		f := v.Field(i)
		var val any
		if f.Kind() == reflect.Pointer {
			if !f.IsNil() {
				val = f.Elem().Interface()
			}
		} else {
			val = f.Interface()
		}
		o = append(o, render.Member{Key: name, Value: val})
	}
	return o
}

// header words a json tag as a column header: "mean_reward" → "Mean reward".
func header(tag string) string {
	s := strings.ReplaceAll(strings.TrimPrefix(tag, "num_"), "_", " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

// cell formats one field for a table.
func cell(key string, v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		switch key {
		case "time":
			return fmt.Sprintf("%.2fs", x)
		case "learning_rate":
			return fmt.Sprintf("%.3g", x)
		}
		return fixed4(x)
	}
	return fmt.Sprint(v)
}

// fixed4 is x to four decimals, never "-0.0000": a value that rounds to
// zero reads as zero, whichever side it came from.
func fixed4(x float64) string {
	s := fmt.Sprintf("%.4f", x)
	if s == "-0.0000" {
		return "0.0000"
	}
	return s
}

// dropOrder is which columns of a step table a narrow terminal leaves out
// first (render.Column.Drop): counts and times before the learning rate,
// the secondary metrics last; step, loss and the main metric always stay. A
// switch, not a map: a package-level map is built at every start.
func dropOrder(field string) int {
	switch field {
	case "time":
		return 9
	case "num_sequences", "num_pairs", "num_trained", "skipped_groups":
		return 8
	case "tokens":
		return 7
	case "epoch":
		return 6
	case "learning_rate":
		return 5
	case "rejected_reward":
		return 4
	case "chosen_reward":
		return 3
	case "margin":
		return 2
	case "eval_nll":
		return 1
	}
	return 0
}

// RunTable is the table of a run's steps, one column per record field,
// titled "WHAT of MODEL: N of TOTAL steps".
func RunTable[M Record](what string, res *Result[M]) *render.Table {
	title := fmt.Sprintf("%s of %s: %d of %d steps", what, res.BaseModel, res.LastStep(), res.Total)
	t := &render.Table{Title: title, HeadTail: true}
	var zero M
	for _, f := range Fields(zero) {
		t.Columns = append(t.Columns, render.Column{Header: header(f.Key), Right: true, Drop: dropOrder(f.Key)})
	}
	for _, m := range res.Steps {
		var row []string
		for _, f := range Fields(m) {
			row = append(row, cell(f.Key, f.Value))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// RunJSON is a run as JSON: its steps (under "metrics", as the value
// calls them) and checkpoints.
func RunJSON[M Record](res *Result[M]) any {
	steps := make([]any, len(res.Steps))
	for i, m := range res.Steps {
		steps[i] = Fields(m)
	}
	return render.Object{{Key: "base_model", Value: res.BaseModel}, {Key: "total_steps", Value: res.Total}, {Key: "metrics", Value: steps},
		{Key: "state_checkpoint", Value: optString(res.StatePath)}, {Key: "sampler_checkpoint", Value: optString(res.SamplerPath)},
		{Key: "warnings", Value: warningsJSON(res.Warnings)}}
}

// warningsJSON is the run's warnings as a JSON list, [] rather than null
// when there were none, so a script can always iterate it.
func warningsJSON(ws []string) []any {
	out := make([]any, len(ws))
	for i, w := range ws {
		out[i] = w
	}
	return out
}
