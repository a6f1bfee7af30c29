package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/bloomkv/bloomkv/internal/base"
)

// blockIter walks the entries of one decoded block. It validates everything
// it reads (restart count against the block length, each restart offset,
// each entry's lengths against the bytes left, the shared prefix against
// the previous key), so arbitrary bytes give an error and never a panic or
// an endless loop: every step forward strictly increases the entry offset,
// and every step back strictly decreases it.
//
// Keys of entries stored whole (shared = 0, as at every restart point) alias
// the block; other keys are rebuilt in keyBuf, which is reused. Values
// always alias the block. Both have their capacity clipped, so appending to
// them never writes into the block.
type blockIter struct {
	bytewise    bool // keys compare bytewise (meta blocks), not as internal keys
	data        []byte
	restartsOff int // start of the restart array = end of the entries
	numRestarts int

	offset     int // offset of the current entry
	nextOffset int // offset just past the current entry, and its value
	valOffset  int // offset of the current entry's value

	// key is the current key; the value is data[valOffset:nextOffset],
	// sliced when asked for (a seek decodes many entries and asks for one
	// value: an offset costs less to keep than a slice).
	key      []byte
	keyBuf   []byte
	keyInBuf bool // key is keyBuf (not an alias into data)
	valid    bool
	err      error
}

// init points the iterator at a new block, keeping keyBuf for reuse. The
// iterator is left unpositioned.
func (i *blockIter) init(bytewise bool, data []byte) error {
	*i = blockIter{bytewise: bytewise, keyBuf: i.keyBuf[:0]}
	if len(data) < 4 {
		i.err = base.CorruptionErrorf("sstable: block of %d bytes is too short", len(data))
		return i.err
	}
	n := uint64(binary.LittleEndian.Uint32(data[len(data)-4:]))
	if n == 0 || n*4+4 > uint64(len(data)) {
		i.err = base.CorruptionErrorf("sstable: block of %d bytes claims %d restart points", len(data), n)
		return i.err
	}
	i.data = data
	i.numRestarts = int(n)
	i.restartsOff = len(data) - 4 - 4*int(n)
	return nil
}

func (i *blockIter) Valid() bool { return i.valid }
func (i *blockIter) Key() []byte { return i.key }
func (i *blockIter) Value() []byte {
	if !i.valid {
		return nil
	}
	return i.data[i.valOffset:i.nextOffset:i.nextOffset]
}
func (i *blockIter) Error() error { return i.err }

func (i *blockIter) fail(err error) bool {
	if i.err == nil {
		i.err = err
	}
	i.valid = false
	i.key = nil
	return false
}

func (i *blockIter) invalidate() bool {
	i.valid = false
	i.key = nil
	return false
}

// restart returns the offset of restart point idx (0 <= idx < numRestarts).
func (i *blockIter) restart(idx int) (int, error) {
	r := binary.LittleEndian.Uint32(i.data[i.restartsOff+4*idx:])
	if uint64(r) > uint64(i.restartsOff) {
		return 0, base.CorruptionErrorf("sstable: restart point %d at %d past the entries (%d bytes)", idx, r, i.restartsOff)
	}
	return int(r), nil
}

// decodeAt decodes the entry at off, whose shared prefix comes from the
// current key, and makes it current. At the end of the entries it leaves the
// iterator invalid without error.
func (i *blockIter) decodeAt(off int) bool {
	if i.err != nil {
		return false
	}
	if off >= i.restartsOff {
		return i.invalidate()
	}
	p := i.data[off:i.restartsOff]
	var shared, unshared, vlen uint64
	var h int
	if len(p) >= 3 && p[0]|p[1]|p[2] < 0x80 { // entryHeader's fast path
		shared, unshared, vlen, h = uint64(p[0]), uint64(p[1]), uint64(p[2]), 3
	} else {
		shared, unshared, vlen, h = entryVarints(p)
	}
	switch {
	case h == 0:
		return i.fail(base.CorruptionErrorf("sstable: bad entry at block offset %d", off))
	case !entryFits(p, h, unshared, vlen):
		return i.fail(base.CorruptionErrorf("sstable: entry at block offset %d overruns its block", off))
	}
	if shared > uint64(len(i.key)) {
		return i.fail(base.CorruptionErrorf("sstable: entry at block offset %d shares %d bytes of a %d-byte key", off, shared, len(i.key)))
	}
	ks := off + h
	ke := ks + int(unshared)
	ve := ke + int(vlen)
	if shared == 0 {
		i.key = i.data[ks:ke:ke]
		i.keyInBuf = false
	} else {
		if !i.keyInBuf {
			i.keyBuf = append(i.keyBuf[:0], i.key[:shared]...)
		} else {
			i.keyBuf = i.keyBuf[:shared]
		}
		i.keyBuf = append(i.keyBuf, i.data[ks:ke]...)
		i.key = i.keyBuf[:len(i.keyBuf):len(i.keyBuf)]
		i.keyInBuf = true
	}
	i.valOffset = ke
	i.offset = off
	i.nextOffset = ve
	i.valid = true
	return true
}

// entryHeader decodes the lengths an entry p (the rest of a block's
// entries) starts with: the bytes its key shares with the key before, its
// own key bytes, its value's, and the header's size h, 0 when a length is
// malformed. The caller checks the key and value fit (entryFits). The
// loops over every entry of a block take its fast path in place: it does
// not inline.
func entryHeader(p []byte) (shared, unshared, vlen uint64, h int) {
	if len(p) >= 3 && p[0]|p[1]|p[2] < 0x80 {
		return uint64(p[0]), uint64(p[1]), uint64(p[2]), 3
	}
	return entryVarints(p)
}

// entryFits reports whether an entry of p with header h (> 0) holds its
// key bytes and its value.
func entryFits(p []byte, h int, unshared, vlen uint64) bool {
	rest := uint64(len(p) - h)
	return h > 0 && unshared <= rest && vlen <= rest-unshared
}

// entryVarints is entryHeader's decoding of lengths of more than a byte;
// h is 0 when one is malformed.
func entryVarints(p []byte) (shared, unshared, vlen uint64, h int) {
	shared, n1 := binary.Uvarint(p)
	if n1 <= 0 {
		return 0, 0, 0, 0
	}
	unshared, n2 := binary.Uvarint(p[n1:])
	if n2 <= 0 {
		return 0, 0, 0, 0
	}
	vlen, n3 := binary.Uvarint(p[n1+n2:])
	if n3 <= 0 {
		return 0, 0, 0, 0
	}
	return shared, unshared, vlen, n1 + n2 + n3
}

// seekRestart decodes the entry at restart point idx.
func (i *blockIter) seekRestart(idx int) bool {
	off, err := i.restart(idx)
	if err != nil {
		return i.fail(err)
	}
	i.key = nil
	i.keyInBuf = false
	return i.decodeAt(off)
}

// First moves to the first entry of the block.
func (i *blockIter) First() bool {
	if i.err != nil {
		return false
	}
	i.key = nil
	i.keyInBuf = false
	return i.decodeAt(0)
}

// Last moves to the last entry of the block.
func (i *blockIter) Last() bool {
	if i.err != nil {
		return false
	}
	if !i.seekRestart(i.numRestarts - 1) {
		return false
	}
	for i.nextOffset < i.restartsOff {
		if !i.decodeAt(i.nextOffset) {
			return false
		}
	}
	return true
}

// Next moves to the next entry. It must only be called when Valid.
func (i *blockIter) Next() bool {
	if !i.valid {
		return false
	}
	return i.decodeAt(i.nextOffset)
}

// Prev moves to the previous entry. It must only be called when Valid.
func (i *blockIter) Prev() bool {
	if !i.valid {
		return false
	}
	cur := i.offset
	// Find the last restart point before the current entry.
	lo, hi := 0, i.numRestarts
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		r, err := i.restart(mid)
		if err != nil {
			return i.fail(err)
		}
		if r < cur {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	idx := lo - 1
	if idx < 0 {
		return i.invalidate()
	}
	r, err := i.restart(idx)
	if err != nil {
		return i.fail(err)
	}
	if r >= cur {
		return i.fail(base.CorruptionErrorf("sstable: restart points out of order"))
	}
	if !i.seekRestart(idx) {
		return false
	}
	for i.nextOffset < cur {
		if !i.decodeAt(i.nextOffset) {
			if i.err == nil {
				return i.fail(base.CorruptionErrorf("sstable: entry boundaries inconsistent"))
			}
			return false
		}
	}
	return true
}

// restartKey decodes the key of the entry at restart point idx, leaving
// the iterator positioned there.
func (i *blockIter) restartKey(idx int) ([]byte, bool) {
	if !i.seekRestart(idx) {
		if i.err == nil {
			i.fail(base.CorruptionErrorf("sstable: restart point %d has no entry", idx))
		}
		return nil, false
	}
	return i.key, true
}

// SeekGE moves to the first entry whose key is >= target.
func (i *blockIter) SeekGE(target []byte) bool {
	if i.err != nil {
		return false
	}
	if i.restartsOff == 0 {
		return i.invalidate() // no entries
	}
	// Binary search for the first restart point whose key is >= target;
	// the answer lies after the restart point before it.
	lo, hi := 0, i.numRestarts
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		k, ok := i.restartKey(mid)
		if !ok {
			return false
		}
		if i.compare(k, target) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	start := 0
	if lo > 0 {
		start = lo - 1
	}
	if !i.seekRestart(start) {
		return false
	}
	for i.compare(i.key, target) < 0 {
		if !i.decodeAt(i.nextOffset) {
			return false
		}
	}
	return true
}

// SeekLT moves to the last entry whose key is < target.
func (i *blockIter) SeekLT(target []byte) bool {
	if i.SeekGE(target) {
		return i.Prev()
	}
	if i.err != nil {
		return false
	}
	return i.Last()
}

// compare orders keys of this block. A direct call, not a func value, so
// the keys passed to seeks do not escape to the heap.
func (i *blockIter) compare(a, b []byte) int {
	if i.bytewise {
		return bytes.Compare(a, b)
	}
	return base.CompareInternal(a, b)
}
