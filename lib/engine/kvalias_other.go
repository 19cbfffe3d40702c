//go:build !linux

package engine

var kvAliasPage = 4096

// Without Linux's memory files prompt caches are copied (kvalias.go).

type kvAliasFile struct{}

type kvAliasMem struct{}

func (kvAliasMem) unmap() {}

func kvAliasMapBound() int { return 0 }

func kvAliasStrictCommit() bool { return false }

func newKVAliasFile(*kvCache, int) *kvAliasFile { return nil }

func (*kvAliasFile) close() {}

func (*kvAliasFile) row(*kvCache, int, int, int) *kvCache { return nil }

type kvAliasBF16File struct{}

func newKVAliasBF16File(*kvCache, int) *kvAliasBF16File { return nil }

func (*kvAliasBF16File) close() {}

func (*kvAliasBF16File) row(*kvCache, *kvCache, int, int) bool { return false }

func newKVAliasPromptCache(int, int, int, int) *kvCache { return nil }

func newKVAliasOwnCache(int, int, int, int, int) *kvCache { return nil }

func (*kvCache) remapPrompt(*kvAliasFile, int) bool { return false }
