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

// BoundEnd returns the user key a table's largest bound takes for a
// tombstone ending at end: the largest key [start, end) can hold when there
// is one, which is t for end = t+"\x00" (no key lies between t and
// t+"\x00"), and end itself otherwise, one key more than the tombstone
// covers. Compaction cuts its outputs inside a tombstone at such an end, so
// that the next table of the level starts after the bound.
func BoundEnd(end []byte) []byte {
	if n := len(end); n > 0 && end[n-1] == 0 {
		return end[:n-1]
	}
	return end
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
// numbers of the tombstones that span it, newest first. Seqs holds at most
// MaxFragmentSeqs of them; Truncated says older ones were left out (a
// Set then answers reads older than all of Seqs from its tombstones).
type Fragment struct {
	Start, End []byte
	Seqs       []uint64
	Truncated  bool
}

// MaxFragmentSeqs bounds the sequence numbers a fragment keeps, so that n
// nested or staircase tombstones (each spanning the next one's start)
// cost O(n) memory and O(n log n) time, not n²/2: reads at the newest
// sequence numbers, and snapshots not older than the newest few
// tombstones over a key, are answered from the fragment alone.
const MaxFragmentSeqs = 4

// Set is an immutable set of tombstones, fragmented for lookups. A nil
// *Set is the empty set; its methods may be called on it.
type Set struct {
	raw   []Tombstone // canonical order, no repeats
	frags []Fragment  // sorted by Start, disjoint
	max   uint64      // largest sequence number

	// parts, when set, makes the set their union (Compose): lookups ask
	// each part, and raw and frags are unused.
	parts []*Set
	n     int // tombstones in the parts
}

// Compose returns the union of sets without rebuilding them: its lookups
// ask each of them, so it suits a few sets (a memtable's layers, or a
// memtable's and the tables'). Fragments and FragmentAt of a composed
// set are those of its parts' union, rebuilt at each call: reads use
// MaxSeq and Covers, which ask the parts.
func Compose(sets ...*Set) *Set {
	var parts []*Set
	c := &Set{}
	for _, s := range sets {
		if s.Len() == 0 {
			continue
		}
		if s.parts != nil {
			parts = append(parts, s.parts...)
		} else {
			parts = append(parts, s)
		}
		c.n += s.Len()
		c.max = max(c.max, s.max)
	}
	switch len(parts) {
	case 0:
		return nil
	case 1:
		return parts[0]
	}
	c.parts = parts
	return c
}

// Build returns the set of ts (nil when ts holds no non-empty tombstone).
// It does not keep ts but shares the key bytes.
func Build(ts []Tombstone) *Set {
	raw := make([]Tombstone, 0, len(ts))
	for _, t := range ts {
		if bytes.Compare(t.Start, t.End) < 0 {
			raw = append(raw, t)
		}
	}
	if len(raw) == 0 {
		return nil
	}
	raw = coalesce(raw)
	slices.SortFunc(raw, compare)
	s := &Set{raw: raw, frags: fragments(raw)}
	for _, t := range raw {
		s.max = max(s.max, t.Seq)
	}
	return s
}

// coalesce merges, in place, the tombstones of one sequence number that
// overlap or touch: the pieces compaction cut one tombstone into, one per
// table it spans (a sequence number is one DeleteRange's), come back as
// that tombstone, so a set costs what its DeleteRanges do, not what they
// times the tables do. The result is in no particular order.
func coalesce(ts []Tombstone) []Tombstone {
	slices.SortFunc(ts, func(a, b Tombstone) int {
		if a.Seq != b.Seq {
			if a.Seq < b.Seq {
				return -1
			}
			return 1
		}
		return bytes.Compare(a.Start, b.Start)
	})
	out := ts[:0]
	for _, t := range ts {
		if n := len(out); n > 0 && out[n-1].Seq == t.Seq && bytes.Compare(t.Start, out[n-1].End) <= 0 {
			if bytes.Compare(t.End, out[n-1].End) > 0 {
				out[n-1].End = t.End
			}
			continue
		}
		out = append(out, t)
	}
	return out
}

// Fragments cuts ts at every start and end into disjoint fragments, in key
// order, each with the newest (at most MaxFragmentSeqs, no repeats)
// sequence numbers of the tombstones that span it. Adjacent fragments
// with the same sequence numbers are joined. Empty tombstones (End <=
// Start) are ignored.
func Fragments(ts []Tombstone) []Fragment {
	return Build(ts).Fragments()
}

// seqHeap is a max-heap of tombstones by sequence number.
type seqHeap []Tombstone

func (h seqHeap) less(i, j int) bool { return h[i].Seq > h[j].Seq }

func (h *seqHeap) push(t Tombstone) {
	*h = append(*h, t)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a.less(i, p) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *seqHeap) pop() Tombstone {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a.less(l, m) {
			m = l
		}
		if r < n && a.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// fragments sweeps the bounds of raw (canonical, non-empty) in order,
// keeping the tombstones that have started in a max-heap by sequence
// number; those that have ended are dropped when they reach the top.
func fragments(raw []Tombstone) []Fragment {
	bounds := make([][]byte, 0, 2*len(raw))
	for _, t := range raw {
		bounds = append(bounds, t.Start, t.End)
	}
	slices.SortFunc(bounds, bytes.Compare)
	bounds = slices.CompactFunc(bounds, bytes.Equal)
	var (
		frags []Fragment
		h     seqHeap
		next  int // first of raw not yet in h
		top   []Tombstone
	)
	for i := 0; i+1 < len(bounds); i++ {
		lo, hi := bounds[i], bounds[i+1]
		for next < len(raw) && bytes.Compare(raw[next].Start, lo) <= 0 {
			h.push(raw[next])
			next++
		}
		// The newest tombstones still open at lo, distinct by sequence
		// number; one more tells whether older ones remain.
		top = top[:0]
		var seqs []uint64
		truncated := false
		for len(h) > 0 {
			t := h.pop()
			if bytes.Compare(t.End, lo) <= 0 {
				continue // ended: never open again, as bounds only grow
			}
			top = append(top, t)
			if len(seqs) > 0 && seqs[len(seqs)-1] == t.Seq {
				continue
			}
			if len(seqs) == MaxFragmentSeqs {
				truncated = true
				break
			}
			seqs = append(seqs, t.Seq)
		}
		for _, t := range top {
			h.push(t)
		}
		if len(seqs) == 0 {
			continue
		}
		if n := len(frags); n > 0 && bytes.Equal(frags[n-1].End, lo) && slices.Equal(frags[n-1].Seqs, seqs) && frags[n-1].Truncated == truncated && !truncated {
			frags[n-1].End = hi
			continue
		}
		frags = append(frags, Fragment{Start: lo, End: hi, Seqs: seqs, Truncated: truncated})
	}
	return frags
}

// Len returns the number of tombstones in the set, after Build merged the
// ones of one sequence number that overlap or touch (for a composed set,
// the sum over its parts).
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	if s.parts != nil {
		return s.n
	}
	return len(s.raw)
}

// flat returns s, or for a composed set the set of its parts' union.
func (s *Set) flat() *Set {
	if s == nil || s.parts == nil {
		return s
	}
	return Build(s.Tombstones())
}

// Fragments returns the set's fragments, in key order. The caller must not
// modify them.
func (s *Set) Fragments() []Fragment {
	if s = s.flat(); s == nil {
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
	if s != nil && s.parts != nil {
		var best uint64
		found := false
		for _, p := range s.parts {
			if q, ok := p.MaxSeq(ukey, readSeq); ok && (!found || q > best) {
				best, found = q, true
			}
		}
		return best, found
	}
	f := s.find(ukey)
	if f == nil {
		return 0, false
	}
	for _, q := range f.Seqs {
		if q <= readSeq {
			return q, true
		}
	}
	if !f.Truncated {
		return 0, false
	}
	// Older than every sequence number the fragment kept: ask the
	// tombstones that start at or before ukey.
	var best uint64
	found := false
	n := sort.Search(len(s.raw), func(i int) bool { return bytes.Compare(s.raw[i].Start, ukey) > 0 })
	for _, t := range s.raw[:n] {
		if t.Seq <= readSeq && (!found || t.Seq > best) && bytes.Compare(ukey, t.End) < 0 {
			best, found = t.Seq, true
		}
	}
	return best, found
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
// ukey (nil when none).
func (s *Set) FragmentAt(ukey []byte) (f Fragment, ok bool, next []byte) {
	if s = s.flat(); s == nil {
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

// Tombstones returns the set's tombstones, as built, in canonical order
// without repeats. The caller must not modify them.
func (s *Set) Tombstones() []Tombstone {
	if s == nil {
		return nil
	}
	if s.parts != nil {
		var ts []Tombstone
		for _, p := range s.parts {
			ts = append(ts, p.raw...)
		}
		Sort(ts)
		return slices.CompactFunc(ts, func(a, b Tombstone) bool { return compare(a, b) == 0 })
	}
	return s.raw
}

// Merge returns the union of the sets (nil when all are empty). When only
// one is non-empty it is returned as is.
func Merge(sets ...*Set) *Set {
	var only *Set
	n, nonEmpty := 0, 0
	for _, s := range sets {
		if s.Len() > 0 {
			nonEmpty++
			only = s
			n += s.Len()
		}
	}
	if nonEmpty <= 1 {
		return only
	}
	ts := make([]Tombstone, 0, n)
	for _, s := range sets {
		ts = append(ts, s.Tombstones()...)
	}
	return Build(ts)
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

// uvarint is binary.Uvarint that also rejects (k <= 0) a number written
// with more bytes than it needs, so that a block has one encoding and a
// changed byte cannot leave it decoding to other valid tombstones.
func uvarint(b []byte) (uint64, int) {
	x, k := binary.Uvarint(b)
	if k > 1 && b[k-1] == 0 {
		return 0, -k
	}
	return x, k
}

// Decode parses a range-deletion block. Every length is checked against
// the bytes present before anything is sliced or allocated; a block that
// is malformed (a uvarint longer than it needs to be included), out of
// canonical order, holds an empty range or a sequence number above
// base.MaxSeqNum, or has trailing bytes, gives an error wrapping
// base.ErrCorruption. The tombstones share one copy of the keys,
// not b.
func Decode(b []byte) ([]Tombstone, error) {
	n, k := uvarint(b)
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
		l, k := uvarint(p)
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
		seq, k := uvarint(p)
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

// Visible reports whether the fragment deletes an entry with sequence
// number seq for a read at readSeq. For a truncated fragment and a read
// older than all of its Seqs it answers false, where Set.Covers consults
// the older tombstones: use Covers for reads.
func (f Fragment) Visible(seq, readSeq uint64) bool {
	for _, q := range f.Seqs {
		if q <= readSeq {
			return seq < q
		}
	}
	return false
}
