package compaction

import (
	"github.com/bloomkv/bloomkv/internal/base"
)

// MergingIterator merges several InternalIterators into one sorted stream
// (base.CompareInternal), in both directions. Its children must not hold
// the same internal key twice (sequence numbers are unique across a store),
// which lets a direction change re-seek the other children exactly.
//
// The heap compares the children's keys as they were when each child last
// moved, kept in keys: a child's key stays valid until it moves, and only
// the top child moves between two heap repairs. So a step costs one call
// of the moved child's Key, not two per comparison.
type MergingIterator struct {
	iters []base.InternalIterator
	heap  []int    // indexes into iters of the valid children, as a heap
	keys  [][]byte // keys[i] is iters[i].Key() while i is in the heap
	dir   int      // +1 forward (min-heap), -1 reverse (max-heap)
	err   error
	// keyArr holds keys for up to len(keyArr) children, so that a
	// MergingIterator kept inside a larger (pooled) struct allocates
	// nothing for them.
	keyArr [12][]byte
}

var _ base.InternalIterator = (*MergingIterator)(nil)

// NewMergingIterator returns an iterator over the union of iters. It takes
// ownership of them: Close closes every child.
func NewMergingIterator(iters ...base.InternalIterator) *MergingIterator {
	m := new(MergingIterator)
	m.Init(iters, nil)
	return m
}

// Init makes *m an iterator over the union of iters, as NewMergingIterator
// does, keeping its heap in heap's array when its capacity holds
// len(iters) (else in a new one): for a caller that keeps the iterator and
// the array inside a larger struct and so saves their allocations. It
// takes ownership of iters.
func (m *MergingIterator) Init(iters []base.InternalIterator, heap []int) {
	if cap(heap) < len(iters) {
		heap = make([]int, 0, len(iters))
	}
	m.iters, m.heap, m.dir, m.err = iters, heap[:0], 1, nil
	m.keyArr = [len(m.keyArr)][]byte{}
	if len(iters) <= len(m.keyArr) {
		m.keys = m.keyArr[:len(iters)]
	} else {
		m.keys = make([][]byte, len(iters))
	}
}

func (m *MergingIterator) less(a, b int) bool {
	c := base.CompareInternal(m.keys[m.heap[a]], m.keys[m.heap[b]])
	if m.dir < 0 {
		return c > 0
	}
	return c < 0
}

func (m *MergingIterator) swap(a, b int) { m.heap[a], m.heap[b] = m.heap[b], m.heap[a] }

func (m *MergingIterator) down(i int) {
	n := len(m.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && m.less(r, l) {
			j = r
		}
		if !m.less(j, i) {
			return
		}
		m.swap(i, j)
		i = j
	}
}

// rebuild collects the valid children into the heap and heapifies it. It
// records the first child error.
func (m *MergingIterator) rebuild() bool {
	m.heap = m.heap[:0]
	for i, it := range m.iters {
		if it.Valid() {
			m.heap = append(m.heap, i)
			m.keys[i] = it.Key()
		} else if err := it.Error(); err != nil && m.err == nil {
			m.err = err
		}
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return m.Valid()
}

// fixTop restores the heap after the top child moved; ok is what the
// child's move returned (whether it is still valid).
func (m *MergingIterator) fixTop(ok bool) bool {
	t := m.heap[0]
	top := m.iters[t]
	if ok {
		m.keys[t] = top.Key()
		if len(m.heap) > 1 {
			m.down(0)
		}
		return m.err == nil
	}
	if err := top.Error(); err != nil && m.err == nil {
		m.err = err
	}
	m.keys[t] = nil
	last := len(m.heap) - 1
	m.heap[0] = m.heap[last]
	m.heap = m.heap[:last]
	if last > 1 {
		m.down(0)
	}
	return m.Valid()
}

// First implements base.InternalIterator.
func (m *MergingIterator) First() bool {
	m.err = nil
	m.dir = 1
	for _, it := range m.iters {
		it.First()
	}
	return m.rebuild()
}

// Last implements base.InternalIterator.
func (m *MergingIterator) Last() bool {
	m.err = nil
	m.dir = -1
	for _, it := range m.iters {
		it.Last()
	}
	return m.rebuild()
}

// SeekGE implements base.InternalIterator.
func (m *MergingIterator) SeekGE(ikey []byte) bool {
	m.err = nil
	m.dir = 1
	for _, it := range m.iters {
		it.SeekGE(ikey)
	}
	return m.rebuild()
}

// SeekLT implements base.InternalIterator.
func (m *MergingIterator) SeekLT(ikey []byte) bool {
	m.err = nil
	m.dir = -1
	for _, it := range m.iters {
		it.SeekLT(ikey)
	}
	return m.rebuild()
}

// Next implements base.InternalIterator.
func (m *MergingIterator) Next() bool {
	if !m.Valid() {
		return false
	}
	if m.dir < 0 {
		// Turn around: every other child must be positioned at the first
		// key after the current one.
		cur := m.heap[0]
		key := append([]byte(nil), m.iters[cur].Key()...)
		for i, it := range m.iters {
			if i == cur {
				continue
			}
			if it.SeekGE(key) && base.CompareInternal(it.Key(), key) == 0 {
				it.Next()
			}
		}
		m.iters[cur].Next()
		m.dir = 1
		return m.rebuild()
	}
	return m.fixTop(m.iters[m.heap[0]].Next())
}

// Prev implements base.InternalIterator.
func (m *MergingIterator) Prev() bool {
	if !m.Valid() {
		return false
	}
	if m.dir > 0 {
		cur := m.heap[0]
		key := append([]byte(nil), m.iters[cur].Key()...)
		for i, it := range m.iters {
			if i == cur {
				continue
			}
			it.SeekLT(key)
		}
		m.iters[cur].Prev()
		m.dir = -1
		return m.rebuild()
	}
	return m.fixTop(m.iters[m.heap[0]].Prev())
}

// Valid implements base.InternalIterator. A child error ends iteration.
func (m *MergingIterator) Valid() bool { return m.err == nil && len(m.heap) > 0 }

// Key implements base.InternalIterator.
func (m *MergingIterator) Key() []byte { return m.keys[m.heap[0]] }

// Value implements base.InternalIterator.
func (m *MergingIterator) Value() []byte { return m.iters[m.heap[0]].Value() }

// Error implements base.InternalIterator.
func (m *MergingIterator) Error() error { return m.err }

// Close implements base.InternalIterator: it closes every child and
// returns the first error met.
func (m *MergingIterator) Close() error {
	err := m.err
	for _, it := range m.iters {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}
	m.iters, m.heap, m.keys = nil, nil, nil
	m.keyArr = [len(m.keyArr)][]byte{}
	return err
}
