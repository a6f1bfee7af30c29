// Package rangedel holds range tombstones: the writes of DB.DeleteRange.
//
// A tombstone [Start, End)#Seq hides every entry whose user key k has
// Start <= k < End and whose sequence number is below Seq, from every read
// at a sequence number at or above Seq. Tombstones live apart from the
// point entries: in a list per memtable, in a range-deletion block per
// table (Encode, Decode), and, for reads, in a Set: the tombstones cut at
// every start and end into fragments that do not overlap, each with the
// sequence numbers of the tombstones that span it, so that the newest
// tombstone covering a key is found by one binary search.
package rangedel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Tombstone deletes the user keys in [Start, End) older than Seq.
type Tombstone struct {
	Start, End []byte
	Seq        uint64
}

// Contains reports whether ukey lies in [t.Start, t.End).
func (t Tombstone) Contains(ukey []byte) bool {
	return bytes.Compare(t.Start, ukey) <= 0 && bytes.Compare(ukey, t.End) < 0
}

// String renders t as tools print it: ["start", "end")#seq.
func (t Tombstone) String() string {
	return fmt.Sprintf("[%q, %q)#%d", t.Start, t.End, t.Seq)
}

// compare orders tombstones canonically: start ascending, end ascending,
// sequence number descending.
func compare(a, b Tombstone) int {
	if c := bytes.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	if c := bytes.Compare(a.End, b.End); c != 0 {
		return c
	}
	switch {
	case a.Seq > b.Seq:
		return -1
	case a.Seq < b.Seq:
		return 1
	}
	return 0
}

// Sort puts ts in the canonical order Encode writes.
func Sort(ts []Tombstone) { slices.SortFunc(ts, compare) }

// Fragment is a key range no tombstone boundary cuts, with the sequence
// numbers of the tombstones that span it, newest first.
type Fragment struct {
	Start, End []byte
	Seqs       []uint64
}

// Set is an immutable set of tombstones, fragmented for lookups. A nil
// *Set is the empty set; its methods may be called on it.
type Set struct {
	frags []Fragment // sorted by Start, disjoint
	n     int        // tombstones it was built from
	max   uint64     // largest sequence number
}

// Build returns the set of ts (nil when ts is empty). It does not keep ts
// but shares the key bytes.
func Build(ts []Tombstone) *Set {
	if len(ts) == 0 {
		return nil
	}
	s := &Set{n: len(ts), frags: Fragments(ts)}
	for _, t := range ts {
		s.max = max(s.max, t.Seq)
	}
	return s
}

// Fragments cuts ts at every start and end into disjoint fragments, in key
// order, each with the sequence numbers (newest first, no repeats) of the
// tombstones that span it. Adjacent fragments with the same sequence
// numbers are joined. Empty tombstones (End <= Start) are ignored.
func Fragments(ts []Tombstone) []Fragment {
	var bounds [][]byte
	for _, t := range ts {
		if bytes.Compare(t.Start, t.End) < 0 {
			bounds = append(bounds, t.Start, t.End)
		}
	}
	if len(bounds) == 0 {
		return nil
	}
	slices.SortFunc(bounds, bytes.Compare)
	bounds = slices.CompactFunc(bounds, bytes.Equal)
	sorted := slices.Clone(ts)
	slices.SortFunc(sorted, compare)
	var (
		frags  []Fragment
		active []Tombstone // tombstones started before the current bound
		next   int         // first of sorted not yet active
	)
	for i := 0; i+1 < len(bounds); i++ {
		lo, hi := bounds[i], bounds[i+1]
		for next < len(sorted) && bytes.Compare(sorted[next].Start, lo) <= 0 {
			if bytes.Compare(sorted[next].Start, sorted[next].End) < 0 {
				active = append(active, sorted[next])
			}
			next++
		}
		active = slices.DeleteFunc(active, func(t Tombstone) bool { return bytes.Compare(t.End, lo) <= 0 })
		if len(active) == 0 {
			continue
		}
		seqs := make([]uint64, 0, len(active))
		for _, t := range active {
			seqs = append(seqs, t.Seq)
		}
		slices.SortFunc(seqs, func(a, b uint64) int {
			switch {
			case a > b:
				return -1
			case a < b:
				return 1
			}
			return 0
		})
		seqs = slices.Compact(seqs)
		if n := len(frags); n > 0 && bytes.Equal(frags[n-1].End, lo) && slices.Equal(frags[n-1].Seqs, seqs) {
			frags[n-1].End = hi
			continue
		}
		frags = append(frags, Fragment{Start: lo, End: hi, Seqs: seqs})
	}
	return frags
}

// Len returns the number of tombstones the set was built from.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Fragments returns the set's fragments, in key order. The caller must not
// modify them.
func (s *Set) Fragments() []Fragment {
	if s == nil {
		return nil
	}
	return s.frags
}

// find returns the fragment holding ukey, or nil.
func (s *Set) find(ukey []byte) *Fragment {
	if s == nil {
		return nil
	}
	// The last fragment starting at or before ukey.
	i := sort.Search(len(s.frags), func(i int) bool { return bytes.Compare(s.frags[i].Start, ukey) > 0 }) - 1
	if i < 0 || bytes.Compare(ukey, s.frags[i].End) >= 0 {
		return nil
	}
	return &s.frags[i]
}

// MaxSeq returns the sequence number of the newest tombstone that covers
// ukey and that a read at readSeq sees (Seq <= readSeq), and false when
// there is none.
func (s *Set) MaxSeq(ukey []byte, readSeq uint64) (uint64, bool) {
	f := s.find(ukey)
	if f == nil {
		return 0, false
	}
	for _, q := range f.Seqs {
		if q <= readSeq {
			return q, true
		}
	}
	return 0, false
}

// Covers reports whether a read at readSeq sees a tombstone that deletes
// the entry of ukey with sequence number seq.
func (s *Set) Covers(ukey []byte, seq, readSeq uint64) bool {
	if s == nil || seq >= s.max {
		return false
	}
	q, ok := s.MaxSeq(ukey, readSeq)
	return ok && seq < q
}

// FragmentAt returns the fragment that holds ukey and whether there is
// one; when there is none, next is the start of the first fragment after
// ukey (nil when none). Iterators use it to check a run of keys with one
// search.
func (s *Set) FragmentAt(ukey []byte) (f Fragment, ok bool, next []byte) {
	if s == nil {
		return Fragment{}, false, nil
	}
	i := sort.Search(len(s.frags), func(i int) bool { return bytes.Compare(s.frags[i].Start, ukey) > 0 })
	if i > 0 && bytes.Compare(ukey, s.frags[i-1].End) < 0 {
		return s.frags[i-1], true, nil
	}
	if i < len(s.frags) {
		return Fragment{}, false, s.frags[i].Start
	}
	return Fragment{}, false, nil
}

// Tombstones returns the set as tombstones, one per fragment and sequence
// number, in canonical order.
func (s *Set) Tombstones() []Tombstone {
	if s == nil {
		return nil
	}
	var ts []Tombstone
	for _, f := range s.frags {
		for _, q := range f.Seqs {
			ts = append(ts, Tombstone{Start: f.Start, End: f.End, Seq: q})
		}
	}
	return ts
}

// Merge returns the union of the sets (nil when all are empty).
func Merge(sets ...*Set) *Set {
	var ts []Tombstone
	var only *Set
	nonEmpty := 0
	for _, s := range sets {
		if s.Len() > 0 {
			nonEmpty++
			only = s
			ts = append(ts, s.Tombstones()...)
		}
	}
	if nonEmpty <= 1 {
		return only
	}
	return Build(ts)
}

// Visible reports whether the fragment deletes an entry with sequence
// number seq for a read at readSeq.
func (f Fragment) Visible(seq, readSeq uint64) bool {
	for _, q := range f.Seqs {
		if q <= readSeq {
			return seq < q
		}
	}
	return false
}

// minEncodedLen bounds the count a block may claim: each tombstone takes
// at least 4 bytes (two lengths, a one-byte end, a sequence number).
const minEncodedLen = 4

// Encode appends to dst the range-deletion block of ts, which must be in
// canonical order (Sort): a uvarint count, then per tombstone the
// uvarint-prefixed start, the uvarint-prefixed end and the uvarint
// sequence number.
func Encode(dst []byte, ts []Tombstone) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ts)))
	for _, t := range ts {
		dst = binary.AppendUvarint(dst, uint64(len(t.Start)))
		dst = append(dst, t.Start...)
		dst = binary.AppendUvarint(dst, uint64(len(t.End)))
		dst = append(dst, t.End...)
		dst = binary.AppendUvarint(dst, t.Seq)
	}
	return dst
}

// Decode parses a range-deletion block. Every length is checked against
// the bytes present before anything is sliced or allocated; a block that
// is malformed, out of canonical order, holds an empty range or a sequence
// number above base.MaxSeqNum, or has trailing bytes, gives an error
// wrapping base.ErrCorruption. The tombstones share one copy of the keys,
// not b.
func Decode(b []byte) ([]Tombstone, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, base.CorruptionErrorf("range-deletion block: bad count")
	}
	p := b[k:]
	if n > uint64(len(p)/minEncodedLen) {
		return nil, base.CorruptionErrorf("range-deletion block: %d tombstones cannot fit in %d bytes", n, len(p))
	}
	keys := make([]byte, 0, len(p))
	ts := make([]Tombstone, 0, n)
	field := func(what string, i uint64) ([]byte, error) {
		l, k := binary.Uvarint(p)
		if k <= 0 {
			return nil, base.CorruptionErrorf("range-deletion block: tombstone %d: bad %s length", i, what)
		}
		p = p[k:]
		if l > uint64(len(p)) {
			return nil, base.CorruptionErrorf("range-deletion block: tombstone %d: %s of %d bytes runs past the %d left", i, what, l, len(p))
		}
		at := len(keys)
		keys = append(keys, p[:l]...)
		p = p[l:]
		return keys[at:len(keys):len(keys)], nil
	}
	for i := uint64(0); i < n; i++ {
		start, err := field("start", i)
		if err != nil {
			return nil, err
		}
		end, err := field("end", i)
		if err != nil {
			return nil, err
		}
		seq, k := binary.Uvarint(p)
		if k <= 0 {
			return nil, base.CorruptionErrorf("range-deletion block: tombstone %d: bad sequence number", i)
		}
		p = p[k:]
		t := Tombstone{Start: start, End: end, Seq: seq}
		switch {
		case seq > base.MaxSeqNum:
			return nil, base.CorruptionErrorf("range-deletion block: tombstone %d: sequence number %d is too large", i, seq)
		case bytes.Compare(start, end) >= 0:
			return nil, base.CorruptionErrorf("range-deletion block: tombstone %d %s is empty", i, t)
		case len(ts) > 0 && compare(ts[len(ts)-1], t) >= 0:
			return nil, base.CorruptionErrorf("range-deletion block: tombstone %d %s is out of order", i, t)
		}
		ts = append(ts, t)
	}
	if len(p) != 0 {
		return nil, base.CorruptionErrorf("range-deletion block: %d trailing bytes", len(p))
	}
	return ts, nil
}
