package rangedel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// alphabet is the small key space the model test draws tombstone bounds
// from: it has the empty key, keys that are prefixes of others and keys
// that differ only by a trailing zero byte, so random tombstones share
// starts and ends and overlap a lot.
var alphabet = [][]byte{
	{}, []byte("\x00"), []byte("a"), []byte("a\x00"), []byte("aa"), []byte("aab"),
	[]byte("ab"), []byte("b"), []byte("ba"), []byte("c"), []byte("\xff"),
}

// probeKeys are the keys the model test looks up: every alphabet key (so
// every piece between two bounds is probed at its start) and keys between
// and beyond them.
var probeKeys = append(slices.Clone(alphabet),
	[]byte("\x00\x00"), []byte("a\x00\x00"), []byte("a0"), []byte("aaa"), []byte("aac"),
	[]byte("abc"), []byte("bb"), []byte("bz"), []byte("d"), []byte("\xff\x00"), []byte("\xff\xff"),
)

// --- brute force over every tombstone ---

func empty(t Tombstone) bool { return bytes.Compare(t.Start, t.End) >= 0 }

// bruteSeqs returns the sequence numbers of the tombstones holding key,
// newest first, without repeats.
func bruteSeqs(ts []Tombstone, key []byte) []uint64 {
	var seqs []uint64
	for _, t := range ts {
		if t.Contains(key) && !slices.Contains(seqs, t.Seq) {
			seqs = append(seqs, t.Seq)
		}
	}
	slices.Sort(seqs)
	slices.Reverse(seqs)
	return seqs
}

func bruteMaxSeq(ts []Tombstone, key []byte, readSeq uint64) (uint64, bool) {
	var best uint64
	found := false
	for _, t := range ts {
		if t.Contains(key) && t.Seq <= readSeq && (!found || t.Seq > best) {
			best, found = t.Seq, true
		}
	}
	return best, found
}

func bruteCovers(ts []Tombstone, key []byte, seq, readSeq uint64) bool {
	for _, t := range ts {
		if t.Contains(key) && t.Seq <= readSeq && seq < t.Seq {
			return true
		}
	}
	return false
}

// bruteNext returns the smallest start above key of a non-empty tombstone:
// the start of the first fragment after an uncovered key.
func bruteNext(ts []Tombstone, key []byte) []byte {
	var next []byte
	for _, t := range ts {
		if !empty(t) && bytes.Compare(t.Start, key) > 0 && (next == nil || bytes.Compare(t.Start, next) < 0) {
			next = t.Start
		}
	}
	return next
}

// probeSeqs returns the read and entry sequence numbers worth asking
// about for ts: 0, every tombstone's seq and its neighbours, and the top.
func probeSeqs(ts []Tombstone) []uint64 {
	seqs := []uint64{0, 1, base.MaxSeqNum, math.MaxUint64}
	for _, t := range ts {
		seqs = append(seqs, t.Seq, t.Seq+1)
		if t.Seq > 0 {
			seqs = append(seqs, t.Seq-1)
		}
	}
	slices.Sort(seqs)
	return slices.Compact(seqs)
}

// distinctSeqsOver counts the distinct sequence numbers of the non-empty
// tombstones of ts that cover k.
func distinctSeqsOver(ts []Tombstone, k []byte) int {
	seen := map[uint64]bool{}
	for _, t := range ts {
		if !empty(t) && t.Contains(k) {
			seen[t.Seq] = true
		}
	}
	return len(seen)
}

// distinctNonEmpty counts the distinct non-empty tombstones of ts.
func distinctNonEmpty(ts []Tombstone) int {
	seen := map[string]bool{}
	for _, t := range ts {
		if !empty(t) {
			seen[fmt.Sprintf("%q %q %d", t.Start, t.End, t.Seq)] = true
		}
	}
	return len(seen)
}

// coalescedCount is the number of tombstones a set of ts holds once the
// tombstones of one sequence number that overlap or touch are merged:
// the distinct starts s of non-empty tombstones that no other non-empty
// tombstone of the same sequence number reaches from before
// (u.Start < s <= u.End).
func coalescedCount(ts []Tombstone) int {
	seen := map[string]bool{}
	n := 0
	for _, t := range ts {
		if empty(t) || seen[fmt.Sprintf("%q %d", t.Start, t.Seq)] {
			continue
		}
		seen[fmt.Sprintf("%q %d", t.Start, t.Seq)] = true
		reached := false
		for _, u := range ts {
			if !empty(u) && u.Seq == t.Seq && bytes.Compare(u.Start, t.Start) < 0 && bytes.Compare(t.Start, u.End) <= 0 {
				reached = true
				break
			}
		}
		if !reached {
			n++
		}
	}
	return n
}

// checkFragments checks the structure of frags, cut from ts: non-empty,
// sorted and disjoint, seqs newest first without repeats, touching
// fragments with equal seqs joined, and every bound a bound of ts.
func checkFragments(tb testing.TB, ts []Tombstone, frags []Fragment) {
	tb.Helper()
	isBound := func(k []byte) bool {
		for _, t := range ts {
			if !empty(t) && (bytes.Equal(t.Start, k) || bytes.Equal(t.End, k)) {
				return true
			}
		}
		return false
	}
	for i, f := range frags {
		if bytes.Compare(f.Start, f.End) >= 0 {
			tb.Fatalf("fragment %d [%q, %q) is empty; tombstones %v", i, f.Start, f.End, ts)
		}
		if !isBound(f.Start) || !isBound(f.End) {
			tb.Fatalf("fragment %d [%q, %q) has a bound no tombstone has; tombstones %v", i, f.Start, f.End, ts)
		}
		if len(f.Seqs) == 0 {
			tb.Fatalf("fragment %d [%q, %q) has no seqs; tombstones %v", i, f.Start, f.End, ts)
		}
		if len(f.Seqs) > MaxFragmentSeqs || f.Truncated != (len(f.Seqs) == MaxFragmentSeqs && distinctSeqsOver(ts, f.Start) > MaxFragmentSeqs) {
			tb.Fatalf("fragment %d keeps %d seqs (truncated %v) of %d; tombstones %v", i, len(f.Seqs), f.Truncated, distinctSeqsOver(ts, f.Start), ts)
		}
		for j := 1; j < len(f.Seqs); j++ {
			if f.Seqs[j-1] <= f.Seqs[j] {
				tb.Fatalf("fragment %d seqs %v not strictly descending; tombstones %v", i, f.Seqs, ts)
			}
		}
		if i > 0 {
			p := frags[i-1]
			switch c := bytes.Compare(p.End, f.Start); {
			case c > 0:
				tb.Fatalf("fragments %d [%q, %q) and %d [%q, %q) overlap or are unsorted; tombstones %v", i-1, p.Start, p.End, i, f.Start, f.End, ts)
			case c == 0 && slices.Equal(p.Seqs, f.Seqs) && !p.Truncated && !f.Truncated:
				tb.Fatalf("touching fragments %d and %d both have seqs %v and were not joined; tombstones %v", i-1, i, f.Seqs, ts)
			}
		}
	}
}

// checkSet checks every lookup of s, built from ts, against brute force at
// every probe key and at the sequence numbers of probeSeqs(ts).
func checkSet(tb testing.TB, ts []Tombstone, s *Set, probes [][]byte) {
	tb.Helper()
	frags := s.Fragments()
	checkFragments(tb, ts, frags)
	seqs := probeSeqs(ts)
	for _, key := range probes {
		want := bruteSeqs(ts, key)
		f, ok, next := s.FragmentAt(key)
		if ok != (len(want) > 0) {
			tb.Fatalf("FragmentAt(%q) ok = %v, brute seqs %v; tombstones %v", key, ok, want, ts)
		}
		if ok {
			if bytes.Compare(f.Start, key) > 0 || bytes.Compare(key, f.End) >= 0 {
				tb.Fatalf("FragmentAt(%q) = [%q, %q), which does not hold it; tombstones %v", key, f.Start, f.End, ts)
			}
			// The newest MaxFragmentSeqs, and Truncated when there are more.
			keep := want[:min(len(want), MaxFragmentSeqs)]
			if !slices.Equal(f.Seqs, keep) || f.Truncated != (len(want) > MaxFragmentSeqs) {
				tb.Fatalf("FragmentAt(%q) seqs %v (truncated %v), brute %v; tombstones %v", key, f.Seqs, f.Truncated, want, ts)
			}
			if !slices.ContainsFunc(frags, func(g Fragment) bool { return bytes.Equal(g.Start, f.Start) && bytes.Equal(g.End, f.End) }) {
				tb.Fatalf("FragmentAt(%q) = [%q, %q) is not one of Fragments(); tombstones %v", key, f.Start, f.End, ts)
			}
		} else if wantNext := bruteNext(ts, key); (next == nil) != (wantNext == nil) || !bytes.Equal(next, wantNext) {
			tb.Fatalf("FragmentAt(%q) next = %q (nil %v), want %q (nil %v); tombstones %v", key, next, next == nil, wantNext, wantNext == nil, ts)
		}
		for _, readSeq := range seqs {
			gq, gok := s.MaxSeq(key, readSeq)
			wq, wok := bruteMaxSeq(ts, key, readSeq)
			if gq != wq || gok != wok {
				tb.Fatalf("MaxSeq(%q, %d) = %d, %v; brute %d, %v; tombstones %v", key, readSeq, gq, gok, wq, wok, ts)
			}
			for _, seq := range seqs {
				w := bruteCovers(ts, key, seq, readSeq)
				if g := s.Covers(key, seq, readSeq); g != w {
					tb.Fatalf("Covers(%q, %d, %d) = %v, brute %v; tombstones %v", key, seq, readSeq, g, w, ts)
				}
				// A fragment alone answers unless it was truncated and the
				// read is older than every sequence number it kept.
				if ok && (!f.Truncated || readSeq >= f.Seqs[len(f.Seqs)-1]) {
					if g := f.Visible(seq, readSeq); g != w {
						tb.Fatalf("FragmentAt(%q).Visible(%d, %d) = %v, brute %v; tombstones %v", key, seq, readSeq, g, w, ts)
					}
				}
			}
		}
	}
}

// sameFragments checks that a and b hold the same fragments.
func sameFragments(tb testing.TB, what string, a, b *Set) {
	tb.Helper()
	fa, fb := a.Fragments(), b.Fragments()
	if len(fa) != len(fb) {
		tb.Fatalf("%s: %d fragments, want %d:\n got %v\nwant %v", what, len(fa), len(fb), fa, fb)
	}
	for i := range fa {
		if !bytes.Equal(fa[i].Start, fb[i].Start) || !bytes.Equal(fa[i].End, fb[i].End) || !slices.Equal(fa[i].Seqs, fb[i].Seqs) || fa[i].Truncated != fb[i].Truncated {
			tb.Fatalf("%s: fragment %d = %v, want %v", what, i, fa[i], fb[i])
		}
	}
}

// checkCanonical checks that ts is what Decode may return: strictly
// ascending in canonical order, no empty range, no seq above MaxSeqNum.
func checkCanonical(tb testing.TB, ts []Tombstone) {
	tb.Helper()
	for i, t := range ts {
		if empty(t) {
			tb.Fatalf("tombstone %d %s is empty", i, t)
		}
		if t.Seq > base.MaxSeqNum {
			tb.Fatalf("tombstone %d %s has seq above MaxSeqNum", i, t)
		}
		if i > 0 && compare(ts[i-1], t) >= 0 {
			tb.Fatalf("tombstones %d %s and %d %s are not in strictly canonical order", i-1, ts[i-1], i, t)
		}
	}
}

// --- the model test ---

func randTombstones(r *rand.Rand, n, seqs int) []Tombstone {
	ts := make([]Tombstone, n)
	for i := range ts {
		ts[i] = Tombstone{
			Start: alphabet[r.IntN(len(alphabet))],
			End:   alphabet[r.IntN(len(alphabet))],
			Seq:   uint64(r.IntN(seqs)),
		}
		if r.IntN(4) == 0 { // sometimes a fresh copy, so equal keys are not always the same slice
			ts[i].Start = slices.Clone(ts[i].Start)
		}
		if r.IntN(30) == 0 {
			ts[i].Seq = base.MaxSeqNum - uint64(r.IntN(2))
		}
	}
	return ts
}

func TestModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 16))
	iters := 4000
	if testing.Short() {
		iters = 500
	}
	for it := 0; it < iters; it++ {
		checkModel(t, r, randTombstones(r, r.IntN(12), 8))
	}
}

// TestModelDeep is TestModel with more tombstones and sequence numbers,
// so that fragments are often truncated and old reads must fall back to
// the tombstones; it checks that they did.
func TestModelDeep(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 16))
	iters := 120
	if testing.Short() {
		iters = 30
	}
	truncated, fallbacks := 0, 0
	for it := 0; it < iters; it++ {
		ts := randTombstones(r, 10+r.IntN(30), 40)
		checkModel(t, r, ts)
		for _, f := range Build(ts).Fragments() {
			if !f.Truncated {
				continue
			}
			truncated++
			oldest := f.Seqs[len(f.Seqs)-1]
			for q := uint64(0); q < oldest; q++ {
				if _, ok := bruteMaxSeq(ts, f.Start, q); ok {
					fallbacks++
				}
			}
		}
	}
	if truncated < iters || fallbacks < iters {
		t.Fatalf("only %d truncated fragments and %d reads answered past them in %d sets", truncated, fallbacks, iters)
	}
}

// checkModel checks Build, Tombstones, Merge and Compose of ts, and of a
// random split of it, against brute force.
func checkModel(t *testing.T, r *rand.Rand, ts []Tombstone) {
	t.Helper()
	in := slices.Clone(ts)
	s := Build(in)
	if (s == nil) != (distinctNonEmpty(ts) == 0) || s.Len() != coalescedCount(ts) {
		t.Fatalf("Build(%v) = %v with Len %d", ts, s, s.Len())
	}
	// Build keeps no reference to its argument itself.
	r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	for i := range in {
		in[i].Seq += 100
	}
	checkSet(t, ts, s, probeKeys)

	// Fragments of the free function match those of the set.
	sameFragments(t, "Fragments(ts)", &Set{frags: Fragments(ts)}, s)

	// The set's tombstones are canonical and rebuild the same set.
	back := s.Tombstones()
	checkCanonical(t, back)
	rebuilt := Build(back)
	sameFragments(t, "Build(Tombstones())", rebuilt, s)
	checkSet(t, ts, rebuilt, probeKeys)

	// Merge of a random split answers like Build of the whole.
	var parts [3][]Tombstone
	for _, tomb := range ts {
		k := r.IntN(3)
		parts[k] = append(parts[k], tomb)
	}
	a, b, c := Build(parts[0]), Build(parts[1]), Build(parts[2])
	m := Merge(a, b, c)
	checkSet(t, ts, m, probeKeys)
	sameFragments(t, "Merge(a, b, c)", m, s)
	checkSet(t, slices.Concat(parts[0], parts[1]), Merge(a, nil, b), probeKeys)
	if Merge(a) != a || Merge(nil, a, nil) != a {
		t.Fatalf("Merge of one set is not that set")
	}

	// Compose of the split, flat or nested, answers like the whole.
	checkSet(t, ts, Compose(a, b, c), probeKeys)
	for _, cs := range []*Set{Compose(a, b, c), Compose(Compose(a, nil, b), c), Compose(a, Compose(b, c)), Compose(Compose(a, b), Compose(c))} {
		if cs.Len() != a.Len()+b.Len()+c.Len() {
			t.Fatalf("Compose Len %d, parts %d+%d+%d", cs.Len(), a.Len(), b.Len(), c.Len())
		}
		for _, k := range probeKeys {
			for _, q := range []uint64{0, 3, 9, 20, math.MaxUint64} {
				g, gok := cs.MaxSeq(k, q)
				w, wok := bruteMaxSeq(ts, k, q)
				if g != w || gok != wok {
					t.Fatalf("nested Compose: MaxSeq(%q, %d) = %d, %v; brute %d, %v; tombstones %v", k, q, g, gok, w, wok, ts)
				}
			}
		}
		sameFragments(t, "Compose(a, b, c)", cs, s)
		// The parts' tombstones, which each part merged on its own, are
		// the whole's once merged together.
		if got := cs.Tombstones(); !equalTombstones(Build(got).Tombstones(), s.Tombstones()) {
			t.Fatalf("Compose(a, b, c).Tombstones() = %v, want %v once merged", got, s.Tombstones())
		}
		sameFragments(t, "Merge(Compose(a, b, c))", Merge(cs, nil), s)
		sameFragments(t, "Merge(Compose(a, b), c)", Merge(Compose(a, b), c), s)
	}
	if Compose(a) != a || Compose(nil, a, nil) != a {
		t.Fatalf("Compose of one set is not that set")
	}
}

func TestEmptySets(t *testing.T) {
	var s *Set
	if s.Len() != 0 || s.Fragments() != nil || s.Tombstones() != nil {
		t.Fatalf("nil set is not empty")
	}
	if _, ok := s.MaxSeq(nil, math.MaxUint64); ok || s.Covers(nil, 0, math.MaxUint64) {
		t.Fatalf("nil set covers something")
	}
	if f, ok, next := s.FragmentAt([]byte("a")); ok || next != nil || f.Seqs != nil {
		t.Fatalf("nil set FragmentAt = %v, %v, %q", f, ok, next)
	}
	if Build(nil) != nil || Merge() != nil || Merge(nil, nil) != nil || Fragments(nil) != nil {
		t.Fatalf("empty inputs give a non-nil set")
	}
	// Only empty and inverted tombstones: a set of them covers nothing.
	ts := []Tombstone{{Start: []byte("b"), End: []byte("b"), Seq: 9}, {Start: []byte("c"), End: []byte("a"), Seq: 7}, {Seq: 3}}
	if Fragments(ts) != nil {
		t.Fatalf("Fragments of empty ranges = %v", Fragments(ts))
	}
	e := Build(ts)
	if e != nil || e.Len() != 0 || e.Fragments() != nil {
		t.Fatalf("Build of empty ranges: Len %d fragments %v", e.Len(), e.Fragments())
	}
	checkSet(t, ts, e, probeKeys)
	one := Build([]Tombstone{{Start: []byte("a"), End: []byte("c"), Seq: 5}})
	checkSet(t, []Tombstone{{Start: []byte("a"), End: []byte("c"), Seq: 5}}, Merge(e, one, e), probeKeys)
}

// TestStaircase checks large nested, staircase and same-sequence-number
// sets, whose fragments are mostly truncated, at sampled keys and reads.
func TestStaircase(t *testing.T) {
	const n = 1500
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
	shapes := map[string]func(i int) Tombstone{
		"staircase":  func(i int) Tombstone { return Tombstone{Start: key(i), End: key(i + 40), Seq: uint64(i + 1)} },
		"nested":     func(i int) Tombstone { return Tombstone{Start: key(i), End: key(2*n - i), Seq: uint64(n - i)} },
		"nested-old": func(i int) Tombstone { return Tombstone{Start: key(i), End: key(2*n - i), Seq: uint64(i + 1)} },
		"same-seq":   func(i int) Tombstone { return Tombstone{Start: key(i), End: key(i + 30), Seq: uint64(7 + i%3)} },
	}
	r := rand.New(rand.NewPCG(7, 16))
	for name, shape := range shapes {
		ts := make([]Tombstone, n)
		for i := range ts {
			ts[i] = shape(i)
		}
		r.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		s := Build(ts)
		half := Compose(Build(ts[:n/2]), Build(ts[n/2:]))
		checkFragments(t, ts, s.Fragments())
		for q := 0; q < 400; q++ {
			k := key(r.IntN(2*n + 2))
			if q%2 == 1 {
				k = append(k, 0)
			}
			readSeq := uint64(r.IntN(n + 2))
			want, wok := bruteMaxSeq(ts, k, readSeq)
			for _, set := range []*Set{s, half} {
				if got, ok := set.MaxSeq(k, readSeq); got != want || ok != wok {
					t.Fatalf("%s: MaxSeq(%q, %d) = %d, %v; brute %d, %v", name, k, readSeq, got, ok, want, wok)
				}
				seq := uint64(r.IntN(n + 2))
				if got, w := set.Covers(k, seq, readSeq), bruteCovers(ts, k, seq, readSeq); got != w {
					t.Fatalf("%s: Covers(%q, %d, %d) = %v, brute %v", name, k, seq, readSeq, got, w)
				}
			}
			f, ok, _ := s.FragmentAt(k)
			if want := bruteSeqs(ts, k); ok != (len(want) > 0) || ok && (!slices.Equal(f.Seqs, want[:min(len(want), MaxFragmentSeqs)]) || f.Truncated != (len(want) > MaxFragmentSeqs)) {
				t.Fatalf("%s: FragmentAt(%q) = %v, %v; brute seqs %v", name, k, f, ok, want)
			}
		}
	}
}

// TestFragmentsExample pins the fragmentation of a small, hand-checked set.
func TestFragmentsExample(t *testing.T) {
	ts := []Tombstone{
		{Start: []byte("a"), End: []byte("e"), Seq: 3},
		{Start: []byte("c"), End: []byte("g"), Seq: 5},
		{Start: []byte("c"), End: []byte("g"), Seq: 5}, // duplicate
		{Start: []byte("e"), End: []byte("g"), Seq: 5}, // same seq: joins
		{Start: []byte("x"), End: []byte("x"), Seq: 9}, // empty
		{Start: []byte("z"), End: []byte("y"), Seq: 9}, // inverted
	}
	want := []Fragment{
		{Start: []byte("a"), End: []byte("c"), Seqs: []uint64{3}},
		{Start: []byte("c"), End: []byte("e"), Seqs: []uint64{5, 3}},
		{Start: []byte("e"), End: []byte("g"), Seqs: []uint64{5}},
	}
	sameFragments(t, "example", Build(ts), &Set{frags: want})
	s := Build(ts)
	if _, ok, next := s.FragmentAt([]byte("")); ok || string(next) != "a" {
		t.Fatalf("FragmentAt(\"\") = %v, %q", ok, next)
	}
	if _, ok, next := s.FragmentAt([]byte("g")); ok || next != nil {
		t.Fatalf("FragmentAt(\"g\") = %v, %q", ok, next)
	}
	if !s.Covers([]byte("d"), 4, 5) || s.Covers([]byte("d"), 4, 4) || !s.Covers([]byte("d"), 2, 4) || s.Covers([]byte("g"), 0, 9) {
		t.Fatalf("Covers wrong on the example")
	}
}

// --- the codec ---

// randCanonical returns a random valid block's tombstones, in canonical
// order, some keys long enough to need two-byte lengths.
func randCanonical(r *rand.Rand) []Tombstone {
	n := r.IntN(10)
	key := func() []byte {
		switch r.IntN(6) {
		case 0:
			return nil
		case 1:
			k := make([]byte, 120+r.IntN(200))
			for i := range k {
				k[i] = byte(r.IntN(256))
			}
			return k
		default:
			return alphabet[r.IntN(len(alphabet))]
		}
	}
	var ts []Tombstone
	for i := 0; i < n; i++ {
		t := Tombstone{Start: key(), End: key()}
		switch r.IntN(5) {
		case 0:
			t.Seq = base.MaxSeqNum - uint64(r.IntN(3))
		case 1:
			t.Seq = r.Uint64N(base.MaxSeqNum + 1)
		default:
			t.Seq = uint64(r.IntN(300))
		}
		if c := bytes.Compare(t.Start, t.End); c > 0 {
			t.Start, t.End = t.End, t.Start
		} else if c == 0 {
			continue
		}
		ts = append(ts, t)
	}
	Sort(ts)
	return slices.CompactFunc(ts, func(a, b Tombstone) bool { return compare(a, b) == 0 })
}

func equalTombstones(a, b []Tombstone) bool {
	return slices.EqualFunc(a, b, func(x, y Tombstone) bool { return compare(x, y) == 0 })
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 16))
	for it := 0; it < 2000; it++ {
		ts := randCanonical(r)
		prefix := []byte("prefix")
		enc := Encode(slices.Clone(prefix), ts)
		if !bytes.HasPrefix(enc, prefix) {
			t.Fatalf("Encode did not append to dst")
		}
		b := enc[len(prefix):]
		if !bytes.Equal(b, Encode(nil, ts)) {
			t.Fatalf("Encode depends on dst")
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(%v)): %v", ts, err)
		}
		if !equalTombstones(got, ts) {
			t.Fatalf("Decode(Encode(%v)) = %v", ts, got)
		}
		checkCanonical(t, got)
		// The result does not share b.
		for i := range b {
			b[i] ^= 0xff
		}
		if !equalTombstones(got, ts) {
			t.Fatalf("Decode result shares the block's bytes")
		}
	}
}

// TestSortIsCanonical checks that Sort of a shuffled valid list gives back
// the order Decode accepts.
func TestSortIsCanonical(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 16))
	for it := 0; it < 500; it++ {
		ts := randCanonical(r)
		sh := slices.Clone(ts)
		r.Shuffle(len(sh), func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
		Sort(sh)
		if !equalTombstones(sh, ts) {
			t.Fatalf("Sort(shuffle(%v)) = %v", ts, sh)
		}
		if _, err := Decode(Encode(nil, sh)); err != nil {
			t.Fatalf("Decode of sorted list: %v", err)
		}
	}
}

func tomb(start, end string, seq uint64) Tombstone {
	return Tombstone{Start: []byte(start), End: []byte(end), Seq: seq}
}

func wantCorruption(t *testing.T, name string, b []byte) {
	t.Helper()
	ts, err := Decode(b)
	if err == nil {
		t.Fatalf("%s: Decode(%x) = %v, want an error", name, b, ts)
	}
	if !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("%s: Decode(%x) error %v does not wrap ErrCorruption", name, b, err)
	}
	if ts != nil {
		t.Fatalf("%s: Decode(%x) returned tombstones %v with its error", name, b, ts)
	}
}

func TestDecodeTruncated(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 16))
	blocks := [][]byte{
		Encode(nil, []Tombstone{tomb("", "a", 0), tomb("a", "b", base.MaxSeqNum), tomb("a", "c", 300)}),
		Encode(nil, []Tombstone{tomb(string(bytes.Repeat([]byte("k"), 200)), "z", 1<<40)}),
	}
	for i := 0; i < 50; i++ {
		blocks = append(blocks, Encode(nil, randCanonical(r)))
	}
	for _, b := range blocks {
		if _, err := Decode(b); err != nil {
			t.Fatalf("Decode(%x): %v", b, err)
		}
		for n := 0; n < len(b); n++ {
			wantCorruption(t, "truncated", b[:n:n])
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	body := func(ts ...Tombstone) []byte { // the tombstones without a count
		return Encode(nil, ts)[len(binary.AppendUvarint(nil, uint64(len(ts)))):]
	}
	withCount := func(n uint64, ts ...Tombstone) []byte {
		return append(binary.AppendUvarint(nil, n), body(ts...)...)
	}
	valid := []Tombstone{tomb("a", "b", 5), tomb("a", "b", 4), tomb("a", "c", 9), tomb("b", "c", 1)}
	cases := []struct {
		name string
		b    []byte
	}{
		{"nil block", nil},
		{"count overflows uvarint", bytes.Repeat([]byte{0xff}, 11)},
		{"count 10 bytes > 64 bits", append(bytes.Repeat([]byte{0xff}, 9), 0x02)},
		{"count one more than present", withCount(uint64(len(valid))+1, valid...)},
		{"count of one with nothing after", []byte{0x01}},
		{"count that cannot fit", withCount(uint64(len(body(valid...))/minEncodedLen)+1, valid...)},
		{"count 2^62", withCount(1<<62, valid...)},
		{"count MaxUint64", withCount(math.MaxUint64, valid...)},
		{"count MaxInt64", withCount(math.MaxInt64, valid...)},
		{"count fewer than present", withCount(uint64(len(valid))-1, valid...)},
		{"trailing zero byte", append(Encode(nil, valid), 0)},
		{"trailing bytes", append(Encode(nil, valid), "junk"...)},
		{"trailing bytes after empty block", []byte{0x00, 0x00}},
		{"start length past end", append(withCount(1), 0x05, 'a')},
		{"start length huge", append(withCount(1), append(bytes.Repeat([]byte{0xff}, 9), 0x01, 0, 0, 0)...)},
		{"end length huge", append(withCount(1), append([]byte{0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, 0, 0, 0)...)},
		{"seq overflows uvarint", append(withCount(1), append([]byte{0x00, 0x01, 'a'}, bytes.Repeat([]byte{0xff}, 11)...)...)},
		{"seq truncated", append(withCount(1), 0x00, 0x01, 'a', 0x80)},
		{"swapped", withCount(2, tomb("b", "c", 1), tomb("a", "b", 1))},
		{"same start, ends descending", withCount(2, tomb("a", "c", 1), tomb("a", "b", 1))},
		{"same range, seqs ascending", withCount(2, tomb("a", "b", 1), tomb("a", "b", 2))},
		{"duplicate", withCount(2, tomb("a", "b", 1), tomb("a", "b", 1))},
		{"prefix start after longer", withCount(2, tomb("ab", "c", 1), tomb("a", "c", 1))},
		{"out of order later", withCount(5, append(slices.Clone(valid), tomb("a", "z", 1))...)},
		{"empty range", withCount(1, tomb("a", "a", 1))},
		{"empty range, both empty", withCount(1, tomb("", "", 1))},
		{"inverted range", withCount(1, tomb("b", "a", 1))},
		{"inverted prefix range", withCount(1, tomb("ab", "a", 1))},
		{"empty range after valid", withCount(2, tomb("a", "b", 1), tomb("c", "c", 1))},
		{"seq MaxSeqNum+1", withCount(1, tomb("a", "b", base.MaxSeqNum+1))},
		{"seq MaxUint64", withCount(1, tomb("a", "b", math.MaxUint64))},
		{"seq too large after valid", withCount(2, tomb("a", "b", 1), tomb("a", "c", 1<<60))},
		// The same numbers written with longer uvarints than needed.
		{"count not minimal", append([]byte{0x81, 0x00}, body(tomb("a", "b", 1))...)},
		{"empty count not minimal", []byte{0x80, 0x00}},
		{"start length not minimal", append(withCount(1), 0x81, 0x00, 'a', 0x01, 'b', 0x01)},
		{"end length not minimal", append(withCount(1), 0x01, 'a', 0x81, 0x00, 'b', 0x01)},
		{"seq not minimal", append(withCount(1), 0x01, 'a', 0x01, 'b', 0x81, 0x80, 0x00)},
		{"zero seq not minimal", append(withCount(1), 0x01, 'a', 0x01, 'b', 0x80, 0x00)},
	}
	for _, c := range cases {
		wantCorruption(t, c.name, c.b)
	}
	// The edges that are fine.
	for _, ts := range [][]Tombstone{
		nil,
		valid,
		{tomb("", "\x00", 0)},
		{tomb("a", "b", base.MaxSeqNum)},
		{tomb("a", "ab", 1), tomb("ab", "b", 1)},
	} {
		if got, err := Decode(Encode(nil, ts)); err != nil || !equalTombstones(got, ts) {
			t.Fatalf("Decode(Encode(%v)) = %v, %v", ts, got, err)
		}
	}
	// A count that fits exactly: every tombstone the smallest it can be.
	b := withCount(1, tomb("", "a", 0))
	if got, err := Decode(b); err != nil || len(got) != 1 || len(b) != 1+minEncodedLen {
		t.Fatalf("Decode of a minimal tombstone (%d bytes) = %v, %v", len(b), got, err)
	}
}

// TestDecodeFlippedBytes changes every byte of valid blocks in several
// ways: Decode must give a corruption error or a canonical list that
// encodes back to the changed bytes.
func TestDecodeFlippedBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 16))
	blocks := [][]byte{
		Encode(nil, []Tombstone{tomb("", "a", 0), tomb("a", "b", base.MaxSeqNum), tomb("a", "b", 7), tomb("a", "c", 300), tomb("b", "c", 1)}),
		Encode(nil, []Tombstone{tomb(string(bytes.Repeat([]byte("k"), 200)), "z", 1<<40)}),
	}
	random := 10
	if testing.Short() {
		random = 3
	}
	for i := 0; i < random; i++ {
		blocks = append(blocks, Encode(nil, randCanonical(r)))
	}
	for _, orig := range blocks {
		for i := range orig {
			for _, x := range []byte{0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff, byte(1 + r.IntN(255))} {
				b := slices.Clone(orig)
				b[i] ^= x
				// The brute-force lookups are costly: every change of a
				// small block, a sample of the others.
				checkDecoded(t, b, len(b) <= 40 || i%101 == 0)
			}
		}
	}
}

// checkDecoded decodes b and, when that succeeds, checks the result is a
// canonical list that is exactly what b encodes and, if lookups, that a
// set of it answers like brute force; a failure must be a corruption error.
func checkDecoded(tb testing.TB, b []byte, lookups bool) {
	tb.Helper()
	in := slices.Clone(b)
	ts, err := Decode(b)
	if !bytes.Equal(in, b) {
		tb.Fatalf("Decode modified its input")
	}
	if err != nil {
		if !errors.Is(err, base.ErrCorruption) {
			tb.Fatalf("Decode(%x): error %v does not wrap ErrCorruption", b, err)
		}
		if ts != nil {
			tb.Fatalf("Decode(%x) returned %v with its error", b, ts)
		}
		return
	}
	checkCanonical(tb, ts)
	if re := Encode(nil, ts); !bytes.Equal(re, b) {
		tb.Fatalf("Decode(%x) = %v, which encodes to %x", b, ts, re)
	}
	if !lookups || len(ts) > 32 {
		return // brute force on huge inputs only slows the fuzzer
	}
	probes := slices.Clone(probeKeys)
	for _, t := range ts {
		probes = append(probes, t.Start, t.End, append(slices.Clone(t.Start), 0))
		if len(t.End) > 0 {
			probes = append(probes, t.End[:len(t.End)-1])
		}
	}
	s := Build(ts)
	checkSet(tb, ts, s, probes)
	sameFragments(tb, "Build(Tombstones())", Build(s.Tombstones()), s)
}

func FuzzDecode(f *testing.F) {
	long := string(bytes.Repeat([]byte("k"), 200))
	valid := [][]Tombstone{
		nil,
		{tomb("", "a", 0)},
		{tomb("a", "b", 5), tomb("a", "b", 4), tomb("a", "c", 9), tomb("b", "c", 1)},
		{tomb("", "\xff", base.MaxSeqNum), tomb("a", "ab", 1), tomb("ab", "b", 1)},
		{tomb(long, long+"\x00", 1<<40), tomb("z", "zz", 300)},
	}
	for _, ts := range valid {
		b := Encode(nil, ts)
		f.Add(b)
		if len(b) > 1 {
			f.Add(b[:len(b)-1])                  // truncated
			f.Add(append(slices.Clone(b), 0x00)) // trailing byte
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0x80, 0x00})                                              // count not minimal
	f.Add(append([]byte{0x01}, 0x01, 'a', 0x01, 'b', 0x81, 0x00))          // seq not minimal
	f.Add(append(bytes.Repeat([]byte{0xff}, 9), 0x01, 0x00, 0x01, 'a', 0)) // huge count
	f.Add(Encode(nil, []Tombstone{tomb("b", "c", 1), tomb("a", "b", 1)}))  // out of order
	f.Add(Encode(nil, []Tombstone{tomb("a", "a", 1)}))                     // empty range
	f.Add(Encode(nil, []Tombstone{tomb("a", "b", base.MaxSeqNum+1)}))      // seq too large
	f.Add(Encode(nil, []Tombstone{tomb("a", "b", 2), tomb("a", "b", 2)}))  // duplicate
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecoded(t, b, true)
	})
}

// TestBuildJoinsPieces: the pieces compaction cuts tombstones into, one per
// table, come back whole in a set, while tombstones of other sequence
// numbers stay apart and gaps between pieces stay gaps.
func TestBuildJoinsPieces(t *testing.T) {
	var ts []Tombstone
	for seq := uint64(1); seq <= 3; seq++ {
		for i := 0; i < 100; i++ {
			ts = append(ts, Tombstone{Start: []byte(fmt.Sprintf("k%03d", i)), End: []byte(fmt.Sprintf("k%03d", i+1)), Seq: seq})
		}
	}
	// A piece of seq 4 with a gap: two tombstones.
	ts = append(ts, Tombstone{Start: []byte("a"), End: []byte("b"), Seq: 4}, Tombstone{Start: []byte("c"), End: []byte("d"), Seq: 4})
	s := Build(ts)
	if s.Len() != 5 {
		t.Fatalf("Len %d, want 5: %v", s.Len(), s.Tombstones())
	}
	for _, tb := range s.Tombstones() {
		if tb.Seq <= 3 && (string(tb.Start) != "k000" || string(tb.End) != "k100") {
			t.Fatalf("seq %d came back as %v", tb.Seq, tb)
		}
	}
	if s.Covers([]byte("bb"), 1, 10) || !s.Covers([]byte("k055x"), 1, 10) {
		t.Fatalf("coverage changed")
	}
}
