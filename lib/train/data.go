package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Conversation is one training conversation; Where names its source for
// error messages ("data.jsonl:3" or "data[3]").
type Conversation struct {
	Messages []chat.Message
	Where    string
}

// LoadConversations reads a JSONL file of conversations, one per line in
// any shape Conversations accepts (blank lines are skipped); errors name
// the line.
func LoadConversations(path string) ([]Conversation, error) {
	var out []Conversation
	err := scanJSONL(path, func(text []byte, where string) error {
		c, err := Row{JSON: text, Where: where}.conversation()
		if err == nil {
			out = append(out, c)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no conversations", path)
	}
	return out, nil
}

// shapes names the rows a conversation may be.
const shapes = `each line is {"messages": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]} or {"prompt": "...", "completion": "..."}`

// Conversations reads rows that are conversations, in every shape sft()
// trains on and evaluate() scores: {"messages": [...]}, {"prompt": ...,
// "completion": ...} (one user turn and the answer), or a bare list of
// messages.
func Conversations(rows []Row) ([]Conversation, error) {
	out := make([]Conversation, len(rows))
	for i, r := range rows {
		c, err := r.conversation()
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// conversation reads one row of a shape Conversations accepts.
func (r Row) conversation() (Conversation, error) {
	if bytes.HasPrefix(bytes.TrimSpace(r.JSON), []byte("[")) {
		msgs, err := r.messages(map[string]json.RawMessage{"messages": r.JSON})
		return Conversation{Messages: msgs, Where: r.Where}, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.JSON, &m); err != nil || m == nil {
		why := "it is " + jsonKind(r.JSON)
		if !json.Valid(r.JSON) {
			why = err.Error()
		}
		return Conversation{}, fmt.Errorf("%s: not a JSON object: %s; %s", r.Where, why, shapes)
	}
	_, hasMsgs := m["messages"]
	_, hasPrompt := m["prompt"]
	if !hasMsgs && hasPrompt {
		return r.promptCompletion(m)
	}
	if !hasMsgs {
		return Conversation{}, fmt.Errorf("%s: no messages; %s", r.Where, shapes)
	}
	msgs, err := r.messages(m)
	return Conversation{Messages: msgs, Where: r.Where}, err
}

// promptCompletion reads {"prompt": ..., "completion": ...}: one user turn
// and the answer to train on (or score).
func (r Row) promptCompletion(m map[string]json.RawMessage) (Conversation, error) {
	p, err := r.str(m, "prompt")
	if err != nil {
		return Conversation{}, err
	}
	c, err := r.str(m, "completion")
	if err != nil {
		return Conversation{}, err
	}
	return Conversation{Where: r.Where, Messages: []chat.Message{{Role: "user", Content: p}, {Role: "assistant", Content: c}}}, nil
}

// Reductions of a supervised example's weights, as the cookbook's
// conversation_to_datum has them: "mean" (its default for SFT) scales each
// example's weights to sum to 1, so every example counts once whatever its
// length; "none" keeps them 0/1, so the loss is a sum over tokens and a
// long example weighs more. "sum" is accepted as another name for "none".
const (
	ReductionMean = "mean"
	ReductionNone = "none"
)

// CheckReduction returns the reduction s names ("" is the default, mean;
// "sum" is "none"), or an error saying which are known.
func CheckReduction(s string) (string, error) {
	switch s {
	case "":
		return ReductionMean, nil
	case ReductionMean, ReductionNone:
		return s, nil
	case "sum":
		return ReductionNone, nil
	}
	return "", fmt.Errorf("reduction must be \"mean\" (each example's weights sum to 1) or \"none\" (0/1 weights), got %q", s)
}

// DatumOptions says how a conversation becomes a training example.
type DatumOptions struct {
	TrainOn   string // a chat.TrainOnRules rule
	MaxLength int    // > 0 caps the rendered tokens
	Truncate  bool   // cut a longer conversation (else it is an error)
	Reduction string // ReductionMean or ReductionNone ("" is none)
}

// ConversationDatum renders a conversation for training and shifts it into
// a datum: input tokens[:-1], targets tokens[1:], weights aligned with the
// targets and reduced as o.Reduction says.
func ConversationDatum(r chat.Renderer, msgs []chat.Message, o DatumOptions) (tinkerapi.Datum, error) {
	d, _, err := conversationDatum(r, msgs, o)
	return d, err
}

// datumNote is what building one datum has to tell the run: the
// renderer's warning and whether max_length cut the conversation.
type datumNote struct {
	warning string
	cut     bool
}

// errNothingTrained is a conversation that keeps no trained token.
var errNothingTrained = errors.New("no trainable token")

func conversationDatum(r chat.Renderer, msgs []chat.Message, o DatumOptions) (tinkerapi.Datum, datumNote, error) {
	tr, err := r.RenderForTraining(msgs, o.TrainOn)
	if err != nil {
		return tinkerapi.Datum{}, datumNote{}, err
	}
	note := datumNote{warning: tr.Warning}
	if o.MaxLength > 0 && len(tr.Tokens) > o.MaxLength {
		if !o.Truncate {
			return tinkerapi.Datum{}, note, fmt.Errorf("%d tokens, longer than max_length %d", len(tr.Tokens), o.MaxLength)
		}
		// The cookbook's datum_from_model_input_weights: cut from the end.
		tr.Tokens, tr.Weights, note.cut = tr.Tokens[:o.MaxLength], tr.Weights[:o.MaxLength], true
	}
	total := 0.0
	for _, w := range tr.Weights[min(1, len(tr.Weights)):] {
		total += float64(w)
	}
	if len(tr.Tokens) < 2 || total <= 0 {
		if note.cut {
			return tinkerapi.Datum{}, note, fmt.Errorf("%w left after cutting at max_length %d (train_on=%q)", errNothingTrained, o.MaxLength, o.TrainOn)
		}
		return tinkerapi.Datum{}, note, fmt.Errorf("%w (train_on=%q)", errNothingTrained, o.TrainOn)
	}
	return shifted(tr, total, o.Reduction), note, nil
}

// shifted is a rendered example as a datum: input tokens[:-1], targets
// tokens[1:], weights aligned with the targets, reduced by reduction
// (total is their sum).
func shifted(tr chat.Training, total float64, reduction string) tinkerapi.Datum {
	targets := make([]int64, len(tr.Tokens)-1)
	for i, t := range tr.Tokens[1:] {
		targets[i] = int64(t)
	}
	weights := append([]float32(nil), tr.Weights[1:]...)
	if reduction == ReductionMean {
		for i := range weights {
			weights[i] = float32(float64(weights[i]) / total)
		}
	}
	return tinkerapi.Datum{ModelInput: tr.Tokens[:len(tr.Tokens)-1], LossFnInputs: map[string]tinkerapi.Tensor{
		"target_tokens": tinkerapi.Int64s(targets),
		"weights":       tinkerapi.Float32s(weights),
	}}
}

// TokenNLL is the mean negative log-likelihood per trained token of data
// whose per-target logprobs are lps: every target with a positive weight
// counts once, whatever the weight, so the figure means the same with
// either reduction.
func TokenNLL(data []tinkerapi.Datum, lps [][]float32) float64 {
	sum, n := 0.0, 0
	for i, d := range data[:min(len(data), len(lps))] {
		w := d.LossFnInputs["weights"].Float32
		for j := range min(len(w), len(lps[i])) {
			if w[j] > 0 {
				sum -= float64(lps[i][j])
				n++
			}
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// Weight is what a datum trains on: the sum of its weights, or one per
// target when it has none. Summed over a batch it is the denominator of
// a mean loss per trained token.
func Weight(d tinkerapi.Datum) float64 {
	w, ok := d.LossFnInputs["weights"]
	if !ok {
		if t, ok := d.LossFnInputs["target_tokens"]; ok {
			return float64(t.Len()) // every target weighs 1; (N, K) targets are N·K
		}
		return float64(len(d.ModelInput))
	}
	s := 0.0
	for _, x := range w.Float32 {
		s += float64(x)
	}
	return s
}

// TotalWeight is the sum of the data's Weight.
func TotalWeight(data []tinkerapi.Datum) float64 {
	s := 0.0
	for _, d := range data {
		s += Weight(d)
	}
	return s
}

// dataHash fingerprints rendered data for log_dir/config.json, so that a
// resumed run is known to train on the same tokens and weights.
func dataHash(data []tinkerapi.Datum) string {
	if len(data) == 0 {
		return ""
	}
	h := sha256.New()
	for _, d := range data {
		binary.Write(h, binary.LittleEndian, int64(len(d.ModelInput)))
		for _, t := range d.ModelInput {
			binary.Write(h, binary.LittleEndian, int32(t))
		}
		binary.Write(h, binary.LittleEndian, d.LossFnInputs["target_tokens"].Int64)
		binary.Write(h, binary.LittleEndian, d.LossFnInputs["weights"].Float32)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
