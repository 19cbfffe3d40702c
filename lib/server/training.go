package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/store"
)

// The training endpoints: forward_backward (protobuf or JSON body), the
// legacy JSON forward, and optim_step. docs/protocol.md, "Training", gives
// the wire forms; docs/training.md what they compute. Each is one of the
// model's ordered operations (trainer.go).

func (s *Server) forwardBackward(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	return s.fwd(w, r, owner, false)
}

// forward is the older JSON endpoint of a forward pass.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	return s.fwd(w, r, owner, true)
}

func (s *Server) fwd(w http.ResponseWriter, r *http.Request, owner string, legacyForward bool) *errorResponse {
	start := time.Now()
	b, e := readFwdBody(r)
	if e != nil {
		return e
	}
	var req *fwdRequest
	if isProto(r) {
		req, e = decodeFwdProto(b)
	} else {
		req, e = decodeFwdJSON(b, legacyForward)
	}
	if e != nil {
		if req != nil {
			s.useUpSeq(owner, req.ModelID, req.SeqID, e)
		}
		return e
	}
	run, release, e := s.admitOwned(owner, req.ModelID)
	if e != nil {
		return e
	}
	defer release()
	op := "forward_backward"
	if req.ForwardOnly {
		op = "forward"
	}
	m := s.trainers.model(run.ID)
	seq, e := m.accept(run.ID, req.SeqID)
	if e != nil {
		return e
	}
	tr, loss, need, e := s.prepareFwd(run, req)
	queued := datumBytes(req.Data)
	if e == nil {
		e = s.trainers.admit(owner, queued)
	}
	if e != nil {
		m.refuse(seq, e)
		s.logRequest(run.SessionID, op, start, e.status, e.detail)
		return e
	}
	s.st.TouchRun(run.ID, s.now())
	caller := s.workContext(run.SessionID) // cancelled when the caller goes (sessions.go)
	f := s.startFutureWith(owner, futureOpts{model: run.ID, session: run.SessionID}, s.trainers.inOrder(run.ID, seq, func() ([]byte, []byte, error) {
		defer s.trainers.release(owner, queued)
		var res *engine.ForwardResult
		// cancelled when a stop halts training (trainstop.go) or the caller goes
		ctx, cancel := eitherDone(s.trainers.ctx, caller)
		defer cancel()
		err := s.trainers.run(ctx, need, func() error {
			var err error
			if req.ForwardOnly {
				res, err = tr.Forward(ctx, loss, req.Data)
			} else if res, err = tr.ForwardBackward(ctx, loss, req.Data); err == nil {
				m.notePeak(peakOf(req.Data))
			}
			return err
		})
		if err != nil {
			s.logRequest(run.SessionID, op, start, 500, err.Error())
			return nil, nil, s.cancelled(caller, op+" on "+run.ID, fmt.Errorf("%s on %s: %w", op, run.ID, err))
		}
		tokens := 0
		for _, d := range req.Data {
			tokens += len(d.ModelInput)
		}
		s.st.RecordUsage(store.UsageEvent{At: s.now(), Owner: owner, SessionID: run.SessionID, BaseModel: run.BaseModel, Type: "training", TokenCount: int64(tokens)})
		if err := checkFwdResult(op, run.ID, res); err != nil {
			s.logRequest(run.SessionID, op, start, 400, err.Error())
			return nil, nil, err
		}
		s.logRequest(run.SessionID, op, start, 200, fmt.Sprintf("%d datums, %d tokens, loss %.6g", len(req.Data), tokens, res.LossSum))
		s.notifyTrain(TrainEvent{Owner: owner, RunID: run.ID, Op: op, Step: tr.Step(), LossSum: res.LossSum, Weight: lossWeight(req.Data)})
		return fwdResultJSON(res), fwdResultProto(res), nil
	}))
	writeFuture(w, f, run.ID)
	return nil
}

// prepareFwd checks a request against the model before it is queued: the
// loss and its configuration, every datum (by index and field), and the
// activation memory it needs against the budget.
func (s *Server) prepareFwd(run store.RunView, req *fwdRequest) (*engine.Trainer, engine.Loss, int64, *errorResponse) {
	loss, err := engine.NewLoss(req.LossFn, req.LossConfig)
	if err != nil {
		return nil, loss, 0, errorf(http.StatusBadRequest, "%v", err)
	}
	tr, err := s.trainer(run)
	if err != nil {
		return nil, loss, 0, trainerError(err)
	}
	if err := tr.ValidateData(loss, req.Data); err != nil {
		var ie *engine.InputError
		if errors.As(err, &ie) {
			return nil, loss, 0, errorf(http.StatusBadRequest, "data[%d].%s: %s", ie.Datum, ie.Field, ie.Msg)
		}
		return nil, loss, 0, errorf(http.StatusBadRequest, "%v", err)
	}
	lengths := make([]int, len(req.Data))
	for i, d := range req.Data {
		lengths[i] = len(d.ModelInput)
	}
	tr.SetCallLimit(s.trainers.budget) // fewer datums side by side rather than a refusal
	need := tr.CallBytes(lengths, !req.ForwardOnly)
	return tr, loss, need, s.trainers.checkBudget(need)
}

// trainerError answers a failure to set up a model's trainer: the model
// cannot be trained here (400) or something broke (500).
func trainerError(err error) *errorResponse {
	var ue userError
	var full trainMemoryFull
	switch {
	case errors.As(err, &ue):
		return errorf(http.StatusBadRequest, "%v", err)
	case errors.As(err, &full):
		return errorf(http.StatusTooManyRequests, "%v", err)
	}
	return errorf(http.StatusInternalServerError, "%v", err)
}

func (s *Server) optimStep(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	start := time.Now()
	var body struct {
		ModelID    string `json:"model_id"`
		SeqID      *int   `json:"seq_id"`
		AdamParams *struct {
			LearningRate *float64 `json:"learning_rate"`
			Beta1        *float64 `json:"beta1"`
			Beta2        *float64 `json:"beta2"`
			Eps          *float64 `json:"eps"`
			WeightDecay  *float64 `json:"weight_decay"`
			GradClipNorm *float64 `json:"grad_clip_norm"`
		} `json:"adam_params"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	run, release, e := s.admitOwned(owner, body.ModelID)
	if e != nil {
		return e
	}
	defer release()
	m := s.trainers.model(run.ID)
	seq, e := m.accept(run.ID, body.SeqID)
	if e != nil {
		return e
	}
	p := engine.DefaultAdamParams()
	if ap := body.AdamParams; ap == nil {
		e = errorf(http.StatusUnprocessableEntity, "adam_params is required")
	} else {
		setIf(&p.LearningRate, ap.LearningRate)
		setIf(&p.Beta1, ap.Beta1)
		setIf(&p.Beta2, ap.Beta2)
		setIf(&p.Eps, ap.Eps)
		setIf(&p.WeightDecay, ap.WeightDecay)
		setIf(&p.GradClipNorm, ap.GradClipNorm)
		if err := p.Validate(); err != nil {
			e = errorf(http.StatusBadRequest, "%v", err)
		}
	}
	var tr *engine.Trainer
	if e == nil {
		var err error
		if tr, err = s.trainer(run); err != nil {
			e = trainerError(err)
		}
	}
	if e != nil {
		m.refuse(seq, e)
		s.logRequest(run.SessionID, "optim_step", start, e.status, e.detail)
		return e
	}
	s.st.TouchRun(run.ID, s.now())
	// A step whose caller went never runs: its forward_backward may have
	// been cancelled, and the step must not apply without its gradients.
	ctx := s.workContext(run.SessionID)
	f := s.startFutureWith(owner, futureOpts{model: run.ID, session: run.SessionID}, s.trainers.inOrder(run.ID, seq, func() ([]byte, []byte, error) {
		var metrics map[string]float64
		err := s.trainers.run(context.Background(), 0, func() error {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("cancelled: %w", err)
			}
			var err error
			if metrics, err = tr.OptimStepFinite(p); err != nil {
				return err
			}
			return s.trainers.stepped(run.ID)
		})
		peak := m.peak.Swap(nil) // the gradients are spent either way
		var nf *engine.NonFiniteError
		if errors.As(err, &nf) {
			err = nonFiniteStepError(run.ID, nf, peak)
			s.logRequest(run.SessionID, "optim_step", start, 400, err.Error())
			return nil, nil, err
		}
		if err != nil {
			s.logRequest(run.SessionID, "optim_step", start, 500, err.Error())
			return nil, nil, s.cancelled(ctx, "optim_step on "+run.ID, fmt.Errorf("optim_step on %s: %w", run.ID, err))
		}
		if err := checkMetrics("optim_step", run.ID, metrics); err != nil {
			s.logRequest(run.SessionID, "optim_step", start, 400, err.Error())
			return nil, nil, err
		}
		s.logRequest(run.SessionID, "optim_step", start, 200, fmt.Sprintf("step %d", tr.Step()))
		s.notifyTrain(TrainEvent{Owner: owner, RunID: run.ID, Op: "optim_step", Step: tr.Step(), LearningRate: p.LearningRate, GradNorm: metrics["unclipped_grad_l2:mean"]})
		res, err := json.Marshal(map[string]any{"metrics": metrics, "type": "optim_step"})
		return res, nil, err
	}))
	writeFuture(w, f, run.ID)
	return nil
}
