package cache

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Block is the decoded bytes of one table block in a buffer that is
// recycled once nobody uses it, so that a steady stream of cache misses
// does not allocate a fresh buffer per miss.
//
// A Block is reference counted. Alloc returns it with one reference, held
// by the caller; the cache takes a reference of its own when it keeps the
// block, and Get hands out one more to each caller. Every holder calls
// Release exactly once when it no longer reads Data. When the last
// reference goes, the buffer returns to a pool and the next Alloc of a
// similar size reuses it, so Data must never be read after Release (a
// build with the race detector fills released buffers with a pattern,
// which turns such a read into a reported race).
type Block struct {
	data []byte
	// buf is the whole buffer; data is a prefix of it. Its length is what
	// the cache charges.
	buf  []byte
	refs atomic.Int32
	// abandoned: some holder let go with Abandon, so the buffer is never
	// recycled (see Abandon).
	abandoned atomic.Bool
	// class is the buffer's pool, or -1 for a buffer that is left to the
	// garbage collector (NewBlock's, or one too large to pool).
	class int16

	// aux is what a reader derived from data to search it faster
	// (SetAux), set before the block is shared and charged with it. It is
	// dropped when the Block is recycled, so a later use is not charged
	// for it.
	aux []uint64

	// While the block is cached: its key, and its links in the LRU list
	// of its shard (nil otherwise), guarded by the shard's mutex.
	k          key
	prev, next *Block
}

const (
	// minPooled is the smallest pooled buffer: every request of at most
	// this many bytes shares its class.
	minPooledShift = 10
	minPooled      = 1 << minPooledShift
	// maxPooled is the largest pooled buffer. Larger blocks are rare (the
	// default block size is 4 KiB) and are left to the garbage collector.
	maxPooledShift = 20
	maxPooled      = 1 << maxPooledShift
	// classesPerDoubling size classes split each power-of-two range, so a
	// buffer wastes at most 1/16 of its request.
	classesPerDoubling = 16
	numClasses         = 1 + (maxPooledShift-minPooledShift)*classesPerDoubling
)

// classOf returns the pool index and buffer size for a request of n bytes,
// or (-1, n) when n is too large to pool.
func classOf(n int) (idx, size int) {
	if n <= minPooled {
		return 0, minPooled
	}
	if n > maxPooled {
		return -1, n
	}
	k := bits.Len(uint(n - 1)) // 2^(k-1) < n <= 2^k
	lower := 1 << (k - 1)
	step := lower / classesPerDoubling
	j := (n - lower + step - 1) / step // 1..classesPerDoubling
	return 1 + (k-1-minPooledShift)*classesPerDoubling + j - 1, lower + j*step
}

var pools [numClasses]sync.Pool

// Alloc returns a Block whose Data has length n (contents unspecified),
// holding one reference for the caller. n must not be negative.
func Alloc(n int) *Block {
	class, size := classOf(n)
	if class >= 0 {
		if b, ok := pools[class].Get().(*Block); ok {
			b.data = b.buf[:n]
			b.refs.Store(1)
			return b
		}
	}
	b := &Block{buf: make([]byte, size), class: int16(class)}
	b.data = b.buf[:n]
	b.refs.Store(1)
	return b
}

// NewBlock wraps data, which the Block then owns, in a Block holding one
// reference for the caller. Its buffer is never pooled: after the last
// Release it is left to the garbage collector.
func NewBlock(data []byte) *Block {
	b := &Block{data: data, buf: data, class: -1}
	b.refs.Store(1)
	return b
}

// Data returns the block's bytes. They must not be modified once the
// block is shared (after Cache.Set), and must not be read after Release.
func (b *Block) Data() []byte { return b.data }

// Truncate shortens Data to its first n bytes (n <= len(Data)).
func (b *Block) Truncate(n int) { b.data = b.data[:n] }

// Charge is the number of bytes the block holds in memory: its whole
// buffer, which may be slightly larger than Data, and its Aux.
func (b *Block) Charge() int64 { return int64(len(b.buf)) + 8*int64(cap(b.aux)) }

// Aux returns what SetAux set: a reader's index of Data (nil for none).
// Like Data, it must not be modified once the block is shared, nor read
// after Release.
func (b *Block) Aux() []uint64 { return b.aux }

// SetAux attaches aux to the block, which is then charged for its
// capacity. It must be called before the block is shared (Cache.Set), by
// the only holder.
func (b *Block) SetAux(aux []uint64) { b.aux = aux }

// Ref adds a reference. The caller must already hold one.
func (b *Block) Ref() { b.refs.Add(1) }

// Abandon drops one reference, as Release does, and makes sure the buffer
// is never recycled: slices of Data handed out earlier stay valid for as
// long as anyone holds them, and the garbage collector reclaims the
// buffer. An iterator's Close uses it, so a value returned just before
// Close is not overwritten by a later cache miss.
func (b *Block) Abandon() {
	// Written before the decrement; the holder that drops the last
	// reference reads it after its own decrement, which comes later.
	b.abandoned.Store(true)
	b.Release()
}

// Release drops one reference. After the last one the buffer is recycled.
// Releasing more often than referencing is a bug in the caller and
// panics.
func (b *Block) Release() {
	switch r := b.refs.Add(-1); {
	case r > 0:
		return
	case r < 0:
		panic("cache: Block released more times than it was referenced")
	}
	if b.class < 0 || b.abandoned.Load() {
		return
	}
	if poisonReleased {
		for i := range b.buf {
			b.buf[i] = 0xdb
		}
	}
	b.data, b.aux = nil, nil
	pools[b.class].Put(b)
}
