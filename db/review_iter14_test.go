package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// Review of the memtable filter (commit 2bd8766 and its follow-up
// cb5c837): a false negative of the filter is a wrong answer.

// review14Key is key i of writer w.
func review14Key(w, i int) []byte { return []byte(fmt.Sprintf("w%d-key%04d", w, i)) }

// review14Check checks one read of a key whose ops are numbered 1, 2, ...
// (odd: Put of the op number, even: Delete), with before the last op
// acknowledged before the read and after the last op started (its Write
// called) by the read's end.
func review14Check(before, after int64, v []byte, err error) string {
	switch {
	case err == nil:
		c, perr := strconv.ParseInt(string(v), 10, 64)
		if perr != nil || c%2 == 0 {
			return fmt.Sprintf("value %q is no put", v)
		}
		if c < before || c > after {
			return fmt.Sprintf("read put %d, acked before %d, after %d", c, before, after)
		}
	case errors.Is(err, ErrNotFound):
		if before%2 == 1 && after == before {
			return fmt.Sprintf("not found, but put %d was acked before the read and nothing since", before)
		}
	default:
		return fmt.Sprintf("error %v", err)
	}
	return ""
}

// TestReview14ConcurrentReadsDuringSwitches races writers (puts and
// deletes, some in batches, with a 1 KiB write buffer: a memtable switch
// every few writes, flushes and compactions behind) against readers using
// Get, MultiGet, MultiGetInto and ExplainGet, and checks that no read
// misses an acknowledged write or shows an older version through a newer
// one; with snapshots taken by the writers, that a snapshot's reads never
// change; and that the memtable filter metrics stay consistent.
func TestReview14ConcurrentReadsDuringSwitches(t *testing.T) {
	for _, wbs := range []int{1 << 10, 64 << 10} {
		t.Run(fmt.Sprint(wbs), func(t *testing.T) { review14Concurrent(t, wbs) })
	}
}

type review14Snap struct {
	s    *Snapshot
	w    int
	want []int64 // per key of writer w: last op number
}

func review14Concurrent(t *testing.T, wbs int) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), WriteBufferSize: wbs})
	defer d.Close()
	const writers, keys = 2, 48
	var acked, started [writers][keys]atomic.Int64
	var stop atomic.Bool
	var failed atomic.Int64
	var wg sync.WaitGroup
	fail := func(format string, args ...any) {
		if failed.Add(1) <= 10 {
			t.Errorf(format, args...)
		}
	}
	snaps := make(chan review14Snap, 64)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			var count [keys]int64
			for n := 0; !stop.Load(); n++ {
				var b Batch
				var touched []int
				ops := 1
				if rng.Intn(4) == 0 {
					ops = 2 + rng.Intn(8)
				}
				seen := map[int]bool{}
				for j := 0; j < ops; j++ {
					i := rng.Intn(keys)
					if seen[i] {
						continue
					}
					seen[i] = true
					count[i]++
					if count[i]%2 == 1 {
						// Values of varied size, some large (off the inline path).
						v := []byte(strconv.FormatInt(count[i], 10))
						b.Put(review14Key(w, i), v)
					} else {
						b.Delete(review14Key(w, i))
					}
					touched = append(touched, i)
				}
				for _, i := range touched {
					started[w][i].Store(count[i])
				}
				if err := d.Write(&b, nil); err != nil {
					fail("Write: %v", err)
					return
				}
				for _, i := range touched {
					acked[w][i].Store(count[i])
				}
				if n%50 == 0 {
					s := review14Snap{s: d.NewSnapshot(), w: w, want: append([]int64(nil), count[:]...)}
					select {
					case snaps <- s:
					default:
						s.s.Release()
					}
				}
			}
		}(w)
	}
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(100 + r)))
			var intoV [][]byte
			var intoE []error
			for !stop.Load() {
				switch m := rng.Intn(10); {
				case m < 4:
					w, i := rng.Intn(writers), rng.Intn(keys)
					before := acked[w][i].Load()
					var v []byte
					var err error
					if m == 0 {
						v, _, err = d.ExplainGet(review14Key(w, i), nil)
					} else {
						v, err = d.Get(review14Key(w, i), nil)
					}
					if msg := review14Check(before, started[w][i].Load(), v, err); msg != "" {
						fail("Get(%s) (explain %v): %s", review14Key(w, i), m == 0, msg)
					}
				case m < 8:
					n := 2 + rng.Intn(40)
					ks := make([][]byte, n)
					ws, is := make([]int, n), make([]int, n)
					befores := make([]int64, n)
					for j := range ks {
						ws[j], is[j] = rng.Intn(writers), rng.Intn(keys)
						if rng.Intn(8) == 0 {
							ks[j] = []byte(fmt.Sprintf("absent%d", rng.Intn(1000)))
							ws[j] = -1
							continue
						}
						ks[j] = review14Key(ws[j], is[j])
						befores[j] = acked[ws[j]][is[j]].Load()
					}
					var vs [][]byte
					var es []error
					if m < 6 {
						vs, es = d.MultiGet(ks, nil)
					} else {
						intoV, intoE = make([][]byte, n), make([]error, n)
						if err := d.MultiGetInto(ks, intoV, intoE, nil); err != nil {
							fail("MultiGetInto: %v", err)
						}
						vs, es = intoV, intoE
					}
					for j := range ks {
						if ws[j] < 0 {
							if !errors.Is(es[j], ErrNotFound) {
								fail("MultiGet(%s) = %q, %v", ks[j], vs[j], es[j])
							}
							continue
						}
						if msg := review14Check(befores[j], started[ws[j]][is[j]].Load(), vs[j], es[j]); msg != "" {
							fail("MultiGet(%s) (into %v): %s", ks[j], m >= 6, msg)
						}
					}
				default:
					var s review14Snap
					select {
					case s = <-snaps:
					default:
						continue
					}
					ro := &ReadOptions{Snapshot: s.s}
					ks := make([][]byte, keys)
					for i := range ks {
						ks[i] = review14Key(s.w, i)
					}
					vs, es := d.MultiGet(ks, ro)
					for i := range ks {
						v, err := d.Get(ks[i], ro)
						want := s.want[i]
						for _, got := range []struct {
							v   []byte
							err error
						}{{v, err}, {vs[i], es[i]}} {
							if want%2 == 1 {
								if got.err != nil || string(got.v) != strconv.FormatInt(want, 10) {
									fail("snapshot Get(%s) = %q, %v; want %d", ks[i], got.v, got.err, want)
								}
							} else if !errors.Is(got.err, ErrNotFound) {
								fail("snapshot Get(%s) = %q, %v; want not found (op %d)", ks[i], got.v, got.err, want)
							}
						}
					}
					s.s.Release()
				}
			}
		}(r)
	}
	// Metrics stay consistent while the counters move.
	wg.Add(1)
	go func() {
		defer wg.Done()
		var prev FilterMetrics
		for !stop.Load() {
			mf := d.Metrics().MemTableFilter
			if mf.Checks != mf.Useful+mf.Positives || mf.TruePositives > mf.Positives {
				fail("memtable filter metrics inconsistent: %+v", mf)
			}
			if mf.Checks < prev.Checks || mf.Useful < prev.Useful || mf.TruePositives < prev.TruePositives {
				fail("memtable filter metrics went back: %+v after %+v", mf, prev)
			}
			prev = mf
			time.Sleep(time.Millisecond)
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	close(snaps)
	for s := range snaps {
		s.s.Release()
	}
	for w := 0; w < writers; w++ {
		for i := 0; i < keys; i++ {
			a := acked[w][i].Load()
			v, err := d.Get(review14Key(w, i), nil)
			if msg := review14Check(a, a, v, err); msg != "" {
				_, tr, _ := d.ExplainGet(review14Key(w, i), nil)
				t.Errorf("at rest: Get(%s): %s\n%s", review14Key(w, i), msg, tr)
			}
		}
	}
	m := d.Metrics()
	if m.MemTableFilter.Checks == 0 || m.MemTableFilter.Useful == 0 || m.MemTableFilter.TruePositives == 0 {
		t.Errorf("the memtable filter did no work: %+v", m.MemTableFilter)
	}
	if m.Flushes == 0 {
		t.Errorf("no flush in the run")
	}
	t.Logf("flushes %d, memtable filter %+v", m.Flushes, m.MemTableFilter)
}

// review14Apply is a write of the randomized workloads below.
type review14Op struct {
	kind   int // 0 put, 1 delete, 2 delete range
	k, end string
	v      string
}

// review14Ops draws a random workload: puts, overwrites, deletes and
// range deletions over a small key space including the empty key and keys
// of every byte.
func review14Ops(rng *rand.Rand, n int) [][]review14Op {
	key := func() string {
		switch rng.Intn(20) {
		case 0:
			return ""
		case 1:
			return "\x00"
		case 2:
			return "\xff\xff"
		}
		return fmt.Sprintf("k%03d", rng.Intn(200))
	}
	var batches [][]review14Op
	for len(batches) < n {
		var b []review14Op
		for j := 0; j < 1+rng.Intn(4); j++ {
			switch r := rng.Intn(20); {
			case r < 12:
				v := strings.Repeat(string(rune('a'+rng.Intn(26))), rng.Intn(30))
				if rng.Intn(40) == 0 {
					v = strings.Repeat("L", 3000+rng.Intn(3000))
				}
				b = append(b, review14Op{kind: 0, k: key(), v: v})
			case r < 18:
				b = append(b, review14Op{kind: 1, k: key()})
			default:
				// Narrow ranges (a few keys), now and then one over the
				// empty key and "\x00".
				i := rng.Intn(200)
				lo, hi := fmt.Sprintf("k%03d", i), fmt.Sprintf("k%03d", i+1+rng.Intn(4))
				if rng.Intn(10) == 0 {
					lo, hi = "", "\x00\x00"
				}
				b = append(b, review14Op{kind: 2, k: lo, end: hi})
			}
		}
		batches = append(batches, b)
	}
	return batches
}

func review14ApplyModel(m map[string]string, b []review14Op) {
	for _, op := range b {
		switch op.kind {
		case 0:
			m[op.k] = op.v
		case 1:
			delete(m, op.k)
		case 2:
			for k := range m {
				if k >= op.k && k < op.end {
					delete(m, k)
				}
			}
		}
	}
}

func review14Write(t *testing.T, d *DB, b []review14Op) {
	t.Helper()
	var wb Batch
	for _, op := range b {
		switch op.kind {
		case 0:
			wb.Put([]byte(op.k), []byte(op.v))
		case 1:
			wb.Delete([]byte(op.k))
		case 2:
			wb.DeleteRange([]byte(op.k), []byte(op.end))
		}
	}
	if err := d.Write(&wb, nil); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// review14Keys is every key the workloads use, and some absent ones.
func review14Keys() [][]byte {
	ks := [][]byte{{}, {0}, {0xff, 0xff}, []byte("absent"), []byte("k")}
	for i := 0; i < 200; i++ {
		ks = append(ks, []byte(fmt.Sprintf("k%03d", i)))
	}
	return ks
}

// review14Verify checks every key by Get, ExplainGet and MultiGet (in
// chunks, with duplicates) against m.
func review14Verify(t *testing.T, d *DB, ro *ReadOptions, m map[string]string, what string) {
	t.Helper()
	ks := review14Keys()
	check := func(how string, k []byte, v []byte, err error) {
		t.Helper()
		want, ok := m[string(k)]
		switch {
		case ok && (err != nil || string(v) != want):
			t.Fatalf("%s: %s(%q) = %.20q, %v; want %.20q (len %d)", what, how, k, v, err, want, len(want))
		case !ok && !errors.Is(err, ErrNotFound):
			t.Fatalf("%s: %s(%q) = %.20q, %v; want not found", what, how, k, v, err)
		}
	}
	for _, k := range ks {
		v, err := d.Get(k, ro)
		check("Get", k, v, err)
		v, _, err = d.ExplainGet(k, ro)
		check("ExplainGet", k, v, err)
	}
	// Iterators do not use the filter; check them anyway.
	it := d.NewIterator(ro)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
		want, present := m[string(it.Key())]
		if !present || string(it.Value()) != want {
			t.Fatalf("%s: iterator at %q = %.20q, model %v %.20q", what, it.Key(), it.Value(), present, want)
		}
	}
	if err := it.Close(); err != nil || n != len(m) {
		t.Fatalf("%s: iterator saw %d keys of %d: %v", what, n, len(m), err)
	}
	for lo := 0; lo < len(ks); lo += 37 {
		chunk := append([][]byte(nil), ks[lo:min(lo+37, len(ks))]...)
		chunk = append(chunk, chunk[0], chunk[len(chunk)-1])
		vs, es := d.MultiGet(chunk, ro)
		for j, k := range chunk {
			check("MultiGet", k, vs[j], es[j])
		}
	}
}

// TestReview14RandomAgainstModel runs random batches (puts, overwrites,
// deletes, range deletions, the empty key, values off the inline path)
// with the filter on and off, at a 1 KiB and a 4 MiB write buffer, taking
// snapshots, and checks every key through Get, ExplainGet and MultiGet
// after each round, at the snapshots too; then it reopens read-write and
// read-only (WAL replay into a filtered memtable) and checks again.
func TestReview14RandomAgainstModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		wbs  int
		off  bool
	}{{"1KiB", 1 << 10, false}, {"4MiB", 4 << 20, false}, {"64KiB-off", 64 << 10, true}} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			opts := func(ro bool, wbs int) *Options {
				return &Options{FS: fs, WriteBufferSize: wbs, DisableMemTableFilter: tc.off, ReadOnly: ro}
			}
			d := mustOpen(t, "/db", opts(false, tc.wbs))
			rng := rand.New(rand.NewSource(14))
			m := map[string]string{}
			type snap struct {
				s *Snapshot
				m map[string]string
			}
			var snaps []snap
			for round := 0; round < 12; round++ {
				for _, b := range review14Ops(rng, 150) {
					review14Write(t, d, b)
					review14ApplyModel(m, b)
				}
				review14Verify(t, d, nil, m, fmt.Sprintf("round %d", round))
				c := map[string]string{}
				for k, v := range m {
					c[k] = v
				}
				snaps = append(snaps, snap{d.NewSnapshot(), c})
				if round == 5 && tc.wbs > 64<<10 {
					if err := d.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i, s := range snaps {
				review14Verify(t, d, &ReadOptions{Snapshot: s.s}, s.m, fmt.Sprintf("snapshot %d", i))
				s.s.Release()
			}
			// More writes left in the WAL only (the 4 MiB store holds them
			// in its memtable), then reopen.
			for _, b := range review14Ops(rng, 100) {
				review14Write(t, d, b)
				review14ApplyModel(m, b)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			// Read-only at a far smaller write buffer than the one the
			// logs were written with: the replayed memtable's filter is
			// overfull (512 bits), which may only make it say "maybe".
			for _, wbs := range []int{1 << 10, tc.wbs} {
				r := mustOpen(t, "/db", opts(true, wbs))
				review14Verify(t, r, nil, m, fmt.Sprintf("read-only wbs %d", wbs))
				r.Close()
			}
			d = mustOpen(t, "/db", opts(false, 1<<10))
			review14Verify(t, d, nil, m, "reopened")
			for _, b := range review14Ops(rng, 40) {
				review14Write(t, d, b)
				review14ApplyModel(m, b)
			}
			review14Verify(t, d, nil, m, "reopened and written")
			if len(m) < 50 {
				t.Fatalf("the model holds only %d keys", len(m))
			}
			d.Close()
		})
	}
}

// TestReview14LargeBatchOverflowsMemTable writes one batch far larger
// than a 1 KiB write buffer (the memtable overflows it, the filter of
// 512 bits saturates) and reads every key while the memtable is the
// mutable one, while it is frozen behind a new one, after a flush, and
// after a read-only reopen.
func TestReview14LargeBatchOverflowsMemTable(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", &Options{FS: fs, WriteBufferSize: 1 << 10, DisableAutomaticCompactions: true})
	var b Batch
	const n = 20000
	for i := 0; i < n; i++ {
		b.Put([]byte(fmt.Sprintf("big%06d", i)), []byte(fmt.Sprint(i)))
	}
	b.Delete([]byte("big000007"))
	if err := d.Write(&b, nil); err != nil {
		t.Fatal(err)
	}
	check := func(what string, d *DB) {
		t.Helper()
		ks := make([][]byte, 0, n)
		for i := 0; i < n; i++ {
			ks = append(ks, []byte(fmt.Sprintf("big%06d", i)))
		}
		vs, es := d.MultiGet(ks, nil)
		for i, k := range ks {
			v, err := d.Get(k, nil)
			if i == 7 {
				if !errors.Is(err, ErrNotFound) || !errors.Is(es[i], ErrNotFound) {
					t.Fatalf("%s: deleted %s: %q %v / %q %v", what, k, v, err, vs[i], es[i])
				}
				continue
			}
			if err != nil || string(v) != fmt.Sprint(i) || es[i] != nil || string(vs[i]) != fmt.Sprint(i) {
				t.Fatalf("%s: %s = %q %v / MultiGet %q %v", what, k, v, err, vs[i], es[i])
			}
		}
	}
	check("mutable", d)
	// The next write freezes the memtable (and may wait for its flush).
	if err := d.Put([]byte("big000003"), []byte("newer"), nil); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Get([]byte("big000003"), nil); err != nil || string(v) != "newer" {
		t.Fatalf("overwrite: %q %v", v, err)
	}
	if err := d.Put([]byte("big000003"), []byte("3"), nil); err != nil {
		t.Fatal(err)
	}
	check("after switch", d)
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed", d)
	d.Close()
	r := mustOpen(t, "/db", &Options{FS: fs, ReadOnly: true, WriteBufferSize: 1 << 10})
	check("read-only", r)
	r.Close()
}

// TestReview14HugeKeysAndValues writes keys and values near the limits
// (an 8 MiB key, values of 16 MiB) beside small ones, overwrites and
// deletes them across memtable switches, and reads them back.
func TestReview14HugeKeysAndValues(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", &Options{FS: fs, WriteBufferSize: 1 << 10, DisableAutomaticCompactions: true})
	defer d.Close()
	bigKey := bytes.Repeat([]byte("K"), MaxKeySize)
	bigKey2 := append(bytes.Repeat([]byte("K"), MaxKeySize-1), 'L')
	bigVal := bytes.Repeat([]byte("v"), 16<<20)
	var b Batch
	b.Put(bigKey, []byte("small"))
	b.Put([]byte("a"), bigVal)
	b.Put(nil, []byte("empty"))
	if err := d.Write(&b, nil); err != nil {
		t.Fatal(err)
	}
	get := func(k []byte) ([]byte, error) {
		v, err := d.Get(k, nil)
		vs, es := d.MultiGet([][]byte{k, []byte("zz"), k}, nil)
		for _, j := range []int{0, 2} {
			if !bytes.Equal(vs[j], v) || !errors.Is(es[j], err) && es[j] != err {
				t.Fatalf("MultiGet(%.8q) = %d bytes %v; Get %d bytes %v", k, len(vs[j]), es[j], len(v), err)
			}
		}
		return v, err
	}
	if v, err := get(bigKey); err != nil || string(v) != "small" {
		t.Fatalf("big key: %q %v", v, err)
	}
	if _, err := get(bigKey2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other big key: %v", err)
	}
	if v, err := get([]byte("a")); err != nil || !bytes.Equal(v, bigVal) {
		t.Fatalf("big value: %d bytes %v", len(v), err)
	}
	if v, err := get(nil); err != nil || string(v) != "empty" {
		t.Fatalf("empty key: %q %v", v, err)
	}
	// Switch and overwrite/delete in the new memtable.
	if err := d.Delete(bigKey, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := get(bigKey); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted big key: %v", err)
	}
	if v, err := get(nil); err != nil || len(v) != 0 {
		t.Fatalf("empty key overwritten: %q %v", v, err)
	}
	if err := d.DeleteRange(nil, []byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	for _, k := range [][]byte{nil, []byte("a")} {
		if _, err := get(k); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%q under a range tombstone: %v", k, err)
		}
	}
	if err := d.Put(bigKey2, []byte("2"), nil); err != nil {
		t.Fatal(err)
	}
	if v, err := get(bigKey2); err != nil || string(v) != "2" {
		t.Fatalf("big key 2: %q %v", v, err)
	}
}

// TestReview14RangeDelAndFilter covers the range-deletion path: a key in
// a table, a range tombstone over it in the frozen memtable, a newer put
// of it in the mutable one, and the reverse; and a tombstone in the
// mutable memtable over a key whose newest version is in the frozen one.
func TestReview14RangeDelAndFilter(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true})
	defer d.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	want := func(k, v string) {
		t.Helper()
		m := map[string]string{}
		if v != "" {
			m[k] = v
		}
		for _, ro := range []*ReadOptions{nil} {
			got, err := d.Get([]byte(k), ro)
			gv, ge := got, err
			vs, es := d.MultiGet([][]byte{[]byte(k), []byte("other")}, ro)
			ev, _, ee := d.ExplainGet([]byte(k), ro)
			for _, r := range []struct {
				v   []byte
				err error
			}{{gv, ge}, {vs[0], es[0]}, {ev, ee}} {
				if v == "" && !errors.Is(r.err, ErrNotFound) || v != "" && (r.err != nil || string(r.v) != v) {
					t.Fatalf("%q = %q %v, want %q", k, r.v, r.err, v)
				}
			}
		}
	}
	must(d.Put([]byte("k1"), []byte("table"), nil))
	must(d.Put([]byte("k2"), []byte("table"), nil))
	must(d.Flush())
	must(d.DeleteRange([]byte("k"), []byte("l"), nil))
	want("k1", "")
	must(d.Put([]byte("k1"), []byte("mem"), nil))
	want("k1", "mem")
	want("k2", "")
	must(d.Flush())
	want("k1", "mem")
	want("k2", "")
	must(d.Put([]byte("k2"), []byte("again"), nil))
	want("k2", "again")
	must(d.DeleteRange([]byte("k2"), []byte("k3"), nil))
	want("k2", "")
	want("k1", "mem")
}

// TestReview14ExplainCountsAsGet checks the documented "ExplainGet counts
// in Metrics as a Get does" for the memtable filter: after a flush the
// mutable memtable is empty, which Get does not ask its filter about.
func TestReview14ExplainCountsAsGet(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer d.Close()
	if err := d.Put([]byte("a"), []byte("1"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	before := d.Metrics().MemTableFilter
	if _, err := d.Get([]byte("b"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	afterGet := d.Metrics().MemTableFilter
	if _, _, err := d.ExplainGet([]byte("b"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	afterExplain := d.Metrics().MemTableFilter
	getDelta := afterGet.Checks - before.Checks
	explainDelta := afterExplain.Checks - afterGet.Checks
	if getDelta != explainDelta {
		t.Errorf("memtable filter checks: Get counted %d, ExplainGet %d (%+v -> %+v -> %+v)", getDelta, explainDelta, before, afterGet, afterExplain)
	}
}
