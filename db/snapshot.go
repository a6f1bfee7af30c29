package db

import "sync"

// Snapshot is a consistent, read-only view of the store as of the moment
// it was taken. Pass it in ReadOptions to Get or NewIterator. Release it
// when done: live snapshots keep old versions of keys from being dropped.
type Snapshot struct {
	db         *DB
	seq        uint64
	prev, next *Snapshot
	once       sync.Once
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

// NewSnapshot takes a snapshot of the current state.
func (d *DB) NewSnapshot() *Snapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &Snapshot{db: d, seq: d.visibleSeq.Load()}
	if !d.isClosed {
		d.snaps.pushBack(s)
	}
	return s
}

// Release frees the snapshot. Calling it again is a no-op.
func (s *Snapshot) Release() {
	s.once.Do(func() {
		d := s.db
		d.mu.Lock()
		if s.prev != nil {
			d.snaps.remove(s)
		}
		d.mu.Unlock()
	})
}

// Seq returns the sequence number the snapshot reads at.
func (s *Snapshot) Seq() uint64 { return s.seq }
