package shell

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/tinkershell/tinker/builtins"
)

// Resource bounds of the interpreter. Starlark bounds string and list
// repetition itself, but a builtin that preallocates from its argument's
// length (list(range(1 << 40))) asks Go for terabytes, which is a fatal
// error rather than a Starlark one; printing a deeply nested value takes
// time quadratic in its depth inside Go code that no Ctrl-C reaches; and a
// loop that keeps appending exhausts the machine. So: builtins that
// preallocate check the size first, str/repr/print/display check the shape
// first, and a watchdog cancels an evaluation whose heap passes the limit.

// MemoryLimitEnv sets the interpreter's memory limit (e.g. 4G, 512M).
const MemoryLimitEnv = "TINKER_MEMORY_LIMIT"

const (
	bytesPerElem = 32      // a Value in a slice, with room for what it points to
	maxShowDepth = 1000    // deepest value str() and the display render
	maxShowNodes = 1 << 24 // most elements they render
)

// memoryLimit is the heap the interpreter may grow to: $TINKER_MEMORY_LIMIT,
// else three quarters of the machine's memory (6 GiB where unknown).
func memoryLimit() (int64, error) {
	if v := os.Getenv(MemoryLimitEnv); v != "" {
		n, err := parseBytes(v)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", MemoryLimitEnv, err)
		}
		return n, nil
	}
	if total := memTotal(); total > 0 {
		return total / 4 * 3, nil
	}
	return 6 << 30, nil
}

// parseBytes reads a byte count with an optional K, M, G or T suffix.
func parseBytes(v string) (int64, error) {
	s, mult := strings.ToUpper(strings.TrimSpace(v)), int64(1)
	if s == "" {
		return 0, fmt.Errorf("empty size: give one such as 4G or 512M")
	}
	if i := strings.IndexByte("KMGT", s[len(s)-1]); i >= 0 {
		s, mult = s[:len(s)-1], int64(1)<<(10*(i+1))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size such as 4G or 512M", v)
	}
	return n * mult, nil
}

// MemoryError is an evaluation stopped by the memory limit.
type MemoryError struct{ Limit int64 }

func (e *MemoryError) Error() string {
	return fmt.Sprintf("out of memory: the program grew past the interpreter's limit of %s; keep less in memory, or raise the limit with %s (e.g. %s=8G)",
		formatBytes(e.Limit), MemoryLimitEnv, MemoryLimitEnv)
}

func formatBytes(n int64) string {
	if n >= 1<<30 {
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	}
	return strconv.FormatInt(n>>20, 10) + " MiB"
}

// heapBytes is the memory held by live and not yet collected objects
// (HeapAlloc, the same figure as runtime/metrics'
// /memory/classes/heap/objects:bytes). ReadMemStats stops the world for a
// moment, which at the watchdog's 20 reads a second costs far less than
// runtime/metrics' initialisation did at every tinker start.
func heapBytes() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// watchMemory calls stop, once, when the heap stays above limit after a
// collection; it checks every 50 ms until the returned func is called.
// A timer rather than a goroutine: starting one wakes another thread,
// which an evaluation over in a millisecond (-c '1+1') should not pay.
func watchMemory(limit int64, stop func()) (done func()) {
	const every = 50 * time.Millisecond
	var (
		mu    sync.Mutex
		quit  bool
		timer *time.Timer
	)
	check := func() {
		if heapBytes() > limit {
			runtime.GC() // garbage does not count
			if heapBytes() > limit {
				stop()
				return
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if !quit {
			timer.Reset(every)
		}
	}
	mu.Lock()
	timer = time.AfterFunc(every, check)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		quit = true
		timer.Stop()
	}
}

// setGCLimit makes the collector work harder near the limit, so that
// garbage is collected before the watchdog counts it.
func setGCLimit(limit int64) { debug.SetMemoryLimit(limit) }

// boundUniverse replaces the builtins that allocate from their argument's
// length with versions that refuse what would pass the memory limit, and
// str/repr with versions that refuse values too deep or large to render.
func boundUniverse(d starlark.StringDict, limit func() int64) {
	boundRange(d)
	// A slice literal, not a map: a map would be built and hashed at
	// every start.
	for _, b := range [...]struct {
		name string
		per  int64
	}{{"list", bytesPerElem}, {"tuple", bytesPerElem}, {"sorted", bytesPerElem},
		{"reversed", bytesPerElem}, {"enumerate", 3 * bytesPerElem}, {"zip", 0}, {"bytes", 1}} {
		name, per := b.name, b.per
		orig, ok := universal(d, name)
		if !ok {
			continue
		}
		d[name] = starlark.NewBuiltin(name, func(t *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kw []starlark.Tuple) (starlark.Value, error) {
			if err := checkAlloc(name, args, per, limit()); err != nil {
				return nil, err
			}
			return orig.CallInternal(t, args, kw)
		})
	}
	for _, name := range []string{"str", "repr"} {
		orig, ok := universal(d, name)
		if !ok {
			continue
		}
		d[name] = starlark.NewBuiltin(name, func(t *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kw []starlark.Tuple) (starlark.Value, error) {
			for _, a := range args {
				if err := checkRenderable(builtins.ContextOf(t), a); err != nil {
					return nil, err
				}
			}
			return orig.CallInternal(t, args, kw)
		})
	}
}

// universal is the builtin a program sees as name: d's, else Starlark's.
func universal(d starlark.StringDict, name string) (*starlark.Builtin, bool) {
	v, ok := d[name]
	if !ok {
		v = starlark.Universe[name]
	}
	b, ok := v.(*starlark.Builtin)
	return b, ok
}

// checkAlloc refuses a call whose preallocation would pass the limit.
func checkAlloc(name string, args starlark.Tuple, per, limit int64) error {
	if len(args) == 0 {
		return nil
	}
	n := int64(starlark.Len(args[0]))
	if name == "zip" { // a tuple per row, as many rows as the shortest argument
		per = bytesPerElem * int64(len(args)+1)
		for _, a := range args[1:] {
			n = min(n, int64(starlark.Len(a)))
		}
	}
	if n > 0 && n > limit/per {
		return fmt.Errorf("%d elements would need %s, more than the interpreter's memory limit of %s (%s)",
			n, formatBytes(n*per), formatBytes(limit), MemoryLimitEnv)
	}
	return nil
}

// checkRenderable refuses a value nested deeper than maxShowDepth or with
// more than maxShowNodes elements: rendering it would not finish in a
// reasonable time. A cycle renders as [...], as str does.
func checkRenderable(ctx context.Context, v starlark.Value) error {
	w := &shapeWalk{ctx: ctx, onPath: map[starlark.Value]bool{}}
	return w.walk(v, 0)
}

type shapeWalk struct {
	ctx    context.Context
	onPath map[starlark.Value]bool
	nodes  int
}

func (w *shapeWalk) walk(v starlark.Value, depth int) error {
	var kids starlark.Indexable
	switch x := v.(type) {
	case *starlark.List:
		kids = x
	case starlark.Tuple:
		kids = x
	case *starlark.Dict:
		kids = pairs(x.Items())
	case *starlark.Set:
		kids = iterElems(x)
	default:
		return nil
	}
	if depth >= maxShowDepth {
		return fmt.Errorf("the value is nested more than %d levels deep, too deep to render; render a part of it", maxShowDepth)
	}
	switch v.(type) {
	case *starlark.List, *starlark.Dict: // the only values that can hold themselves
		if w.onPath[v] {
			return nil
		}
		w.onPath[v] = true
		defer delete(w.onPath, v)
	}
	return w.children(kids, depth)
}

func (w *shapeWalk) children(kids starlark.Indexable, depth int) error {
	for i := range kids.Len() {
		if w.nodes++; w.nodes > maxShowNodes {
			return fmt.Errorf("the value has more than %d elements, too many to render; render a part of it", maxShowNodes)
		}
		if w.nodes%(1<<16) == 0 && w.ctx.Err() != nil {
			return w.ctx.Err()
		}
		if err := w.walk(kids.Index(i), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// pairs flattens a dict's items into keys and values.
func pairs(items []starlark.Tuple) starlark.Tuple {
	out := make(starlark.Tuple, 0, 2*len(items))
	for _, kv := range items {
		out = append(out, kv[0], kv[1])
	}
	return out
}

func iterElems(x starlark.Iterable) starlark.Tuple {
	var out starlark.Tuple
	it := x.Iterate()
	defer it.Done()
	var v starlark.Value
	for it.Next(&v) {
		out = append(out, v)
	}
	return out
}

// rangeValue is Starlark's range with an iterator that stops when the
// evaluation is interrupted or passes the memory limit. range is lazy, so
// a Go builtin iterating it (set(range(1 << 40)), max(...)) could run for
// hours, or allocate without bound, where no Starlark step checks for
// cancellation. The cut-short iteration is never seen: the evaluation
// fails at its next step. The context is the evaluation's at the time of
// iteration (builtins.ContextOf), so a range kept in a global iterates in
// full in later evaluations.
type rangeValue struct {
	r      starlark.Indexable // Starlark's own range
	thread *starlark.Thread
}

var (
	_ starlark.Sliceable  = rangeValue{}
	_ starlark.Comparable = rangeValue{}
	_ starlark.Container  = rangeValue{}
)

func (x rangeValue) String() string                     { return x.r.String() }
func (x rangeValue) Type() string                       { return x.r.Type() }
func (x rangeValue) Freeze()                            {}
func (x rangeValue) Truth() starlark.Bool               { return x.r.Truth() }
func (x rangeValue) Hash() (uint32, error)              { return x.r.Hash() }
func (x rangeValue) Len() int                           { return x.r.Len() }
func (x rangeValue) Index(i int) starlark.Value         { return x.r.Index(i) }
func (x rangeValue) Has(y starlark.Value) (bool, error) { return x.r.(starlark.Container).Has(y) }

func (x rangeValue) Slice(start, end, step int) starlark.Value {
	return rangeValue{x.r.(starlark.Sliceable).Slice(start, end, step).(starlark.Indexable), x.thread}
}

func (x rangeValue) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	if w, ok := y.(rangeValue); ok {
		y = w.r
	}
	return x.r.(starlark.Comparable).CompareSameType(op, y, depth)
}

func (x rangeValue) Iterate() starlark.Iterator {
	return &rangeIter{it: x.r.(starlark.Iterable).Iterate(), ctx: builtins.ContextOf(x.thread)}
}

type rangeIter struct {
	it  starlark.Iterator
	ctx context.Context
	n   int
}

func (i *rangeIter) Next(p *starlark.Value) bool {
	if i.n++; i.n%(1<<12) == 0 && i.ctx.Err() != nil {
		return false
	}
	return i.it.Next(p)
}

func (i *rangeIter) Done() { i.it.Done() }

// boundRange makes range return rangeValue.
func boundRange(d starlark.StringDict) {
	orig, ok := universal(d, "range")
	if !ok {
		return
	}
	d["range"] = starlark.NewBuiltin("range", func(t *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kw []starlark.Tuple) (starlark.Value, error) {
		v, err := orig.CallInternal(t, args, kw)
		if r, ok := v.(starlark.Indexable); ok && err == nil {
			return rangeValue{r, t}, nil
		}
		return v, err
	})
}
