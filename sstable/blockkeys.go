package sstable

import (
	"bytes"
	"encoding/binary"
	"unsafe"

	"github.com/bloomkv/bloomkv/internal/base"
)

// A data block's key index (its cache.Block's Aux) lets a point lookup
// tell that a user key is not in the block without reading an entry.
// A lookup that a filter let through by mistake (about 1% of the absent
// keys a filter checks at 10 bits a key) otherwise searches the block:
// the restart points, then the entries of one restart interval in turn,
// each a load from a block that is rarely in the processor's caches
// (about 0.5 µs of an absent key's lookup in kvbench's store, most of
// the cost of a false positive after the filter).
//
// The index holds, after a header, one integer per entry: the 8 bytes of
// its user key that follow the prefix every user key of the block shares
// (the key's window, base.TailWindow, zero-padded), in the entries'
// order. The windows of a sorted block do not decrease, and a key whose
// window differs from an entry's sorts as its window does; a lookup
// whose window equals one of the block's (a present key, mostly) searches
// the block as before. Layout, in uint64 words:
//
//	[0]                 the prefix's length cp
//	[1, 1+pw)           the prefix's bytes, pw = (cp+7)/8 words
//	[1+pw, ...)         one window per entry
//
// It costs 8 bytes an entry, charged to the block cache with the block;
// blocks whose entries average fewer than 32 bytes (the index would be
// over a quarter of the block), or whose keys share more than 56 bytes,
// get none.

// maxBlockKeysShare is the index's largest size, as a fraction of its
// block: 8 bytes an entry of 32 or more.
const maxBlockKeysShare = 4

// maxBlockKeysPrefix is the longest shared prefix a block's key index
// takes: the pass keeps the first maxBlockKeysPrefix+8 bytes of each key
// on the stack. A block whose keys share more gets none.
const maxBlockKeysPrefix = 56

// buildBlockKeys appends to dst the key index of data block data and
// returns it, or returns dst unchanged and false when the block gets
// none: it is malformed (blockIter reports it when searched), its keys
// are not internal keys, its user keys are out of order, they share more
// than maxBlockKeysPrefix bytes, or its entries are too small.
//
// It decodes each entry's lengths as blockIter does, checking them the
// same way, but rebuilds no key: a key's window is its own bytes, or the
// last key's and then its own, read as integers (BenchmarkBuildBlockKeys:
// a 4 KiB block of kvbench's entries).
func buildBlockKeys(data []byte, dst []uint64) ([]uint64, bool) {
	if len(data) < 4 {
		return dst, false
	}
	n := uint64(binary.LittleEndian.Uint32(data[len(data)-4:]))
	if n == 0 || n*4+4 > uint64(len(data)) {
		return dst, false
	}
	end := len(data) - 4 - 4*int(n)
	// The prefix every key shares is, in a sorted block, the one the
	// first shares with the last: the walk of the last restart interval
	// finds it, and the pass checks every key has it.
	first, ok := wholeKeyAt(data, 0, end)
	if !ok {
		return dst, false
	}
	cp, ok := lastKeyPrefix(data, int(binary.LittleEndian.Uint32(data[end+4*(int(n)-1):])), end, first)
	if !ok {
		return dst, false
	}
	out, ok := blockKeysPass(data, end, first[:cp], dst)
	if !ok {
		return dst, false
	}
	return out, true
}

// lastKeyPrefix returns the bytes the user key first shares with the last
// key of the entries from off (a restart point) to end, following how
// each key's shared bytes and its own continue the one before.
func lastKeyPrefix(data []byte, off, end int, first []byte) (int, bool) {
	if off < 0 || off >= end {
		return 0, false
	}
	c, klen := 0, 0
	for off < end {
		p := data[off:end]
		shared, unshared, vlen, h := entryHeader(p)
		if !entryFits(p, h, unshared, vlen) || shared > uint64(klen) {
			return 0, false
		}
		s, u := int(shared), int(unshared)
		ulen := s + u - base.TrailerLen
		if ulen < 0 {
			return 0, false
		}
		if s <= c {
			// The key's first s bytes are the last key's, which first
			// shares up to c: its own bytes decide from there. (With s
			// above c, the last key's byte c, which differs from first's,
			// is this key's too.)
			c = s + commonPrefix(p[h:h+max(0, min(u, ulen-s))], first[s:])
		}
		c = min(c, ulen)
		klen = s + u
		off += h + u + int(vlen)
	}
	return c, true
}

// wholeKeyAt returns the user key of the entry at off, which must be
// stored whole (a restart point: no bytes shared with the key before).
func wholeKeyAt(data []byte, off, end int) ([]byte, bool) {
	if off < 0 || off >= end {
		return nil, false
	}
	p := data[off:end]
	shared, unshared, vlen, h := entryHeader(p)
	if !entryFits(p, h, unshared, vlen) || shared != 0 || unshared < base.TrailerLen {
		return nil, false
	}
	return p[h : h+int(unshared)-base.TrailerLen], true
}

// blockKeysPass appends to dst the index of the entries data[:end] of a
// block whose keys all start with prefix, and reports it; a block whose
// keys do not, or that fails otherwise, leaves dst as it was.
func blockKeysPass(data []byte, end int, prefix []byte, dst []uint64) (out []uint64, ok bool) {
	cp := len(prefix)
	if cp > maxBlockKeysPrefix {
		return dst, false
	}
	pw := (cp + 7) / 8
	maxWords := len(data) / 8 / maxBlockKeysShare
	if 1+pw >= maxWords {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, uint64(cp))
	for range pw {
		dst = append(dst, 0)
	}
	copy(wordBytes(dst[start+1:start+1+pw]), prefix)
	// kw is the current internal key's bytes cp to cp+8, zero-padded
	// past its end (klen bytes): a key's window is its own bytes, or the
	// last key's then its own, with no key rebuilt.
	klen, kw, prev := 0, uint64(0), uint64(0)
	fail := func() ([]uint64, bool) { return dst[:start], false }
	for off := 0; off < end; {
		p := data[off:end]
		var shared, unshared, vlen uint64
		var h int
		if len(p) >= 3 && p[0]|p[1]|p[2] < 0x80 { // entryHeader's fast path
			shared, unshared, vlen, h = uint64(p[0]), uint64(p[1]), uint64(p[2]), 3
		} else {
			shared, unshared, vlen, h = entryVarints(p)
		}
		if !entryFits(p, h, unshared, vlen) || shared > uint64(klen) {
			return fail()
		}
		// The key is the last key's first s bytes, then u of its own,
		// p[h:h+u].
		s, u := int(shared), int(unshared)
		klen = s + u
		ulen := klen - base.TrailerLen
		if ulen < 0 {
			return fail()
		}
		if s < cp {
			// Bytes of the prefix are this entry's own: check them (the
			// first s are the last key's, which has the prefix).
			own := p[h : h+u]
			if ulen < cp || string(own[:cp-s]) != string(prefix[s:]) {
				return fail()
			}
		}
		if d := s - cp; d <= 0 {
			kw = load8(p, h-d) // bytes cp.. of the key are its own
		} else if d < 8 {
			kw = kw&maskTop(d) | load8(p, h)>>(8*uint(d))
		}
		kw &= maskTop(klen - cp)
		w := kw & maskTop(ulen-cp)
		if w < prev || len(dst)-start >= maxWords {
			return fail()
		}
		prev = w
		dst = append(dst, w)
		off += h + u + int(vlen)
	}
	return dst, true
}

// maskTop returns a mask of the first n bytes (big-endian) of a word: none
// for n <= 0, all for n >= 8.
func maskTop(n int) uint64 {
	return ^uint64(0) << (64 - 8*uint(min(max(n, 0), 8)))
}

// load8 returns the 8 bytes of p from i (i >= 0) as a big-endian word,
// zero-padded past p's end.
func load8(p []byte, i int) uint64 {
	if i+8 <= len(p) {
		return binary.BigEndian.Uint64(p[i:])
	}
	var w uint64
	for j := i; j < len(p); j++ {
		w |= uint64(p[j]) << (56 - 8*uint(j-i))
	}
	return w
}

// commonPrefix returns the bytes a and b share at their start.
func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// wordBytes returns the bytes of words, as they lie in memory.
func wordBytes(words []uint64) []byte {
	if len(words) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 8*len(words))
}

// blockKeysAnswer is what a block's key index tells of a user key.
type blockKeysAnswer uint8

const (
	// keysOpen: the index cannot tell; the block must be searched.
	keysOpen blockKeysAnswer = iota
	// keysAbsent: the key is not in the block, and an entry after it is
	// (a seek stops in this block, at another user key).
	keysAbsent
	// keysPast: every entry of the block is before the key (a seek goes
	// on to the next block).
	keysPast
)

// findBlockKeys answers for user key ukey from a block's key index idx,
// built by buildBlockKeys.
func findBlockKeys(idx []uint64, ukey []byte) blockKeysAnswer {
	cp := int(idx[0])
	pw := (cp + 7) / 8
	w := idx[1+pw:]
	if len(w) == 0 {
		return keysOpen
	}
	prefix := wordBytes(idx[1 : 1+pw])[:cp]
	if !bytes.HasPrefix(ukey, prefix) {
		// Every key of the block starts with prefix and ukey does not:
		// it sorts before all of them or after all of them.
		if bytes.Compare(ukey, prefix) < 0 {
			return keysAbsent
		}
		return keysPast
	}
	p := base.TailWindow(ukey, cp)
	lo := base.WindowLowerBound(w, p)
	switch {
	case lo == len(w):
		return keysPast
	case w[lo] != p:
		return keysAbsent
	}
	return keysOpen
}
