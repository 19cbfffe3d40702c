package chat

import (
	"fmt"
	"strings"
)

// The train-on rules: which messages' tokens carry weight 1 in a
// training example (all others weigh 0).
const (
	TrainAllAssistant  = "all_assistant_messages"
	TrainLastAssistant = "last_assistant_message"
	TrainAllMessages   = "all_messages"
)

// TrainOnRules lists the rules RenderForTraining accepts.
func TrainOnRules() []string {
	return []string{TrainAllAssistant, TrainLastAssistant, TrainAllMessages}
}

// Training is a finished conversation rendered for training: its tokens
// and one weight per token (1 where the model should learn to produce the
// token, 0 for context).
type Training struct {
	Text    string
	Tokens  []int
	Weights []float32
}

// RenderForTraining renders a whole conversation (no generation prompt)
// and weighs its tokens by trainOn. An assistant message's trained tokens
// are what the model generates after render()'s prompt for the messages
// before it: the content and the end of the turn, not the header. Each
// stretch of text between those boundaries is encoded on its own, so the
// context before an assistant turn encodes as the prompt does.
func (r renderer) RenderForTraining(msgs []Message, trainOn string) (Training, error) {
	name := r.r.name()
	if len(msgs) == 0 {
		return Training{}, fmt.Errorf("render %s: no messages", name)
	}
	if err := checkRoles(msgs); err != nil {
		return Training{}, fmt.Errorf("render %s: %w", name, err)
	}
	lastAssistant := -1
	for i, m := range msgs {
		if m.Role == "assistant" {
			lastAssistant = i
		}
	}
	trained := func(i int) bool {
		switch trainOn {
		case TrainAllMessages:
			return true
		case TrainLastAssistant:
			return i == lastAssistant
		}
		return msgs[i].Role == "assistant"
	}
	switch trainOn {
	case TrainAllAssistant, TrainLastAssistant, TrainAllMessages:
	default:
		return Training{}, fmt.Errorf("unknown train_on rule %q (want one of %s)", trainOn, strings.Join(TrainOnRules(), ", "))
	}
	full, err := r.r.text(msgs, false)
	if err != nil {
		return Training{}, fmt.Errorf("render %s: %w", name, err)
	}
	// cuts are text offsets where the weight changes; on[k] is the weight
	// of the stretch starting at cuts[k].
	var cuts []int
	var on []bool
	mark := func(at int, w bool) {
		if n := len(cuts); n > 0 && cuts[n-1] == at {
			on[n-1] = w
			return
		}
		cuts, on = append(cuts, at), append(on, w)
	}
	mark(0, false)
	for i := range msgs {
		if !trained(i) {
			continue
		}
		// Only trained messages need their boundaries; earlier turns may
		// render differently once more follow (Qwen3 drops old reasoning).
		end, err := r.r.text(msgs[:i+1], false)
		if err != nil {
			return Training{}, fmt.Errorf("render %s: %w", name, err)
		}
		if !strings.HasPrefix(full, end) {
			return Training{}, fmt.Errorf("render %s: message %d renders differently once later messages follow, so it cannot be trained on alone", name, i)
		}
		from := 0
		if i > 0 {
			header := trainOn != TrainAllMessages && msgs[i].Role == "assistant"
			before, err := r.r.text(msgs[:i], header)
			if err != nil || !strings.HasPrefix(full, before) || len(before) > len(end) {
				return Training{}, fmt.Errorf("render %s: message %d renders differently once later messages follow, so it cannot be trained on alone", name, i)
			}
			from = len(before)
		}
		mark(from, true)
		mark(len(end), false)
	}
	var t Training
	t.Text = full
	if _, ok := r.r.(roleColon); ok {
		// The document prefix render() adds for base models (BOS or nothing).
		prefix := r.tok.Encode("", true)
		t.Text = r.tok.Decode(prefix, false) + full
		t.Tokens = append(t.Tokens, prefix...)
		t.Weights = append(t.Weights, make([]float32, len(prefix))...)
	}
	for k, at := range cuts {
		stop := len(full)
		if k+1 < len(cuts) {
			stop = cuts[k+1]
		}
		if stop <= at {
			continue
		}
		toks := r.tok.Encode(full[at:stop], false)
		w := float32(0)
		if on[k] {
			w = 1
		}
		t.Tokens = append(t.Tokens, toks...)
		for range toks {
			t.Weights = append(t.Weights, w)
		}
	}
	return t, nil
}
