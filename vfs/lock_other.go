//go:build !unix

package vfs

import "io"

// lockFile on systems without flock only excludes other locks taken in
// this process (shared ones coexist, an exclusive one excludes all).
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
	return &fileLock{f: f, abs: abs, shared: shared}, nil
}
