package db

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
)

// benchStores maps a key count to a store built once per test binary: a
// benchmark function runs several times (b.N = 1 first), and b.TempDir
// is removed after each run.
var (
	benchStores sync.Map
	benchRoot   string
	// benchKeep keeps the stores in a directory from run to run: a store
	// is built in the background, so two builds can end in different
	// shapes, and figures compared across runs (cachegrind's counts of
	// instructions, for one) must read the same one.
	benchKeep = flag.String("bench_stores", "", "build benchDB's stores in this directory once and reuse them in later runs (default: a temporary directory, removed)")
)

func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() == "" {
		// Tests of MultiGet's helpers need them used whatever else runs
		// on the machine (go test runs packages side by side): they see
		// idle processors, but for cpubusy_test.go's, which set their
		// own counts. Benchmarks see the machine's.
		idle := func() (int64, bool) { return 0, true }
		cpuLoad.source.Store(&idle)
	}
	code := m.Run()
	if benchRoot != "" && *benchKeep == "" {
		os.RemoveAll(benchRoot)
	}
	os.Exit(code)
}

// benchDB returns a store of n keys ("%016d" of 0, 2, 4, ...; 100-byte
// values), flushed and compacted, reopened so reads start cold.
func benchDB(b *testing.B, n int) *DB { return benchDBFormat(b, n, FormatDefault) }

// benchDBFormat is benchDB's store of n keys written in format f.
func benchDBFormat(b *testing.B, n int, f Format) *DB {
	b.Helper()
	key := fmt.Sprint(n, f)
	dir, ok := benchStores.Load(key)
	if !ok {
		if benchRoot == "" {
			r, err := *benchKeep, error(nil)
			if r != "" {
				err = os.MkdirAll(r, 0o755)
			} else {
				r, err = os.MkdirTemp("", "bloomkv-bench-")
			}
			if err != nil {
				b.Fatal(err)
			}
			benchRoot = r
		}
		d := fmt.Sprintf("%s/%d-%v", benchRoot, n, f)
		if _, err := os.Stat(d + "/built"); err == nil {
			benchStores.Store(key, d)
			return mustOpen(b, d, nil)
		}
		os.RemoveAll(d) // an unfinished build
		db := mustOpen(b, d, &Options{Format: f})
		rng := rand.New(rand.NewSource(1))
		val := make([]byte, 100)
		var batch Batch
		for _, i := range rng.Perm(n) {
			rng.Read(val[:50])
			copy(val[50:], val[:50])
			batch.Put([]byte(fmt.Sprintf("%016d", 2*i)), val)
			if batch.Count() == 1000 {
				if err := db.Write(&batch, nil); err != nil {
					b.Fatal(err)
				}
				batch.Reset()
			}
		}
		db.Write(&batch, nil)
		if err := db.CompactRange(nil, nil); err != nil {
			b.Fatal(err)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(d+"/built", nil, 0o644); err != nil {
			b.Fatal(err)
		}
		benchStores.Store(key, d)
		dir = d
	}
	return mustOpen(b, dir.(string), nil)
}

func BenchmarkGet(b *testing.B) {
	for _, tc := range []struct {
		name    string
		n       int
		present bool
	}{
		{"present", 200000, true},
		{"absent", 200000, false},
		// 20,000 keys (about 1.5 MiB of blocks) stay in the 8 MiB block
		// cache: what a Get costs when it reads no block.
		{"present-cached", 20000, true},
	} {
		n := tc.n
		b.Run(tc.name, func(b *testing.B) {
			d := benchDB(b, n)
			defer d.Close()
			if tc.name == "present-cached" {
				for i := 0; i < n; i++ { // load every block into the cache
					if _, err := d.Get([]byte(fmt.Sprintf("%016d", 2*i)), nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			keys := make([][]byte, 4096)
			rng := rand.New(rand.NewSource(2))
			for i := range keys {
				k := 2 * rng.Intn(n)
				if !tc.present {
					k++
				}
				keys[i] = []byte(fmt.Sprintf("%016d", k))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, err := d.Get(keys[i&4095], nil)
				if tc.present && err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetFormat compares Gets on the same keys in bloomkv's table
// format (a whole-table filter) and LevelDB's (a filter per 2 KiB of data
// blocks, found through the index): what opening a LevelDB store in
// place costs a read.
func BenchmarkGetFormat(b *testing.B) {
	const n = 200000
	for _, f := range []Format{FormatBloomKV, FormatLevelDB} {
		for _, present := range []bool{false, true} {
			name := f.String() + "/absent"
			if present {
				name = f.String() + "/present-cached"
			}
			b.Run(name, func(b *testing.B) {
				d := benchDBFormat(b, n, f)
				defer d.Close()
				keys := make([][]byte, 4096)
				rng := rand.New(rand.NewSource(2))
				for i := range keys {
					k := 2 * rng.Intn(n)
					if present {
						k = 2 * rng.Intn(n/20) // 10,000 keys: their blocks stay cached
					} else {
						k++
					}
					keys[i] = []byte(fmt.Sprintf("%016d", k))
				}
				for _, k := range keys {
					d.Get(k, nil) // warm the cache
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					_, err := d.Get(keys[i&4095], nil)
					if present && err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkGetParallel(b *testing.B) {
	const n = 200000
	d := benchDB(b, n)
	defer d.Close()
	// Keys are made up front, so the benchmark's own garbage does not make
	// the collector run more often than the engine's does.
	keys := make([][]byte, 1<<16)
	rng := rand.New(rand.NewSource(5))
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("%016d", 2*rng.Intn(n)))
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1) * 7919) // each goroutine starts elsewhere
		for pb.Next() {
			if _, err := d.Get(keys[i&(len(keys)-1)], nil); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

func BenchmarkPut(b *testing.B) {
	d := mustOpen(b, b.TempDir(), nil)
	defer d.Close()
	rng := rand.New(rand.NewSource(3))
	val := make([]byte, 100)
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("%016d", rng.Intn(1<<30)))
	}
	b.ReportAllocs()
	b.SetBytes(116)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Put(keys[i&(1<<16-1)], val, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSeekL0 seeks a new iterator per operation on a store whose data
// sits in several overlapping level-0 tables (db_bench's seekrandom).
func BenchmarkSeekL0(b *testing.B) {
	d := mustOpen(b, b.TempDir(), &Options{DisableAutomaticCompactions: true})
	defer d.Close()
	rng := rand.New(rand.NewSource(4))
	val := make([]byte, 100)
	const n = 600000
	for t := 0; t < 6; t++ {
		for i := 0; i < n/6; i++ {
			d.Put([]byte(fmt.Sprintf("%016d", rng.Intn(n))), val, nil)
		}
		d.Flush()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it := d.NewIterator(nil)
		it.Seek([]byte(fmt.Sprintf("%016d", rng.Intn(n))))
		it.Close()
	}
}

// missingFloor is what a lookup of an absent key cannot avoid on d's
// current tree: the memtable probe, and one filter probe per table whose key
// range holds the key.
type missingFloor struct {
	rs     *readState
	seq    uint64
	tables []floorTable
}

type floorTable struct {
	smallest, largest []byte
	r                 interface{ MayContain([]byte) bool }
}

func newMissingFloor(b *testing.B, d *DB, rs *readState) *missingFloor {
	f := &missingFloor{rs: rs, seq: d.visibleSeq.Load()}
	for _, files := range rs.v.Files {
		for _, m := range files {
			r, err := d.tables.get(m)
			if err != nil {
				b.Fatal(err)
			}
			f.tables = append(f.tables, floorTable{base.UserKey(m.Smallest), base.UserKey(m.Largest), r})
		}
	}
	return f
}

// lookup returns how many of the steps said "maybe".
func (f *missingFloor) lookup(k []byte) int {
	hits := 0
	if _, _, ok := f.rs.mem.Get(k, f.seq); ok {
		hits++
	}
	for _, t := range f.tables {
		if bytes.Compare(k, t.smallest) >= 0 && bytes.Compare(k, t.largest) <= 0 && t.r.MayContain(k) {
			hits++
		}
	}
	return hits
}

func absentKeys(n int) [][]byte {
	keys := make([][]byte, 4096)
	rng := rand.New(rand.NewSource(2))
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("%016d", 2*rng.Intn(n)+1))
	}
	return keys
}

// BenchmarkReadMissingFloor does only what a lookup of an absent key
// cannot avoid, on the same store as BenchmarkGet/absent: the memtable
// probes, and one filter probe per table whose key range holds the key.
// BenchmarkGet/absent divided by this is the read path's overhead;
// BenchmarkReadMissingVsFloor measures both side by side.
func BenchmarkReadMissingFloor(b *testing.B) {
	const n = 200000
	d := benchDB(b, n)
	defer d.Close()
	keys := absentKeys(n)
	ref := d.loadReadState()
	defer ref.unref()
	floor := newMissingFloor(b, d, ref.rs)
	b.ReportAllocs()
	b.ResetTimer()
	hits := 0
	for i := 0; i < b.N; i++ {
		hits += floor.lookup(keys[i&4095])
	}
	if hits > b.N/10 {
		b.Fatalf("%d filter hits for %d absent keys", hits, b.N)
	}
}

// BenchmarkReadMissingVsFloor runs Get of absent keys and their floor (see
// BenchmarkReadMissingFloor) on one store in one loop, alternating every
// 1024 lookups, and reports each one's time per lookup and their ratio:
// side by side, both see the same machine noise and the same tree.
//
//	go test ./db -run '^$' -bench ReadMissingVsFloor -benchtime 2000000x -count 5
func BenchmarkReadMissingVsFloor(b *testing.B) {
	const n = 200000
	d := benchDB(b, n)
	defer d.Close()
	keys := absentKeys(n)
	ref := d.loadReadState()
	defer ref.unref()
	floor := newMissingFloor(b, d, ref.rs)
	const chunk = 1024
	var getTime, floorTime time.Duration
	hits := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += chunk {
		t0 := time.Now()
		for j := i; j < i+chunk; j++ {
			if _, err := d.Get(keys[j&4095], nil); err == nil {
				hits++
			}
		}
		t1 := time.Now()
		for j := i; j < i+chunk; j++ {
			hits += floor.lookup(keys[j&4095])
		}
		getTime += t1.Sub(t0)
		floorTime += time.Since(t1)
	}
	lookups := float64((b.N + chunk - 1) / chunk * chunk)
	if float64(hits) > lookups/5 {
		b.Fatalf("%d hits for %.0f absent lookups", hits, lookups)
	}
	b.ReportMetric(float64(getTime)/lookups, "get-ns/op")
	b.ReportMetric(float64(floorTime)/lookups, "floor-ns/op")
	b.ReportMetric(float64(getTime)/float64(floorTime), "get/floor")
}

// BenchmarkMultiGet compares MultiGet with a loop of Get over the same
// batches of keys, on BenchmarkGet's 200,000-key store. One op is one key,
// so ns/op of "multi" and "loop" compare directly.
func BenchmarkMultiGet(b *testing.B) {
	const n = 200000
	for _, present := range []bool{false, true} {
		for _, size := range []int{1, 8, 64} {
			// multi1: MultiGetParallelism 1, every lookup in the caller;
			// into: MultiGetInto with results reused from batch to batch.
			for _, how := range []string{"loop", "multi", "multi1", "into"} {
				name := fmt.Sprintf("absent/batch=%d/%s", size, how)
				if present {
					name = fmt.Sprintf("present/batch=%d/%s", size, how)
				}
				b.Run(name, func(b *testing.B) {
					d := benchDB(b, n)
					defer d.Close()
					if how == "multi1" {
						d.opts.multiGetWorkers = 1
					}
					rng := rand.New(rand.NewSource(2))
					keys := make([][]byte, 4096)
					for i := range keys {
						k := 2 * rng.Intn(n)
						if !present {
							k++
						}
						keys[i] = []byte(fmt.Sprintf("%016d", k))
					}
					values, errs := make([][]byte, size), make([]error, size)
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i += size {
						start := i & 4095 &^ (size - 1)
						batch := keys[start : start+size]
						if how == "into" {
							if err := d.MultiGetInto(batch, values, errs, nil); err != nil {
								b.Fatal(err)
							}
							if present && errs[0] != nil {
								b.Fatal(errs[0])
							}
							continue
						}
						if how != "loop" {
							_, errs := d.MultiGet(batch, nil)
							if present && errs[0] != nil {
								b.Fatal(errs[0])
							}
							continue
						}
						for _, k := range batch {
							if _, err := d.Get(k, nil); present && err != nil {
								b.Fatal(err)
							}
						}
					}
				})
			}
		}
	}
}

var (
	pairedDB  = flag.String("paired_db", "", "BenchmarkMultiGetPaired: read this store kvbench wrote instead of a 200,000-key one")
	pairedNum = flag.Int("paired_num", 10000000, "BenchmarkMultiGetPaired with -paired_db: the store's kvbench --num")
	// pairedOnly runs one side, for counting its instructions alone
	// (cachegrind) on the paired benchmark's keys and store.
	pairedOnly = flag.String("paired_only", "", "BenchmarkMultiGetPaired: run only the loop of Get (loop) or only MultiGetInto (into) on every batch")
	// pairedTurn is the batches each side runs before the other's turn:
	// 1 interleaves a loop of Get between any two MultiGets, long enough
	// for MultiGet's helpers to go to sleep; more lets them stay awake,
	// as between MultiGets that follow one another.
	pairedTurn = flag.Int("paired_turn", 1, "BenchmarkMultiGetPaired: batches each side runs in a turn")
	// pairedParallelism measures MultiGet without helpers (1), or with
	// more than the default.
	pairedParallelism = flag.Int("paired_parallelism", 0, "BenchmarkMultiGetPaired: Options.MultiGetParallelism of the store (0: the default)")
	// pairedSize is the keys of a batch: fewer than 64 show the cost a
	// MultiGet call pays whatever its size.
	pairedSize = flag.Int("paired_size", 64, "BenchmarkMultiGetPaired: keys a batch (1 to 4096)")
)

// BenchmarkMultiGetPaired measures a loop of Get and MultiGetInto on
// batches of 64 keys (-paired_size) in alternation within one run: batch 2k through one,
// batch 2k+1 through the other, the order swapped every pair. On a machine
// whose speed drifts from second to second, two sub-benchmarks run one
// after the other can differ by 2x for the same code; interleaved, both
// see the same machine (-paired_turn=N: N batches a turn). One op is one
// key. It reports each one's ns a key (loop-ns/key, into-ns/key), their
// ratio (loop/into, above 1 when MultiGet is faster) and the lookups
// MultiGet's helpers ran per key (helped/key); ns/op is their mean.
//
// With -paired_db=DIR it reads a store kvbench wrote instead (opened
// read-only with a 64 MiB block cache, as kvbench's --cache_size=67108864
// does), whose --num is -paired_num: "present" keys are kvbench
// readrandom's (about 63% of them are in a fillrandom store) and
// "absent" ones readmissing's (the key less its last byte).
func BenchmarkMultiGetPaired(b *testing.B) {
	const n = 200000
	size := *pairedSize
	if size < 1 || size > 4096 {
		b.Fatalf("-paired_size=%d: want 1 to 4096", size)
	}
	if o := *pairedOnly; o != "" && o != "loop" && o != "into" {
		b.Fatalf("-paired_only=%q: want loop or into (or nothing, for both)", o)
	}
	turn := *pairedTurn
	if turn < 1 {
		b.Fatalf("-paired_turn=%d: want 1 or more", turn)
	}
	for _, present := range []bool{false, true} {
		name := "absent"
		if present {
			name = "present"
		}
		b.Run(name, func(b *testing.B) {
			var d *DB
			rng := rand.New(rand.NewSource(2))
			keys := make([][]byte, 4096)
			mustFind := present
			if *pairedDB != "" {
				d = mustOpen(b, *pairedDB, &Options{ReadOnly: true, BlockCacheSize: 64 << 20, MultiGetParallelism: *pairedParallelism})
				// As many keys as kvbench's reads touch filter lines: a
				// pool of 4,096 would bring its lines into the caches.
				keys = make([][]byte, 1<<18)
				for i := range keys {
					k := []byte(fmt.Sprintf("%016d", rng.Intn(*pairedNum)))
					if !present {
						k = k[:15]
					}
					keys[i] = k
				}
				mustFind = false // not every key is in the store
			} else {
				d = benchDB(b, n)
				if p := *pairedParallelism; p > 0 {
					// The store is shared: a bound, above the helpers
					// it has, waits for no more of them.
					d.opts.multiGetWorkers = p
				}
				for i := range keys {
					k := 2 * rng.Intn(n)
					if !present {
						k++
					}
					keys[i] = []byte(fmt.Sprintf("%016d", k))
				}
			}
			defer d.Close()
			values, errs := make([][]byte, size), make([]error, size)
			var loopT, intoT time.Duration
			var loopN, intoN int
			b.ResetTimer()
			for i, pair := 0, 0; i < b.N; pair++ {
				for half := range 2 {
					loopTurn := (pair+half)%2 == 0
					for range turn {
						start := i % len(keys)
						if start+size > len(keys) {
							start = 0
						}
						batch := keys[start : start+size]
						t0 := time.Now()
						if *pairedOnly == "loop" || loopTurn && *pairedOnly != "into" {
							for _, k := range batch {
								if _, err := d.Get(k, nil); mustFind && err != nil {
									b.Fatal(err)
								}
							}
							loopT += time.Since(t0)
							loopN += size
						} else {
							if err := d.MultiGetInto(batch, values, errs, nil); err != nil {
								b.Fatal(err)
							}
							if mustFind && errs[0] != nil {
								b.Fatal(errs[0])
							}
							intoT += time.Since(t0)
							intoN += size
						}
						i += size
					}
				}
			}
			if loopN > 0 && intoN > 0 {
				l, m := float64(loopT.Nanoseconds())/float64(loopN), float64(intoT.Nanoseconds())/float64(intoN)
				b.ReportMetric(l, "loop-ns/key")
				b.ReportMetric(m, "into-ns/key")
				b.ReportMetric(l/m, "loop/into")
			}
			if d.helpers != nil && intoN > 0 {
				// Lookups MultiGet's helpers ran, per key asked.
				b.ReportMetric(float64(d.helpers.helped.Load())/float64(intoN), "helped/key")
			}
		})
	}
}

// BenchmarkPrefixScan scans one prefix per op on a store of 200,000 keys
// "%08d%08d" (an 8-byte prefix of 16 keys each: prefixes 0, 2, 4, ...
// exist, the odd ones are absent but inside every table's key range),
// written with a FixedPrefix(8) extractor (with-prefix-filter) and read
// with or without it (without: the tables' prefixes are ignored).
func BenchmarkPrefixScan(b *testing.B) {
	const prefixes = 12500
	dir := b.TempDir()
	{
		d := mustOpen(b, dir, &Options{Prefix: filter.FixedPrefix(8)})
		rng := rand.New(rand.NewSource(1))
		val := make([]byte, 100)
		var batch Batch
		for _, p := range rng.Perm(prefixes) {
			for i := 0; i < 16; i++ {
				rng.Read(val[:50])
				batch.Put([]byte(fmt.Sprintf("%08d%08d", 2*p, i)), val)
			}
			if batch.Count() >= 1000 {
				if err := d.Write(&batch, nil); err != nil {
					b.Fatal(err)
				}
				batch.Reset()
			}
		}
		if err := d.Write(&batch, nil); err != nil {
			b.Fatal(err)
		}
		// Compacted now, with the extractor: a compaction after a reopen
		// without it would write tables without prefixes.
		if err := d.CompactRange(nil, nil); err != nil {
			b.Fatal(err)
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
	for _, present := range []bool{false, true} {
		for _, withFilter := range []bool{false, true} {
			name := "absent"
			if present {
				name = "present"
			}
			if withFilter {
				name += "/prefix-filter"
			} else {
				name += "/no-prefix-filter"
			}
			b.Run(name, func(b *testing.B) {
				o := &Options{}
				if withFilter {
					o.Prefix = filter.FixedPrefix(8)
				}
				d := mustOpen(b, dir, o)
				defer d.Close()
				// The bounds of 4096 random prefixes, made before the
				// timer: the loop measures the scans, not the formatting.
				rng := rand.New(rand.NewSource(2))
				var ros [4096]ReadOptions
				for i := range ros {
					p := 2 * rng.Intn(prefixes)
					if !present {
						p++
					}
					ros[i].LowerBound, ros[i].UpperBound = PrefixBounds([]byte(fmt.Sprintf("%08d", p)))
				}
				before := d.Metrics()
				b.ResetTimer()
				found := 0
				for i := 0; i < b.N; i++ {
					it := d.NewIterator(&ros[i%len(ros)])
					for ok := it.First(); ok; ok = it.Next() {
						found++
					}
					it.Close()
				}
				b.StopTimer()
				after := d.Metrics()
				b.ReportMetric(float64(after.DataBlocksRead-before.DataBlocksRead)/float64(b.N), "blocks/op")
				b.ReportMetric(float64(found)/float64(b.N), "keys/op")
			})
		}
	}
}

// BenchmarkScan iterates forward over every entry of benchDB's store
// (200,000 keys in one compacted level, reopened cold): what kvbench's
// readseq costs an entry. The first op pays the page faults of the
// mapped tables; later ones read through the block cache and the map.
func BenchmarkScan(b *testing.B) {
	const n = 200000
	d := benchDB(b, n)
	defer d.Close()
	b.ReportAllocs()
	b.ResetTimer()
	var bytes int64
	for i := 0; i < b.N; i++ {
		it := d.NewIterator(nil)
		c := 0
		for ok := it.First(); ok; ok = it.Next() {
			c++
			bytes += int64(len(it.Key()) + len(it.Value()))
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
		if c != n {
			b.Fatalf("scanned %d entries, want %d", c, n)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entry")
	b.SetBytes(bytes / int64(b.N))
}
