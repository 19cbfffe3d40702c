package train

import (
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
