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
