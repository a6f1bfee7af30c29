package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// Adversarial review of eeea336: the Iterator as a handle over a pooled
// iterState (Close gives the state back when the iterator never stood at a
// key and has no error), and the short walk that ends a sorted level's run
// in overlapping.

// r10Want returns the model's keys in [lo, hi), sorted (nil bound:
// unbounded).
func r10Want(m map[string]string, lo, hi []byte) []string {
	var out []string
	for k := range m {
		if lo != nil && k < string(lo) {
			continue
		}
		if hi != nil && k >= string(hi) {
			continue
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// r10Poke makes every positioning call on a closed iterator and checks it
// stays closed: false from each, Error ErrClosed (or the error it had).
func r10Poke(t *testing.T, it *Iterator, had error, what string) {
	t.Helper()
	if it.First() || it.Last() || it.Seek([]byte("a")) || it.Seek(nil) || it.Next() || it.Prev() {
		t.Fatalf("%s: a closed iterator moved (Key %q)", what, it.Key())
	}
	if it.Valid() {
		t.Fatalf("%s: a closed iterator is Valid", what)
	}
	if err := it.Error(); !errors.Is(err, ErrClosed) && (had == nil || !errors.Is(err, had)) {
		t.Fatalf("%s: Error after using a closed iterator: %v, want ErrClosed", what, err)
	}
	if err := it.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("%s: Close of a closed iterator: %v, want ErrClosed", what, err)
	}
}

// r10Scan walks ro's bounds forward and backward, with a Seek into the
// middle, and checks each step against the model. Between steps it pokes
// the closed iterators in poke (whose states may be the ones in use).
func r10Scan(t *testing.T, d *DB, ro *ReadOptions, m map[string]string, poke []*Iterator, what string) {
	t.Helper()
	var lo, hi []byte
	if ro != nil {
		lo, hi = ro.LowerBound, ro.UpperBound
	}
	want := r10Want(m, lo, hi)
	pokeAll := func() {
		for _, p := range poke {
			if p.First() || p.Last() || p.Next() || p.Prev() || p.Seek([]byte("m")) || p.Valid() {
				t.Fatalf("%s: a closed iterator moved", what)
			}
			p.Close()
		}
	}
	it := d.NewIterator(ro)
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
		if v := string(it.Value()); v != m[string(it.Key())] {
			t.Fatalf("%s: forward: %q = %q, want %q", what, it.Key(), v, m[string(it.Key())])
		}
		pokeAll()
	}
	if err := it.Error(); err != nil {
		t.Fatalf("%s: forward: %v", what, err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: forward: %q, want %q", what, got, want)
	}
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
		if v := string(it.Value()); v != m[string(it.Key())] {
			t.Fatalf("%s: backward: %q = %q, want %q", what, it.Key(), v, m[string(it.Key())])
		}
		pokeAll()
	}
	if err := it.Error(); err != nil {
		t.Fatalf("%s: backward: %v", what, err)
	}
	for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
		got[i], got[j] = got[j], got[i]
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: backward: %q, want %q", what, got, want)
	}
	if len(want) > 0 {
		mid := want[len(want)/2]
		if !it.Seek([]byte(mid)) || string(it.Key()) != mid {
			t.Fatalf("%s: Seek(%q) = %v %q", what, mid, it.Valid(), it.Key())
		}
	}
	if err := it.Close(); err != nil {
		t.Fatalf("%s: Close: %v", what, err)
	}
}

// r10Store is a store with a flushed table and a memtable, live keys,
// point tombstones over flushed keys, a range tombstone and the empty key.
// It returns the model.
func r10Store(t *testing.T, o *Options) (*DB, map[string]string) {
	t.Helper()
	return r10StoreWith(t, o, true)
}

// r10StoreWith is r10Store, without the range tombstone (the "u" keys
// are then point-deleted) unless rangeDel.
func r10StoreWith(t *testing.T, o *Options, rangeDel bool) (*DB, map[string]string) {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	if o.FS == nil {
		o.FS = vfs.NewMem()
	}
	d := mustOpen(t, "/db", o)
	m := map[string]string{}
	put := func(k, v string) {
		if err := d.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	put("", "")
	for i := 0; i < 50; i++ {
		put(fmt.Sprintf("a%03d", i), fmt.Sprintf("va%03d", i))
	}
	for i := 0; i < 5; i++ {
		put(fmt.Sprintf("t%03d", i), "dead")
		put(fmt.Sprintf("u%03d", i), "ranged")
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		put(fmt.Sprintf("m%03d", i), fmt.Sprintf("vm%03d", i))
	}
	for i := 0; i < 5; i++ {
		k := fmt.Sprintf("t%03d", i)
		if err := d.Delete([]byte(k), nil); err != nil {
			t.Fatal(err)
		}
		delete(m, k)
		u := fmt.Sprintf("u%03d", i)
		delete(m, u)
		if !rangeDel {
			if err := d.Delete([]byte(u), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rangeDel {
		if err := d.DeleteRange([]byte("u"), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	return d, m
}

func r10RO(lo, hi string) *ReadOptions {
	return &ReadOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)}
}

// r10Churn makes and closes iterators of every kind (absent, present,
// tombstones only, reverse) and runs ExplainSeek, so that pooled states
// and parts are taken and given back many times.
func r10Churn(t *testing.T, d *DB, rng *rand.Rand, n int) {
	t.Helper()
	ros := []*ReadOptions{
		prefixRO("b000"), prefixRO("zz"), r10RO("t", "u"), r10RO("u", "v"), r10RO("a010", "a020"),
		r10RO("m", "n"), nil, r10RO("q", "c"), {UpperBound: []byte{}}, {LowerBound: []byte{}, UpperBound: []byte{0}},
	}
	for i := 0; i < n; i++ {
		ro := ros[rng.Intn(len(ros))]
		it := d.NewIterator(ro)
		switch rng.Intn(5) {
		case 0:
			for ok := it.First(); ok; ok = it.Next() {
			}
		case 1:
			for ok := it.Last(); ok; ok = it.Prev() {
			}
		case 2:
			it.Seek([]byte(fmt.Sprintf("a%03d", rng.Intn(60))))
		case 3:
			if _, err := d.ExplainSeek([]byte("b"), ro); err != nil {
				t.Fatal(err)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReviewIter10CloseContract drives iterators into every end state the
// pooling distinguishes (never positioned, found nothing, passed only
// tombstones, stood at a key forward or backward, stood at the empty key,
// ended after a key, errors) and checks the contract after Close: Key and
// Value are what they were before Close and stay so while pooled states
// are reused; Valid is false; Error is what it was; positioning calls
// return false and make Error report ErrClosed; a second Close returns
// ErrClosed.
func TestReviewIter10CloseContract(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"block cache", Options{}},
		{"no block cache", Options{DisableBlockCache: true}},
		{"tiny block cache", Options{BlockCacheSize: 4 << 10, BlockSize: 256}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			r10CloseContract(t, &o)
		})
	}
}

func r10CloseContract(t *testing.T, o *Options) {
	d, m := r10Store(t, o)
	defer d.Close()
	type scenario struct {
		name  string
		ro    *ReadOptions
		ops   func(it *Iterator) bool
		valid bool
		key   string // when valid
	}
	first := func(it *Iterator) bool { return it.First() }
	last := func(it *Iterator) bool { return it.Last() }
	none := func(it *Iterator) bool { return false }
	all := func(it *Iterator) bool {
		return it.First() || it.Last() || it.Seek([]byte("a")) || it.Next() || it.Prev()
	}
	scenarios := []scenario{
		{"never positioned, absent", prefixRO("b000"), none, false, ""},
		{"never positioned, present", r10RO("a", "b"), none, false, ""},
		{"never positioned, unbounded", nil, none, false, ""},
		{"absent, every call", prefixRO("b000"), all, false, ""},
		{"absent in the memtable range", r10RO("m010", "m020"), all, false, ""},
		{"tombstones only, First", r10RO("t", "u"), first, false, ""},
		{"tombstones only, Seek", r10RO("t", "u"), func(it *Iterator) bool { return it.Seek([]byte("t002")) }, false, ""},
		{"tombstones only, Last", r10RO("t", "u"), last, false, ""},
		{"range-deleted, First", r10RO("u", "v"), first, false, ""},
		{"range-deleted, Last", r10RO("u", "v"), last, false, ""},
		{"present, First", r10RO("a010", "a020"), first, true, "a010"},
		{"present, Last", r10RO("a010", "a020"), last, true, "a019"},
		{"memtable, Last", r10RO("m", "n"), last, true, "m009"},
		{"Last then Prev", r10RO("a010", "a020"), func(it *Iterator) bool { it.Last(); return it.Prev() }, true, "a018"},
		{"First to the end", r10RO("a010", "a020"), func(it *Iterator) bool {
			ok := it.First()
			for ok {
				ok = it.Next()
			}
			return ok
		}, false, ""},
		{"Last to the start", r10RO("a010", "a020"), func(it *Iterator) bool {
			ok := it.Last()
			for ok {
				ok = it.Prev()
			}
			return ok
		}, false, ""},
		{"Seek past the end after a key", r10RO("a010", "a020"), func(it *Iterator) bool { it.First(); return it.Seek([]byte("a030")) }, false, ""},
		{"Seek into tombstones after a key", nil, func(it *Iterator) bool { it.Seek([]byte("a049")); return it.Seek([]byte("t")) }, false, ""},
		{"empty key, First", r10RO("", "\x00"), first, true, ""},
		{"empty key, Last", r10RO("", "\x00"), last, true, ""},
		{"empty key, unbounded Last then Prevs", nil, func(it *Iterator) bool {
			ok := it.Last()
			for ok && len(it.Key()) > 0 {
				ok = it.Prev()
			}
			return ok
		}, true, ""},
		{"lower > upper", r10RO("q", "c"), all, false, ""},
		{"lower == upper", r10RO("a010", "a010"), all, false, ""},
		{"empty upper", &ReadOptions{UpperBound: []byte{}}, all, false, ""},
		{"empty lower, nil upper, Seek", &ReadOptions{LowerBound: []byte{}}, func(it *Iterator) bool { return it.Seek([]byte("m005")) }, true, "m005"},
	}
	rng := rand.New(rand.NewSource(10))
	type held struct {
		sc         scenario
		it         *Iterator
		key, value []byte // the slices Key and Value returned before Close
		kc, vc     string // their contents
	}
	var hs []held
	for _, sc := range scenarios {
		it := d.NewIterator(sc.ro)
		ok := sc.ops(it)
		if ok != sc.valid || it.Valid() != sc.valid {
			t.Fatalf("%s: positioned %v (Valid %v), want %v; Key %q", sc.name, ok, it.Valid(), sc.valid, it.Key())
		}
		if sc.valid {
			if string(it.Key()) != sc.key || string(it.Value()) != m[sc.key] {
				t.Fatalf("%s: at %q = %q, want %q = %q", sc.name, it.Key(), it.Value(), sc.key, m[sc.key])
			}
		}
		if err := it.Error(); err != nil {
			t.Fatalf("%s: Error %v", sc.name, err)
		}
		h := held{sc: sc, it: it, key: it.Key(), value: it.Value(), kc: string(it.Key()), vc: string(it.Value())}
		if err := it.Close(); err != nil {
			t.Fatalf("%s: Close: %v", sc.name, err)
		}
		if it.Valid() {
			t.Fatalf("%s: Valid after Close", sc.name)
		}
		if err := it.Error(); err != nil {
			t.Fatalf("%s: Error after Close: %v", sc.name, err)
		}
		if string(it.Key()) != h.kc || string(it.Value()) != h.vc {
			t.Fatalf("%s: after Close Key/Value %q/%q, before %q/%q", sc.name, it.Key(), it.Value(), h.kc, h.vc)
		}
		hs = append(hs, h)
		r10Churn(t, d, rng, 20)
	}
	r10Churn(t, d, rng, 300)
	// The tables the kept Values may point into become obsolete and are
	// deleted; their blocks leave the cache.
	for i := 0; i < 200; i++ {
		if err := d.Put([]byte(fmt.Sprintf("w%04d", i)), bytes.Repeat([]byte{byte(i)}, 100), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		m[fmt.Sprintf("w%04d", i)] = string(bytes.Repeat([]byte{byte(i)}, 100))
	}
	r10Churn(t, d, rng, 300)
	for _, h := range hs {
		// Key and Value are promised only at a key: an iterator that
		// moved off one (Seek past the end after a key) may return stale
		// slices into blocks it no longer holds.
		if h.sc.valid && (string(h.key) != h.kc || string(h.value) != h.vc) {
			t.Fatalf("%s: Key/Value read before Close changed to %q/%q, were %q/%q", h.sc.name, h.key, h.value, h.kc, h.vc)
		}
		if h.sc.valid && (string(h.it.Key()) != h.kc || string(h.it.Value()) != h.vc) {
			t.Fatalf("%s: Key/Value after Close and churn %q/%q, were %q/%q", h.sc.name, h.it.Key(), h.it.Value(), h.kc, h.vc)
		}
		if h.it.Valid() || h.it.Error() != nil {
			t.Fatalf("%s: after churn Valid %v Error %v", h.sc.name, h.it.Valid(), h.it.Error())
		}
		if err := h.it.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("%s: second Close: %v, want ErrClosed", h.sc.name, err)
		}
	}
	// Every closed handle is poked between the steps of live scans, whose
	// states may be the ones those handles gave back.
	var closed []*Iterator
	for _, h := range hs {
		closed = append(closed, h.it)
	}
	for _, ro := range []*ReadOptions{nil, r10RO("a010", "a020"), r10RO("", "\x00"), r10RO("m", "n"), r10RO("a045", "m003")} {
		r10Scan(t, d, ro, m, closed, fmt.Sprintf("scan %v", ro))
	}
	for _, h := range hs {
		r10Poke(t, h.it, nil, h.sc.name)
	}
}

// r10Overlap is overlapping's reference: the tables of the level whose
// user-key range meets [lo, hi), by a scan.
func r10Overlap(files []*manifest.FileMetadata, lo, hi []byte) []uint64 {
	var out []uint64
	for _, f := range files {
		if lo != nil && bytes.Compare(base.UserKey(f.Largest), lo) < 0 {
			continue
		}
		if hi != nil && bytes.Compare(base.UserKey(f.Smallest), hi) >= 0 {
			continue
		}
		out = append(out, f.FileNum)
	}
	return out
}

func r10Nums(files []*manifest.FileMetadata) []uint64 {
	var out []uint64
	for _, f := range files {
		out = append(out, f.FileNum)
	}
	return out
}

// r10CheckBounds checks, for every pair of bounds from cands (nil
// included), overlapping against a scan on every sorted level, a scan in
// both directions against the model, and ExplainSeek against the model.
func r10CheckBounds(t *testing.T, d *DB, m map[string]string, cands [][]byte, what string) {
	t.Helper()
	v := d.readStateForTest().v
	cands = append([][]byte{nil}, cands...)
	for _, lo := range cands {
		for _, hi := range cands {
			ro := &ReadOptions{LowerBound: lo, UpperBound: hi}
			w := fmt.Sprintf("%s [%q, %q)", what, lo, hi)
			empty := lo != nil && hi != nil && bytes.Compare(lo, hi) >= 0
			if !empty {
				for level := 1; level < manifest.NumLevels; level++ {
					st := &iterState{lower: lo, upper: hi}
					got := r10Nums(st.overlapping(v, level))
					if want := r10Overlap(v.Files[level], lo, hi); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("%s: level %d of %d tables: overlapping %v, want %v", w, level, len(v.Files[level]), got, want)
					}
				}
			}
			r10Scan(t, d, ro, m, nil, w)
			for _, k := range cands {
				if k == nil {
					continue
				}
				tr, err := d.ExplainSeek(k, ro)
				if err != nil {
					t.Fatalf("%s: ExplainSeek(%q): %v", w, k, err)
				}
				want := ""
				found := false
				for _, key := range r10Want(m, lo, hi) {
					if key >= string(k) {
						want, found = key, true
						break
					}
				}
				if tr.Found != found || found && string(tr.Result) != want {
					t.Fatalf("%s: ExplainSeek(%q) = %v %q, want %v %q", w, k, tr.Found, tr.Result, found, want)
				}
			}
		}
	}
}

// TestReviewIter10SharedBoundaryRuns is overlapping's walk on a level
// (written as LevelDB does) whose tables split one user key's versions in
// runs of 1 to 6 tables, so that several tables share a smallest user key
// and the run a bound meets is 4, 5 or more tables long; the level's
// neighbours hold single keys, one a table, for runs of every length.
func TestReviewIter10SharedBoundaryRuns(t *testing.T) {
	var tables []sbTable
	m := map[string]string{}
	num := uint64(10)
	seq := uint64(1000)
	add := func(level int, ents ...sbEntry) {
		tables = append(tables, sbTable{num, level, ents})
		num++
	}
	// Level 2: old versions under everything.
	var l2 []sbEntry
	for _, k := range []string{"b", "g", "k", "n", "s", "z"} {
		l2 = append(l2, sbEntry{k, 1, base.KindSet, "old-" + k})
		m[k] = "old-" + k
	}
	// Level 1: "a", then key "g" split over 4 tables, "k" over 5, "n"
	// over 6 (the newest a deletion), then r0..r9 one a table.
	add(1, sbEntry{"a", 900, base.KindSet, "a"}, sbEntry{"c", 901, base.KindSet, "c"}, sbEntry{"g", 500, base.KindSet, "g-new"})
	m["a"], m["c"], m["g"] = "a", "c", "g-new"
	for i := 1; i <= 3; i++ {
		add(1, sbEntry{"g", uint64(500 - i), base.KindSet, fmt.Sprintf("g-%d", i)})
	}
	add(1, sbEntry{"g", 490, base.KindSet, "g-x"}, sbEntry{"h", 902, base.KindSet, "h"}, sbEntry{"k", 600, base.KindSet, "k-new"})
	m["h"], m["k"] = "h", "k-new"
	for i := 1; i <= 4; i++ {
		add(1, sbEntry{"k", uint64(600 - i), base.KindSet, fmt.Sprintf("k-%d", i)})
	}
	add(1, sbEntry{"k", 590, base.KindSet, "k-x"}, sbEntry{"l", 903, base.KindSet, "l"}, sbEntry{"n", 700, base.KindDelete, ""})
	m["l"] = "l"
	delete(m, "n")
	for i := 1; i <= 5; i++ {
		add(1, sbEntry{"n", uint64(700 - i), base.KindSet, fmt.Sprintf("n-%d", i)})
	}
	add(1, sbEntry{"n", 690, base.KindSet, "n-x"}, sbEntry{"o", 904, base.KindSet, "o"})
	m["o"] = "o"
	for i := 0; i < 10; i++ {
		k := fmt.Sprintf("r%d", i)
		add(1, sbEntry{k, seq, base.KindSet, k}, sbEntry{k + "z", seq + 1, base.KindSet, k + "z"})
		m[k], m[k+"z"] = k, k+"z"
		seq += 2
	}
	add(2, l2...)
	dir := filepath.Join(t.TempDir(), "db")
	writeHandStoreWith(t, dir, tables, seq+1, 0)
	d, err := Open(dir, &Options{DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !d.readStateForTest().v.SharedBoundaries[1] {
		t.Fatal("level 1 has no shared boundary")
	}
	var cands [][]byte
	for _, k := range []string{"", "a", "b", "c", "c\x00", "f", "g", "g\x00", "h", "k", "k\x00", "l", "n", "n\x00", "o",
		"r", "r0", "r1", "r2z", "r3", "r3\x00", "r4", "r5", "r5z", "r6", "r8", "r9z", "r9z\x00", "s", "zz"} {
		cands = append(cands, []byte(k))
	}
	cands = append(cands, []byte{})
	r10CheckBounds(t, d, m, cands, "hand store")
}

// TestReviewIter10OverlapWalkLevels is the walk on levels the engine
// wrote: many small tables in two sorted levels, bounds at and around
// every table's boundaries, spanning 0 to 8 tables.
func TestReviewIter10OverlapWalkLevels(t *testing.T) {
	o := &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true, TargetFileSize: 1 << 10, BlockSize: 256, WriteBufferSize: 1 << 20, DisableCompression: true}
	d := mustOpen(t, "/db", o)
	defer d.Close()
	m := map[string]string{}
	val := bytes.Repeat([]byte("v"), 40)
	for i := 0; i < 1000; i++ {
		k := fmt.Sprintf("k%04d", i*2)
		v := fmt.Sprintf("%s-%s", k, val)
		if err := d.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	// Newer versions of some, and deletions, in a level above.
	for i := 100; i < 900; i += 3 {
		k := fmt.Sprintf("k%04d", i)
		if i%2 == 0 && i%4 == 0 {
			if err := d.Delete([]byte(k), nil); err != nil {
				t.Fatal(err)
			}
			delete(m, k)
			continue
		}
		v := fmt.Sprintf("new-%s-%s", k, val)
		if err := d.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.CompactRange([]byte("k0100"), []byte("k0900")); err != nil {
		t.Fatal(err)
	}
	v := d.readStateForTest().v
	sorted := 0
	keySet := map[string]bool{}
	for level := 1; level < manifest.NumLevels; level++ {
		if len(v.Files[level]) > 0 {
			sorted++
		}
		for _, f := range v.Files[level] {
			s, l := string(base.UserKey(f.Smallest)), string(base.UserKey(f.Largest))
			keySet[s], keySet[l], keySet[s+"\x00"], keySet[l+"\x00"] = true, true, true, true
		}
	}
	if sorted == 0 || len(keySet) < 200 {
		t.Fatalf("the tree has %d sorted levels and %d boundary keys: %v", sorted, len(keySet), d.Metrics())
	}
	var bounds []string
	for k := range keySet {
		bounds = append(bounds, k)
	}
	sort.Strings(bounds)
	// Every pair of 24 (18 under the race detector) consecutive boundary
	// keys, about 6 tables, fully checked.
	var cands [][]byte
	half := 12
	if raceEnabled {
		half = 9
	}
	for _, k := range bounds[len(bounds)/2-half : len(bounds)/2+half] {
		cands = append(cands, []byte(k))
	}
	r10CheckBounds(t, d, m, cands, "engine levels")
	// The pairs themselves, lighter: overlapping and the forward scan.
	step := 1
	if raceEnabled {
		step = 3
	}
	for i := 0; i < len(bounds); i += step {
		for span := 1; span <= 30 && i+span < len(bounds); span++ {
			lo, hi := []byte(bounds[i]), []byte(bounds[i+span])
			for level := 1; level < manifest.NumLevels; level++ {
				st := &iterState{lower: lo, upper: hi}
				got := r10Nums(st.overlapping(v, level))
				if want := r10Overlap(v.Files[level], lo, hi); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("[%q, %q) level %d: overlapping %v, want %v", lo, hi, level, got, want)
				}
			}
			ro := &ReadOptions{LowerBound: lo, UpperBound: hi}
			it := d.NewIterator(ro)
			var got []string
			for ok := it.First(); ok; ok = it.Next() {
				got = append(got, string(it.Key()))
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			if want := r10Want(m, lo, hi); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("[%q, %q): %q, want %q", lo, hi, got, want)
			}
		}
	}
}

// TestReviewIter10ReleasesReadState: every kind of iterator, whether
// Close gives its state back or keeps it, releases its read state at
// Close: the tables a compaction made obsolete while it was open are
// deleted once it is closed. One with nothing to merge released it when
// it was made (since the tenth session): they are deleted while it is
// open, and it still finds nothing.
func TestReviewIter10ReleasesReadState(t *testing.T) {
	kinds := []struct {
		name string
		ro   *ReadOptions
		ops  func(it *Iterator)
	}{
		{"absent, never positioned", prefixRO("b000"), func(it *Iterator) {}},
		{"absent, First", prefixRO("b000"), func(it *Iterator) { it.First() }},
		{"tombstones only, First", r10RO("t", "u"), func(it *Iterator) { it.First() }},
		{"tombstones only, Last", r10RO("t", "u"), func(it *Iterator) { it.Last() }},
		{"present, never positioned", r10RO("a", "b"), func(it *Iterator) {}},
		{"present, Last", r10RO("a", "b"), func(it *Iterator) { it.Last() }},
		{"lower > upper", r10RO("q", "c"), func(it *Iterator) { it.First() }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			d, _ := r10Store(t, &Options{DisableAutomaticCompactions: true})
			defer d.Close()
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			it := d.NewIterator(k.ro)
			none := it.s.none
			if want := k.name == "lower > upper"; none != want {
				t.Fatalf("nothing to merge: %v, want %v", none, want)
			}
			k.ops(it)
			before := d.Metrics().TablesDeleted
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			if none {
				// An iterator with nothing to merge released its read
				// state when it was made: it pins no table.
				deadline := time.Now().Add(5 * time.Second)
				for d.Metrics().TablesDeleted == before && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if d.Metrics().TablesDeleted == before {
					t.Fatalf("an iterator with nothing to merge kept the obsolete tables: %s", d.Metrics())
				}
				if it.First() || it.Last() || it.Error() != nil {
					t.Fatalf("after the compaction: found %q, Error %v", it.Key(), it.Error())
				}
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got := d.Metrics().TablesDeleted; got != before {
				t.Fatalf("tables deleted while an iterator held them: %d -> %d", before, got)
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for d.Metrics().TablesDeleted == before && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if got := d.Metrics().TablesDeleted; got == before {
				t.Fatalf("the obsolete tables were not deleted after the iterator's Close: %s", d.Metrics())
			}
		})
	}
}

// TestReviewIter10DBClosed: iterators in each state when the DB closes,
// and iterators made after: positioning calls return false with
// ErrClosed, Close returns no other error, a second Close ErrClosed, Key
// and Value read before are kept; and the states these give back do not
// disturb a store opened afterwards.
func TestReviewIter10DBClosed(t *testing.T) {
	fs := vfs.NewMem()
	d, m := r10Store(t, &Options{FS: fs})
	type held struct {
		name   string
		it     *Iterator
		kc, vc string
	}
	var hs []held
	mk := func(name string, ro *ReadOptions, ops func(it *Iterator)) {
		it := d.NewIterator(ro)
		ops(it)
		hs = append(hs, held{name, it, string(it.Key()), string(it.Value())})
	}
	mk("absent, never positioned", prefixRO("b000"), func(it *Iterator) {})
	mk("absent, First", prefixRO("b000"), func(it *Iterator) { it.First() })
	mk("tombstones, First", r10RO("t", "u"), func(it *Iterator) { it.First() })
	mk("present, never positioned", r10RO("a", "b"), func(it *Iterator) {})
	mk("present, Seek", r10RO("a", "b"), func(it *Iterator) { it.Seek([]byte("a005")) })
	mk("present, Last", r10RO("a", "b"), func(it *Iterator) { it.Last() })
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	late := d.NewIterator(prefixRO("b000"))
	if late.First() || !errors.Is(late.Error(), ErrClosed) {
		t.Fatalf("an iterator made after Close: Error %v", late.Error())
	}
	if err := late.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close of an iterator made after the DB's Close: %v", err)
	}
	r10Poke(t, late, ErrClosed, "made after Close")
	for i, h := range hs {
		if i%2 == 0 {
			// Half are used before their Close.
			if h.it.First() || h.it.Seek([]byte("a")) || !errors.Is(h.it.Error(), ErrClosed) {
				t.Fatalf("%s: after the DB's Close: Valid %v Error %v", h.name, h.it.Valid(), h.it.Error())
			}
		}
		if err := h.it.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("%s: Close after the DB's: %v", h.name, err)
		}
		if i%2 == 1 && (string(h.it.Key()) != h.kc || string(h.it.Value()) != h.vc) {
			t.Fatalf("%s: Key/Value after Close %q/%q, were %q/%q", h.name, h.it.Key(), h.it.Value(), h.kc, h.vc)
		}
		r10Poke(t, h.it, ErrClosed, h.name)
	}
	d2, m2 := r10Store(t, nil)
	defer d2.Close()
	_ = m
	var closed []*Iterator
	for _, h := range hs {
		closed = append(closed, h.it)
	}
	closed = append(closed, late)
	for _, ro := range []*ReadOptions{nil, r10RO("a010", "a020"), r10RO("m", "n")} {
		r10Scan(t, d2, ro, m2, closed, "the next store")
	}
}

// TestReviewIter10Concurrent makes, uses and closes iterators of every
// kind from several goroutines (some never closed, some kept and checked
// after Close), with ExplainSeek, while writes into a key range no bounds
// reach, flushes and compactions run, then closes the DB under them. Every
// scan matches the model; Key and Value kept after Close do not change;
// Close returns; no goroutine is left.
func TestReviewIter10Concurrent(t *testing.T) {
	before := runtime.NumGoroutine()
	o := smallTree(vfs.NewMem())
	o.Prefix = filter.FixedPrefix(4)
	d, m := r10Store(t, o)
	ros := []*ReadOptions{prefixRO("b000"), prefixRO("a01"), r10RO("t", "u"), r10RO("u", "v"), r10RO("a010", "a020"),
		r10RO("m", "n"), r10RO("", "\x00"), r10RO("q", "c"), {UpperBound: []byte{}}, r10RO("a045", "m005"), prefixRO("zzzz")}
	wants := make([][]string, len(ros))
	for i, ro := range ros {
		wants[i] = r10Want(m, ro.LowerBound, ro.UpperBound)
	}
	var (
		wg     sync.WaitGroup
		stop   atomic.Bool
		scans  atomic.Int64
		errc   = make(chan error, 16)
		leaked sync.Mutex
		open   []*Iterator
	)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	dur := 2 * time.Second
	if raceEnabled {
		dur = 3 * time.Second
	}
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g) + 100))
			type kept struct {
				it         *Iterator
				key, value []byte
				kc, vc     string
			}
			var ks []kept
			for !stop.Load() {
				i := rng.Intn(len(ros))
				ro, want := ros[i], wants[i]
				if rng.Intn(10) == 0 {
					tr, err := d.ExplainSeek([]byte("a015"), ro)
					if errors.Is(err, ErrClosed) {
						continue
					}
					if err != nil {
						fail(fmt.Errorf("ExplainSeek %v: %v", ro, err))
						return
					}
					exp := ""
					for _, k := range want {
						if k >= "a015" {
							exp = k
							break
						}
					}
					if tr.Found != (exp != "") || string(tr.Result) != exp {
						fail(fmt.Errorf("ExplainSeek(a015) [%q,%q): %v %q, want %q", ro.LowerBound, ro.UpperBound, tr.Found, tr.Result, exp))
						return
					}
					continue
				}
				it := d.NewIterator(ro)
				var got []string
				reverse := rng.Intn(2) == 0
				if reverse {
					for ok := it.Last(); ok; ok = it.Prev() {
						got = append([]string{string(it.Key())}, got...)
						if string(it.Value()) != m[string(it.Key())] {
							fail(fmt.Errorf("%q = %q, want %q", it.Key(), it.Value(), m[string(it.Key())]))
						}
					}
				} else {
					for ok := it.First(); ok; ok = it.Next() {
						got = append(got, string(it.Key()))
						if string(it.Value()) != m[string(it.Key())] {
							fail(fmt.Errorf("%q = %q, want %q", it.Key(), it.Value(), m[string(it.Key())]))
						}
					}
				}
				if errors.Is(it.Error(), ErrClosed) {
					it.Close()
					continue
				}
				if err := it.Error(); err != nil {
					fail(fmt.Errorf("[%q,%q): %v", ro.LowerBound, ro.UpperBound, err))
					return
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					fail(fmt.Errorf("[%q,%q) reverse %v: %q, want %q", ro.LowerBound, ro.UpperBound, reverse, got, want))
					return
				}
				scans.Add(1)
				switch rng.Intn(20) {
				case 0: // never closed
					leaked.Lock()
					open = append(open, it)
					leaked.Unlock()
					continue
				case 1, 2, 3: // kept at a key, checked later
					if len(want) > 0 && it.Seek([]byte(want[len(want)/2])) {
						k := kept{it, it.Key(), it.Value(), string(it.Key()), string(it.Value())}
						if err := it.Close(); err != nil && !errors.Is(err, ErrClosed) {
							fail(err)
							return
						}
						ks = append(ks, k)
						continue
					}
				}
				if err := it.Close(); err != nil && !errors.Is(err, ErrClosed) {
					fail(err)
					return
				}
				if err := it.Close(); !errors.Is(err, ErrClosed) {
					fail(fmt.Errorf("second Close: %v", err))
					return
				}
			}
			for _, k := range ks {
				if string(k.key) != k.kc || string(k.value) != k.vc || string(k.it.Key()) != k.kc || string(k.it.Value()) != k.vc {
					fail(fmt.Errorf("Key/Value kept after Close changed: %q/%q (handle %q/%q), were %q/%q",
						k.key, k.value, k.it.Key(), k.it.Value(), k.kc, k.vc))
					return
				}
			}
		}(g)
	}
	// The writer: keys "w..." no bounds above reach but nil.
	wg.Add(1)
	go func() {
		defer wg.Done()
		val := bytes.Repeat([]byte("x"), 100)
		for i := 0; !stop.Load(); i++ {
			if err := d.Put([]byte(fmt.Sprintf("w%06d", i)), val, nil); err != nil {
				if !errors.Is(err, ErrClosed) {
					fail(err)
				}
				return
			}
			if i%300 == 299 {
				if err := d.Flush(); err != nil && !errors.Is(err, ErrClosed) {
					fail(err)
					return
				}
			}
			if i%2000 == 1999 {
				if err := d.CompactRange(nil, nil); err != nil && !errors.Is(err, ErrClosed) {
					fail(err)
					return
				}
			}
		}
	}()
	time.Sleep(dur)
	withWatchdog(t, 30*time.Second, "DB.Close under iterators", func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	stop.Store(true)
	withWatchdog(t, 30*time.Second, "the workers", wg.Wait)
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if scans.Load() < 50 {
		t.Errorf("only %d scans", scans.Load())
	}
	for _, it := range open {
		if it.First() || !errors.Is(it.Error(), ErrClosed) {
			t.Fatalf("an iterator left open past the DB's Close: Valid %v Error %v", it.Valid(), it.Error())
		}
		if err := it.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Fatal(err)
		}
	}
	requireGoroutinesSettle(t, before)
}

// TestReviewIter10ErrorKept: an iterator that found nothing because a
// read failed (forward, backward, or at NewIterator through a table
// open) has an error, so Close must keep its state: Close returns the
// error, Error reports it after Close, and positioning calls after Close
// still return false. Once the faults stop, the same scans succeed and
// the handles closed with errors disturb nothing.
func TestReviewIter10ErrorKept(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.NewMem(), nil)
	o := &Options{FS: ffs, DisableBlockCache: true, DisableMmapReads: true, MaxOpenFiles: 16, Prefix: filter.FixedPrefix(4)}
	// No range tombstone: a failed load of a table's range tombstones
	// stays in the read state (readState.rangeDels), which is not what
	// this test is about.
	d, m := r10StoreWith(t, o, false)
	defer func() { d.Close() }()
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", o) // no table open yet
	ops := []struct {
		name string
		ro   *ReadOptions
		op   func(it *Iterator) bool
	}{
		{"First", r10RO("a010", "a020"), func(it *Iterator) bool { return it.First() }},
		{"Last", r10RO("a010", "a020"), func(it *Iterator) bool { return it.Last() }},
		{"Seek", nil, func(it *Iterator) bool { return it.Seek([]byte("a030")) }},
		{"prefix First", prefixRO("a01"), func(it *Iterator) bool { return it.First() }},
	}
	var bad []*Iterator
	for _, fault := range []vfs.Op{vfs.OpRead, vfs.OpOpen} {
		for _, c := range ops {
			ffs.SetInjector(vfs.Fault{Ops: fault, PathContains: ".sst", Count: -1}.Injector())
			it := d.NewIterator(c.ro)
			what := fmt.Sprintf("%v fault, %s", fault, c.name)
			if c.op(it) {
				// The table was already open (an open fault reaches only
				// the first): not this case.
				it.Close()
				ffs.SetInjector(nil)
				continue
			}
			err := it.Error()
			if err == nil {
				t.Fatalf("%s: found nothing and no error", what)
			}
			if cerr := it.Close(); cerr == nil || cerr.Error() != err.Error() {
				t.Fatalf("%s: Close returned %v, Error was %v", what, cerr, err)
			}
			ffs.SetInjector(nil)
			r10Churn(t, d, rand.New(rand.NewSource(1)), 50)
			if got := it.Error(); got == nil || got.Error() != err.Error() {
				t.Fatalf("%s: Error after Close and churn: %v, want %v", what, got, err)
			}
			if it.First() || it.Valid() {
				t.Fatalf("%s: a closed iterator moved", what)
			}
			if got := it.Error(); got == nil {
				t.Fatalf("%s: Error after a positioning call on the closed iterator: nil", what)
			}
			if cerr := it.Close(); !errors.Is(cerr, ErrClosed) && (cerr == nil || cerr.Error() != err.Error()) {
				t.Fatalf("%s: second Close: %v", what, cerr)
			}
			bad = append(bad, it)
			// Close the DB and reopen, so that the next case opens the
			// table again.
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = mustOpen(t, "/db", o)
		}
	}
	if len(bad) < 4 {
		t.Fatalf("only %d cases failed a read", len(bad))
	}
	for _, ro := range []*ReadOptions{nil, r10RO("a010", "a020"), prefixRO("a01"), r10RO("m", "n")} {
		r10Scan(t, d, ro, m, bad, "after the faults")
	}
}
