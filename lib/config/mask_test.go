package config

import "testing"

func TestMaskKey(t *testing.T) {
	for in, want := range map[string]string{
		"":                                "",
		"tml-4fT9xQ2mZ8pL3vR7wK1nabcd":    "tml-…abcd",
		" tml-4fT9xQ2mZ8pL3vR7wK1nWXYZ\n": "tml-…WXYZ",
		"tml-short":                       "(set)",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJl": "eyJ…dXJl",
		"sk-0123456789abcdefghij":                           "…ghij",
		"tml-0123456789abcdefgh-_":                          "(set)",
	} {
		if got := MaskKey(in); got != want {
			t.Errorf("MaskKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMaskCommand(t *testing.T) {
	for in, want := range map[string]string{
		"pass show tinker/work":                                             "pass show tinker/work",
		"echo tml-4fT9xQ2mZ8pL3vR7wK1nabcd":                                 "echo tml-…abcd",
		"printf %s eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJl; true": "printf %s eyJ…dXJl; true",
		"tml-SECRET-secret-SECRET-secret":                                   "tml-…cret",
		"tml-SECRET-secret-SECRET-secret --flag":                            "tml-…cret",
	} {
		if got := MaskCommand(in); got != want {
			t.Errorf("MaskCommand(%q) = %q, want %q", in, got, want)
		}
	}
}
