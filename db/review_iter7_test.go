package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

// r7Key returns user u's key i: "p%02d:%03d", so DelimitedPrefix(':')
// gives one prefix a user.
func r7Key(u, i int) string { return fmt.Sprintf("p%02d:%03d", u, i) }

// r7Bounds returns random bounds: nil sides, prefix bounds, inverted,
// empty, bounds between keys, bounds of absent users.
func r7Bounds(rng *rand.Rand) (lo, hi []byte) {
	u := rng.Intn(30)
	switch rng.Intn(9) {
	case 0:
		return nil, nil
	case 1:
		return []byte(r7Key(u, rng.Intn(40))), nil
	case 2:
		return nil, []byte(r7Key(u, rng.Intn(40)))
	case 3, 4:
		return PrefixBounds([]byte(fmt.Sprintf("p%02d:", u)))
	case 5:
		k := []byte(r7Key(u, rng.Intn(40)))
		return k, k // empty
	case 6:
		return []byte(r7Key(u, 30)), []byte(r7Key(u, 5)) // inverted
	case 7:
		a, b := rng.Intn(40), rng.Intn(40)
		if a > b {
			a, b = b, a
		}
		return []byte(r7Key(u, a)), []byte(r7Key(u, b) + "\x00")
	default:
		return []byte{}, []byte(fmt.Sprintf("p%02d", u)) // empty lower bound
	}
}

// r7Want returns the sorted keys of m in [lo, hi).
func r7Want(m model, lo, hi []byte) []string {
	var out []string
	for k := range m {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// r7Drive runs random positioning calls on it and checks each answer
// against want (the model's sorted keys in the bounds) and m's values.
// It returns the last key/value seen valid (for the after-Close check).
func r7Drive(t *testing.T, rng *rand.Rand, it *Iterator, want []string, m model, lo []byte, what string) (lastK, lastV string, valid bool) {
	t.Helper()
	pos := -1
	if it.Valid() {
		pos = sort.SearchStrings(want, string(it.Key()))
	}
	var trace []string
	for step := 0; step < 40; step++ {
		var ok bool
		var op string
		switch r := rng.Intn(8); {
		case r == 0:
			op, ok, pos = "First", it.First(), 0
		case r == 1:
			op, ok, pos = "Last", it.Last(), len(want)-1
		case r == 2:
			var k string
			if len(want) > 0 && rng.Intn(2) == 0 {
				k = want[rng.Intn(len(want))]
				if rng.Intn(2) == 0 {
					k += "\x00"
				}
			} else {
				k = r7Key(rng.Intn(30), rng.Intn(40))
			}
			op, ok = "Seek "+k, it.Seek([]byte(k))
			target := k
			if lo != nil && target < string(lo) {
				target = string(lo)
			}
			pos = sort.SearchStrings(want, target)
		case r < 6:
			op, ok = "Next", it.Next()
			if pos >= 0 && pos < len(want) {
				pos++
			} else {
				pos = -1
			}
		default:
			op, ok = "Prev", it.Prev()
			if pos >= 0 && pos < len(want) {
				pos--
			} else {
				pos = -1
			}
		}
		trace = append(trace, op)
		wantOK := pos >= 0 && pos < len(want)
		if ok != wantOK || it.Valid() != wantOK {
			t.Fatalf("%s: after %v: ok=%v valid=%v want %v (pos %d, want %v); err %v", what, trace, ok, it.Valid(), wantOK, pos, want, it.Error())
		}
		if !ok {
			pos = -1
			continue
		}
		if string(it.Key()) != want[pos] || string(it.Value()) != m[want[pos]] {
			t.Fatalf("%s: after %v: at %q=%q, want %q=%q (keys %v)", what, trace, it.Key(), it.Value(), want[pos], m[want[pos]], want)
		}
		lastK, lastV, valid = want[pos], m[want[pos]], true
	}
	if !it.Valid() {
		valid = false
	}
	if err := it.Error(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return lastK, lastV, valid
}

// TestReviewIter7Model: random writes (puts, deletes, range deletes) to a
// store with prefix and range filters, flushes, compactions and a pile of
// level-0 tables (more than the merging iterator's 12 inline keys), with
// snapshots; iterators of every bound shape are driven by random
// positioning calls against the model. Key and Value after Close must be
// those last seen.
func TestReviewIter7Model(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"prefix+range", Options{Prefix: filter.DelimitedPrefix(':'), RangeFilter: filter.NewGrafiteRangePolicy(16), WriteBufferSize: 4 << 10, BlockSize: 256, L0CompactionTrigger: 16, L0SlowdownWritesTrigger: 40, L0StopWritesTrigger: 60}},
		{"plain-nocache", Options{WriteBufferSize: 2 << 10, BlockSize: 128, DisableBlockCache: true, DisableAutomaticCompactions: true, L0SlowdownWritesTrigger: 1000, L0StopWritesTrigger: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.FS = vfs.NewMem()
			d := mustOpen(t, "/db", &opts)
			defer func() { d.Close() }()
			rng := rand.New(rand.NewSource(97))
			m := model{}
			var snaps []modelSnap
			nones, iters := 0, 0
			for round := 0; round < 300; round++ {
				for n := rng.Intn(12); n > 0; n-- {
					// Even users mostly; odd users rarely, so their
					// prefixes are often absent.
					u := 2 * rng.Intn(15)
					if rng.Intn(6) == 0 {
						u++
					}
					k := r7Key(u, rng.Intn(40))
					switch r := rng.Intn(20); {
					case r < 13:
						v := fmt.Sprintf("v%d-%d-%s", round, n, bytes.Repeat([]byte("x"), rng.Intn(40)))
						if err := d.Put([]byte(k), []byte(v), nil); err != nil {
							t.Fatal(err)
						}
						m[k] = v
					case r < 18:
						if err := d.Delete([]byte(k), nil); err != nil {
							t.Fatal(err)
						}
						delete(m, k)
					default:
						hi := r7Key(u, rng.Intn(41))
						if hi < k {
							k, hi = hi, k
						}
						if err := d.DeleteRange([]byte(k), []byte(hi), nil); err != nil {
							t.Fatal(err)
						}
						m.deleteRange(k, hi)
					}
				}
				switch rng.Intn(25) {
				case 0, 1, 2:
					if err := d.Flush(); err != nil {
						t.Fatal(err)
					}
				case 3:
					if err := d.CompactRange(nil, nil); err != nil {
						t.Fatal(err)
					}
				case 4:
					lo, hi := r7Bounds(rng)
					if err := d.CompactRange(lo, hi); err != nil {
						t.Fatal(err)
					}
				}
				if rng.Intn(6) == 0 {
					snaps = append(snaps, modelSnap{d.NewSnapshot(), m.clone()})
				}
				if len(snaps) > 4 || (len(snaps) > 0 && rng.Intn(8) == 0) {
					i := rng.Intn(len(snaps))
					snaps[i].s.Release()
					snaps = append(snaps[:i], snaps[i+1:]...)
				}
				for c := 0; c < 6; c++ {
					lo, hi := r7Bounds(rng)
					ro, mm := &ReadOptions{LowerBound: lo, UpperBound: hi}, m
					if len(snaps) > 0 && rng.Intn(3) == 0 {
						s := snaps[rng.Intn(len(snaps))]
						ro.Snapshot, mm = s.s, s.m
					}
					want := r7Want(mm, lo, hi)
					it := d.NewIterator(ro)
					iters++
					if it.s.none {
						nones++
					}
					what := fmt.Sprintf("round %d bounds [%q,%q) snap %v none %v", round, lo, hi, ro.Snapshot != nil, it.s.none)
					// ExplainSeek answers as Seek does.
					{
						sk := r7Key(rng.Intn(30), rng.Intn(40))
						target := sk
						if lo != nil && target < string(lo) {
							target = string(lo)
						}
						i := sort.SearchStrings(want, target)
						tr, err := d.ExplainSeek([]byte(sk), ro)
						if err != nil {
							t.Fatalf("%s: ExplainSeek: %v", what, err)
						}
						if tr.Found != (i < len(want)) || (tr.Found && string(tr.Result) != want[i]) {
							t.Fatalf("%s: ExplainSeek(%q) found %v %q, want %v", what, sk, tr.Found, tr.Result, want[i:])
						}
					}
					k, v, valid := r7Drive(t, rng, it, want, mm, lo, what)
					// Writes after the iterator was made are not seen.
					if rng.Intn(3) == 0 {
						before := mm.clone()
						late := r7Key(2*rng.Intn(15)+1, 40+rng.Intn(5))
						if err := d.Put([]byte(late), []byte(fmt.Sprint("late", round)), nil); err != nil {
							t.Fatal(err)
						}
						m[late] = fmt.Sprint("late", round)
						r7Drive(t, rng, it, want, before, lo, what+" after a late write")
						k, v, valid = "", "", it.Valid()
						if valid {
							k, v = string(it.Key()), string(it.Value())
						}
					}
					if err := it.Close(); err != nil {
						t.Fatalf("%s: Close: %v", what, err)
					}
					if valid && (string(it.Key()) != k || string(it.Value()) != v) {
						t.Fatalf("%s: after Close Key/Value %q=%q, want %q=%q", what, it.Key(), it.Value(), k, v)
					}
					if it.First() || it.Last() || it.Seek([]byte("p")) || it.Next() || it.Prev() {
						t.Fatalf("%s: positioned after Close", what)
					}
					if !errors.Is(it.Error(), ErrClosed) {
						t.Fatalf("%s: Error after use after Close: %v", what, it.Error())
					}
				}
			}
			for _, s := range snaps {
				s.s.Release()
			}
			t.Logf("%d iterators, %d none", iters, nones)
		})
	}
}

// TestReviewIter7AckedWritesSeen: writers put unique keys (each of its
// own prefix, so most bounded iterators have nothing else to merge) while
// flushes switch memtables; after each acknowledged write the writer
// itself, and readers told of the ack, make an iterator bounded to that
// key's prefix and must find it, forward and backward, with Seek and
// through ExplainSeek.
func TestReviewIter7AckedWritesSeen(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", &Options{FS: fs, Prefix: filter.DelimitedPrefix(':'), RangeFilter: filter.NewGrafiteRangePolicy(16), WriteBufferSize: 8 << 10})
	defer func() { d.Close() }()
	const writers = 4
	deadline := time.Now().Add(reviewIter7Duration(5 * time.Second))
	acked := make(chan string, 1024)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var fails atomic.Int64
	check := func(k string) {
		lo, hi := PrefixBounds([]byte(k[:len(k)-3]))
		for _, ro := range []*ReadOptions{
			{LowerBound: lo, UpperBound: hi},
			{LowerBound: []byte(k), UpperBound: []byte(k + "\x00")},
			{LowerBound: []byte(k)},
			{UpperBound: []byte(k + "\x00")},
		} {
			it := d.NewIterator(ro)
			okF := it.First() && string(it.Key()) == k
			okL := it.Last() && string(it.Key()) == k
			if ro.LowerBound == nil {
				okF = true // other keys precede
			}
			if ro.UpperBound == nil {
				okL = true
			}
			okS := it.Seek([]byte(k)) && string(it.Key()) == k
			none := it.s.none
			it.Close()
			if !okF || !okL || !okS {
				if fails.Add(1) < 5 {
					t.Errorf("acked key %q not seen in [%q,%q): first %v last %v seek %v none %v", k, ro.LowerBound, ro.UpperBound, okF, okL, okS, none)
				}
			}
		}
		tr, err := d.ExplainSeek([]byte(k), &ReadOptions{LowerBound: lo, UpperBound: hi})
		if err != nil || !tr.Found || string(tr.Result) != k {
			if fails.Add(1) < 5 {
				t.Errorf("ExplainSeek(%q): found %v result %q err %v", k, tr != nil && tr.Found, func() []byte {
					if tr == nil {
						return nil
					}
					return tr.Result
				}(), err)
			}
		}
	}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline) && !stop.Load(); i++ {
				k := fmt.Sprintf("w%d-%06d:%03d", w, i, i%1000)
				if err := d.Put([]byte(k), bytes.Repeat([]byte{'v'}, 100), nil); err != nil {
					t.Error(err)
					return
				}
				check(k)
				select {
				case acked <- k:
				default:
				}
			}
		}(w)
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && !stop.Load() {
				select {
				case k := <-acked:
					check(k)
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) && !stop.Load() {
			if err := d.Flush(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	if fails.Load() > 0 {
		t.Fatalf("%d acknowledged writes not seen", fails.Load())
	}
}

// TestReviewIter7PooledParts: many goroutines make and drop iterators
// concurrently (pooled parts handed from one to the next), each over a
// range holding deleted keys (so the skip buffer is used) and keys longer
// than the inline buffers, comparing with the model both ways. The store
// is static: every iterator must match exactly.
func TestReviewIter7PooledParts(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", &Options{FS: fs, Prefix: filter.DelimitedPrefix(':'), WriteBufferSize: 16 << 10, BlockSize: 256})
	defer func() { d.Close() }()
	m := model{}
	long := func(u, i int) string {
		// Long keys for some users: past the 64-byte inline buffers.
		k := r7Key(u, i)
		if u%3 == 0 {
			k += string(bytes.Repeat([]byte{'L'}, 70+u))
		}
		return k
	}
	for u := 0; u < 20; u++ {
		for i := 0; i < 40; i++ {
			k := long(u, i)
			if err := d.Put([]byte(k), []byte("v"+k), nil); err != nil {
				t.Fatal(err)
			}
			m[k] = "v" + k
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	// Deletes, some flushed, some in the memtable.
	for u := 0; u < 20; u++ {
		for i := 0; i < 40; i += 1 + u%4 {
			k := long(u, i)
			if err := d.Delete([]byte(k), nil); err != nil {
				t.Fatal(err)
			}
			delete(m, k)
		}
		if u == 10 {
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	deadline := time.Now().Add(reviewIter7Duration(3 * time.Second))
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for time.Now().Before(deadline) && !t.Failed() {
				u := rng.Intn(24) // users 20..23 absent: none iterators
				var lo, hi []byte
				if rng.Intn(3) == 0 {
					lo, hi = []byte(r7Key(u, 0)), []byte(r7Key(u+rng.Intn(3), 0))
				} else {
					lo, hi = PrefixBounds([]byte(fmt.Sprintf("p%02d:", u)))
				}
				want := r7Want(m, lo, hi)
				it := d.NewIterator(&ReadOptions{LowerBound: lo, UpperBound: hi})
				var got []string
				for ok := it.First(); ok; ok = it.Next() {
					got = append(got, string(it.Key()))
					if string(it.Value()) != m[string(it.Key())] {
						t.Errorf("%q=%q", it.Key(), it.Value())
					}
				}
				var back []string
				for ok := it.Last(); ok; ok = it.Prev() {
					back = append(back, string(it.Key()))
					if string(it.Value()) != m[string(it.Key())] {
						t.Errorf("%q=%q", it.Key(), it.Value())
					}
				}
				for i, j := 0, len(back)-1; i < j; i, j = i+1, j-1 {
					back[i], back[j] = back[j], back[i]
				}
				// Leave it at a key (reached backward or by Seek), so
				// Key and Value must survive Close and the reuse of its
				// pooled parts by the next iterators.
				var heldK, heldV string
				if len(want) > 0 {
					k := want[rng.Intn(len(want))]
					ok := it.Seek([]byte(k))
					if rng.Intn(2) == 0 {
						if it.Seek([]byte(k + "\x00")) {
							ok = it.Prev()
						} else {
							ok = it.Last()
						}
					}
					if !ok || string(it.Key()) != k {
						t.Errorf("[%q,%q): not at %q", lo, hi, k)
						return
					}
					heldK, heldV = k, m[k]
				}
				if it.Close() != nil || fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(back) != fmt.Sprint(want) {
					t.Errorf("[%q,%q): forward %d keys, backward %d, want %d", lo, hi, len(got), len(back), len(want))
					return
				}
				if heldK != "" {
					for j := 0; j < 3; j++ {
						it2 := d.NewIterator(&ReadOptions{LowerBound: lo})
						for ok := it2.Last(); ok && rng.Intn(20) != 0; ok = it2.Prev() {
						}
						it2.Close()
					}
					if string(it.Key()) != heldK || string(it.Value()) != heldV {
						t.Errorf("after Close and reuse: %q=%q, want %q=%q", it.Key(), it.Value(), heldK, heldV)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
}

// TestReviewIter7CloseRace: iterators (none and not) made and used while
// the DB closes. No panic, no hang, no race; once closed, calls fail with
// ErrClosed, and Close of the iterators after the DB's returns.
func TestReviewIter7CloseRace(t *testing.T) {
	for trial := 0; trial < 30; trial++ {
		fs := vfs.NewMem()
		d := mustOpen(t, "/db", &Options{FS: fs, Prefix: filter.DelimitedPrefix(':'), WriteBufferSize: 4 << 10})
		for i := 0; i < 300; i++ {
			if err := d.Put([]byte(r7Key(i%10*2, i)), []byte("v"), nil); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		var held []*Iterator
		var mu sync.Mutex
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					lo, hi := PrefixBounds([]byte(fmt.Sprintf("p%02d:", (g+i)%20)))
					it := d.NewIterator(&ReadOptions{LowerBound: lo, UpperBound: hi})
					for ok := it.First(); ok; ok = it.Next() {
					}
					it.Last()
					it.Seek(lo)
					if i%10 == 0 {
						mu.Lock()
						held = append(held, it)
						mu.Unlock()
						continue
					}
					if err := it.Close(); err != nil && !errors.Is(err, ErrClosed) {
						t.Error(err)
					}
				}
			}(g)
		}
		time.Sleep(time.Duration(trial%5) * time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- d.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("DB.Close hung")
		}
		wg.Wait()
		for _, it := range held {
			if it.First() {
				t.Fatal("held iterator positioned after DB.Close")
			}
			it.Close()
		}
	}
}

// TestReviewIter7ManyL0: 20+ overlapping level-0 tables (the DB
// iterator's and the compaction's merging iterators get more children
// than the 12 inline keys), with deletes, range deletes and long keys;
// iterators are driven against the model, then a compaction of all of
// them (NewMergingIterator over more than 12 inputs) and a reopen must
// give the same answers.
func TestReviewIter7ManyL0(t *testing.T) {
	for _, nocache := range []bool{false, true} {
		fs := vfs.NewMem()
		opts := &Options{FS: fs, WriteBufferSize: 1 << 20, BlockSize: 128, DisableBlockCache: nocache,
			DisableAutomaticCompactions: true, L0SlowdownWritesTrigger: 1000, L0StopWritesTrigger: 1000}
		d := mustOpen(t, "/db", opts)
		rng := rand.New(rand.NewSource(5))
		m := model{}
		key := func() string {
			k := r7Key(rng.Intn(6), rng.Intn(60))
			if rng.Intn(4) == 0 {
				k += string(bytes.Repeat([]byte{'z'}, 60+rng.Intn(20)))
			}
			return k
		}
		for f := 0; f < 22; f++ {
			for n := 0; n < 60; n++ {
				k := key()
				switch r := rng.Intn(10); {
				case r < 7:
					v := fmt.Sprintf("f%d-%d", f, n)
					if err := d.Put([]byte(k), []byte(v), nil); err != nil {
						t.Fatal(err)
					}
					m[k] = v
				case r < 9:
					if err := d.Delete([]byte(k), nil); err != nil {
						t.Fatal(err)
					}
					delete(m, k)
				default:
					hi := key()
					if hi < k {
						k, hi = hi, k
					}
					if err := d.DeleteRange([]byte(k), []byte(hi), nil); err != nil {
						t.Fatal(err)
					}
					m.deleteRange(k, hi)
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		// Some in the memtable too.
		for n := 0; n < 30; n++ {
			k := key()
			if err := d.Put([]byte(k), []byte("mem"), nil); err != nil {
				t.Fatal(err)
			}
			m[k] = "mem"
		}
		if n := len(d.rs.Load().v.Files[0]); n < 20 {
			t.Fatalf("only %d level-0 tables", n)
		}
		checkAll := func(stage string) {
			for c := 0; c < 150; c++ {
				lo, hi := r7Bounds(rng)
				if c%5 == 0 {
					lo, hi = nil, nil
				}
				it := d.NewIterator(&ReadOptions{LowerBound: lo, UpperBound: hi})
				r7Drive(t, rng, it, r7Want(m, lo, hi), m, lo, fmt.Sprintf("%s nocache %v [%q,%q)", stage, nocache, lo, hi))
				it.Close()
			}
			// A full scan both ways.
			it := d.NewIterator(nil)
			var got []string
			for ok := it.First(); ok; ok = it.Next() {
				got = append(got, string(it.Key()))
			}
			for ok := it.Last(); ok; ok = it.Prev() {
				got = append(got, string(it.Key()))
			}
			it.Close()
			want := m.sortedKeys()
			for i := len(want) - 1; i >= 0; i-- {
				want = append(want, want[i])
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s: full scan differs: %d keys, want %d", stage, len(got), len(want))
			}
		}
		checkAll("22 L0")
		if err := d.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
		checkAll("compacted")
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		d = mustOpen(t, "/db", opts)
		checkAll("reopened")
		d.Close()
	}
}

// TestReviewIter7Linearizable: each writer alternates one batch putting
// "a<w>:k" and "b<w>:k" to its counter (even counters) with one deleting
// both (odd counters), while a flusher switches memtables and automatic
// compactions drop the tombstones (so bounded iterators often have
// nothing at all to merge). A reader notes the writer's acknowledged
// counter before NewIterator and after; what the iterator sees must be a
// state between them, and both keys of the batch must agree.
func TestReviewIter7Linearizable(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", &Options{FS: fs, Prefix: filter.DelimitedPrefix(':'), RangeFilter: filter.NewGrafiteRangePolicy(16),
		WriteBufferSize: 4 << 10, L0CompactionTrigger: 2})
	defer func() { d.Close() }()
	const writers = 4
	// started[w] is stored before writer w's Write, acked[w] after: what
	// an iterator sees lies between acked before NewIterator and started
	// after it.
	var acked, started [writers]atomic.Int64
	for w := range acked {
		acked[w].Store(-1)
		started[w].Store(-1)
	}
	deadline := time.Now().Add(reviewIter7Duration(5 * time.Second))
	var wg sync.WaitGroup
	var fails atomic.Int64
	var nones atomic.Int64
	fail := func(format string, args ...any) {
		if fails.Add(1) <= 5 {
			t.Errorf(format, args...)
		}
	}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			a, b := []byte(fmt.Sprintf("a%d:k", w)), []byte(fmt.Sprintf("b%d:k", w))
			pad := bytes.Repeat([]byte{'p'}, 200)
			for c := int64(0); time.Now().Before(deadline) && fails.Load() == 0; c++ {
				var bt Batch
				if c%2 == 0 {
					v := append([]byte(fmt.Sprintf("%012d", c)), pad...)
					bt.Put(a, v)
					bt.Put(b, v)
				} else {
					bt.Delete(a)
					bt.Delete(b)
				}
				started[w].Store(c)
				if err := d.Write(&bt, nil); err != nil {
					t.Error(err)
					return
				}
				acked[w].Store(c)
				time.Sleep(time.Duration(rand.Intn(300)) * time.Microsecond)
			}
		}(w)
	}
	// A filler, to fill and switch memtables.
	wg.Add(1)
	go func() {
		defer wg.Done()
		pad := bytes.Repeat([]byte{'f'}, 300)
		for i := 0; time.Now().Before(deadline) && fails.Load() == 0; i++ {
			if err := d.Put([]byte(fmt.Sprintf("f:%d", i%500)), pad, nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	// parse returns the counter of a value (-1: absent).
	parse := func(v []byte) int64 {
		var c int64
		fmt.Sscanf(string(v[:12]), "%d", &c)
		return c
	}
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(r)))
			for time.Now().Before(deadline) && fails.Load() == 0 {
				w := rng.Intn(writers)
				a := fmt.Sprintf("a%d:", w)
				var ro *ReadOptions
				switch rng.Intn(4) {
				case 0:
					lo, hi := PrefixBounds([]byte(a))
					ro = &ReadOptions{LowerBound: lo, UpperBound: hi}
				case 1:
					ro = &ReadOptions{LowerBound: []byte(a + "k"), UpperBound: []byte(a + "k\x00")}
				case 2:
					ro = &ReadOptions{LowerBound: []byte(a + "k")}
				default:
					ro = &ReadOptions{UpperBound: []byte(a + "k\x00")}
				}
				lo := acked[w].Load()
				it := d.NewIterator(ro)
				hi := started[w].Load()
				if it.s.none {
					nones.Add(1)
				}
				var seen int64 = -1
				var ok bool
				if rng.Intn(2) == 0 {
					ok = it.Seek([]byte(a + "k"))
				} else {
					ok = it.Last()
					if ok && string(it.Key()) != a+"k" && ro.UpperBound == nil {
						ok = it.Seek([]byte(a + "k"))
					}
				}
				if ok && string(it.Key()) == a+"k" {
					seen = parse(it.Value())
				}
				err := it.Close()
				if err != nil {
					fail("iterator: %v", err)
					return
				}
				switch {
				case seen >= 0 && (seen < lo || seen > hi || seen%2 != 0):
					fail("writer %d: iterator saw counter %d, acked was %d before NewIterator and %d after", w, seen, lo, hi)
				case seen < 0 && lo == hi && lo%2 == 0 && lo >= 0:
					fail("writer %d: iterator saw no key, acked put %d before and after NewIterator (bounds [%q,%q))", w, lo, ro.LowerBound, ro.UpperBound)
				}
				// The two keys of one batch agree, in one iterator.
				it = d.NewIterator(&ReadOptions{LowerBound: []byte(a + "k"), UpperBound: []byte(fmt.Sprintf("b%d:k\x00", w))})
				va, vb := int64(-1), int64(-1)
				for ok := it.First(); ok; ok = it.Next() {
					switch string(it.Key()) {
					case a + "k":
						va = parse(it.Value())
					case fmt.Sprintf("b%d:k", w):
						vb = parse(it.Value())
					}
				}
				it.Close()
				if va != vb {
					fail("writer %d: a=%d b=%d in one iterator", w, va, vb)
				}
			}
		}(r)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) && fails.Load() == 0 {
			if err := d.Flush(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(500 * time.Microsecond)
		}
	}()
	wg.Wait()
	t.Logf("%d none iterators", nones.Load())
}

// TestReviewIter7ReadFaults: table reads fail at random while iterators
// (many level-0 tables and a level-1 run, so the merging iterator has
// many children, some of them level iterators crossing tables) walk the
// store both ways with direction changes. An iterator may stop early, but
// then with an error: every key it yields before that is the model's, in
// order, and none is skipped.
func TestReviewIter7ReadFaults(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.NewMem(), nil)
	opts := &Options{FS: ffs, WriteBufferSize: 1 << 20, BlockSize: 128, DisableBlockCache: true, DisableMmapReads: true,
		TargetFileSize: 4 << 10, DisableAutomaticCompactions: true, L0SlowdownWritesTrigger: 1000, L0StopWritesTrigger: 1000}
	d := mustOpen(t, "/db", opts)
	defer func() { ffs.SetInjector(nil); d.Close() }()
	rng := rand.New(rand.NewSource(11))
	m := model{}
	for i := 0; i < 2000; i++ {
		k := r7Key(rng.Intn(20), rng.Intn(100))
		m[k] = fmt.Sprint("base", i)
		if err := d.Put([]byte(k), []byte(m[k]), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	for f := 0; f < 14; f++ {
		for n := 0; n < 40; n++ {
			k := r7Key(rng.Intn(20), rng.Intn(100))
			if rng.Intn(4) == 0 {
				delete(m, k)
				if err := d.Delete([]byte(k), nil); err != nil {
					t.Fatal(err)
				}
				continue
			}
			m[k] = fmt.Sprint("f", f, "-", n)
			if err := d.Put([]byte(k), []byte(m[k]), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	var failRate atomic.Int64
	var seed atomic.Int64
	ffs.SetInjector(vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op != vfs.OpRead || !bytes.HasSuffix([]byte(path), []byte(".sst")) {
			return nil
		}
		r := failRate.Load()
		if r > 0 && (seed.Add(0x9E3779B9)>>7)%r == 0 {
			return errors.New("injected read error")
		}
		return nil
	}))
	all := m.sortedKeys()
	errs := 0
	for trial := 0; trial < 400; trial++ {
		failRate.Store(int64(5 + rng.Intn(200)))
		lo, hi := r7Bounds(rng)
		if trial%3 == 0 {
			lo, hi = nil, nil
		}
		want := r7Want(m, lo, hi)
		it := d.NewIterator(&ReadOptions{LowerBound: lo, UpperBound: hi})
		// Forward from First, turning back now and then.
		pos := 0
		ok := it.First()
		for steps := 0; ok && steps < 300; steps++ {
			if pos < 0 || pos >= len(want) || string(it.Key()) != want[pos] || string(it.Value()) != m[want[pos]] {
				t.Fatalf("trial %d [%q,%q): at %q=%q, want index %d of %d", trial, lo, hi, it.Key(), it.Value(), pos, len(want))
			}
			if rng.Intn(5) == 0 {
				ok, pos = it.Prev(), pos-1
			} else {
				ok, pos = it.Next(), pos+1
			}
		}
		if !ok && it.Error() == nil && pos >= 0 && pos < len(want) {
			t.Fatalf("trial %d [%q,%q): stopped at index %d of %d without an error", trial, lo, hi, pos, len(want))
		}
		if it.Error() != nil {
			errs++
		}
		it.Close()
	}
	failRate.Store(0)
	t.Logf("%d of 400 iterators met an injected error", errs)
	// Without faults, the store answers in full.
	it := d.NewIterator(nil)
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
	}
	if err := it.Close(); err != nil || fmt.Sprint(got) != fmt.Sprint(all) {
		t.Fatalf("after faults: %d keys (err %v), want %d", len(got), err, len(all))
	}
}

// reviewIter7Duration is d, or a fifth of it under -short (CI's -race run).
func reviewIter7Duration(d time.Duration) time.Duration {
	if testing.Short() {
		return d / 5
	}
	return d
}
