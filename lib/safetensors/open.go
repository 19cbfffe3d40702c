package safetensors

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/tinkershell/tinker/lib/userfile"
)

// Open memory-maps a safetensors file read-only and parses it, so multi-GB
// weight files are not copied into the Go heap. Call Close when done; tensor
// data must not be used after that.
func Open(path string) (*File, error) {
	fd, err := userfile.Open(path) // a FIFO or device is refused, not waited on
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("safetensors: %s is empty", path)
	}
	buf, err := unix.Mmap(int(fd.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("safetensors: mmap %s: %w", path, err)
	}
	f, err := Parse(buf)
	if err != nil {
		unix.Munmap(buf)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.closer = func() error { return unix.Munmap(buf) }
	return f, nil
}
