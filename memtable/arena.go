package memtable

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/bloomkv/bloomkv/internal/base"
)

// The arena. Nodes live in slabs of bytes that the garbage collector never
// scans; skiplist links are 32-bit references, not pointers: the slab index
// in the high slabBits bits and the node's offset within the slab, counted
// in 4-byte words (nodes are 4-byte aligned), in the low offBits bits. A
// node is laid out as
//
//	keyLen  uint32  length of the internal key (user key + trailer)
//	valLen  uint32  length of an inline value, or the index of a large value
//	meta    uint32  height (low 8 bits) | metaLargeValue
//	tower   [height]uint32  next-node references, read and written atomically
//	ikey    [keyLen]byte
//	value   [valLen]byte    only when the value is inline
//
// so the header, the links a search follows and the key it compares share
// one or two cache lines. Values larger than a quarter of a slab are
// allocated on their own and kept in a separate table.
//
// # Slabs
//
// Shared slabs are 64 KiB, 128 KiB, 256 KiB, 512 KiB and from then on
// 1 MiB; allocation bumps an offset through the current one, and any node
// that fits in its rest goes there. A node larger than maxSharedNode (a
// quarter of the largest slab, 256 KiB) that does not fit gets a slab of
// its own, of exactly its size, at offset 0, and the current slab stays
// current. A smaller node that does not fit starts the next shared slab,
// skipping sizes until the node is at most a quarter of it, so a medium
// node never gets a slab of its own however small the current slab is.
//
// # Capacity
//
// Let U be the bytes of all nodes in the slabs. ApproximateMemoryUsage
// counts every node's size and also the out-of-line values, which take no
// slab space, so U <= ApproximateMemoryUsage. The slabs in use are
//
//   - slab 0, which holds only the head sentinel: 1 slab;
//   - shared slabs smaller than 1 MiB: at most 4 (64, 128, 256 and 512 KiB),
//     since each shared slab is at least twice as large as the previous one
//     until the size reaches 1 MiB;
//   - shared 1 MiB slabs: the current one, plus those left behind. allocSlow
//     leaves a 1 MiB slab behind only for a node of at most maxSharedNode
//     (256 KiB) that does not fit in its rest, so such a slab already holds
//     more than 768 KiB of nodes (packed from offset 0): fewer than
//     U1/(768 KiB) of them, where U1 is the node bytes in those slabs;
//   - slabs of their own: each holds one node of more than 256 KiB, so
//     there are fewer than U2/(256 KiB), where U2 is the bytes of those
//     nodes.
//
// U1 and U2 count different nodes, so U1 + U2 <= U, and the slab count is at
// most 1 + 4 + 1 + U1/(768 KiB) + U2/(256 KiB) <= slabSlack + U/(256 KiB),
// with slabSlack = 6. A reference has room for maxSlabs = 2^14 slabs, which
// therefore suffice for every U <= (maxSlabs - slabSlack) * 256 KiB, that is
// 4 GiB - 1.5 MiB, and so for every ApproximateMemoryUsage <=
// MaxMemoryUsage = 4 GiB - 64 MiB (checked at compile time below). The
// tests check the same line, slabSlack + U*(maxSlabs-slabSlack)/
// MaxMemoryUsage slabs, after every Add of adversarial size sequences.
//
// The arena's true footprint exceeds U by the unused tails of slabs: less
// than 1 MiB in all the slabs below 1 MiB together, less than 256 KiB per
// 768 KiB of nodes in the 1 MiB slabs left behind, and the current slab's
// rest.

const (
	slabBits = 14 // slab index bits of a reference
	offBits  = 32 - slabBits
	offMask  = 1<<offBits - 1
	maxSlabs = 1 << slabBits

	minSlabSize   = 64 << 10
	maxSlabSize   = 4 << offBits // 1 MiB: every word offset in it is addressable
	maxSharedNode = maxSlabSize / 4

	// slabSlack is the constant term of the capacity bound above: the head
	// slab, the four shared slabs below 1 MiB and the current 1 MiB slab.
	slabSlack = 6

	hdrSize        = 12
	linkSize       = 4
	metaHeightMask = 0xff
	metaLargeValue = 0x100

	headOff        = 8           // byte offset of the head sentinel in slab 0
	nilRef  uint32 = 0           // no node
	headRef uint32 = headOff / 4 // the head sentinel: slab 0, word offset 2
)

// MaxMemoryUsage is the largest ApproximateMemoryUsage a memtable supports:
// any sequence of Add calls is accepted as long as ApproximateMemoryUsage
// stays at or below it after each call, whatever the sizes of the keys and
// values (see the capacity bound in arena.go). It is 4 GiB - 64 MiB, 62.5 MiB
// below the limit that bound proves. Beyond it Add may panic: callers flush
// the memtable well before. ApproximateMemoryUsage grows by at most
// len(ukey) + len(value) + MaxEntryOverhead per Add, so a caller can bound
// a batch's effect before applying it.
const MaxMemoryUsage = 4<<30 - 64<<20

// MaxEntryOverhead is the most one Add adds to ApproximateMemoryUsage beyond
// len(ukey) + len(value): the node header, a tower of up to maxHeight links,
// the 8-byte trailer and up to 3 bytes of alignment padding. Small entries
// cost far more than their encoded size in a batch: an empty-key deletion
// takes at least 24 bytes.
const MaxEntryOverhead = 71

// Compile-time checks: MaxEntryOverhead is exactly the largest node
// overhead, and MaxMemoryUsage is within the capacity bound above (a
// negative constant does not convert to uint).
const (
	_ = uint(MaxEntryOverhead - (hdrSize + linkSize*maxHeight + base.TrailerLen + 3))
	_ = uint(hdrSize + linkSize*maxHeight + base.TrailerLen + 3 - MaxEntryOverhead)
	_ = uint((maxSlabs-slabSlack)*maxSharedNode - MaxMemoryUsage)
)

// headSlab returns slab 0, which holds only the head sentinel: a node with
// an empty key and a tower of maxHeight levels.
func headSlab() []byte {
	b := make([]byte, headOff+hdrSize+linkSize*maxHeight)
	binary.LittleEndian.PutUint32(b[headOff+8:], maxHeight)
	return b
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// makeRef returns the reference to the node at byte offset off (a multiple
// of 4, below maxSlabSize) of slab idx.
func makeRef(idx, off int) uint32 { return uint32(idx)<<offBits | uint32(off)>>2 }

// Accessors on a node: nd is the node's slab from the node's offset on.

func nodeHeight(nd []byte) int   { return int(le32(nd[8:]) & metaHeightMask) }
func nodeKeyStart(nd []byte) int { return hdrSize + linkSize*nodeHeight(nd) }

// link returns the address of the node's level-th forward reference. Nodes
// start 4-byte aligned within slabs whose base is at least 8-byte aligned.
func link(nd []byte, level int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&nd[hdrSize+linkSize*level]))
}

// nodeIKey returns the node's internal key, with capacity clipped.
func nodeIKey(nd []byte) []byte {
	ks := nodeKeyStart(nd)
	ke := ks + int(le32(nd))
	return nd[ks:ke:ke]
}

// nodeSize is the number of slab bytes a node of height h takes, rounded up
// so the next node stays 4-byte aligned.
func nodeSize(h, klen, inlineVal int) int {
	return (hdrSize + linkSize*h + klen + inlineVal + 3) &^ 3
}

// writer state: only the goroutine calling Add touches it.
type arenaWriter struct {
	slabs    [][]byte // every slab; published copies are in MemTable.slabs
	large    [][]byte // every large value; published in MemTable.large
	cur      []byte   // the shared slab being filled, slabs[curIdx] (nil at first)
	curIdx   int
	off      int // next free byte offset in cur
	slabSize int // size of the next shared slab; grows to maxSlabSize

	// The previous Add's node and its neighbours at each level (head and
	// nil above its height): where a following ascending key goes.
	last                   uint32
	splicePrev, spliceNext [maxHeight]uint32
}

// inlineLimit is the largest node with an inline value: a value that would
// make its node larger goes out of line.
func (w *arenaWriter) inlineLimit() int { return w.slabSize / 4 }

// allocNode reserves n bytes (n a multiple of 4) for a node and returns its
// reference and bytes. Whenever it adds a slab it calls publish with the new
// slab table before returning, so the slab is visible to readers before the
// node in it can be linked.
func (w *arenaWriter) allocNode(n int, publish func([][]byte)) (uint32, []byte) {
	if w.off+n > len(w.cur) {
		return w.allocSlow(n, publish)
	}
	ref := makeRef(w.curIdx, w.off)
	nd := w.cur[w.off : w.off+n : w.off+n]
	w.off += n
	return ref, nd
}

// allocSlow is allocNode for a node that does not fit in the current slab.
func (w *arenaWriter) allocSlow(n int, publish func([][]byte)) (uint32, []byte) {
	if n > maxSharedNode {
		// A node with a huge key: a slab of its own, the node at offset 0.
		// The current slab stays current.
		idx := w.addSlab(make([]byte, (n+7)&^7), publish)
		return makeRef(idx, 0), w.slabs[idx]
	}
	// Leave the old slab's tail unused. In a 1 MiB slab that is less than
	// maxSharedNode; a smaller slab may be left emptier when n is more
	// than a quarter of the next size, but there are only four of those.
	for n > w.slabSize/4 {
		w.slabSize *= 2 // ends at maxSlabSize at the latest
	}
	idx := w.addSlab(make([]byte, w.slabSize), publish)
	w.cur, w.curIdx, w.off = w.slabs[idx], idx, n
	if w.slabSize < maxSlabSize {
		w.slabSize *= 2
	}
	return makeRef(idx, 0), w.cur[:n:n]
}

func (w *arenaWriter) addSlab(b []byte, publish func([][]byte)) int {
	if len(w.slabs) >= maxSlabs {
		// Unreachable while ApproximateMemoryUsage <= MaxMemoryUsage: see
		// the capacity bound above.
		panic("memtable: arena exhausted (more than 16384 slabs): ApproximateMemoryUsage went past MaxMemoryUsage; flush earlier")
	}
	w.slabs = append(w.slabs, b)
	publish(w.slabs)
	return len(w.slabs) - 1
}
