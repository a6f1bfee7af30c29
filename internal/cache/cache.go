// Package cache is the engine's block cache: a sharded LRU map from
// (file number, block offset) to the decompressed bytes of an SSTable data
// block, held in a reference-counted Block and charged by the bytes of the
// Block's buffer.
//
// Invariants:
//   - Size() never exceeds Capacity(): each shard holds at most its share of
//     the capacity, and a block larger than a shard's share is not cached.
//   - A cached block is immutable: after Set nobody writes to its Data.
//   - A Block's buffer is recycled only after its last reference is
//     released: the cache holds one reference while the block is cached
//     (dropped on eviction), and each Get returns the block with a
//     reference of the caller's.
//   - All methods are safe for concurrent use. Each shard has its own mutex;
//     there is no lock shared by all shards, and hit/miss counters are atomic.
//   - A nil *Cache, or one made with a capacity <= 0, stores nothing.
package cache

import (
	"sync"
	"sync/atomic"
)

// numShards is the number of independently locked shards. A power of two.
const numShards = 16

// Cache is a sharded LRU cache of blocks keyed by (fileID, offset).
type Cache struct {
	capacity int64
	shards   [numShards]shard
	hits     atomic.Int64
	misses   atomic.Int64
}

type key struct{ fileID, offset uint64 }

// shard is an LRU list plus an index by file, guarded by mu. The cached
// Blocks are the list's nodes, so a lookup touches one object.
type shard struct {
	mu       sync.Mutex
	capacity int64
	size     int64
	// files maps a file ID to that file's cached blocks by offset, so
	// EvictFile costs only the number of blocks of that file. A file's
	// map stays when it empties, for the file's next block, until
	// EvictFile drops it.
	files map[uint64]map[uint64]*Block
	// lru is a sentinel of a circular doubly linked list: lru.next is the
	// most recently used block, lru.prev the least.
	lru Block
}

// New returns a cache holding at most capacity bytes of blocks. A capacity
// <= 0 gives a cache that stores nothing (every Get misses).
func New(capacity int64) *Cache {
	if capacity < 0 {
		capacity = 0
	}
	c := &Cache{capacity: capacity}
	per := capacity / numShards
	rem := capacity % numShards
	for i := range c.shards {
		s := &c.shards[i]
		s.capacity = per
		if int64(i) < rem {
			s.capacity++
		}
		s.files = make(map[uint64]map[uint64]*Block)
		s.lru.next = &s.lru
		s.lru.prev = &s.lru
	}
	return c
}

// shardFor picks the shard of a key by mixing both halves of the key.
func (c *Cache) shardFor(fileID, offset uint64) *shard {
	h := fileID*0x9e3779b97f4a7c15 ^ offset*0xc2b2ae3d27d4eb4f
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 32
	return &c.shards[h&(numShards-1)]
}

// Get returns the block cached for (fileID, offset), marking it most
// recently used, with a reference the caller must Release once it has
// finished reading the block. The block's Data must not be modified.
func (c *Cache) Get(fileID, offset uint64) (*Block, bool) {
	if c == nil {
		return nil, false
	}
	s := c.shardFor(fileID, offset)
	s.mu.Lock()
	var b *Block
	if m := s.files[fileID]; m != nil {
		b = m[offset]
	}
	if b != nil {
		s.unlink(b)
		s.pushFront(b)
		b.Ref() // under the lock: eviction cannot drop the last reference first
	}
	s.mu.Unlock()
	if b == nil {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return b, true
}

// Set caches block under (fileID, offset), replacing any block already
// there, and evicts least recently used blocks of the same shard until the
// shard fits its capacity again. When it caches the block it takes a
// reference of its own; the caller keeps its reference (and still
// releases it), and must not modify the block afterwards. A block larger
// than a shard's capacity is not cached (and any older block under the
// same key is dropped). A block is cached under one key at most: block
// must not be in a cache already (it comes fresh from Alloc or NewBlock,
// or was evicted).
func (c *Cache) Set(fileID, offset uint64, block *Block) {
	if c == nil {
		return
	}
	s := c.shardFor(fileID, offset)
	charge := block.Charge()
	// Evicted blocks are released after the lock is dropped: the last
	// release recycles a buffer, which need not hold up the shard.
	var victimsArr [4]*Block
	victims := victimsArr[:0]
	s.mu.Lock()
	m := s.files[fileID]
	if m != nil {
		if old := m[offset]; old != nil {
			victims = append(victims, old)
			s.remove(old, m)
		}
	}
	if charge <= s.capacity && s.capacity > 0 {
		if m == nil {
			m = make(map[uint64]*Block)
			s.files[fileID] = m
		}
		block.Ref()
		block.k = key{fileID, offset}
		m[offset] = block
		s.pushFront(block)
		s.size += charge
		for s.size > s.capacity {
			victim := s.lru.prev
			victims = append(victims, victim)
			s.remove(victim, s.files[victim.k.fileID])
		}
	}
	s.mu.Unlock()
	for _, v := range victims {
		v.Release()
	}
}

// EvictFile drops every cached block of fileID. Use it when a table file is
// deleted, so its number can never alias stale blocks.
func (c *Cache) EvictFile(fileID uint64) {
	if c == nil {
		return
	}
	var victims []*Block
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		if m := s.files[fileID]; m != nil {
			for _, b := range m {
				s.unlink(b)
				s.size -= b.Charge()
				victims = append(victims, b)
			}
			delete(s.files, fileID)
		}
		s.mu.Unlock()
		for _, v := range victims {
			v.Release()
		}
		victims = victims[:0]
	}
}

// Size returns the bytes of blocks held now.
func (c *Cache) Size() int64 {
	if c == nil {
		return 0
	}
	var n int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.size
		s.mu.Unlock()
	}
	return n
}

// Fits reports whether a block of the given charge, set under (fileID,
// offset), would be cached: Set drops a block larger than its shard's
// share of the capacity.
func (c *Cache) Fits(fileID, offset uint64, charge int64) bool {
	if c == nil {
		return false
	}
	s := c.shardFor(fileID, offset)
	return charge <= s.capacity && s.capacity > 0
}

// Capacity returns the most bytes of blocks the cache will hold.
func (c *Cache) Capacity() int64 {
	if c == nil {
		return 0
	}
	return c.capacity
}

// Stats returns the number of Get calls that found a block (hits) and that
// did not (misses) since the cache was made.
func (c *Cache) Stats() (hits, misses int64) {
	if c == nil {
		return 0, 0
	}
	return c.hits.Load(), c.misses.Load()
}

// remove unlinks b, drops it from its file's map m and uncharges it. The
// caller releases the cache's reference. s.mu must be held.
func (s *shard) remove(b *Block, m map[uint64]*Block) {
	s.unlink(b)
	s.size -= b.Charge()
	delete(m, b.k.offset)
}

func (s *shard) unlink(b *Block) {
	b.prev.next = b.next
	b.next.prev = b.prev
	b.prev, b.next = nil, nil
}

func (s *shard) pushFront(b *Block) {
	b.prev = &s.lru
	b.next = s.lru.next
	s.lru.next.prev = b
	s.lru.next = b
}
