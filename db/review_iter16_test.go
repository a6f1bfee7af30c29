package db

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/vfs"
)

// Review 16: MultiGet's memtable fast path (memTables with
// MemTable.FilterHashes), levelMarks (level 0 marks only l0Checked and
// l0Passed), and the Bloom batch probe's rounds, through the DB.

func r16Key(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }

// r16Keys draws n keys over [0, 3500): present at some level or not,
// with repeats and the empty key.
func r16Keys(rng *rand.Rand, n int) [][]byte {
	keys := make([][]byte, n)
	for j := range keys {
		switch rng.Intn(30) {
		case 0:
			keys[j] = nil
		case 1:
			if j > 0 {
				keys[j] = keys[rng.Intn(j)]
				continue
			}
			fallthrough
		default:
			keys[j] = r16Key(rng.Intn(3500))
		}
	}
	return keys
}

// r16Policies are the filter policies the store's tables are written
// with, table by table: v2 Bloom at 10 bits (k 6), at 2 bits (k 1, the
// rounds' allOnes) and at 4 bits (k 2), 30 bits (k 20), legacy Bloom, no
// filter, LevelDB's Bloom. Policies of one name share a batch.
var r16Policies = []filter.Policy{
	filter.NewBloomPolicy(10), filter.NewBloomPolicy(2), filter.NewBloomPolicy(4),
	filter.NewBloomPolicy(30), filter.NewLegacyBloomPolicy(10), filter.None,
	filter.NewLevelDBBloomPolicy(10),
}

// r16Store builds a store in fs: a deeper level from a compaction of
// every even key (and some odd ones), then nL0 level-0 tables, each of
// overlapping key ranges with overwrites and deletions of the deeper
// keys, each written under policies[t % len(policies)] (the DB reopened
// for each). It returns the DB opened for reads with compactions off.
func r16Store(t *testing.T, fs vfs.FS, rng *rand.Rand, nL0 int, policies []filter.Policy, o *Options) *DB {
	t.Helper()
	opts := func(p filter.Policy) *Options {
		c := *o
		c.FS, c.DisableAutomaticCompactions, c.FilterPolicy = fs, true, p
		return &c
	}
	// The deeper levels: rounds of writes of the even keys (and some odd
	// ones), each under another policy, compacted automatically with
	// small targets so that they spread over several levels of many
	// tables, older versions deeper.
	var d *DB
	for round := 0; round < 4; round++ {
		c := opts(policies[round%len(policies)])
		c.DisableAutomaticCompactions = false
		c.WriteBufferSize, c.LBaseMaxBytes, c.TargetFileSize, c.LevelMultiplier = 16<<10, 16<<10, 2<<10, 2
		c.L0CompactionTrigger = 1
		d = mustOpen(t, "/db", c)
		for i := round % 2; i < 3500; i += 2 + 12*(round%2) {
			r15Write(t, d, r16Key(i), rng.Intn(10) == 0, fmt.Sprintf("base%d-%d-%x", round, i, rng.Uint64()))
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		waitCompactions(t, d)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	d = mustOpen(t, "/db", opts(policies[0]))
	if n := r14bL0Count(d); n != 0 {
		t.Fatalf("%d level-0 tables left by the compactions", n)
	}
	for tb := 0; tb < nL0; tb++ {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		d = mustOpen(t, "/db", opts(policies[tb%len(policies)]))
		lo := rng.Intn(3000)
		hi := min(3500, lo+200+rng.Intn(1500))
		for i := lo; i < hi; i += 1 + rng.Intn(4) {
			r15Write(t, d, r16Key(i), rng.Intn(6) == 0, fmt.Sprintf("t%d-%d", tb, i))
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", opts(policies[0]))
	if n := r14bL0Count(d); n != nL0 {
		t.Fatalf("%d level-0 tables, want %d", n, nL0)
	}
	return d
}

// TestR16MultiGetLevels compares MultiGet and MultiGetInto with a Get
// loop, answers and every filter counter (memtable, total and per
// level), on stores of 1 to 9 level-0 tables (9 reads as Get does) over
// a deeper level, the tables of one policy or of mixed policies (v2
// Bloom at several k, legacy, none, LevelDB's), with and without a live
// memtable, at the latest state and at a snapshot.
func TestR16MultiGetLevels(t *testing.T) {
	for _, tc := range []struct {
		nL0      int
		policies []filter.Policy
	}{
		{1, r16Policies[:1]}, {2, r16Policies[:1]}, {3, r16Policies[:1]}, {8, r16Policies[:1]}, {9, r16Policies[:1]},
		{2, r16Policies[1:3]}, {5, r16Policies}, {7, r16Policies}, {8, r16Policies}, {9, r16Policies},
		{4, []filter.Policy{filter.NewLegacyBloomPolicy(10)}},
		{6, []filter.Policy{filter.NewBloomPolicy(10), filter.NewBloomPolicy(1), filter.NewBloomPolicy(20)}},
	} {
		t.Run(fmt.Sprintf("L0=%d/policies=%d", tc.nL0, len(tc.policies)), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(tc.nL0*10 + len(tc.policies))))
			d := r16Store(t, vfs.NewMem(), rng, tc.nL0, tc.policies, &Options{BlockSize: 256, MultiGetParallelism: 2})
			defer d.Close()
			snap := d.NewSnapshot()
			defer snap.Release()
			for _, n := range []int{2, 3, 8, 63, 64, 65, 130} {
				for rep := 0; rep < 3; rep++ {
					r15CompareQuiet(t, d, r16Keys(rng, n), nil)
				}
			}
			// A live memtable: overwrites and deletions of some keys.
			for i := 0; i < 300; i++ {
				r15Write(t, d, r16Key(rng.Intn(3500)), rng.Intn(4) == 0, fmt.Sprintf("mem-%d", i))
			}
			for _, n := range []int{2, 17, 64, 65, 200} {
				for rep := 0; rep < 3; rep++ {
					keys := r16Keys(rng, n)
					r15CompareQuiet(t, d, keys, nil)
					r15CompareQuiet(t, d, keys, &ReadOptions{Snapshot: snap})
				}
			}
		})
	}
}

// TestR16MultiGetImmAndMemOverLevels holds a flush so that an immutable
// memtable and a mutable one sit over level-0 tables and a deeper level,
// with and without memtable filters, and compares MultiGet with a Get
// loop (answers and counters) for batches of keys of every layer.
func TestR16MultiGetImmAndMemOverLevels(t *testing.T) {
	for _, noFilter := range []bool{false, true} {
		t.Run(fmt.Sprintf("noMemFilter=%v", noFilter), func(t *testing.T) {
			gate := newR15Gate()
			fs := vfs.NewFaultFS(vfs.NewMem(), gate)
			rng := rand.New(rand.NewSource(16))
			d := r16Store(t, fs, rng, 3, r16Policies[:2], &Options{BlockSize: 256, MultiGetParallelism: 2,
				WriteBufferSize: 4 << 20, DisableMemTableFilter: noFilter})
			defer d.Close()
			defer gate.release()
			var immKeys [][]byte
			for i := 0; i < 400; i++ {
				k := r16Key(rng.Intn(3500))
				immKeys = append(immKeys, k)
				r15Write(t, d, k, rng.Intn(6) == 0, fmt.Sprintf("imm-%d", i))
			}
			snap := d.NewSnapshot()
			defer snap.Release()
			flushed := gate.holdFlush(t, d)
			check := func() {
				for _, n := range []int{2, 5, 64, 65, 190} {
					for rep := 0; rep < 3; rep++ {
						keys := r16Keys(rng, n)
						for j := range keys {
							if rng.Intn(3) == 0 {
								keys[j] = immKeys[rng.Intn(len(immKeys))]
							}
						}
						r15CompareQuiet(t, d, keys, nil)
						r15CompareQuiet(t, d, keys, &ReadOptions{Snapshot: snap})
					}
				}
			}
			check() // the mutable memtable empty
			for i := 0; i < 200; i++ {
				k := immKeys[rng.Intn(len(immKeys))]
				if i%2 == 0 {
					k = r16Key(rng.Intn(3500))
				}
				r15Write(t, d, k, rng.Intn(5) == 0, fmt.Sprintf("mem-%d", i))
			}
			check()
			gate.release()
			if err := <-flushed; err != nil {
				t.Fatal(err)
			}
			check()
		})
	}
}

// r16MultiGetRS is multiGet's body for the read state rs at seq (no
// range tombstones, at most 8 level-0 tables), on a fresh scratch.
func r16MultiGetRS(d *DB, rs *readState, keys [][]byte, seq uint64) ([][]byte, []error) {
	values, errs := make([][]byte, len(keys)), make([]error, len(keys))
	d.m.gets.Add(int64(len(keys)))
	pending := make([]int, 0, len(keys))
	sc := new(mgScratch)
	mg := &sc.mg
	*mg = multiGet{d: d, keys: keys, values: values, errs: errs, seq: seq, sc: sc}
	if rs.mem.Empty() && (rs.imm == nil || rs.imm.Empty()) {
		for i := range keys {
			pending = append(pending, i)
		}
	} else {
		pending = mg.memTables(rs, pending)
	}
	if len(pending) > 0 {
		mg.deeper(rs.v, pending, len(pending) == len(keys))
	}
	return values, errs
}

// TestR16MemTablesReadStates: memTables (its fast path for keys every
// filter rules out, and the search loop) against getPoint on read states
// of every memtable shape: mutable and immutable each filtered (of 64
// bits, always saturated, or roomy), unfiltered, or empty; the immutable
// one absent; keys of either, both, neither; at several sequence
// numbers. Answers and memtable filter counters must be Get's.
func TestR16MemTablesReadStates(t *testing.T) {
	d := r16Store(t, vfs.NewMem(), rand.New(rand.NewSource(3)), 2, r16Policies[:1], &Options{BlockSize: 256})
	defer d.Close()
	ref := d.loadReadState()
	defer ref.unref()
	v := ref.rs.v
	base0 := d.visibleSeq.Load()
	type shape int
	const (
		none shape = iota
		empty
		unfiltered
		tiny
		roomy
	)
	mk := func(s shape, rng *rand.Rand, seq0 uint64, tag string) *memtable.MemTable {
		var m *memtable.MemTable
		switch s {
		case none:
			return nil
		case unfiltered:
			m = memtable.New()
		case tiny:
			m = memtable.NewWithFilter(1)
		case empty, roomy:
			m = memtable.NewWithFilter(1 << 16)
		}
		if s == empty {
			return m
		}
		for i := 0; i < 200; i++ {
			kind := base.KindSet
			if rng.Intn(5) == 0 {
				kind = base.KindDelete
			}
			m.Add(seq0+uint64(i), kind, r16Key(rng.Intn(3500)), []byte(fmt.Sprintf("%s-%d", tag, i)))
		}
		return m
	}
	rng := rand.New(rand.NewSource(16))
	for _, ms := range []shape{empty, unfiltered, tiny, roomy} {
		for _, is := range []shape{none, empty, unfiltered, tiny, roomy} {
			if ms == empty && (is == none || is == empty) {
				continue // multiGet does not call memTables
			}
			imm := mk(is, rng, base0+1, "imm")
			mem := mk(ms, rng, base0+1000, "mem")
			rs := &readState{d: d, mem: mem, imm: imm, v: v}
			for _, seq := range []uint64{base0, base0 + 100, base0 + 1100, base.MaxSeqNum} {
				for _, n := range []int{2, 7, 64, 65, 150} {
					keys := r16Keys(rng, n)
					c0 := r15Count(d)
					want, wantErr := make([][]byte, n), make([]error, n)
					for i, k := range keys {
						want[i], wantErr[i] = d.get(rs, k, seq)
					}
					c1 := r15Count(d)
					got, gotErr := r16MultiGetRS(d, rs, keys, seq)
					c2 := r15Count(d)
					for i := range keys {
						if !review9bSame(got[i], gotErr[i], want[i], wantErr[i]) {
							t.Fatalf("mem %d imm %d seq %d: [%d] %q = %q, %v; get = %q, %v", ms, is, seq, i, keys[i], got[i], gotErr[i], want[i], wantErr[i])
						}
					}
					if loop, multi := c1.sub(c0), c2.sub(c1); loop != multi {
						t.Fatalf("mem %d imm %d seq %d, %d keys: counters of get %+v, of the batch %+v", ms, is, seq, n, loop, multi)
					}
				}
			}
		}
	}
}

// TestR16MultiGetConcurrentMemWrites: MultiGets at snapshots, compared
// with Get at the same snapshot, while a writer adds keys to the
// memtable (whose filter words the batch reads with FilterHashes while
// the writer ORs bits in) and flushes now and then (an immutable
// memtable beside the mutable one). Run with -race.
func TestR16MultiGetConcurrentMemWrites(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), BlockSize: 256, MultiGetParallelism: 2,
		WriteBufferSize: 32 << 10, L0CompactionTrigger: 4})
	defer d.Close()
	stop := make(chan struct{})
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewSource(5))
		for {
			select {
			case <-stop:
				return
			default:
			}
			snap := d.NewSnapshot()
			keys := r16Keys(rng, []int{2, 9, 64, 65, 140}[rng.Intn(5)])
			err := r14bSameAtSnapshot(d, keys, snap)
			snap.Release()
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	rng := rand.New(rand.NewSource(6))
	rounds := 40
	if raceEnabled {
		rounds = 10
	}
	for r := 0; r < rounds; r++ {
		for j := 0; j < 300; j++ {
			r15Write(t, d, r16Key(rng.Intn(3500)), rng.Intn(6) == 0, fmt.Sprintf("r%d-%d", r, j))
		}
		if r%5 == 4 {
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	<-done
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}
