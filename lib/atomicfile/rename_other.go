//go:build !linux

package atomicfile

const (
	renameNoReplace = 1
	renameExchange  = 2
)

func renameat2(string, string, uint) error { return errNoAtomicRename }
