package ops

import (
	"bytes"
	"fmt"
	"iter"
	"math/rand"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// TestWriteCheckpointListJSONMatchesRender: the direct writer gives the
// bytes of the generic encoder for every kind of checkpoint.
func TestWriteCheckpointListJSONMatchesRender(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	east := time.FixedZone("east", 3*3600)
	strs := []string{"", "weights/0001", "sampler_weights/final", `quo"te\back`, "tab\tnl\nctl\x01", "é ünï 日本 🙂", "\x7f", "tinker://r:train:0/weights/x", "training", "sampler"}
	// Times fall on a few days (the writer keeps the last one's date),
	// before 1970 too.
	days := []int64{-1, 0, 20420, 20421, 1 << 20 / 8}
	var cps []tinkerapi.Checkpoint
	for i := range 300 {
		c := tinkerapi.Checkpoint{
			CheckpointID:   strs[r.Intn(len(strs))],
			CheckpointType: strs[r.Intn(len(strs))],
			Time:           time.Unix(r.Int63n(1<<34), r.Int63n(1e9)*int64(r.Intn(2))).In(east),
			TinkerPath:     strs[r.Intn(len(strs))],
			Public:         r.Intn(2) == 0,
		}
		if i%2 == 0 {
			c.Time = time.Unix(days[r.Intn(len(days))]*86400+r.Int63n(86400), r.Int63n(1e9)*int64(r.Intn(2))).In(east)
		}
		if i%5 == 0 && c.TinkerPath != "" {
			// The ID as the decoder leaves it: the path's tail in memory.
			c.CheckpointID = c.TinkerPath[r.Intn(len(c.TinkerPath)):]
		}
		if i%3 != 0 {
			n := r.Int63() >> uint(r.Intn(63))
			if i%7 == 0 {
				n = -n
			}
			c.SizeBytes = &n
		}
		if i%4 == 0 {
			e := time.Unix(r.Int63n(1<<34), r.Int63n(1e9))
			c.ExpiresAt = &e
		}
		cps = append(cps, c)
	}
	for _, runID := range []string{"", "run-1", "odd \"id\""} {
		for _, n := range []int{0, 1, 2, len(cps)} {
			name := fmt.Sprintf("run=%q/n=%d", runID, n)
			var want, got bytes.Buffer
			if err := render.WriteJSON(&want, listJSONByRender(runID, cps[:n]), render.JSONOptions{Indent: true}); err != nil {
				t.Fatal(err)
			}
			if err := WriteCheckpointListJSON(&got, runID, each(cps[:n])); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("%s: direct writer differs from render.WriteJSON:\n got %q\nwant %q", name, firstDiff(got.Bytes(), want.Bytes()), firstDiff(want.Bytes(), got.Bytes()))
			}
		}
	}
}

// each yields the checkpoints of cps in order.
func each(cps []tinkerapi.Checkpoint) iter.Seq[*tinkerapi.Checkpoint] {
	return func(yield func(*tinkerapi.Checkpoint) bool) {
		for i := range cps {
			if !yield(&cps[i]) {
				return
			}
		}
	}
}

// firstDiff is a's text around where it first differs from b.
func firstDiff(a, b []byte) []byte {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[max(0, i-60):min(len(a), i+60)]
}

// listJSONByRender is `checkpoint list`'s JSON as generic render values,
// as it was built before WriteCheckpointListJSON: the reference.
func listJSONByRender(runID string, cps []tinkerapi.Checkpoint) render.Object {
	list := make([]any, len(cps))
	for i := range cps {
		list[i] = CheckpointJSON(&cps[i])
	}
	obj := render.Object{{Key: "checkpoints", Value: list}}
	if runID != "" {
		obj = append(render.Object{{Key: "run_id", Value: runID}}, obj...)
	}
	return obj
}
