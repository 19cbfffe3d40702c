package builtins

import (
	"fmt"
	"math"

	"go.starlark.net/starlark"
)

// sumBuiltins are the builtins sum.go defines (registryParts lists them).
var sumBuiltins = []entry{
	{docEntry{
		Name:      "sum",
		Signature: "sum(iterable, start=0)",
		Summary:   "Add up numbers, as Python's sum does (ints stay exact; a float makes the total a float).",
		Example:   `sum([c.size_bytes or 0 for c in checkpoint.list(limit=0)])`,
	}, sumBuiltin},
}

// sum is not a Starlark builtin; scripts totalling sizes and rewards want
// it. As in Python, True and False count as 1 and 0, ints add exactly, and
// once a float appears the total is a float added with a compensation term
// (Neumaier's), so sum([0.1] * 10) is 1.0 as in Python 3.12 and later.
func sumBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var it starlark.Iterable
	var start starlark.Value = starlark.MakeInt(0)
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "iterable", &it, "start?", &start); err != nil {
		return nil, err
	}
	start, ok := asNumber(start)
	if !ok {
		return nil, fmt.Errorf("sum: start must be a number, not %s", article(start.Type())+" "+start.Type())
	}
	iter := it.Iterate()
	defer iter.Done()
	var s floatSum
	total, isInt := start.(starlark.Int)
	if !isInt {
		s.add(float64(start.(starlark.Float)))
	}
	var x starlark.Value
	for i := 0; iter.Next(&x); i++ {
		n, ok := asNumber(x)
		if !ok {
			return nil, fmt.Errorf("sum: element %d is %s, not a number (sum adds ints and floats)", i, article(x.Type())+" "+x.Type())
		}
		if k, ok := n.(starlark.Int); ok && isInt {
			total = total.Add(k)
			continue
		}
		if isInt { // the first float: the exact total so far becomes a float
			if err := s.addInt(total); err != nil {
				return nil, err
			}
			isInt = false
		}
		if k, ok := n.(starlark.Int); ok {
			if err := s.addInt(k); err != nil {
				return nil, err
			}
			continue
		}
		s.add(float64(n.(starlark.Float)))
	}
	if isInt {
		return total, nil
	}
	return starlark.Float(s.result()), nil
}

// asNumber returns an int or float as itself and a bool as the int 0 or 1.
func asNumber(v starlark.Value) (starlark.Value, bool) {
	switch v := v.(type) {
	case starlark.Int, starlark.Float:
		return v, true
	case starlark.Bool:
		if v {
			return starlark.MakeInt(1), true
		}
		return starlark.MakeInt(0), true
	}
	return v, false
}

// floatSum adds floats keeping the rounding error of each addition in c
// (Neumaier's improvement of Kahan summation).
type floatSum struct{ sum, c float64 }

func (s *floatSum) add(x float64) {
	t := s.sum + x
	if math.Abs(s.sum) >= math.Abs(x) {
		s.c += (s.sum - t) + x
	} else {
		s.c += (x - t) + s.sum
	}
	s.sum = t
}

func (s *floatSum) addInt(k starlark.Int) error {
	f, _ := starlark.AsFloat(k)
	if math.IsInf(f, 0) {
		return fmt.Errorf("sum: int too large to convert to float")
	}
	s.add(f)
	return nil
}

// result is the sum corrected by the compensation, unless that is not
// finite (an infinite or overflowed sum stays as it is, not NaN).
func (s *floatSum) result() float64 {
	if s.c != 0 && !math.IsInf(s.c, 0) && !math.IsNaN(s.c) {
		return s.sum + s.c
	}
	return s.sum
}
