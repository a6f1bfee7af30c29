package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// Adversarial review of d26efb2: positioning calls of an iterator with
// nothing to merge (none) no longer register as reads (noneStep), and
// the iterators' prefix/range filter counters are kept as passed/skipped
// with Metrics' Checks their sum.

// r10cOptions has a 4-byte prefix extractor and a range filter on every
// table, small tables and no automatic compaction (the tree only changes
// when the test says so).
func r10cOptions(fs vfs.FS) *Options {
	return &Options{
		FS:                          fs,
		Prefix:                      filter.FixedPrefix(4),
		RangeFilter:                 filter.NewGrafiteRangePolicy(16),
		DisableAutomaticCompactions: true,
		TargetFileSize:              1 << 10,
		BlockSize:                   256,
	}
}

func r10cKey(p, j int) string { return fmt.Sprintf("k%03d:%02d", p, j) }

// r10cStore builds a tree with several tables in a deeper level (even
// prefixes k000..k078, compacted) and two level-0 tables (k001, k011, ...
// and k005, k015, ...), plus a few memtable keys under prefix "m".
// It returns the model.
func r10cStore(t *testing.T, fs vfs.FS) (*DB, map[string]string) {
	t.Helper()
	d := mustOpen(t, "/db", r10cOptions(fs))
	m := map[string]string{}
	put := func(k string) {
		v := fmt.Sprintf("v%s-%016x%016x", k, rand.Uint64(), rand.Uint64())
		if err := d.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	flush := func() {
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// prefixes writes n keys of every step-th prefix in [from, to), and
	// flushes them into a table.
	prefixes := func(from, to, step, n int) {
		for p := from; p < to; p += step {
			for j := 0; j < n; j++ {
				put(r10cKey(p, j))
			}
		}
		flush()
	}
	prefixes(0, 40, 2, 8)
	prefixes(40, 80, 2, 8)
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	prefixes(1, 80, 10, 3)
	prefixes(5, 80, 10, 3)
	for j := 0; j < 5; j++ {
		put(fmt.Sprintf("m%03d", j))
	}
	// The shape the tests rely on: tables in level 0 and several in one
	// deeper level.
	ref := d.loadReadState()
	defer ref.unref()
	v := ref.rs.v
	deep := 0
	for l := 1; l < manifest.NumLevels; l++ {
		deep = max(deep, v.NumFiles(l))
	}
	if v.NumFiles(0) != 2 || deep < 3 {
		t.Fatalf("tree shape: %d level-0 tables, at most %d in a deeper level", v.NumFiles(0), deep)
	}
	return d, m
}

// r10cCount is one level's expected iterator filter counts.
type r10cCount struct{ prefixPassed, prefixSkipped, rangePassed, rangeSkipped int64 }

// r10cExpect returns what making an iterator with bounds [lo, hi) must
// add to each level's PrefixFilter and RangeFilter: every table whose key
// range meets the bounds is asked its prefix filter when the bounds lie
// in one prefix, and, when both bounds are set and the prefix filter let
// it through, its range filter. The tables are found here by a plain
// comparison of their key ranges, not by the iterator's search.
func r10cExpect(t *testing.T, d *DB, lo, hi []byte) [manifest.NumLevels]r10cCount {
	t.Helper()
	return r10cExpectOf(t, d, lo, hi, true)
}

// r10cExpectOf is r10cExpect; unless strict, a table without a prefix
// filter of the DB's extractor is not prefix-checked, and one without a
// usable range filter is not range-checked.
func r10cExpectOf(t *testing.T, d *DB, lo, hi []byte, strict bool) [manifest.NumLevels]r10cCount {
	t.Helper()
	var out [manifest.NumLevels]r10cCount
	if lo != nil && hi != nil && bytes.Compare(lo, hi) >= 0 {
		return out
	}
	prefix, prefixOK := filter.ScanPrefix(d.opts.Prefix, lo, hi)
	rangeOK := lo != nil && hi != nil && d.opts.RangeFilter != nil
	if !prefixOK && !rangeOK {
		return out
	}
	ref := d.loadReadState()
	defer ref.unref()
	for level, files := range ref.rs.v.Files {
		for _, f := range files {
			if lo != nil && bytes.Compare(base.UserKey(f.Largest), lo) < 0 {
				continue
			}
			if hi != nil && bytes.Compare(base.UserKey(f.Smallest), hi) >= 0 {
				continue
			}
			r, err := d.tables.get(f)
			if err != nil {
				t.Fatal(err)
			}
			if prefixOK {
				checked, may := r.PrefixCheck(d.opts.prefixName, prefix)
				if !checked && strict {
					t.Fatalf("table %d has no prefix filter of %s", f.FileNum, d.opts.prefixName)
				}
				if checked && !may {
					out[level].prefixSkipped++
					continue
				}
				if checked {
					out[level].prefixPassed++
				}
			}
			if rangeOK {
				if !r.HasRangeFilter() {
					if strict {
						t.Fatalf("table %d has no range filter", f.FileNum)
					}
					continue
				}
				if r.RangeMayContain(lo, hi) {
					out[level].rangePassed++
				} else {
					out[level].rangeSkipped++
				}
			}
		}
	}
	return out
}

// r10cDelta checks that the iterator filter metrics moved from before to
// after by exactly n times want, level by level and in the totals, and
// that each FilterMetrics is consistent.
func r10cDelta(t *testing.T, before, after *Metrics, want [manifest.NumLevels]r10cCount, n int64, what string) {
	t.Helper()
	var tot r10cCount
	for l := 0; l < manifest.NumLevels; l++ {
		w := want[l]
		tot.prefixPassed += w.prefixPassed
		tot.prefixSkipped += w.prefixSkipped
		tot.rangePassed += w.rangePassed
		tot.rangeSkipped += w.rangeSkipped
		r10cCheckFM(t, after.Levels[l].PrefixFilter, fmt.Sprintf("%s: L%d prefix", what, l))
		r10cCheckFM(t, after.Levels[l].RangeFilter, fmt.Sprintf("%s: L%d range", what, l))
		pb, pa := before.Levels[l].PrefixFilter, after.Levels[l].PrefixFilter
		rb, ra := before.Levels[l].RangeFilter, after.Levels[l].RangeFilter
		got := [6]int64{pa.Checks - pb.Checks, pa.Useful - pb.Useful, pa.Positives - pb.Positives,
			ra.Checks - rb.Checks, ra.Useful - rb.Useful, ra.Positives - rb.Positives}
		exp := [6]int64{n * (w.prefixPassed + w.prefixSkipped), n * w.prefixSkipped, n * w.prefixPassed,
			n * (w.rangePassed + w.rangeSkipped), n * w.rangeSkipped, n * w.rangePassed}
		if got != exp {
			t.Fatalf("%s: L%d prefix/range filter deltas (checks, useful, positives) = %v, want %v", what, l, got, exp)
		}
		if pa.TruePositives != 0 || ra.TruePositives != 0 {
			t.Fatalf("%s: L%d: iterator filters report true positives %d/%d", what, l, pa.TruePositives, ra.TruePositives)
		}
	}
	r10cCheckFM(t, after.PrefixFilter, what+": total prefix")
	r10cCheckFM(t, after.RangeFilter, what+": total range")
	got := [6]int64{
		after.PrefixFilter.Checks - before.PrefixFilter.Checks, after.PrefixFilter.Useful - before.PrefixFilter.Useful,
		after.PrefixFilter.Positives - before.PrefixFilter.Positives,
		after.RangeFilter.Checks - before.RangeFilter.Checks, after.RangeFilter.Useful - before.RangeFilter.Useful,
		after.RangeFilter.Positives - before.RangeFilter.Positives}
	exp := [6]int64{n * (tot.prefixPassed + tot.prefixSkipped), n * tot.prefixSkipped, n * tot.prefixPassed,
		n * (tot.rangePassed + tot.rangeSkipped), n * tot.rangeSkipped, n * tot.rangePassed}
	if got != exp {
		t.Fatalf("%s: total prefix/range filter deltas = %v, want %v", what, got, exp)
	}
}

// r10cCheckFM checks one FilterMetrics of an iterator filter.
func r10cCheckFM(t *testing.T, f FilterMetrics, what string) {
	t.Helper()
	if err := r10cFMErr(f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func r10cFMErr(f FilterMetrics) error {
	if f.Checks < 0 || f.Useful < 0 || f.Positives < 0 || f.Useful > f.Checks || f.Positives > f.Checks ||
		f.Useful+f.Positives != f.Checks || f.TruePositives != 0 {
		return fmt.Errorf("inconsistent %+v", f)
	}
	if r := f.FalsePositiveRate(); r < 0 || r > 1 {
		return fmt.Errorf("false positive rate %v of %+v", r, f)
	}
	return nil
}

// r10cBounds are bounds of every kind: absent prefixes inside and outside
// the tables' key ranges, present prefixes (deep level, level 0, both),
// prefix sub-ranges, ranges across prefixes (range filter only), empty
// and inverted ranges, one-sided bounds, and the memtable's prefix.
func r10cBounds() [][2][]byte {
	pb := func(p string) [2][]byte {
		lo, hi := PrefixBounds([]byte(p))
		return [2][]byte{lo, hi}
	}
	rb := func(lo, hi string) [2][]byte { return [2][]byte{[]byte(lo), []byte(hi)} }
	return [][2][]byte{
		pb("k003"), pb("k007"), pb("k033"), pb("k077"), pb("b000"), pb("z999"), pb("k099"),
		pb("k002"), pb("k011"), pb("k015"), pb("k040"), pb("k078"), pb("k000"),
		rb("k004:02", "k004:05"), rb("k003:00", "k003:99"), rb("k004:9", "k005"),
		rb("k010", "k020"), rb("k002:99", "k003:00"), rb("k079", "k090"), rb("a", "b"),
		rb("k050:", "k050:"), rb("k060", "k050"),
		{[]byte("k020"), nil}, {nil, []byte("k030")}, {nil, nil},
		pb("m000"), pb("m"), rb("l", "m"),
	}
}

// TestReview10cFilterMetricsExact: making an iterator adds to each
// level's PrefixFilter and RangeFilter exactly one check per table its
// bounds meet (skipped or passed by the filter's answer), Checks =
// Useful + Positives per level and in the totals; positioning calls,
// however many, add nothing; ExplainSeek adds exactly what making the
// iterator does. Every scan matches the model.
func TestReview10cFilterMetricsExact(t *testing.T) {
	d, m := r10cStore(t, vfs.NewMem())
	defer d.Close()
	anySkipped, anyRangeSkipped, anyChecks := false, false, false
	for _, b := range r10cBounds() {
		lo, hi := b[0], b[1]
		what := fmt.Sprintf("[%q, %q)", lo, hi)
		want := r10cExpect(t, d, lo, hi)
		for _, c := range want {
			anySkipped = anySkipped || c.prefixSkipped > 0
			anyRangeSkipped = anyRangeSkipped || c.rangeSkipped > 0
			anyChecks = anyChecks || c.prefixPassed+c.prefixSkipped+c.rangePassed+c.rangeSkipped > 0
		}
		before := d.Metrics()
		it := d.NewIterator(&ReadOptions{LowerBound: lo, UpperBound: hi})
		afterMake := d.Metrics()
		r10cDelta(t, before, afterMake, want, 1, what+" NewIterator")
		// The scan, in both directions, and repeated positioning calls.
		keys := r7Want(m, lo, hi)
		for round := 0; round < 3; round++ {
			var got []string
			for ok := it.First(); ok; ok = it.Next() {
				got = append(got, string(it.Key()))
			}
			if fmt.Sprint(got) != fmt.Sprint(keys) {
				t.Fatalf("%s forward: %q, want %q", what, got, keys)
			}
			got = got[:0]
			for ok := it.Last(); ok; ok = it.Prev() {
				got = append(got, string(it.Key()))
			}
			if len(got) != len(keys) {
				t.Fatalf("%s backward: %d keys, want %d", what, len(got), len(keys))
			}
			for _, k := range []string{"", "k003", "k040:03", "zzz"} {
				ok := it.Seek([]byte(k))
				var w []string
				for _, kk := range keys {
					if kk >= k {
						w = append(w, kk)
					}
				}
				if ok != (len(w) > 0) || ok && string(it.Key()) != w[0] {
					t.Fatalf("%s Seek(%q) = %v %q, want %q", what, k, ok, it.Key(), w)
				}
			}
			if err := it.Error(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatalf("%s Close: %v", what, err)
		}
		r10cDelta(t, afterMake, d.Metrics(), [manifest.NumLevels]r10cCount{}, 1, what+" positioning and Close")

		// ExplainSeek counts what a plain iterator counts.
		before = d.Metrics()
		seek := lo
		if seek == nil {
			seek = []byte("k")
		}
		tr, err := d.ExplainSeek(seek, &ReadOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			t.Fatalf("%s ExplainSeek: %v", what, err)
		}
		var w []string
		for _, kk := range keys {
			if kk >= string(seek) {
				w = append(w, kk)
			}
		}
		if tr.Found != (len(w) > 0) || tr.Found && string(tr.Result) != w[0] {
			t.Fatalf("%s ExplainSeek: found %v %q, want %q", what, tr.Found, tr.Result, w)
		}
		skips := 0
		for _, s := range tr.Steps {
			if s.Outcome == SeekPrefixFilterNo || s.Outcome == SeekRangeFilterNo {
				skips++
			}
		}
		var useful int64
		for _, c := range want {
			useful += c.prefixSkipped + c.rangeSkipped
		}
		if int64(skips) > useful {
			t.Fatalf("%s ExplainSeek: %d tables skipped by filter in the trace, the iterator skips %d", what, skips, useful)
		}
		r10cDelta(t, before, d.Metrics(), want, 1, what+" ExplainSeek")
	}
	if !anySkipped || !anyRangeSkipped || !anyChecks {
		t.Fatalf("the workload exercised too little: prefix skips %v, range skips %v, checks %v", anySkipped, anyRangeSkipped, anyChecks)
	}
	// The same bounds many times: n times the counts.
	b := r10cBounds()[0]
	want := r10cExpect(t, d, b[0], b[1])
	before := d.Metrics()
	const n = 57
	for i := 0; i < n; i++ {
		it := d.NewIterator(&ReadOptions{LowerBound: b[0], UpperBound: b[1]})
		if it.First() || it.Last() || it.Seek(b[0]) {
			t.Fatalf("absent prefix found %q", it.Key())
		}
		it.Close()
	}
	r10cDelta(t, before, d.Metrics(), want, n, "repeated absent prefix")
	// Closing the DB keeps the counts, and a closed DB's iterators count
	// nothing.
	before = d.Metrics()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	it := d.NewIterator(&ReadOptions{LowerBound: b[0], UpperBound: b[1]})
	if it.First() || !errors.Is(it.Error(), ErrClosed) {
		t.Fatalf("iterator of a closed DB: %v", it.Error())
	}
	it.Close()
	r10cDelta(t, before, d.Metrics(), [manifest.NumLevels]r10cCount{}, 1, "after Close")
}

// TestReview10cFilterMetricsConcurrent: scanners make iterators of every
// kind while a reader takes Metrics: every snapshot is consistent (per
// level and in the totals: no negative count, Useful and Positives at
// most Checks, Checks their sum, totals the sum of the levels) and no
// count ever decreases; at the end the counts are exactly the sum of what
// each iterator had to add.
func TestReview10cFilterMetricsConcurrent(t *testing.T) {
	d, m := r10cStore(t, vfs.NewMem())
	defer d.Close()
	bounds := r10cBounds()
	wants := make([][manifest.NumLevels]r10cCount, len(bounds))
	keys := make([][]string, len(bounds))
	for i, b := range bounds {
		wants[i] = r10cExpect(t, d, b[0], b[1])
		keys[i] = r7Want(m, b[0], b[1])
	}
	start := d.Metrics()
	var (
		stop  atomic.Bool
		wg    sync.WaitGroup
		errMu sync.Mutex
		errs  []error
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
		stop.Store(true)
	}
	const scanners = 3
	made := make([][]int64, scanners)
	for g := 0; g < scanners; g++ {
		made[g] = make([]int64, len(bounds))
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for n := 0; !stop.Load(); n++ {
				i := rng.Intn(len(bounds))
				it := d.NewIterator(&ReadOptions{LowerBound: bounds[i][0], UpperBound: bounds[i][1]})
				made[g][i]++
				c := 0
				for ok := it.First(); ok; ok = it.Next() {
					c++
				}
				if err := it.Close(); err != nil || c != len(keys[i]) {
					fail(fmt.Errorf("%q: %d keys, want %d (%v)", bounds[i], c, len(keys[i]), err))
					return
				}
			}
		}(g)
	}
	var prev *Metrics
	snaps := 0
	check := func(cur *Metrics) error {
		var sp, sr FilterMetrics
		for l := range cur.Levels {
			for k, f := range []FilterMetrics{cur.Levels[l].PrefixFilter, cur.Levels[l].RangeFilter} {
				if err := r10cFMErr(f); err != nil {
					return fmt.Errorf("L%d (%d): %v", l, k, err)
				}
				if prev != nil {
					p := []FilterMetrics{prev.Levels[l].PrefixFilter, prev.Levels[l].RangeFilter}[k]
					if f.Checks < p.Checks || f.Useful < p.Useful || f.Positives < p.Positives {
						return fmt.Errorf("L%d (%d): went back from %+v to %+v", l, k, p, f)
					}
				}
			}
			sp.add(cur.Levels[l].PrefixFilter)
			sr.add(cur.Levels[l].RangeFilter)
		}
		if sp != cur.PrefixFilter || sr != cur.RangeFilter {
			return fmt.Errorf("totals %+v %+v, sums of the levels %+v %+v", cur.PrefixFilter, cur.RangeFilter, sp, sr)
		}
		if err := r10cFMErr(cur.PrefixFilter); err != nil {
			return fmt.Errorf("total prefix: %v", err)
		}
		if err := r10cFMErr(cur.RangeFilter); err != nil {
			return fmt.Errorf("total range: %v", err)
		}
		if !strings10cOK(cur) {
			return fmt.Errorf("String does not show the filter counts:\n%s", cur)
		}
		return nil
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) && !stop.Load() {
		cur := d.Metrics()
		if err := check(cur); err != nil {
			fail(err)
			break
		}
		prev = cur
		snaps++
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	// Exactly the sum of what each iterator had to add.
	var total [manifest.NumLevels]r10cCount
	iters := int64(0)
	for g := range made {
		for i, n := range made[g] {
			iters += n
			for l := range total {
				total[l].prefixPassed += n * wants[i][l].prefixPassed
				total[l].prefixSkipped += n * wants[i][l].prefixSkipped
				total[l].rangePassed += n * wants[i][l].rangePassed
				total[l].rangeSkipped += n * wants[i][l].rangeSkipped
			}
		}
	}
	end := d.Metrics()
	if err := check(end); err != nil {
		t.Fatal(err)
	}
	r10cDelta(t, start, end, total, 1, fmt.Sprintf("%d iterators from %d goroutines", iters, scanners))
	t.Logf("%d iterators, %d metrics snapshots; prefix %+v, range %+v", iters, snaps, end.PrefixFilter, end.RangeFilter)
}

// strings10cOK checks that Metrics.String reports the iterator filters'
// totals as they are.
func strings10cOK(m *Metrics) bool {
	s := m.String()
	if pf := m.PrefixFilter; pf.Checks > 0 {
		line := fmt.Sprintf("prefix filter: %d checks by bounded iterators, %d tables skipped, %d let through\n", pf.Checks, pf.Useful, pf.Positives)
		if !bytes.Contains([]byte(s), []byte(line)) {
			return false
		}
	}
	if rf := m.RangeFilter; rf.Checks > 0 {
		line := fmt.Sprintf("range filter: %d checks by bounded iterators, %d tables skipped, %d let through\n", rf.Checks, rf.Useful, rf.Positives)
		if !bytes.Contains([]byte(s), []byte(line)) {
			return false
		}
	}
	return true
}

// r10cNoneBounds are bounds whose iterators are none in r10cStore: absent
// prefixes (by filter or key range), an empty and an inverted range, and
// ranges between tables.
func r10cNoneBounds() []*ReadOptions {
	ro := func(lo, hi string) *ReadOptions { return &ReadOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)} }
	return []*ReadOptions{prefixRO("b000"), prefixRO("z999"), ro("k050:", "k050:"), ro("k060", "k050"),
		ro("a", "b"), ro("l", "m"), ro("", ""), {UpperBound: []byte{}}}
}

// r10cRequireNone checks that ro makes a none iterator (the case of the
// change), so the tests below test what they claim.
func r10cRequireNone(t *testing.T, d *DB, ro *ReadOptions) {
	t.Helper()
	it := d.NewIterator(ro)
	defer it.Close()
	if it.s == nil || !it.s.none {
		t.Fatalf("bounds [%q, %q) do not make a none iterator", ro.LowerBound, ro.UpperBound)
	}
}

// r10cQuiet checks an iterator that found nothing and has no error.
func r10cQuiet(t *testing.T, it *Iterator, ok bool, what string) {
	t.Helper()
	if ok || it.Valid() || it.Key() != nil || it.Value() != nil || it.Error() != nil {
		t.Fatalf("%s: returned %v, Valid %v, Key %q, Value %q, Error %v", what, ok, it.Valid(), it.Key(), it.Value(), it.Error())
	}
}

// r10cClosedErr checks an iterator call after a Close: false, not Valid,
// no key, Error ErrClosed (or want, if set).
func r10cClosedErr(t *testing.T, it *Iterator, ok bool, want error, what string) {
	t.Helper()
	if want == nil {
		want = ErrClosed
	}
	if ok || it.Valid() || it.Key() != nil || it.Value() != nil || !errors.Is(it.Error(), want) {
		t.Fatalf("%s: returned %v, Valid %v, Key %q, Value %q, Error %v (want %v)", what, ok, it.Valid(), it.Key(), it.Value(), it.Error(), want)
	}
}

// TestReview10cNoneLifecycle walks none iterators through every call,
// with Error/Valid/Key after each: before any Close nothing is found and
// no error is reported; after the iterator's own Close every call
// reports ErrClosed; after the DB's Close every positioning call reports
// ErrClosed, which Close then returns and keeps; an iterator made with a
// released snapshot keeps ErrSnapshotReleased whatever follows.
func TestReview10cNoneLifecycle(t *testing.T) {
	d, _ := r10cStore(t, vfs.NewMem())
	defer d.Close()
	steps := []struct {
		name string
		f    func(it *Iterator) bool
	}{
		{"First", func(it *Iterator) bool { return it.First() }},
		{"Last", func(it *Iterator) bool { return it.Last() }},
		{"Seek", func(it *Iterator) bool { return it.Seek([]byte("k050")) }},
		{"Seek nil", func(it *Iterator) bool { return it.Seek(nil) }},
		{"Next", func(it *Iterator) bool { return it.Next() }},
		{"Prev", func(it *Iterator) bool { return it.Prev() }},
	}
	var afterDB []*Iterator
	for _, ro := range r10cNoneBounds() {
		r10cRequireNone(t, d, ro)
		name := fmt.Sprintf("[%q, %q)", ro.LowerBound, ro.UpperBound)
		// Positioned, then its own Close.
		it := d.NewIterator(ro)
		for _, s := range steps {
			r10cQuiet(t, it, s.f(it), name+" "+s.name)
		}
		if err := it.Close(); err != nil {
			t.Fatalf("%s Close: %v", name, err)
		}
		for _, s := range steps {
			r10cClosedErr(t, it, s.f(it), nil, name+" after Close, "+s.name)
		}
		if err := it.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("%s second Close: %v", name, err)
		}
		// Kept open across the DB's Close, each positioned before.
		for _, s := range steps {
			it := d.NewIterator(ro)
			r10cQuiet(t, it, s.f(it), name+" "+s.name)
			afterDB = append(afterDB, it)
		}
	}
	// A none iterator made with a snapshot: releasing the snapshot
	// changes nothing (its view was fixed when it was made).
	snap := d.NewSnapshot()
	snapIt := d.NewIterator(&ReadOptions{Snapshot: snap, LowerBound: []byte("b000"), UpperBound: []byte("b001")})
	if snapIt.s == nil || !snapIt.s.none {
		t.Fatal("the snapshot's absent-prefix iterator is not none")
	}
	snap.Release()
	for _, s := range steps {
		r10cQuiet(t, snapIt, s.f(snapIt), "none iterator of a released snapshot, "+s.name)
	}
	// An iterator made with a released snapshot has an error from the
	// start; it stays the error.
	bad := d.NewIterator(&ReadOptions{Snapshot: snap, LowerBound: []byte("b000"), UpperBound: []byte("b001")})
	if !errors.Is(bad.Error(), ErrSnapshotReleased) {
		t.Fatalf("iterator of a released snapshot: %v", bad.Error())
	}
	for _, s := range steps {
		r10cClosedErr(t, bad, s.f(bad), ErrSnapshotReleased, "released snapshot, "+s.name)
	}
	bad2 := d.NewIterator(&ReadOptions{Snapshot: snap, LowerBound: []byte("k060"), UpperBound: []byte("k050")})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		r10cClosedErr(t, bad, s.f(bad), ErrSnapshotReleased, "released snapshot after the DB's Close, "+s.name)
		r10cClosedErr(t, bad2, s.f(bad2), ErrSnapshotReleased, "released snapshot (empty bounds) after the DB's Close, "+s.name)
	}
	for _, b := range []*Iterator{bad, bad2} {
		if err := b.Close(); !errors.Is(err, ErrSnapshotReleased) {
			t.Fatalf("Close of the released snapshot's iterator: %v", err)
		}
		r10cClosedErr(t, b, b.First(), ErrSnapshotReleased, "released snapshot after both Closes")
		if err := b.Close(); err == nil {
			t.Fatal("second Close of the released snapshot's iterator: nil")
		}
	}
	// The DB is closed: every positioning call of a kept none iterator
	// reports ErrClosed (Next and Prev, not at a key, return false).
	afterDB = append(afterDB, snapIt)
	for i, it := range afterDB {
		what := fmt.Sprintf("kept iterator %d after the DB's Close", i)
		if it.Next() || it.Prev() || it.Valid() {
			t.Fatalf("%s: Next/Prev moved", what)
		}
		s := steps[i%4] // First, Last, Seek, Seek nil
		r10cClosedErr(t, it, s.f(it), nil, what+", "+s.name)
		for _, s := range steps {
			r10cClosedErr(t, it, s.f(it), nil, what+", then "+s.name)
		}
		if err := it.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("%s: Close returned %v, want ErrClosed", what, err)
		}
		for _, s := range steps {
			r10cClosedErr(t, it, s.f(it), nil, what+", after its Close, "+s.name)
		}
		if err := it.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("%s: second Close returned %v", what, err)
		}
	}
	// A none iterator never positioned before the DB's Close: its first
	// call reports ErrClosed too; and ExplainSeek reports ErrClosed.
	if _, err := d.ExplainSeek([]byte("b000"), prefixRO("b000")); !errors.Is(err, ErrClosed) {
		t.Fatalf("ExplainSeek after Close: %v", err)
	}
}

// TestReview10cNoneUnpositionedAcrossClose: a none iterator made before
// the DB's Close and first positioned after it reports ErrClosed from
// each of First, Last and Seek, and Close then returns it; after Close of
// one never positioned, a call reports ErrClosed.
func TestReview10cNoneUnpositionedAcrossClose(t *testing.T) {
	d, _ := r10cStore(t, vfs.NewMem())
	calls := []func(it *Iterator) bool{
		func(it *Iterator) bool { return it.First() },
		func(it *Iterator) bool { return it.Last() },
		func(it *Iterator) bool { return it.Seek([]byte("b0001")) },
	}
	var its, idle []*Iterator
	for range calls {
		for _, ro := range r10cNoneBounds() {
			its = append(its, d.NewIterator(ro))
			idle = append(idle, d.NewIterator(ro))
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for i, it := range its {
		c := calls[i/len(r10cNoneBounds())]
		r10cClosedErr(t, it, c(it), nil, fmt.Sprintf("iterator %d first used after the DB's Close", i))
		if err := it.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("iterator %d: Close: %v", i, err)
		}
	}
	for i, it := range idle {
		// It met no error: its Close releases it and returns nil (or
		// ErrClosed); either way, later calls report ErrClosed.
		if err := it.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("idle iterator %d: Close after the DB's: %v", i, err)
		}
		r10cClosedErr(t, it, it.Seek([]byte("b")), nil, fmt.Sprintf("idle iterator %d after both Closes", i))
	}
}

// TestReview10cNoneFixedView: a none iterator's view is fixed when it is
// made: keys written into its bounds later (memtable, flushed, compacted)
// are never found by it, and it reports no error, while a new iterator
// with the same bounds finds them.
func TestReview10cNoneFixedView(t *testing.T) {
	d, m := r10cStore(t, vfs.NewMem())
	defer d.Close()
	ros := r10cNoneBounds()
	var its []*Iterator
	for _, ro := range ros {
		r10cRequireNone(t, d, ro)
		it := d.NewIterator(ro)
		r10cQuiet(t, it, it.First(), "before the writes")
		its = append(its, it)
	}
	check := func(stage string) {
		t.Helper()
		for i, it := range its {
			what := fmt.Sprintf("%s: [%q, %q)", stage, ros[i].LowerBound, ros[i].UpperBound)
			r10cQuiet(t, it, it.First(), what+" First")
			r10cQuiet(t, it, it.Last(), what+" Last")
			r10cQuiet(t, it, it.Seek(ros[i].LowerBound), what+" Seek")
			r10cQuiet(t, it, it.Seek(nil), what+" Seek nil")
			r10cQuiet(t, it, it.Next(), what+" Next")
			r10cQuiet(t, it, it.Prev(), what+" Prev")
			// A new iterator sees the model.
			want := r7Want(m, ros[i].LowerBound, ros[i].UpperBound)
			if ros[i].LowerBound != nil && ros[i].UpperBound != nil && bytes.Compare(ros[i].LowerBound, ros[i].UpperBound) >= 0 {
				want = nil
			}
			n := d.NewIterator(ros[i])
			var got []string
			for ok := n.First(); ok; ok = n.Next() {
				got = append(got, string(n.Key()))
			}
			if err := n.Close(); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s: a new iterator found %q, want %q (%v)", what, got, want, err)
			}
		}
	}
	for _, k := range []string{"b000", "b000:1", "z999x", "a5", "l0", "lz", "k050:", "k055"} {
		if err := d.Put([]byte(k), []byte("late"), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = "late"
	}
	check("memtable")
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	for i, it := range its {
		if err := it.Close(); err != nil {
			t.Fatalf("iterator %d Close: %v", i, err)
		}
	}
}

// TestReview10cNoneConcurrentClose: goroutines step none iterators (and,
// for contrast, present ones) in a loop while the DB is closed, under
// the race detector too. A step never finds a key in a none iterator;
// every step that starts after Close returned reports ErrClosed; each
// goroutine stops on ErrClosed within bounds; Close returns in bounded
// time; the iterators' Close then returns ErrClosed; no goroutine is
// left. Other goroutines make, step and close new none iterators and run
// ExplainSeek on none bounds through the Close.
func TestReview10cNoneConcurrentClose(t *testing.T) {
	for round := 0; round < 3; round++ {
		r10cConcurrentClose(t, round)
	}
}

func r10cConcurrentClose(t *testing.T, round int) {
	before := runtime.NumGoroutine()
	d, _ := r10cStore(t, vfs.NewMem())
	ros := r10cNoneBounds()
	present := &ReadOptions{LowerBound: []byte("k040"), UpperBound: []byte("k050")}
	var (
		closeReturned atomic.Bool
		steps         atomic.Int64
		wg            sync.WaitGroup
		errMu         sync.Mutex
		errs          []error
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	const holders = 8
	for g := 0; g < holders; g++ {
		ro := ros[g%len(ros)]
		isNone := g%4 != 3
		if !isNone {
			ro = present
		}
		it := d.NewIterator(ro)
		wg.Add(1)
		go func(g int, it *Iterator) {
			defer wg.Done()
			for n := 0; ; n++ {
				after := closeReturned.Load()
				var ok bool
				switch n % 3 {
				case 0:
					ok = it.First()
				case 1:
					ok = it.Last()
				default:
					ok = it.Seek([]byte("b000"))
				}
				steps.Add(1)
				err := it.Error()
				if isNone && (ok || it.Valid() || it.Key() != nil) {
					fail(fmt.Errorf("holder %d: a none iterator found %q", g, it.Key()))
					return
				}
				if after && (ok || !errors.Is(err, ErrClosed)) {
					fail(fmt.Errorf("holder %d: a step after Close returned: %v, Error %v", g, ok, err))
					return
				}
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						fail(fmt.Errorf("holder %d: %v", g, err))
					}
					if cerr := it.Close(); !errors.Is(cerr, ErrClosed) {
						fail(fmt.Errorf("holder %d: Close after ErrClosed: %v", g, cerr))
					}
					if it.First() || !errors.Is(it.Error(), ErrClosed) {
						fail(fmt.Errorf("holder %d: after both Closes: %v", g, it.Error()))
					}
					return
				}
				if !isNone && !ok {
					fail(fmt.Errorf("holder %d: a present range found nothing, no error", g))
					return
				}
				if n%64 == 0 {
					runtime.Gosched()
				}
			}
		}(g, it)
	}
	// Makers: new none iterators and ExplainSeek, through the Close.
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for n := 0; ; n++ {
				after := closeReturned.Load()
				ro := ros[(g+n)%len(ros)]
				if n%8 == 0 {
					tr, err := d.ExplainSeek([]byte("b000"), ro)
					if err == nil && tr.Found {
						fail(fmt.Errorf("maker %d: ExplainSeek of none bounds found %q", g, tr.Result))
						return
					}
					if after && !errors.Is(err, ErrClosed) {
						fail(fmt.Errorf("maker %d: ExplainSeek after Close: %v", g, err))
						return
					}
					if err != nil && !errors.Is(err, ErrClosed) {
						fail(fmt.Errorf("maker %d: ExplainSeek: %v", g, err))
						return
					}
					if after {
						return
					}
					continue
				}
				it := d.NewIterator(ro)
				ok := it.First() || it.Last() || it.Seek(ro.LowerBound)
				err := it.Error()
				cerr := it.Close()
				if ok {
					fail(fmt.Errorf("maker %d: none bounds found a key", g))
					return
				}
				if after && !errors.Is(err, ErrClosed) {
					fail(fmt.Errorf("maker %d: iterator after Close: %v", g, err))
					return
				}
				if err != nil && !errors.Is(err, ErrClosed) || (err == nil) != (cerr == nil) {
					fail(fmt.Errorf("maker %d: Error %v, Close %v", g, err, cerr))
					return
				}
				if after {
					return
				}
			}
		}(g)
	}
	// Let the steps run, then close.
	deadline := time.Now().Add(100 * time.Millisecond)
	for steps.Load() < 2000 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	withWatchdog(t, 4*time.Second, "DB.Close under none iterator steps", func() {
		if err := d.Close(); err != nil {
			fail(fmt.Errorf("Close: %v", err))
		}
	})
	closeReturned.Store(true)
	withWatchdog(t, 4*time.Second, "the stepping goroutines", wg.Wait)
	for _, err := range errs {
		t.Errorf("round %d: %v", round, err)
	}
	if t.Failed() {
		t.FailNow()
	}
	if r := d.reads.Load(); r != 0 {
		t.Fatalf("round %d: %d reads registered after every step returned", round, r)
	}
	requireGoroutinesSettle(t, before)
}

// TestReview10cNoneStepRegistersNoRead: a none iterator's positioning
// calls leave the DB's read count as it was (nothing in flight after
// they return), and an iterator stepping that way does not keep DB.Close
// waiting; a none iterator held open across Close does not either.
func TestReview10cNoneStepRegistersNoRead(t *testing.T) {
	d, _ := r10cStore(t, vfs.NewMem())
	var its []*Iterator
	for _, ro := range r10cNoneBounds() {
		it := d.NewIterator(ro)
		for i := 0; i < 100; i++ {
			if it.First() || it.Last() || it.Seek([]byte("x")) {
				t.Fatal("none iterator found a key")
			}
		}
		its = append(its, it)
	}
	if r := d.reads.Load(); r != 0 {
		t.Fatalf("%d reads registered with no call in flight", r)
	}
	withWatchdog(t, 3*time.Second, "DB.Close with open none iterators", func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	for i, it := range its {
		r10cClosedErr(t, it, it.Last(), nil, fmt.Sprintf("iterator %d", i))
		if err := it.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("iterator %d Close: %v", i, err)
		}
	}
	if r := d.reads.Load(); r != 0 {
		t.Fatalf("%d reads registered after Close", r)
	}
}

// r10cSum is the total of one iterator's expected counts.
func r10cSum(w [manifest.NumLevels]r10cCount) r10cCount {
	var s r10cCount
	for _, c := range w {
		s.prefixPassed += c.prefixPassed
		s.prefixSkipped += c.prefixSkipped
		s.rangePassed += c.rangePassed
		s.rangeSkipped += c.rangeSkipped
	}
	return s
}

// TestReview10cFilterMetricsReopen: the store reopened with another
// prefix extractor, then with no range filter, then with neither, and
// tables of both extractors side by side: a table whose prefix filter is
// of another extractor is not counted as a prefix check (it cannot
// answer), a table without a usable range filter is not counted as a
// range check, and each iterator adds exactly its checks, Checks =
// Useful + Positives.
func TestReview10cFilterMetricsReopen(t *testing.T) {
	fs := vfs.NewMem()
	d, m := r10cStore(t, fs)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	type phase struct {
		name   string
		prefix filter.Prefix
		rangeF bool
		write  bool
	}
	for _, ph := range []phase{
		{"3-byte extractor", filter.FixedPrefix(3), true, true},
		{"4-byte extractor, no range filter", filter.FixedPrefix(4), false, true},
		{"no extractor, range filter", nil, true, false},
		{"neither", nil, false, false},
		{"4-byte extractor and range filter again", filter.FixedPrefix(4), true, false},
	} {
		o := r10cOptions(fs)
		o.Prefix = ph.prefix
		if !ph.rangeF {
			o.RangeFilter = nil
		}
		d = mustOpen(t, "/db", o)
		if ph.write {
			// A level-0 table written with this phase's filters, among
			// the others.
			for p := 3; p < 80; p += 20 {
				k := r10cKey(p, 50+len(ph.name)%10)
				if err := d.Put([]byte(k), []byte("x"), nil); err != nil {
					t.Fatal(err)
				}
				m[k] = "x"
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		var all r10cCount
		for _, b := range append(r10cBounds(), [2][]byte{[]byte("k01"), []byte("k02")}, [2][]byte{[]byte("k02"), []byte("k03")}) {
			lo, hi := b[0], b[1]
			what := fmt.Sprintf("%s: [%q, %q)", ph.name, lo, hi)
			want := r10cExpectOf(t, d, lo, hi, false)
			s := r10cSum(want)
			all.prefixPassed += s.prefixPassed
			all.prefixSkipped += s.prefixSkipped
			all.rangePassed += s.rangePassed
			all.rangeSkipped += s.rangeSkipped
			if ph.prefix == nil && s.prefixPassed+s.prefixSkipped != 0 || !ph.rangeF && s.rangePassed+s.rangeSkipped != 0 {
				t.Fatalf("%s: expected checks of a filter the DB has not: %+v", what, s)
			}
			before := d.Metrics()
			it := d.NewIterator(&ReadOptions{LowerBound: lo, UpperBound: hi})
			var got []string
			for ok := it.First(); ok; ok = it.Next() {
				got = append(got, string(it.Key()))
			}
			if err := it.Close(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if w := r7Want(m, lo, hi); fmt.Sprint(got) != fmt.Sprint(w) {
				t.Fatalf("%s: found %q, want %q", what, got, w)
			}
			r10cDelta(t, before, d.Metrics(), want, 1, what)
		}
		t.Logf("%s: %+v", ph.name, all)
		if ph.prefix != nil && all.prefixPassed+all.prefixSkipped == 0 {
			t.Fatalf("%s: no prefix check at all", ph.name)
		}
		if ph.rangeF && all.rangePassed+all.rangeSkipped == 0 {
			t.Fatalf("%s: no range check at all", ph.name)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
