package tinkerapi

import (
	"math"
	"testing"
)

func TestMergeMetricsReductions(t *testing.T) {
	chunks := []map[string]float64{
		{"loss:sum": 1.5, "lo:min": 3, "hi:max": 3, "acc:mean": 0.5, "busy:slack": 2, "clock:unique": 10,
			"h:hash_unordered": 3, "mfu:median": 9, "partial:sum": 1, "bare": 4},
		{"loss:sum": 2.25, "lo:min": -1, "hi:max": 7, "acc:mean": 1.0, "busy:slack": 6, "clock:unique": 11,
			"h:hash_unordered": 1, "mfu:median": 9, "bare": 4, "late:sum": 5},
		{"loss:sum": 0.25, "lo:min": 2, "hi:max": 1, "acc:mean": 0.0, "busy:slack": 4, "clock:unique": 12,
			"h:hash_unordered": 2.9, "mfu:median": 9, "partial:sum": 1, "bare": 4},
	}
	weights := []float64{2, 1, 1} // datums per chunk
	got := MergeMetrics(chunks, weights)
	// Weighted mean of acc: (0.5·2 + 1·1 + 0·1)/4; of busy: (2·2 + 6 + 4)/4.
	want := map[string]float64{
		"loss:sum": 4, "lo:min": -1, "hi:max": 7,
		"acc:mean":     0.5,
		"busy:slack":   6 - 3.5,
		"clock:unique": 10, "clock:unique_1": 11, "clock:unique_2": 12,
		// CPython: hash(tuple(sorted([3, 1, 2]))) (2.9 truncates to 2).
		"h:hash_unordered": 529344067295497451,
	}
	if len(got) != len(want) {
		t.Errorf("keys: got %v\nwant %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-12*math.Max(1, math.Abs(v)) {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	// Unknown reductions, keys without one, and keys some chunk lacks are dropped.
	for _, k := range []string{"mfu:median", "bare", "partial:sum", "late:sum"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s kept", k)
		}
	}

	// hash_unordered does not depend on chunk order.
	rev := MergeMetrics([]map[string]float64{chunks[2], chunks[0], chunks[1]}, []float64{1, 2, 1})
	if rev["h:hash_unordered"] != got["h:hash_unordered"] {
		t.Errorf("hash_unordered depends on order: %v vs %v", rev["h:hash_unordered"], got["h:hash_unordered"])
	}
	// A single chunk still goes through the reductions.
	one := MergeMetrics(chunks[:1], []float64{2})
	if one["loss:sum"] != 1.5 || one["clock:unique"] != 10 || len(one) != 8 {
		t.Errorf("single chunk: %v", one)
	}
	// Chunks without per-datum outputs weigh equally.
	if m := MergeMetrics([]map[string]float64{{"a:mean": 1}, {"a:mean": 3}}, []float64{0, 0}); m["a:mean"] != 2 {
		t.Errorf("zero weights: %v", m)
	}
	if m := MergeMetrics(nil, nil); len(m) != 0 {
		t.Errorf("no chunks: %v", m)
	}
}

// TestHashUnorderedMatchesCPython checks against values printed by
// CPython 3 (hash of tuples of ints, 64-bit build).
func TestHashUnorderedMatchesCPython(t *testing.T) {
	for _, tc := range []struct {
		vals []float64
		want int64
	}{
		{[]float64{5}, -7813438383599366905},
		{[]float64{7, -(1 << 62), 1 << 61, -1}, 6350305193758055954},
		{[]float64{0, 0}, -8458139203682520985},
		{[]float64{-2.9, 2.9}, -208276591052177797},
		{[]float64{2, 3, 1}, 529344067295497451},
	} {
		if got := hashUnordered(tc.vals); got != tc.want {
			t.Errorf("hashUnordered(%v) = %d, want %d", tc.vals, got, tc.want)
		}
	}
}
