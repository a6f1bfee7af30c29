package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

// review9bBuild writes into fs a store whose keys have versions in several
// sorted levels (overwrites and deletions in each generation, pushed down
// by automatic compactions with tiny level targets), and closes it.
func review9bBuild(t *testing.T, fs vfs.FS, pol []filter.Policy, nkeys int) {
	t.Helper()
	r10bBuild(t, fs, Options{LevelFilterPolicies: pol}, func(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }, nkeys)
}

// review9bDeep requires tables in at least three sorted levels.
func review9bDeep(t *testing.T, d *DB) {
	t.Helper()
	m := d.Metrics()
	n := 0
	for l := 1; l < NumLevels; l++ {
		if m.Levels[l].Files > 0 {
			n++
		}
	}
	if n < 3 {
		var files []int
		for l := range m.Levels {
			files = append(files, m.Levels[l].Files)
		}
		t.Fatalf("tables in %d sorted levels (%v); want at least 3", n, files)
	}
}

// review9bKeys draws n probe keys: present, absent (between present ones,
// before and after all), and duplicates.
func review9bKeys(rng *rand.Rand, n, nkeys int) [][]byte {
	keys := make([][]byte, n)
	for j := range keys {
		switch r := rng.Intn(10); {
		case r == 0 && j > 0:
			keys[j] = keys[rng.Intn(j)]
		case r == 1:
			keys[j] = []byte(fmt.Sprintf("key%05dx", rng.Intn(nkeys)))
		case r == 2:
			keys[j] = []byte(fmt.Sprintf("a%d", rng.Intn(10)))
		case r == 3:
			keys[j] = []byte(fmt.Sprintf("z%d", rng.Intn(10)))
		default:
			keys[j] = []byte(fmt.Sprintf("key%05d", rng.Intn(nkeys)))
		}
	}
	return keys
}

// review9bSame reports whether two answers are the same: values, not
// found, or errors with the same text.
func review9bSame(v1 []byte, e1 error, v2 []byte, e2 error) bool {
	switch {
	case e1 == nil && e2 == nil:
		return bytes.Equal(v1, v2) && (v1 == nil) == (v2 == nil)
	case e1 == nil || e2 == nil:
		return false
	case errors.Is(e1, ErrNotFound) || errors.Is(e2, ErrNotFound):
		return errors.Is(e1, ErrNotFound) && errors.Is(e2, ErrNotFound) && v1 == nil && v2 == nil
	default:
		return v1 == nil && v2 == nil && e1.Error() == e2.Error()
	}
}

// review9bStat is what a read moves in Metrics: per level the filter
// checks, positives and true positives, then the Gets and, with no block
// cache (every lookup reads its block from the file, so a Get loop and a
// MultiGet read the same), the data blocks and bytes read.
type review9bStat struct {
	filter               [NumLevels][3]int64
	gets, blocks, blockB int64
}

func review9bFilter(d *DB) (c review9bStat) {
	m := d.Metrics()
	for l := range m.Levels {
		f := m.Levels[l].Filter
		c.filter[l] = [3]int64{f.Checks, f.Positives, f.TruePositives}
	}
	c.gets = m.Gets
	if m.BlockCacheCapacity == 0 {
		c.blocks, c.blockB = m.DataBlocksRead, m.DataBlockBytesRead
	}
	return c
}

func (c review9bStat) sub(o review9bStat) (r review9bStat) {
	for l := range c.filter {
		for j := range c.filter[l] {
			r.filter[l][j] = c.filter[l][j] - o.filter[l][j]
		}
	}
	r.gets, r.blocks, r.blockB = c.gets-o.gets, c.blocks-o.blocks, c.blockB-o.blockB
	return r
}

// review9bCompare runs a Get loop and then MultiGet (and MultiGetInto) of
// keys on d, comparing every answer and the filter counts each moved.
func review9bCompare(t *testing.T, d *DB, keys [][]byte, ro *ReadOptions, what string) {
	t.Helper()
	c0 := review9bFilter(d)
	wantV, wantE := make([][]byte, len(keys)), make([]error, len(keys))
	for i, k := range keys {
		wantV[i], wantE[i] = d.Get(k, ro)
	}
	c1 := review9bFilter(d)
	vals, errs := d.MultiGet(keys, ro)
	c2 := review9bFilter(d)
	for i, k := range keys {
		if !review9bSame(vals[i], errs[i], wantV[i], wantE[i]) {
			t.Fatalf("%s: MultiGet(%d keys)[%d] %q = %q, %v; Get = %q, %v", what, len(keys), i, k, vals[i], errs[i], wantV[i], wantE[i])
		}
	}
	if cg, cm := c1.sub(c0), c2.sub(c1); cg != cm {
		t.Fatalf("%s: %d keys: filter counts per level (checks, positives, true positives), gets, blocks, block bytes: Get loop %v, MultiGet %v",
			what, len(keys), cg, cm)
	}
	iv, ie := make([][]byte, len(keys)), make([]error, len(keys))
	for i := range iv {
		iv[i], ie[i] = []byte("stale"), errors.New("stale")
	}
	if err := d.MultiGetInto(keys, iv, ie, ro); err != nil {
		t.Fatal(err)
	}
	c3 := review9bFilter(d)
	for i, k := range keys {
		if !review9bSame(iv[i], ie[i], wantV[i], wantE[i]) {
			t.Fatalf("%s: MultiGetInto(%d keys)[%d] %q = %q, %v; Get = %q, %v", what, len(keys), i, k, iv[i], ie[i], wantV[i], wantE[i])
		}
	}
	if cm, ci := c2.sub(c1), c3.sub(c2); cm != ci {
		t.Fatalf("%s: filter counts: MultiGet %v, MultiGetInto %v", what, cm, ci)
	}
}

// review9bSizes returns short, followed by long unless the tests run
// short or under the race detector.
func review9bSizes(short []int, long ...int) []int {
	if testing.Short() || raceEnabled {
		return short
	}
	return append(short, long...)
}

var review9bPolicies = []struct {
	name string
	pol  []filter.Policy
}{
	{"default", nil},
	// Filters that let most absent keys through: keys false-positive in
	// shallow levels while their entries are deeper.
	{"bloom1", []filter.Policy{filter.NewBloomPolicy(1), filter.NewBloomPolicy(1), filter.NewBloomPolicy(1), filter.NewBloomPolicy(1), filter.NewBloomPolicy(1), filter.NewBloomPolicy(1), filter.NewBloomPolicy(1)}},
	// Levels without a filter between levels with one.
	{"mixed", []filter.Policy{nil, filter.None, filter.NewBloomPolicy(2), filter.None, filter.NewLevelDBBloomPolicy(3), nil, filter.None}},
}

// TestReview9bAgainstGetLoop compares MultiGet with a Get loop, answers and
// per-level filter counts, on stores with versions in several sorted
// levels, at batch sizes around the 64-key chunks, with parallelism 1, 2
// and 8, at the latest state and through a snapshot.
func TestReview9bAgainstGetLoop(t *testing.T) {
	const nkeys = 3000
	for _, pc := range review9bPolicies {
		fs := vfs.NewMem()
		review9bBuild(t, fs, pc.pol, nkeys)
		for _, par := range []int{1, 2, 8} {
			t.Run(fmt.Sprintf("%s/par%d", pc.name, par), func(t *testing.T) {
				d := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true, MultiGetParallelism: par, LevelFilterPolicies: pc.pol})
				defer d.Close()
				d.loading.Wait()
				review9bDeep(t, d)
				snap := d.NewSnapshot()
				defer snap.Release()
				// Writes after the snapshot: the memtable answers some keys.
				for i := 0; i < nkeys; i += 11 {
					d.Put([]byte(fmt.Sprintf("key%05d", i)), []byte("new"), nil)
				}
				rng := rand.New(rand.NewSource(int64(par)))
				for _, n := range review9bSizes([]int{2, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200}, 1000, nkeys) {
					keys := review9bKeys(rng, n, nkeys)
					review9bCompare(t, d, keys, nil, fmt.Sprintf("latest n=%d", n))
					review9bCompare(t, d, keys, &ReadOptions{Snapshot: snap}, fmt.Sprintf("snapshot n=%d", n))
				}
				// Every key, in order and reversed.
				all := make([][]byte, 0, nkeys)
				for i := 0; i < nkeys; i++ {
					all = append(all, []byte(fmt.Sprintf("key%05d", i)))
				}
				if testing.Short() || raceEnabled {
					return
				}
				review9bCompare(t, d, all, &ReadOptions{Snapshot: snap}, "all")
				for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
					all[i], all[j] = all[j], all[i]
				}
				review9bCompare(t, d, all, nil, "all reversed")
			})
		}
	}
}

// review9bTables returns the table numbers of each level of the store in
// fs (opened and closed again).
func review9bTables(t *testing.T, fs vfs.FS) (tables [NumLevels][]uint64) {
	t.Helper()
	d := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true})
	ref := d.loadReadState()
	for l, files := range ref.rs.v.Files {
		for _, f := range files {
			tables[l] = append(tables[l], f.FileNum)
		}
	}
	ref.unref()
	d.Close()
	return tables
}

// TestReview9bOpenFaults opens stores where one table of a sorted level
// cannot be opened (every attempt fails), so the loader leaves it closed:
// a key a shallower level answers must still be found, as Get finds it,
// and a key reaching the broken table must fail as Get fails, with the
// same filter counts.
func TestReview9bOpenFaults(t *testing.T) {
	const nkeys = 3000
	for _, pc := range review9bPolicies {
		fs := vfs.NewMem()
		review9bBuild(t, fs, pc.pol, nkeys)
		tables := review9bTables(t, fs)
		for l := 1; l < NumLevels; l++ {
			if len(tables[l]) == 0 {
				continue
			}
			for _, which := range review9bSizes([]int{len(tables[l]) / 2}, 0) {
				num := tables[l][which]
				for _, par := range []int{1, 8} {
					t.Run(fmt.Sprintf("%s/L%d/table%d/par%d", pc.name, l, num, par), func(t *testing.T) {
						ffs := vfs.NewFaultFS(fs, nil)
						ffs.SetInjector(vfs.Fault{Ops: vfs.OpOpen, PathContains: fmt.Sprintf("%06d.sst", num), Count: -1}.Injector())
						d := mustOpen(t, "/db", &Options{FS: ffs, DisableAutomaticCompactions: true, MultiGetParallelism: par,
							LevelFilterPolicies: pc.pol, DisableMmapReads: true, MaxOpenFiles: 16})
						defer d.Close()
						d.loading.Wait()
						rng := rand.New(rand.NewSource(int64(num)))
						failed := 0
						for _, n := range review9bSizes([]int{2, 17, 65, 129}, 500, nkeys) {
							keys := review9bKeys(rng, n, nkeys)
							review9bCompare(t, d, keys, nil, fmt.Sprintf("n=%d", n))
							for _, k := range keys {
								if _, err := d.Get(k, nil); err != nil && !errors.Is(err, ErrNotFound) {
									failed++
								}
							}
						}
						if failed == 0 {
							t.Fatalf("no key reached the broken table %06d", num)
						}
					})
				}
			}
		}
	}
}

// TestReview9bReadFaults makes every read of one table fail (open tables,
// no block cache): answers and counts must be the Get loop's.
func TestReview9bReadFaults(t *testing.T) {
	const nkeys = 3000
	for _, pc := range review9bPolicies {
		fs := vfs.NewMem()
		review9bBuild(t, fs, pc.pol, nkeys)
		tables := review9bTables(t, fs)
		for l := 1; l < NumLevels; l++ {
			if len(tables[l]) == 0 {
				continue
			}
			num := tables[l][len(tables[l])/2]
			for _, par := range []int{1, 8} {
				t.Run(fmt.Sprintf("%s/L%d/table%d/par%d", pc.name, l, num, par), func(t *testing.T) {
					ffs := vfs.NewFaultFS(fs, nil)
					d := mustOpen(t, "/db", &Options{FS: ffs, DisableAutomaticCompactions: true, MultiGetParallelism: par,
						LevelFilterPolicies: pc.pol, DisableMmapReads: true, DisableBlockCache: true})
					defer d.Close()
					d.loading.Wait()
					ffs.SetInjector(vfs.Fault{Ops: vfs.OpRead, PathContains: fmt.Sprintf("%06d.sst", num), Count: -1}.Injector())
					rng := rand.New(rand.NewSource(int64(num)))
					for _, n := range review9bSizes([]int{2, 17, 65, 129}, 500, nkeys) {
						keys := review9bKeys(rng, n, nkeys)
						review9bCompare(t, d, keys, nil, fmt.Sprintf("n=%d", n))
					}
				})
			}
		}
	}
}

// review9bAbsentAllocs returns the allocations of a MultiGetInto of n
// absent keys of review9bBuild's store of nkeys (its keys with an 'x'
// appended), averaged over calls with the same slices, and fails t
// unless every key is reported absent.
func review9bAbsentAllocs(t *testing.T, d *DB, n, nkeys int) float64 {
	t.Helper()
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key%05dx", i*7%nkeys))
	}
	vals, errs := make([][]byte, n), make([]error, n)
	allocs := testing.AllocsPerRun(50, func() {
		if err := d.MultiGetInto(keys, vals, errs, nil); err != nil {
			t.Fatal(err)
		}
	})
	for i := range keys {
		if !errors.Is(errs[i], ErrNotFound) {
			t.Fatalf("key %q: %v", keys[i], errs[i])
		}
	}
	return allocs
}

// TestReview9bAllocs: absent keys in a store with several sorted levels
// cost MultiGetInto no allocation for a batch of up to 64 keys, and a
// bounded number (the pending list) for larger ones, call after call.
func TestReview9bAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const nkeys = 3000
	fs := vfs.NewMem()
	review9bBuild(t, fs, nil, nkeys)
	d := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true, MultiGetParallelism: 1})
	defer d.Close()
	d.loading.Wait()
	review9bDeep(t, d)
	for _, n := range []int{64, 65, 1000} {
		allocs := review9bAbsentAllocs(t, d, n, nkeys)
		max := 0.5
		if n > 64 {
			max = 1.5 // the pending list
		}
		if allocs > max {
			t.Fatalf("batch of %d absent keys: %.1f allocations a call", n, allocs)
		}
	}
}

// TestReview9bBackground runs MultiGets (compared with Gets at one
// snapshot, and checked for one consistent generation per writer) while
// writers, flushes and compactions with tiny level targets reshape the
// levels, then closes the store under running MultiGets: no panic, every
// answer right or ErrClosed, and no helper goroutine left behind.
func TestReview9bBackground(t *testing.T) {
	before := runtime.NumGoroutine()
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", &Options{FS: fs, WriteBufferSize: 4 << 10, BlockSize: 256, LBaseMaxBytes: 8 << 10,
		LevelMultiplier: 2, TargetFileSize: 4 << 10, L0CompactionTrigger: 2, MultiGetParallelism: 8,
		LevelFilterPolicies: []filter.Policy{nil, filter.NewBloomPolicy(1), filter.None, filter.NewBloomPolicy(2)}})
	const writers, perWriter, nstatic = 4, 300, 2000
	key := func(w, i int) []byte { return []byte(fmt.Sprintf("w%d/%05d", w, i)) }
	static := func(i int) []byte { return []byte(fmt.Sprintf("s/%05d", i)) }
	// Keys pushed to the sorted levels first, then overwritten and deleted
	// at random by a writer below, so batches have lookups there.
	for gen := 0; gen < 3; gen++ {
		for i := gen; i < nstatic; i += gen + 1 {
			d.Put(static(i), []byte(fmt.Sprintf("s%d", gen)), nil)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		waitCompactions(t, d)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(2))
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if k := static(rng.Intn(nstatic)); rng.Intn(3) == 0 {
				err = d.Delete(k, nil)
			} else {
				err = d.Put(k, []byte(fmt.Sprintf("x%d", n)), nil)
			}
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Error(err)
				return
			} else if err != nil {
				return
			}
		}
	}()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for gen := 1; ; gen++ {
				select {
				case <-stop:
					return
				default:
				}
				b := &Batch{}
				for i := 0; i < perWriter; i++ {
					if (i+gen)%7 == 0 {
						b.Delete(key(w, i))
					} else {
						b.Put(key(w, i), []byte(fmt.Sprintf("%d", gen)))
					}
				}
				if err := d.Write(b, nil); err != nil {
					if errors.Is(err, ErrClosed) {
						return
					}
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			if err := d.Flush(); err != nil && !errors.Is(err, ErrClosed) {
				t.Error(err)
				return
			}
		}
	}()
	deadline := time.Now().Add(1500 * time.Millisecond)
	if testing.Short() {
		deadline = time.Now().Add(300 * time.Millisecond)
	}
	rng := rand.New(rand.NewSource(1))
	sawDeep := false
	for time.Now().Before(deadline) {
		m := d.Metrics()
		sawDeep = sawDeep || m.Levels[2].Files+m.Levels[3].Files > 0 && m.Levels[1].Files > 0
		n := 2 + rng.Intn(300)
		keys := make([][]byte, n)
		for j := range keys {
			if rng.Intn(4) == 0 {
				keys[j] = key(rng.Intn(writers), rng.Intn(perWriter))
			} else {
				keys[j] = static(rng.Intn(nstatic + 100))
			}
		}
		snap := d.NewSnapshot()
		ro := &ReadOptions{Snapshot: snap}
		vals, errs := d.MultiGet(keys, ro)
		for j, k := range keys {
			v, err := d.Get(k, ro)
			if !review9bSame(vals[j], errs[j], v, err) {
				t.Fatalf("MultiGet(%d keys)[%d] %q = %q, %v; Get = %q, %v", n, j, k, vals[j], errs[j], v, err)
			}
		}
		snap.Release()
		// All of one writer's keys: one generation.
		w := rng.Intn(writers)
		all := make([][]byte, perWriter)
		for i := range all {
			all[i] = key(w, i)
		}
		vals, errs = d.MultiGet(all, nil)
		gen := ""
		for i := range all {
			if errs[i] != nil {
				continue
			}
			if gen == "" {
				gen = string(vals[i])
			} else if string(vals[i]) != gen {
				t.Fatalf("writer %d: key %d at generation %s, another at %s", w, i, vals[i], gen)
			}
		}
		if gen != "" {
			var g int
			fmt.Sscan(gen, &g)
			for i := range all {
				deleted := (i+g)%7 == 0
				if deleted != errors.Is(errs[i], ErrNotFound) || (!deleted && errs[i] != nil) {
					t.Fatalf("writer %d generation %d key %d: %q, %v", w, g, i, vals[i], errs[i])
				}
			}
		}
	}
	if !sawDeep {
		t.Logf("levels 1 and 2/3 never held tables at once")
	}
	// Close under running MultiGets.
	var rg sync.WaitGroup
	for r := 0; r < 4; r++ {
		rg.Add(1)
		go func(r int) {
			defer rg.Done()
			all := make([][]byte, perWriter)
			for i := range all {
				all[i] = key(r, i)
			}
			for {
				vals, errs := d.MultiGet(all, nil)
				closed := 0
				for i := range all {
					switch {
					case errors.Is(errs[i], ErrClosed):
						closed++
					case errs[i] != nil && !errors.Is(errs[i], ErrNotFound):
						t.Errorf("MultiGet during Close: key %d: %v", i, errs[i])
						return
					case errs[i] == nil && len(vals[i]) == 0:
						t.Errorf("MultiGet during Close: key %d: empty value", i)
						return
					}
				}
				if closed == len(all) {
					return
				}
				if closed > 0 {
					t.Errorf("MultiGet during Close: %d of %d keys ErrClosed", closed, len(all))
					return
				}
			}
		}(r)
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	rg.Wait()
	wg.Wait()
	requireGoroutinesSettle(t, before)
}
