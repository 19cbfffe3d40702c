package pylit

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// pythonCases pairs a JSON document with repr(json.loads(doc)) as printed by
// CPython 3.11 (one JSON array per line, generated once and pasted here).
const pythonCases = `["{\"detail\": \"Training run not found\"}", "{'detail': 'Training run not found'}"]
["{\"detail\":\"Not Found\"}", "{'detail': 'Not Found'}"]
["{\"a\": true, \"b\": false, \"c\": null, \"d\": [1, 2.5, -0.0, 1e5, 1E-5, 0.0001, 1e16, 1e15, 123456789012345678901234567890, 1.5e300, 1e400, -1e400]}", "{'a': True, 'b': False, 'c': None, 'd': [1, 2.5, -0.0, 100000.0, 1e-05, 0.0001, 1e+16, 1000000000000000.0, 123456789012345678901234567890, 1.5e+300, inf, -inf]}"]
["\"it's\"", "\"it's\""]
["\"say \\\"hi\\\" it's\"", "'say \"hi\" it\\'s'"]
["\"tab\\tnl\\ncr\\rbs\\\\ nul\\u0000 del\\u007f\"", "'tab\\tnl\\ncr\\rbs\\\\ nul\\x00 del\\x7f'"]
["\"caf\\u00e9 \\u00a0 \\u00ad \\u2028 \\u4e2d \\ud83d\\ude00 \\ufffd \\u200b \\ue000\"", "'caf\u00e9 \\xa0 \\xad \\u2028 \u4e2d \ud83d\ude00 \ufffd \\u200b \\ue000'"]
["[]", "[]"]
["{}", "{}"]
["{\"nested\": {\"list\": [{\"x\": 0.1}, {\"y\": 1.0}], \"z\": 3.14159}, \"e\": 2.5e-7, \"f\": 100000000000000000.0}", "{'nested': {'list': [{'x': 0.1}, {'y': 1.0}], 'z': 3.14159}, 'e': 2.5e-07, 'f': 1e+17}"]
["-0", "0"]
["12.0", "12.0"]
["{\"detail\": [{\"loc\": [\"body\", \"ttl_seconds\"], \"msg\": \"Input should be greater than 0\", \"type\": \"greater_than\", \"ctx\": {\"gt\": 0}}]}", "{'detail': [{'loc': ['body', 'ttl_seconds'], 'msg': 'Input should be greater than 0', 'type': 'greater_than', 'ctx': {'gt': 0}}]}"]
`

func TestRenderMatchesPython(t *testing.T) {
	sc := bufio.NewScanner(strings.NewReader(pythonCases))
	n := 0
	for sc.Scan() {
		var pair [2]string
		if err := json.Unmarshal(sc.Bytes(), &pair); err != nil {
			t.Fatalf("bad case line %q: %v", sc.Text(), err)
		}
		got, err := Render([]byte(pair[0]))
		if err != nil {
			t.Errorf("Render(%s): %v", pair[0], err)
			continue
		}
		if got != pair[1] {
			t.Errorf("Render(%s)\n got %s\nwant %s", pair[0], got, pair[1])
		}
		n++
	}
	if n < 10 {
		t.Fatalf("only %d cases ran", n)
	}
}

func TestRenderRejectsInvalid(t *testing.T) {
	for _, doc := range []string{"", "{", `{"a":}`, "[1,]", "1 2", "nul"} {
		if got, err := Render([]byte(doc)); err == nil {
			t.Errorf("Render(%q) = %q, want error", doc, got)
		}
	}
}

func TestFloat(t *testing.T) {
	cases := map[float64]string{
		0: "0.0", 1: "1.0", -2.5: "-2.5", 0.1: "0.1", 1e-4: "0.0001", 1e-5: "1e-05",
		123456789.125: "123456789.125", 1e22: "1e+22", 9999999999999998: "9999999999999998.0",
	}
	for f, want := range cases {
		if got := Float(f); got != want {
			t.Errorf("Float(%v) = %q, want %q", f, got, want)
		}
	}
}
