package memtable

import (
	"math/bits"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// A memtable's filter.
//
// A Get for a key the memtable does not hold still descends the skiplist:
// about 22 node comparisons in a memtable of the default 4 MiB (28,000
// entries of 16-byte keys and 100-byte values), 0.7 µs of an absent key's
// 0.8 µs read in kvbench's readmissing. A filter of the memtable's user
// keys answers most such keys with one word read instead.
//
// The filter is an array of 64-bit words; a key sets filterProbes bits of
// one word, chosen by its hash (a Bloom filter blocked to a word, as
// RocksDB's memtable filter blocks to a cache line: one load a check,
// one atomic OR an Add). Add sets a key's bits before it links the key's
// node, so a reader that could find the node (through an atomic load of a
// link) sees the bits; a read that began after an Add returned sees both.
// The filter holds user keys of every sequence number, so a read at any
// snapshot may use it; range tombstones are not in it (they are checked
// apart).

// filterProbes is the bits a key sets in its word. At the default sizing
// (one bit per 2 bytes of write buffer) a memtable of 28,000 entries of
// 116 bytes has 75 bits a key; one of 24-byte entries, the smallest, 16.
// filterWord writes the probes out one by one: a change here is a change
// there.
const filterProbes = 6

// KeyHash is the hash of a user key that MayContainHash takes: xxhash64,
// which bloomkv's Bloom filter policy also uses (filter.NewBloomPolicy's
// KeyHash), so one hash of a key serves both.
func KeyHash(ukey []byte) uint64 { return xxhash.Sum64(ukey) }

// NewWithFilter returns an empty memtable with a filter of its user keys
// of at least filterBits bits (at least 64), which MayContain and
// MayContainHash consult. New's memtable has none.
func NewWithFilter(filterBits int) *MemTable {
	m := New()
	m.filter = make([]atomic.Uint64, max(1, (filterBits+63)/64))
	return m
}

// HasFilter reports whether the memtable has a filter (NewWithFilter).
func (m *MemTable) HasFilter() bool { return m.filter != nil }

// FilterBytes returns the size of the memtable's filter (0 for none).
func (m *MemTable) FilterBytes() int { return 8 * len(m.filter) }

// MayContain reports whether the memtable may hold an entry for ukey, of
// any sequence number: false means Get and GetEntry would find none. It
// is true when the memtable has no filter.
func (m *MemTable) MayContain(ukey []byte) bool {
	if m.filter == nil {
		return true
	}
	return m.MayContainHash(KeyHash(ukey))
}

// MayContainHash is MayContain for a key whose KeyHash is h.
func (m *MemTable) MayContainHash(h uint64) bool {
	if m.filter == nil {
		return true
	}
	w, mask := filterWord(h, len(m.filter))
	return m.filter[w].Load()&mask == mask
}

// FilterHashes clears bit in pass[i] for every hash hs[i] (of KeyHash)
// that the memtable's filter rules out, that is, where MayContainHash(hs[i])
// is false; it leaves pass as it is when the memtable has no filter. It is
// MayContainHash for a batch of keys, in one loop without a call a key.
// pass must be at least as long as hs.
func (m *MemTable) FilterHashes(hs []uint64, pass []uint8, bit uint8) {
	f := m.filter
	if f == nil {
		return
	}
	pass = pass[:len(hs)]
	for i, h := range hs {
		w, mask := filterWord(h, len(f))
		if f[w].Load()&mask != mask {
			pass[i] &^= bit
		}
	}
}

// filterAdd sets ukey's bits; Add calls it before linking the node.
func (m *MemTable) filterAdd(ukey []byte) {
	if m.filter == nil {
		return
	}
	w, mask := filterWord(KeyHash(ukey), len(m.filter))
	if m.filter[w].Load()&mask != mask {
		m.filter[w].Or(mask)
	}
}

// filterWord returns the word of a filter of n words that the key hashed
// to h uses, and the key's bits in it. The word comes from the hash's high
// bits (Lemire's multiply-shift range reduction); the bits from a second,
// independent mix of the hash, 6 bits a probe.
func filterWord(h uint64, n int) (int, uint64) {
	w, _ := bits.Mul64(h, uint64(n))
	g := (h ^ h>>29) * 0xbf58476d1ce4e5b9
	// The six probes' bits are g's top six 6-bit fields, written out so
	// the shifts are independent (a loop shifting g made a chain).
	mask := uint64(1)<<(g>>58) | uint64(1)<<(g>>52&63) | uint64(1)<<(g>>46&63) |
		uint64(1)<<(g>>40&63) | uint64(1)<<(g>>34&63) | uint64(1)<<(g>>28&63)
	return int(w), mask
}
