package sstable

import (
	"bytes"
	"errors"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/cache"
)

// Iterator is a two-level iterator over a table: an index block iterator
// picks the data block, and a block iterator walks it. Data blocks are read
// lazily, through the Reader's block cache. It implements
// base.InternalIterator. Errors are sticky: after an error every
// positioning call returns false and Error reports it. An Iterator is not
// safe for concurrent use.
type Iterator struct {
	r     *Reader
	index blockIter
	data  blockIter
	// dataOK is true when data holds the block that index points at.
	dataOK bool
	err    error
	closed bool
	// indexKeyArr and dataKeyArr back the block iterators' key buffers, so
	// a fresh Iterator rebuilds prefix-compressed keys of typical length
	// without allocating (a new Iterator is made for every DB seek).
	indexKeyArr, dataKeyArr [48]byte
	// uncached iterators (NewCompactionIterator) bypass the block cache
	// and read blocks into rbuf, decoding them into dbuf.
	uncached   bool
	rbuf, dbuf []byte
	// blk is the cached data block that data walks, referenced until the
	// iterator moves to another block or is closed (nil when uncached).
	blk *cache.Block
	// lower and upper are the user-key bounds of SetBounds.
	lower, upper []byte
}

// SetBounds tells the iterator that its caller wants no user key below
// lower nor at or above upper (nil: unbounded on that side). The iterator
// then never loads a data block whose keys all lie outside the bounds when
// it steps from block to block: Next stops (becomes invalid) instead of
// reading a block whose first key is >= upper, and Prev instead of reading
// one whose last key is < lower. Entries outside the bounds in a block it
// has loaded may still be returned: the caller filters them, and positions
// with SeekGE(lower) and SeekLT(upper) rather than First and Last.
func (it *Iterator) SetBounds(lower, upper []byte) {
	it.lower, it.upper = lower, upper
}

var _ base.InternalIterator = (*Iterator)(nil)

// initKeyBufs points the block iterators' empty key buffers at the
// inline arrays. blockIter.init keeps keyBuf, so this holds across blocks.
func (it *Iterator) initKeyBufs() {
	if it.index.keyBuf == nil {
		it.index.keyBuf = it.indexKeyArr[:0]
	}
	if it.data.keyBuf == nil {
		it.data.keyBuf = it.dataKeyArr[:0]
	}
}

// loadBlock points data at the block of the current index entry.
func (it *Iterator) loadBlock() bool {
	it.dataOK = false
	h, n, err := decodeHandle(it.index.Value())
	if err == nil && n != len(it.index.Value()) {
		err = base.CorruptionErrorf("sstable: index entry has trailing bytes")
	}
	if err != nil {
		return it.fail(err)
	}
	var b []byte
	if it.uncached {
		b, err = it.r.readUncachedBlock(h, &it.rbuf, &it.dbuf)
	} else {
		it.releaseBlock()
		var blk *cache.Block
		if blk, err = it.r.readDataBlock(h); err == nil {
			it.blk, b = blk, blk.Data()
		}
	}
	if err != nil {
		return it.fail(err)
	}
	if err := it.data.init(false, b); err != nil {
		return it.fail(err)
	}
	it.dataOK = true
	return true
}

// releaseBlock drops the iterator's reference to its current data block,
// after which the block iterator must not read it (callers re-initialize
// it or mark it invalid).
func (it *Iterator) releaseBlock() {
	if it.blk != nil {
		it.blk.Release()
		it.blk = nil
	}
}

func (it *Iterator) fail(err error) bool {
	if it.err == nil {
		it.err = err
	}
	it.dataOK = false
	return false
}

// indexDone handles an index iterator that is no longer valid.
func (it *Iterator) indexDone() bool {
	it.dataOK = false
	if err := it.index.Error(); err != nil {
		return it.fail(err)
	}
	return false
}

// skipForward moves to the first entry at or after the current position,
// crossing into later blocks while the current one is exhausted.
func (it *Iterator) skipForward() bool {
	for !it.data.Valid() {
		if err := it.data.Error(); err != nil {
			return it.fail(err)
		}
		// The current separator is >= every key of this block and < every
		// key of the next: at or past upper, the next block is too.
		if it.upper != nil && it.index.Valid() && bytes.Compare(base.UserKey(it.index.Key()), it.upper) >= 0 {
			it.dataOK = false
			return false
		}
		if !it.index.Next() {
			return it.indexDone()
		}
		if !it.loadBlock() {
			return false
		}
		it.data.First()
	}
	return true
}

// skipBackward moves to the last entry at or before the current position,
// crossing into earlier blocks while the current one is exhausted.
func (it *Iterator) skipBackward() bool {
	for !it.data.Valid() {
		if err := it.data.Error(); err != nil {
			return it.fail(err)
		}
		if !it.index.Prev() {
			return it.indexDone()
		}
		// The previous block's keys are <= its separator: below lower,
		// all of them are.
		if it.lower != nil && bytes.Compare(base.UserKey(it.index.Key()), it.lower) < 0 {
			it.dataOK = false
			return false
		}
		if !it.loadBlock() {
			return false
		}
		it.data.Last()
	}
	return true
}

// First moves to the first entry of the table.
func (it *Iterator) First() bool {
	if it.err != nil {
		return false
	}
	it.initKeyBufs()
	if !it.index.First() {
		return it.indexDone()
	}
	if !it.loadBlock() {
		return false
	}
	it.data.First()
	return it.skipForward()
}

// Last moves to the last entry of the table.
func (it *Iterator) Last() bool {
	if it.err != nil {
		return false
	}
	it.initKeyBufs()
	if !it.index.Last() {
		return it.indexDone()
	}
	if !it.loadBlock() {
		return false
	}
	it.data.Last()
	return it.skipBackward()
}

// SeekGE moves to the first entry whose internal key is >= ikey.
func (it *Iterator) SeekGE(ikey []byte) bool {
	if it.err != nil {
		return false
	}
	it.initKeyBufs()
	if !it.r.seekIndex(&it.index, ikey, base.UserKey(ikey)) {
		return it.indexDone()
	}
	if !it.loadBlock() {
		return false
	}
	it.data.SeekGE(ikey)
	return it.skipForward()
}

// SeekLT moves to the last entry whose internal key is < ikey.
func (it *Iterator) SeekLT(ikey []byte) bool {
	if it.err != nil {
		return false
	}
	it.initKeyBufs()
	if !it.r.seekIndex(&it.index, ikey, base.UserKey(ikey)) {
		if it.index.Error() != nil {
			return it.indexDone()
		}
		// ikey is past every separator, so every entry is < ikey.
		return it.Last()
	}
	if !it.loadBlock() {
		return false
	}
	it.data.SeekLT(ikey)
	return it.skipBackward()
}

// Next moves to the next entry. It must only be called when Valid.
func (it *Iterator) Next() bool {
	if it.err != nil || !it.dataOK {
		return false
	}
	it.data.Next()
	return it.skipForward()
}

// Prev moves to the previous entry. It must only be called when Valid.
func (it *Iterator) Prev() bool {
	if it.err != nil || !it.dataOK {
		return false
	}
	it.data.Prev()
	return it.skipBackward()
}

// Valid reports whether the iterator is at an entry.
func (it *Iterator) Valid() bool { return it.err == nil && it.dataOK && it.data.Valid() }

// Key returns the internal key of the current entry, valid until the next
// positioning call.
func (it *Iterator) Key() []byte {
	if !it.Valid() {
		return nil
	}
	return it.data.Key()
}

// Value returns the value of the current entry, valid until the next
// positioning call.
func (it *Iterator) Value() []byte {
	if !it.Valid() {
		return nil
	}
	return it.data.Value()
}

// Error returns the first error the iterator met.
func (it *Iterator) Error() error { return it.err }

// Close releases the iterator and returns Error().
func (it *Iterator) Close() error {
	err := it.err
	if it.closed {
		if err == errIterClosed {
			return nil
		}
		return err
	}
	it.closed = true
	it.dataOK = false
	// Abandoned, not released: a value read just before Close keeps its
	// bytes (Key and Value stay valid until the next positioning call,
	// and Close is not one).
	if it.blk != nil {
		it.blk.Abandon()
		it.blk = nil
	}
	it.data = blockIter{}
	it.index = blockIter{}
	if err == nil {
		it.err = errIterClosed
	}
	return err
}

// errIterClosed is the error of an Iterator after Close.
var errIterClosed = errors.New("sstable: iterator is closed")
