package compaction

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// reuseIter is a child whose Key and Value live in buffers it rewrites on
// every move (and scribbles over when it becomes invalid), so a merging
// iterator that keeps a child's key past that child's move reads garbage.
// It may fail at its failAfter-th move (any direction, seeks included).
type reuseIter struct {
	keys, vals [][]byte
	pos        int
	err        error
	moves      int
	failAfter  int // -1: never
	kbuf, vbuf []byte
	closed     bool
}

func (r *reuseIter) load() bool {
	r.moves++
	if r.failAfter >= 0 && r.moves >= r.failAfter && r.err == nil {
		r.err = fmt.Errorf("injected after %d moves", r.moves)
	}
	if r.err != nil || r.pos < 0 || r.pos >= len(r.keys) {
		for i := range r.kbuf {
			r.kbuf[i] = 0xff
		}
		for i := range r.vbuf {
			r.vbuf[i] = 0xff
		}
		return false
	}
	r.kbuf = append(r.kbuf[:0], r.keys[r.pos]...)
	r.vbuf = append(r.vbuf[:0], r.vals[r.pos]...)
	return true
}

func (r *reuseIter) search(k []byte) int {
	return sort.Search(len(r.keys), func(i int) bool { return base.CompareInternal(r.keys[i], k) >= 0 })
}
func (r *reuseIter) First() bool          { r.pos = 0; return r.load() }
func (r *reuseIter) Last() bool           { r.pos = len(r.keys) - 1; return r.load() }
func (r *reuseIter) SeekGE(k []byte) bool { r.pos = r.search(k); return r.load() }
func (r *reuseIter) SeekLT(k []byte) bool { r.pos = r.search(k) - 1; return r.load() }
func (r *reuseIter) Next() bool           { r.pos++; return r.load() }
func (r *reuseIter) Prev() bool           { r.pos--; return r.load() }
func (r *reuseIter) Valid() bool          { return r.err == nil && r.pos >= 0 && r.pos < len(r.keys) }
func (r *reuseIter) Key() []byte          { return r.kbuf[:len(r.kbuf):len(r.kbuf)] }
func (r *reuseIter) Value() []byte        { return r.vbuf }
func (r *reuseIter) Error() error         { return r.err }
func (r *reuseIter) Close() error         { r.closed = true; return r.err }

// buildReuse makes n children over distinct internal keys (user keys
// shared across children, as in a store) and returns them with the sorted
// union.
func buildReuse(rng *rand.Rand, n int) ([]*reuseIter, [][]byte, map[string]string) {
	kids := make([]*reuseIter, n)
	var all [][]byte
	vals := map[string]string{}
	seq := uint64(1)
	for c := range kids {
		r := &reuseIter{failAfter: -1}
		m := rng.Intn(25)
		if rng.Intn(5) == 0 {
			m = 0 // an empty child now and then
		}
		var ks [][]byte
		for i := 0; i < m; i++ {
			// Keys of varying length, so a stale buffer shows.
			uk := []byte(fmt.Sprintf("k%0*d", 1+rng.Intn(4), rng.Intn(40)))
			ks = append(ks, base.MakeInternalKey(uk, seq, base.Kind(rng.Intn(2))))
			seq++
		}
		sort.Slice(ks, func(i, j int) bool { return base.CompareInternal(ks[i], ks[j]) < 0 })
		for _, k := range ks {
			v := fmt.Sprintf("v%d-%x", c, k)
			r.keys = append(r.keys, k)
			r.vals = append(r.vals, []byte(v))
			vals[string(k)] = v
			all = append(all, k)
		}
		kids[c] = r
	}
	sort.Slice(all, func(i, j int) bool { return base.CompareInternal(all[i], all[j]) < 0 })
	return kids, all, vals
}

// TestReviewMergingReuseModel drives a MergingIterator over children that
// reuse their key buffers, with direction changes and seeks, against the
// sorted union; children counts span the 12-key inline array; the same
// MergingIterator value is re-Init-ed across trials (stale keys) and
// sometimes Closed before the next Init.
func TestReviewMergingReuseModel(t *testing.T) {
	rng := rand.New(rand.NewSource(77))
	var m MergingIterator
	heapArr := make([]int, 0, 12)
	for trial := 0; trial < 3000; trial++ {
		n := 1 + rng.Intn(16)
		kids, all, vals := buildReuse(rng, n)
		iters := make([]base.InternalIterator, n)
		for i, k := range kids {
			iters[i] = k
		}
		if rng.Intn(2) == 0 {
			m.Init(iters, heapArr[:0])
		} else {
			m.Init(iters, nil)
		}
		pos := -1 // index into all; -1 or len(all): invalid
		check := func(op string, ok bool) {
			t.Helper()
			wantOK := pos >= 0 && pos < len(all)
			if ok != wantOK || m.Valid() != wantOK {
				t.Fatalf("trial %d (%d children) %s: ok=%v Valid=%v, want %v (pos %d of %d)", trial, n, op, ok, m.Valid(), wantOK, pos, len(all))
			}
			if !ok {
				return
			}
			if !bytes.Equal(m.Key(), all[pos]) {
				t.Fatalf("trial %d (%d children) %s: key %s, want %s", trial, n, op, base.FormatInternalKey(m.Key()), base.FormatInternalKey(all[pos]))
			}
			if string(m.Value()) != vals[string(all[pos])] {
				t.Fatalf("trial %d %s: value %q, want %q", trial, op, m.Value(), vals[string(all[pos])])
			}
		}
		for step := 0; step < 60; step++ {
			switch r := rng.Intn(10); {
			case r == 0:
				ok := m.First()
				pos = 0
				check("First", ok)
			case r == 1:
				ok := m.Last()
				pos = len(all) - 1
				check("Last", ok)
			case r == 2 || r == 3:
				var k []byte
				if len(all) > 0 && rng.Intn(2) == 0 {
					k = all[rng.Intn(len(all))]
				} else {
					k = base.MakeInternalKey([]byte(fmt.Sprintf("k%0*d", 1+rng.Intn(4), rng.Intn(40))), uint64(rng.Intn(400)), base.KindSeek)
				}
				k = append([]byte(nil), k...)
				if r == 2 {
					ok := m.SeekGE(k)
					pos = sort.Search(len(all), func(i int) bool { return base.CompareInternal(all[i], k) >= 0 })
					check("SeekGE "+base.FormatInternalKey(k), ok)
				} else {
					ok := m.SeekLT(k)
					pos = sort.Search(len(all), func(i int) bool { return base.CompareInternal(all[i], k) >= 0 }) - 1
					check("SeekLT "+base.FormatInternalKey(k), ok)
				}
			case r < 7:
				if !m.Valid() {
					continue
				}
				ok := m.Next()
				pos++
				check("Next", ok)
			default:
				if !m.Valid() {
					continue
				}
				ok := m.Prev()
				pos--
				check("Prev", ok)
			}
		}
		if rng.Intn(3) == 0 {
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			for _, k := range kids {
				if !k.closed {
					t.Fatalf("trial %d: a child was not closed", trial)
				}
			}
			if m.First() || m.Last() || m.Valid() {
				t.Fatalf("trial %d: valid after Close", trial)
			}
		}
	}
}

// TestReviewMergingChildError: a child failing at any move stops the merge
// with its error: no entry after the failure is yielded out of order, no
// panic, and until the failure the output is the union's order.
func TestReviewMergingChildError(t *testing.T) {
	rng := rand.New(rand.NewSource(78))
	for trial := 0; trial < 3000; trial++ {
		n := 1 + rng.Intn(15)
		kids, all, _ := buildReuse(rng, n)
		victim := rng.Intn(n)
		kids[victim].failAfter = 1 + rng.Intn(30)
		iters := make([]base.InternalIterator, n)
		for i, k := range kids {
			iters[i] = k
		}
		m := NewMergingIterator(iters...)
		// Forward, then maybe turn around; positions checked against
		// the union while valid.
		pos := 0
		ok := m.First()
		for steps := 0; ok && steps < 200; steps++ {
			if !bytes.Equal(m.Key(), all[pos]) {
				t.Fatalf("trial %d: key %s, want %s", trial, base.FormatInternalKey(m.Key()), base.FormatInternalKey(all[pos]))
			}
			if rng.Intn(4) == 0 {
				ok = m.Prev()
				pos--
			} else {
				ok = m.Next()
				pos++
			}
		}
		if !ok && m.Error() == nil && pos >= 0 && pos < len(all) {
			t.Fatalf("trial %d: stopped at %d of %d without an error (victim err %v)", trial, pos, len(all), kids[victim].err)
		}
		m.Close()
	}
}
