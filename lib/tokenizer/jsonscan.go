package tokenizer

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A minimal JSON scanner for the two huge members of tokenizer.json (the
// vocabulary and the merges, up to ~30 MB for gpt-oss). encoding/json needs
// seconds for them; scanning by hand takes a small fraction of that. Small
// members still go through encoding/json.

type scanner struct {
	b []byte
	i int
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("tokenizer.json offset %d: %s", s.i, fmt.Sprintf(format, args...))
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) expect(c byte) error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != c {
		return s.errorf("expected %q", c)
	}
	s.i++
	return nil
}

// peek returns the next non-space byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// str reads a JSON string.
func (s *scanner) str() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start := s.i
	for s.i < len(s.b) { // fast path: no escapes
		c := s.b[s.i]
		if c == '"' {
			v := string(s.b[start:s.i])
			s.i++
			return v, nil
		}
		if c == '\\' {
			break
		}
		s.i++
	}
	out := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return string(out), nil
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			break
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", s.errorf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					s.i += 2
					r2, ok = s.hex4()
					if !ok {
						return "", s.errorf("bad \\u escape")
					}
				}
				r = utf16.DecodeRune(r, r2)
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", s.errorf("bad escape \\%c", e)
		}
	}
	return "", s.errorf("unterminated string")
}

func (s *scanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 32)
	s.i += 4
	return rune(v), err == nil
}

func (s *scanner) integer() (int, error) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	v, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil {
		return 0, s.errorf("expected an integer")
	}
	return v, nil
}

// skip passes over one value of any type and returns its raw bytes.
func (s *scanner) skip() ([]byte, error) {
	s.ws()
	start := s.i
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			if _, err := s.str(); err != nil {
				return nil, err
			}
			if depth == 0 {
				return s.b[start:s.i], nil
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return nil, s.errorf("unbalanced %q", c)
			}
			if depth == 0 {
				s.i++
				return s.b[start:s.i], nil
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return s.b[start:s.i], nil
			}
		}
		s.i++
	}
	if depth == 0 && s.i > start {
		return s.b[start:s.i], nil
	}
	return nil, s.errorf("truncated value")
}

// object calls member for each key of an object; member must consume the value.
func (s *scanner) object(member func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(k); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("expected , or }")
		}
	}
}

// array calls elem for each element; elem must consume it.
func (s *scanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errorf("expected , or ]")
		}
	}
}
