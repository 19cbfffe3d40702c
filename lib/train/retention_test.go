package train

import (
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// checkpointNames lists the checkpoint ids of the run that saved path.
func checkpointNames(t *testing.T, sess *tinkerapi.Session, path string) []string {
	t.Helper()
	p, err := tinkerapi.ParsePath(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sess.Client().ListRunCheckpoints(t.Context(), p.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range l.Checkpoints {
		out = append(out, c.CheckpointID)
	}
	slices.Sort(out)
	return out
}

// A run keeps its newest KeepStates states and its final ones, and with
// KeepStates 0 every state it saved.
func TestRetentionKeepsTheNewestStates(t *testing.T) {
	sess := localSession(t, 0)
	for keep, want := range map[int][]string{
		2: {"sampler_weights/sft-final", "weights/sft-000005", "weights/sft-final"},
		0: {"sampler_weights/sft-final", "weights/sft-000001", "weights/sft-000002", "weights/sft-000003", "weights/sft-000004",
			"weights/sft-000005", "weights/sft-final"},
	} {
		o := resumeOptions("")
		o.SaveEvery, o.KeepStates, o.Epochs = 1, keep, 2 // 6 steps
		res, err := SFT(t.Context(), sess, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := checkpointNames(t, sess, res.StatePath); !slices.Equal(got, want) {
			t.Errorf("keep %d: the run holds %v, want %v", keep, got, want)
		}
	}
}

// RL's per-step policy snapshots go once the next exists (and the last
// at the end); KeepStates 0 keeps them.
func TestRetentionOfRLPolicySnapshots(t *testing.T) {
	sess := localSession(t, 0)
	for keep, snapshots := range map[int]int{2: 0, 0: 3} {
		o := rlOptions("", 3)
		o.GroupSize, o.KeepStates = 2, keep
		res, err := RL(t.Context(), sess, o)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, name := range checkpointNames(t, sess, res.SamplerPath) {
			if strings.Contains(name, "-policy-") {
				n++
			}
		}
		if n != snapshots {
			t.Errorf("keep %d: %d policy snapshots left, want %d", keep, n, snapshots)
		}
	}
}

// Resuming after the saved state was deleted is one line that says the
// state is gone and how to start over or go on from an older state, not
// the backend's raw 404.
func TestResumeAfterTheStateWasDeleted(t *testing.T) {
	sess := localSession(t, 0)
	o := resumeOptions(filepath.Join(t.TempDir(), "run"))
	ctx, onStep := interruptAt(t, 2)
	o.OnStep = onStep
	_, err := SFT(ctx, sess, o)
	var ie *InterruptedError
	if !errors.As(err, &ie) {
		t.Fatalf("want an interrupt, got %v", err)
	}
	p, _ := tinkerapi.ParsePath(ie.StatePath)
	if err := sess.Client().DeleteCheckpoint(t.Context(), p.RunID, p.CheckpointID); err != nil {
		t.Fatal(err)
	}
	o.OnStep = nil
	_, err = SFT(t.Context(), sess, o)
	var ue *tinkerapi.UserError // (the state path is a random id and may hold "404" itself)
	want := "cannot resume: the state log_dir " + o.LogDir + " saved after step " + strconv.Itoa(ie.Step) + " (" + ie.StatePath + ") no longer exists (deleted or expired); start over with another log_dir"
	if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") || strings.Contains(strings.ReplaceAll(err.Error(), ie.StatePath, ""), "404") {
		t.Errorf("resume after deletion: %v\nwant one line starting %q", err, want)
	}
}
