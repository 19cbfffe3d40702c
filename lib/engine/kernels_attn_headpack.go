package engine

// headPack is an attention worker's copy of one sequence's keys and values
// of one KV head, made once for all the blocks of that head the worker
// takes in one attention call (which forgets it when it ends): the keys in
// dotsBlock16's transposed tiles (as packKeyTiles) and the values
// contiguous, rows of the head dimension. The blocks then read them in
// place; packing every tile again for every block (packKeyTile, packRows)
// took as much CPU
// as the forward's score products at 512 tokens.
type headPack struct {
	seq         *kvCache // nil: none
	layer, kvh  int
	n           int // positions packed: keys and values 0..n-1
	tiles, vals []float32
	keys        []float32 // instead of tiles where the AVX2 tiles run: rows of hd (keyRowsOK)
}

// get returns the pack of KV head kvh of seq's layer covering positions
// 0..n-1, packing it unless it holds them already, or nil where neither
// the 512-bit score kernels (keyTilesOK) nor the AVX2 ones (keyRowsOK)
// run. The cache holds rows of kvd floats, the head at kvh·hd. For the
// AVX2 kernels the keys are rows of hd (keys) rather than tiles: their
// score tile reads four keys in place, which packRows otherwise copied
// again for every block (a quarter of a 2048-token forward's CPU).
func (h *headPack) get(seq *kvCache, layer, kvh, hd, kvd, n int) *headPack {
	tiled := keyTilesOK(hd)
	if !tiled && !keyRowsOK(hd) {
		return nil
	}
	if h.seq == seq && h.layer == layer && h.kvh == kvh && h.n >= n {
		return h
	}
	h.seq, h.layer, h.kvh, h.n = seq, layer, kvh, n
	keys, vals := seq.k[layer], seq.v[layer]
	h.vals = grow32(&h.vals, n*hd)
	if tiled {
		h.tiles, h.keys = grow32(&h.tiles, n*hd), nil
		for t := 0; t+dotsTile <= n; t += dotsTile {
			packKeyTile(h.tiles[t*hd:(t+dotsTile)*hd], keys, t, kvd, kvh*hd, hd)
		}
	} else {
		h.keys = grow32(&h.keys, n*hd)
		for t := range n {
			copy(h.keys[t*hd:(t+1)*hd], keys[t*kvd+kvh*hd:])
		}
	}
	for t := range n {
		copy(h.vals[t*hd:(t+1)*hd], vals[t*kvd+kvh*hd:])
	}
	return h
}
