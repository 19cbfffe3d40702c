package engine

import "testing"

// poisonArena makes every arena's takeToFill and rowsToFill hand out
// memory full of NaN until t ends (arena.go: poisonToFill). Callers that
// keep their promise compute the same bits poisoned or not, so tests
// running beside t notice nothing unless one breaks it.
func poisonArena(t testing.TB) {
	t.Helper()
	poisonToFill.Store(true)
	t.Cleanup(func() { poisonToFill.Store(false) })
}
