package chat

import (
	"fmt"
	"slices"
	"strings"
)

// The train-on rules (the cookbook's TrainOnWhat): which messages' output
// tokens carry weight 1 in a training example; all others weigh 0.
const (
	TrainLastAssistant     = "last_assistant_message"
	TrainLastAssistantTurn = "last_assistant_turn" // the assistant messages after the last user one
	TrainAllAssistant      = "all_assistant_messages"
	TrainAllMessages       = "all_messages"                 // every message's body, not its header
	TrainAllTokens         = "all_tokens"                   // everything but the BOS, headers included
	TrainUserAndSystem     = "all_user_and_system_messages" // user and system bodies only
	TrainCustomized        = "customized"                   // each message's "trainable" flag
)

// TrainOnRules lists the rules RenderForTraining accepts.
func TrainOnRules() []string {
	return []string{TrainAllAssistant, TrainLastAssistant, TrainLastAssistantTurn, TrainAllMessages,
		TrainAllTokens, TrainUserAndSystem, TrainCustomized}
}

// Training is a finished conversation rendered for training: its tokens
// and one 0/1 weight per token (1 where the model should learn to produce
// the token). Warning is set where the cookbook logs one.
type Training struct {
	Text    string
	Tokens  []int
	Weights []float32
	Warning string
}

// extensionWarning is what the cookbook warns when all_assistant_messages
// is asked of a renderer whose earlier turns change once later ones follow.
const extensionWarning = "train_on all_assistant_messages with renderer %s: earlier assistant turns are trained in the context the whole conversation gives them, " +
	"which is not the prompt the model saw at that turn (this renderer rewrites history, e.g. drops earlier reasoning); " +
	"to train each turn in its own context, split the conversation into one example per assistant turn, as the cookbook advises"

// RenderForTraining is the cookbook's build_supervised_example: the whole
// conversation, each message's header and output chunks weighed by trainOn.
func (r renderer) RenderForTraining(msgs []Message, trainOn string) (Training, error) {
	if len(msgs) == 0 {
		return Training{}, fmt.Errorf("render %s: no messages", r.name)
	}
	if err := checkRoles(msgs); err != nil {
		return Training{}, fmt.Errorf("render %s: %w", r.name, err)
	}
	if !slices.Contains(TrainOnRules(), trainOn) {
		return Training{}, fmt.Errorf("unknown train_on rule %q (want one of %s)", trainOn, strings.Join(TrainOnRules(), ", "))
	}
	if err := checkTrainable(msgs, trainOn); err != nil {
		return Training{}, fmt.Errorf("render %s: %w", r.name, err)
	}
	if f, ok := r.f.(framer); ok {
		msgs = f.frame(msgs)
	}
	t, err := r.assemble(msgs, trainOn)
	if err != nil {
		return Training{}, fmt.Errorf("render %s: %w", r.name, err)
	}
	if err := r.trainAfterPrompt(msgs, trainOn, &t); err != nil {
		return Training{}, fmt.Errorf("render %s: %w", r.name, err)
	}
	if trainOn == TrainAllAssistant && !r.extension() {
		t.Warning = fmt.Sprintf(extensionWarning, r.name)
	}
	t.Text = r.tok.Decode(t.Tokens, false)
	return t, nil
}

func checkTrainable(msgs []Message, trainOn string) error {
	for i, m := range msgs {
		if trainOn == TrainCustomized && m.Trainable == nil {
			return fmt.Errorf("train_on customized: message %d has no \"trainable\" flag (give every message one)", i)
		}
		if trainOn != TrainCustomized && m.Trainable != nil {
			return fmt.Errorf("message %d has a \"trainable\" flag, which only train_on customized reads: use it or remove the flags", i)
		}
	}
	return nil
}

func (r renderer) assemble(msgs []Message, trainOn string) (Training, error) {
	e := &enc{tok: r.tok}
	var t Training
	add := func(toks []int, w bool) {
		t.Tokens = append(t.Tokens, toks...)
		for range toks {
			t.Weights = append(t.Weights, map[bool]float32{true: 1}[w])
		}
	}
	add(r.f.bos(e), false)
	// The stop tokens must be tokens of the vocabulary, as for a prompt: on
	// a wrong tokenizer the format's specials would be spelled in bytes and
	// trained on without a word.
	r.f.stops(e)
	lastUser := lastUserIndex(msgs)
	turnStart := r.turnStart(msgs[:len(msgs)-1])
	for i, m := range msgs {
		c := ctxAt(msgs, i, lastUser, turnStart)
		p, err := r.f.message(e, m, c)
		if err != nil {
			return Training{}, fmt.Errorf("message %d: %w", i, err)
		}
		add(p.header, trainOn == TrainAllTokens)
		trained := outputTrained(m, c, trainOn)
		for _, o := range p.output {
			add(o, trained)
		}
		if c.isLast {
			add(p.overlap, trained)
		}
	}
	return t, e.err
}

func outputTrained(m Message, c msgCtx, trainOn string) bool {
	assistant := m.Role == "assistant"
	switch trainOn {
	case TrainLastAssistant:
		return c.isLast && assistant
	case TrainLastAssistantTurn:
		return assistant && c.inLastTurn
	case TrainAllAssistant:
		return assistant
	case TrainAllMessages, TrainAllTokens:
		return true
	case TrainUserAndSystem:
		return m.Role == "user" || m.Role == "system"
	case TrainCustomized:
		// A message the renderer adds itself (gpt-oss's, Nemotron's and
		// Kimi's system messages) has no flag and is not trained.
		return m.Trainable != nil && *m.Trainable
	}
	return false
}

// trainAfterPrompt withholds weight from whatever the generation prompt
// would have supplied (a prefilled <think>), for the rules that train the
// turn sampling produces. A thinking-off renderer given a turn that
// reasoned cannot be trained after its own prompt: an error, as in the
// cookbook.
func (r renderer) trainAfterPrompt(msgs []Message, trainOn string, t *Training) error {
	boundary := len(msgs) - 1
	switch trainOn {
	case TrainLastAssistant:
	case TrainLastAssistantTurn:
		boundary = lastUserIndex(msgs) + 1
	default:
		return nil
	}
	if boundary < 0 || boundary >= len(msgs) || msgs[boundary].Role != "assistant" {
		return nil
	}
	// As in the cookbook, the prompt is built from the messages already
	// framed (gpt-oss's are framed twice, so its prompt never matches and
	// its weights stay as they are, which changes nothing there).
	prompt, err := r.prompt(msgs[:boundary])
	if err != nil {
		return err
	}
	if len(prompt) > len(t.Tokens) || !slices.Equal(t.Tokens[:len(prompt)], prompt) {
		if off, ok := r.f.(thinkingOff); ok && off.disablesThinking() {
			return fmt.Errorf("thinking is off in this renderer (its prompt closes the think block), but the turn it trains contains reasoning; " +
				"use the thinking variant of the renderer or remove the reasoning from that turn")
		}
		return nil
	}
	for i := range prompt {
		t.Weights[i] = 0
	}
	return nil
}

// RenderExamples is the cookbook's build_supervised_examples: one example
// for renderers whose history never changes; otherwise one example per
// trained assistant message, each ending at that message and trained as
// the last one, so every turn is trained after the prompt it was sampled
// from.
func (r renderer) RenderExamples(msgs []Message, trainOn string) ([]Training, error) {
	if s, ok := r.f.(splitter); ok {
		return s.examples(r, msgs, trainOn)
	}
	if r.extension() {
		t, err := r.RenderForTraining(msgs, trainOn)
		return []Training{t}, err
	}
	from := 0
	switch trainOn {
	case TrainLastAssistant:
		from = len(msgs) - 1
	case TrainLastAssistantTurn:
		from = lastUserIndex(msgs) + 1
	case TrainAllAssistant:
	default:
		return nil, fmt.Errorf("render %s: train_on %s cannot be split into one example per turn (it trains messages the model does not produce)", r.name, trainOn)
	}
	var out []Training
	for i := max(from, 0); i < len(msgs); i++ {
		if msgs[i].Role != "assistant" {
			continue
		}
		t, err := r.RenderForTraining(msgs[:i+1], TrainLastAssistant)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
