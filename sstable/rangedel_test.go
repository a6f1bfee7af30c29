package sstable

import (
	"bytes"
	"errors"
	"math/rand"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// rangeDelTable builds a table holding m and the tombstones ts, added in
// the order given.
func rangeDelTable(t testing.TB, m model, ts []rangedel.Tombstone) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{BlockSize: 96, FilterPolicy: bloom10})
	for i, e := range m {
		if i == len(m)/2 {
			for _, r := range ts {
				if err := w.AddRangeDel(r.Start, r.End, r.Seq); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	if len(m) == 0 {
		for _, r := range ts {
			if err := w.AddRangeDel(r.Start, r.End, r.Seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var seedRangeDels = []rangedel.Tombstone{
	{Start: []byte("m"), End: []byte("q"), Seq: 9},
	{Start: []byte("a"), End: []byte("c"), Seq: 3},
	{Start: []byte("a"), End: []byte("c"), Seq: 3}, // a repeat is written once
	{Start: []byte("b"), End: []byte("zz"), Seq: 12},
}

// TestRangeDelBlock: tombstones added in any order, between the entries,
// come back in canonical order without repeats, counted in the
// properties; the point entries are unaffected; a table of tombstones
// alone opens; a bad tombstone is refused by the writer.
func TestRangeDelBlock(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	m := randomModel(rng, 40, 3, 20)
	want := slices.Clone(seedRangeDels[:2])
	want = append(want, seedRangeDels[3])
	rangedel.Sort(want)
	for _, mm := range []model{m, nil} {
		data := rangeDelTable(t, mm, seedRangeDels)
		r := openTable(t, data, ReaderOptions{})
		got := r.RangeDels()
		if len(got) != len(want) {
			t.Fatalf("%d tombstones read, want %d: %v", len(got), len(want), got)
		}
		for i := range got {
			if !bytes.Equal(got[i].Start, want[i].Start) || !bytes.Equal(got[i].End, want[i].End) || got[i].Seq != want[i].Seq {
				t.Fatalf("tombstone %d = %v, want %v", i, got[i], want[i])
			}
		}
		if p := r.Properties(); p.NumRangeDeletions != 3 || p.NumEntries != uint64(len(mm)) {
			t.Fatalf("properties: %d range deletions, %d entries", p.NumRangeDeletions, p.NumEntries)
		}
		n := 0
		it := r.NewIterator()
		for ok := it.First(); ok; ok = it.Next() {
			if !bytes.Equal(it.Key(), mm[n].key) {
				t.Fatalf("entry %d = %s", n, base.FormatInternalKey(it.Key()))
			}
			n++
		}
		if n != len(mm) || it.Close() != nil {
			t.Fatalf("%d entries read of %d", n, len(mm))
		}
		r.Close()
	}
	// No tombstones: no block, no property, as before.
	plain := rangeDelTable(t, m, nil)
	if bytes.Contains(plain, []byte(MetaRangeDelKey)) || bytes.Contains(plain, []byte(PropNumRangeDels)) {
		t.Fatal("a table without tombstones names a range-deletion block or property")
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	for _, bad := range []rangedel.Tombstone{{Start: []byte("b"), End: []byte("a"), Seq: 1}, {Start: []byte("a"), End: []byte("a"), Seq: 1}, {Start: []byte("a"), End: []byte("b"), Seq: base.MaxSeqNum + 1}} {
		if err := w.AddRangeDel(bad.Start, bad.End, bad.Seq); err == nil {
			t.Errorf("AddRangeDel(%v) accepted", bad)
		}
	}
}

// TestRangeDelBlockCorruption: every flipped bit of the range-deletion
// block, the property or the metaindex is an error wrapping
// ErrCorruption at open, or reads back the same tombstones (a bit that
// changes nothing read), never other tombstones.
func TestRangeDelBlockCorruption(t *testing.T) {
	data := rangeDelTable(t, nil, seedRangeDels)
	ref := openTable(t, data, ReaderOptions{}).RangeDels()
	for i := range data {
		for bit := 0; bit < 8; bit++ {
			bad := bytes.Clone(data)
			bad[i] ^= 1 << bit
			r, err := NewReader(bytes.NewReader(bad), int64(len(bad)), ReaderOptions{})
			if err != nil {
				if !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("byte %d bit %d: %v does not wrap ErrCorruption", i, bit, err)
				}
				continue
			}
			got := r.RangeDels()
			if len(got) != len(ref) {
				t.Fatalf("byte %d bit %d: %d tombstones read, want %d", i, bit, len(got), len(ref))
			}
			for j := range got {
				if !bytes.Equal(got[j].Start, ref[j].Start) || !bytes.Equal(got[j].End, ref[j].End) || got[j].Seq != ref[j].Seq {
					t.Fatalf("byte %d bit %d: tombstone %d = %v, want %v", i, bit, j, got[j], ref[j])
				}
			}
			r.Close()
		}
	}
}
