package db

import (
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// Adversarial review of 4e29c58 and 601ddf3: deeper's gather of the keys
// whose memoized table has a filter of the batch's hash policy (probed
// with filter.MayContainHashBatchOf, tables named by their index in a
// per-chunk list), opened's policy test by name once the batch has its
// hash policy, the two key-hash slots, candidates as index+1, and
// FindFileBatch's findWindows beneath.

// r12Wrapped is a filter.HashBatchPolicy from outside package filter: the
// Bloom policy's filters under another name, without the package's
// unexported fast paths, so KeyHashes and MayContainHashBatchOf take their
// interface fallbacks. It allocates nothing of its own.
type r12Wrapped struct{ filter.HashBatchPolicy }

func (r12Wrapped) Name() string { return "test.r12.Wrapped" }

var r12WrappedBloom = r12Wrapped{filter.NewBloomPolicy(10).(filter.HashBatchPolicy)}

// r12Policies names every policy a store of these tests writes, so any
// open reads every table's filter whatever its FilterPolicy.
var r12Known = []filter.Policy{r10bExactA, r10bExactB, r12WrappedBloom}

// r12PolicyNames returns, per level, the filter policy names of its
// tables ("" for none), counted.
func r12PolicyNames(t *testing.T, d *DB) [NumLevels]map[string]int {
	t.Helper()
	var out [NumLevels]map[string]int
	files := r11Files(d)
	for l, fs := range files {
		out[l] = map[string]int{}
		for _, f := range fs {
			r, err := d.tables.get(f)
			if err != nil {
				t.Fatal(err)
			}
			out[l][r.FilterPolicyName()]++
		}
	}
	return out
}

// r12BuildMixedLevels writes a wide store (r11BuildWide) with FilterPolicy
// first, then reopens it with each of then in turn, overwriting a band of
// keys and letting compactions rewrite the tables they overlap, so that
// sorted levels hold tables of several policies side by side, interleaved.
func r12BuildMixedLevels(t *testing.T, fs vfs.FS, nkeys int, first filter.Policy, then []filter.Policy) {
	t.Helper()
	r11BuildWide(t, fs, Options{FilterPolicy: first, LevelFilterPolicies: r12Known}, nkeys)
	for step, p := range then {
		o := Options{FS: fs, FilterPolicy: p, LevelFilterPolicies: r12Known, WriteBufferSize: 8 << 10, BlockSize: 128,
			LBaseMaxBytes: 16 << 10, LevelMultiplier: 4, TargetFileSize: 700, L0CompactionTrigger: 2}
		d := mustOpen(t, "/db", &o)
		// Bands of keys spread over the key space, a different phase each
		// step, so the rewritten tables alternate with the older ones.
		for i := 0; i < nkeys; i++ {
			if (i/150)%len(then) != step || (i+step)%3 == 0 {
				continue
			}
			var err error
			if i%11 == 0 {
				err = d.Delete(r11Key(i), nil)
			} else {
				err = d.Put(r11Key(i), []byte(fmt.Sprintf("p%d-%06d", step, i)), nil)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		waitCompactions(t, d)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// r12Mixes are the policy sequences of r12BuildMixedLevels.
var r12Mixes = []struct {
	name  string
	first filter.Policy
	then  []filter.Policy
}{
	// Bloom tables (the batch's hash policy) between tables of other hash
	// policies (the second slot, each a different name) and of none.
	{"bloom-exact-legacy", filter.NewBloomPolicy(10), []filter.Policy{r10bExactA, filter.NewLegacyBloomPolicy(2), r10bExactB}},
	// A policy that is no HashBatchPolicy first, Bloom at 1 bit per key
	// (most absent keys pass) and the wrapped Bloom (the fallbacks).
	{"blocked-bloom1-wrapped", filter.NewBlockedBloomPolicy(10), []filter.Policy{filter.NewBloomPolicy(1), r12WrappedBloom, filter.None}},
	// Exact filters first (any wrong hash is a false negative), Bloom at
	// several bits per key (one name).
	{"exact-bloombits", r10bExactA, []filter.Policy{filter.NewBloomPolicy(2), filter.NewBloomPolicy(20), r10bExactB, filter.NewBloomPolicy(1)}},
}

// TestReview12MultiGetMixedWithinLevel compares MultiGet and MultiGetInto
// with a Get loop (answers, per-level filter counts, blocks read) on
// stores whose sorted levels of many tables interleave tables of several
// filter policies, so a chunk's keys meet hashed and unhashed tables,
// slot-mates (a, a+64, a+128) of different policies, the batch's hash
// policy set by a table after others were queued, and the second hash
// slot passing between names.
func TestReview12MultiGetMixedWithinLevel(t *testing.T) {
	const nkeys = 16000
	mixes := r12Mixes
	if raceEnabled || testing.Short() {
		mixes = mixes[:2]
	}
	for _, mix := range mixes {
		fs := vfs.NewMem()
		r12BuildMixedLevels(t, fs, nkeys, mix.first, mix.then)
		pars, sizes := []int{1, 4}, []int{2, 3, 63, 64, 65, 128, 129, 300}
		if raceEnabled || testing.Short() {
			pars, sizes = []int{4}, []int{2, 64, 65, 300}
		}
		for _, par := range pars {
			t.Run(fmt.Sprintf("%s/par%d", mix.name, par), func(t *testing.T) {
				o := Options{FS: fs, DisableAutomaticCompactions: true, MultiGetParallelism: par, DisableBlockCache: par == 1,
					FilterPolicy: mix.first, LevelFilterPolicies: r12Known,
					L0CompactionTrigger: 50, L0SlowdownWritesTrigger: 60, L0StopWritesTrigger: 70}
				d := mustOpen(t, "/db", &o)
				defer func() { d.Close() }() // the last d: the test reopens it
				d.loading.Wait()
				r11BatchPath(t, d)
				names := r12PolicyNames(t, d)
				mixed := 0
				for l := 1; l < NumLevels; l++ {
					if len(names[l]) >= 2 {
						mixed++
					}
				}
				if mixed == 0 {
					t.Fatalf("no sorted level mixes policies: %v", names)
				}
				files := r11Files(d)
				rng := rand.New(rand.NewSource(int64(12 + par)))
				colliding := r11Colliding(files, rng)
				if len(colliding) == 0 {
					t.Fatalf("no level of more than 64 tables: %v", r11Counts(files))
				}
				snap := d.NewSnapshot()
				check := func(what string) {
					for _, n := range sizes {
						keys := r11Batch(rng, n, nkeys, colliding)
						review9bCompare(t, d, keys, nil, fmt.Sprintf("%s latest n=%d", what, n))
						review9bCompare(t, d, keys, &ReadOptions{Snapshot: snap}, fmt.Sprintf("%s snapshot n=%d", what, n))
					}
					review9bCompare(t, d, colliding, nil, what+" all colliding")
					// 64 keys of 64 distinct tables of the widest level (the
					// tables list full), and 65 to 300 (more than a chunk).
					wide := files[1]
					for _, fs := range files {
						if len(fs) > len(wide) {
							wide = fs
						}
					}
					for _, n := range []int{64, 65, 300} {
						perm := rng.Perm(len(wide))
						keys := make([][]byte, n)
						for j := range keys {
							ks := r11TableKeys(wide[perm[j%len(perm)]])
							keys[j] = ks[rng.Intn(len(ks))]
						}
						review9bCompare(t, d, keys, nil, fmt.Sprintf("%s distinct tables n=%d", what, n))
					}
				}
				check("sorted levels only")
				// A memtable that answers none of the keys (pending is every
				// key in order), then one that answers some.
				d.Put([]byte("zzz-not-a-probe"), []byte("x"), nil)
				check("memtable answering none")
				for i := 5; i < nkeys; i += 37 {
					d.Put(r11Key(i), []byte(fmt.Sprintf("mem-%d", i)), nil)
				}
				check("memtable")
				snap.Release()
				// Level-0 tables written with each policy.
				for s, p := range append([]filter.Policy{mix.first}, mix.then...) {
					o2 := o
					o2.FilterPolicy = p
					d.Close()
					d = mustOpen(t, "/db", &o2)
					for i := s; i < nkeys; i += 53 + s {
						d.Put(r11Key(i), []byte(fmt.Sprintf("l0-%d-%d", s, i)), nil)
					}
					if err := d.Flush(); err != nil {
						t.Fatal(err)
					}
				}
				d.Close()
				d = mustOpen(t, "/db", &o)
				d.loading.Wait()
				snap = d.NewSnapshot()
				defer snap.Release()
				if n := d.Metrics().Levels[0].Files; n < 2 {
					t.Fatalf("%d level-0 tables", n)
				}
				check("level 0")
			})
		}
	}
}

// TestReview12MultiGetLevelMixes compares MultiGet with a Get loop on
// stores whose levels use different policies: Bloom at different bits
// per key level after level (one name, one hash slot), levels whose first
// policy is no HashBatchPolicy, the wrapped Bloom (fallback paths), for
// keys of three shapes (long common prefixes and short keys: findWindows'
// findLater).
func TestReview12MultiGetLevelMixes(t *testing.T) {
	const nkeys = 1500
	mixes := []struct {
		name string
		pol  []filter.Policy
	}{
		{"bloom-bits", []filter.Policy{filter.NewBloomPolicy(10), filter.NewBloomPolicy(1), filter.NewBloomPolicy(3), filter.NewBloomPolicy(20), filter.NewBloomPolicy(1), filter.NewBloomPolicy(2), filter.NewBloomPolicy(8)}},
		{"nonhash-first", []filter.Policy{filter.NewBlockedBloomPolicy(10), filter.NewBlockedBloomPolicy(4), filter.None, filter.NewBloomPolicy(1), filter.NewLegacyBloomPolicy(1), r10bExactA, filter.NewBloomPolicy(2)}},
		{"wrapped", []filter.Policy{r12WrappedBloom, filter.NewBloomPolicy(1), r12WrappedBloom, r10bExactB, r12WrappedBloom, filter.NewLegacyBloomPolicy(1), r12WrappedBloom}},
		{"exact-wrapped", []filter.Policy{r10bExactA, r12WrappedBloom, r10bExactB, r10bExactA, filter.NewBinaryFusePolicy(8), r10bExactB, r12WrappedBloom}},
	}
	sizes := []int{1, 2, 5, 63, 64, 65, 129, 300}
	if raceEnabled || testing.Short() {
		sizes = []int{1, 2, 64, 65, 300}
	}
	formats := append(r10bKeyFormats[:len(r10bKeyFormats):len(r10bKeyFormats)], struct {
		name string
		key  func(i int) []byte
	}{
		// A common prefix of 1 to 8 bytes with keys of 12 bytes and more:
		// findWindows reads windows in place, and probe keys of 8 to 11
		// bytes (truncations) take its shifted tail.
		"midprefix", func(i int) []byte {
			k := fmt.Sprintf("ab%010d", i*7)
			if i%5 == 1 {
				k += "\x00"
			}
			return []byte(k)
		},
	})
	if raceEnabled || testing.Short() {
		formats = append(formats[:1:1], formats[2:]...) // not "prefix"
	}
	for _, kf := range formats {
		for _, mix := range mixes {
			fs := vfs.NewMem()
			r10bBuild(t, fs, Options{LevelFilterPolicies: mix.pol}, kf.key, nkeys)
			t.Run(kf.name+"/"+mix.name, func(t *testing.T) {
				o := Options{FS: fs, DisableAutomaticCompactions: true, MultiGetParallelism: 1, DisableBlockCache: true, LevelFilterPolicies: mix.pol}
				d := mustOpen(t, "/db", &o)
				defer d.Close()
				d.loading.Wait()
				review9bDeep(t, d)
				bounds := r10bBounds(d)
				rng := rand.New(rand.NewSource(int64(len(kf.name) + len(mix.name))))
				snap := d.NewSnapshot()
				defer snap.Release()
				for i := 0; i < nkeys; i += 17 {
					d.Put(kf.key(i), []byte("new"), nil)
				}
				for _, n := range sizes {
					for rep := 0; rep < 2; rep++ {
						keys := r10bProbeKeys(rng, n, nkeys, kf.key, bounds)
						if rep == 1 {
							sort.Slice(keys, func(a, b int) bool { return string(keys[a]) < string(keys[b]) })
						}
						review9bCompare(t, d, keys, nil, fmt.Sprintf("latest n=%d", n))
						review9bCompare(t, d, keys, &ReadOptions{Snapshot: snap}, fmt.Sprintf("snapshot n=%d", n))
					}
				}
				review9bCompare(t, d, bounds, nil, "bounds")
			})
		}
	}
}

// TestReview12MultiGetOpenFaultsMixed: in a wide level whose tables mix
// policies, some tables cannot be opened (an injected open failure, or a
// table file corrupted on disk): the keys that reach them take the failed
// path between gathered and queued keys, and every answer, error and
// filter count must be Get's.
func TestReview12MultiGetOpenFaultsMixed(t *testing.T) {
	const nkeys = 16000
	fs := vfs.NewMem()
	mix := r12Mixes[0]
	r12BuildMixedLevels(t, fs, nkeys, mix.first, mix.then)
	var files [NumLevels][]*manifest.FileMetadata
	{
		d := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true, LevelFilterPolicies: r12Known})
		files = r11Files(d)
		d.Close()
	}
	level, lf := r11WidestLevel(t, files)
	if len(lf) < 135 {
		t.Fatalf("level %d has %d tables, want 135", level, len(lf))
	}
	// Corrupt one table in place: its footer's magic.
	corrupt := lf[70]
	r12Corrupt(t, fs, fmt.Sprintf("/db/%06d.sst", corrupt.FileNum))
	broken := map[string]bool{fmt.Sprintf("%06d.sst", lf[6].FileNum): true, fmt.Sprintf("%06d.sst", lf[134].FileNum): true}
	ffs := vfs.NewFaultFS(fs, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpOpen && broken[filepath.Base(path)] {
			return errors.New("r12: injected open failure")
		}
		return nil
	}))
	for _, par := range []int{1, 4} {
		t.Run(fmt.Sprintf("par%d", par), func(t *testing.T) {
			d := mustOpen(t, "/db", &Options{FS: ffs, DisableAutomaticCompactions: true, MultiGetParallelism: par,
				DisableBlockCache: true, DisableMmapReads: par == 1, LevelFilterPolicies: r12Known})
			defer d.Close()
			r11BatchPath(t, d)
			rng := rand.New(rand.NewSource(int64(par)))
			slot := r11SlotKeys(rng, lf, []int{6, 70, 134, 198, 6, 7, 70, 71, 134, 6, 5, 69}, 6)
			failed := 0
			check := r11CheckCounting(t, d, &failed)
			check(slot, "slot keys")
			check(slot[:64], "slot keys, 64")
			check(slot[:65], "slot keys, 65")
			colliding := r11Colliding(files, rng)
			for _, n := range []int{2, 64, 65, 129, 300} {
				check(r11Batch(rng, n, nkeys, append(colliding, slot...)), fmt.Sprintf("n=%d", n))
			}
			if failed == 0 {
				t.Fatalf("no key reached a broken table")
			}
		})
	}
}

// r12Corrupt rewrites the file name of fs with its last 8 bytes (a
// table's magic number) replaced by garbage.
func r12Corrupt(t *testing.T, fs vfs.FS, name string) {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	st, err := fs.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	copy(b[len(b)-8:], "garbage!")
	w, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReview12MultiGetPoolAcrossStores runs MultiGet and MultiGetInto
// concurrently on stores of different hash policies (exact A everywhere;
// the wrapped Bloom; Bloom and exact B alternating; Bloom), so the pooled
// scratch (key hashes in two slots, the tables list, the memo, the
// gathered arrays) passes from store to store: an answer must be the one
// Get gave before.
func TestReview12MultiGetPoolAcrossStores(t *testing.T) {
	iters := 200
	if raceEnabled || testing.Short() {
		iters = 50
	}
	r10bPoolAcross(t, [][]filter.Policy{
		{r10bExactA, r10bExactA, r10bExactA, r10bExactA, r10bExactA, r10bExactA, r10bExactA},
		{r12WrappedBloom, r12WrappedBloom, r12WrappedBloom, r12WrappedBloom, r12WrappedBloom, r12WrappedBloom, r12WrappedBloom},
		{filter.NewBloomPolicy(10), r10bExactB, filter.NewBloomPolicy(1), r10bExactB, filter.NewBloomPolicy(10), r10bExactA, filter.NewBloomPolicy(10)},
		{r10bExactB, filter.NewBloomPolicy(3), r10bExactA, filter.NewBloomPolicy(3), r10bExactB, filter.NewBloomPolicy(3), r10bExactA},
	}, func(s int) int { return 1 + 3*(s%2) }, iters, 100,
		func(rng *rand.Rand, it, g, nstores int) int { return (it + g) % nstores },
		func(rng *rand.Rand) int { return []int{2, 3, 64, 65, 129, 300}[rng.Intn(6)] })
}

// TestReview12MultiGetIntoAllocsCustomHashPolicy: MultiGetInto promises no
// allocation for absent keys (as a loop of Get). With a HashBatchPolicy of
// the caller's own (here the Bloom policy under another name, which
// allocates nothing), its hashed tables are probed through
// filter.MayContainHashBatchOf's fallback: it must allocate nothing
// either, as it did not before 4e29c58 (the queue's pooled arrays).
func TestReview12MultiGetIntoAllocsCustomHashPolicy(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, tc := range []struct {
		name string
		p    filter.Policy
	}{
		{"bloom", filter.NewBloomPolicy(10)},
		{"wrapped", r12WrappedBloom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const nkeys = 3000
			fs := vfs.NewMem()
			pol := []filter.Policy{tc.p, tc.p, tc.p, tc.p, tc.p, tc.p, tc.p}
			review9bBuild(t, fs, pol, nkeys)
			d := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true, MultiGetParallelism: 1, LevelFilterPolicies: pol})
			defer d.Close()
			d.loading.Wait()
			review9bDeep(t, d)
			for _, n := range []int{2, 64} {
				allocs := review9bAbsentAllocs(t, d, n, nkeys)
				if allocs > 0.5 {
					t.Errorf("%s: batch of %d absent keys: %.1f allocations a call", tc.name, n, allocs)
				}
			}
		})
	}
}

// TestReview12MultiGetRacingMixed runs MultiGet and MultiGetInto batches
// through snapshots while writers overwrite and delete keys, a goroutine
// flushes, and compactions rewrite levels whose policies differ (exact
// filters, Bloom at 2 bits, the wrapped Bloom, legacy Bloom): each batch
// must equal a Get loop through its snapshot. Then Close comes while
// batches run: a batch fails every key with ErrClosed or none.
func TestReview12MultiGetRacingMixed(t *testing.T) {
	const nkeys = 2500
	pol := []filter.Policy{r10bExactA, filter.NewBloomPolicy(2), r10bExactB, r12WrappedBloom, filter.NewLegacyBloomPolicy(1), r10bExactA, filter.NewBloomPolicy(10)}
	fs := vfs.NewMem()
	o := &Options{FS: fs, WriteBufferSize: 4 << 10, BlockSize: 128, LBaseMaxBytes: 8 << 10, LevelFilterPolicies: pol,
		LevelMultiplier: 2, TargetFileSize: 700, L0CompactionTrigger: 2, MultiGetParallelism: 2}
	d := mustOpen(t, "/db", o)
	for i := 0; i < nkeys; i++ {
		if err := d.Put(r11Key(i), []byte("v0"), nil); err != nil {
			t.Fatal(err)
		}
	}
	rounds, batches := 20000, 150
	if testing.Short() || raceEnabled {
		rounds, batches = 5000, 40
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errc := make(chan error, 16)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for r := 0; r < rounds; r++ {
				i := rng.Intn(nkeys)
				var err error
				if rng.Intn(5) == 0 {
					err = d.Delete(r11Key(i), nil)
				} else {
					err = d.Put(r11Key(i), []byte(fmt.Sprintf("w%d-%d", w, r)), nil)
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}(w)
	}
	fwg := r11KeepFlushing(d, stop, errc)
	var rwg sync.WaitGroup
	for g := 0; g < 3; g++ {
		rwg.Add(1)
		go func(g int) {
			defer rwg.Done()
			rng := rand.New(rand.NewSource(int64(40 + g)))
			for b := 0; b < batches; b++ {
				n := []int{2, 5, 64, 65, 129, 300}[rng.Intn(6)]
				keys := make([][]byte, n)
				for j := range keys {
					keys[j] = r11Key(rng.Intn(nkeys + 50))
					if rng.Intn(4) == 0 {
						keys[j] = append(keys[j], 'x')
					}
				}
				snap := d.NewSnapshot()
				ro := &ReadOptions{Snapshot: snap}
				var vals [][]byte
				var errs []error
				if b%2 == 0 {
					vals, errs = d.MultiGet(keys, ro)
				} else {
					vals, errs = make([][]byte, n), make([]error, n)
					if err := d.MultiGetInto(keys, vals, errs, ro); err != nil {
						errc <- err
						snap.Release()
						return
					}
				}
				for j, k := range keys {
					v, err := d.Get(k, ro)
					if !review9bSame(vals[j], errs[j], v, err) {
						errc <- fmt.Errorf("goroutine %d, batch %d of %d: [%d] %q = %q, %v; Get through the snapshot %q, %v", g, b, n, j, k, vals[j], errs[j], v, err)
						snap.Release()
						return
					}
				}
				snap.Release()
			}
		}(g)
	}
	rwg.Wait()
	wg.Wait()
	close(stop)
	fwg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	waitCompactions(t, d)
	review9bDeep(t, d)
	// Close while batches run.
	var cwg, started sync.WaitGroup
	for g := 0; g < 3; g++ {
		cwg.Add(1)
		started.Add(1)
		go func(g int) {
			defer cwg.Done()
			rng := rand.New(rand.NewSource(int64(80 + g)))
			for b := 0; ; b++ {
				if b == 2 {
					started.Done()
				}
				n := []int{2, 64, 65, 300}[rng.Intn(4)]
				keys := make([][]byte, n)
				for j := range keys {
					keys[j] = r11Key(rng.Intn(nkeys))
				}
				_, errs := d.MultiGet(keys, nil)
				closed := 0
				for _, err := range errs {
					switch {
					case errors.Is(err, ErrClosed):
						closed++
					case err != nil && !errors.Is(err, ErrNotFound):
						errc <- fmt.Errorf("goroutine %d, batch %d: %v", g, b, err)
						return
					}
				}
				if closed > 0 {
					if closed != n {
						errc <- fmt.Errorf("goroutine %d, batch %d: %d of %d keys closed", g, b, closed, n)
					}
					return
				}
			}
		}(g)
	}
	started.Wait()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	cwg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}
