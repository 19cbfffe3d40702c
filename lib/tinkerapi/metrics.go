package tinkerapi

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
)

// MergeMetrics combines the metrics of the chunks of one forward/backward
// call the way the official SDK does. Keys are "<name>:<reduction>"; only
// keys of the first chunk that every chunk has are kept, and weights (the
// datum count of each chunk) apply to the weighted reductions:
//
//	sum, min, max    plain reduction
//	mean             weighted mean
//	slack            max − weighted mean
//	unique           the first value under the key, the others under
//	                 "<key>_1", "<key>_2", … in chunk order
//	hash_unordered   an order-insensitive hash of the values' integer
//	                 parts (CPython's hash of their sorted tuple)
//
// Keys with any other reduction are dropped. It is applied to single-chunk
// results too, so a result's metrics do not depend on how it was split.
func MergeMetrics(chunks []map[string]float64, weights []float64) map[string]float64 {
	out := map[string]float64{}
	if len(chunks) == 0 {
		return out
	}
	for key := range chunks[0] {
		vals := make([]float64, 0, len(chunks))
		for _, m := range chunks {
			v, ok := m[key]
			if !ok {
				break
			}
			vals = append(vals, v)
		}
		if len(vals) < len(chunks) {
			continue
		}
		switch key[strings.LastIndex(key, ":")+1:] {
		case "sum":
			s := 0.0
			for _, v := range vals {
				s += v
			}
			out[key] = s
		case "min":
			out[key] = reduce(vals, math.Min)
		case "max":
			out[key] = reduce(vals, math.Max)
		case "mean":
			out[key] = weightedMean(vals, weights)
		case "slack":
			out[key] = reduce(vals, math.Max) - weightedMean(vals, weights)
		case "unique":
			out[key] = vals[0]
			for i, v := range vals[1:] {
				out[fmt.Sprintf("%s_%d", key, i+1)] = v
			}
		case "hash_unordered":
			out[key] = float64(hashUnordered(vals))
		}
	}
	return out
}

func reduce(vals []float64, f func(a, b float64) float64) float64 {
	acc := vals[0]
	for _, v := range vals[1:] {
		acc = f(acc, v)
	}
	return acc
}

// weightedMean falls back to the plain mean when the weights sum to zero
// (chunks that returned no per-datum outputs).
func weightedMean(vals, weights []float64) float64 {
	num, den := 0.0, 0.0
	for i, v := range vals {
		num += v * weights[i]
		den += weights[i]
	}
	if den == 0 {
		for _, v := range vals {
			num += v
		}
		return num / float64(len(vals))
	}
	return num / den
}

// hashUnordered is CPython's hash(tuple(sorted(int(v) for v in vals)))
// (Python ≥ 3.8, 64-bit), the SDK's order-insensitive combination. NaN
// and infinities, which Python cannot convert to int, count as 0.
func hashUnordered(vals []float64) int64 {
	ints := make([]*big.Int, len(vals))
	for i, v := range vals {
		ints[i] = new(big.Int)
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			big.NewFloat(v).Int(ints[i]) // truncates toward zero, like int()
		}
	}
	sort.Slice(ints, func(i, j int) bool { return ints[i].Cmp(ints[j]) < 0 })
	const (
		prime1 = 11400714785074694791
		prime2 = 14029467366897019727
		prime5 = 2870177450012600261
	)
	acc := uint64(prime5)
	for _, n := range ints {
		acc += uint64(pyIntHash(n)) * prime2
		acc = acc<<31 | acc>>33
		acc *= prime1
	}
	acc += uint64(len(ints)) ^ (prime5 ^ 3527539)
	if acc == math.MaxUint64 { // -1 is reserved for errors in CPython
		return 1546275796
	}
	return int64(acc)
}

// pyIntHash is CPython's hash of an int: its magnitude modulo 2^61 − 1,
// signed, with −1 mapped to −2.
func pyIntHash(n *big.Int) int64 {
	mod := new(big.Int).SetUint64(1<<61 - 1)
	h := new(big.Int).Mod(new(big.Int).Abs(n), mod).Int64()
	if n.Sign() < 0 {
		h = -h
	}
	if h == -1 {
		h = -2
	}
	return h
}
