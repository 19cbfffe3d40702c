package chat

import (
	"fmt"
	"strings"
)

// roleColon is the plain format for base models: "User: …\n\nAssistant: …",
// after the tokenizer's BOS token (if it has one). Generation stops at
// "\n\nUser:"; an assistant message trains its " content\n\n" and, when it
// ends the example, the "User:" that completes the stop sequence.
type roleColon struct{}

func (roleColon) bos(e *enc) []int {
	bos := e.tok.Config().BOSToken
	if bos == "" {
		return nil
	}
	return e.text(bos)
}

func (roleColon) message(e *enc, m Message, _ msgCtx) (piece, error) {
	if m.Role == "" {
		return piece{}, fmt.Errorf("message without a role")
	}
	if len(m.ToolCalls) > 0 {
		return piece{}, fmt.Errorf("role_colon has no tool-call format: put the calls in the content as text")
	}
	text, err := m.ensureText("role_colon")
	if err != nil {
		return piece{}, err
	}
	overlap := "<UNUSED>" // never written: only an assistant's overlap is
	if m.Role == "assistant" {
		overlap = "User:"
	}
	return piece{
		header:  e.text(pyCapitalize(m.Role) + ":"),
		output:  [][]int{e.text(" " + text + "\n\n")},
		overlap: e.text(overlap),
	}, nil
}

// pyCapitalize is Python's str.capitalize: first letter upper, rest lower.
func pyCapitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + strings.ToLower(s[1:])
}

func (roleColon) stops(e *enc) ([]int, []string) { return nil, []string{"\n\nUser:"} }

func (roleColon) extension() bool { return true }
