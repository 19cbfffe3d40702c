package train

import (
	"context"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Client is what a loop asks of a training client: passes, optimizer
// steps and saves. *tinkerapi.TrainingClient has it; a loop never needs
// more, so a test or another backend can stand in with a small type.
type Client interface {
	ForwardAsync(ctx context.Context, in tinkerapi.ForwardBackwardInput) (*tinkerapi.Future[*tinkerapi.ForwardBackwardOutput], error)
	ForwardBackwardAsync(ctx context.Context, in tinkerapi.ForwardBackwardInput) (*tinkerapi.Future[*tinkerapi.ForwardBackwardOutput], error)
	OptimStepAsync(ctx context.Context, p tinkerapi.AdamParams) (*tinkerapi.Future[*tinkerapi.OptimStepResponse], error)
	SaveState(ctx context.Context, name string, ttlSeconds *int64) (string, error)
	SaveWeightsForSampler(ctx context.Context, name string, ttlSeconds *int64) (string, error)
}

// Session opens the training client of a run: a new adapter, or one
// restored from a saved state (with its optimizer when a run resumes).
// Its Client looks up the backend's models and a state's base model.
// *tinkerapi.Session has it.
type Session interface {
	Client() *tinkerapi.Client
	CreateTrainingClient(ctx context.Context, baseModel string, lora tinkerapi.LoraConfig, userMetadata map[string]string) (*tinkerapi.TrainingClient, error)
	CreateTrainingClientFromState(ctx context.Context, path string, opts tinkerapi.StateOptions) (*tinkerapi.TrainingClient, error)
}

var _ Session = (*tinkerapi.Session)(nil)
var _ Client = (*tinkerapi.TrainingClient)(nil)

// LoopAdamEps is the Adam epsilon the loops send: the cookbook's SFT, DPO
// and RL loops send 1e-8, where the SDK's optim_step defaults to 1e-12
// (which training_client().optim_step keeps).
const LoopAdamEps = 1e-8

// adam is the loops' Adam settings at learning rate lr.
func adam(lr float64) tinkerapi.AdamParams {
	p := tinkerapi.DefaultAdamParams()
	p.LearningRate, p.Eps = lr, LoopAdamEps
	return p
}

// Sampler samples from saved weights: RL samples its policy, evaluation a
// model. *tinkerapi.Session has it.
type Sampler interface {
	CreateSamplingSession(ctx context.Context, baseModel, modelPath string) (string, error)
	Sample(ctx context.Context, samplingSessionID string, req tinkerapi.SampleRequest) (*tinkerapi.SampleResponse, error)
}

// SamplingSession is a Session that also samples, as RL needs.
type SamplingSession interface {
	Session
	Sampler
}

var _ SamplingSession = (*tinkerapi.Session)(nil)
