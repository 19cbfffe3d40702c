package console

import (
	"sync"
	"time"

	"github.com/tinkershell/tinker/lib/server"
)

const (
	maxCurveRuns   = 256  // runs whose curves are kept; the least recently trained go first
	maxCurvePoints = 4096 // points per series; older ones are dropped
)

// Curves holds the training curves of the runs training on the local
// server, built from its events: the mean loss of each optimizer step's
// forward_backward passes, the loss of forward-only (evaluation) passes
// at each step, and each step's learning rate and gradient norm.
type Curves struct {
	mu   sync.Mutex
	runs map[string]*runCurves // by run id
	// history returns a run's recorded events (the local server's
	// TrainHistory), so curves drawn before a restart come back.
	history func(runID, owner string) []server.TrainEvent
}

// SetHistory makes the curves of a run the console has not seen since it
// started begin with f's events for it (pass the local server's
// TrainHistory, which records each event before telling OnTrain).
func (c *Curves) SetHistory(f func(runID, owner string) []server.TrainEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.history = f
}

// runCurves is one run's curves and its partial step.
type runCurves struct {
	owner             string
	last              time.Time
	lossSum, weight   float64 // forward_backward since the last step
	loss, eval, lr, g series
}

// series is one curve: y by optimizer step.
type series struct{ X, Y []float64 }

func (s *series) add(x, y float64) {
	if len(s.X) >= maxCurvePoints {
		s.X, s.Y = s.X[len(s.X)/2:], s.Y[len(s.Y)/2:]
	}
	s.X, s.Y = append(s.X, x), append(s.Y, y)
}

// NewCurves returns an empty set of curves.
func NewCurves() *Curves { return &Curves{runs: map[string]*runCurves{}} }

// OnTrain records one training event; pass it as server.Options.OnTrain.
func (c *Curves) OnTrain(ev server.TrainEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rc, loaded := c.run(ev.RunID, ev.Owner)
	if !loaded {
		rc.apply(ev)
	}
}

// apply adds one event to rc's curves.
func (rc *runCurves) apply(ev server.TrainEvent) {
	rc.last = ev.At
	switch ev.Op {
	case "forward_backward":
		rc.lossSum += ev.LossSum
		rc.weight += ev.Weight
	case "forward":
		if ev.Weight > 0 {
			rc.eval.add(float64(ev.Step), ev.LossSum/ev.Weight)
		}
	case "optim_step":
		if rc.weight > 0 {
			rc.loss.add(float64(ev.Step), rc.lossSum/rc.weight)
		}
		rc.lossSum, rc.weight = 0, 0
		rc.lr.add(float64(ev.Step), ev.LearningRate)
		rc.g.add(float64(ev.Step), ev.GradNorm)
	}
}

// run returns the curves of runID. A run not held yet starts from its
// recorded history; loaded says it had one, which then already holds the
// event being recorded.
func (c *Curves) run(runID, owner string) (rc *runCurves, loaded bool) {
	if rc = c.runs[runID]; rc != nil && rc.owner == owner {
		return rc, false
	}
	evs := c.recorded(runID, owner)
	return c.add(runID, owner, evs), len(evs) > 0
}

// recorded is runID's recorded history, if the console has one.
func (c *Curves) recorded(runID, owner string) []server.TrainEvent {
	if c.history == nil {
		return nil
	}
	return c.history(runID, owner)
}

// add holds a new run's curves, built from evs, making room if needed.
func (c *Curves) add(runID, owner string, evs []server.TrainEvent) *runCurves {
	if len(c.runs) >= maxCurveRuns {
		var oldest string
		for id, r := range c.runs {
			if oldest == "" || r.last.Before(c.runs[oldest].last) {
				oldest = id
			}
		}
		delete(c.runs, oldest)
	}
	rc := &runCurves{owner: owner}
	for _, ev := range evs {
		rc.apply(ev)
	}
	c.runs[runID] = rc
	return rc
}

// Named is one curve with its title, ready to chart.
type Named struct {
	Name string
	series
}

// Run returns copies of runID's curves if owner owns it (nil otherwise),
// and when the run last trained.
func (c *Curves) Run(runID, owner string) ([]Named, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rc := c.runs[runID]
	if rc == nil {
		if evs := c.recorded(runID, owner); len(evs) > 0 {
			rc = c.add(runID, owner, evs)
		}
	}
	if rc == nil || rc.owner != owner {
		return nil, time.Time{}
	}
	var out []Named
	for _, n := range []Named{{"loss", rc.loss}, {"eval loss", rc.eval}, {"learning rate", rc.lr}, {"gradient norm", rc.g}} {
		if len(n.X) > 0 {
			n.X, n.Y = append([]float64(nil), n.X...), append([]float64(nil), n.Y...)
			out = append(out, n)
		}
	}
	return out, rc.last
}
