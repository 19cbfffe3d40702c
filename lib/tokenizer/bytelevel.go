package tokenizer

import "github.com/tinkershell/tinker/lib/lazy"

// GPT-2's byte-level alphabet: every byte gets a printable rune so that BPE
// vocabularies can be stored as JSON text. We keep the vocabulary keyed by the
// raw bytes instead, so these tables are only needed at load time (and to
// print tokens the way Hugging Face does): made on first use.
type byteTables struct {
	byteToRune [256]rune
	// runeToByte inverts byteToRune; -1 marks runes outside the alphabet
	// (all of its runes are below 324).
	runeToByte [324]int16
}

var byteLevel = lazy.Value[*byteTables]{New: func() *byteTables {
	t := &byteTables{}
	n := 0
	for i := range t.runeToByte {
		t.runeToByte[i] = -1
	}
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			t.byteToRune[b] = rune(b)
		} else {
			t.byteToRune[b] = rune(256 + n)
			n++
		}
		t.runeToByte[t.byteToRune[b]] = int16(b)
	}
	return t
}}

// byteLevelDecode maps a byte-level token string back to raw bytes. ok is
// false when the string holds a rune outside the alphabet (then the caller
// keeps the UTF-8 bytes as they are, as Hugging Face's decoder does).
func byteLevelDecode(s string) (out []byte, ok bool) {
	out = make([]byte, 0, len(s))
	runeToByte := &byteLevel.Get().runeToByte
	for _, r := range s {
		if r >= rune(len(runeToByte)) || runeToByte[r] < 0 {
			return []byte(s), false
		}
		out = append(out, byte(runeToByte[r]))
	}
	return out, true
}

// byteLevelString is byteLevelDecode returning a string, without copying
// when s is printable ASCII (which the alphabet maps to itself).
func byteLevelString(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < '!' || s[i] > '~' {
			b, _ := byteLevelDecode(s)
			return string(b)
		}
	}
	return s
}
