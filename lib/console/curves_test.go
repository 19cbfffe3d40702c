package console

import (
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/server"
)

// Each optimizer step adds one loss point, the weighted mean of the
// forward_backward passes since the step before; forward passes are eval
// points; another owner's events make a separate run.
func TestCurvesFromTrainEvents(t *testing.T) {
	c := NewCurves()
	c.OnTrain(server.TrainEvent{Owner: "a", RunID: "r", Op: "forward_backward", LossSum: 6, Weight: 2})
	c.OnTrain(server.TrainEvent{Owner: "a", RunID: "r", Op: "forward_backward", LossSum: 2, Weight: 2})
	c.OnTrain(server.TrainEvent{Owner: "a", RunID: "r", Op: "optim_step", Step: 1, LearningRate: 0.1, GradNorm: 3})
	c.OnTrain(server.TrainEvent{Owner: "a", RunID: "r", Op: "forward", Step: 1, LossSum: 3, Weight: 3})
	c.OnTrain(server.TrainEvent{Owner: "a", RunID: "r", Op: "forward_backward", LossSum: 1, Weight: 1})
	c.OnTrain(server.TrainEvent{Owner: "a", RunID: "r", Op: "optim_step", Step: 2, LearningRate: 0.05, GradNorm: math.NaN()})
	got, _ := c.Run("r", "a")
	want := map[string][]float64{"loss": {2, 1}, "eval loss": {1}, "learning rate": {0.1, 0.05}}
	for _, n := range got {
		if w, ok := want[n.Name]; ok && !equal(n.Y, w) {
			t.Errorf("%s: %v, want %v", n.Name, n.Y, w)
		}
		delete(want, n.Name)
	}
	if len(want) != 0 || len(got) != 4 {
		t.Errorf("curves %+v: missing %v", got, want)
	}
	if ch := charts(got); len(ch) != 4 || ch[3].N != 1 || ch[0].N != 2 {
		t.Errorf("charts drop only the NaN point: %+v", ch)
	}
	if other, _ := c.Run("r", "b"); other != nil {
		t.Errorf("another owner sees run r: %+v", other)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The run page and its live block draw the run's curves as SVG.
func TestRunPageDrawsCurves(t *testing.T) {
	f := startServer(t, manifest)
	owner := server.OwnerURN(aliceKey)
	for step := int64(1); step <= 5; step++ {
		f.Console.Curves().OnTrain(server.TrainEvent{Owner: owner, RunID: aliceRun, Op: "forward_backward", LossSum: float64(10 - step), Weight: 2})
		f.Console.Curves().OnTrain(server.TrainEvent{Owner: owner, RunID: aliceRun, Op: "optim_step", Step: step, LearningRate: 1e-4, At: time.Now()})
	}
	b := newBrowser(t, f.URL)
	b.signIn(aliceKey)
	for _, p := range []string{"/console/runs/" + url.PathEscape(aliceRun), "/console/runs/" + url.PathEscape(aliceRun) + "/charts"} {
		resp, body := b.do("GET", p, nil)
		if resp.StatusCode != 200 || !strings.Contains(body, `data-title="loss" data-points="5"`) || !strings.Contains(body, "<polyline") || !strings.Contains(body, ">2.5<") {
			t.Errorf("GET %s: %d, want a 5-point loss chart ending at 2.5:\n%s", p, resp.StatusCode, body)
		}
	}
	if _, body := b.do("GET", "/", nil); !strings.Contains(body, ">training<") || !strings.Contains(body, ">2.5<") {
		t.Errorf("the runs page shows no training status or latest loss:\n%s", body)
	}
}

// After a restart, a run's curves begin with its recorded history: on the
// run page of a run not trained since, and at the run's first new event,
// which the history already holds and is not counted twice.
func TestCurvesResumeFromHistory(t *testing.T) {
	recorded := []server.TrainEvent{
		{Owner: "a", RunID: "r", Op: "forward_backward", LossSum: 4, Weight: 2},
		{Owner: "a", RunID: "r", Op: "optim_step", Step: 1, LearningRate: 0.1, GradNorm: 1},
	}
	history := func(runID, owner string) []server.TrainEvent {
		if runID != "r" || owner != "a" {
			return nil
		}
		return recorded
	}
	c := NewCurves()
	c.SetHistory(history)
	if got, _ := c.Run("r", "b"); got != nil {
		t.Errorf("another owner sees run r: %+v", got)
	}
	if got := lossOf(c, "r", "a"); !equal(got, []float64{2}) {
		t.Errorf("loss after restart = %v, want [2] from the history", got)
	}

	c = NewCurves() // a restart, and the run trains on at once
	c.SetHistory(history)
	next := server.TrainEvent{Owner: "a", RunID: "r", Op: "forward_backward", LossSum: 3, Weight: 3}
	recorded = append(recorded, next) // recorded before the console is told
	c.OnTrain(next)
	c.OnTrain(server.TrainEvent{Owner: "a", RunID: "r", Op: "optim_step", Step: 2, LearningRate: 0.1, GradNorm: 1})
	if got := lossOf(c, "r", "a"); !equal(got, []float64{2, 1}) {
		t.Errorf("loss = %v, want [2 1]: the history then the new step, each event once", got)
	}
}

func lossOf(c *Curves, runID, owner string) []float64 {
	got, _ := c.Run(runID, owner)
	for _, n := range got {
		if n.Name == "loss" {
			return n.Y
		}
	}
	return nil
}
