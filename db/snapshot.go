package db

import (
	"sync"
	"sync/atomic"
)

// Snapshot is a consistent, read-only view of the store as of the moment
// it was taken. Pass it in ReadOptions to Get or NewIterator. Release it
// when done: live snapshots keep old versions of keys from being dropped.
//
// Once released, the versions it saw may be compacted away, so a Get or
// NewIterator with a released snapshot fails with ErrSnapshotReleased
// rather than answer from a partial view; an iterator made before the
// release keeps reading its own consistent view. A snapshot of a closed
// DB fails every read with ErrClosed.
type Snapshot struct {
	db         *DB
	seq        uint64
	prev, next *Snapshot
	once       sync.Once
	released   atomic.Bool
	closed     bool // taken after Close: never live
}

// snapshotList is a doubly linked list of live snapshots, oldest first.
type snapshotList struct{ root Snapshot }

func (l *snapshotList) init() { l.root.prev, l.root.next = &l.root, &l.root }

func (l *snapshotList) pushBack(s *Snapshot) {
	s.prev, s.next = l.root.prev, &l.root
	s.prev.next, s.next.prev = s, s
}

func (l *snapshotList) remove(s *Snapshot) {
	s.prev.next, s.next.prev = s.next, s.prev
	s.prev, s.next = nil, nil
}

// oldest returns the sequence number of the oldest live snapshot and
// whether there is one.
func (l *snapshotList) oldest() (uint64, bool) {
	if l.root.next == &l.root {
		return 0, false
	}
	return l.root.next.seq, true
}

// NewSnapshot takes a snapshot of the current state. On a closed DB it
// returns a snapshot every read through which fails with ErrClosed.
func (d *DB) NewSnapshot() *Snapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &Snapshot{db: d, seq: d.visibleSeq.Load()}
	if d.isClosed {
		s.closed = true
		return s
	}
	d.snaps.pushBack(s)
	return s
}

// Release frees the snapshot. Reads through it afterwards fail with
// ErrSnapshotReleased (ErrClosed once the DB is closed). Release returns
// no error, so calling it again simply does nothing (see "Closing" in the
// package documentation).
func (s *Snapshot) Release() {
	s.once.Do(func() {
		d := s.db
		d.mu.Lock()
		s.released.Store(true)
		if s.prev != nil {
			d.snaps.remove(s)
		}
		d.mu.Unlock()
	})
}

// err reports why the snapshot cannot be read from, or nil.
func (s *Snapshot) err() error {
	switch {
	case s.closed:
		return ErrClosed
	case s.released.Load():
		return ErrSnapshotReleased
	}
	return nil
}

// Seq returns the sequence number the snapshot reads at.
func (s *Snapshot) Seq() uint64 { return s.seq }
