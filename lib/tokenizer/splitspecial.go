package tokenizer

// EncodeSplitSpecial is Encode (without the post-processor's additions)
// with special tokens' spellings encoded as ordinary text, like Hugging
// Face's split_special_tokens=True: "<|im_end|>" inside a message is five
// text pieces, not the end-of-turn token. Added tokens that are not special
// (Qwen's <think>) still match.
func (t *Tokenizer) EncodeSplitSpecial(text string) []int {
	e := encoder{t: t, out: make([]int, 0, len(text)/3+1)}
	t.plainAdded.splitAdded(text, e.plain, e.token)
	return e.out
}

func notSpecial(toks []*addedToken) []*addedToken {
	var out []*addedToken
	for _, a := range toks {
		if !a.special {
			out = append(out, a)
		}
	}
	return out
}
