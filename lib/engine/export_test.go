package engine

import "testing"

// poisonArena sets TINKER_POISON_SCRATCH for t, as a user chasing a
// numerical bug would: trainers made from then until t ends hand out
// takeToFill and rowsToFill memory full of NaN (arena.go: poisonScratch).
// t must not be parallel (t.Setenv).
func poisonArena(t testing.TB) {
	t.Helper()
	t.Setenv(poisonScratchEnv, "1")
}
