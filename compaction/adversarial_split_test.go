package compaction

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// advAlphabet: zero bytes (keys ending in 0x00, and t+"\x00" being a key
// itself), 0xff and two ordinary bytes; advUkey draws keys of 0 to 3 of
// them, the empty key included.
var advAlphabet = []byte{0x00, 0x01, 'a', 0xff}

func advUkey(rng *rand.Rand) []byte {
	b := make([]byte, rng.Intn(4))
	for i := range b {
		b[i] = advAlphabet[rng.Intn(len(advAlphabet))]
	}
	return b
}

type advEntry struct {
	ukey  []byte
	seq   uint64
	kind  base.Kind
	value []byte
}

// advVisible returns the value a read at readSeq sees for ukey through
// point entries es (any order) and tombstones ts, and whether there is one.
func advVisible(es []advEntry, ts []rangedel.Tombstone, ukey []byte, readSeq uint64) (string, bool) {
	var best *advEntry
	for i := range es {
		e := &es[i]
		if bytes.Equal(e.ukey, ukey) && e.seq <= readSeq && (best == nil || e.seq > best.seq) {
			best = e
		}
	}
	if best == nil || best.kind == base.KindDelete {
		return "", false
	}
	for _, t := range ts {
		if t.Seq <= readSeq && t.Contains(ukey) && t.Seq > best.seq {
			return "", false
		}
	}
	return string(best.value), true
}

// TestAdvMergeSplitModel merges random entries and tombstones over keys of
// zero bytes, 0xff and the empty key, with outputs cut after almost every
// key, and checks against a model: outputs disjoint and ordered in user
// keys (bounds as package db computes them, with BoundEnd), every piece
// non-empty and within its output's bounds, the pieces of every written
// tombstone tiling it, the point entries out in order, and every read at
// or after the oldest snapshot seeing through the outputs what it saw
// through the inputs.
func TestAdvMergeSplitModel(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	probes := [][]byte{}
	var gen func(p []byte)
	gen = func(p []byte) {
		probes = append(probes, p)
		if len(p) == 4 {
			return
		}
		for _, c := range advAlphabet {
			gen(append(slices.Clip(p), c))
		}
	}
	gen([]byte{})
	for trial := 0; trial < 3000; trial++ {
		var es []advEntry
		var ts []rangedel.Tombstone
		seq := uint64(1)
		for n := rng.Intn(40); n > 0; n-- {
			if rng.Intn(4) == 0 {
				lo, hi := advUkey(rng), advUkey(rng)
				switch rng.Intn(3) {
				case 0:
					hi = append(slices.Clip(lo), 0)
				case 1:
					hi = append(hi, 0)
				}
				if bytes.Compare(lo, hi) > 0 {
					lo, hi = hi, lo
				}
				if bytes.Equal(lo, hi) {
					continue
				}
				ts = append(ts, rangedel.Tombstone{Start: lo, End: hi, Seq: seq})
			} else {
				kind := base.KindSet
				if rng.Intn(5) == 0 {
					kind = base.KindDelete
				}
				es = append(es, advEntry{ukey: advUkey(rng), seq: seq, kind: kind, value: []byte(fmt.Sprintf("v%d", seq))})
			}
			seq++
		}
		sorted := slices.Clone(es)
		sort.Slice(sorted, func(i, j int) bool {
			if c := bytes.Compare(sorted[i].ukey, sorted[j].ukey); c != 0 {
				return c < 0
			}
			return sorted[i].seq > sorted[j].seq
		})
		it := &sliceIter{failAt: -1}
		for _, e := range sorted {
			it.keys = append(it.keys, base.MakeInternalKey(e.ukey, e.seq, e.kind))
			it.vals = append(it.vals, e.value)
		}
		smallest := uint64(rng.Int63n(int64(seq) + 1))
		c := &Compaction{Level: 1}
		o := &Options{TargetFileSize: uint64(1 + rng.Intn(40)), BaseLevelBytes: 1 << 20, LevelMultiplier: 10}
		var sink recordSink
		_, err := Merge(it, rangedel.Build(slices.Clone(ts)), c, &manifest.Version{}, o, smallest, &sink)
		if err != nil {
			t.Fatal(err)
		}
		desc := func() string {
			return fmt.Sprintf("trial %d: entries %v tombstones %v smallest %d target %d", trial, es, ts, smallest, o.TargetFileSize)
		}
		var outEs []advEntry
		var outTs []rangedel.Tombstone
		var prevHi []byte
		havePrev := false
		var points [][]byte
		for i, out := range sink.outs {
			lo, hi := out.bounds()
			if havePrev && bytes.Compare(prevHi, lo) >= 0 {
				t.Fatalf("%s\noutput %d starts at %q, at or before the previous output's end %q", desc(), i, lo, prevHi)
			}
			prevHi, havePrev = hi, true
			for j, k := range out.keys {
				u, s, kind, _ := base.ParseInternalKey(k)
				outEs = append(outEs, advEntry{ukey: u, seq: s, kind: kind, value: out.vals[j]})
				points = append(points, k)
			}
			for _, tb := range out.tombs {
				if bytes.Compare(tb.Start, tb.End) >= 0 {
					t.Fatalf("%s\noutput %d holds the empty tombstone %v", desc(), i, tb)
				}
				outTs = append(outTs, tb)
			}
		}
		if !slices.IsSortedFunc(points, base.CompareInternal) {
			t.Fatalf("%s\npoint entries out of order", desc())
		}
		// Pieces of each tombstone tile it (or it was dropped whole).
		pieces := map[uint64][]rangedel.Tombstone{}
		for _, p := range outTs {
			pieces[p.Seq] = append(pieces[p.Seq], p)
		}
		for _, tb := range ts {
			ps := pieces[tb.Seq]
			if len(ps) == 0 {
				if tb.Seq > smallest {
					t.Fatalf("%s\ntombstone %v above the oldest snapshot was dropped", desc(), tb)
				}
				continue
			}
			at := tb.Start
			for _, p := range ps {
				if !bytes.Equal(p.Start, at) {
					t.Fatalf("%s\ntombstone %v: piece %v does not start at %q", desc(), tb, p, at)
				}
				at = p.End
			}
			if !bytes.Equal(at, tb.End) {
				t.Fatalf("%s\ntombstone %v: pieces end at %q", desc(), tb, at)
			}
		}
		for _, u := range probes {
			for r := smallest; r <= seq; r++ {
				wv, wok := advVisible(es, ts, u, r)
				gv, gok := advVisible(outEs, outTs, u, r)
				if wv != gv || wok != gok {
					t.Fatalf("%s\nread of %q at %d: inputs give %q %v, outputs %q %v\noutputs %v", desc(), u, r, wv, wok, gv, gok, sink.outs)
				}
			}
		}
	}
}

// TestAdvMergeSplitWithGrandparents: the same merge with grandparent
// tables (cuts by grandparent overlap) and a level below holding keys (so
// tombstones are kept even under no snapshot).
func TestAdvMergeSplitWithGrandparents(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 500; trial++ {
		var gps []*manifest.FileMetadata
		var cuts [][]byte
		for i := 0; i < 6; i++ {
			cuts = append(cuts, advUkey(rng))
		}
		slices.SortFunc(cuts, bytes.Compare)
		cuts = slices.CompactFunc(cuts, bytes.Equal)
		for i := 0; i+1 < len(cuts); i += 2 {
			gps = append(gps, &manifest.FileMetadata{FileNum: uint64(i + 1), Size: 1 << 30,
				Smallest: base.MakeInternalKey(cuts[i], 1, base.KindSet), Largest: base.MakeInternalKey(cuts[i+1], 1, base.KindSet)})
		}
		v := &manifest.Version{}
		v.Files[2] = gps
		c := &Compaction{Level: 1, Grandparents: gps}
		var es []advEntry
		var ts []rangedel.Tombstone
		seq := uint64(10)
		for n := 5 + rng.Intn(30); n > 0; n-- {
			if rng.Intn(3) == 0 {
				lo, hi := advUkey(rng), append(advUkey(rng), 0)
				if bytes.Compare(lo, hi) >= 0 {
					continue
				}
				ts = append(ts, rangedel.Tombstone{Start: lo, End: hi, Seq: seq})
			} else {
				es = append(es, advEntry{ukey: advUkey(rng), seq: seq, kind: base.KindSet, value: []byte("x")})
			}
			seq++
		}
		sort.Slice(es, func(i, j int) bool {
			if c := bytes.Compare(es[i].ukey, es[j].ukey); c != 0 {
				return c < 0
			}
			return es[i].seq > es[j].seq
		})
		it := &sliceIter{failAt: -1}
		for _, e := range es {
			it.keys = append(it.keys, base.MakeInternalKey(e.ukey, e.seq, e.kind))
			it.vals = append(it.vals, e.value)
		}
		o := &Options{TargetFileSize: 1 << 30, BaseLevelBytes: 1 << 20, LevelMultiplier: 10}
		var sink recordSink
		if _, err := Merge(it, rangedel.Build(slices.Clone(ts)), c, v, o, seq, &sink); err != nil {
			t.Fatal(err)
		}
		var prevHi []byte
		have := false
		for i, out := range sink.outs {
			lo, hi := out.bounds()
			if have && bytes.Compare(prevHi, lo) >= 0 {
				t.Fatalf("trial %d: output %d starts at %q, at or before %q", trial, i, lo, prevHi)
			}
			prevHi, have = hi, true
		}
	}
}
