//go:build unix

package db

import "syscall"

// defaultMaxOpenFiles is Options.MaxOpenFiles' default: 1,000, or half the
// soft limit on open files when that is lower, and at least 16.
func defaultMaxOpenFiles() int {
	n := 1000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur/2 < uint64(n) {
		n = int(lim.Cur / 2)
	}
	return max(n, 16)
}
