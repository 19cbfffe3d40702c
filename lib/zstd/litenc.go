package zstd

// appendLiterals writes the literals section: RLE for a run, else raw.
func appendLiterals(dst, lits []byte) []byte {
	if isRun(lits) && len(lits) < 1<<20 {
		n := len(lits)
		switch {
		case n < 32:
			dst = append(dst, byte(1|n<<3))
		case n < 4096:
			dst = append(dst, byte(1|1<<2|n<<4), byte(n>>4))
		default:
			dst = append(dst, byte(1|3<<2|n<<4), byte(n>>4), byte(n>>12))
		}
		return append(dst, lits[0])
	}
	return appendRawLiterals(dst, lits)
}
