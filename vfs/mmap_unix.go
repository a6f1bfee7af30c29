//go:build unix

package vfs

import (
	"fmt"
	"syscall"
)

// MapReadOnly implements Mapper.
func (f osFile) MapReadOnly(size int64) (*Mapping, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, fmt.Errorf("vfs: cannot map %d bytes of %s", size, f.Name())
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("vfs: mmap %s: %w", f.Name(), err)
	}
	return &Mapping{data: data, unmap: syscall.Munmap}, nil
}
