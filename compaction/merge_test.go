package compaction

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// recordSink keeps each output table's entries and tombstones.
type recordSink struct {
	outs []*recordOut
	cur  *recordOut
}

type recordOut struct {
	keys  [][]byte // internal keys
	vals  [][]byte
	size  uint64
	tombs []rangedel.Tombstone
}

func (s *recordSink) open() *recordOut {
	if s.cur == nil {
		s.cur = &recordOut{}
		s.outs = append(s.outs, s.cur)
	}
	return s.cur
}

func (s *recordSink) Add(ikey, value []byte) error {
	o := s.open()
	o.keys = append(o.keys, bytes.Clone(ikey))
	o.vals = append(o.vals, bytes.Clone(value))
	o.size += uint64(len(ikey) + len(value))
	return nil
}

func (s *recordSink) CurrentSize() uint64 {
	if s.cur == nil {
		return 0
	}
	return s.cur.size
}

func (s *recordSink) Cut() error { s.cur = nil; return nil }

func (s *recordSink) AddRangeDel(start, end []byte, seq uint64) error {
	o := s.open()
	o.tombs = append(o.tombs, rangedel.Tombstone{Start: bytes.Clone(start), End: bytes.Clone(end), Seq: seq})
	return nil
}

// bounds returns the user-key range an output's table claims, as package
// db computes it: its point keys, each tombstone's start and BoundEnd.
func (o *recordOut) bounds() (lo, hi []byte) {
	for _, k := range o.keys {
		u := base.UserKey(k)
		if lo == nil || bytes.Compare(u, lo) < 0 {
			lo = u
		}
		if hi == nil || bytes.Compare(u, hi) > 0 {
			hi = u
		}
	}
	for _, t := range o.tombs {
		if lo == nil || bytes.Compare(t.Start, lo) < 0 {
			lo = t.Start
		}
		if e := rangedel.BoundEnd(t.End); hi == nil || bytes.Compare(e, hi) > 0 {
			hi = e
		}
	}
	return lo, hi
}

// TestMergeCutsInsideTombstones merges many small entries under wide range
// tombstones that a snapshot keeps, with a small TargetFileSize: outputs
// must be cut inside the tombstones (not glued into one table), every
// output's user-key range must lie strictly after the one before, every
// point entry must come out once, in order, and each tombstone's pieces
// must tile exactly its range.
func TestMergeCutsInsideTombstones(t *testing.T) {
	var it sliceIter
	it.failAt = -1
	for i := 0; i < 400; i++ {
		it.keys = append(it.keys, base.MakeInternalKey([]byte(fmt.Sprintf("k%04d", i)), uint64(i+1), base.KindSet))
		it.vals = append(it.vals, []byte("value"))
	}
	tombs := []rangedel.Tombstone{
		{Start: []byte(""), End: []byte("\xff"), Seq: 1000},              // every key
		{Start: []byte("k0050"), End: []byte("k0150"), Seq: 1001},        // ends at a key
		{Start: []byte("k0100\x00"), End: []byte("k0300\x00"), Seq: 999}, // starts and ends between keys
		{Start: []byte("a"), End: []byte("b"), Seq: 998},                 // before every key
		{Start: []byte("z"), End: []byte("zz"), Seq: 997},                // after every key
	}
	c := &Compaction{Level: 1}
	o := &Options{TargetFileSize: 200, BaseLevelBytes: 1 << 20, LevelMultiplier: 10}
	var sink recordSink
	// The snapshot at 0 keeps every tombstone and every entry.
	st, err := Merge(&it, rangedel.Build(slices.Clone(tombs)), c, &manifest.Version{}, o, 0, &sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.outs) < 10 {
		t.Fatalf("%d outputs: not cut inside the tombstones", len(sink.outs))
	}
	var points [][]byte
	var prevHi []byte
	pieces := map[uint64][]rangedel.Tombstone{}
	for i, out := range sink.outs {
		lo, hi := out.bounds()
		if prevHi != nil && bytes.Compare(prevHi, lo) >= 0 {
			t.Fatalf("output %d starts at %q, at or before the previous output's end %q", i, lo, prevHi)
		}
		prevHi = hi
		points = append(points, out.keys...)
		for _, tb := range out.tombs {
			if bytes.Compare(tb.Start, tb.End) >= 0 {
				t.Fatalf("output %d holds the empty tombstone %v", i, tb)
			}
			pieces[tb.Seq] = append(pieces[tb.Seq], tb)
		}
	}
	if !slices.EqualFunc(points, it.keys, bytes.Equal) {
		t.Fatalf("%d point entries out, %d in (or out of order)", len(points), len(it.keys))
	}
	for _, tb := range tombs {
		ps := pieces[tb.Seq]
		at := tb.Start
		for _, p := range ps {
			if !bytes.Equal(p.Start, at) {
				t.Fatalf("tombstone %v: piece %v does not start where the last ended (%q)", tb, p, at)
			}
			at = p.End
		}
		if !bytes.Equal(at, tb.End) {
			t.Fatalf("tombstone %v: pieces end at %q", tb, at)
		}
	}
	if st.RangeDelsOut <= int64(len(tombs)) {
		t.Fatalf("%d tombstone pieces written for %d tombstones: none was split", st.RangeDelsOut, len(tombs))
	}
}
