package memtable

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// maxHeight bounds the towers; with a branching factor of 4 it comfortably
// indexes tens of millions of entries.
const maxHeight = 12

// MemTable is a sorted, append-only set of internal-key entries. See the
// package documentation for its concurrency contract: one Add at a time,
// any number of concurrent lock-free readers.
type MemTable struct {
	slabs  atomic.Pointer[[][]byte] // published slab table
	large  atomic.Pointer[[][]byte] // published large-value table
	height atomic.Int32             // levels in use, 1..maxHeight
	count  atomic.Int64
	size   atomic.Int64
	// rangeDels is the published list of range tombstones (nil: none).
	rangeDels atomic.Pointer[rangeDelList]
	// filter is the filter of the user keys (filter.go); nil for none.
	filter []atomic.Uint64

	// Writer-only state.
	tombs  []rangedel.Tombstone
	layers []*rangedel.Set // tombs as sets of doubling sizes
	rng    uint64
	w      arenaWriter
}

// New returns an empty memtable.
func New() *MemTable {
	m := &MemTable{rng: 0x9e3779b97f4a7c15}
	m.w.slabSize = minSlabSize
	for level := range m.w.splicePrev {
		m.w.splicePrev[level] = headRef
	}
	m.w.slabs = [][]byte{headSlab()}
	m.publishSlabs(m.w.slabs)
	m.publishLarge(nil)
	m.height.Store(1)
	return m
}

func (m *MemTable) publishSlabs(s [][]byte) { m.slabs.Store(&s) }
func (m *MemTable) publishLarge(s [][]byte) { m.large.Store(&s) }

// randomHeight draws a tower height: 1 with probability 3/4, each further
// level with probability 1/4, capped at maxHeight.
func (m *MemTable) randomHeight() int {
	// xorshift64*; the high bits of the product are the well-mixed ones.
	x := m.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	m.rng = x
	r := (x * 0x2545f4914f6cdd1d) >> 32
	h := 1
	for h < maxHeight && r&3 == 0 {
		h++
		r >>= 2
	}
	return h
}

// Add inserts the entry (ukey, seq, kind) → value, copying ukey and value.
// Calls to Add must not overlap; readers may run concurrently. seq must not
// repeat within a memtable and must be at most base.MaxSeqNum.
func (m *MemTable) Add(seq uint64, kind base.Kind, ukey, value []byte) {
	trailer := base.MakeTrailer(seq, kind)
	h := m.randomHeight()
	klen := len(ukey) + base.TrailerLen

	// Place the value: inline after the key, or on its own.
	inline := len(value)
	meta := uint32(h)
	valField := uint32(len(value))
	if inline > 0 && hdrSize+linkSize*h+klen+inline > m.w.inlineLimit() {
		inline = 0
		meta |= metaLargeValue
		valField = uint32(len(m.w.large))
		m.w.large = append(m.w.large, append([]byte(nil), value...))
		m.publishLarge(m.w.large)
	}
	size := nodeSize(h, klen, inline)
	ref, nd := m.w.allocNode(size, m.publishSlabs)

	// Build the node completely before it becomes reachable.
	binary.LittleEndian.PutUint32(nd[0:], uint32(klen))
	binary.LittleEndian.PutUint32(nd[4:], valField)
	binary.LittleEndian.PutUint32(nd[8:], meta)
	ks := hdrSize + linkSize*h
	copy(nd[ks:], ukey)
	binary.LittleEndian.PutUint64(nd[ks+len(ukey):], trailer)
	copy(nd[ks+klen:], value[:inline])

	m.filterAdd(ukey) // before the node can be found
	prevs, nexts := m.findSplice(ukey, trailer)
	if cur := int(m.height.Load()); h > cur {
		// Readers that see the new height before the node is linked there
		// find no successor at the head and simply descend.
		m.height.Store(int32(h))
	}
	for level := 0; level < h; level++ {
		link(nd, level).Store(nexts[level])
	}
	// Publish bottom-up: once the node is reachable at level 0 it is
	// complete, and each higher level only adds a shortcut to an already
	// ordered list.
	r := reader{m: m, slabs: m.w.slabs}
	for level := 0; level < h; level++ {
		link(r.node(prevs[level]), level).Store(ref)
	}
	// The node's own neighbours are the splice for the next Add.
	for level := 0; level < h; level++ {
		prevs[level] = ref
	}
	m.w.splicePrev, m.w.spliceNext, m.w.last = prevs, nexts, ref

	m.count.Add(1)
	m.size.Add(int64(size + len(value) - inline))
}

// rangeDelList is what a memtable publishes of its tombstones: the list
// added so far and a set answering for them.
type rangeDelList struct {
	ts  []rangedel.Tombstone
	set *rangedel.Set
}

// AddRangeDel records the range tombstone [start, end)#seq, copying both
// keys. Like Add, calls must not overlap each other or Add; readers may
// run concurrently. It adds len(start)+len(end)+MaxEntryOverhead at most
// to ApproximateMemoryUsage. start must sort before end.
//
// The tombstones are kept as sets of doubling sizes (the logarithmic
// method): adding one merges the smallest sets whose sizes are within a
// factor of two, so n DeleteRange calls cost O(n log² n) in all, and a
// lookup asks O(log n) sets, however reads and DeleteRange calls
// alternate.
func (m *MemTable) AddRangeDel(seq uint64, start, end []byte) {
	keys := make([]byte, 0, len(start)+len(end))
	keys = append(append(keys, start...), end...)
	t := rangedel.Tombstone{Start: keys[:len(start):len(start)], End: keys[len(start):], Seq: seq}
	// Readers hold earlier prefixes of m.tombs, which append never changes.
	m.tombs = append(m.tombs, t)
	m.layers = append(m.layers, rangedel.Build([]rangedel.Tombstone{t}))
	for n := len(m.layers); n >= 2 && m.layers[n-2].Len() <= 2*m.layers[n-1].Len(); n = len(m.layers) {
		merged := rangedel.Build(append(append([]rangedel.Tombstone(nil), m.layers[n-2].Tombstones()...), m.layers[n-1].Tombstones()...))
		m.layers = append(m.layers[:n-2], merged)
	}
	m.rangeDels.Store(&rangeDelList{ts: m.tombs[:len(m.tombs):len(m.tombs)], set: rangedel.Compose(m.layers...)})
	m.count.Add(1)
	m.size.Add(int64(len(keys) + MaxEntryOverhead))
}

// RangeDels returns the memtable's range tombstones as of the call, nil
// when it holds none. The set does not change afterwards; tombstones added
// later are in later calls' sets.
func (m *MemTable) RangeDels() *rangedel.Set {
	if l := m.rangeDels.Load(); l != nil {
		return l.set
	}
	return nil
}

// RangeDelTombstones returns the tombstones added so far, in the order
// they were added. The caller must not modify them.
func (m *MemTable) RangeDelTombstones() []rangedel.Tombstone {
	if l := m.rangeDels.Load(); l != nil {
		return l.ts
	}
	return nil
}

// HasRangeDels reports whether a range tombstone was added.
func (m *MemTable) HasRangeDels() bool { return m.rangeDels.Load() != nil }

// NumRangeDels returns the number of range tombstones added.
func (m *MemTable) NumRangeDels() int {
	if l := m.rangeDels.Load(); l != nil {
		return len(l.ts)
	}
	return 0
}

// findSplice returns, for every level, the last node before the key
// (ukey, trailer) and its successor there: the links a new node goes
// between. Levels at or above the list's height get (head, nil).
//
// It starts from the previous Add's splice. That splice is still exact for
// any key after the previously added one (every splice node sorts before
// it), at every level from the lowest one whose successor does not sort
// before the key upward, because higher levels skip further. So ascending
// inserts cost one or two comparisons, and other inserts search down from
// the lowest valid level, which is never worse than searching from the
// head.
func (m *MemTable) findSplice(ukey []byte, trailer uint64) (prevs, nexts [maxHeight]uint32) {
	r := reader{m: m, slabs: m.w.slabs}
	prevs, nexts = m.w.splicePrev, m.w.spliceNext
	valid := 0 // lowest level whose splice still brackets the key
	if m.w.last == nilRef || before(r.node(m.w.last), ukey, trailer) {
		for valid < maxHeight && nexts[valid] != nilRef && before(r.node(nexts[valid]), ukey, trailer) {
			valid++
		}
	} else {
		valid = int(m.height.Load())
		for level := valid; level < maxHeight; level++ {
			prevs[level], nexts[level] = headRef, nilRef
		}
	}
	if valid > 0 {
		start := headRef
		if valid < maxHeight {
			start = prevs[valid]
		}
		r.descend(start, valid-1, ukey, trailer, &prevs, &nexts)
	}
	return prevs, nexts
}

// Get returns the newest entry for ukey whose sequence number is at most seq
// (seq above base.MaxSeqNum is treated as base.MaxSeqNum). found is false
// when there is no such entry; kind == base.KindDelete means ukey is deleted
// as of seq. value aliases memtable memory, which is never modified: callers
// that keep it past the memtable's life copy it. Get does not allocate.
func (m *MemTable) Get(ukey []byte, seq uint64) (value []byte, kind base.Kind, found bool) {
	if m.Empty() {
		// A store just opened, or opened read-only: the descent through
		// the empty head's levels was about 100 instructions a Get. An
		// entry counts before its Add returns, so before its write is
		// visible.
		return nil, 0, false
	}
	if seq > base.MaxSeqNum {
		seq = base.MaxSeqNum
	}
	r := reader{m: m, slabs: *m.slabs.Load()}
	_, next := r.findLT(ukey, base.MakeTrailer(seq, base.KindSeek), nil, nil)
	if next == nilRef {
		return nil, 0, false
	}
	nd := r.node(next)
	ik := nodeIKey(nd)
	n := len(ik) - base.TrailerLen
	if !bytes.Equal(ik[:n], ukey) {
		return nil, 0, false
	}
	return r.value(nd), base.Kind(ik[n]), true // the trailer's low byte is the kind
}

// GetEntry is Get that also returns the entry's sequence number, which a
// read must compare with the range tombstones that cover ukey.
func (m *MemTable) GetEntry(ukey []byte, seq uint64) (value []byte, entrySeq uint64, kind base.Kind, found bool) {
	if seq > base.MaxSeqNum {
		seq = base.MaxSeqNum
	}
	r := reader{m: m, slabs: *m.slabs.Load()}
	_, next := r.findLT(ukey, base.MakeTrailer(seq, base.KindSeek), nil, nil)
	if next == nilRef {
		return nil, 0, 0, false
	}
	nd := r.node(next)
	ik := nodeIKey(nd)
	n := len(ik) - base.TrailerLen
	if !bytes.Equal(ik[:n], ukey) {
		return nil, 0, 0, false
	}
	t := binary.LittleEndian.Uint64(ik[n:])
	return r.value(nd), t >> 8, base.Kind(t), true
}

// ApproximateMemoryUsage returns the bytes held by the entries: node
// headers and towers, keys with their trailers, and values. The db flushes
// the memtable when this passes its write buffer size, and must keep it at
// or below MaxMemoryUsage. The unused tails of slabs are not counted, so
// the true footprint is somewhat larger (see arena.go).
func (m *MemTable) ApproximateMemoryUsage() int { return int(m.size.Load()) }

// Len returns the number of entries: point entries and range tombstones.
func (m *MemTable) Len() int { return int(m.count.Load()) }

// Empty reports whether the memtable holds no entries.
func (m *MemTable) Empty() bool { return m.count.Load() == 0 }

// NewIterator returns an unpositioned iterator over the memtable. It sees
// every entry added before the call and may see entries added while it is
// in use.
func (m *MemTable) NewIterator() *Iterator {
	it := new(Iterator)
	m.InitIterator(it)
	return it
}

// InitIterator makes *it an unpositioned iterator over the memtable, as
// NewIterator does, for a caller that keeps the iterator inside a larger
// struct and so saves its allocation.
func (m *MemTable) InitIterator(it *Iterator) {
	*it = Iterator{r: reader{m: m, slabs: *m.slabs.Load()}}
}

// reader resolves node references against a snapshot of the slab table,
// refreshing the snapshot when it meets a reference to a newer slab. A
// reference is only ever loaded after the slab holding it was published,
// so one refresh always suffices.
type reader struct {
	m     *MemTable
	slabs [][]byte
}

func (r *reader) node(ref uint32) []byte {
	i := int(ref >> offBits)
	if i >= len(r.slabs) {
		r.slabs = *r.m.slabs.Load()
	}
	return r.slabs[i][(ref&offMask)<<2:]
}

func (r *reader) value(nd []byte) []byte {
	v := le32(nd[4:])
	if le32(nd[8:])&metaLargeValue != 0 {
		b := (*r.m.large.Load())[v]
		return b[:len(b):len(b)]
	}
	vs := nodeKeyStart(nd) + int(le32(nd))
	ve := vs + int(v)
	return nd[vs:ve:ve]
}

// findLT returns the last node sorting before the internal key (ukey,
// trailer) (headRef when there is none) and the level-0 successor it saw:
// the first node at or after the key, nilRef when there is none. When prevs
// is non-nil it receives the predecessor at every level below the current
// height and nexts the successor seen there.
func (r *reader) findLT(ukey []byte, trailer uint64, prevs, nexts *[maxHeight]uint32) (prev, next uint32) {
	return r.descend(headRef, int(r.m.height.Load())-1, ukey, trailer, prevs, nexts)
}

// descend is findLT starting at node x on level top, where x sorts before
// the key.
func (r *reader) descend(x uint32, top int, ukey []byte, trailer uint64, prevs, nexts *[maxHeight]uint32) (prev, next uint32) {
	xnd := r.node(x)
	known := nilRef // the last node found not to sort before the key
	for level := top; level >= 0; level-- {
		for {
			nx := link(xnd, level).Load()
			if nx == nilRef || nx == known {
				known = nx
				break
			}
			nnd := r.node(nx)
			if !before(nnd, ukey, trailer) {
				known = nx
				break
			}
			x, xnd = nx, nnd
		}
		if prevs != nil {
			prevs[level], nexts[level] = x, known
		}
	}
	return x, known
}

// before reports whether node nd sorts strictly before the internal key
// (ukey, trailer): a smaller user key, or the same user key and a larger
// trailer (newer first).
func before(nd []byte, ukey []byte, trailer uint64) bool {
	ks := nodeKeyStart(nd)
	ke := ks + int(le32(nd)) - base.TrailerLen
	if c := bytes.Compare(nd[ks:ke], ukey); c != 0 {
		return c < 0
	}
	return binary.LittleEndian.Uint64(nd[ke:]) > trailer
}
