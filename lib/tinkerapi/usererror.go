package tinkerapi

import (
	"errors"
	"strings"
)

// UserError is a failure the user can act on, worded as the official CLI
// reports it: Msg is printed as "Error: <Msg>", Details (optional) on the
// lines below. The shell shows only Msg.
type UserError struct {
	Msg     string
	Details string
}

func (e *UserError) Error() string { return e.Msg }

// CheckScheme is the official CLI's first check of a checkpoint path
// argument: it only looks for the tinker:// prefix. kind ("weights" or
// "sampler_weights") picks the example path the message suggests.
func CheckScheme(s, kind string) error {
	if strings.HasPrefix(s, "tinker://") {
		return nil
	}
	return &UserError{Msg: "Invalid checkpoint path: " + s, Details: "Checkpoint path must be in the format: tinker://run-id/" + kind + "/0001"}
}

// ParseArg is the builtins' whole check of a checkpoint path the user
// gave: CheckScheme, then ParsePath, and no empty run id or name, failing
// with a *UserError.
func ParseArg(s string) (Path, error) {
	if err := CheckScheme(s, "weights"); err != nil {
		return Path{}, err
	}
	p, err := ParsePath(s)
	if err != nil {
		return Path{}, &UserError{Msg: err.Error()}
	}
	if p.RunID == "" || p.Name == "" {
		return Path{}, &UserError{Msg: "Invalid tinker path: " + s + " (the run id and the checkpoint name must not be empty)"}
	}
	return p, nil
}

// Worded wraps err so that its text is the official CLI's wording of it
// ("Resource not found: Error code: 404 - …"), for places that show only
// an error's text, such as the shell. CLIError sees through it.
func Worded(err error) error { return &worded{err} }

type worded struct{ err error }

func (w *worded) Error() string {
	msg, details := CLIError(w.err)
	// The CLI's details quote the body as a Python dict, as the SDK does;
	// in one line the service's own sentence reads better.
	var ae *APIError
	if errors.As(w.err, &ae) && ae.Detail() != "" && strings.Contains(details, "{'detail'") {
		return msg + ": " + ae.Detail()
	}
	if i := strings.LastIndex(details, "Details: "); i >= 0 {
		return msg + ": " + details[i+len("Details: "):]
	}
	return msg
}

func (w *worded) Unwrap() error { return w.err }

// unworded returns the error a Worded wrapper in err's chain holds, or err.
func unworded(err error) error {
	var w *worded
	if errors.As(err, &w) {
		return w.err
	}
	return err
}
