// Package memtable is bloomkv's in-memory write buffer: a sorted set of
// internal-key entries (user key + seq/kind trailer, ordered by
// base.CompareInternal) held in a concurrent skiplist until the db flushes it
// to an L0 table.
//
// # Concurrency
//
// Exactly one goroutine may call Add at a time (the db serializes writers
// behind its commit pipeline); any number of goroutines may call Get, Len,
// ApproximateMemoryUsage, Empty and use iterators concurrently with that
// writer, without locks. Each iterator belongs to one goroutine.
//
// # Invariants
//
//   - A node is completely built (header, key, trailer, value and the
//     forward links of its tower) before it is published, and it is
//     published by atomic stores of links, level 0 first. A reader that
//     reaches a node through an atomic load therefore sees all of its bytes;
//     it never sees a torn entry. A slab (or large value) is published before
//     any node in it is linked.
//   - Nodes are never removed or modified after insertion, apart from their
//     forward links, and the key and value bytes are never written again, so
//     slices returned by Get and by iterators stay valid and unchanged for
//     the life of the memtable. Those slices have their capacity clipped to
//     their length, so an append by the caller cannot write over a
//     neighbouring entry.
//   - Level 0 links every entry in strictly increasing internal-key order;
//     each higher level links a subset of the level below. A concurrent reader
//     may or may not see an entry that is being added, but whatever it sees
//     is sorted.
//   - Sequence numbers are unique per entry, so no two entries share an
//     internal key; Add does not check for duplicates.
//
// # Filter
//
// A memtable made by NewWithFilter keeps a filter of its user keys (see
// filter.go): MayContain answers "not there" for most keys it does not
// hold with one memory read, where Get would search the skiplist. Add
// sets a key's bits before it links the key's node, so a reader sees the
// bits of every entry it could find. Get and GetEntry do not consult it;
// the db does, before them.
//
// # Memory
//
// Nodes live in an arena of byte slabs (64 KiB growing to 1 MiB) that the
// garbage collector does not scan: a node is a small header, its tower of
// 32-bit links (slab index and offset, not pointers), the internal key and
// an inline value, laid out together so a search touches one or two cache
// lines per node. A value that would make its node larger than a quarter of
// a slab gets an allocation of its own. A node too large for the rest of the
// current slab starts the next slab, which is made large enough to hold at
// least four such nodes; only a node over 256 KiB (a key that large) that
// does not fit gets a slab of its own, of exactly its size. Add therefore
// allocates only when it starts a new slab or stores a large value, and Get
// never allocates.
//
// The arena addresses at most 16384 slabs, and every slab but a handful
// holds more than 256 KiB of entries, so a memtable accepts any sequence of
// Adds, whatever the key and value sizes, as long as ApproximateMemoryUsage
// stays at or below MaxMemoryUsage (4 GiB - 64 MiB; the proof is in
// arena.go). Add panics only past that: the db must flush long before. One
// Add grows ApproximateMemoryUsage by at most len(ukey) + len(value) +
// MaxEntryOverhead, which for small entries is far more than their size in
// a batch.
package memtable
