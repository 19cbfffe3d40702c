package shell

import (
	"errors"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

// An error carrying a hostile name reaches the terminal with its control
// characters escaped and its own line structure kept.
func TestFormatErrorEscapesControls(t *testing.T) {
	plain := errors.New("checkpoint tinker://r/sampler_weights/a\x1b[2J\x07 not found\nsecond line")
	_, evalErr := starlark.ExecFile(&starlark.Thread{}, "x.star", "fail('bad name \\x1b]0;title\\x07')", nil)
	if evalErr == nil {
		t.Fatal("fail() did not fail")
	}
	for _, c := range []struct {
		err       error
		backtrace bool
		want      string
	}{
		{plain, false, "checkpoint tinker://r/sampler_weights/a\\x1b[2J\\x07 not found\nsecond line"},
		{evalErr, false, `x.star:1:5: fail: bad name \x1b]0;title\x07`},
		{evalErr, true, `bad name \x1b]0;title\x07`},
	} {
		got := FormatError(c.err, false, c.backtrace)
		if !strings.Contains(got, c.want) {
			t.Errorf("FormatError = %q, want it to contain %q", got, c.want)
		}
		if strings.ContainsAny(got, "\x1b\x07") {
			t.Errorf("FormatError = %q holds a raw control character", got)
		}
	}
}
