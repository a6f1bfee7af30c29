package db

import (
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
	open int // descriptors held
	// idle lists the files with a descriptor and no read in flight, most
	// recently read first: a ring through idle.next and idle.prev (an
	// intrusive list, so a read allocates nothing).
	idle limitedFile
}

func newFileLimiter(fs vfs.FS, max int) *fileLimiter {
	l := &fileLimiter{fs: fs, max: max}
	l.idle.next, l.idle.prev = &l.idle, &l.idle
	return l
}

// pushIdle puts lf at the front of the idle list.
func (l *fileLimiter) pushIdle(lf *limitedFile) {
	lf.prev, lf.next = &l.idle, l.idle.next
	lf.next.prev, l.idle.next = lf, lf
}

// removeIdle takes lf off the idle list, if it is there.
func (l *fileLimiter) removeIdle(lf *limitedFile) {
	if lf.next == nil {
		return
	}
	lf.prev.next, lf.next.prev = lf.next, lf.prev
	lf.prev, lf.next = nil, nil
}

// limitedFile is a table file read through a fileLimiter: an io.ReaderAt
// whose descriptor may be closed between reads.
type limitedFile struct {
	lim        *fileLimiter
	name       string
	f          vfs.File     // nil while closed
	refs       int          // reads in flight
	prev, next *limitedFile // in lim.idle while idle with a descriptor; nil otherwise
	closed     bool
}

// adopt wraps the open file f of name, counting its descriptor; it is
// idle from the start.
func (l *fileLimiter) adopt(name string, f vfs.File) *limitedFile {
	lf := &limitedFile{lim: l, name: name, f: f}
	l.mu.Lock()
	l.open++
	l.pushIdle(lf)
	l.trimLocked()
	l.mu.Unlock()
	return lf
}

// trimLocked closes idle descriptors, least recently read first, until at
// most max are held (or none is idle).
func (l *fileLimiter) trimLocked() {
	for l.open > l.max {
		lf := l.idle.prev
		if lf == &l.idle {
			return // nothing idle
		}
		l.removeIdle(lf)
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
	} else {
		l.removeIdle(lf)
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
			l.pushIdle(lf)
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
	l.removeIdle(lf)
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
