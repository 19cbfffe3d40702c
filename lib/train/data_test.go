package train

import (
	"reflect"

	"github.com/tinkershell/tinker/lib/chat"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConversationsNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "d.jsonl")
	os.WriteFile(p, []byte(`{"messages": [{"role": "user", "content": "a"}]}`+"\n\n"+`{"messages": [{"content": "b"}]}`+"\n"), 0o644)
	_, err := LoadConversations(p)
	if err == nil || !strings.Contains(err.Error(), "d.jsonl:3: message 0 has no role") {
		t.Fatalf("err = %v", err)
	}
}

// Every shape sft() trains on is a conversation to evaluate() too: the
// same rows give the same messages, from a file or from rows.
func TestConversationShapes(t *testing.T) {
	want := []chat.Message{{Role: "user", Content: "Sky?"}, {Role: "assistant", Content: "Blue."}}
	rows := []Row{
		{JSON: []byte(`{"messages": [{"role": "user", "content": "Sky?"}, {"role": "assistant", "content": "Blue."}]}`), Where: "a"},
		{JSON: []byte(`{"prompt": "Sky?", "completion": "Blue."}`), Where: "b"},
		{JSON: []byte(`[{"role": "user", "content": "Sky?"}, {"role": "assistant", "content": "Blue."}]`), Where: "c"},
	}
	convs, err := Conversations(rows)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range convs {
		if !reflect.DeepEqual(c.Messages, want) {
			t.Errorf("row %s: %+v", rows[i].Where, c.Messages)
		}
	}
	for _, bad := range []struct{ row, want string }{
		{`{"prompt": "Sky?", "completion": 3}`, `x: "completion" must be a string, got a number`},
		{`{"text": "Sky?"}`, `x: no messages; each line is`},
		{`"Sky?"`, `x: not a JSON object: it is a string; each line is`},
	} {
		if _, err := Conversations([]Row{{JSON: []byte(bad.row), Where: "x"}}); err == nil || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.row, err, bad.want)
		}
	}
}
