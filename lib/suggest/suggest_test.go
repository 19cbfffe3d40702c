package suggest

import "testing"

func TestNearest(t *testing.T) {
	models := []string{"tinker-local/tiny-llama", "tinker-local/tiny-qwen3", "Qwen/Qwen3-8B"}
	cases := map[string]string{
		"tinker-local/tiny-lama": "tinker-local/tiny-llama",
		"tinker-local/tiny-qwen": "tinker-local/tiny-qwen3",
		"qwen/qwen3-8b":          "Qwen/Qwen3-8B",
		"chekpoint":              "",
		"gpt-5":                  "",
	}
	for name, want := range cases {
		if got := Nearest(name, models); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", name, got, want)
		}
	}
	if got := Nearest("chekpoint", []string{"checkpoint", "run"}); got != "checkpoint" {
		t.Errorf("Nearest(chekpoint) = %q", got)
	}
	if d := distance("kitten", "sitting"); d != 3 {
		t.Errorf("distance = %d, want 3", d)
	}
}
