package render

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Indented output nests any depth as encoding/json's two-space indent does,
// past the 16 levels written at once too.
func TestJSONIndentAnyDepth(t *testing.T) {
	var v any = 1
	for range 40 {
		v = []any{v}
	}
	var got bytes.Buffer
	if err := WriteJSON(&got, v, JSONOptions{Indent: true}); err != nil {
		t.Fatal(err)
	}
	want, _ := json.MarshalIndent(v, "", "  ")
	if got.String() != string(want)+"\n" {
		t.Errorf("indent differs from encoding/json's:\n%s", got.String())
	}
}
