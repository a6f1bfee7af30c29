package db

import (
	"container/list"
	"errors"
	"sync"

	"github.com/bloomkv/bloomkv/vfs"
)

// fileLimiter bounds the file descriptors held by the tables read with
// ReadAt (tables that are not memory-mapped): each holds its descriptor
// only while it is among the limit most recently read, and reopens it on
// the next read after it was closed. Mapped tables hold none. The bound is
// soft: when every open descriptor is in the middle of a read, a read
// opens one more rather than wait.
type fileLimiter struct {
	fs   vfs.FS
	max  int
	mu   sync.Mutex
	open int        // descriptors held
	idle *list.List // of *limitedFile with a descriptor and no read in flight, most recent first
}

func newFileLimiter(fs vfs.FS, max int) *fileLimiter {
	return &fileLimiter{fs: fs, max: max, idle: list.New()}
}

// limitedFile is a table file read through a fileLimiter: an io.ReaderAt
// whose descriptor may be closed between reads.
type limitedFile struct {
	lim    *fileLimiter
	name   string
	f      vfs.File      // nil while closed
	refs   int           // reads in flight
	elem   *list.Element // in lim.idle while idle with a descriptor
	closed bool
}

// adopt wraps the open file f of name, counting its descriptor; it is
// idle from the start.
func (l *fileLimiter) adopt(name string, f vfs.File) *limitedFile {
	lf := &limitedFile{lim: l, name: name, f: f}
	l.mu.Lock()
	l.open++
	lf.elem = l.idle.PushFront(lf)
	l.trimLocked()
	l.mu.Unlock()
	return lf
}

// trimLocked closes idle descriptors, least recently read first, until at
// most max are held (or none is idle).
func (l *fileLimiter) trimLocked() {
	for l.open > l.max {
		e := l.idle.Back()
		if e == nil {
			return
		}
		lf := e.Value.(*limitedFile)
		l.idle.Remove(e)
		lf.elem = nil
		_ = lf.f.Close() // read-only: nothing to lose
		lf.f = nil
		l.open--
	}
}

var errFileClosed = errors.New("db: table file closed")

// ReadAt reads through the file's descriptor, reopening it if the limiter
// closed it.
func (lf *limitedFile) ReadAt(p []byte, off int64) (int, error) {
	l := lf.lim
	l.mu.Lock()
	if lf.closed {
		l.mu.Unlock()
		return 0, errFileClosed
	}
	if lf.f == nil {
		// Room first, so the new descriptor stays within the bound
		// whenever some descriptor is idle.
		l.open++
		l.trimLocked()
		f, err := l.fs.Open(lf.name)
		if err != nil {
			l.open--
			l.mu.Unlock()
			return 0, err
		}
		lf.f = f
	} else if lf.elem != nil {
		l.idle.Remove(lf.elem)
		lf.elem = nil
	}
	lf.refs++
	f := lf.f
	l.mu.Unlock()

	n, err := f.ReadAt(p, off)

	l.mu.Lock()
	lf.refs--
	if lf.refs == 0 {
		if lf.closed {
			_ = lf.f.Close()
			lf.f = nil
			l.open--
		} else {
			lf.elem = l.idle.PushFront(lf)
			l.trimLocked()
		}
	}
	l.mu.Unlock()
	return n, err
}

// Close closes the descriptor (after the reads in flight) and makes later
// reads fail.
func (lf *limitedFile) Close() error {
	l := lf.lim
	l.mu.Lock()
	defer l.mu.Unlock()
	if lf.closed {
		return nil
	}
	lf.closed = true
	if lf.elem != nil {
		l.idle.Remove(lf.elem)
		lf.elem = nil
	}
	if lf.f != nil && lf.refs == 0 {
		err := lf.f.Close()
		lf.f = nil
		l.open--
		return err
	}
	return nil
}

// held returns the descriptors the limiter holds (for tests and Metrics).
func (l *fileLimiter) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}
