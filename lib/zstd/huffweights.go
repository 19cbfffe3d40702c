package zstd

import "bytes"

// appendHuffWeights writes a Huffman tree description for the weights
// of all symbols but the last: FSE-compressed or four bits each,
// whichever is shorter and allowed. ok is false when neither is.
func appendHuffWeights(dst []byte, w []uint8) ([]byte, bool) {
	var best []byte
	if len(w) <= 128 {
		best = append(best, byte(127+len(w)))
		for i := 0; i < len(w); i += 2 {
			b := w[i] << 4
			if i+1 < len(w) {
				b |= w[i+1]
			}
			best = append(best, b)
		}
	}
	for _, log := range []uint8{6, 5} {
		if z, ok := fseCompressWeights(w, log); ok && len(z) < 128 && (best == nil || len(z)+1 < len(best)) {
			best = append([]byte{byte(len(z))}, z...)
			break
		}
	}
	return append(dst, best...), best != nil
}

// fseCompressWeights codes the weights with an FSE table of accuracy
// log, and checks the result decodes back (the decoder stops when a state
// update reads past the stream, which a zero-bit state cannot do).
func fseCompressWeights(w []uint8, log uint8) ([]byte, bool) {
	if len(w) < 2 {
		return nil, false
	}
	norm, ok := normalizeCounts(w, log)
	if !ok {
		return nil, false
	}
	out := appendNCount(nil, norm, log)
	t := newFSEEnc(norm, log)
	bw := bitWriter{out: out}
	var s1, s2 fseEncoder
	i := len(w)
	if i%2 == 1 {
		s1.start(t, w[i-1])
		s2.start(t, w[i-2])
		s1.encode(&bw, w[i-3])
		i -= 3
	} else {
		s2.start(t, w[i-1])
		s1.start(t, w[i-2])
		i -= 2
	}
	for ; i > 0; i -= 2 {
		s2.encode(&bw, w[i-1])
		s1.encode(&bw, w[i-2])
	}
	s2.flush(&bw)
	s1.flush(&bw)
	z := bw.close()
	back, err := fseWeights(z)
	return z, err == nil && bytes.Equal(back, w)
}

// normalizeCounts scales the weights' histogram to sum to 1<<log, every
// present value keeping at least one state.
func normalizeCounts(w []uint8, log uint8) ([]int16, bool) {
	var hist [maxHuffLog + 1]int
	top := 0
	for _, x := range w {
		hist[x]++
		top = max(top, int(x))
	}
	size := 1 << log
	norm := make([]int16, top+1)
	sum := 0
	for s, c := range hist[:top+1] {
		if c > 0 {
			norm[s] = int16(max(1, c*size/len(w)))
			sum += int(norm[s])
		}
	}
	for sum != size {
		big := 0
		for s := range norm {
			if norm[s] > norm[big] {
				big = s
			}
		}
		if sum < size {
			norm[big]++
			sum++
			continue
		}
		if norm[big] <= 1 {
			return nil, false
		}
		norm[big]--
		sum--
	}
	return norm, true
}

// appendNCount writes an FSE table description that readFSECounts
// parses back into norm.
func appendNCount(dst []byte, norm []int16, log uint8) []byte {
	bw := bitWriter{out: dst}
	bw.add(uint64(log-5), 4)
	remaining, threshold, nb := int32(1<<log)+1, int32(1<<log), uint(log)+1
	prev0 := false
	for s := 0; s < len(norm) && remaining > 1; {
		if prev0 {
			start := s
			for s < len(norm) && norm[s] == 0 {
				s++
			}
			for ; s >= start+3; start += 3 {
				bw.add(3, 2)
			}
			bw.add(uint64(s-start), 2)
		}
		c := int32(norm[s])
		s++
		max := 2*threshold - 1 - remaining
		remaining -= abs32(c)
		c++
		if c >= threshold {
			c += max
		}
		if c < max {
			bw.add(uint64(c), nb-1)
		} else {
			bw.add(uint64(c), nb)
		}
		prev0 = c == 1
		for remaining < threshold {
			nb--
			threshold >>= 1
		}
	}
	return bw.bytes()
}
