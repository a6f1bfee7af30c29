package db

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

func TestPrefixBounds(t *testing.T) {
	for _, c := range []struct{ p, lower, upper string }{
		{"user:42:", "user:42:", "user:42;"},
		{"a\xff", "a\xff", "b"},
		{"a\xff\xff", "a\xff\xff", "b"},
		{"\xff\xff", "\xff\xff", ""},
		{"", "", ""},
	} {
		lo, up := PrefixBounds([]byte(c.p))
		if string(lo) != c.lower || string(up) != c.upper || (c.upper == "" && up != nil) {
			t.Errorf("PrefixBounds(%q) = %q, %q; want %q, %q", c.p, lo, up, c.lower, c.upper)
		}
	}
	// Every key with the prefix is inside, and the keys around it are not.
	lo, up := PrefixBounds([]byte("ab"))
	for _, k := range []string{"ab", "ab\x00", "ab\xff\xff", "abz"} {
		if bytes.Compare([]byte(k), lo) < 0 || bytes.Compare([]byte(k), up) >= 0 {
			t.Errorf("%q is outside the bounds of its prefix", k)
		}
	}
	for _, k := range []string{"aa\xff", "ac", "b"} {
		if bytes.Compare([]byte(k), lo) >= 0 && bytes.Compare([]byte(k), up) < 0 {
			t.Errorf("%q is inside the bounds of prefix ab", k)
		}
	}
}

// TestBoundedIteratorAgainstModel drives bounded iterators (random bounds,
// prefixes, empty and inverted ranges, snapshots) with random positioning
// calls in both directions, against a sorted model, over a store with
// keys in memtables, level 0 and deeper levels.
func TestBoundedIteratorAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), WriteBufferSize: 8 << 10, BlockSize: 256, L0CompactionTrigger: 3})
	defer d.Close()
	model := map[string]string{}
	key := func() string { return fmt.Sprintf("%c%03d", 'a'+rng.Intn(4), rng.Intn(300)) }
	var snap *Snapshot
	var snapModel map[string]string
	sawL0 := false
	for round := 0; round < 6; round++ {
		for i := 0; i < 500; i++ {
			k := key()
			if rng.Intn(4) == 0 {
				d.Delete([]byte(k), nil)
				delete(model, k)
			} else {
				v := fmt.Sprintf("%d.%d", round, i)
				d.Put([]byte(k), []byte(v), nil)
				model[k] = v
			}
		}
		if round == 2 {
			snap = d.NewSnapshot()
			snapModel = map[string]string{}
			for k, v := range model {
				snapModel[k] = v
			}
		}
		sawL0 = sawL0 || d.Metrics().Levels[0].Files > 0
		for q := 0; q < 60; q++ {
			var lower, upper []byte
			switch rng.Intn(6) {
			case 0: // unbounded
			case 1:
				lower, upper = PrefixBounds([]byte{byte('a' + rng.Intn(4))})
			case 2:
				lower = []byte(key())
			case 3:
				upper = []byte(key())
			default:
				lower, upper = []byte(key()), []byte(key()) // may be empty or inverted
			}
			ro, m := &ReadOptions{LowerBound: lower, UpperBound: upper}, model
			if snap != nil && rng.Intn(3) == 0 {
				ro.Snapshot, m = snap, snapModel
			}
			var want []string
			for k := range m {
				if (lower == nil || k >= string(lower)) && (upper == nil || k < string(upper)) {
					want = append(want, k)
				}
			}
			sort.Strings(want)
			it := d.NewIterator(ro)
			// The bounds are copied: changing the caller's slices changes
			// nothing.
			for i := range lower {
				lower[i] = 0
			}
			pos := -2 // index in want; -1 before the start, len(want) past the end
			check := func(op string, ok bool) {
				t.Helper()
				wantOK := pos >= 0 && pos < len(want)
				if ok != wantOK || ok != it.Valid() {
					t.Fatalf("round %d q %d: %s: ok=%v, want %v (pos %d of %d) err %v", round, q, op, ok, wantOK, pos, len(want), it.Error())
				}
				if ok && (string(it.Key()) != want[pos] || string(it.Value()) != m[want[pos]]) {
					t.Fatalf("round %d q %d: %s at %q=%q, want %q=%q", round, q, op, it.Key(), it.Value(), want[pos], m[want[pos]])
				}
			}
			for step := 0; step < 40; step++ {
				switch r := rng.Intn(10); {
				case r == 0:
					pos = 0
					check("First", it.First())
				case r == 1:
					pos = len(want) - 1
					check("Last", it.Last())
				case r == 2:
					s := key()
					pos = sort.SearchStrings(want, s)
					if pos == len(want) {
						pos = len(want) // past the end
					}
					check("Seek "+s, it.Seek([]byte(s)))
				case r < 7:
					if pos < 0 || pos >= len(want) {
						continue
					}
					pos++
					check("Next", it.Next())
				default:
					if pos < 0 || pos >= len(want) {
						continue
					}
					pos--
					check("Prev", it.Prev())
				}
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	snap.Release()
	if m := d.Metrics(); !sawL0 || m.Compactions == 0 {
		t.Fatalf("the queries never met level-0 tables (%v) or no compaction ran: %+v", sawL0, m.Levels[:2])
	}
}

// spacedKey is key i of table tbl, its suffix written in base 5 with the
// digits a, c, e, g, i: two neighbouring keys differ first by two letters,
// so the index separator between two blocks ("t05.acd" between ...acc and
// ...ace) is below the next block's first key and tells a bounded scan
// that the next block is out of bounds.
func spacedKey(tbl, i int) []byte {
	k := []byte(fmt.Sprintf("t%02d.", tbl))
	for _, p := range []int{125, 25, 5, 1} {
		k = append(k, "acegi"[i/p%5])
	}
	return k
}

// TestBoundedIteratorReadsOnlyItsBlocks checks that tables and data blocks
// wholly outside the bounds are never read: ten level-0 tables of disjoint
// ranges, no block cache, and a bounded scan of three keys of one table.
func TestBoundedIteratorReadsOnlyItsBlocks(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), BlockSize: 256, DisableBlockCache: true, DisableAutomaticCompactions: true})
	defer d.Close()
	for tbl := 0; tbl < 10; tbl++ {
		for i := 0; i < 200; i++ {
			d.Put(spacedKey(tbl, i), bytes.Repeat([]byte("v"), 40), nil)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.Metrics().Levels[0].Files; n != 10 {
		t.Fatalf("%d level-0 tables, want 10", n)
	}
	scan := func(ro *ReadOptions, backward bool) (keys int, blocks int64) {
		before := d.Metrics().DataBlocksRead
		it := d.NewIterator(ro)
		if backward {
			for ok := it.Last(); ok; ok = it.Prev() {
				keys++
			}
		} else {
			for ok := it.First(); ok; ok = it.Next() {
				keys++
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return keys, d.Metrics().DataBlocksRead - before
	}
	// A range of one key lies in one block, and a scan of it reads that
	// block only, either way, even at a block's first or last key: the
	// separators in the index show the neighbouring blocks are out of
	// bounds.
	for i := 0; i < 200; i++ {
		k := string(spacedKey(5, i))
		ro := &ReadOptions{LowerBound: []byte(k), UpperBound: []byte(k + "\x00")}
		for _, back := range []bool{false, true} {
			if keys, blocks := scan(ro, back); keys != 1 || blocks != 1 {
				t.Fatalf("backward=%v: bounded scan of %s: %d keys, %d data blocks read (want 1 and 1)", back, k, keys, blocks)
			}
		}
	}
	// A prefix of one table: only that table's blocks.
	lo, up := PrefixBounds([]byte("t07."))
	keys, blocks := scan(&ReadOptions{LowerBound: lo, UpperBound: up}, false)
	_, all := scan(nil, false)
	if keys != 200 || blocks > all/10+1 {
		t.Errorf("prefix scan of one table: %d keys, %d blocks; the whole store is %d blocks", keys, blocks, all)
	}
	// Unbounded, a Seek reads a block of every table: what bounds save.
	it := d.NewIterator(nil)
	before := d.Metrics().DataBlocksRead
	it.Seek(spacedKey(5, 100))
	if got := d.Metrics().DataBlocksRead - before; got < 5 {
		t.Errorf("an unbounded Seek read %d blocks; the test expects one per table at or after the key", got)
	}
	it.Close()
}
