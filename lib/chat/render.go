package chat

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/tokenizer"
)

// The renderers build token sequences the way tinker-cookbook's do: each
// message is a header and output chunks, each chunk encoded on its own
// (so a boundary never merges tokens across it), after the format's BOS.
// A generation prompt is the messages followed by the next turn's header;
// a training example weighs each chunk by the train-on rule.

// enc encodes for one render. The first special token the tokenizer lacks
// is kept in err, so formats need not check every lookup.
type enc struct {
	tok *tokenizer.Tokenizer
	err error
}

func (e *enc) text(s string) []int { return e.tok.Encode(s, false) }

// split encodes s with special-token spellings as plain text (Hugging
// Face's split_special_tokens); added tokens that are not special still
// match.
func (e *enc) split(s string) []int { return e.tok.EncodeSplitSpecial(s) }

// id is the id of a token that must be one token.
func (e *enc) id(name string) int {
	if id, ok := e.tok.TokenID(name); ok {
		return id
	}
	if e.err == nil {
		e.err = fmt.Errorf("tokenizer %s has no %s token (wrong tokenizer for this renderer?)", e.tok.ID(), name)
	}
	return 0
}

// piece is one rendered message: header (never trained unless all_tokens),
// output chunks (the trainable part) and, for role_colon, the stop
// sequence's overlap with the next header (trained after the last message).
type piece struct {
	header  []int
	output  [][]int
	overlap []int
}

// msgCtx is where a message stands (the cookbook's RenderContext).
type msgCtx struct {
	idx        int
	isLast     bool
	prev, next *Message
	lastUser   int  // index of the last user message, -1 if none
	inLastTurn bool // part of the turn the model is asked to produce
}

// format is one chat format.
type format interface {
	bos(e *enc) []int
	message(e *enc, m Message, c msgCtx) (piece, error)
	stops(e *enc) ([]int, []string)
}

// Optional parts of a format.
type (
	// suffixer writes the generation prompt's header itself (the default
	// is the header of an empty message of the role).
	suffixer interface {
		genSuffix(e *enc, role string, c msgCtx) ([]int, error)
	}
	// framer adds messages around the conversation (gpt-oss's system prompt).
	framer interface {
		frame(msgs []Message) []Message
	}
	// prefiller appends text after the generation header (DeepSeek's <think>).
	prefiller interface{ prefill(msgs []Message) string }
	// extender says whether earlier turns render the same once later ones
	// follow (the cookbook's has_extension_property; false by default).
	extender interface{ extension() bool }
	// turnStarter says where the produced turn starts (by default after
	// the last user message).
	turnStarter interface{ turnStart(msgs []Message) int }
	// splitter replaces the default split of RenderExamples.
	splitter interface {
		examples(r renderer, msgs []Message, trainOn string) ([]Training, error)
	}
	// thinkingOff is a format whose prompt may tell the model not to reason.
	thinkingOff interface{ disablesThinking() bool }
)

func lastUserIndex(msgs []Message) int {
	last := -1
	for i, m := range msgs {
		if m.Role == "user" {
			last = i
		}
	}
	return last
}

func ctxAt(msgs []Message, i, lastUser, turnStart int) msgCtx {
	c := msgCtx{idx: i, isLast: i == len(msgs)-1, lastUser: lastUser, inLastTurn: i >= turnStart}
	if i > 0 {
		c.prev = &msgs[i-1]
	}
	if i+1 < len(msgs) {
		c.next = &msgs[i+1]
	}
	return c
}

// prompt is the cookbook's build_generation_prompt for the assistant role.
func (r renderer) prompt(msgs []Message) ([]int, error) {
	if f, ok := r.f.(framer); ok {
		msgs = f.frame(msgs)
	}
	e := &enc{tok: r.tok}
	toks := append([]int(nil), r.f.bos(e)...)
	lastUser, turnStart := lastUserIndex(msgs), r.turnStart(msgs)
	for i, m := range msgs {
		p, err := r.f.message(e, m, ctxAt(msgs, i, lastUser, turnStart))
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		toks = append(toks, p.header...)
		for _, o := range p.output {
			toks = append(toks, o...)
		}
	}
	c := msgCtx{idx: len(msgs), isLast: true, lastUser: lastUser, inLastTurn: true}
	if len(msgs) > 0 {
		c.prev = &msgs[len(msgs)-1]
	}
	suffix, err := r.suffix(e, c)
	if err != nil {
		return nil, err
	}
	toks = append(toks, suffix...)
	if f, ok := r.f.(prefiller); ok {
		toks = append(toks, e.text(f.prefill(msgs))...)
	}
	return toks, e.err
}

func (r renderer) suffix(e *enc, c msgCtx) ([]int, error) {
	if s, ok := r.f.(suffixer); ok {
		return s.genSuffix(e, "assistant", c)
	}
	p, err := r.f.message(e, Message{Role: "assistant"}, c)
	return p.header, err
}

func (r renderer) turnStart(msgs []Message) int {
	if t, ok := r.f.(turnStarter); ok {
		return t.turnStart(msgs)
	}
	return lastUserIndex(msgs) + 1
}

func (r renderer) extension() bool {
	x, ok := r.f.(extender)
	return ok && x.extension()
}
