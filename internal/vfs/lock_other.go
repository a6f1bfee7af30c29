//go:build !unix

package vfs

import (
	"fmt"
	"os"
	"sync"
)

var held sync.Map

type fileLock struct {
	f    *os.File
	name string
}

// lockFile on systems without flock only excludes other opens in this
// process.
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
	return &fileLock{f: f, name: abs}, nil
}

func (l *fileLock) Close() error {
	held.Delete(l.name)
	return l.f.Close()
}
