package config

import "strings"

// MaskKey shows an API key without revealing it: its tml- prefix and last
// four characters (tml-…abcd) when the key is long enough for that to give
// little away, else "(set)"; "" stays "".
func MaskKey(key string) string {
	key = strings.TrimSpace(key)
	if key == "" {
		return ""
	}
	tail := key[max(len(key)-4, 0):]
	if len(key) < 20 || !isAlnum(tail) {
		return "(set)"
	}
	switch {
	case strings.HasPrefix(key, "tml-"):
		return "tml-…" + tail
	case strings.HasPrefix(key, "eyJ"):
		return "eyJ…" + tail
	}
	return "…" + tail
}

// MaskCommand shows a credential command with anything in it that looks
// like a key masked: the command is shown so that users see which one
// runs, but it may have been written with a key inside.
// A command that is itself a key (its first word starts as keys do) is
// masked whole.
func MaskCommand(cmd string) string {
	if w := firstWord(cmd); secretish(w) && !looksLikeKey(w) {
		return MaskKey(w)
	}
	return keyLike.ReplaceAllStringFunc(cmd, MaskKey)
}

func isAlnum(s string) bool {
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
