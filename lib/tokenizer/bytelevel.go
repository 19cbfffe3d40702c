package tokenizer

// GPT-2's byte-level alphabet: every byte gets a printable rune so that BPE
// vocabularies can be stored as JSON text. We keep the vocabulary keyed by the
// raw bytes instead, so this table is only needed at load time (and to print
// tokens the way Hugging Face does).
var byteToRune [256]rune
var runeToByte = map[rune]byte{}

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevelDecode maps a byte-level token string back to raw bytes. ok is
// false when the string holds a rune outside the alphabet (then the caller
// keeps the UTF-8 bytes as they are, as Hugging Face's decoder does).
func byteLevelDecode(s string) (out []byte, ok bool) {
	out = make([]byte, 0, len(s))
	for _, r := range s {
		b, found := runeToByte[r]
		if !found {
			return []byte(s), false
		}
		out = append(out, b)
	}
	return out, true
}

// byteLevelEncode renders raw bytes in the byte-level alphabet.
func byteLevelEncode(b []byte) string {
	rs := make([]rune, len(b))
	for i, c := range b {
		rs[i] = byteToRune[c]
	}
	return string(rs)
}
