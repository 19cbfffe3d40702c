package engine

// attnBackRows is how many positions attentionBackward takes per block:
// twice the forward's attnRows. The key and value gradients' register
// tiles (scatterTiles) add one block's queries per load and store of
// their accumulators, 32 at 16 positions of a group of two; 64 halve
// those loads and stores for every key. Per worker the block's four
// score-sized buffers hold 64 × n floats each (4 MiB at 4096 tokens).
const attnBackRows = 32
