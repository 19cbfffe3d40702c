package engine

// attnBackRows is how many positions attentionBackward takes per block:
// twice the forward's attnRows. The key and value gradients' register
// tiles (scatterColumns, scatterTiles) add one block's queries per load and store of
// their accumulators, 32 at 16 positions of a group of two; 64 halve
// those loads and stores for every key. Per worker the block's two
// score buffers (sc, dp; the transposed sT and pT only where
// scatterColumns does not run) hold 64 × n floats each, 2 MiB at 4096
// tokens on the 0.6B shape, as the four at 16 positions did.
const attnBackRows = 32

// backRowsScaled has attentionBackward take a block of backRows(n)
// positions rather than attnBackRows.
var backRowsScaled = true

// backRows is the positions per backward block for a sequence of n:
// attnBackRows below 2,048 positions, then n/16, at most 128. Every
// block reads and writes its KV head's key and value gradients for all
// the keys before it (n × head dim floats each, 1 MiB apiece at 2048 on a
// 128-wide head, twice Zen 3's L2 per core), so at length the blocks'
// passes over them cost more than a larger block's score buffers
// (BenchmarkAttentionAVX2, ATTN_AVX2_SWITCH=backrows: 1.17 less CPU at
// 2048; at 1024 blocks of 64 read 0.99, at 512 blocks of 128 0.92). A
// worker's two score buffers then hold 256 × n floats each at group two,
// 4 MiB apiece at 4096 positions (1 MiB with attnBackRows). The bits do
// not depend on the block: each gradient element adds its terms in
// ascending position order (TestBackRowsKeepBits).
func backRows(n int) int {
	if !backRowsScaled || n < 2048 {
		return attnBackRows
	}
	return min(n/16, 128)
}
