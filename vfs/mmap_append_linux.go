//go:build linux

package vfs

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
)

const (
	// appendChunk is how far a mapped log's file is extended (and its
	// disk space reserved) at a time.
	appendChunk = 1 << 20
	// appendMapMin is the first mapping's length; it doubles as needed.
	appendMapMin = 8 << 20

	madvPopulateWrite = 23 // MADV_POPULATE_WRITE, Linux 5.14+

	syncFileRangeWrite = 2 // SYNC_FILE_RANGE_WRITE
)

// AppendMapped implements MapAppender.
func (f osFile) AppendMapped() (File, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() != 0 {
		return nil, fmt.Errorf("vfs: AppendMapped needs an empty file; %s has %d bytes", f.Name(), fi.Size())
	}
	// Fail now, not at the first write, where fallocate cannot work.
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, appendChunk); err != nil {
		return nil, fmt.Errorf("vfs: fallocate %s: %w", f.Name(), err)
	}
	if err := f.File.Truncate(0); err != nil {
		return nil, err
	}
	return &mappedAppender{f: f.File}, nil
}

// mappedAppender appends through a shared, writable mapping of its file.
// Written bytes are in the page cache at once, as after write(2), so they
// survive a crash of the process; Sync makes them durable. The file is
// extended with fallocate a chunk ahead of the writes, so the space is
// reserved (ENOSPC is an error of Write, not a fault later); after a crash
// it may end in zeros, which the log reader takes for the end of the log.
// Close truncates it to the bytes written.
type mappedAppender struct {
	f     *os.File
	data  []byte // the mapping; nil until the first Write
	size  int64  // bytes written
	alloc int64  // file length: allocated with fallocate, mapped
	// next is where the next grow starts: one chunk before alloc, so the
	// file and its pages stay a chunk ahead of the writes.
	next int64
	// populated is the end of the pages faulted in (or being faulted in
	// by the goroutine that closes prefault, when not nil).
	populated int64
	prefault  chan struct{}
	err       error // sticky
}

var errAppenderClosed = errors.New("vfs: mapped file is closed")

func (a *mappedAppender) Write(p []byte) (n int, err error) {
	if a.err != nil {
		return 0, a.err
	}
	if need := a.size + int64(len(p)); need > a.next {
		if err := a.grow(need); err != nil {
			a.err = err
			return 0, err
		}
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if e := recover(); e != nil {
			if _, ok := e.(interface{ Addr() uintptr }); !ok {
				panic(e)
			}
			n, err = 0, fmt.Errorf("vfs: memory fault writing the mapped file %s: %v", a.f.Name(), e)
			a.err = err
		}
	}()
	copy(a.data[a.size:], p)
	a.size += int64(len(p))
	return len(p), nil
}

// grow extends the file to hold need bytes and one chunk more, in whole
// chunks, and the mapping to cover it. The chunk ahead is faulted in by a
// goroutine, off the writer's path, which also starts the writeback of the
// full chunks; only pages the writes need now and that were not faulted
// in ahead are faulted in here.
func (a *mappedAppender) grow(need int64) error {
	now := (need + appendChunk - 1) / appendChunk * appendChunk
	alloc := now + appendChunk
	if int64(int(alloc)) != alloc {
		return fmt.Errorf("vfs: mapped file %s cannot grow to %d bytes", a.f.Name(), need)
	}
	fd := int(a.f.Fd())
	if alloc > a.alloc {
		if err := syscall.Fallocate(fd, 0, a.alloc, alloc-a.alloc); err != nil {
			return fmt.Errorf("vfs: fallocate %s: %w", a.f.Name(), err)
		}
	}
	if alloc > int64(len(a.data)) {
		length := max(appendMapMin, 2*len(a.data))
		for int64(length) < alloc {
			length *= 2
		}
		a.waitPrefault()
		if a.data != nil {
			if err := syscall.Munmap(a.data); err != nil {
				return err
			}
			a.data = nil
		}
		data, err := syscall.Mmap(fd, 0, length, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("vfs: mmap %s: %w", a.f.Name(), err)
		}
		a.data = data
	}
	// Fault pages in with one call per range rather than one fault per
	// page as the writes reach them (best effort: older kernels refuse).
	if a.populated < now {
		_ = syscall.Madvise(a.data[a.populated:now], madvPopulateWrite)
		a.populated = now
	}
	if a.populated < alloc {
		a.waitPrefault()
		done := make(chan struct{})
		full := a.size / appendChunk * appendChunk
		go func(pages []byte) {
			// The chunks written so far are full: start their writeback,
			// so that a later Sync has less to wait for (it does not
			// wait for the I/O, but may block when the device's queue is
			// full, hence here and not on the writer's path).
			if full > 0 {
				_ = syscall.SyncFileRange(fd, 0, full, syncFileRangeWrite)
			}
			_ = syscall.Madvise(pages, madvPopulateWrite)
			close(done)
		}(a.data[a.populated:alloc])
		a.prefault = done
		a.populated = alloc
	}
	a.alloc, a.next = alloc, now
	return nil
}

// waitPrefault waits for the goroutine faulting pages in ahead, if any: it
// must be done before the mapping changes.
func (a *mappedAppender) waitPrefault() {
	if a.prefault != nil {
		<-a.prefault
		a.prefault = nil
	}
}

func (a *mappedAppender) Sync() error {
	if a.err != nil {
		return a.err
	}
	if a.data == nil {
		return a.f.Sync()
	}
	// fsync writes back pages dirtied through the mapping too, and the
	// file length fallocate set.
	if err := a.f.Sync(); err != nil {
		a.err = err
		return err
	}
	return nil
}

func (a *mappedAppender) Close() error {
	if a.err == errAppenderClosed {
		return nil
	}
	var err error
	a.waitPrefault()
	if a.data != nil {
		err = syscall.Munmap(a.data)
		a.data = nil
	}
	if terr := a.f.Truncate(a.size); err == nil {
		err = terr
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	a.err = errAppenderClosed
	return err
}

func (a *mappedAppender) Read(p []byte) (int, error)              { return a.f.Read(p) }
func (a *mappedAppender) ReadAt(p []byte, off int64) (int, error) { return a.f.ReadAt(p, off) }

// Size returns the bytes written.
func (a *mappedAppender) Size() (int64, error) { return a.size, nil }
