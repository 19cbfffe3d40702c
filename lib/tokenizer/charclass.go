package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// Character classes used by the pre-tokenizer regexes, as bits.
const (
	clL   uint16 = 1 << iota // \p{L}
	clN                      // \p{N}
	clWS                     // \s: Unicode White_Space, as in Oniguruma (HF tokenizers)
	clLu                     // \p{Lu}
	clLt                     // \p{Lt}
	clLl                     // \p{Ll}
	clLm                     // \p{Lm}
	clLo                     // \p{Lo}
	clM                      // \p{M}
	clP                      // \p{P}
	clS                      // \p{S}
	clHan                    // \p{Han}: the Han script (Kimi's pattern)
)

// bmpClass caches the classes of the Basic Multilingual Plane; it is built on
// first use (a few milliseconds) because classifying through the unicode
// range tables on every rune would dominate encoding time.
var (
	bmpOnce  sync.Once
	bmpClass []uint16
)

func initClasses() {
	bmpOnce.Do(func() {
		t := make([]uint16, 0x10000)
		for r := rune(0); r < 0x10000; r++ {
			t[r] = computeClass(r)
		}
		bmpClass = t
	})
}

func computeClass(r rune) uint16 {
	var c uint16
	if unicode.IsLetter(r) {
		c |= clL
		switch {
		case unicode.Is(unicode.Lu, r):
			c |= clLu
		case unicode.Is(unicode.Ll, r):
			c |= clLl
		case unicode.Is(unicode.Lt, r):
			c |= clLt
		case unicode.Is(unicode.Lm, r):
			c |= clLm
		case unicode.Is(unicode.Lo, r):
			c |= clLo
		}
	}
	if unicode.IsNumber(r) {
		c |= clN
	}
	if unicode.Is(unicode.White_Space, r) {
		c |= clWS
	}
	if unicode.IsMark(r) {
		c |= clM
	}
	if unicode.IsPunct(r) {
		c |= clP
	}
	if unicode.IsSymbol(r) {
		c |= clS
	}
	if unicode.Is(unicode.Han, r) {
		c |= clHan
	}
	return c
}

func classOf(r rune) uint16 {
	if r >= 0 && r < 0x10000 {
		return bmpClass[r]
	}
	return computeClass(r)
}

// runeAt decodes the rune at byte offset i with its size and class.
func runeAt(s string, i int) (rune, int, uint16) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1, bmpClass[c]
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return r, n, classOf(r)
}
