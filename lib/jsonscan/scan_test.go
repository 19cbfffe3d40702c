package jsonscan

import (
	"math/rand"
	"strings"
	"testing"
)

// TestPlainPrefixEveryPosition: at every length up to 100 (past three
// vector blocks) and every position, one byte at the edge of the plain
// range stops the prefix there exactly as the byte loop says.
func TestPlainPrefixEveryPosition(t *testing.T) {
	t.Logf("vector code: %v", useVector())
	edge := []byte{0x00, 0x1f, 0x20, 0x21, '"', '\\', 0x7e, 0x7f, 0x80, 0xc3, 0xff}
	for n := 0; n <= 100; n++ {
		for pos := 0; pos < n; pos++ {
			for _, c := range edge {
				b := []byte(strings.Repeat("a", n))
				b[pos] = c
				if got, want := PlainPrefix(string(b)), plainPrefixBytes(string(b)); got != want {
					t.Fatalf("PlainPrefix(%q) = %d, want %d", b, got, want)
				}
			}
		}
		if got := PlainPrefix(strings.Repeat("z", n)); got != n {
			t.Fatalf("PlainPrefix of %d plain bytes = %d", n, got)
		}
	}
}

// TestPlainPrefixRandom: random mixes, several stops per string.
func TestPlainPrefixRandom(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for range 20000 {
		b := make([]byte, r.Intn(200))
		for i := range b {
			if r.Intn(60) == 0 {
				b[i] = byte(r.Intn(256))
			} else {
				b[i] = byte(' ' + r.Intn(95))
			}
		}
		if got, want := PlainPrefix(string(b)), plainPrefixBytes(string(b)); got != want {
			t.Fatalf("PlainPrefix(%q) = %d, want %d", b, got, want)
		}
	}
}
