package db

import (
	"bytes"
	"errors"
	"sort"
	"sync"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
)

// Iterator walks the live keys of a store in ascending key order (and back)
// as of one moment: the snapshot in its ReadOptions, or the moment it was
// made. Positioning methods return whether the iterator is at a key. Key
// and Value are valid until the next positioning call (Close is not one,
// in either direction); copy them to keep them longer. An Iterator is not
// safe for concurrent use; close it when done.
type Iterator struct {
	// s is the iterator's state, nil once Close has given it back to
	// iterStatePool (see Close).
	s *iterState
	// usedClosed is set by a positioning call after such a Close: Error
	// then reports ErrClosed, as a kept state's does.
	usedClosed bool
}

// iterState is an Iterator's state. It is pooled: an iterator that never
// stood at a key and met no error (a scan of an absent prefix or range,
// the case the filters serve) gives it back at Close, so that making such
// an iterator allocates only the small Iterator (issue 17). Any other
// keeps it, so that Key and Value, which may alias its keyArr, stay valid
// after Close.
type iterState struct {
	d     *DB
	iter  *compaction.MergingIterator
	seq   uint64
	ref   readRef
	rs    *readState // ref.rs while the iterator holds it
	dir   int        // +1 forward, -1 reverse
	valid bool
	key   []byte
	value []byte
	err   error
	done  bool
	// keyArr backs key, so a short-lived iterator (one Seek, then Close)
	// does not allocate for it. It is in the state, not in parts: Key is
	// valid after Close, and a state whose key was set is never reused.
	keyArr [64]byte
	// lower and upper are ReadOptions' bounds (copies once the parts are
	// built; nil: unbounded); empty is set when they leave no key.
	lower, upper []byte
	empty        bool
	// none is set when no memtable entry and no table (by its range and
	// filters) can hold a key in the bounds, empty included: the
	// iterator then has no inner iterators (iter is nil) and finds
	// nothing.
	none bool
	// dels holds the range tombstones the iterator's reads must honour
	// (nil: none).
	dels *rangedel.Set

	// parts holds the iterator's inner iterators until Close, which
	// returns them to iterPartsPool.
	parts *iterParts
}

// iterParts are the inner iterators of a typical Iterator in one pooled
// struct, so that making an Iterator allocates only the Iterator (issue
// 17: a prefix scan of an absent prefix is little more than making an
// iterator, and these were five allocations of its eleven). Keeping them
// inside the Iterator instead made it a 2 KiB object whose allocation
// cost more than the five small ones. They are the Iterator's alone:
// nothing outlives Close (Key and Value alias memtable or block memory,
// never these).
type iterParts struct {
	// seekArr backs the internal seek keys of the positioning calls,
	// boundsArr the Iterator's bounds when short.
	seekArr   [72]byte
	boundsArr [48]byte
	// skip holds the key of the last tombstone findNext passed, backed by
	// skipArr when short.
	skip    []byte
	skipArr [64]byte
	// valueBuf holds the value of a reverse step, which findPrev finds
	// only after moving the inner iterator past it. Clearing the parts
	// drops it, never overwrites it: Value stays valid after Close.
	valueBuf []byte
	iters    [12]base.InternalIterator
	heap     [12]int
	merge    compaction.MergingIterator
	mem      memtable.Iterator
	levels   [manifest.NumLevels]levelIter
}

var iterPartsPool = sync.Pool{New: func() any { return new(iterParts) }}

// releaseParts returns the iterator's parts to the pool, cleared so that
// the pool keeps no table, memtable or DB alive.
func (it *iterState) releaseParts() {
	if p := it.parts; p != nil {
		*p = iterParts{}
		iterPartsPool.Put(p)
		it.parts = nil
	}
}

// covered reports whether a range tombstone hides the entry (ukey, seq).
func (it *iterState) covered(ukey []byte, seq uint64) bool {
	return it.dels != nil && it.dels.Covers(ukey, seq, it.seq)
}

// NewIterator returns an iterator over the store. With a nil ReadOptions
// (or no Snapshot) it sees the writes that had returned when it was made.
// Errors (ErrClosed, ErrSnapshotReleased, a table that cannot be opened)
// are reported by the iterator's Error, and its positioning calls return
// false.
func (d *DB) NewIterator(ro *ReadOptions) *Iterator {
	return &Iterator{s: d.newIterState(ro, false)}
}

var iterStatePool = sync.Pool{New: func() any { return new(iterState) }}

// newIterState makes the state of NewIterator's iterator. With keepRS
// (ExplainSeek's trace) an iterator with nothing to merge keeps its read
// state until Close as any other does.
func (d *DB) newIterState(ro *ReadOptions, keepRS bool) *iterState {
	it := iterStatePool.Get().(*iterState)
	it.d, it.dir = d, 1
	// Registered as a read, like every step: Close waits for it before it
	// closes the tables this opens.
	readCell := d.reads.Inc()
	defer d.reads.DecAt(readCell)
	if d.closed.Load() {
		it.err = ErrClosed
		return it
	}
	// The read state before the sequence number, as in Get.
	it.ref = d.loadReadState()
	it.rs = it.ref.rs
	seq, err := d.readSeq(ro)
	if err != nil {
		it.err = err
		it.ref.unref()
		it.rs = nil
		return it
	}
	it.seq = seq
	if it.rs.hasRangeDels() {
		frozen, err := it.rs.rangeDels()
		if err != nil {
			it.err = err
			it.ref.unref()
			it.rs = nil
			return it
		}
		// The memtable's tombstones as of now: later ones are newer
		// than seq.
		it.dels = rangedel.Compose(frozen, it.rs.mem.RangeDels())
	}
	if ro != nil {
		// The caller's slices until the parts are built, which copy them
		// (copyBounds): a none iterator never reads them once NewIterator
		// has returned.
		it.lower, it.upper = ro.LowerBound, ro.UpperBound
		it.empty = it.lower != nil && it.upper != nil && bytes.Compare(it.lower, it.upper) >= 0
	}
	// Bounds within one prefix: each table's prefix filter is asked
	// before anything of the table is read.
	prefix, prefixOK := []byte(nil), false
	if !it.empty && d.opts.Prefix != nil {
		prefix, prefixOK = filter.ScanPrefix(d.opts.Prefix, it.lower, it.upper)
	}
	// Both bounds: each table's range filter is asked as well.
	rangeOK := !it.empty && d.opts.RangeFilter != nil && it.lower != nil && it.upper != nil
	// The tables of each level that may hold a key in the bounds: those
	// that meet them, less those whose filters rule them out.
	var levels [manifest.NumLevels][]*manifest.FileMetadata
	tables := 0
	for level, files := range it.rs.v.Files {
		if len(files) == 0 || it.empty {
			continue
		}
		files = it.overlapping(it.rs.v, level)
		if len(files) > 0 && (prefixOK || rangeOK) {
			var err error
			if files, err = it.filtered(level, files, prefix, prefixOK, rangeOK); err != nil {
				it.err = err
				it.ref.unref()
				it.rs = nil
				return it
			}
		}
		levels[level] = files
		tables += len(files)
	}
	// No table left and no memtable entry in the bounds (an absent
	// prefix or range, the case the filters are for): nothing to merge,
	// and the positioning calls find nothing without building the inner
	// iterators. They read nothing of the read state either, so it is
	// released now: such an iterator pins no table, and its Close has no
	// reference to drop.
	if it.empty || tables == 0 && !it.memMayHold(it.rs.mem) && !it.memMayHold(it.rs.imm) {
		it.none = true
		if !keepRS {
			it.ref.unref()
			it.rs = nil
		}
		return it
	}
	p := iterPartsPool.Get().(*iterParts)
	it.parts = p
	it.copyBounds(p)
	// Room for both memtables, every L0 table and one levelIter a level.
	iters := p.iters[:1]
	if n := 2 + len(levels) + len(levels[0]); n > len(p.iters) {
		iters = make([]base.InternalIterator, 1, n)
	}
	it.rs.mem.InitIterator(&p.mem)
	iters[0] = &p.mem
	if it.rs.imm != nil {
		iters = append(iters, it.rs.imm.NewIterator())
	}
	for level, files := range levels {
		if len(files) == 0 {
			continue
		}
		if level == 0 {
			for _, f := range files {
				r, err := d.tables.get(f)
				if err != nil {
					it.err = err
					for _, c := range iters {
						c.Close()
					}
					it.ref.unref()
					it.rs = nil
					return it
				}
				ti := r.NewIterator()
				ti.SetBounds(it.lower, it.upper)
				iters = append(iters, ti)
			}
			continue
		}
		li := &p.levels[level]
		*li = levelIter{d: d, files: files, lower: it.lower, upper: it.upper}
		iters = append(iters, li)
	}
	p.merge.Init(iters, p.heap[:0])
	it.iter = &p.merge
	return it
}

// copyBounds replaces the bounds, until now the caller's slices, with
// copies: in p.boundsArr when both fit.
func (it *iterState) copyBounds(p *iterParts) {
	buf := p.boundsArr[:0]
	if n := len(it.lower) + len(it.upper); n > len(p.boundsArr) {
		buf = make([]byte, 0, n) // not nil: an empty bound stays one
	}
	if it.lower != nil {
		buf = append(buf, it.lower...)
		it.lower = buf[:len(buf):len(buf)]
		buf = buf[len(buf):]
	}
	if it.upper != nil {
		buf = append(buf, it.upper...)
		it.upper = buf[:len(buf):len(buf)]
	}
}

// memMayHold reports whether memtable m (nil: none) holds an entry of any
// sequence number, tombstones included, whose user key lies in the
// iterator's bounds. Entries newer than the iterator's sequence number
// count too: the answer only has to be "no" when nothing visible is there.
func (it *iterState) memMayHold(m *memtable.MemTable) bool {
	if m == nil || m.Empty() {
		return false
	}
	var mi memtable.Iterator
	m.InitIterator(&mi)
	var ok bool
	if it.lower != nil {
		var seek [72]byte
		ok = mi.SeekGE(base.AppendInternalKey(seek[:0], it.lower, base.MaxSeqNum, base.KindSeek))
	} else {
		ok = mi.First()
	}
	return ok && (it.upper == nil || bytes.Compare(base.UserKey(mi.Key()), it.upper) < 0)
}

// filtered returns the files that may hold a key in the bounds by their
// prefix filter (when usePrefix: every key in the bounds has prefix) and
// their range filter (when useRange). A file without such a filter, or
// with one of another extractor or policy, is kept.
func (it *iterState) filtered(level int, files []*manifest.FileMetadata, prefix []byte, usePrefix, useRange bool) ([]*manifest.FileMetadata, error) {
	name := it.d.opts.prefixName
	var out []*manifest.FileMetadata
	lm := &it.d.m.levels[level]
	for i, f := range files {
		r, err := it.d.tables.get(f)
		if err != nil {
			return nil, err
		}
		keep := true
		if usePrefix {
			if checked, may := r.PrefixCheck(name, prefix); checked {
				if may {
					lm.prefixPassed.Add(1)
				} else {
					lm.prefixSkipped.Add(1)
					keep = false
				}
			}
		}
		if keep && useRange && r.HasRangeFilter() {
			if r.RangeMayContain(it.lower, it.upper) {
				lm.rangePassed.Add(1)
			} else {
				lm.rangeSkipped.Add(1)
				keep = false
			}
		}
		switch {
		case keep && out != nil:
			out = append(out, f)
		case !keep && out == nil:
			// The files before i, capped: an append copies them rather
			// than write into the version's slice. No allocation when
			// every file is skipped.
			out = files[:i:i]
		}
	}
	if out == nil {
		return files, nil
	}
	return out, nil
}

// overlapWalk is how many tables overlapping compares with the upper
// bound one by one before it searches for the end of the run.
const overlapWalk = 4

// overlapping returns the files of v's level whose user-key range meets
// the bounds. For a level >= 1, sorted and disjoint, that is a contiguous
// run, found by the level's index (manifest.Version.SearchLargest). The
// result may share the version's array: callers must not write to it.
func (it *iterState) overlapping(v *manifest.Version, level int) []*manifest.FileMetadata {
	files := v.Files[level]
	if it.lower == nil && it.upper == nil {
		return files
	}
	if level > 0 {
		lo, hi := 0, len(files)
		if it.lower != nil {
			lo = v.SearchLargest(level, it.lower)
		}
		if it.upper != nil {
			// The smallest keys of a sorted level do not decrease, so the
			// run ends at the first table from lo that starts at or past
			// upper. Short bounds (a prefix, a short range) meet one or
			// two tables: a few comparisons find the end where a second
			// search cost about 40 ns.
			hi = lo
			for hi < len(files) && hi-lo < overlapWalk && bytes.Compare(base.UserKey(files[hi].Smallest), it.upper) < 0 {
				hi++
			}
			if hi-lo == overlapWalk {
				hi = max(hi, v.SearchSmallest(level, it.upper))
			}
		}
		return files[lo:hi:hi]
	}
	in := func(f *manifest.FileMetadata) bool {
		return (it.lower == nil || bytes.Compare(base.UserKey(f.Largest), it.lower) >= 0) &&
			(it.upper == nil || bytes.Compare(base.UserKey(f.Smallest), it.upper) < 0)
	}
	var out []*manifest.FileMetadata
	for i, f := range files {
		switch keep := in(f); {
		case keep && out != nil:
			out = append(out, f)
		case !keep && out == nil:
			out = files[:i:i] // capped: an append copies
		}
	}
	if out == nil {
		return files
	}
	return out
}

// enter starts a positioning call: it registers the call as a read (Close
// waits for it before closing tables), then checks that the iterator and
// the DB are usable. On true the caller must call exit(cell).
func (it *iterState) enter() (int, bool) {
	if it.done && it.err == nil {
		it.err = ErrClosed // used after its own Close
	}
	if it.err != nil {
		it.valid = false
		return 0, false
	}
	cell := it.d.reads.Inc()
	// After the increment: a Close that set closed before it waits for
	// this read; one that sets it later finds it counted.
	if it.d.closed.Load() {
		it.d.reads.DecAt(cell)
		it.err, it.valid = ErrClosed, false
		return 0, false
	}
	return cell, true
}

func (it *iterState) exit(cell int) { it.d.reads.DecAt(cell) }

// noneStep is a positioning call of an iterator with nothing to merge
// (none): it finds nothing and reads no table, so it is not registered
// as a read; it still reports ErrClosed after the iterator's or the DB's
// Close, as enter does.
func (it *iterState) noneStep(dir int) bool {
	if it.err == nil && (it.done || it.d.closed.Load()) {
		it.err = ErrClosed
	}
	if it.err == nil {
		it.dir = dir
	}
	it.valid = false
	return false
}

func (it *iterState) checkErr() bool {
	if err := it.iter.Error(); err != nil {
		it.err, it.valid = err, false
	}
	return it.valid
}

// first is First.
func (it *iterState) first() bool {
	if it.none {
		return it.noneStep(1)
	}
	cell, ok := it.enter()
	if !ok {
		return false
	}
	defer it.exit(cell)
	it.dir = 1
	if it.lower != nil {
		it.iter.SeekGE(base.AppendInternalKey(it.parts.seekArr[:0], it.lower, it.seq, base.KindSeek))
	} else {
		it.iter.First()
	}
	it.findNext(false, nil)
	return it.checkErr()
}

// last is Last.
func (it *iterState) last() bool {
	if it.none {
		return it.noneStep(-1)
	}
	cell, ok := it.enter()
	if !ok {
		return false
	}
	defer it.exit(cell)
	it.dir = -1
	if it.upper != nil {
		// Every entry of a user key < upper sorts before (upper, the
		// largest trailer).
		it.iter.SeekLT(base.AppendInternalKey(it.parts.seekArr[:0], it.upper, base.MaxSeqNum, base.KindSeek))
	} else {
		it.iter.Last()
	}
	it.findPrev()
	return it.checkErr()
}

// seek is Seek.
func (it *iterState) seek(key []byte) bool {
	if it.none {
		return it.noneStep(1)
	}
	cell, ok := it.enter()
	if !ok {
		return false
	}
	defer it.exit(cell)
	it.dir = 1
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	it.iter.SeekGE(base.AppendInternalKey(it.parts.seekArr[:0], key, it.seq, base.KindSeek))
	it.findNext(false, nil)
	return it.checkErr()
}

// next is Next.
func (it *iterState) next() bool {
	if !it.valid && !it.done {
		return false
	}
	cell, ok := it.enter()
	if !ok {
		return false
	}
	defer it.exit(cell)
	cur := it.key
	if it.dir < 0 {
		// The inner iterator is before the current key's entries.
		it.dir = 1
		if !it.iter.Valid() {
			if it.lower != nil {
				it.iter.SeekGE(base.AppendInternalKey(it.parts.seekArr[:0], it.lower, it.seq, base.KindSeek))
			} else {
				it.iter.First()
			}
		} else {
			it.iter.Next()
		}
	} else {
		it.iter.Next()
	}
	it.findNext(true, cur)
	return it.checkErr()
}

// prev is Prev.
func (it *iterState) prev() bool {
	if !it.valid && !it.done {
		return false
	}
	cell, ok := it.enter()
	if !ok {
		return false
	}
	defer it.exit(cell)
	if it.dir > 0 {
		// The inner iterator is at the current key's newest visible entry;
		// step back past every entry of that key.
		it.dir = -1
		for {
			if !it.iter.Prev() {
				it.valid = false
				return it.checkErr()
			}
			if bytes.Compare(base.UserKey(it.iter.Key()), it.key) < 0 {
				break
			}
		}
	}
	it.findPrev()
	return it.checkErr()
}

// findNext moves forward to the newest visible Set of a user key that is
// not hidden by a newer tombstone; with skipping, keys <= skip are passed.
// The key found is copied into it.key, which may alias skip: skip is only
// read before the copy.
func (it *iterState) findNext(skipping bool, skip []byte) {
	// A tombstone's key is kept in parts.skip: the inner iterator's key
	// buffer changes on Next.
	for ; it.iter.Valid(); it.iter.Next() {
		ukey, seq, kind, ok := base.ParseInternalKey(it.iter.Key())
		if !ok {
			it.err = base.CorruptionErrorf("iterator met a malformed internal key")
			it.valid = false
			return
		}
		if it.upper != nil && bytes.Compare(ukey, it.upper) >= 0 {
			break
		}
		if seq > it.seq {
			continue
		}
		if skipping && bytes.Compare(ukey, skip) <= 0 {
			continue
		}
		if kind == base.KindDelete || it.covered(ukey, seq) {
			p := it.parts
			if p.skip == nil {
				p.skip = p.skipArr[:0]
			}
			p.skip = append(p.skip[:0], ukey...)
			skip, skipping = p.skip, true
			continue
		}
		if it.key == nil {
			it.key = it.keyArr[:0]
		}
		it.key = append(it.key[:0], ukey...)
		// The value aliases memtable memory or the data block the inner
		// iterator stands in, which that iterator keeps referenced until
		// it moves (at the next positioning call): no copy is needed for
		// the Key/Value contract.
		it.value = it.iter.Value()
		it.valid = true
		return
	}
	it.valid = false
}

// findPrev moves backward to the previous live key. Walking backward the
// entries of one user key arrive oldest first, so the last visible entry
// seen for a key before moving to a smaller key decides it.
func (it *iterState) findPrev() {
	live := false // the newest visible entry of it.key so far is a live Set
	for it.iter.Valid() {
		ukey, seq, k, ok := base.ParseInternalKey(it.iter.Key())
		if !ok {
			it.err = base.CorruptionErrorf("iterator met a malformed internal key")
			it.valid = false
			return
		}
		if it.lower != nil && bytes.Compare(ukey, it.lower) < 0 {
			break // it.key, if any, is decided
		}
		if seq <= it.seq {
			if live && bytes.Compare(ukey, it.key) < 0 {
				break // it.key is decided and live
			}
			live = k == base.KindSet && !it.covered(ukey, seq)
			it.key = append(it.key[:0], ukey...)
			if k == base.KindSet {
				// Copied: the Prev below moves the inner iterator off
				// this entry, and maybe off its block, which may then be
				// recycled.
				p := it.parts
				p.valueBuf = append(p.valueBuf[:0], it.iter.Value()...)
				it.value = p.valueBuf
			}
		}
		it.iter.Prev()
	}
	it.valid = live
}

// state returns the iterator's state, or nil (and records the use) when
// Close gave it back.
func (it *Iterator) state() *iterState {
	if it.s == nil {
		it.usedClosed = true
	}
	return it.s
}

// First moves to the first key (the first >= the lower bound).
func (it *Iterator) First() bool {
	s := it.state()
	return s != nil && s.first()
}

// Last moves to the last key (the last < the upper bound).
func (it *Iterator) Last() bool {
	s := it.state()
	return s != nil && s.last()
}

// Seek moves to the first key >= key (and >= the lower bound).
func (it *Iterator) Seek(key []byte) bool {
	s := it.state()
	return s != nil && s.seek(key)
}

// Next moves to the next key. It returns false at the end.
func (it *Iterator) Next() bool {
	s := it.state()
	return s != nil && s.next()
}

// Prev moves to the previous key. It returns false at the start.
func (it *Iterator) Prev() bool {
	s := it.state()
	return s != nil && s.prev()
}

// Valid reports whether the iterator is at a key.
func (it *Iterator) Valid() bool { return it.s != nil && it.s.valid }

// Key returns the current key.
func (it *Iterator) Key() []byte {
	if it.s == nil {
		return nil
	}
	return it.s.key
}

// Value returns the current value.
func (it *Iterator) Value() []byte {
	if it.s == nil {
		return nil
	}
	return it.s.value
}

// Error returns the error that stopped the iterator, if any: a read error,
// ErrCorruption, or ErrClosed after the DB was closed.
func (it *Iterator) Error() error {
	switch {
	case it.s != nil:
		return it.s.err
	case it.usedClosed:
		return ErrClosed
	}
	return nil
}

// Close releases the iterator and returns Error(). A second Close does
// nothing and returns ErrClosed, as a second DB.Close does (see "Closing"
// in the package documentation); a positioning call after Close returns
// false and makes Error report ErrClosed.
func (it *Iterator) Close() error {
	s := it.s
	if s == nil {
		return ErrClosed
	}
	err := s.close()
	// A state that never held a key or a value, and has no error to
	// report, has nothing Key, Value or Error must keep: it is reused.
	if err == nil && s.key == nil && s.value == nil {
		it.s = nil
		*s = iterState{}
		iterStatePool.Put(s)
	}
	return err
}

// close releases the state's inner iterators, tables and read state, and
// returns its error; ErrClosed when already closed.
func (it *iterState) close() error {
	if it.done {
		return ErrClosed
	}
	it.done, it.valid = true, false
	defer it.releaseParts()
	if it.iter != nil {
		if err := it.iter.Close(); it.err == nil && err != nil && !errors.Is(err, ErrClosed) {
			it.err = err
		}
		it.iter = nil
	}
	if it.rs != nil {
		it.ref.unref()
		it.rs = nil
	}
	return it.err
}

// levelIter concatenates the tables of one level >= 1, whose key ranges
// do not overlap, opening each only when the iteration reaches it.
type levelIter struct {
	d     *DB
	files []*manifest.FileMetadata
	idx   int
	cur   *sstable.Iterator
	err   error
	// compaction makes it open sstable.Reader.NewCompactionIterator: one
	// pass, no block cache.
	compaction bool
	// lower and upper are a bounded Iterator's bounds, passed to each
	// table's iterator.
	lower, upper []byte
}

func (l *levelIter) open(i int) bool {
	if l.cur != nil {
		if err := l.cur.Close(); err != nil && l.err == nil {
			l.err = err
		}
		l.cur = nil
	}
	l.idx = i
	if i < 0 || i >= len(l.files) || l.err != nil {
		return false
	}
	r, err := l.d.tables.get(l.files[i])
	if err != nil {
		l.err = err
		return false
	}
	if l.compaction {
		l.cur = r.NewCompactionIterator()
	} else {
		ti := r.NewIterator()
		ti.SetBounds(l.lower, l.upper)
		l.cur = ti
	}
	return true
}

func (l *levelIter) settle(ok bool, forward bool) bool {
	for !ok {
		if l.cur != nil && l.cur.Error() != nil {
			l.err = l.cur.Error()
			return false
		}
		next := l.idx - 1
		if forward {
			next = l.idx + 1
		}
		if !l.open(next) {
			return false
		}
		if forward {
			ok = l.cur.First()
		} else {
			ok = l.cur.Last()
		}
	}
	return true
}

func (l *levelIter) First() bool {
	if !l.open(0) {
		return false
	}
	return l.settle(l.cur.First(), true)
}

func (l *levelIter) Last() bool {
	if !l.open(len(l.files) - 1) {
		return false
	}
	return l.settle(l.cur.Last(), false)
}

func (l *levelIter) SeekGE(ikey []byte) bool {
	i := sort.Search(len(l.files), func(i int) bool { return base.CompareInternal(l.files[i].Largest, ikey) >= 0 })
	if !l.open(i) {
		return false
	}
	return l.settle(l.cur.SeekGE(ikey), true)
}

func (l *levelIter) SeekLT(ikey []byte) bool {
	i := sort.Search(len(l.files), func(i int) bool { return base.CompareInternal(l.files[i].Smallest, ikey) >= 0 }) - 1
	if !l.open(i) {
		return false
	}
	return l.settle(l.cur.SeekLT(ikey), false)
}

func (l *levelIter) Next() bool { return l.settle(l.cur.Next(), true) }
func (l *levelIter) Prev() bool { return l.settle(l.cur.Prev(), false) }
func (l *levelIter) Valid() bool {
	return l.err == nil && l.cur != nil && l.cur.Valid()
}
func (l *levelIter) Key() []byte   { return l.cur.Key() }
func (l *levelIter) Value() []byte { return l.cur.Value() }
func (l *levelIter) Error() error {
	if l.err != nil {
		return l.err
	}
	if l.cur != nil {
		return l.cur.Error()
	}
	return nil
}
func (l *levelIter) Close() error {
	err := l.Error()
	if l.cur != nil {
		l.cur.Close()
		l.cur = nil
	}
	return err
}
