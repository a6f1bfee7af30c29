package vfs

import "errors"

// ErrMapUnsupported is returned by MapReadOnly where memory maps are not
// available.
var ErrMapUnsupported = errors.New("vfs: memory-mapped files are not supported here")

// Mapper is implemented by files whose contents can be mapped into memory
// read-only. The operating system's files implement it on Unix; MemFS and
// FaultFS files do not, so code that maps must keep a ReadAt path.
type Mapper interface {
	// MapReadOnly maps the first size bytes of the file read-only. The
	// mapping outlives the file's Close and lasts until its Unmap. Reading
	// mapped bytes that the file no longer has (it was truncated) or that
	// the device cannot deliver raises a memory fault, not an error:
	// readers turn faults into errors with runtime/debug.SetPanicOnFault.
	MapReadOnly(size int64) (*Mapping, error)
}

// Mapping is a read-only memory map of a file.
type Mapping struct {
	data  []byte
	unmap func([]byte) error
}

// Bytes returns the mapped bytes. They must not be written, and not be
// read after Unmap.
func (m *Mapping) Bytes() []byte { return m.data }

// Unmap releases the mapping. Unmapping twice is a no-op.
func (m *Mapping) Unmap() error {
	if m.data == nil {
		return nil
	}
	data := m.data
	m.data = nil
	return m.unmap(data)
}

// MapAppender is implemented by files that can be appended to through a
// shared, writable memory map instead of one write(2) per Write: the
// operating system's files on Linux.
type MapAppender interface {
	// AppendMapped turns a new, empty file into a File whose Write copies
	// into the page cache through a mapping: the bytes survive a crash
	// of the process as after write(2), and Sync makes them durable. The
	// file grows in reserved chunks, so after a crash it may end in zero
	// bytes; Close truncates it to what was written. The returned File
	// takes over the file: close it, not the original.
	AppendMapped() (File, error)
}
