package memtable

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// The arena. Nodes live in slabs of bytes that the garbage collector never
// scans; skiplist links are 32-bit references (slab index << slabShift |
// offset), not pointers. A node is laid out as
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

const (
	slabShift = 20 // offsets within a slab are below 1 MiB
	offMask   = 1<<slabShift - 1
	maxSlabs  = 1 << (32 - slabShift)

	minSlabSize = 64 << 10
	maxSlabSize = 1 << slabShift

	hdrSize        = 12
	linkSize       = 4
	metaHeightMask = 0xff
	metaLargeValue = 0x100

	nilRef  uint32 = 0 // no node
	headRef uint32 = 8 // the head sentinel: slab 0, offset 8
)

// headSlab returns slab 0, which holds only the head sentinel: a node with
// an empty key and a tower of maxHeight levels.
func headSlab() []byte {
	b := make([]byte, int(headRef)+hdrSize+linkSize*maxHeight)
	binary.LittleEndian.PutUint32(b[headRef+8:], maxHeight)
	return b
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

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
	cur      []byte   // the slab being filled, slabs[curIdx] (nil at first)
	curIdx   int
	off      int // next free offset in cur
	slabSize int // size of the next normal slab; grows to maxSlabSize

	// The previous Add's node and its neighbours at each level (head and
	// nil above its height): where a following ascending key goes.
	last                   uint32
	splicePrev, spliceNext [maxHeight]uint32
}

// inlineLimit is the largest node (with its value) placed in a shared slab.
func (w *arenaWriter) inlineLimit() int { return w.slabSize / 4 }

// allocNode reserves n bytes (n a multiple of 4) for a node and returns its
// reference and bytes. Whenever it adds a slab it calls publish with the new
// slab table before returning, so the slab is visible to readers before the
// node in it can be linked.
func (w *arenaWriter) allocNode(n int, publish func([][]byte)) (uint32, []byte) {
	if n > w.inlineLimit() {
		// A node with a huge key: a slab of its own, the node at offset 0.
		idx := w.addSlab(make([]byte, (n+7)&^7), publish)
		return uint32(idx) << slabShift, w.slabs[idx]
	}
	if w.off+n > len(w.cur) {
		// Leave the old slab's tail (less than a quarter slab) unused.
		idx := w.addSlab(make([]byte, w.slabSize), publish)
		w.cur, w.curIdx, w.off = w.slabs[idx], idx, 0
		if w.slabSize < maxSlabSize {
			w.slabSize *= 2
		}
	}
	ref := uint32(w.curIdx)<<slabShift | uint32(w.off)
	nd := w.cur[w.off : w.off+n : w.off+n]
	w.off += n
	return ref, nd
}

func (w *arenaWriter) addSlab(b []byte, publish func([][]byte)) int {
	if len(w.slabs) >= maxSlabs {
		panic("memtable: arena exhausted (more than 4096 slabs, about 4 GiB); flush earlier")
	}
	w.slabs = append(w.slabs, b)
	publish(w.slabs)
	return len(w.slabs) - 1
}
