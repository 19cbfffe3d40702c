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
// attnBackRows up to 1,024 positions, then n/16, at most 128. Every block
// reads and writes the head's key and value gradients for all the keys
// before it (n × head dim floats each, 1 MiB at 2048 on a 128-wide head,
// twice the Zen 3's L2), so at length the blocks' passes over them from
// L3 cost more than a larger block's score buffers; at 512 positions,
// where they fit L2, a block of 128 was slower (BenchmarkAttentionAVX2,
// ATTN_AVX2_SWITCH=backrows). The bits do not depend on the block: each
// gradient element adds its terms in ascending position order.
func backRows(n int) int {
	if !backRowsScaled {
		return attnBackRows
	}
	return min(max(attnBackRows, n/16), 128)
}

// fwdRowsScaled has the forward attention take a run of consecutive
// positions in blocks of attnFwdRows(n) rather than attnRows.
var fwdRowsScaled = true

// fwdRowsDiv is n's divisor in attnFwdRows (a variable for
// BenchmarkAttentionAVX2's ATTN_FWD_DIV).
var fwdRowsDiv = 32

// attnFwdRows is the positions per forward attention block for a run of n
// consecutive positions: attnRows up to 512, then n/32, at most 64. Each
// block reads its KV head's packed keys and values once (n × head dim
// floats each, 1 MiB apiece at 2048 on a 128-wide head, from L3 past
// Zen 3's L2), for attnRows × group queries. A query's bits do not
// depend on its block (TestAttentionBlocksMatchRows).
func attnFwdRows(n int) int {
	if !fwdRowsScaled {
		return attnRows
	}
	return min(max(attnRows, n/fwdRowsDiv), 64)
}
