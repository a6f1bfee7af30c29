//go:build unix && !linux

package vfs

import "os"

// lockFcntl is a no-op where open-file-description locks are missing:
// POSIX fcntl locks are the process's, and closing any descriptor of the
// file would drop them. (On Linux it keeps LevelDB out; see there.)
func lockFcntl(f *os.File, shared bool) (held bool, err error) { return false, nil }
