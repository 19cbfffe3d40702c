package tokenizer

import (
	"math/rand/v2"
	"strings"
)

// The exactness corpus: varied strings generated deterministically, so a
// failure reproduces and nothing large is committed.

var (
	latinWords = strings.Fields(`the quick brown fox jumps over lazy dog Hello World naïve café résumé
		façade Ærøskøbing Straße Größe über Müller élève garçon déjà señor año niño Łódź Dvořák Ångström
		crème brûlée São Paulo İstanbul ğüşıöç Tiếng Việt người được những khoảng ĐẠI HỌC
		coöperate THE Internet x y z a I e.g. i.e. etc. Mr. Dr. St.`)
	// decomposed forms (e + combining acute, etc.) exercise NFC
	decomposed = []string{"e\u0301", "a\u0308", "o\u0302\u0323", "n\u0303", "A\u030A", "\u1100\u1161\u11A8", "c\u0327", "u\u0308\u0301"}
	cjkWords   = []string{"你好", "世界", "中华人民共和国", "机器学习", "の", "こんにちは", "カタカナ", "ひらがな", "日本語の文章です", "東京", "한국어", "안녕하세요", "대한민국", "漢字", "繁體中文", "，", "。", "「引用」", "（括号）", "！", "？", "～", "㈱", "ｱｲｳ", "ＡＢＣ１２３"}
	rtlWords   = []string{"مرحبا", "بالعالم", "اللغة", "العربية", "٠١٢٣٤٥٦٧٨٩", "שלום", "עולם", "فارسی", "۱۲۳", "السَّلَامُ", "عَلَيْكُمْ"}
	indicWords = []string{"नमस्ते", "दुनिया", "हिन्दी", "भाषा", "क्षत्रिय", "१२३४", "தமிழ்", "বাংলা", "ગુજરાતી", "ไทย", "ภาษาไทย", "ລາວ", "မြန်မာ"}
	otherWords = []string{"Привет", "мир", "ПРИВЕТ", "Ελληνικά", "αβγ", "ΣΊΣΥΦΟΣ", "Ǆemal", "ǅ", "ǈ", "ᾼ", "Ⅻ", "ⅻ", "½", "²", "₃", "①", "ꙮ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝟙𝟚𝟛", "ﬁ", "ﬀ", "Å", "℃", "™", "©", "µ", "ß", "ẞ", "ŉ"}
	emoji      = []string{"😀", "👍", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "🇺🇸", "❤️", "✨", "🤖", "🧑🏿‍💻", "👩‍❤️‍💋‍👨", "☕", "🙂🙃", "1️⃣", "#️⃣", "🫠", "🦀", "🐍"}
	puncts     = []string{".", ",", "!", "?", ";", ":", "...", "—", "–", "-", "(", ")", "[", "]", "{", "}", "\"", "'", "`", "«", "»", "“", "”", "‘", "’", "/", "\\", "|", "@", "#", "$", "%", "^", "&", "*", "+", "=", "<", ">", "~", "_", "\u00a7", "¶", "•", "€", "£", "¥", "→", "∑", "√", "∞", "≠", "≤"}
	contrs     = []string{"I'm", "I'M", "don't", "DON'T", "Don'T", "we're", "WE'RE", "We'Re", "they've", "THEY'VE", "she'll", "SHE'LL", "He'Ll", "it's", "IT'S", "It'S", "he'd", "HE'D", "y'all", "o'clock", "rock'n'roll", "'s", "'S", "'re", "’s", "''", "'", "'''s"}
	spaces     = []string{" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r\n\r\n", "\r", " \n", "\n ", " \t \n", "\u00a0", "\u3000", "\u2003", "\u2009", "\u200b", "\u2028", "\u202f", "\v", "\f"}
	codeLines  = []string{
		"func main() {\n\tfmt.Println(\"hi\")\n}\n",
		"def f(x):\n    return x**2  # square\n",
		"if (a && b || !c) { x += 1; } else { y -= 2; }",
		"    for i in range(10):\n        print(i)\n",
		"<div class=\"x\">&nbsp;</div>",
		"SELECT * FROM t WHERE id = 42;",
		"#include <stdio.h>\nint main(void){return 0;}",
		"const x = a?.b ?? c; // comment",
		"foo_bar_baz = {'k': [1, 2, 3], \"v\": None}",
		"$ ls -la /usr/local/bin | grep -v '^d' > out.txt 2>&1",
		"https://example.com/path?query=1&b=two#frag",
		"user@example.org",
		"0x1F4A9 0b1010 1e-9 3.14159 -42 +7 1,000,000 12:30:45 2024-01-02",
		"\t\t\tdeeply\t\tindented\t",
		"// TODO: fix\r\n/* block */\r\n",
		"a=1;b=2;c=a+b;",
		"{\"json\": {\"nested\": [true, false, null]}}",
		"std::vector<int> v{1,2,3};",
		"λx. x → x",
	}
	digitRuns = []string{"0", "7", "12", "123", "1234", "12345", "123456", "1234567", "3.14159265358979", "1000000", "٣٤٥", "१२३४५", "１２３４", "Ⅳ", "²³", "99999999999999999999"}
)

// trickyChars steer the Split patterns' backtracking: apostrophes and case,
// marks, Lm/Lo/Lt letters, line breaks, odd spaces.
var trickyChars = []string{"a", "B", "'", "s", "S", "t", "re", "LL", "ve", "D", "m", " ", " ", "\t", "\n", "\r", "1", "23", "٣",
	"ǅ", "ʰ", "中", "ー", "\u0301", "!", "/", ".", "$", "😀", "\u00a0", "\u2028", "Ⅻ", "_", "-", "A", "é", "\u3000", "ひ", "𝔘"}

// trickyString is a short dense string over alphabet.
func trickyString(r *rand.Rand, alphabet []string) string {
	var b strings.Builder
	for n := 1 + r.IntN(12); n > 0; n-- {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// specialTexts are the texts of added tokens of the family under test and
// near misses of them.
func specialTexts(t *Tokenizer) []string {
	var out []string
	for s := range t.added {
		out = append(out, s)
	}
	// deterministic order
	sortStrings(out)
	if len(out) > 40 {
		out = out[:40]
	}
	var near []string
	for _, s := range out[:min(len(out), 8)] {
		near = append(near, s[:len(s)-1], s+s, " "+s+" ", strings.ToUpper(s))
	}
	return append(out, near...)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// randomRune picks from blocks assigned long ago (Go's tables are Unicode
// 15.0, node 20's ICU 17.0), avoiding U+0085 and U+FEFF, where JavaScript's \s
// and Unicode White_Space disagree (see TestReferenceDivergences).
func randomRune(r *rand.Rand) rune {
	blocks := [][2]rune{
		{0x20, 0x7E}, {0xA0, 0x17E}, {0x180, 0x24F}, {0x300, 0x36F}, {0x370, 0x3FF}, {0x400, 0x4FF},
		{0x590, 0x5FF}, {0x600, 0x6FF}, {0x900, 0x97F}, {0xE00, 0xE7F}, {0x1E00, 0x1EFF},
		{0x2000, 0x206F}, {0x20A0, 0x20BF}, {0x2100, 0x218F}, {0x2190, 0x23FF}, {0x2500, 0x27BF},
		{0x3000, 0x30FF}, {0x4E00, 0x9FA5}, {0xAC00, 0xD7A3}, {0xFF00, 0xFFEF}, {0x1F300, 0x1F64F},
	}
	for {
		b := blocks[r.IntN(len(blocks))]
		c := b[0] + rune(r.IntN(int(b[1]-b[0]+1)))
		if c == 0x85 || c == 0xFEFF || c == 0x17F || (c >= 0x2060 && c <= 0x206F) {
			continue
		}
		return c
	}
}

func pick(r *rand.Rand, l []string) string { return l[r.IntN(len(l))] }

// buildCorpus returns n strings (n ≥ 100) for the tokenizer t.
func buildCorpus(t *Tokenizer, n int) []string {
	r := rand.New(rand.NewPCG(20261122, 3))
	specials := specialTexts(t)
	pools := [][]string{latinWords, cjkWords, rtlWords, indicWords, otherWords, emoji, puncts, contrs, spaces, codeLines, digitRuns, decomposed, specials}
	// fixed cases first: edge cases and very long strings
	out := []string{"", " ", "  ", "\n", "\r\n", "a", "I'M HERE", "Hello, world!", "don't STOP", "   leading", "trailing   ", "ſ",
		strings.Repeat(" ", 1000), strings.Repeat("\t", 300) + "x", strings.Repeat("a", 5000),
		strings.Repeat("中文", 3000), strings.Repeat("1234567890", 500), strings.Repeat("👨‍👩‍👧‍👦", 200), strings.Repeat("\r\n", 700),
		strings.Repeat("ab ", 4000), strings.Repeat("=", 2000) + "\n", strings.Repeat("the quick brown fox ", 3000)}
	for _, p := range pools {
		out = append(out, p...)
	}
	seps := []string{" ", " ", " ", "", "\n", "  ", "\t", "\r\n"}
	for len(out) < n {
		var b strings.Builder
		switch kind := r.IntN(100); {
		case kind < 60: // a mix of tokens from one or more pools
			main := pools[r.IntN(len(pools))]
			words := 1 + r.IntN(30)
			for k := 0; k < words; k++ {
				if r.IntN(4) == 0 {
					b.WriteString(pick(r, pools[r.IntN(len(pools))]))
				} else {
					b.WriteString(pick(r, main))
				}
				if r.IntN(5) > 0 {
					b.WriteString(pick(r, seps))
				}
			}
		case kind < 72: // dense strings of pattern-steering characters
			b.WriteString(trickyString(r, trickyChars))
		case kind < 85: // random code points
			for k := 1 + r.IntN(40); k > 0; k-- {
				b.WriteRune(randomRune(r))
			}
		case kind < 97: // code with whitespace runs
			for k := 1 + r.IntN(6); k > 0; k-- {
				b.WriteString(strings.Repeat(pick(r, []string{" ", "\t", "\n", "\r\n"}), r.IntN(20)))
				b.WriteString(pick(r, codeLines))
			}
		default: // long prose
			for k := 100 + r.IntN(400); k > 0; k-- {
				b.WriteString(pick(r, pools[r.IntN(6)]))
				b.WriteString(pick(r, seps[:4]))
			}
		}
		out = append(out, b.String())
	}
	return out
}
