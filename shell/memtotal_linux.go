package shell

import "golang.org/x/sys/unix"

// memTotal is the machine's memory in bytes (MemTotal of /proc/meminfo),
// or 0 if unknown. sysinfo(2) gives it in one system call; reading
// /proc/meminfo makes the kernel format the whole file, a measurable part
// of `tinker -c`'s start.
func memTotal() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
