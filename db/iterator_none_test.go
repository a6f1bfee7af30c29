package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestIteratorNoneAgainstModel checks the iterator that NewIterator builds
// without inner iterators when neither a memtable nor (by range and
// filters) a table can hold a key in its bounds. The tables hold the even
// users' keys; the memtable gets odd users' keys, deletes and range
// deletes between the scans, so the memtable check decides as often as
// the filters do. Every bound shape is compared with a map model in both
// directions and with Seek, with and without a snapshot.
func TestIteratorNoneAgainstModel(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", &Options{FS: fs, Prefix: filter.DelimitedPrefix(':'), WriteBufferSize: 64 << 10})
	defer func() { d.Close() }()
	key := func(u, i int) string { return fmt.Sprintf("u%03d:%03d", u, i) }
	m := model{}
	for u := 0; u < 40; u += 2 {
		for i := 0; i < 30; i++ {
			if err := d.Put([]byte(key(u, i)), []byte(key(u, i)), nil); err != nil {
				t.Fatal(err)
			}
			m[key(u, i)] = key(u, i)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(7))
	nones := 0
	for round := 0; round < 30; round++ {
		// A few writes to one user, odd (absent from the tables) or even.
		u := rng.Intn(40)
		for n := rng.Intn(4); n > 0; n-- {
			k := key(u, rng.Intn(30))
			switch r := rng.Intn(10); {
			case r < 6:
				v := fmt.Sprint(round, "-", n)
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
				hi := key(u, 30)
				if err := d.DeleteRange([]byte(k), []byte(hi), nil); err != nil {
					t.Fatal(err)
				}
				m.deleteRange(k, hi)
			}
		}
		if round%10 == 9 {
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		snap, sm := d.NewSnapshot(), m.clone()
		// A write after the snapshot, to a user of its own: the
		// snapshot's iterators see the memtable entry but not the key.
		late := key(2*rng.Intn(20)+1, 31)
		if err := d.Put([]byte(late), []byte("late"), nil); err != nil {
			t.Fatal(err)
		}
		m[late] = "late"
		for v := 0; v < 40; v++ {
			p := fmt.Sprintf("u%03d:", v)
			lo, hi := PrefixBounds([]byte(p))
			for _, b := range []struct {
				name   string
				lo, hi []byte
			}{
				{"prefix", lo, hi},
				{"lower only", lo, nil},
				{"upper only", nil, hi},
				{"inside", []byte(key(v, 5)), []byte(key(v, 9))},
			} {
				for _, useSnap := range []bool{false, true} {
					ro, want := &ReadOptions{LowerBound: b.lo, UpperBound: b.hi}, m
					if useSnap {
						ro.Snapshot, want = snap, sm
					}
					if checkBoundedScan(t, d, ro, want) {
						nones++
					}
				}
			}
		}
		snap.Release()
	}
	// The fast path must have been taken, or this test shows nothing.
	if nones == 0 {
		t.Fatal("no iterator took the no-inner-iterators path")
	}
	t.Logf("%d iterators had nothing to merge", nones)
}

// checkBoundedScan compares an iterator over ro's bounds with the model,
// forward, backward and with a Seek into the middle of the bounds, and
// reports whether the iterator was built without inner iterators.
func checkBoundedScan(t *testing.T, d *DB, ro *ReadOptions, m model) bool {
	t.Helper()
	in := func(k string) bool {
		return (ro.LowerBound == nil || k >= string(ro.LowerBound)) && (ro.UpperBound == nil || k < string(ro.UpperBound))
	}
	var want []string
	for k := range m {
		if in(k) {
			want = append(want, k)
		}
	}
	sort.Strings(want)
	it := d.NewIterator(ro)
	defer it.Close()
	none := it.s.none
	if none && len(want) > 0 {
		t.Fatalf("bounds [%q, %q): no inner iterators, but the model holds %v", ro.LowerBound, ro.UpperBound, want)
	}
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
		if string(it.Value()) != m[string(it.Key())] {
			t.Fatalf("%q = %q, want %q", it.Key(), it.Value(), m[string(it.Key())])
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("bounds [%q, %q) snapshot %v: forward %v, want %v", ro.LowerBound, ro.UpperBound, ro.Snapshot != nil, got, want)
	}
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
	}
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("bounds [%q, %q): backward %v, want %v", ro.LowerBound, ro.UpperBound, got, want)
	}
	if len(want) > 0 {
		mid := want[len(want)/2]
		if !it.Seek([]byte(mid)) || string(it.Key()) != mid {
			t.Fatalf("Seek(%q): %v %q", mid, it.Valid(), it.Key())
		}
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return none
}

// TestIteratorNoneLifecycle checks an iterator with nothing to merge
// through the writes after it, ExplainSeek, a DB Close before its own, and
// a double Close.
func TestIteratorNoneLifecycle(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), Prefix: filter.FixedPrefix(4)})
	for i := 0; i < 100; i++ {
		if err := d.Put([]byte(fmt.Sprintf("a%03d", i)), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	lo, hi := PrefixBounds([]byte("b000"))
	ro := &ReadOptions{LowerBound: lo, UpperBound: hi}
	it := d.NewIterator(ro)
	if !it.s.none {
		t.Fatal("an absent prefix on a flushed store built inner iterators")
	}
	// A write after the iterator was made is not in its view.
	if err := d.Put([]byte("b000x"), []byte("new"), nil); err != nil {
		t.Fatal(err)
	}
	if it.First() || it.Last() || it.Seek([]byte("b000")) || it.Next() || it.Prev() {
		t.Fatalf("an iterator made before the write found %q", it.Key())
	}
	it2 := d.NewIterator(ro)
	if it2.s.none || !it2.First() || string(it2.Key()) != "b000x" {
		t.Fatalf("an iterator made after the write: none %v, key %q", it2.s.none, it2.Key())
	}
	if err := it2.Close(); err != nil {
		t.Fatal(err)
	}
	if tr, err := d.ExplainSeek([]byte("c000"), &ReadOptions{LowerBound: []byte("c000"), UpperBound: []byte("c001")}); err != nil || tr.Found {
		t.Fatalf("ExplainSeek of an absent prefix: found %v, err %v", tr.Found, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if it.First() || !errors.Is(it.Error(), ErrClosed) {
		t.Fatalf("after the DB's Close: First true or Error %v", it.Error())
	}
	if err := it.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close after the DB's Close: %v", err)
	}
	if err := it.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

// TestOverlappingAgainstScan checks the level search of a bounded
// iterator (binary search, then a shortcut for bounds that meet one
// table or none) against a linear scan, on random disjoint levels and
// random bounds, nil ones included.
func TestOverlappingAgainstScan(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	k := func(n int) []byte { return []byte(fmt.Sprintf("%04d", n)) }
	for trial := 0; trial < 20000; trial++ {
		var files []*manifest.FileMetadata
		var edit manifest.VersionEdit
		next := rng.Intn(5)
		for n := rng.Intn(8); n > 0; n-- {
			lo := next
			hi := lo + rng.Intn(6) // a table may hold one key
			f := &manifest.FileMetadata{
				FileNum:     uint64(len(files) + 1),
				Smallest:    base.MakeInternalKey(k(lo), 1, base.KindSet),
				Largest:     base.MakeInternalKey(k(hi), 1, base.KindSet),
				SmallestSeq: 1, LargestSeq: 1,
			}
			files = append(files, f)
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 1, Meta: f})
			next = hi + 1 + rng.Intn(4)
		}
		b := manifest.NewBuilder(nil)
		if err := b.Apply(&edit); err != nil {
			t.Fatal(err)
		}
		v, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		it := &iterState{}
		if rng.Intn(5) > 0 {
			it.lower = k(rng.Intn(next + 3))
		}
		if rng.Intn(5) > 0 {
			it.upper = k(rng.Intn(next + 3))
		}
		var want []*manifest.FileMetadata
		for _, f := range files {
			if (it.lower == nil || bytes.Compare(base.UserKey(f.Largest), it.lower) >= 0) &&
				(it.upper == nil || bytes.Compare(base.UserKey(f.Smallest), it.upper) < 0) {
				want = append(want, f)
			}
		}
		got := it.overlapping(v, 1)
		if !slices.Equal(got, want) {
			t.Fatalf("bounds [%s, %s) over %d files: %d files, want %d", it.lower, it.upper, len(files), len(got), len(want))
		}
	}
}
