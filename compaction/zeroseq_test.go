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

// zeroLevel is one level of the read model: point entries (internal keys
// and values) and range tombstones.
type zeroLevel struct {
	keys, vals [][]byte
	tombs      []rangedel.Tombstone
}

// readLevels answers a read of ukey at readSeq the way package db does:
// the newest tombstone the read sees over ukey, in any level, deletes
// every older entry; levels are searched top-down and the first holding a
// version the read sees answers, unless that version is older than the
// tombstone.
func readLevels(levels []zeroLevel, ukey []byte, readSeq uint64) (string, bool) {
	var del uint64
	for _, l := range levels {
		for _, t := range l.tombs {
			if t.Seq <= readSeq && t.Seq > del && bytes.Compare(t.Start, ukey) <= 0 && bytes.Compare(ukey, t.End) < 0 {
				del = t.Seq
			}
		}
	}
	for _, l := range levels {
		for i, k := range l.keys { // newest first within a user key
			u, seq, kind, _ := base.ParseInternalKey(k)
			if !bytes.Equal(u, ukey) || seq > readSeq {
				continue
			}
			if seq < del || kind == base.KindDelete {
				return "", false
			}
			return string(l.vals[i]), true
		}
	}
	return "", false
}

// TestMergeZeroSeqReadsUnchanged merges random inputs (sets, deletions,
// range tombstones) over random lower levels with a random oldest
// snapshot, and checks that every read a snapshot or a later reader can
// make answers the same before and after, while the values every reader
// sees and nothing below or among the tombstones could disturb did get
// sequence number 0.
func TestMergeZeroSeqReadsUnchanged(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	universe := 40
	ukey := func(i int) []byte { return []byte(fmt.Sprintf("k%03d", i)) }
	var zeroed, candidates int64
	for round := 0; round < 400; round++ {
		// Inputs: sequence numbers 100.. (the lower levels hold 1..99).
		type ent struct {
			ikey, val []byte
		}
		var ents []ent
		seq := uint64(100)
		for i := 0; i < universe; i++ {
			for n := rng.Intn(4); n > 0; n-- {
				kind := base.KindSet
				if rng.Intn(4) == 0 {
					kind = base.KindDelete
				}
				seq++
				ents = append(ents, ent{base.MakeInternalKey(ukey(i), seq, kind), []byte(fmt.Sprintf("v%d", seq))})
			}
		}
		// Shuffle the sequence numbers among keys, then sort.
		perm := rng.Perm(len(ents))
		for i := range ents {
			u, _, kind, _ := base.ParseInternalKey(ents[i].ikey)
			s := uint64(101 + perm[i])
			ents[i] = ent{base.MakeInternalKey(u, s, kind), []byte(fmt.Sprintf("v%d", s))}
		}
		sort.Slice(ents, func(a, b int) bool { return base.CompareInternal(ents[a].ikey, ents[b].ikey) < 0 })
		var in zeroLevel
		var it sliceIter
		it.failAt = -1
		for _, e := range ents {
			in.keys = append(in.keys, e.ikey)
			in.vals = append(in.vals, e.val)
			it.keys = append(it.keys, e.ikey)
			it.vals = append(it.vals, e.val)
		}
		maxSeq := uint64(101 + len(ents) + 3)
		for n := rng.Intn(3); n > 0; n-- {
			a, b := rng.Intn(universe), rng.Intn(universe)
			if a > b {
				a, b = b, a
			}
			in.tombs = append(in.tombs, rangedel.Tombstone{Start: ukey(a), End: append(ukey(b), 'x'), Seq: 100 + uint64(rng.Intn(int(maxSeq-100)))})
		}
		// Lower levels 2..6: a few disjoint tables each, with older
		// entries and sometimes a tombstone.
		v := &manifest.Version{}
		var lower []zeroLevel
		for l := 2; l < NumLevels; l++ {
			var lv zeroLevel
			at := rng.Intn(universe)
			for at < universe && rng.Intn(3) > 0 {
				n := 1 + rng.Intn(3)
				lo, hi := at, min(at+n, universe)-1
				f := &manifest.FileMetadata{FileNum: uint64(len(v.Files[l]) + 1)}
				for i := lo; i <= hi; i++ {
					if rng.Intn(2) == 0 {
						s := uint64(1 + rng.Intn(99))
						lv.keys = append(lv.keys, base.MakeInternalKey(ukey(i), s, base.KindSet))
						lv.vals = append(lv.vals, []byte(fmt.Sprintf("low%d", s)))
					}
				}
				if rng.Intn(3) == 0 {
					lv.tombs = append(lv.tombs, rangedel.Tombstone{Start: ukey(lo), End: ukey(hi + 1), Seq: uint64(1 + rng.Intn(99))})
				}
				f.Smallest = base.MakeInternalKey(ukey(lo), 99, base.KindSet)
				f.Largest = base.MakeInternalKey(ukey(hi), 1, base.KindSet)
				v.Files[l] = append(v.Files[l], f)
				at = hi + 1 + rng.Intn(4)
			}
			lower = append(lower, lv)
		}
		smallest := 100 + uint64(rng.Intn(int(maxSeq-100)+1))
		c := &Compaction{Level: 0}
		o := &Options{TargetFileSize: 1 << 20, BaseLevelBytes: 1 << 20, LevelMultiplier: 10}
		var sink recordSink
		st, err := Merge(&it, rangedel.Build(slices.Clone(in.tombs)), c, v, o, smallest, &sink)
		if err != nil {
			t.Fatal(err)
		}
		zeroed += st.ZeroedSeqs
		var out zeroLevel
		for _, o := range sink.outs {
			out.keys = append(out.keys, o.keys...)
			out.vals = append(out.vals, o.vals...)
			out.tombs = append(out.tombs, o.tombs...)
		}
		before := append([]zeroLevel{in}, lower...)
		after := append([]zeroLevel{out}, lower...)
		for i := 0; i < universe+1; i++ {
			for _, r := range []uint64{smallest, smallest + 1, smallest + 5, maxSeq, base.MaxSeqNum} {
				bv, bok := readLevels(before, ukey(i), r)
				av, aok := readLevels(after, ukey(i), r)
				if bv != av || bok != aok {
					t.Fatalf("round %d: %s at %d (oldest snapshot %d): %q,%v before the merge, %q,%v after\ninputs %v\ntombstones %v\noutputs %v",
						round, ukey(i), r, smallest, bv, bok, av, aok, fmtKeys(in.keys), in.tombs, fmtKeys(out.keys))
				}
			}
		}
		// Every output entry with a number that could have been zeroed
		// was.
		b := baseLevels{v: v, from: 1}
		for _, k := range out.keys {
			u, s, kind, _ := base.ParseInternalKey(k)
			if kind != base.KindSet || s > smallest {
				continue
			}
			_, covered := rangedel.Build(slices.Clone(in.tombs)).MaxSeq(u, base.MaxSeqNum)
			if !b.isBase(u) || covered {
				if s == 0 {
					t.Fatalf("round %d: %s zeroed over a lower level or under a tombstone", round, u)
				}
				continue
			}
			candidates++
			if s != 0 {
				t.Fatalf("round %d: %s kept sequence number %d (oldest snapshot %d)", round, u, s, smallest)
			}
		}
	}
	if zeroed == 0 || zeroed != candidates {
		t.Fatalf("%d entries zeroed, %d could have been", zeroed, candidates)
	}
}

// TestBaseLevelsMatchesOverlaps checks the cursor form of the base-level
// test against IsBaseLevelForKey's binary searches.
func TestBaseLevelsMatchesOverlaps(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for round := 0; round < 200; round++ {
		v := &manifest.Version{}
		for l := 1; l < NumLevels; l++ {
			at := rng.Intn(50)
			for at < 300 && rng.Intn(5) > 0 {
				hi := at + rng.Intn(20)
				v.Files[l] = append(v.Files[l], &manifest.FileMetadata{
					Smallest: base.MakeInternalKey([]byte(fmt.Sprintf("%04d", at)), 5, base.KindSet),
					Largest:  base.MakeInternalKey([]byte(fmt.Sprintf("%04d", hi)), 1, base.KindSet),
				})
				at = hi + rng.Intn(30)
			}
		}
		c := &Compaction{Level: rng.Intn(NumLevels - 1)}
		b := baseLevels{v: v, from: c.OutputLevel() + 1}
		for k := 0; k < 320; k += 1 + rng.Intn(3) {
			u := []byte(fmt.Sprintf("%04d", k))
			if got, want := b.isBase(u), c.IsBaseLevelForKey(v, u); got != want {
				t.Fatalf("round %d, key %s, output level %d: cursor says %v, Overlaps %v", round, u, c.OutputLevel(), got, want)
			}
		}
	}
}

func fmtKeys(keys [][]byte) []string {
	var s []string
	for _, k := range keys {
		s = append(s, base.FormatInternalKey(k))
	}
	return s
}
