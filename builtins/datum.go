package builtins

import (
	"fmt"
	"math"
	"slices"
	"strings"
	gotime "time"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/train"
	"go.starlark.net/starlark"
)

// datumBuiltins are the builtins datum.go defines (registryParts lists them).
var datumBuiltins = []entry{
	{docEntry{
		Name:      "datum",
		Signature: "datum(tokens, target_tokens=None, weights=None, logprobs=None, advantages=None)",
		Summary:   "One training example for forward and forward_backward.",
		Details: "With target_tokens, tokens is the model's input and every other list has one value per input\n" +
			"token. Without it, tokens is a whole sequence: the model reads tokens[:-1] and predicts tokens[1:],\n" +
			"and weights, logprobs and advantages (if given) have one value per token of tokens, the first\n" +
			"dropped since nothing predicts it. weights default to 1 for cross_entropy; importance_sampling\n" +
			"and ppo need logprobs (the sampler's) and advantages. For top-K distillation target_tokens may\n" +
			"give K targets per input token (a list of lists) and weights then one weight per target;\n" +
			"cross_entropy returns their logprobs as a list of K per token.",
		Example: "d = datum([1, 72, 105, 33], weights=[0, 0, 1, 1])\nd.target_tokens",
	}, datumFn},
	{docEntry{
		Name:      "conversation_datum",
		Signature: "conversation_datum(model, messages, renderer=None, train_on=\"all_assistant_messages\", max_length=None, reduction=\"mean\")",
		Summary:   "A conversation rendered by the model's renderer as a training example, weighted by train_on.",
		Details: "The tokens are render()'s for the finished conversation; weight 1 marks what the model learns to\n" +
			"say: each assistant message's content and end of turn (\"all_assistant_messages\"), only the last\n" +
			"one's (\"last_assistant_message\") or everything (\"all_messages\"). max_length cuts longer examples.\n" +
			"reduction=\"mean\" (the cookbook's default) then scales the weights to sum to 1, so each example counts\n" +
			"once whatever its length; \"none\" keeps them 0/1 (a token-sum loss).",
		Example: "d = conversation_datum(\"tinker-local/tiny-llama\", [{\"role\": \"user\", \"content\": \"Sky?\"}, {\"role\": \"assistant\", \"content\": \"Blue.\"}])\nsum(d.weights)",
	}, conversationDatumFn},
}

// Datum is a training example value.
type Datum struct{ D tinkerapi.Datum }

var (
	_ RecordValue       = (*Datum)(nil)
	_ starlark.HasAttrs = (*Datum)(nil)
)

func (d *Datum) String() string {
	return "<datum " + ops.Count(len(d.D.ModelInput), "token", "tokens") + ">"
}
func (d *Datum) Type() string          { return "datum" }
func (d *Datum) Freeze()               {}
func (d *Datum) Truth() starlark.Bool  { return true }
func (d *Datum) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: datum") }
func (d *Datum) AttrNames() []string   { return datumAttrs.names(d) }

// Attr also reads a loss input the table does not name, as given.
func (d *Datum) Attr(name string) (starlark.Value, error) {
	if t, ok := d.D.LossFnInputs[name]; ok && name != "tokens" {
		return tensorList(t), nil
	}
	return datumAttrs.get(d, name)
}

var datumAttrs = attrTable[*Datum]{
	{name: "advantages", doc: "per-token advantages, or None", value: func(d *Datum) starlark.Value { return d.lossInput("advantages") }},
	{name: "logprobs", doc: "per-token sampling logprobs, or None", value: func(d *Datum) starlark.Value { return d.lossInput("logprobs") }},
	{name: "target_tokens", doc: "the token each position predicts, or None", value: func(d *Datum) starlark.Value { return d.lossInput("target_tokens") }},
	{name: "tokens", doc: "the input token ids", value: func(d *Datum) starlark.Value { return intList(d.D.ModelInput) }},
	{name: "weights", doc: "per-token loss weights (1 where the model learns), or None", value: func(d *Datum) starlark.Value { return d.lossInput("weights") }},
}

// lossInput is one of the datum's loss inputs, or None when it has none
// of that name.
func (d *Datum) lossInput(name string) starlark.Value {
	if t, ok := d.D.LossFnInputs[name]; ok {
		return tensorList(t)
	}
	return starlark.None
}

func tensorList(t tinkerapi.Tensor) *starlark.List {
	if len(t.Shape) == 2 && t.Shape[1] > 0 {
		k := int(t.Shape[1])
		rows := make([]starlark.Value, t.Len()/k)
		for p := range rows {
			rows[p] = tensorList(tinkerapi.Tensor{Int64: sliceOrNil(t.Int64, p*k, k), Float32: sliceOrNil(t.Float32, p*k, k)})
		}
		return starlark.NewList(rows)
	}
	if t.Int64 != nil {
		l := make([]starlark.Value, len(t.Int64))
		for i, v := range t.Int64 {
			l[i] = starlark.MakeInt64(v)
		}
		return starlark.NewList(l)
	}
	return float32List(t.Float32)
}

// sliceOrNil is v[lo:lo+n], nil for a nil v (the dtype not in use).
func sliceOrNil[T any](v []T, lo, n int) []T {
	if v == nil {
		return nil
	}
	return v[lo : lo+n]
}

func float32List(v []float32) *starlark.List {
	l := make([]starlark.Value, len(v))
	for i, x := range v {
		l[i] = starlark.Float(x)
	}
	return starlark.NewList(l)
}

func (d *Datum) trained() float64 { return train.Weight(d.D) }

func (d *Datum) Record(gotime.Time) *render.Record {
	return &render.Record{Title: "Datum", Fields: []render.Field{
		{Name: "Tokens", Value: fmt.Sprint(len(d.D.ModelInput))},
		{Name: "Trained weight", Value: fmt.Sprintf("%g", d.trained())},
		{Name: "Inputs", Value: strings.Join(sortedNames(d.D.LossFnInputs), ", ")},
	}}
}
func (d *Datum) RowColumns() []render.Column {
	return []render.Column{{Header: "Tokens", Right: true}, {Header: "Trained weight", Right: true}, {Header: "Inputs"}}
}
func (d *Datum) Row(now gotime.Time) []string {
	f := d.Record(now).Fields
	return []string{f[0].Value, f[1].Value, f[2].Value}
}
func (d *Datum) ListTitle(n int) string { return ops.Plural(n, "datum", "data") }

func sortedNames(m map[string]tinkerapi.Tensor) []string {
	var out []string
	for _, a := range datumAttrs {
		if _, ok := m[a.name]; ok {
			out = append(out, a.name)
		}
	}
	return out
}

func floatsArg(v starlark.Value) ([]float32, error) {
	it, ok := v.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("want a list of numbers, got %s", v.Type())
	}
	var out []float32
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		f, ok := starlark.AsFloat(x)
		if !ok {
			return nil, fmt.Errorf("want numbers, got %s", x.Type())
		}
		out = append(out, float32(f))
	}
	return out, nil
}

func datumFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var tokensV starlark.Value
	var targetsV, weightsV, logprobsV, advV starlark.Value = starlark.None, starlark.None, starlark.None, starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "tokens", &tokensV, "target_tokens?", &targetsV,
		"weights?", &weightsV, "logprobs?", &logprobsV, "advantages?", &advV); err != nil {
		return nil, err
	}
	fail := func(format string, a ...any) error { return fmt.Errorf("%s: %s", b.Name(), fmt.Sprintf(format, a...)) }
	toks, err := intsArg(tokensV)
	if err != nil {
		return nil, fail("tokens: %v", err)
	}
	d := tinkerapi.Datum{LossFnInputs: map[string]tinkerapi.Tensor{}}
	shift := 0
	if targetsV == starlark.None {
		if len(toks) < 2 {
			return nil, fail("tokens needs at least two tokens (an input and a target)")
		}
		d.ModelInput = toks[:len(toks)-1]
		targets := make([]int64, len(toks)-1)
		for i, t := range toks[1:] {
			targets[i] = int64(t)
		}
		d.LossFnInputs["target_tokens"] = tinkerapi.Int64s(targets)
		shift = 1
	} else {
		if len(toks) == 0 {
			return nil, fail("tokens is empty")
		}
		d.ModelInput = toks
		t, err := targetsArg(targetsV, len(toks))
		if err != nil {
			return nil, fail("target_tokens: %v", err)
		}
		d.LossFnInputs["target_tokens"] = t
	}
	for _, f := range []struct {
		name string
		v    starlark.Value
	}{{"weights", weightsV}, {"logprobs", logprobsV}, {"advantages", advV}} {
		if f.v == starlark.None {
			continue
		}
		if sh := d.LossFnInputs["target_tokens"].Shape; f.name == "weights" && sh != nil {
			w, err := wideWeightsArg(f.v, sh)
			if err != nil {
				return nil, fail("weights: %v", err)
			}
			d.LossFnInputs[f.name] = w
			continue
		}
		vals, err := floatsArg(f.v)
		if err != nil {
			return nil, fail("%s: %v", f.name, err)
		}
		if len(vals) != len(toks) {
			return nil, fail("%s has %d values, want %d (one per token of tokens)", f.name, len(vals), len(toks))
		}
		d.LossFnInputs[f.name] = tinkerapi.Float32s(vals[shift:])
	}
	return &Datum{D: d}, nil
}

// targetsArg reads datum()'s target_tokens for n input tokens: a list of
// n token ids, or a list of n lists of K ids each, the (N, K) form that
// cross_entropy scores as K targets per position (top-K distillation).
func targetsArg(v starlark.Value, n int) (tinkerapi.Tensor, error) {
	rows, err := rowsArg(v)
	if err != nil {
		return tinkerapi.Tensor{}, err
	}
	if rows == nil {
		ids, err := targetIDsArg(v)
		if err != nil {
			return tinkerapi.Tensor{}, err
		}
		if len(ids) != n {
			return tinkerapi.Tensor{}, fmt.Errorf("has %d values, want %d (one per input token)", len(ids), n)
		}
		return tinkerapi.Int64s(int64s(ids)), nil
	}
	if len(rows) != n {
		return tinkerapi.Tensor{}, fmt.Errorf("has %d rows, want %d (one list of targets per input token)", len(rows), n)
	}
	var flat []int64
	k := 0
	for p, r := range rows {
		ids, err := targetIDsArg(r)
		if err != nil {
			return tinkerapi.Tensor{}, fmt.Errorf("row %d: %v", p, err)
		}
		if p == 0 {
			k = len(ids)
		}
		if len(ids) != k || k == 0 {
			return tinkerapi.Tensor{}, fmt.Errorf("row %d has %d targets; every row needs the same number K >= 1 (row 0 has %d)", p, len(ids), k)
		}
		flat = append(flat, int64s(ids)...)
	}
	return tinkerapi.Tensor{Int64: flat, Shape: []int64{int64(n), int64(k)}}, nil
}

// targetIDsArg reads a list of target token ids. Whole numbers written as
// floats (72.0, as numeric code often produces) are taken as the service
// takes them; 3.5 is refused as not an integer.
func targetIDsArg(v starlark.Value) ([]int, error) {
	it, ok := v.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("want a list of token ids, got %s", v.Type())
	}
	var out []int
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		if f, ok := x.(starlark.Float); ok {
			if float64(f) != math.Trunc(float64(f)) || math.Abs(float64(f)) > math.MaxInt32 {
				return nil, fmt.Errorf("%v at position %d is not an integer: target tokens must be integer token ids", f, len(out))
			}
			x = starlark.MakeInt(int(f))
		}
		n, err := tokenID(x)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// wideWeightsArg reads weights for (N, K) targets: a list of N lists of K
// numbers, one weight per target.
func wideWeightsArg(v starlark.Value, shape []int64) (tinkerapi.Tensor, error) {
	rows, err := rowsArg(v)
	if err != nil {
		return tinkerapi.Tensor{}, err
	}
	if int64(len(rows)) != shape[0] {
		return tinkerapi.Tensor{}, fmt.Errorf("want %d lists of %d weights, one per target in target_tokens", shape[0], shape[1])
	}
	var flat []float32
	for p, r := range rows {
		w, err := floatsArg(r)
		if err != nil {
			return tinkerapi.Tensor{}, fmt.Errorf("row %d: %v", p, err)
		}
		if int64(len(w)) != shape[1] {
			return tinkerapi.Tensor{}, fmt.Errorf("row %d has %d weights, want %d (one per target)", p, len(w), shape[1])
		}
		flat = append(flat, w...)
	}
	return tinkerapi.Tensor{Float32: flat, Shape: slices.Clone(shape)}, nil
}

// rowsArg returns v's elements when v is a non-empty list of lists, nil
// when its first element is not a list.
func rowsArg(v starlark.Value) ([]starlark.Value, error) {
	it, ok := v.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("want a list, got %s", v.Type())
	}
	var rows []starlark.Value
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		if _, isList := x.(starlark.Iterable); !isList {
			if len(rows) > 0 {
				return nil, fmt.Errorf("mixes lists and %s", x.Type())
			}
			return nil, nil
		}
		rows = append(rows, x)
	}
	return rows, nil
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

func conversationDatumFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var model string
	var msgsV starlark.Value
	var rendererV, maxV starlark.Value = starlark.None, starlark.None
	o := train.DatumOptions{TrainOn: chat.TrainAllAssistant, Truncate: true, Reduction: train.ReductionMean}
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "model", &model, "messages", &msgsV, "renderer?", &rendererV,
		"train_on?", &o.TrainOn, "max_length?", &maxV, "reduction?", &o.Reduction); err != nil {
		return nil, err
	}
	fail := func(err error) error { return fmt.Errorf("%s: %w", b.Name(), err) }
	var err error
	if o.Reduction, err = train.CheckReduction(o.Reduction); err != nil {
		return nil, fail(err)
	}
	msgs, err := messagesArg(msgsV)
	if err != nil {
		return nil, fail(fmt.Errorf("messages: %w", err))
	}
	name, err := optString(rendererV, "renderer")
	if err != nil {
		return nil, fail(err)
	}
	maxLen, err := optInt64Arg(maxV, "max_length")
	if err != nil {
		return nil, fail(err)
	}
	r, err := modelref.Renderer(ContextOf(thread), model, name)
	if err != nil {
		return nil, fail(err)
	}
	if maxLen != nil {
		o.MaxLength = int(*maxLen)
	}
	d, err := train.ConversationDatum(r, msgs, o)
	if err != nil {
		return nil, fail(err)
	}
	return &Datum{D: d}, nil
}
