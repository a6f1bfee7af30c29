//go:build unix

package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// lockFile takes an flock lock on name: LOCK_SH when shared, else LOCK_EX,
// without waiting (LOCK_NB), and on Linux an fcntl record lock of the same
// kind (lockFcntl), so that LevelDB, which locks with fcntl, is kept out
// too.
func lockFile(name string, shared bool) (io.Closer, error) {
	abs := name
	if a, err := absPath(name); err == nil {
		abs = a
	}
	if err := acquireHeld(abs, name, shared); err != nil {
		return nil, err
	}
	f, err := openLockFile(name, shared)
	if err != nil {
		releaseHeld(abs, shared)
		return nil, err
	}
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		releaseHeld(abs, shared)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w by another process", name, ErrLockHeld)
		}
		return nil, &os.PathError{Op: "flock", Path: name, Err: err}
	}
	if held, err := lockFcntl(f, shared); held || err != nil {
		f.Close() // drops the flock too
		releaseHeld(abs, shared)
		if held {
			return nil, fmt.Errorf("lock %s: %w by another process (an fcntl lock, as LevelDB takes)", name, ErrLockHeld)
		}
		return nil, err
	}
	return &fileLock{f: f, abs: abs, shared: shared, unlock: func(f *os.File) error {
		return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}}, nil
}
