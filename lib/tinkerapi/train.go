package tinkerapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// TrainingClient trains one LoRA model of a session. Every operation that
// changes or reads the model's state (each forward_backward chunk,
// optim_step, save, load) takes the model's next seq id, and the server
// runs them in that order; the client submits them in that order too, so
// calls made one after another run one after another even when nothing
// is awaited in between. It is safe for concurrent use. The requests and
// their results are described in docs/protocol.md, "Training".
type TrainingClient struct {
	s         *Session
	modelID   string
	baseModel string

	// submitMu makes taking a seq id and submitting the request one step,
	// so requests reach the server in seq id order.
	submitMu sync.Mutex
}

// ModelID is the model's id, which is also its training run id.
func (tc *TrainingClient) ModelID() string { return tc.modelID }

// BaseModel is the model the adapter trains on.
func (tc *TrainingClient) BaseModel() string { return tc.baseModel }

// CreateTrainingClient creates a LoRA model on baseModel (create_model)
// and returns a client that trains it.
func (s *Session) CreateTrainingClient(ctx context.Context, baseModel string, lora LoraConfig, userMetadata map[string]string) (*TrainingClient, error) {
	id, err := s.CreateModel(ctx, baseModel, lora, userMetadata)
	if err != nil {
		return nil, err
	}
	return &TrainingClient{s: s, modelID: id, baseModel: baseModel}, nil
}

// StateOptions adjusts CreateTrainingClientFromState.
type StateOptions struct {
	// Optimizer also restores the optimizer state (Adam's moments and step
	// count); without it the optimizer starts afresh.
	Optimizer bool
	// BaseModel overrides the checkpoint's base model; it must be
	// compatible with it.
	BaseModel    string
	UserMetadata map[string]string
}

// CreateTrainingClientFromState creates a model from a training checkpoint
// (tinker://<run>/weights/<name>): the new adapter gets the checkpoint's
// LoRA configuration and weights, and with opts.Optimizer its optimizer
// state. Servers that ask for it (create_model_via_load_weights in
// client/config) do this in one load_weights call; otherwise it is
// weights_info, create_model and load_weights.
func (s *Session) CreateTrainingClientFromState(ctx context.Context, path string, opts StateOptions) (*TrainingClient, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := checkStatePath(path); err != nil {
		return nil, err
	}
	cfg, err := s.c.ServerConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("create training client from %s: %w", path, err)
	}
	var flags struct {
		ViaLoad bool `json:"create_model_via_load_weights"`
	}
	if len(cfg.Raw) > 0 {
		json.Unmarshal(cfg.Raw, &flags)
	}
	if flags.ViaLoad {
		return s.createViaLoad(ctx, path, opts)
	}
	info, err := s.c.WeightsInfo(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("create training client from %s: %w", path, err)
	}
	if !info.IsLora || info.LoraRank == nil {
		return nil, fmt.Errorf("create training client from %s: the checkpoint is not a LoRA adapter", path)
	}
	lora := LoraConfig{Rank: *info.LoraRank, TrainMLP: orTrue(info.TrainMLP), TrainAttn: orTrue(info.TrainAttn), TrainUnembed: orTrue(info.TrainUnembed)}
	base := opts.BaseModel
	if base == "" {
		base = info.BaseModel
	}
	tc, err := s.CreateTrainingClient(ctx, base, lora, opts.UserMetadata)
	if err != nil {
		return nil, fmt.Errorf("create training client from %s: %w", path, err)
	}
	if err := tc.load(ctx, path, opts.Optimizer); err != nil {
		return nil, fmt.Errorf("create training client from %s: %w", path, err)
	}
	return tc, nil
}

func orTrue(b *bool) bool { return b == nil || *b }

// createViaLoad creates the model with a load_weights request addressed by
// session and model_seq_id; the model's own seq ids then start at 1.
func (s *Session) createViaLoad(ctx context.Context, path string, opts StateOptions) (*TrainingClient, error) {
	seq := s.modelSeq.Add(1) - 1
	req := struct {
		SessionID    string            `json:"session_id"`
		ModelSeqID   int64             `json:"model_seq_id"`
		BaseModel    string            `json:"base_model,omitempty"`
		UserMetadata map[string]string `json:"user_metadata,omitempty"`
		Path         string            `json:"path"`
		Optimizer    bool              `json:"optimizer"`
		Type         string            `json:"type"`
	}{s.id, seq, opts.BaseModel, opts.UserMetadata, path, opts.Optimizer, "load_weights"}
	submitted := time.Now()
	h, err := s.submit(ctx, "/api/v1/load_weights", req)
	if err != nil {
		return nil, fmt.Errorf("create training client from %s: %w", path, err)
	}
	var res struct {
		ModelID string `json:"model_id"`
	}
	if err := s.await(ctx, h, "LoadWeights", submitted, &res, false); err != nil {
		return nil, fmt.Errorf("create training client from %s: %w", path, err)
	}
	if res.ModelID == "" {
		res.ModelID = fmt.Sprintf("%s:train:%d", s.id, seq) // how the service names it
	}
	tc := &TrainingClient{s: s, modelID: res.ModelID, baseModel: opts.BaseModel}
	if tc.baseModel == "" {
		info, err := s.c.GetInfo(ctx, tc.modelID)
		if err != nil {
			return nil, fmt.Errorf("create training client from %s: %w", path, err)
		}
		tc.baseModel = info.ModelName
		if tc.baseModel == "" {
			tc.baseModel = info.ModelData.ModelName
		}
	}
	return tc, nil
}

// checkStatePath accepts tinker://<run>/weights/<name> only.
func checkStatePath(p string) error {
	tp, err := ParsePath(p)
	if err != nil {
		return fmt.Errorf("invalid state path %q: want tinker://<run>/weights/<name>", p)
	}
	if tp.Kind != "weights" {
		return fmt.Errorf("%s is a sampler checkpoint: training state is loaded from a weights/ path (save_state)", p)
	}
	return nil
}

// submitOrdered takes the model's next seq id(s) and submits under
// submitMu; build returns the endpoint path and body for a seq id.
func (tc *TrainingClient) submitOrdered(ctx context.Context, n int, build func(i int, seq int64) (string, any, []Option, error)) ([]futureHandle, time.Time, error) {
	if err := tc.s.checkOpen(); err != nil {
		return nil, time.Time{}, err
	}
	tc.submitMu.Lock()
	defer tc.submitMu.Unlock()
	submitted := time.Now()
	hs := make([]futureHandle, 0, n)
	for i := 0; i < n; i++ {
		path, body, opts, err := build(i, tc.s.nextModelSeq(tc.modelID))
		if err == nil {
			var h futureHandle
			h, err = tc.s.submit(ctx, path, body, opts...)
			hs = append(hs, h)
		}
		if err != nil {
			if i > 0 {
				return nil, submitted, fmt.Errorf("request %d of %d (the earlier ones were submitted and will run): %w", i+1, n, err)
			}
			return nil, submitted, err
		}
	}
	return hs, submitted, nil
}

// ForwardAsync submits a forward pass (no gradients) and returns its
// future. See ForwardBackwardAsync.
func (tc *TrainingClient) ForwardAsync(ctx context.Context, in ForwardBackwardInput) (*Future[*ForwardBackwardOutput], error) {
	return tc.fwdbwd(ctx, in, true)
}

// ForwardBackwardAsync submits a forward and backward pass, whose
// gradients add to those of earlier passes until the next optim_step, and
// returns its future. A batch beyond the server's chunk limits
// (fwdbwd_max_chunk_len datums, fwdbwd_max_chunk_bytes_count estimated
// bytes, from client/config) goes as several requests with consecutive
// seq ids; the result joins them in order, metrics merged by MergeMetrics.
// ctx bounds the submission only.
func (tc *TrainingClient) ForwardBackwardAsync(ctx context.Context, in ForwardBackwardInput) (*Future[*ForwardBackwardOutput], error) {
	return tc.fwdbwd(ctx, in, false)
}

// Forward runs ForwardAsync and waits for the result.
func (tc *TrainingClient) Forward(ctx context.Context, in ForwardBackwardInput) (*ForwardBackwardOutput, error) {
	f, err := tc.ForwardAsync(ctx, in)
	if err != nil {
		return nil, err
	}
	return f.Wait(ctx)
}

// ForwardBackward runs ForwardBackwardAsync and waits for the result.
func (tc *TrainingClient) ForwardBackward(ctx context.Context, in ForwardBackwardInput) (*ForwardBackwardOutput, error) {
	f, err := tc.ForwardBackwardAsync(ctx, in)
	if err != nil {
		return nil, err
	}
	return f.Wait(ctx)
}

func (tc *TrainingClient) fwdbwd(ctx context.Context, in ForwardBackwardInput, forwardOnly bool) (*Future[*ForwardBackwardOutput], error) {
	op, kind := "forward_backward", "ForwardBackward"
	if forwardOnly {
		op, kind = "forward", "Forward"
	}
	if err := in.validate(); err != nil {
		return nil, fmt.Errorf("%s on %s: %w", op, tc.modelID, err)
	}
	cfg, err := tc.s.c.ServerConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", op, tc.modelID, err)
	}
	chunks := chunkData(in.Data, chunkLimitsFrom(cfg.Raw))
	bodyOpts := []Option{WithContentType("application/x-protobuf")}
	if cfg.ProtoCompressFwdbwd {
		bodyOpts = append(bodyOpts, WithHeader("Content-Encoding", "zstd"))
	}
	hs, submitted, err := tc.submitOrdered(ctx, len(chunks), func(i int, seq int64) (string, any, []Option, error) {
		req := &tinkerproto.ForwardBackwardRequest{ModelId: tc.modelID, SeqId: int32(seq), LossFn: in.LossFn,
			LossFnConfig: in.LossFnConfig, ForwardOnly: forwardOnly}
		for _, d := range chunks[i] {
			req.Data = append(req.Data, d.toProto())
		}
		body, err := tinkerproto.Marshal(req)
		if err == nil && cfg.ProtoCompressFwdbwd {
			body = zstdBody(body)
		}
		return "/api/v1/forward_backward", body, bodyOpts, err
	})
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", op, tc.modelID, err)
	}
	return newFuture(func(ctx context.Context) (*ForwardBackwardOutput, error) {
		parts := make([]*ForwardBackwardOutput, len(hs))
		for i, h := range hs {
			var raw FutureResult
			err := tc.s.await(ctx, h, kind, submitted, &raw, true)
			if err == nil {
				if raw.Proto {
					parts[i], err = DecodeForwardBackwardProto(raw.Body)
				} else {
					parts[i], err = DecodeForwardBackwardJSON(raw.Body)
				}
			}
			if err == nil && len(parts[i].LossFnOutputs) != len(chunks[i]) {
				err = fmt.Errorf("the result has outputs for %d datums, sent %d", len(parts[i].LossFnOutputs), len(chunks[i]))
			}
			if err != nil {
				if len(hs) > 1 {
					err = fmt.Errorf("request %d of %d: %w", i+1, len(hs), err)
				}
				return nil, opError(op+" on "+tc.modelID, err)
			}
		}
		return combineOutputs(parts), nil
	}), nil
}

// AdamParams configures one optimizer step: AdamW with bias correction,
// decoupled weight decay, and (when GradClipNorm > 0) the gradients first
// scaled to a global L2 norm of at most GradClipNorm.
type AdamParams struct {
	LearningRate float64 `json:"learning_rate"`
	Beta1        float64 `json:"beta1"`
	Beta2        float64 `json:"beta2"`
	Eps          float64 `json:"eps"`
	WeightDecay  float64 `json:"weight_decay"`
	GradClipNorm float64 `json:"grad_clip_norm"`
}

// DefaultAdamParams are the service's defaults: learning rate 1e-4, betas
// 0.9 and 0.95, eps 1e-12, no weight decay, no clipping.
func DefaultAdamParams() AdamParams {
	return AdamParams{LearningRate: 1e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-12}
}

func (p AdamParams) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"learning_rate", p.LearningRate}, {"beta1", p.Beta1}, {"beta2", p.Beta2}, {"eps", p.Eps},
		{"weight_decay", p.WeightDecay}, {"grad_clip_norm", p.GradClipNorm}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("%s must be a non-negative number, got %v", f.name, f.v)
		}
	}
	if p.Beta1 >= 1 || p.Beta2 >= 1 {
		return fmt.Errorf("beta1 and beta2 must be below 1, got %v and %v", p.Beta1, p.Beta2)
	}
	return nil
}

// adamWire is AdamParams as the SDK sends them: every field a JSON float.
type adamWire struct {
	LearningRate wireFloat `json:"learning_rate"`
	Beta1        wireFloat `json:"beta1"`
	Beta2        wireFloat `json:"beta2"`
	Eps          wireFloat `json:"eps"`
	WeightDecay  wireFloat `json:"weight_decay"`
	GradClipNorm wireFloat `json:"grad_clip_norm"`
}

func (p AdamParams) wire() adamWire {
	return adamWire{wireFloat(p.LearningRate), wireFloat(p.Beta1), wireFloat(p.Beta2), wireFloat(p.Eps),
		wireFloat(p.WeightDecay), wireFloat(p.GradClipNorm)}
}

// OptimStepResponse is the result of optim_step; its metrics include the
// global gradient norm before clipping (unclipped_grad_l2:mean).
type OptimStepResponse struct {
	Metrics map[string]float64 `json:"metrics"`
}

// OptimStepAsync submits an optimizer step, which applies and then zeroes
// the gradients accumulated since the last one, and returns its future.
// ctx bounds the submission only.
func (tc *TrainingClient) OptimStepAsync(ctx context.Context, p AdamParams) (*Future[*OptimStepResponse], error) {
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("optim_step on %s: %w", tc.modelID, err)
	}
	hs, submitted, err := tc.submitOrdered(ctx, 1, func(_ int, seq int64) (string, any, []Option, error) {
		return "/api/v1/optim_step", struct {
			AdamParams adamWire `json:"adam_params"`
			ModelID    string   `json:"model_id"`
			SeqID      int64    `json:"seq_id"`
			Type       string   `json:"type"`
		}{p.wire(), tc.modelID, seq, "optim_step"}, nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("optim_step on %s: %w", tc.modelID, err)
	}
	return newFuture(func(ctx context.Context) (*OptimStepResponse, error) {
		var res OptimStepResponse
		if err := tc.s.await(ctx, hs[0], "OptimStep", submitted, &res, false); err != nil {
			return nil, opError("optim_step on "+tc.modelID, err)
		}
		if res.Metrics == nil {
			res.Metrics = map[string]float64{}
		}
		return &res, nil
	}), nil
}

// OptimStep runs OptimStepAsync and waits for the result.
func (tc *TrainingClient) OptimStep(ctx context.Context, p AdamParams) (*OptimStepResponse, error) {
	f, err := tc.OptimStepAsync(ctx, p)
	if err != nil {
		return nil, err
	}
	return f.Wait(ctx)
}

// SaveState saves the model's weights and optimizer state and returns the
// checkpoint's tinker://<run>/weights/<name> path. An empty name lets the
// server choose one; ttlSeconds nil means the checkpoint never expires.
func (tc *TrainingClient) SaveState(ctx context.Context, name string, ttlSeconds *int64) (string, error) {
	return tc.save(ctx, "save_weights", "SaveWeights", name, ttlSeconds)
}

// SaveWeightsForSampler saves the current adapter for sampling and returns
// its tinker://<run>/sampler_weights/<name> path.
func (tc *TrainingClient) SaveWeightsForSampler(ctx context.Context, name string, ttlSeconds *int64) (string, error) {
	return tc.save(ctx, "save_weights_for_sampler", "SaveWeightsForSampler", name, ttlSeconds)
}

func (tc *TrainingClient) save(ctx context.Context, op, kind, name string, ttl *int64) (string, error) {
	if err := checkSave(op, tc.modelID, name, ttl); err != nil {
		return "", err
	}
	hs, submitted, err := tc.submitOrdered(ctx, 1, func(_ int, seq int64) (string, any, []Option, error) {
		return "/api/v1/" + op, saveRequest(op, tc.modelID, name, ttl, seq), nil, nil
	})
	if err != nil {
		return "", fmt.Errorf("%s of %s: %w", op, tc.modelID, err)
	}
	return tc.s.awaitSave(ctx, hs[0], op, kind, tc.modelID, submitted)
}

// LoadState replaces the model's weights with a training checkpoint's
// (tinker://<run>/weights/<name>) and starts a fresh optimizer state (see
// docs/training.md); LoadStateWithOptimizer restores that too.
func (tc *TrainingClient) LoadState(ctx context.Context, path string) error {
	return tc.load(ctx, path, false)
}

// LoadStateWithOptimizer loads a checkpoint's weights and optimizer state.
func (tc *TrainingClient) LoadStateWithOptimizer(ctx context.Context, path string) error {
	return tc.load(ctx, path, true)
}

func (tc *TrainingClient) load(ctx context.Context, path string, optimizer bool) error {
	if err := checkStatePath(path); err != nil {
		return fmt.Errorf("load_weights into %s: %w", tc.modelID, err)
	}
	hs, submitted, err := tc.submitOrdered(ctx, 1, func(_ int, seq int64) (string, any, []Option, error) {
		return "/api/v1/load_weights", struct {
			ModelID   string `json:"model_id"`
			Path      string `json:"path"`
			SeqID     int64  `json:"seq_id"`
			Optimizer bool   `json:"optimizer"`
			Type      string `json:"type"`
		}{tc.modelID, path, seq, optimizer, "load_weights"}, nil, nil
	})
	if err == nil {
		err = tc.s.await(ctx, hs[0], "LoadWeights", submitted, nil, false)
	}
	if err != nil {
		return fmt.Errorf("load_weights of %s into %s: %w", path, tc.modelID, err)
	}
	return nil
}

// GetInfo returns the model's metadata; it does not take a seq id.
func (tc *TrainingClient) GetInfo(ctx context.Context) (*GetInfoResponse, error) {
	return tc.s.c.GetInfo(ctx, tc.modelID)
}

// opError puts what was being done before err, unless the server's
// message already starts with it (the local server names the operation
// and model itself), so the two do not repeat each other.
func opError(what string, err error) error {
	if strings.HasPrefix(err.Error(), what+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}
