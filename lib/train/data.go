package train

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
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

// LoadConversations reads a JSONL file of {"messages": [...]} or
// {"prompt": ..., "completion": ...} objects, one per line (blank lines are
// skipped); errors name the line.
func LoadConversations(path string) ([]Conversation, error) {
	var out []Conversation
	err := scanJSONL(path, func(text []byte, where string) error {
		c, err := parseConversation(text, where)
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

// shapes names the lines LoadConversations accepts.
const shapes = `each line is {"messages": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]} or {"prompt": "...", "completion": "..."}`

func parseConversation(text []byte, where string) (Conversation, error) {
	var rec struct {
		Messages   []chat.Message `json:"messages"`
		Prompt     *string        `json:"prompt"`
		Completion *string        `json:"completion"`
	}
	if err := json.Unmarshal(text, &rec); err != nil {
		return Conversation{}, fmt.Errorf("%s: not a JSON object: %v; %s", where, err, shapes)
	}
	if len(rec.Messages) == 0 && rec.Prompt != nil && rec.Completion != nil {
		// The other common shape: one user turn and the answer to train on.
		rec.Messages = []chat.Message{{Role: "user", Content: *rec.Prompt}, {Role: "assistant", Content: *rec.Completion}}
	}
	if len(rec.Messages) == 0 {
		return Conversation{}, fmt.Errorf("%s: no messages; %s", where, shapes)
	}
	for i, m := range rec.Messages {
		if m.Role == "" {
			return Conversation{}, fmt.Errorf("%s: message %d has no role", where, i)
		}
	}
	return Conversation{Messages: rec.Messages, Where: where}, nil
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
	tr, err := r.RenderForTraining(msgs, o.TrainOn)
	if err != nil {
		return tinkerapi.Datum{}, err
	}
	if o.MaxLength > 0 && len(tr.Tokens) > o.MaxLength {
		if !o.Truncate {
			return tinkerapi.Datum{}, fmt.Errorf("%d tokens, longer than max_length %d", len(tr.Tokens), o.MaxLength)
		}
		tr.Tokens, tr.Weights = tr.Tokens[:o.MaxLength], tr.Weights[:o.MaxLength]
	}
	total := 0.0
	for _, w := range tr.Weights[min(1, len(tr.Weights)):] {
		total += float64(w)
	}
	if len(tr.Tokens) < 2 || total <= 0 {
		return tinkerapi.Datum{}, fmt.Errorf("no trainable token (train_on=%q)", o.TrainOn)
	}
	targets := make([]int64, len(tr.Tokens)-1)
	for i, t := range tr.Tokens[1:] {
		targets[i] = int64(t)
	}
	weights := append([]float32(nil), tr.Weights[1:]...)
	if o.Reduction == ReductionMean {
		for i := range weights {
			weights[i] = float32(float64(weights[i]) / total)
		}
	}
	return tinkerapi.Datum{ModelInput: tr.Tokens[:len(tr.Tokens)-1], LossFnInputs: map[string]tinkerapi.Tensor{
		"target_tokens": tinkerapi.Int64s(targets),
		"weights":       tinkerapi.Float32s(weights),
	}}, nil
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
