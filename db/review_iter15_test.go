package db

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

// Review 15: MultiGet's level-0 range checks on 8-byte windows
// (manifest.Version.InRangeLevel0) and its memtable filter checks in the hashing
// pass (memPass), and the tables' index search on windows
// (sstable.seekIndex), which every Get and MultiGet goes through.

// r15Families are the user keys the level-0 tables are written from:
// keys sharing a 20-byte prefix that differ only after the 8 bytes
// following it, short keys (the empty key included), all-0xff keys, keys
// that are prefixes of each other, and decimal keys.
var r15Families = []func(i int) []byte{
	func(i int) []byte { return []byte(fmt.Sprintf("tenant:000000000001:aaaaaaaa%06d", i)) },
	func(i int) []byte { return []byte(fmt.Sprintf("%d", i%97))[:i%3] },
	func(i int) []byte { return bytes.Repeat([]byte{0xff}, 1+i%19) },
	func(i int) []byte { return bytes.Repeat([]byte("p"), i%23) },
	func(i int) []byte { return []byte(fmt.Sprintf("%016d", i*7)) },
	func(i int) []byte { return []byte(fmt.Sprintf("tenant:000000000001:aaaaaaab%03d", i%500)) },
}

// r15Probe draws a batch of n keys: keys of every family (present or
// not), their extensions and truncations, repeats and the empty key.
func r15Probe(rng *rand.Rand, n int) [][]byte {
	keys := make([][]byte, n)
	for j := range keys {
		k := r15Families[rng.Intn(len(r15Families))](rng.Intn(3000))
		switch rng.Intn(12) {
		case 0:
			k = append(bytes.Clone(k), 0)
		case 1:
			k = k[:len(k)/2]
		case 2:
			if j > 0 {
				k = keys[rng.Intn(j)]
			}
		case 3:
			k = nil
		case 4:
			k = append(bytes.Clone(k), 0xff)
		}
		keys[j] = k
	}
	return keys
}

// r15Counters are the counters a Get loop and a MultiGet of the same keys
// must move alike.
type r15Counters struct {
	levels [NumLevels]FilterMetrics
	mem    FilterMetrics
	gets   int64
}

func r15Count(d *DB) r15Counters {
	m := d.Metrics()
	var c r15Counters
	for l := range m.Levels {
		c.levels[l] = m.Levels[l].Filter
	}
	c.mem, c.gets = m.MemTableFilter, m.Gets
	return c
}

func (c r15Counters) sub(o r15Counters) r15Counters {
	for l := range c.levels {
		c.levels[l].Checks -= o.levels[l].Checks
		c.levels[l].Useful -= o.levels[l].Useful
		c.levels[l].Positives -= o.levels[l].Positives
		c.levels[l].TruePositives -= o.levels[l].TruePositives
	}
	c.mem.Checks -= o.mem.Checks
	c.mem.Useful -= o.mem.Useful
	c.mem.Positives -= o.mem.Positives
	c.mem.TruePositives -= o.mem.TruePositives
	c.gets -= o.gets
	return c
}

// r15CompareQuiet compares MultiGet and MultiGetInto with a Get loop at
// ro, answers and (the store being idle, no other reader) the counters
// each moved.
func r15CompareQuiet(t *testing.T, d *DB, keys [][]byte, ro *ReadOptions) {
	t.Helper()
	c0 := r15Count(d)
	want := make([][]byte, len(keys))
	wantErr := make([]error, len(keys))
	for i, k := range keys {
		want[i], wantErr[i] = d.Get(k, ro)
	}
	c1 := r15Count(d)
	vals, errs := d.MultiGet(keys, ro)
	c2 := r15Count(d)
	iv, ie := make([][]byte, len(keys)), make([]error, len(keys))
	if err := d.MultiGetInto(keys, iv, ie, ro); err != nil {
		t.Fatal(err)
	}
	c3 := r15Count(d)
	for i, k := range keys {
		if !review9bSame(vals[i], errs[i], want[i], wantErr[i]) {
			t.Fatalf("MultiGet(%d keys)[%d] %q = %q, %v; Get = %q, %v", len(keys), i, k, vals[i], errs[i], want[i], wantErr[i])
		}
		if !review9bSame(iv[i], ie[i], want[i], wantErr[i]) {
			t.Fatalf("MultiGetInto(%d keys)[%d] %q = %q, %v; Get = %q, %v", len(keys), i, k, iv[i], ie[i], want[i], wantErr[i])
		}
	}
	loop, multi, into := c1.sub(c0), c2.sub(c1), c3.sub(c2)
	if loop != multi || loop != into {
		t.Fatalf("%d keys: counters moved by the Get loop %+v, by MultiGet %+v, by MultiGetInto %+v", len(keys), loop, multi, into)
	}
}

// r15Write writes family f's key i (a deletion when del).
func r15Write(t testing.TB, d *DB, k []byte, del bool, v string) {
	t.Helper()
	var err error
	if del {
		err = d.Delete(k, nil)
	} else {
		err = d.Put(k, []byte(v), nil)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// r15L0Store writes level-0 tables (compactions off), each from some of
// the families over part of their range, so that the tables' bounds share
// long prefixes, are short, empty or all 0xff, and overlap.
func r15L0Store(t *testing.T, fs vfs.FS, rng *rand.Rand, ntables int, ldb bool) *DB {
	t.Helper()
	o := &Options{FS: fs, DisableAutomaticCompactions: true, BlockSize: 256, MultiGetParallelism: 2, WriteBufferSize: 4 << 20}
	if ldb {
		o.Format, o.FilterPolicy = FormatLevelDB, filter.NewLevelDBBloomPolicy(10)
	}
	d := mustOpen(t, "/db", o)
	for tb := 0; tb < ntables; tb++ {
		// Table tb holds family tb (mod 6), and another one for some:
		// family 0 alone gives bounds sharing 28 bytes.
		fams := []int{tb % len(r15Families)}
		if tb%3 == 2 {
			fams = append(fams, rng.Intn(len(r15Families)))
		}
		for _, f := range fams {
			lo := rng.Intn(3000)
			hi := min(3000, lo+1+rng.Intn(600))
			for i := lo; i < hi; i += 1 + rng.Intn(3) {
				r15Write(t, d, r15Families[f](i), rng.Intn(7) == 0, fmt.Sprintf("t%d-%d", tb, i))
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// TestR15MultiGetLevel0Bounds compares MultiGet with a Get loop on
// stores of 1 to 8 level-0 tables whose bounds share long prefixes, are
// shorter than 8 bytes, empty or all 0xff, for batches of 2 to 200 keys
// (several chunks of 64), at the latest state and at a snapshot, with a
// live memtable over the tables or none.
func TestR15MultiGetLevel0Bounds(t *testing.T) {
	for _, tc := range []struct {
		ntables int
		ldb     bool
	}{{1, false}, {3, false}, {8, false}, {8, true}} {
		ntables := tc.ntables
		t.Run(fmt.Sprintf("L0=%d/leveldb=%v", ntables, tc.ldb), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(ntables)))
			d := r15L0Store(t, vfs.NewMem(), rng, ntables, tc.ldb)
			defer d.Close()
			if n := r14bL0Count(d); n != ntables {
				t.Fatalf("%d level-0 tables, want %d", n, ntables)
			}
			// The tables' bounds: at least one pair sharing more than 8
			// bytes, and one bound shorter than 8 bytes, for the test to
			// reach InRangeLevel0's paths.
			ref := d.loadReadState()
			long, short := false, false
			for _, f := range ref.rs.v.Files[0] {
				lo, hi := f.Smallest[:len(f.Smallest)-8], f.Largest[:len(f.Largest)-8]
				cp := 0
				for cp < len(lo) && cp < len(hi) && lo[cp] == hi[cp] {
					cp++
				}
				long = long || cp > 8
				short = short || len(lo) < 8 || len(hi) < 8
			}
			ref.unref()
			if ntables == 8 && (!long || !short) {
				t.Fatalf("level-0 bounds: long prefix %v, short bound %v", long, short)
			}
			snap := d.NewSnapshot()
			defer snap.Release()
			for _, n := range []int{2, 3, 17, 64, 65, 129, 200} {
				for rep := 0; rep < 3; rep++ {
					keys := r15Probe(rng, n)
					r15CompareQuiet(t, d, keys, nil)
				}
			}
			// A live memtable over the tables: overwrites and deletions of
			// some keys, then batches at the latest state and at the
			// snapshot taken before them.
			for i := 0; i < 400; i++ {
				f := rng.Intn(len(r15Families))
				r15Write(t, d, r15Families[f](rng.Intn(3000)), rng.Intn(4) == 0, fmt.Sprintf("mem-%d", i))
			}
			for _, n := range []int{2, 64, 65, 200} {
				for rep := 0; rep < 3; rep++ {
					keys := r15Probe(rng, n)
					r15CompareQuiet(t, d, keys, nil)
					r15CompareQuiet(t, d, keys, &ReadOptions{Snapshot: snap})
				}
			}
		})
	}
}

// r15Gate blocks the creation of table files while closed, holding a
// flush with its memtable frozen (imm) while writes go to a new one.
type r15Gate struct {
	mu      sync.Mutex
	closed  bool
	open    chan struct{}
	blocked atomic.Int32
}

func newR15Gate() *r15Gate { return &r15Gate{open: make(chan struct{})} }

// holdFlush closes the gate, starts d.Flush, and waits until the flush
// is stopped at its table's creation with the memtable immutable; the
// flush's error comes on the channel once the gate is released.
func (g *r15Gate) holdFlush(t *testing.T, d *DB) <-chan error {
	t.Helper()
	g.close()
	flushed := make(chan error, 1)
	go func() { flushed <- d.Flush() }()
	deadline := time.Now().Add(10 * time.Second)
	for g.blocked.Load() == 0 || d.Metrics().ImmutableMemTables != 1 {
		if time.Now().After(deadline) {
			g.release()
			t.Fatal("the flush never reached the table's creation")
		}
		time.Sleep(time.Millisecond)
	}
	return flushed
}

func (g *r15Gate) MaybeInject(op vfs.Op, path string) error {
	if op != vfs.OpCreate || !strings.HasSuffix(path, ".sst") {
		return nil
	}
	g.mu.Lock()
	closed, ch := g.closed, g.open
	g.mu.Unlock()
	if closed {
		g.blocked.Add(1)
		<-ch
		g.blocked.Add(-1)
	}
	return nil
}

func (g *r15Gate) close() {
	g.mu.Lock()
	g.closed, g.open = true, make(chan struct{})
	g.mu.Unlock()
}

// release opens the gate (a no-op when open), letting blocked creations
// through.
func (g *r15Gate) release() {
	g.mu.Lock()
	if g.closed {
		g.closed = false
		close(g.open)
	}
	g.mu.Unlock()
}

// TestR15MultiGetImmutableAndMutable holds a flush so that the store has
// an immutable memtable (its writes) and a mutable one (newer writes,
// overwriting and deleting some of them), over level-0 tables, and
// compares MultiGet with a Get loop (answers and memtable and table
// filter counters) at the latest state and at snapshots taken before and
// between the writes, then again once the flush is let through.
func TestR15MultiGetImmutableAndMutable(t *testing.T) {
	for _, noFilter := range []bool{false, true} {
		t.Run(fmt.Sprintf("noMemFilter=%v", noFilter), func(t *testing.T) {
			gate := newR15Gate()
			fs := vfs.NewFaultFS(vfs.NewMem(), gate)
			rng := rand.New(rand.NewSource(15))
			d := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true, BlockSize: 256,
				MultiGetParallelism: 2, WriteBufferSize: 4 << 20, DisableMemTableFilter: noFilter})
			defer d.Close()
			defer gate.release() // before Close, should a check fail while the flush is held
			// Two level-0 tables.
			for tb := 0; tb < 2; tb++ {
				for i := 0; i < 800; i++ {
					f := rng.Intn(len(r15Families))
					r15Write(t, d, r15Families[f](rng.Intn(3000)), rng.Intn(8) == 0, fmt.Sprintf("l0-%d-%d", tb, i))
				}
				if err := d.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			snap0 := d.NewSnapshot()
			defer snap0.Release()
			// Writes that will be the immutable memtable.
			var immKeys [][]byte
			for i := 0; i < 500; i++ {
				k := r15Families[rng.Intn(len(r15Families))](rng.Intn(3000))
				immKeys = append(immKeys, k)
				r15Write(t, d, k, rng.Intn(6) == 0, fmt.Sprintf("imm-%d", i))
			}
			snap1 := d.NewSnapshot()
			defer snap1.Release()
			check := func() {
				for _, n := range []int{2, 3, 63, 64, 65, 130, 257} {
					for rep := 0; rep < 2; rep++ {
						keys := r15Probe(rng, n)
						// Half the keys from the memtables' writes.
						for j := range keys {
							if rng.Intn(2) == 0 {
								keys[j] = immKeys[rng.Intn(len(immKeys))]
							}
						}
						r15CompareQuiet(t, d, keys, nil)
						r15CompareQuiet(t, d, keys, &ReadOptions{Snapshot: snap0})
						r15CompareQuiet(t, d, keys, &ReadOptions{Snapshot: snap1})
					}
				}
			}
			flushed := gate.holdFlush(t, d)
			// With the mutable memtable still empty: only the immutable
			// one answers.
			check()
			// Newer writes in the mutable memtable: overwrites and
			// deletions of the immutable one's keys, and others.
			for i := 0; i < 300; i++ {
				k := immKeys[rng.Intn(len(immKeys))]
				if i%3 == 0 {
					k = r15Families[rng.Intn(len(r15Families))](rng.Intn(3000))
				}
				r15Write(t, d, k, rng.Intn(5) == 0, fmt.Sprintf("mem-%d", i))
			}
			if m := d.Metrics(); m.ImmutableMemTables != 1 {
				t.Fatalf("%d immutable memtables, want 1", m.ImmutableMemTables)
			}
			check()
			// The memtable filter must have answered keys of both
			// memtables (else the test reached neither's bits).
			if m := d.Metrics(); !noFilter && (m.MemTableFilter.TruePositives == 0 || m.MemTableFilter.Useful == 0) {
				t.Fatalf("memtable filter %+v", m.MemTableFilter)
			}
			gate.release()
			if err := <-flushed; err != nil {
				t.Fatal(err)
			}
			check()
		})
	}
}

// TestR15MultiGetRacingFlushes runs MultiGets at snapshots, compared with
// Get at the same snapshot, while a writer overwrites and deletes keys of
// every family and flushes often (so the batches meet an immutable
// memtable being flushed, new level-0 tables, and compactions), and one
// more reader runs until Close.
func TestR15MultiGetRacingFlushes(t *testing.T) {
	rounds := 300
	if raceEnabled {
		rounds = 60
	}
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), BlockSize: 256, MultiGetParallelism: 4,
		WriteBufferSize: 64 << 10, L0CompactionTrigger: 4})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errc := make(chan error, 8)
	var reads atomic.Int64
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(c) + 100))
			for {
				select {
				case <-stop:
					return
				default:
				}
				snap := d.NewSnapshot()
				err := r14bSameAtSnapshot(d, r15Probe(rng, []int{2, 17, 64, 65, 150}[rng.Intn(5)]), snap)
				snap.Release()
				if err != nil {
					errc <- err
					return
				}
				reads.Add(1)
			}
		}()
	}
	// A reader that keeps going through Close: its batches must end
	// with answers or ErrClosed, never a panic or a hang.
	closing := make(chan struct{})
	lateDone := make(chan struct{})
	go func() {
		defer close(lateDone)
		rng := rand.New(rand.NewSource(7))
		for {
			select {
			case <-closing:
				// A few more after Close began.
				for i := 0; i < 50; i++ {
					d.MultiGet(r15Probe(rng, 70), nil)
				}
				return
			default:
			}
			d.MultiGet(r15Probe(rng, 70), nil)
		}
	}()
	rng := rand.New(rand.NewSource(99))
	for r := 0; r < rounds; r++ {
		for j := 0; j < 150; j++ {
			k := r15Families[rng.Intn(len(r15Families))](rng.Intn(3000))
			r15Write(t, d, k, rng.Intn(5) == 0, fmt.Sprintf("r%d-%d-%s", r, j, strings.Repeat("v", rng.Intn(200))))
		}
		if r%4 == 0 {
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	close(closing)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lateDone:
	case <-time.After(20 * time.Second):
		t.Fatal("MultiGet hangs after Close")
	}
	vals, errs := d.MultiGet([][]byte{[]byte("a"), []byte("b")}, nil)
	for i := range errs {
		if errs[i] != ErrClosed || vals[i] != nil {
			t.Fatalf("MultiGet after Close: %q, %v", vals[i], errs[i])
		}
	}
	if reads.Load() < 10 {
		t.Errorf("only %d batches compared", reads.Load())
	}
}
