package memtable

import (
	"encoding/binary"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Iterator walks a memtable's entries in internal-key order. It implements
// base.InternalIterator. Key and Value alias memtable memory that is never
// modified, so they stay valid beyond the next positioning call, for as long
// as the memtable is alive. An Iterator must not be used by more than one
// goroutine at a time; it never fails, so Error and Close return nil.
type Iterator struct {
	r  reader
	nd []byte // current node; nil when not Valid
}

var _ base.InternalIterator = (*Iterator)(nil)

// set positions the iterator at ref; the head sentinel and nilRef make it
// invalid.
func (it *Iterator) set(ref uint32) bool {
	if ref == nilRef || ref == headRef {
		it.nd = nil
		return false
	}
	it.nd = it.r.node(ref)
	return true
}

// First moves to the first entry.
func (it *Iterator) First() bool {
	return it.set(link(it.r.node(headRef), 0).Load())
}

// Last moves to the last entry, walking each level as far as it goes.
func (it *Iterator) Last() bool {
	x, xnd := headRef, it.r.node(headRef)
	for level := int(it.r.m.height.Load()) - 1; level >= 0; level-- {
		for nx := link(xnd, level).Load(); nx != nilRef; nx = link(xnd, level).Load() {
			x, xnd = nx, it.r.node(nx)
		}
	}
	return it.set(x)
}

// SeekGE moves to the first entry whose internal key is >= ikey (in
// base.CompareInternal order).
func (it *Iterator) SeekGE(ikey []byte) bool {
	_, next := it.r.findLT(base.UserKey(ikey), base.Trailer(ikey), nil, nil)
	return it.set(next)
}

// SeekLT moves to the last entry whose internal key is < ikey.
func (it *Iterator) SeekLT(ikey []byte) bool {
	prev, _ := it.r.findLT(base.UserKey(ikey), base.Trailer(ikey), nil, nil)
	return it.set(prev)
}

// Next moves to the following entry.
func (it *Iterator) Next() bool {
	if it.nd == nil {
		return false
	}
	return it.set(link(it.nd, 0).Load())
}

// Prev moves to the preceding entry. The list has no back pointers, so this
// searches from the head: O(log n).
func (it *Iterator) Prev() bool {
	if it.nd == nil {
		return false
	}
	ik := nodeIKey(it.nd)
	n := len(ik) - base.TrailerLen
	prev, _ := it.r.findLT(ik[:n], binary.LittleEndian.Uint64(ik[n:]), nil, nil)
	return it.set(prev)
}

// Valid reports whether the iterator is at an entry.
func (it *Iterator) Valid() bool { return it.nd != nil }

// Key returns the current entry's internal key, or nil when not Valid.
func (it *Iterator) Key() []byte {
	if it.nd == nil {
		return nil
	}
	return nodeIKey(it.nd)
}

// Value returns the current entry's value, or nil when not Valid.
func (it *Iterator) Value() []byte {
	if it.nd == nil {
		return nil
	}
	return it.r.value(it.nd)
}

// Error returns nil: a memtable iterator cannot fail.
func (it *Iterator) Error() error { return nil }

// Close invalidates the iterator. It returns nil.
func (it *Iterator) Close() error {
	it.nd = nil
	return nil
}
