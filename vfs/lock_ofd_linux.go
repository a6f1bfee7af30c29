package vfs

import (
	"errors"
	"os"
	"syscall"
)

// fOFDSetLK is Linux's F_OFD_SETLK (since 3.15): a record lock owned by
// the open file description, like flock, that conflicts with the POSIX
// fcntl locks of other processes.
const fOFDSetLK = 37

// lockFcntl takes a whole-file fcntl lock on f (read when shared, else
// write) besides the flock: LevelDB locks LOCK with fcntl(F_SETLK), which
// on Linux does not see flock locks, so without it LevelDB and bloomkv
// could open one store at once. It reports held when another process
// holds a conflicting lock, and ignores a file system that has no record
// locks (the flock still excludes bloomkv and goleveldb).
func lockFcntl(f *os.File, shared bool) (held bool, err error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if shared {
		lk.Type = syscall.F_RDLCK
	}
	for {
		err = syscall.FcntlFlock(f.Fd(), fOFDSetLK, &lk)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EACCES):
		return true, nil
	case errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EOPNOTSUPP):
		return false, nil
	}
	return false, &os.PathError{Op: "fcntl", Path: f.Name(), Err: err}
}
