//go:build !linux

package download

var renameNoReplace = func(oldpath, newpath string) error { return errNoAtomicRename }

var exchange = func(a, b string) error { return errNoAtomicRename }
