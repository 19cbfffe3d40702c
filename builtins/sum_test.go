package builtins

import (
	"math"
	"math/big"
	"math/rand"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

func callSum(t *testing.T, src string) (starlark.Value, error) {
	t.Helper()
	thread := &starlark.Thread{Name: "test"}
	env := starlark.StringDict{"sum": starlark.NewBuiltin("sum", sumBuiltin)}
	return starlark.Eval(thread, "<test>", src, env)
}

// TestSum: Python's results, including those of its compensated float sum
// (Python 3.12+), exact big ints and bools counted as ints.
func TestSum(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"sum([1, 2, 3])", "6"},
		{"sum([])", "0"},
		{"sum([], start=0.0)", "0.0"},
		{"sum([1, 2], 0.5)", "3.5"},
		{"sum([2 * 1024 * 1024 * 1024 * 1024 * 1024 * 1024 * 1024, 1])", "2361183241434822606849"},
		{"sum([True, True, False])", "2"},
		{"sum([0.1] * 10)", "1.0"},
		{"sum([0.1, 0.2, 0.3])", "0.6"},
		{"sum([1e100, 1.0, -1e100])", "1.0"},
		{"sum([1, 0.5, 2])", "3.5"},
		{"sum([float('inf'), 1.0])", "+inf"},
		{"sum([1e308, 1e308])", "+inf"},
		{"sum(range(5))", "10"},
	} {
		v, err := callSum(t, c.src)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if got := v.String(); got != c.want {
			t.Errorf("%s = %s, want %s", c.src, got, c.want)
		}
	}
	for _, c := range []struct{ src, want string }{
		{`sum([1, "2"])`, "sum: element 1 is a string, not a number (sum adds ints and floats)"},
		{`sum([[1]])`, "sum: element 0 is a list, not a number"},
		{`sum([1], start="")`, "sum: start must be a number, not a string"},
		{`sum(3)`, "sum: for parameter iterable: got int, want iterable"},
	} {
		_, err := callSum(t, c.src)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", c.src, err, c.want)
		}
	}
}

// TestSumCompensated checks the float sum against the exact sum of the same
// numbers (math/big), on sums with heavy cancellation where a plain loop
// loses digits: it must be within one unit in the last place.
func TestSumCompensated(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	plainWorse := 0
	for trial := 0; trial < 200; trial++ {
		xs := make([]starlark.Value, 1000)
		exact := new(big.Float).SetPrec(4096)
		plain := 0.0
		for i := range xs {
			x := rng.NormFloat64() * math.Pow(10, float64(rng.Intn(20)))
			if i%2 == 1 {
				x = -float64(xs[i-1].(starlark.Float)) * (1 + rng.NormFloat64()*1e-9)
			}
			xs[i] = starlark.Float(x)
			exact.Add(exact, big.NewFloat(x))
			plain += x
		}
		want, _ := exact.Float64()
		v, err := sumBuiltin(&starlark.Thread{}, starlark.NewBuiltin("sum", sumBuiltin), starlark.Tuple{starlark.NewList(xs)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := float64(v.(starlark.Float))
		if ulp := math.Abs(math.Nextafter(want, math.Inf(1)) - want); math.Abs(got-want) > ulp {
			t.Fatalf("trial %d: sum %v, exact %v (off by %g ulp)", trial, got, want, math.Abs(got-want)/ulp)
		}
		if plain != want {
			plainWorse++
		}
	}
	if plainWorse == 0 {
		t.Fatal("a plain loop was exact every time: the cases do not exercise the compensation")
	}
}
