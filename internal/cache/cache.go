// Package cache is the engine's block cache: a sharded LRU map from
// (file number, block offset) to the decompressed bytes of an SSTable data
// block, charged by the byte length of each block.
//
// Invariants:
//   - Size() never exceeds Capacity(): each shard holds at most its share of
//     the capacity, and a block larger than a shard's share is not cached.
//   - A cached block is immutable: Set takes ownership of the slice and Get
//     returns it as is, so callers must never write to either.
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

// entry is one cached block, linked into its shard's LRU list.
type entry struct {
	k          key
	block      []byte
	prev, next *entry
}

// shard is an LRU list plus an index by file, guarded by mu.
type shard struct {
	mu       sync.Mutex
	capacity int64
	size     int64
	// files maps a file ID to that file's cached blocks by offset, so
	// EvictFile costs only the number of blocks of that file.
	files map[uint64]map[uint64]*entry
	// lru is a sentinel of a circular doubly linked list: lru.next is the
	// most recently used entry, lru.prev the least.
	lru entry
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
		s.files = make(map[uint64]map[uint64]*entry)
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
// recently used. The returned slice must not be modified.
func (c *Cache) Get(fileID, offset uint64) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	s := c.shardFor(fileID, offset)
	s.mu.Lock()
	var e *entry
	if m := s.files[fileID]; m != nil {
		e = m[offset]
	}
	if e != nil {
		s.unlink(e)
		s.pushFront(e)
	}
	s.mu.Unlock()
	if e == nil {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return e.block, true
}

// Set caches block under (fileID, offset), replacing any block already
// there, and evicts least recently used blocks of the same shard until the
// shard fits its capacity again. The cache keeps block: the caller must not
// modify it afterwards. A block larger than a shard's capacity is not
// cached (and any older block under the same key is dropped).
func (c *Cache) Set(fileID, offset uint64, block []byte) {
	if c == nil {
		return
	}
	s := c.shardFor(fileID, offset)
	charge := int64(len(block))
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.files[fileID]
	if m != nil {
		if old := m[offset]; old != nil {
			s.remove(old, m)
			m = s.files[fileID]
		}
	}
	if charge > s.capacity || s.capacity == 0 {
		return
	}
	if m == nil {
		m = make(map[uint64]*entry)
		s.files[fileID] = m
	}
	e := &entry{k: key{fileID, offset}, block: block}
	m[offset] = e
	s.pushFront(e)
	s.size += charge
	for s.size > s.capacity {
		victim := s.lru.prev
		s.remove(victim, s.files[victim.k.fileID])
	}
}

// EvictFile drops every cached block of fileID. Use it when a table file is
// deleted, so its number can never alias stale blocks.
func (c *Cache) EvictFile(fileID uint64) {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		if m := s.files[fileID]; m != nil {
			for _, e := range m {
				s.unlink(e)
				s.size -= int64(len(e.block))
			}
			delete(s.files, fileID)
		}
		s.mu.Unlock()
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

// remove unlinks e, drops it from its file's map m, and uncharges it.
// s.mu must be held.
func (s *shard) remove(e *entry, m map[uint64]*entry) {
	s.unlink(e)
	s.size -= int64(len(e.block))
	delete(m, e.k.offset)
	if len(m) == 0 {
		delete(s.files, e.k.fileID)
	}
}

func (s *shard) unlink(e *entry) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
}

func (s *shard) pushFront(e *entry) {
	e.prev = &s.lru
	e.next = s.lru.next
	s.lru.next.prev = e
	s.lru.next = e
}
