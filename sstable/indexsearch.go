package sstable

import (
	"encoding/binary"

	"github.com/bloomkv/bloomkv/internal/base"
)

// indexWindows speeds up the search of a table's index block. A point
// lookup's binary search over the index decodes an entry and compares
// whole internal keys at each of its steps: about 9 steps and 17% of a
// present key's Get in kvbench's store (tables of 500 data blocks).
// indexWindows keeps, for each index entry, the 8 bytes of its
// separator's user key that follow the prefix every separator shares, as
// a big-endian integer: a search compares integers in an array, and
// decodes entries only among those whose 8 bytes equal the key's (the
// manifest's levelIndex does the same for the tables of a level).
//
// It costs 8 bytes a data block beside the index block's own 20 to 40.
// It is built for an index with a restart point at every entry (bloomkv
// and LevelDB write them so); for another, w is nil and searches go
// through the block.
type indexWindows struct {
	// prefix is the longest prefix of every separator's user key but
	// perhaps the last's.
	prefix []byte
	// pre and mask check a prefix of at most 8 bytes against a key's
	// first 8 bytes in one comparison (mask is 0 for no prefix).
	pre, mask uint64
	// w[i] is the window of entry i's user key: the 8 bytes after
	// prefix, zero-padded. Non-decreasing, as the separators are sorted.
	w []uint64
}

// buildIndexWindows builds the windows of an index block that
// Reader.checkIndex accepted; it returns the zero indexWindows (searches
// through the block) for a block without a restart point at every entry,
// or one it cannot decode.
func buildIndexWindows(index []byte) indexWindows {
	var it blockIter
	if it.init(false, index) != nil {
		return indexWindows{}
	}
	n := it.numRestarts
	// The prefix is the one the first and the next-to-last separators
	// share (the keys are sorted, so every one between shares it). The
	// last separator is left out: a writer may shorten it to a successor
	// of the table's last key ("1" after "0000000000199997"), which would
	// leave no prefix. The window is not moved back so that the shortest
	// separator fills it (as levelIndex does): writers shorten separators
	// to the bytes that tell blocks apart, and a window moved back over
	// shared bytes would lose the ones of the longer separators.
	var first, penult, last []byte
	entries := 0
	for ok := it.First(); ok; ok = it.Next() {
		if entries >= n {
			return indexWindows{}
		}
		if r, err := it.restart(entries); err != nil || r != it.offset {
			return indexWindows{}
		}
		// An entry at a restart point may still share bytes with the
		// previous key in a hostile block that checkIndex (which reads in
		// order) accepts; seekIndex decodes entries from their restart
		// points, where such an entry does not decode, so its block keeps
		// the block's own search.
		k := it.Key()
		if len(k) < base.TrailerLen || it.keyInBuf {
			return indexWindows{}
		}
		// Every entry is a restart point sharing nothing, so its key
		// aliases the block.
		if entries == 0 {
			first = base.UserKey(k)
		}
		penult, last = last, base.UserKey(k)
		entries++
	}
	if it.Error() != nil || entries != n || entries == 0 {
		return indexWindows{}
	}
	if penult == nil { // one entry
		penult = first
	}
	cp := 0
	for cp < len(first) && cp < len(penult) && first[cp] == penult[cp] {
		cp++
	}
	x := indexWindows{prefix: append([]byte(nil), first[:cp]...), w: make([]uint64, n)}
	if cp <= 8 {
		x.pre = base.KeyWindow(x.prefix)
		x.mask = ^uint64(0) << (64 - 8*uint(cp))
	}
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		u := base.UserKey(it.Key())
		switch {
		case len(u) >= cp && string(u[:cp]) == string(x.prefix):
			x.w[i] = base.KeyWindow(u[cp:])
		case i == n-1:
			// The last separator without the prefix sorts after every
			// key with it: a window above every key's, or equal to one
			// of all 0xff bytes, which seekIndex then compares whole.
			x.w[i] = ^uint64(0)
		default:
			return indexWindows{}
		}
		i++
	}
	if it.Error() != nil || i != n {
		return indexWindows{}
	}
	return x
}

// bytes returns the memory the windows hold.
func (x *indexWindows) bytes() int { return len(x.prefix) + 8*cap(x.w) }

// window returns ukey's window after the prefix and true, or false when
// ukey does not start with the prefix (it sorts before or after every
// separator; the search goes through the block).
func (x *indexWindows) window(ukey []byte) (uint64, bool) {
	cp := len(x.prefix)
	if cp <= 8 && len(ukey) >= 8 {
		// The prefix check as one comparison of the first 8 bytes.
		if (binary.BigEndian.Uint64(ukey)^x.pre)&x.mask != 0 {
			return 0, false
		}
	} else if len(ukey) < cp || string(ukey[:cp]) != string(x.prefix) {
		return 0, false
	}
	return base.TailWindow(ukey, cp), true
}

// seekIndex positions idx, an iterator over r's index block, at the
// first entry whose key is >= seek (whose user key is ukey), as
// idx.SeekGE(seek) does, through the index's windows when it has them.
func (r *Reader) seekIndex(idx *blockIter, seek, ukey []byte) bool {
	x := &r.iwin
	if x.w == nil || len(seek) < base.TrailerLen {
		return idx.SeekGE(seek)
	}
	p, ok := x.window(ukey)
	if !ok {
		return idx.SeekGE(seek)
	}
	lo := base.WindowLowerBound(x.w, p)
	if lo < len(x.w) && x.w[lo] == p {
		// Entries whose windows equal ukey's: the first whose whole key
		// is >= seek is among them, or is the first after them.
		hi := lo + base.WindowLowerBound(x.w[lo:], p+1)
		if p == ^uint64(0) {
			hi = len(x.w)
		}
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			k, ok := idx.restartKey(m)
			if !ok {
				return false
			}
			if base.CompareInternal(k, seek) < 0 {
				lo = m + 1
			} else {
				hi = m
			}
		}
	}
	if lo == len(x.w) {
		return idx.invalidate()
	}
	return idx.seekRestart(lo)
}
