package train

import (
	"math"
	"slices"
	"testing"
)

func TestLearningRateSchedules(t *testing.T) {
	const base, total = 0.01, 10
	for _, c := range []struct {
		schedule string
		step     int
		want     float64
	}{
		{"constant", 7, base},
		{"linear", 0, base},
		{"linear", 5, base / 2},
		{"linear", 9, base / 10},
		{"cosine", 0, base},
		{"cosine", 5, base / 2},
		{"cosine", 9, base * (1 + math.Cos(0.9*math.Pi)) / 2},
	} {
		if got := learningRate(c.schedule, base, c.step, total); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%s at step %d = %v, want %v", c.schedule, c.step, got, c.want)
		}
	}
}

// Each epoch visits every example once, in an order fixed by the seed
// that changes from epoch to epoch.
func TestBatchOf(t *testing.T) {
	const n, bs = 10, 4
	var epochs [][]int
	for e := range 3 {
		var seen []int
		for s := e * 3; s < e*3+3; s++ {
			b := batchOf(n, bs, s, 7)
			if want := min(bs, n-(s%3)*bs); len(b) != want {
				t.Fatalf("step %d has %d examples, want %d", s, len(b), want)
			}
			seen = append(seen, b...)
		}
		sorted := slices.Clone(seen)
		slices.Sort(sorted)
		for i, v := range sorted {
			if v != i {
				t.Fatalf("epoch %d visits %v, not each example once", e, seen)
			}
		}
		epochs = append(epochs, seen)
	}
	if slices.Equal(epochs[0], epochs[1]) {
		t.Errorf("epochs 1 and 2 share the order %v", epochs[0])
	}
	if !slices.Equal(batchOf(n, bs, 4, 7), batchOf(n, bs, 4, 7)) || slices.Equal(batchOf(n, bs, 0, 7), batchOf(n, bs, 0, 8)) {
		t.Errorf("the order is not a function of the seed")
	}
}
