package train

import "context"

type hardStopKey struct{}

// WithHardStop marks ctx so that a run interrupted through it, which
// still awaits the steps it sent and saves their state, gives up those
// waits as well once hard is done (a second Ctrl-C at the prompt): the
// call then returns at once, naming the last state saved before.
func WithHardStop(ctx, hard context.Context) context.Context {
	return context.WithValue(ctx, hardStopKey{}, hard)
}

// patient is the context a run awaits submitted work with: ctx's values
// without its cancellation, ended only by the hard stop ctx carries.
func patient(ctx context.Context) context.Context {
	w := context.WithoutCancel(ctx)
	hard, ok := ctx.Value(hardStopKey{}).(context.Context)
	if !ok {
		return w
	}
	w, cancel := context.WithCancel(w)
	context.AfterFunc(hard, cancel)
	return w
}
