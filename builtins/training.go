package builtins

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	gotime "time"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

// trainingBuiltins are the builtins training.go defines (registryParts lists them).
var trainingBuiltins = []entry{
	{docEntry{
		Name: "training_client",
		Signature: "training_client(base_model, rank=32, seed=None, train_mlp=True, train_attn=True, train_unembed=True)\n" +
			"training_client(state=\"tinker://RUN/weights/NAME\", optimizer=True)",
		Summary: "A LoRA model to train: a fresh adapter on base_model, or one restored from a saved state.",
		Details: "Methods: .forward(data, loss_fn=\"cross_entropy\", loss_fn_config=None) and .forward_backward(...)\n" +
			"take a list of datum values and return a result with .loss (loss:sum), .metrics and .logprobs (per\n" +
			"datum); .optim_step(learning_rate=1e-4, beta1=0.9, beta2=0.95, eps=1e-12, weight_decay=0.0,\n" +
			"grad_clip_norm=0.0) applies the accumulated gradients; .save_state(name=None, ttl=None) and\n" +
			".save_weights_for_sampler(name=None, ttl=None) return the saved checkpoint; .load_state(path,\n" +
			"optimizer=False) restores one; .info() describes the model. Attributes: .model_id, .base_model.\n" +
			"With state=, optimizer=True also restores Adam's moments, so training continues exactly.",
		Example: "tc = training_client(\"tinker-local/tiny-llama\", rank=8, seed=1)\n" +
			"d = datum(tokenizer(\"tinker-local/tiny-llama\").encode(\"Q: sky?\\nA: blue\"))\n" +
			"for _ in range(5):\n    r = tc.forward_backward([d])\n    tc.optim_step(learning_rate=3e-3)\n" +
			"tc.save_weights_for_sampler(\"blue\")",
	}, trainingClientFn},
}

// TrainingClient is a training_client() value.
type TrainingClient struct {
	TC  *tinkerapi.TrainingClient
	env *Env
}

var _ starlark.HasAttrs = (*TrainingClient)(nil)

func (t *TrainingClient) String() string        { return fmt.Sprintf("<training_client %s>", t.TC.ModelID()) }
func (t *TrainingClient) Type() string          { return "training_client" }
func (t *TrainingClient) Freeze()               {}
func (t *TrainingClient) Truth() starlark.Bool  { return true }
func (t *TrainingClient) Hash() (uint32, error) { return starlark.String(t.TC.ModelID()).Hash() }

func (t *TrainingClient) AttrNames() []string { return trainingClientAttrs.names(t) }
func (t *TrainingClient) Attr(name string) (starlark.Value, error) {
	return trainingClientAttrs.get(t, name)
}

var trainingClientAttrs = attrTable[*TrainingClient]{
	{name: "base_model", doc: "the model the adapter is trained on", value: func(t *TrainingClient) starlark.Value { return starlark.String(t.TC.BaseModel()) }},
	{name: "forward", doc: `forward(data, loss_fn="cross_entropy", loss_fn_config=None): the loss of a list of datums, without gradients; a forward_result`, value: func(t *TrainingClient) starlark.Value { return t.method("forward", tcForward) }},
	{name: "forward_backward", doc: "forward_backward(data, ...): as forward, and accumulates the gradients", value: func(t *TrainingClient) starlark.Value { return t.method("forward_backward", tcForwardBackward) }},
	{name: "info", doc: "info(): a record of the model: id, base model, architecture, tokenizer, LoRA rank", value: func(t *TrainingClient) starlark.Value { return t.method("info", tcInfo) }},
	{name: "load_state", doc: "load_state(path, optimizer=False): restore a saved training state", value: func(t *TrainingClient) starlark.Value { return t.method("load_state", tcLoadState) }},
	{name: "model_id", doc: "the model's id on the backend", value: func(t *TrainingClient) starlark.Value { return starlark.String(t.TC.ModelID()) }},
	{name: "optim_step", doc: "optim_step(learning_rate=1e-4, ...): apply the accumulated gradients with Adam; a dict of metrics", value: func(t *TrainingClient) starlark.Value { return t.method("optim_step", tcOptimStep) }},
	{name: "save_state", doc: "save_state(name=None, ttl=None): save the training state; the checkpoint", value: func(t *TrainingClient) starlark.Value { return t.method("save_state", tcSaveState) }},
	{name: "save_weights_for_sampler", doc: "save_weights_for_sampler(name=None, ttl=None): save weights to sample from; the checkpoint", value: func(t *TrainingClient) starlark.Value { return t.method("save_weights_for_sampler", tcSaveSampler) }},
}

// method is the training client's method name, fn bound to it. Each
// table row calls it from a closure of its own that captures nothing, so
// the table stays a literal the compiler lays out as data.
func (t *TrainingClient) method(name string, fn builtinFn) starlark.Value {
	return starlark.NewBuiltin(name, fn).BindReceiver(t)
}

func trainingClientFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var baseV, seedV, stateV starlark.Value = starlark.None, starlark.None, starlark.None
	lora := tinkerapi.DefaultLoraConfig()
	optimizer := true
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "base_model?", &baseV, "rank?", &lora.Rank, "seed?", &seedV,
		"train_mlp?", &lora.TrainMLP, "train_attn?", &lora.TrainAttn, "train_unembed?", &lora.TrainUnembed,
		"state?", &stateV, "optimizer?", &optimizer); err != nil {
		return nil, err
	}
	fail := func(err error) error { return fmt.Errorf("%s: %w", b.Name(), err) }
	base, err := optString(baseV, "base_model")
	if err != nil {
		return nil, fail(err)
	}
	state, err := stateArg(stateV)
	if err != nil {
		return nil, fail(err)
	}
	if (base == "") == (state == "") {
		return nil, fail(fmt.Errorf("give either base_model or state="))
	}
	if lora.Seed, err = optInt64Arg(seedV, "seed"); err != nil {
		return nil, fail(err)
	}
	env := envOf(thread)
	ctx := ContextOf(thread)
	s, err := env.Session(ctx)
	if err != nil {
		return nil, apiErr(err)
	}
	defer env.clearStatus()
	var tc *tinkerapi.TrainingClient
	if state != "" {
		tc, err = s.CreateTrainingClientFromState(ctx, state, tinkerapi.StateOptions{Optimizer: optimizer, BaseModel: base})
	} else {
		tc, err = s.CreateTrainingClient(ctx, base, lora, nil)
	}
	if err != nil {
		return nil, sessionErr(err)
	}
	return &TrainingClient{TC: tc, env: env}, nil
}

// stateArg reads a training checkpoint given as a path or a checkpoint value.
func stateArg(v starlark.Value) (string, error) {
	if c, ok := v.(*Checkpoint); ok {
		return c.C.TinkerPath, nil
	}
	return optString(v, "state")
}

func receiver(b *starlark.Builtin) *TrainingClient { return b.Receiver().(*TrainingClient) }

// dataArg reads a list of datum values.
func dataArg(v starlark.Value) ([]tinkerapi.Datum, error) {
	it, ok := v.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("data must be a list of datum values, got %s", v.Type())
	}
	var out []tinkerapi.Datum
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		d, ok := x.(*Datum)
		if !ok {
			return nil, fmt.Errorf("data must hold datum values (see datum()), got %s", x.Type())
		}
		out = append(out, d.D)
	}
	return out, nil
}

func fwdbwdInput(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (tinkerapi.ForwardBackwardInput, error) {
	var dataV starlark.Value
	var cfgV starlark.Value = starlark.None
	in := tinkerapi.ForwardBackwardInput{LossFn: "cross_entropy"}
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "data", &dataV, "loss_fn?", &in.LossFn, "loss_fn_config?", &cfgV); err != nil {
		return in, err
	}
	var err error
	if in.Data, err = dataArg(dataV); err != nil {
		return in, fmt.Errorf("%s: %w", b.Name(), err)
	}
	if cfgV != starlark.None {
		d, ok := cfgV.(*starlark.Dict)
		if !ok {
			return in, fmt.Errorf("%s: loss_fn_config must be a dict of numbers", b.Name())
		}
		in.LossFnConfig = map[string]float64{}
		for _, kv := range d.Items() {
			k, ok1 := starlark.AsString(kv[0])
			f, ok2 := starlark.AsFloat(kv[1])
			if !ok1 || !ok2 {
				return in, fmt.Errorf("%s: loss_fn_config must map names to numbers", b.Name())
			}
			in.LossFnConfig[k] = f
		}
	}
	return in, nil
}

func tcForward(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return tcPass(thread, b, args, kwargs, true)
}

func tcForwardBackward(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return tcPass(thread, b, args, kwargs, false)
}

func tcPass(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple, forwardOnly bool) (starlark.Value, error) {
	t := receiver(b)
	in, err := fwdbwdInput(b, args, kwargs)
	if err != nil {
		return nil, err
	}
	ctx := ContextOf(thread)
	defer t.env.clearStatus()
	var out *tinkerapi.ForwardBackwardOutput
	if forwardOnly {
		out, err = t.TC.Forward(ctx, in)
	} else {
		out, err = t.TC.ForwardBackward(ctx, in)
	}
	if err != nil {
		return nil, sessionErr(err)
	}
	return &PassResult{Out: out, Weight: trainedWeight(in.Data)}, nil
}

// trainedWeight sums the data's weights (a datum without weights counts
// each target once), the denominator of a mean loss per trained token.
func trainedWeight(data []tinkerapi.Datum) float64 {
	s := 0.0
	for i := range data {
		s += (&Datum{D: data[i]}).trained()
	}
	return s
}

// PassResult is the result of forward or forward_backward.
type PassResult struct {
	Out    *tinkerapi.ForwardBackwardOutput
	Weight float64
}

var _ RecordValue = (*PassResult)(nil)

func (r *PassResult) String() string {
	l, _ := r.Out.Loss()
	return fmt.Sprintf("<forward result loss=%.4g>", l)
}
func (r *PassResult) Type() string          { return "forward_result" }
func (r *PassResult) Freeze()               {}
func (r *PassResult) Truth() starlark.Bool  { return true }
func (r *PassResult) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: forward_result") }

func (r *PassResult) AttrNames() []string                      { return passResultAttrs.names(r) }
func (r *PassResult) Attr(name string) (starlark.Value, error) { return passResultAttrs.get(r, name) }

var passResultAttrs = attrTable[*PassResult]{
	{name: "logprobs", doc: "per datum, the logprob of each target token (a list of K per token for K targets per token)", value: func(r *PassResult) starlark.Value {
		l := make([]starlark.Value, len(r.Out.LossFnOutputs))
		for i, o := range r.Out.LossFnOutputs {
			l[i] = tensorList(o["logprobs"])
		}
		return starlark.NewList(l)
	}},
	{name: "loss", doc: "the summed loss", value: func(r *PassResult) starlark.Value {
		l, _ := r.Out.Loss()
		return starlark.Float(l)
	}},
	{name: "mean_nll", doc: "the loss per unit of weight, or None when the weights sum to 0", value: func(r *PassResult) starlark.Value {
		l, _ := r.Out.Loss()
		if r.Weight == 0 {
			return starlark.None
		}
		return starlark.Float(l / r.Weight)
	}},
	{name: "metrics", doc: "a dict of the pass's metrics", value: func(r *PassResult) starlark.Value { return metricsDict(r.Out.Metrics) }},
}

func metricsDict(m map[string]float64) *starlark.Dict {
	return sortedDict(m, func(f float64) starlark.Value { return starlark.Float(f) })
}

// sortedDict is m as a dict whose keys iterate in sorted order.
func sortedDict[V any](m map[string]V, value func(V) starlark.Value) *starlark.Dict {
	d := starlark.NewDict(len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		_ = d.SetKey(starlark.String(k), value(m[k]))
	}
	return d
}

func (r *PassResult) Record(gotime.Time) *render.Record {
	rec := &render.Record{Title: "Forward result"}
	keys := make([]string, 0, len(r.Out.Metrics))
	for k := range r.Out.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rec.Fields = append(rec.Fields, render.Field{Name: k, Value: fmt.Sprintf("%.6g", r.Out.Metrics[k])})
	}
	rec.Fields = append(rec.Fields, render.Field{Name: "data", Value: fmt.Sprint(len(r.Out.LossFnOutputs))})
	return rec
}
func (r *PassResult) RowColumns() []render.Column {
	return []render.Column{{Header: "Loss", Right: true}, {Header: "Data", Right: true}}
}
func (r *PassResult) Row(gotime.Time) []string {
	l, _ := r.Out.Loss()
	return []string{fmt.Sprintf("%.6g", l), fmt.Sprint(len(r.Out.LossFnOutputs))}
}
func (r *PassResult) ListTitle(n int) string {
	return ops.Plural(n, "forward result", "forward results")
}

// adamArgs reads optim_step's keyword arguments.
func adamArgs(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (tinkerapi.AdamParams, error) {
	p := tinkerapi.DefaultAdamParams()
	vals := []starlark.Value{starlark.Float(p.LearningRate), starlark.Float(p.Beta1), starlark.Float(p.Beta2),
		starlark.Float(p.Eps), starlark.Float(p.WeightDecay), starlark.Float(p.GradClipNorm)}
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "learning_rate?", &vals[0], "beta1?", &vals[1], "beta2?", &vals[2],
		"eps?", &vals[3], "weight_decay?", &vals[4], "grad_clip_norm?", &vals[5]); err != nil {
		return p, err
	}
	dst := []*float64{&p.LearningRate, &p.Beta1, &p.Beta2, &p.Eps, &p.WeightDecay, &p.GradClipNorm}
	for i, v := range vals {
		f, ok := starlark.AsFloat(v)
		if !ok {
			return p, fmt.Errorf("%s: want numbers, got %s", b.Name(), v.Type())
		}
		*dst[i] = f
	}
	return p, nil
}

func tcOptimStep(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	t := receiver(b)
	p, err := adamArgs(b, args, kwargs)
	if err != nil {
		return nil, err
	}
	defer t.env.clearStatus()
	res, err := t.TC.OptimStep(ContextOf(thread), p)
	if err != nil {
		return nil, sessionErr(err)
	}
	return metricsDict(res.Metrics), nil
}

func tcSaveState(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return tcSave(thread, b, args, kwargs, (*tinkerapi.TrainingClient).SaveState)
}

func tcSaveSampler(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return tcSave(thread, b, args, kwargs, (*tinkerapi.TrainingClient).SaveWeightsForSampler)
}

type saveFunc = func(*tinkerapi.TrainingClient, context.Context, string, *int64) (string, error)

func tcSave(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple, save saveFunc) (starlark.Value, error) {
	t := receiver(b)
	var nameV, ttlV starlark.Value = starlark.None, starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "name?", &nameV, "ttl?", &ttlV); err != nil {
		return nil, err
	}
	name, err := optString(nameV, "name")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	ttl, err := optInt64Arg(ttlV, "ttl")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	ctx := ContextOf(thread)
	defer t.env.clearStatus()
	path, err := save(t.TC, ctx, name, ttl)
	if err != nil {
		return nil, sessionErr(err)
	}
	c, err := t.env.Client()
	if err != nil {
		return nil, apiErr(err)
	}
	cp, err := savedCheckpoint(ctx, c, path)
	if err != nil {
		return nil, apiErr(err)
	}
	return cp, nil
}

func tcLoadState(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	t := receiver(b)
	var pathV starlark.Value
	optimizer := false
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "path", &pathV, "optimizer?", &optimizer); err != nil {
		return nil, err
	}
	path, err := stateArg(pathV)
	if err != nil || path == "" {
		return nil, fmt.Errorf("%s: path must be a tinker://…/weights/… path or checkpoint", b.Name())
	}
	defer t.env.clearStatus()
	if optimizer {
		err = t.TC.LoadStateWithOptimizer(ContextOf(thread), path)
	} else {
		err = t.TC.LoadState(ContextOf(thread), path)
	}
	if err != nil {
		return nil, sessionErr(err)
	}
	return starlark.None, nil
}

func tcInfo(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	t := receiver(b)
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	info, err := t.TC.GetInfo(ContextOf(thread))
	if err != nil {
		return nil, apiErr(err)
	}
	rec := &recordMap{title: "Model " + info.ModelID}
	add := func(k string, v starlark.Value) { rec.keys, rec.values = append(rec.keys, k), append(rec.values, v) }
	add("model_id", starlark.String(info.ModelID))
	add("base_model", starlark.String(t.TC.BaseModel()))
	add("arch", starlark.String(info.ModelData.Arch))
	add("tokenizer_id", starlark.String(info.ModelData.TokenizerID))
	if info.IsLora != nil {
		add("is_lora", starlark.Bool(*info.IsLora))
	}
	add("lora_rank", optInt(info.LoraRank))
	return rec, nil
}
