package zstd

import (
	"slices"
)

// huffCode is one symbol's code: its bits, most significant read first.
type huffCode struct {
	code  uint16
	nbits uint8
}

// huffLengths returns Huffman code lengths of at most maxHuffLog bits
// for the counts (zero for unused symbols). When the tree is too deep the
// counts are halved (keeping every used symbol) and it is built again.
func huffLengths(counts *[256]int) [256]uint8 {
	c := *counts
	for {
		l := huffTreeDepths(&c)
		if slices.Max(l[:]) <= maxHuffLog {
			return l
		}
		for i := range c {
			if c[i] > 0 {
				c[i] = (c[i] + 1) / 2
			}
		}
	}
}

// huffTreeDepths builds an unbounded Huffman tree and returns each
// symbol's depth.
func huffTreeDepths(c *[256]int) [256]uint8 {
	type node struct{ count, left, right, sym int }
	nodes := make([]node, 0, 512)
	for s, n := range c {
		if n > 0 {
			nodes = append(nodes, node{count: n, left: -1, right: -1, sym: s})
		}
	}
	slices.SortStableFunc(nodes, func(a, b node) int { return a.count - b.count })
	leaves := len(nodes)
	// Two queues: leaves in count order, then merged nodes in creation order.
	li, ni := 0, leaves
	take := func() int {
		if li < leaves && (ni >= len(nodes) || nodes[li].count <= nodes[ni].count) {
			li++
			return li - 1
		}
		ni++
		return ni - 1
	}
	for len(nodes)-ni+leaves-li > 1 {
		a, b := take(), take()
		nodes = append(nodes, node{count: nodes[a].count + nodes[b].count, left: a, right: b, sym: -1})
	}
	var depth [256]uint8
	var walk func(i int, d uint8)
	walk = func(i int, d uint8) {
		if nodes[i].sym >= 0 {
			depth[nodes[i].sym] = max(d, 1)
			return
		}
		walk(nodes[i].left, min(d+1, 255))
		walk(nodes[i].right, min(d+1, 255))
	}
	walk(len(nodes)-1, 0)
	return depth
}

// huffCodes assigns codes the way huffTable.build lays out its table: longest
// codes first, symbols in order within a length.
func huffCodes(lengths *[256]uint8, log uint8) [256]huffCode {
	var start [maxHuffLog + 2]int
	for _, l := range lengths {
		if l > 0 {
			start[log+1-l] += 1 << (log - l)
		}
	}
	pos := 0
	for w := 1; w <= maxHuffLog; w++ {
		start[w], pos = pos, pos+start[w]
	}
	var codes [256]huffCode
	for s, l := range lengths {
		if l == 0 {
			continue
		}
		w := log + 1 - l
		codes[s] = huffCode{code: uint16(start[w] >> (w - 1)), nbits: l}
		start[w] += 1 << (w - 1)
	}
	return codes
}

// appendHuffStream writes one backward Huffman stream: the last literal
// first, so the decoder reads the first one first.
func appendHuffStream(dst, lits []byte, codes *[256]huffCode) []byte {
	w := bitWriter{out: dst}
	for i := len(lits) - 1; i >= 0; i-- {
		c := codes[lits[i]]
		w.add(uint64(c.code), uint(c.nbits))
	}
	return w.close()
}
