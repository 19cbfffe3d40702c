package export

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// copyRange appends n bytes of the file open as fd from off, copied in
// the kernel (copy_file_range: no pass through user space, as a plain cp
// does); where the file systems do not allow it, read and written.
func (c *countWriter) copyRange(fd int, off, n int64) error {
	for n > 0 {
		k, err := unix.CopyFileRange(fd, &off, int(c.f.Fd()), nil, int(min(n, 1<<30)), 0)
		if err != nil || k == 0 {
			if k == 0 && err == nil {
				return io.ErrUnexpectedEOF
			}
			if !errors.Is(err, unix.EXDEV) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EINVAL) {
				return err
			}
			return preadCopy(c, fd, off, n, make([]byte, 1<<20))
		}
		c.count(k)
		n -= int64(k)
	}
	return nil
}

// writebackBytes is how much of a file is written before writeback asks
// the kernel to start putting it on disk.
const writebackBytes = 8 << 20

// writeback starts the disk writing what f got since the last call, once
// that is writebackBytes, without waiting for it: the disk then works
// while the export makes the rest (the kernel would otherwise hold a
// whole shard in memory until outDir.write's fsync, and a merge would
// wait for the disk after each shard). A hint only: errors show at fsync.
func (c *countWriter) writeback() {
	if c.n-c.queued < writebackBytes {
		return
	}
	unix.SyncFileRange(int(c.f.Fd()), c.queued, c.n-c.queued, unix.SYNC_FILE_RANGE_WRITE)
	c.queued = c.n
}
