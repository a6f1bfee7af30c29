package db

import (
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
)

// memKey is the i-th key of the memory tests: 16 bytes, db_bench style.
func memKey(i int) []byte { return []byte(fmt.Sprintf("%016d", i)) }

// fillDistinct writes keys 0..n-1 once each, in a scrambled order, with
// 100-byte values that compress to about half (50 random bytes, then 50
// copies of one), as db_bench's do.
func fillDistinct(t *testing.T, d *DB, n int) {
	t.Helper()
	rng := rand.New(rand.NewSource(int64(n)))
	val := make([]byte, 100)
	for j := 0; j < n; j++ {
		rng.Read(val[:50])
		for k := 50; k < 100; k++ {
			val[k] = val[0]
		}
		i := (j * 7919) % n // 7919 is prime and does not divide n below
		if err := d.Put(memKey(i), val, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFilterMemory checks that the filters held in memory are what their
// budget says: bits_per_key × keys / 8 bytes, within 5%, for the Bloom and
// blocked Bloom policies, with the keys spread over many level-0 tables
// (flushes only) and after a full compaction.
func TestFilterMemory(t *testing.T) {
	const n = 200_000
	if n%7919 == 0 {
		t.Fatal("the scramble needs n coprime to 7919")
	}
	for _, pc := range []struct {
		name string
		p    filter.Policy
		bits int
	}{
		{"bloom10", filter.NewBloomPolicy(10), 10},
		{"blockedbloom10", filter.NewBlockedBloomPolicy(10), 10},
		{"bloom16", filter.NewBloomPolicy(16), 16},
	} {
		for _, compact := range []bool{false, true} {
			d := mustOpen(t, t.TempDir(), &Options{
				FilterPolicy:                pc.p,
				WriteBufferSize:             1 << 20,
				DisableAutomaticCompactions: !compact,
			})
			fillDistinct(t, d, n)
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			if compact {
				if err := d.CompactRange(nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			m := d.Metrics()
			want := float64(pc.bits) * n / 8
			ratio := float64(m.FilterBytes) / want
			t.Logf("%s, compacted %v: %d tables hold %d filter bytes for %d keys: %.4f of %d×n/8",
				pc.name, compact, m.TablesOpen, m.FilterBytes, n, ratio, pc.bits)
			if ratio < 0.95 || ratio > 1.05 {
				t.Errorf("%s, compacted %v: filter bytes %d are %.3f of the budget %.0f (want within 5%%)",
					pc.name, compact, m.FilterBytes, ratio, want)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestHeapDuringReads checks the engine's steady-state memory during
// random reads: the live Go heap it adds (measured after a collection,
// against the heap before Open) stays within 1.5× of what it is meant to
// hold: the block cache, the filters, the indexes and the memtables.
// Tables are read through memory maps, which are page cache, not heap.
func TestHeapDuringReads(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 300k keys")
	}
	const n = 300_000
	dir := t.TempDir()
	o := &Options{BlockCacheSize: 8 << 20, WriteBufferSize: 4 << 20}
	d := mustOpen(t, dir, o)
	fillDistinct(t, d, n)
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	liveHeap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := liveHeap()
	d = mustOpen(t, dir, o)
	defer d.Close()
	rng := rand.New(rand.NewSource(1))
	var worst float64
	for round := 0; round < 4; round++ {
		for j := 0; j < 100_000; j++ {
			if _, err := d.Get(memKey(rng.Intn(n)), nil); err != nil {
				t.Fatal(err)
			}
		}
		heap := liveHeap()
		m := d.Metrics()
		// The memtable's arena grows in slabs of up to 1 MiB beyond what
		// MemTableBytes counts; allow one slab.
		budget := m.BlockCacheCapacity + m.FilterBytes + m.IndexBytes + m.MemTableBytes + 1<<20
		added := int64(heap) - int64(base)
		ratio := float64(added) / float64(budget)
		worst = max(worst, ratio)
		t.Logf("round %d: heap added %.2f MiB; cache %.2f/%.2f MiB, filters %.2f MiB, indexes %.2f MiB, memtable %.2f MiB: %.2f× the budget",
			round, mib(added), mib(m.BlockCacheSize), mib(m.BlockCacheCapacity), mib(m.FilterBytes), mib(m.IndexBytes), mib(m.MemTableBytes), ratio)
		if m.BlockCacheSize < m.BlockCacheCapacity/2 {
			t.Fatalf("the block cache holds only %d bytes: the reads did not fill it", m.BlockCacheSize)
		}
	}
	if worst > 1.5 {
		t.Errorf("the live heap reached %.2f× (block cache + filters + indexes + memtables), want at most 1.5×", worst)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// TestMappedTableLimit: tables are mapped up to the limit and read with
// pread past it, the count of mapped tables follows opens and closes, and
// reads are right either way.
func TestMappedTableLimit(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, &Options{WriteBufferSize: 64 << 10, DisableAutomaticCompactions: true})
	const n = 20000
	fillDistinct(t, d, n)
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, dir, &Options{DisableAutomaticCompactions: true})
	d.loading.Wait() // Open loads the tables in the background
	tables := int64(d.Metrics().TablesOpen)
	if tables < 4 {
		t.Fatalf("only %d tables", tables)
	}
	mapped := d.tables.mapped.Load()
	t.Logf("%d tables open, %d mapped", tables, mapped)
	if mapped != 0 && mapped != tables { // 0 where files cannot be mapped
		t.Fatalf("%d of %d tables mapped, want all", mapped, tables)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if m := d.tables.mapped.Load(); m != 0 {
		t.Fatalf("%d tables still counted as mapped after Close", m)
	}
	if mapped == 0 {
		t.Skip("this platform's files cannot be mapped")
	}

	// Reopen with a limit of 2: open must not map more, reads stay right.
	d = mustOpen(t, dir, &Options{DisableAutomaticCompactions: true})
	defer d.Close()
	d.loading.Wait()
	d.tables.close() // drop the tables Open loaded, to reopen them lazily
	d.tables.closed.Store(false)
	d.tables.mapLimit = 2
	for i := 0; i < n; i += 7 {
		v, err := d.Get(memKey(i), nil)
		if err != nil || len(v) != 100 {
			t.Fatalf("Get(%d) = %d bytes, %v", i, len(v), err)
		}
	}
	if m := d.tables.mapped.Load(); m != 2 {
		t.Fatalf("%d tables mapped with a limit of 2", m)
	}
}

// TestGetAllocations: a Get allocates at most the value it returns, even
// when its block is not cached (the block is decoded into a recycled
// buffer), and a Get of an absent key allocates nothing. The block cache
// here holds about 2% of the blocks, so nearly every present Get misses.
func TestGetAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops recycled buffers at random under the race detector")
	}
	const n = 50_000
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	fillDistinct(t, d, n)
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, mmap := range []bool{true, false} {
		t.Run(fmt.Sprintf("mmap=%v", mmap), func(t *testing.T) {
			d := mustOpen(t, dir, &Options{BlockCacheSize: 128 << 10, DisableMmapReads: !mmap})
			defer d.Close()
			rng := rand.New(rand.NewSource(3))
			perGet := func(present bool, gets int) float64 {
				keys := make([][]byte, gets)
				for j := range keys {
					i := rng.Intn(n)
					if !present {
						i += n // keys n..2n-1 were never written
					}
					keys[j] = memKey(i)
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for j, k := range keys {
					v, err := d.Get(k, nil)
					if present && (err != nil || len(v) != 100) {
						t.Fatalf("Get(%s): %d bytes, %v", keys[j], len(v), err)
					}
					if !present && !errors.Is(err, ErrNotFound) {
						t.Fatalf("Get(absent %s): %v", keys[j], err)
					}
				}
				runtime.ReadMemStats(&after)
				return float64(after.Mallocs-before.Mallocs) / float64(len(keys))
			}
			perGet(true, 5_000) // fill the cache and the buffer pools
			h0, m0 := d.cache.Stats()
			present := perGet(true, 20_000)
			h1, m1 := d.cache.Stats()
			absent := perGet(false, 20_000)
			missRate := float64(m1-m0) / float64(h1-h0+m1-m0)
			t.Logf("present Get: %.3f allocations (block cache miss rate %.2f); absent Get: %.3f", present, missRate, absent)
			if missRate < 0.9 {
				t.Fatalf("block cache miss rate %.2f: the test meant nearly every Get to miss", missRate)
			}
			if present > 1.02 {
				t.Errorf("a present Get allocates %.3f times, want at most 1 (the value)", present)
			}
			if absent > 0.01 {
				t.Errorf("an absent Get allocates %.3f times, want 0", absent)
			}
		})
	}
}
