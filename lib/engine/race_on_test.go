//go:build race

package engine

// raceEnabled says the race detector is on: sync.Pool then drops one Put
// in four at random (to shake out races on pooled values), so a test of
// what a pool saves cannot hold.
const raceEnabled = true
