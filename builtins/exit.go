package builtins

import (
	"fmt"

	"go.starlark.net/starlark"
)

// ExitError stops a program with an exit code; the shell turns it into the
// process exit status (scripts, -c) or ends the prompt.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit(%d)", e.Code) }

func exitFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	code := 0
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "code?", &code); err != nil {
		return nil, err
	}
	if code < 0 || code > 255 {
		return nil, fmt.Errorf("exit: code must be between 0 and 255, got %d", code)
	}
	return nil, &ExitError{Code: code}
}
