package sstable

import (
	"bytes"
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
// over a quarter of the block) get none.

// maxBlockKeysShare is the index's largest size, as a fraction of its
// block: 8 bytes an entry of 32 or more.
const maxBlockKeysShare = 4

// buildBlockKeys appends to dst the key index of data block data and
// returns it, or returns dst unchanged and false when the block gets
// none: it is malformed (blockIter reports it when searched), its keys
// are not internal keys, its user keys are out of order, or its entries
// are too small. It reads every entry once, and the last restart
// interval twice, through it (whose key buffer it reuses).
func buildBlockKeys(it *blockIter, data []byte, dst []uint64) ([]uint64, bool) {
	if it.init(false, data) != nil || !it.Last() || len(it.Key()) < base.TrailerLen {
		return dst, false
	}
	// The first entry is stored whole (it is a restart point): decoding
	// it leaves the last key, in the iterator's buffer, as it is.
	last := base.UserKey(it.Key())
	if !it.First() || len(it.Key()) < base.TrailerLen {
		return dst, false
	}
	first := base.UserKey(it.Key())
	cp := 0
	for cp < len(first) && cp < len(last) && first[cp] == last[cp] {
		cp++
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
	copy(wordBytes(dst[start+1:start+1+pw]), first[:cp])
	prefix := wordBytes(dst[start+1 : start+1+pw])[:cp]
	prev := uint64(0)
	for ok := true; ok; ok = it.Next() {
		k := it.Key()
		if len(k) < base.TrailerLen {
			return dst[:start], false
		}
		uk := base.UserKey(k)
		// Every key of a sorted block starts with the prefix its first
		// and last share, and its window is no smaller than the one
		// before.
		if !bytes.HasPrefix(uk, prefix) {
			return dst[:start], false
		}
		w := base.TailWindow(uk, cp)
		if w < prev || len(dst)-start >= maxWords {
			return dst[:start], false
		}
		prev = w
		dst = append(dst, w)
	}
	if it.Error() != nil {
		return dst[:start], false
	}
	return dst, true
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
