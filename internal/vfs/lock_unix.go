//go:build unix

package vfs

import (
	"fmt"
	"os"
	"sync"
	"syscall"
)

// held guards against the same process locking one file twice: flock locks
// belong to open file descriptions, so a second open+flock in this process
// would fail anyway, but the map gives a clearer error and works on every
// file system.
var held sync.Map

type fileLock struct {
	f    *os.File
	name string
}

func lockFile(name string) (*fileLock, error) {
	abs := name
	if a, err := absPath(name); err == nil {
		abs = a
	}
	if _, loaded := held.LoadOrStore(abs, true); loaded {
		return nil, fmt.Errorf("lock %s: already held by this process", name)
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		held.Delete(abs)
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		held.Delete(abs)
		return nil, fmt.Errorf("lock %s: held by another process: %w", name, err)
	}
	return &fileLock{f: f, name: abs}, nil
}

func (l *fileLock) Close() error {
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	held.Delete(l.name)
	return err
}
