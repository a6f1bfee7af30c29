package vfs

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// ErrLockHeld is matched (errors.Is) by the error of a Lock or LockShared
// that failed because another holder has the lock: an exclusive lock, or
// for Lock a shared one, taken by this process or by another. Any other
// failure to lock (a permission error, an I/O error) does not match it.
var ErrLockHeld = errors.New("already held")

// held counts the OS file locks this process holds, by absolute path:
// -1 for an exclusive lock, n > 0 for n shared ones. flock locks belong to
// open file descriptions, so flock itself already refuses an exclusive
// lock next to a shared one taken through another descriptor of this
// process; the count gives a clearer error, and the only exclusion there
// is on systems without flock.
var (
	heldMu sync.Mutex
	held   = map[string]int{}
)

// acquireHeld records a lock of abs by this process, or fails with an
// error matching ErrLockHeld when one in this process conflicts with it.
func acquireHeld(abs, name string, shared bool) error {
	heldMu.Lock()
	defer heldMu.Unlock()
	n := held[abs]
	switch {
	case n < 0:
		return fmt.Errorf("lock %s: %w by this process (exclusively)", name, ErrLockHeld)
	case n > 0 && !shared:
		return fmt.Errorf("lock %s: %w by this process (shared, by %d holders)", name, ErrLockHeld, n)
	case shared:
		held[abs] = n + 1
	default:
		held[abs] = -1
	}
	return nil
}

// releaseHeld forgets one lock of abs recorded by acquireHeld.
func releaseHeld(abs string, shared bool) {
	heldMu.Lock()
	defer heldMu.Unlock()
	if shared && held[abs] > 1 {
		held[abs]--
		return
	}
	delete(held, abs)
}

// openLockFile opens the file to lock: for an exclusive lock read-write,
// created if needed; for a shared one read-only, never created.
func openLockFile(name string, shared bool) (*os.File, error) {
	if shared {
		return os.Open(name)
	}
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
}

// fileLock is a lock on an OS file; Close releases it (once).
type fileLock struct {
	mu     sync.Mutex
	f      *os.File
	abs    string
	shared bool
	unlock func(*os.File) error // nil where there is no flock
}

func (l *fileLock) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return os.ErrClosed
	}
	var err error
	if l.unlock != nil {
		err = l.unlock(l.f)
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	releaseHeld(l.abs, l.shared)
	return err
}
