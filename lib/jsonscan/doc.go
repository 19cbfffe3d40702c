// Package jsonscan finds where a run of bytes stops being a JSON string
// body as it stands: printable ASCII other than '"' and '\\'. Readers use
// it to find a string's closing quote and writers to see that a string
// needs no escapes (Python's json.dumps escapes everything else,
// ensure_ascii). A 10,000-checkpoint listing reads and writes 30,000
// strings each way, and a byte-at-a-time or word-at-a-time scan of them
// was a quarter of the listing's instructions.
package jsonscan

// PlainPrefix returns the length of the longest prefix of s made of
// printable ASCII (0x20-0x7e) other than '"' and '\\'.
func PlainPrefix(s string) int {
	if useVector() && len(s) >= vectorMin {
		return plainPrefixVector(s)
	}
	return plainPrefixBytes(s)
}

// plainPrefixBytes is PlainPrefix a byte at a time: for short strings,
// and the reference the vector code is tested against.
func plainPrefixBytes(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return i
		}
	}
	return len(s)
}
