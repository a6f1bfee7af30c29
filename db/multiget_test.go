package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestMultiGetAgainstGet checks every answer of MultiGet against Get at the
// same snapshot, over stores with keys in memtables, level 0 and deeper
// levels, deletions, absent keys, duplicates and keys in any order.
func TestMultiGetAgainstGet(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"bloom", Options{WriteBufferSize: 8 << 10, BlockSize: 256}},
		{"nofilter", Options{WriteBufferSize: 8 << 10, FilterPolicy: filter.None}},
		{"leveldb-nocache", Options{WriteBufferSize: 16 << 10, FilterPolicy: filter.NewLevelDBBloomPolicy(10), DisableBlockCache: true}},
		// Tables of different policies, and some without a filter, in one
		// batch: the per-key probe.
		{"mixed", Options{WriteBufferSize: 8 << 10, LevelFilterPolicies: []filter.Policy{filter.NewBloomPolicy(10), filter.None, filter.NewLevelDBBloomPolicy(10)}}},
		// One policy name at different bits per key: one batch.
		{"monkey", Options{WriteBufferSize: 8 << 10, FilterBudgetBitsPerKey: 8}},
		// Hashed probes of two policies whose key hashes differ, level
		// after level: a hash kept from one policy's probes and used for
		// the other's would lose keys.
		{"hashes", Options{WriteBufferSize: 8 << 10, LevelFilterPolicies: []filter.Policy{
			filter.NewBloomPolicy(10), saltedPolicy{filter.NewBloomPolicy(10)}, filter.NewBloomPolicy(8), saltedPolicy{filter.NewBloomPolicy(10)}}}},
	} {
		// Lookups in the caller only, and spread over helper goroutines.
		for _, par := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/parallelism=%d", tc.name, par), func(t *testing.T) {
				o := tc.o
				o.FS = vfs.NewMem()
				o.MultiGetParallelism = par
				d := mustOpen(t, "/db", &o)
				defer d.Close()
				rng := rand.New(rand.NewSource(7))
				model := map[string]string{}
				var snaps []*Snapshot
				var snapModels []map[string]string
				sawL0, sawDeeper := false, false
				var reuseV [][]byte
				var reuseE []error
				for round := 0; round < 8; round++ {
					for i := 0; i < 400; i++ {
						k := fmt.Sprintf("key%05d", rng.Intn(3000))
						if rng.Intn(6) == 0 {
							d.Delete([]byte(k), nil)
							delete(model, k)
						} else {
							v := fmt.Sprintf("v%d-%d", round, rng.Int())
							d.Put([]byte(k), []byte(v), nil)
							model[k] = v
						}
					}
					if round%3 == 0 {
						s := d.NewSnapshot()
						m := map[string]string{}
						for k, v := range model {
							m[k] = v
						}
						snaps, snapModels = append(snaps, s), append(snapModels, m)
					}
					if round == 4 {
						if err := d.CompactRange(nil, nil); err != nil {
							t.Fatal(err)
						}
					}
					m := d.Metrics()
					sawL0 = sawL0 || m.Levels[0].Files > 0
					sawDeeper = sawDeeper || m.Levels[1].Files+m.Levels[2].Files > 0
					for q := 0; q < 20; q++ {
						n := rng.Intn(100)
						keys := make([][]byte, n)
						for j := range keys {
							switch rng.Intn(4) {
							case 0:
								keys[j] = []byte(fmt.Sprintf("key%05d", rng.Intn(3000)) + "x") // absent, sorts among real keys
							case 1:
								if j > 0 {
									keys[j] = keys[rng.Intn(j)] // a duplicate
									continue
								}
								fallthrough
							default:
								keys[j] = []byte(fmt.Sprintf("key%05d", rng.Intn(3000)))
							}
						}
						ro, want := (*ReadOptions)(nil), model
						if rng.Intn(3) == 0 {
							s := rng.Intn(len(snaps))
							ro, want = &ReadOptions{Snapshot: snaps[s]}, snapModels[s]
						}
						orig := make([][]byte, n)
						for j := range keys {
							orig[j] = append([]byte(nil), keys[j]...)
						}
						vals, errs := d.MultiGet(keys, ro)
						if q%2 == 1 {
							// MultiGetInto, into the previous query's
							// results: every stale entry must be replaced.
							if cap(reuseV) < n {
								reuseV, reuseE = make([][]byte, n), make([]error, n)
								for j := range reuseV {
									reuseV[j], reuseE[j] = []byte("stale"), errors.New("stale")
								}
							}
							vals, errs = reuseV[:n], reuseE[:n]
							if err := d.MultiGetInto(keys, vals, errs, ro); err != nil {
								t.Fatal(err)
							}
						}
						if len(vals) != n || len(errs) != n {
							t.Fatalf("MultiGet of %d keys returned %d values, %d errors", n, len(vals), len(errs))
						}
						for j, k := range keys {
							if !bytes.Equal(k, orig[j]) {
								t.Fatalf("MultiGet changed key %d", j)
							}
							wv, ok := want[string(k)]
							switch {
							case ok && (errs[j] != nil || string(vals[j]) != wv):
								t.Fatalf("round %d: MultiGet[%d] %q = %q, %v; want %q", round, j, k, vals[j], errs[j], wv)
							case !ok && (!errors.Is(errs[j], ErrNotFound) || vals[j] != nil):
								t.Fatalf("round %d: MultiGet[%d] %q = %q, %v; want ErrNotFound", round, j, k, vals[j], errs[j])
							}
						}
					}
				}
				if !sawL0 || !sawDeeper {
					t.Fatalf("the queries never met tables in level 0 (%v) or deeper (%v)", sawL0, sawDeeper)
				}
				for _, s := range snaps {
					s.Release()
				}
				_, errs := d.MultiGet([][]byte{[]byte("key00001")}, &ReadOptions{Snapshot: snaps[0]})
				if !errors.Is(errs[0], ErrSnapshotReleased) {
					t.Fatalf("MultiGet through a released snapshot: %v", errs[0])
				}
			})
		}
	}
}

// TestMultiGetFilterMetrics checks that MultiGet's filter probes count as
// Get's do: the same lookups move the same counters.
func TestMultiGetFilterMetrics(t *testing.T) {
	open := func() *DB {
		d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), WriteBufferSize: 8 << 10, MultiGetParallelism: 4})
		for i := 0; i < 3000; i++ {
			d.Put([]byte(fmt.Sprintf("key%05d", i)), []byte("v"), nil)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		// A memtable of 100 keys (under the write buffer: no flush), a
		// third of them rewriting keys the batch asks for.
		for i := 0; i < 300; i += 3 {
			d.Put([]byte(fmt.Sprintf("key%05d", i*7)), []byte("newer"), nil)
		}
		return d
	}
	var keys [][]byte
	for i := 0; i < 3000; i += 7 {
		keys = append(keys, []byte(fmt.Sprintf("key%05d", i)), []byte(fmt.Sprintf("key%05dx", i)))
	}
	ma, mb := getLoopAndMultiGet(open, keys, len(keys))
	if ma.Filter != mb.Filter || ma.Gets != mb.Gets {
		t.Fatalf("Get loop: %+v, %d gets; MultiGet: %+v, %d gets", ma.Filter, ma.Gets, mb.Filter, mb.Gets)
	}
	if ma.Filter.Checks == 0 || ma.Filter.Useful == 0 {
		t.Fatalf("no filter work measured: %+v", ma.Filter)
	}
	if ma.MemTableFilter != mb.MemTableFilter {
		t.Fatalf("memtable filter: Get loop %+v, MultiGet %+v", ma.MemTableFilter, mb.MemTableFilter)
	}
	if mf := ma.MemTableFilter; mf.Checks != int64(len(keys)) || mf.Useful == 0 || mf.TruePositives != 100 {
		t.Fatalf("memtable filter: %+v for %d keys, 100 of them in the memtable", mf, len(keys))
	}
}

// getLoopAndMultiGet opens two stores with open, reads keys from one with
// a loop of Get and from the other with MultiGets of batch keys, and
// returns their metrics.
func getLoopAndMultiGet(open func() *DB, keys [][]byte, batch int) (loop, multi *Metrics) {
	a, b := open(), open()
	defer a.Close()
	defer b.Close()
	for _, k := range keys {
		a.Get(k, nil)
	}
	for start := 0; start < len(keys); start += batch {
		b.MultiGet(keys[start:min(start+batch, len(keys))], nil)
	}
	return a.Metrics(), b.Metrics()
}

// TestMultiGetFilterMetricsLevel0 checks the level-0 counters on three
// level-0 tables whose ranges overlap: a key found in a newer table must
// not count the older tables' filter checks, which Get never makes
// (MultiGet asks every table's filter before any lookup, then takes those
// checks back).
func TestMultiGetFilterMetricsLevel0(t *testing.T) {
	open := func() *DB {
		d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), MultiGetParallelism: 2})
		for round := 0; round < 3; round++ {
			for i := 0; i < 1000; i++ {
				if (i+round)%3 != 0 {
					d.Put([]byte(fmt.Sprintf("key%05d", i)), []byte(fmt.Sprint(round)), nil)
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if n := d.Metrics().Levels[0].Files; n != 3 {
			t.Fatalf("%d level-0 tables, want 3", n)
		}
		return d
	}
	var keys [][]byte
	for i := 0; i < 1000; i++ {
		keys = append(keys, []byte(fmt.Sprintf("key%05d", i)), []byte(fmt.Sprintf("key%05dx", i)))
	}
	ma, mb := getLoopAndMultiGet(open, keys, 64)
	fa, fb := ma.Levels[0].Filter, mb.Levels[0].Filter
	if fa != fb {
		t.Fatalf("level 0: Get loop %+v, MultiGet %+v", fa, fb)
	}
	// Each present key is checked against the tables down to the newest
	// that holds it; each absent one against all three.
	if fa.TruePositives != 1000 || fa.Checks <= 1000+3000 {
		t.Fatalf("level 0: %+v", fa)
	}
}

// TestMultiGetFilterMetricsReadErrors checks the counters when every
// data-block read fails: a lookup that ends in a read error is a positive
// but no true positive, in MultiGet as in Get (a review found MultiGet
// counting it as one).
func TestMultiGetFilterMetricsReadErrors(t *testing.T) {
	var keys [][]byte
	for i := 0; i < 3000; i += 7 {
		keys = append(keys, []byte(fmt.Sprintf("key%05d", i)), []byte(fmt.Sprintf("key%05dx", i)))
	}
	open := func() (*DB, *vfs.FaultFS) {
		ffs := vfs.NewFaultFS(vfs.NewMem(), nil)
		d := mustOpen(t, "/db", &Options{FS: ffs, WriteBufferSize: 8 << 10, MultiGetParallelism: 4,
			DisableBlockCache: true, DisableMmapReads: true})
		for i := 0; i < 3000; i++ {
			d.Put([]byte(fmt.Sprintf("key%05d", i)), []byte("v"), nil)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			d.Get(k, nil) // every table open before the faults
		}
		ffs.SetInjector(vfs.Fault{Ops: vfs.OpRead, PathContains: ".sst", Count: -1, Probability: 1}.Injector())
		return d, ffs
	}
	a, fa := open()
	b, fb := open()
	defer a.Close()
	defer b.Close()
	ma0, mb0 := a.Metrics().Filter, b.Metrics().Filter
	failed := 0
	for _, k := range keys {
		if _, err := a.Get(k, nil); err != nil && !errors.Is(err, ErrNotFound) {
			failed++
		}
	}
	_, errs := b.MultiGet(keys, nil)
	mfailed := 0
	for _, err := range errs {
		if err != nil && !errors.Is(err, ErrNotFound) {
			mfailed++
		}
	}
	fa.SetInjector(nil)
	fb.SetInjector(nil)
	ma, mb := a.Metrics().Filter, b.Metrics().Filter
	da := [3]int64{ma.Checks - ma0.Checks, ma.Positives - ma0.Positives, ma.TruePositives - ma0.TruePositives}
	db := [3]int64{mb.Checks - mb0.Checks, mb.Positives - mb0.Positives, mb.TruePositives - mb0.TruePositives}
	if failed == 0 || failed != mfailed {
		t.Fatalf("%d Gets and %d MultiGet keys failed; want the same, above 0", failed, mfailed)
	}
	if da != db || da[2] != 0 {
		t.Fatalf("checks, positives, true positives: Get loop %v, MultiGet %v (want equal, no true positive)", da, db)
	}
}

// TestMultiGetConsistentView runs MultiGets over all keys of writers whose
// every batch rewrites all their keys with the batch number, while
// flushes and compactions run: one MultiGet must see one batch per writer.
func TestMultiGetConsistentView(t *testing.T) {
	const writers, keysPerWriter = 3, 16
	// MultiGetParallelism 4: the 48 keys' lookups are spread over helper
	// goroutines, whose reads must see the same view.
	d := mustOpen(t, t.TempDir(), &Options{WriteBufferSize: 8 << 10, L0CompactionTrigger: 2, LBaseMaxBytes: 32 << 10, TargetFileSize: 8 << 10, MultiGetParallelism: 4})
	var keys [][]byte
	for w := 0; w < writers; w++ {
		for k := 0; k < keysPerWriter; k++ {
			keys = append(keys, []byte(fmt.Sprintf("w%d.k%02d", w, k)))
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 1; !stop.Load(); j++ {
				b := &Batch{}
				for k := 0; k < keysPerWriter; k++ {
					b.Put([]byte(fmt.Sprintf("w%d.k%02d", w, k)), []byte(fmt.Sprintf("%d:%0100d", j, 0)))
				}
				if err := d.Write(b, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	n := 3000
	if testing.Short() {
		n = 500
	}
	rng := rand.New(rand.NewSource(1))
	// At least n queries, and on until a compaction has run under them.
	for q := 0; q < n || (q < 200*n && q%50 != 0) || (q < 200*n && d.Metrics().Compactions == 0); q++ {
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		vals, errs := d.MultiGet(keys, nil)
		seen := map[byte]string{}
		for i, k := range keys {
			var batch string
			switch {
			case errors.Is(errs[i], ErrNotFound):
				batch = "absent"
			case errs[i] != nil:
				t.Fatal(errs[i])
			default:
				batch = string(bytes.SplitN(vals[i], []byte(":"), 2)[0])
			}
			w := k[1]
			if prev, ok := seen[w]; ok && prev != batch {
				t.Fatalf("one MultiGet saw writer %c at batches %s and %s", w, prev, batch)
			}
			seen[w] = batch
		}
	}
	stop.Store(true)
	wg.Wait()
	if m := d.Metrics(); m.Flushes == 0 || m.Compactions == 0 {
		t.Errorf("no flush or compaction ran during the test: %d flushes, %d compactions", m.Flushes, m.Compactions)
	}
	d.Close()
	_, errs := d.MultiGet(keys[:2], nil)
	if !errors.Is(errs[0], ErrClosed) || !errors.Is(errs[1], ErrClosed) {
		t.Fatalf("MultiGet after Close: %v", errs)
	}
}

// TestMultiGetIntoArguments checks MultiGetInto's argument errors: result
// slices of another length, and values sharing memory with keys (which
// would let a written value replace a key still to be read). Nothing is
// read or written then.
func TestMultiGetIntoArguments(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer d.Close()
	for i := 0; i < 10; i++ {
		d.Put([]byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprintf("v%d", i)), nil)
	}
	arr := make([][]byte, 8)
	for i := range arr {
		arr[i] = []byte(fmt.Sprintf("k%d", i))
	}
	keys := arr[:4]
	errs := make([]error, 4)
	for _, tc := range []struct {
		name         string
		keys, values [][]byte
		errs         []error
	}{
		{"short values", keys, make([][]byte, 3), errs},
		{"long values", keys, make([][]byte, 5), errs},
		{"short errs", keys, make([][]byte, 4), errs[:3]},
		{"nil values", keys, nil, errs},
		{"values are keys", keys, arr[:4], errs},
		{"values overlap keys' end", keys, arr[3:7], errs},
		{"values overlap keys' start", arr[2:6], arr[0:4], errs},
	} {
		if err := d.MultiGetInto(tc.keys, tc.values, tc.errs, nil); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	for i := range arr {
		if want := fmt.Sprintf("k%d", i); string(arr[i]) != want {
			t.Fatalf("a refused call changed key %d to %q", i, arr[i])
		}
	}
	// Adjacent but not overlapping: accepted. A batch of one may alias
	// (Get reads the key before the value is written), and so may an
	// empty batch.
	if err := d.MultiGetInto(arr[:4], arr[4:8], errs, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if errs[i] != nil || string(arr[4+i]) != fmt.Sprintf("v%d", i) {
			t.Fatalf("entry %d: %q, %v", i, arr[4+i], errs[i])
		}
	}
	one := [][]byte{[]byte("k9")}
	if err := d.MultiGetInto(one, one, errs[:1], nil); err != nil || string(one[0]) != "v9" || errs[0] != nil {
		t.Fatalf("batch of one into its own key: %v, %q, %v", err, one[0], errs[0])
	}
	if err := d.MultiGetInto(nil, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	d.Close()
	vals := make([][]byte, 2)
	if err := d.MultiGetInto(keys[:2], vals, errs[:2], nil); err != nil || !errors.Is(errs[0], ErrClosed) || !errors.Is(errs[1], ErrClosed) {
		t.Fatalf("after Close: %v, %v", err, errs[:2])
	}
}

// TestMultiGetIntoAllocs checks that MultiGetInto allocates nothing for
// absent keys, in a batch of one as in a batch of 64, as a loop of Get
// allocates nothing for them.
func TestMultiGetIntoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	dir := t.TempDir()
	d := mustOpen(t, dir, &Options{})
	defer d.Close()
	for i := 0; i < 5000; i++ {
		d.Put([]byte(fmt.Sprintf("%08d", 2*i)), []byte("value"), nil)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("%08d", 2*i*70+1))
	}
	vals, errs := make([][]byte, 64), make([]error, 64)
	for _, n := range []int{1, 64} {
		allocs := testing.AllocsPerRun(50, func() {
			if err := d.MultiGetInto(keys[:n], vals[:n], errs[:n], nil); err != nil {
				t.Fatal(err)
			}
		})
		for i := 0; i < n; i++ {
			if !errors.Is(errs[i], ErrNotFound) {
				t.Fatalf("key %q: %v", keys[i], errs[i])
			}
		}
		// A filter's false positive reads a block, which may allocate;
		// 64 keys at about 1% make that rare, and the bound allows it.
		if allocs > 0.5 {
			t.Fatalf("batch of %d absent keys: %.1f allocations a call", n, allocs)
		}
	}
}

// saltedPolicy is a filter.HashBatchPolicy whose filters hold the keys
// with a suffix: its KeyHash differs from the Bloom policy's for every
// key, though its probes are the Bloom policy's.
type saltedPolicy struct{ filter.Policy }

func salted(key []byte) []byte { return append(append([]byte(nil), key...), "#salt"...) }

func (p saltedPolicy) Name() string { return "test.SaltedBloom" }
func (p saltedPolicy) MayContain(f, key []byte) bool {
	return p.Policy.MayContain(f, salted(key))
}
func (p saltedPolicy) NewBuilder() filter.Builder { return saltedBuilder{p.Policy.NewBuilder()} }
func (p saltedPolicy) MayContainBatch(filters, keys [][]byte, maybe []bool) {
	for i, k := range keys {
		maybe[i] = p.MayContain(filters[i], k)
	}
}
func (p saltedPolicy) KeyHash(key []byte) uint64 {
	return p.Policy.(filter.HashBatchPolicy).KeyHash(salted(key))
}
func (p saltedPolicy) MayContainHashBatch(filters [][]byte, hashes []uint64, maybe []bool) {
	p.Policy.(filter.HashBatchPolicy).MayContainHashBatch(filters, hashes, maybe)
}

type saltedBuilder struct{ filter.Builder }

func (b saltedBuilder) AddKey(key []byte) { b.Builder.AddKey(salted(key)) }
