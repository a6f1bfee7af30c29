package db

import (
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
)

// readState is an immutable view of what a read must consult: the
// memtables and the version of the tables. It is reference counted: the DB
// holds one reference while it is current, and every Get and iterator
// holds one while it reads. The tables of a version are deleted only after
// the last read state using that version is released.
type readState struct {
	d    *DB
	refs atomic.Int32
	mem  *memtable.MemTable
	imm  *memtable.MemTable // nil when none
	v    *manifest.Version
}

// tryRef takes a reference unless the state was already released.
func (rs *readState) tryRef() bool {
	for {
		n := rs.refs.Load()
		if n <= 0 {
			return false
		}
		if rs.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (rs *readState) unref() {
	if rs.refs.Add(-1) == 0 {
		rs.d.releaseVersion(rs.v)
	}
}

// loadReadState returns the current read state with a reference taken.
func (d *DB) loadReadState() *readState {
	for {
		if rs := d.rs.Load(); rs.tryRef() {
			return rs
		}
	}
}

// publishLocked installs a new read state from the fields guarded by d.mu
// and releases the DB's reference to the previous one.
func (d *DB) publishLocked() {
	rs := &readState{d: d, mem: d.mem, imm: d.imm, v: d.vs.current}
	rs.refs.Store(1)
	d.vmu.Lock()
	d.versionRefs[rs.v]++
	d.vmu.Unlock()
	if old := d.rs.Swap(rs); old != nil {
		old.unref()
	}
}

// releaseVersion drops a read state's hold on a version, and deletes the
// tables that compactions removed once no live version holds them.
func (d *DB) releaseVersion(v *manifest.Version) {
	d.vmu.Lock()
	if d.versionRefs[v]--; d.versionRefs[v] <= 0 {
		delete(d.versionRefs, v)
	}
	// After Close the directory may belong to another process: leave the
	// obsolete tables for the next Open to remove.
	if len(d.zombies) == 0 || d.closed.Load() {
		d.vmu.Unlock()
		return
	}
	live := map[uint64]bool{}
	for lv := range d.versionRefs {
		for _, n := range lv.AllFileNums() {
			live[n] = true
		}
	}
	var dead []uint64
	for n := range d.zombies {
		if !live[n] {
			dead = append(dead, n)
			delete(d.zombies, n)
		}
	}
	d.vmu.Unlock()
	for _, n := range dead {
		d.tables.evict(n)
		if err := d.fs.Remove(tableFileName(d.dirname, n)); err != nil {
			d.events.warn("removing obsolete table failed", "table", n, "err", err)
		}
	}
	if len(dead) > 0 {
		d.m.tablesDeleted.Add(int64(len(dead)))
	}
}

// addZombies records tables that the current version no longer holds.
func (d *DB) addZombies(files []*manifest.FileMetadata) {
	d.vmu.Lock()
	for _, f := range files {
		d.zombies[f.FileNum] = true
	}
	d.vmu.Unlock()
}
