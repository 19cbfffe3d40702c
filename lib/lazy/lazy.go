// Package lazy is a value made on first use, declared so that it costs
// nothing at start. Every package linked into tinker initialises at every
// start, `tinker -c '1+1'` included; a package-level sync.OnceValue(f) is a
// call, so the package gets init code that runs (and a page of code to
// fault in) at every start. A lazy.Value literal is laid out by the
// compiler as data:
//
//	var table = lazy.Value[[]Row]{New: buildTable}
//	... table.Get() ...
//
// lazyre is the same for regular expressions.
package lazy

import "sync"

// Value is New's result, made by the first Get. Get is safe for concurrent
// use; a Value must not be copied after first use.
type Value[T any] struct {
	New  func() T
	once sync.Once
	v    T
}

// Get returns the value, calling New the first time.
func (l *Value[T]) Get() T {
	l.once.Do(func() { l.v = l.New() })
	return l.v
}
