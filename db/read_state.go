package db

import (
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/memtable"
)

// readState is an immutable view of what a read must consult: the
// memtables and the version of the tables. It is reference counted: the DB
// holds it while it is current, and every Get and iterator holds a
// reference while it reads. The tables of a version are deleted only after
// the last read state using that version is released.
//
// Every Get takes and drops a reference, from whichever core it runs on,
// so the count is striped over cache lines (base.Counter) instead of one
// shared word that two cores would pass back and forth. Each reference is
// dropped in the cell it was taken in, so no cell goes negative. When the
// DB moves on to a newer state it retires this one; from then on a new
// reference backs off, and whoever finds the count at zero after that
// (the retiring DB or the last reader) releases the state, exactly once.
// A reader that took its reference before the retirement is always seen by
// that zero check: it read retired as false after its increment, so its
// increment came before the retirement (atomics are sequentially
// consistent) and so before every check that follows it.
type readState struct {
	d        *DB
	refs     base.Counter
	retired  atomic.Bool
	released atomic.Bool
	mem      *memtable.MemTable
	imm      *memtable.MemTable // nil when none
	v        *manifest.Version

	// frozenDels reports whether imm or a table of v holds range
	// tombstones; when it is false (and the mutable memtable holds none)
	// reads skip every tombstone check.
	frozenDels bool
	// dels holds the tombstones of imm and v's tables once delsLoaded is
	// set; delsMu serializes their loading. A load that fails (a table
	// that cannot be opened) is not remembered: the next read tries
	// again, so a passing fault does not fail every read of the state.
	delsMu     sync.Mutex
	delsLoaded atomic.Bool
	dels       *rangedel.Set
}

// rangeDels returns the range tombstones of the state's frozen memtable
// and tables, loading the tables' on first use. The mutable memtable's
// tombstones, which grow while the state is current, are not included.
func (rs *readState) rangeDels() (*rangedel.Set, error) {
	if !rs.frozenDels {
		return nil, nil
	}
	if rs.delsLoaded.Load() {
		return rs.dels, nil
	}
	rs.delsMu.Lock()
	defer rs.delsMu.Unlock()
	if rs.delsLoaded.Load() {
		return rs.dels, nil
	}
	var ts []rangedel.Tombstone
	if rs.imm != nil {
		ts = append(ts, rs.imm.RangeDelTombstones()...)
	}
	for _, files := range rs.v.Files {
		for _, f := range files {
			if f.RangeDels == 0 {
				continue
			}
			r, err := rs.d.tables.get(f)
			if err != nil {
				return nil, wrapf(err, "loading the range tombstones of table %06d", f.FileNum)
			}
			ts = append(ts, r.RangeDels()...)
		}
	}
	rs.dels = rangedel.Build(ts)
	rs.delsLoaded.Store(true)
	return rs.dels, nil
}

// hasRangeDels reports whether a read of the state must consult range
// tombstones.
func (rs *readState) hasRangeDels() bool {
	return rs.frozenDels || rs.mem.HasRangeDels()
}

// versionHasRangeDels reports whether a table of v holds range tombstones.
func versionHasRangeDels(v *manifest.Version) bool {
	for _, files := range v.Files {
		for _, f := range files {
			if f.RangeDels > 0 {
				return true
			}
		}
	}
	return false
}

// readRef is one read's reference to a read state.
type readRef struct {
	rs   *readState
	cell int
}

// tryRef takes a reference unless the state was already retired.
func (rs *readState) tryRef() (readRef, bool) {
	cell := rs.refs.Inc()
	if rs.retired.Load() {
		rs.drop(cell, false)
		return readRef{}, false
	}
	return readRef{rs: rs, cell: cell}, true
}

// unref drops the reference.
func (r readRef) unref() { r.rs.drop(r.cell, false) }

// unrefAsync drops the reference of a point read. Should it be the last
// of a retired state, the release (which unmaps and deletes the tables
// compactions removed) runs on a goroutine of its own, so the Get that
// happened to finish last never waits on munmap and unlink: before, a
// Get could pay for every table of a compaction (issue 20's stalls).
func (r readRef) unrefAsync() { r.rs.drop(r.cell, true) }

func (rs *readState) drop(cell int, async bool) {
	rs.refs.DecAt(cell)
	if rs.retired.Load() {
		rs.maybeRelease(async)
	}
}

// retire drops the DB's hold on the state once a newer one is current.
func (rs *readState) retire() {
	rs.retired.Store(true)
	rs.maybeRelease(false)
}

// maybeRelease releases the state's version once no reference is left,
// on a goroutine of its own when async (Close waits for reads to finish
// and then for releases, so the Add happens before its Wait).
func (rs *readState) maybeRelease(async bool) {
	if rs.refs.Load() != 0 || !rs.released.CompareAndSwap(false, true) {
		return
	}
	if !async {
		rs.d.releaseVersion(rs.v)
		return
	}
	rs.d.releases.Add(1)
	go func() {
		defer rs.d.releases.Done()
		rs.d.releaseVersion(rs.v)
	}()
}

// loadReadState returns the current read state with a reference taken.
func (d *DB) loadReadState() readRef {
	for {
		if r, ok := d.rs.Load().tryRef(); ok {
			return r
		}
	}
}

// publishLocked installs a new read state from the fields guarded by d.mu
// and releases the DB's reference to the previous one.
func (d *DB) publishLocked() {
	rs := &readState{d: d, mem: d.mem, imm: d.imm, v: d.vs.current}
	rs.frozenDels = (rs.imm != nil && rs.imm.NumRangeDels() > 0) || versionHasRangeDels(rs.v)
	d.vmu.Lock()
	d.versionRefs[rs.v]++
	d.vmu.Unlock()
	if old := d.rs.Swap(rs); old != nil {
		old.retire()
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
		if err := d.removeTable(n); err != nil {
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
