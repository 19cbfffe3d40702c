package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites text before pre-tokenization. A nil normalizer is the
// identity.
type normalizer func(string) string

type normJSON struct {
	Type        string            `json:"type"`
	Normalizers []json.RawMessage `json:"normalizers"`
	Pattern     *patternJSON      `json:"pattern"`
	Content     string            `json:"content"`
	Prepend     string            `json:"prepend"`
}

func unicodeForm(f norm.Form) normalizer {
	return func(s string) string {
		if f.IsNormalString(s) { // the common case: no allocation
			return s
		}
		return f.String(s)
	}
}

func buildNormalizer(raw json.RawMessage) (normalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var n normJSON
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch n.Type {
	case "NFC":
		return unicodeForm(norm.NFC), nil
	case "NFD":
		return unicodeForm(norm.NFD), nil
	case "NFKC":
		return unicodeForm(norm.NFKC), nil
	case "NFKD":
		return unicodeForm(norm.NFKD), nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Prepend":
		p := n.Prepend
		return func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		}, nil
	case "Replace":
		if n.Pattern == nil || n.Pattern.String == nil {
			return nil, fmt.Errorf("normalizer Replace: only string patterns are supported")
		}
		from, to := *n.Pattern.String, n.Content
		return func(s string) string { return strings.ReplaceAll(s, from, to) }, nil
	case "Sequence":
		var fs []normalizer
		for _, sub := range n.Normalizers {
			f, err := buildNormalizer(sub)
			if err != nil {
				return nil, err
			}
			if f != nil {
				fs = append(fs, f)
			}
		}
		switch len(fs) {
		case 0:
			return nil, nil
		case 1:
			return fs[0], nil
		}
		return func(s string) string {
			for _, f := range fs {
				s = f(s)
			}
			return s
		}, nil
	default:
		return nil, fmt.Errorf("normalizer type %q is not supported", n.Type)
	}
}
