package db

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// Adversarial review of 7c1ebf7 (MultiGet hashes each key once a call for
// the filters of a HashBatchPolicy, cached by the policy's name in the
// pooled scratch) and 42bd662 (FindFileBatch: four keys' searches at a
// time, a branch-free last step).

// r10bExact is a filter.HashBatchPolicy whose filters are exact: the sorted
// seeded FNV-1a hashes of the table's keys. Its KeyHash differs from the
// Bloom policies' (and from another seed's) for every key, and it has no
// false positives, so a probe with a hash of another policy, or of another
// key, or of another call's batch, says no to a key the table holds: the
// lookup misses it.
type r10bExact struct {
	seed uint64
	// hashes counts the KeyHash calls.
	hashes *atomic.Int64
}

func newR10bExact(seed uint64) r10bExact { return r10bExact{seed: seed, hashes: new(atomic.Int64)} }

func (p r10bExact) hash(key []byte) uint64 {
	h := fnv.New64a()
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], p.seed)
	h.Write(s[:])
	h.Write(key)
	return h.Sum64()
}

func (p r10bExact) Name() string { return fmt.Sprintf("test.r10b.Exact(%d)", p.seed) }
func (p r10bExact) NewBuilder() filter.Builder {
	return &r10bExactBuilder{p: p}
}

func (p r10bExact) mayContainHash(f []byte, h uint64) bool {
	if len(f)%8 != 0 {
		return true
	}
	n := len(f) / 8
	i := sort.Search(n, func(i int) bool { return binary.BigEndian.Uint64(f[8*i:]) >= h })
	return i < n && binary.BigEndian.Uint64(f[8*i:]) == h
}

func (p r10bExact) MayContain(f, key []byte) bool { return p.mayContainHash(f, p.hash(key)) }
func (p r10bExact) MayContainBatch(filters, keys [][]byte, maybe []bool) {
	for i, k := range keys {
		maybe[i] = p.MayContain(filters[i], k)
	}
}
func (p r10bExact) KeyHash(key []byte) uint64 {
	p.hashes.Add(1)
	return p.hash(key)
}
func (p r10bExact) MayContainHashBatch(filters [][]byte, hashes []uint64, maybe []bool) {
	for i, h := range hashes {
		maybe[i] = p.mayContainHash(filters[i], h)
	}
}

type r10bExactBuilder struct {
	p  r10bExact
	hs []uint64
}

func (b *r10bExactBuilder) AddKey(key []byte) { b.hs = append(b.hs, b.p.hash(key)) }
func (b *r10bExactBuilder) Finish(dst []byte) []byte {
	sort.Slice(b.hs, func(i, j int) bool { return b.hs[i] < b.hs[j] })
	var last uint64
	for i, h := range b.hs {
		if i > 0 && h == last {
			continue
		}
		dst = binary.BigEndian.AppendUint64(dst, h)
		last = h
	}
	b.hs = b.hs[:0]
	return dst
}

var (
	r10bExactA = newR10bExact(1)
	r10bExactB = newR10bExact(2)
)

// r10bKeyFormats are the user keys of the stores: db_bench-like keys, keys
// behind a long common prefix with suffixes of several lengths (the level
// index's prefix and zero-padded windows), and binary keys with 0x00 and
// 0xff bytes, the empty key among them.
var r10bKeyFormats = []struct {
	name string
	key  func(i int) []byte
}{
	{"short", func(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }},
	{"prefix", func(i int) []byte {
		k := fmt.Sprintf("tenant/0042/objects/%05d", i)
		switch i % 4 {
		case 1:
			k += "/v"
		case 2:
			k += "/version/0000000001"
		}
		return []byte(k)
	}},
	{"binary", func(i int) []byte {
		if i == 0 {
			return []byte{}
		}
		k := []byte{0xff, byte(i >> 8), byte(i)}
		return append(k, make([]byte, i%11)...)
	}},
}

// r10bBuild writes into fs a store of nkeys keys of keyf whose versions
// lie in several sorted levels (overwrites and deletions in each of six
// generations, pushed down by automatic compactions with tiny level
// targets), with options o (FS and the shape options set here), and
// closes it.
func r10bBuild(t *testing.T, fs vfs.FS, o Options, keyf func(int) []byte, nkeys int) {
	t.Helper()
	o.FS, o.WriteBufferSize, o.BlockSize, o.LBaseMaxBytes = fs, 4<<10, 256, 8<<10
	o.LevelMultiplier, o.TargetFileSize, o.L0CompactionTrigger = 2, 4<<10, 2
	d := mustOpen(t, "/db", &o)
	writeGenerations(t, d, keyf, nkeys, 6, 5)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeGenerations writes gens generations of keyf(0..nkeys-1) into d,
// each flushed and compacted: all of them in generation 0, then a share
// of them in each later one, a fifth of those as deletions, so that
// versions of a key lie in several levels. A value is "g<gen>-<i>", i in
// width digits.
func writeGenerations(t *testing.T, d *DB, keyf func(int) []byte, nkeys, gens, width int) {
	t.Helper()
	for gen := 0; gen < gens; gen++ {
		for i := 0; i < nkeys; i++ {
			if gen > 0 && (i+gen)%(gen+2) != 0 {
				continue
			}
			k := keyf(i)
			var err error
			if gen > 0 && (i*7+gen)%5 == 0 {
				err = d.Delete(k, nil)
			} else {
				err = d.Put(k, []byte(fmt.Sprintf("g%d-%0*d", gen, width, i)), nil)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		waitCompactions(t, d)
	}
}

// r10bBounds returns the user keys of every table bound of d's current
// version, with the keys just around each: a byte more (0x00 and 0xff),
// a byte less, and the last byte moved by one.
func r10bBounds(d *DB) [][]byte {
	ref := d.loadReadState()
	defer ref.unref()
	var out [][]byte
	for _, files := range ref.rs.v.Files {
		for _, f := range files {
			for _, b := range [][]byte{base.UserKey(f.Smallest), base.UserKey(f.Largest)} {
				b = append([]byte(nil), b...)
				out = append(out, b, append(append([]byte(nil), b...), 0), append(append([]byte(nil), b...), 0xff))
				if n := len(b); n > 0 {
					out = append(out, b[:n-1])
					if b[n-1] > 0 {
						c := append([]byte(nil), b...)
						c[n-1]--
						out = append(out, c)
					}
					if b[n-1] < 0xff {
						c := append([]byte(nil), b...)
						c[n-1]++
						out = append(out, c)
					}
				}
			}
		}
	}
	return out
}

// r10bProbeKeys draws n probe keys: present ones, absent ones around and
// between them, truncations (shorter than a level's common prefix),
// extensions, the empty key, table bounds, and duplicates.
func r10bProbeKeys(rng *rand.Rand, n, nkeys int, keyf func(int) []byte, bounds [][]byte) [][]byte {
	keys := make([][]byte, n)
	for j := range keys {
		k := keyf(rng.Intn(nkeys))
		switch r := rng.Intn(12); {
		case r == 0 && j > 0:
			k = keys[rng.Intn(j)]
		case r == 1:
			k = k[:rng.Intn(len(k)+1)]
		case r == 2:
			k = append(append([]byte(nil), k...), byte(rng.Intn(256)))
		case r == 3:
			k = []byte{}
		case r == 4 && len(bounds) > 0:
			k = bounds[rng.Intn(len(bounds))]
		case r == 5:
			k = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		case r == 6:
			k = keyf(nkeys + rng.Intn(10))
		}
		keys[j] = k
	}
	return keys
}

var r10bSizes = []int{1, 2, 3, 4, 5, 7, 8, 9, 63, 64, 65, 127, 128, 129, 1000}

// r10bMixes are per-level filter policies: HashBatchPolicies of different
// hashes level after level, with policies that are not (LevelDB's Bloom,
// blocked Bloom, binary fuse, none) between them.
var r10bMixes = []struct {
	name string
	o    Options
}{
	{"exactAB", Options{LevelFilterPolicies: []filter.Policy{r10bExactA, r10bExactB, r10bExactA, r10bExactB, r10bExactA, r10bExactB, r10bExactA}}},
	{"bloom-exact", Options{LevelFilterPolicies: []filter.Policy{filter.NewBloomPolicy(10), r10bExactA, filter.NewLegacyBloomPolicy(10), r10bExactB, filter.NewBloomPolicy(3), r10bExactA, filter.NewLegacyBloomPolicy(2)}}},
	{"zoo", Options{LevelFilterPolicies: []filter.Policy{r10bExactA, filter.None, filter.NewLevelDBBloomPolicy(10), r10bExactB,
		filter.NewBlockedBloomPolicy(10), filter.NewBinaryFusePolicy(8), r10bExactA}}},
	{"monkey", Options{FilterBudgetBitsPerKey: 5}},
	// A LevelDB-format store: its filters are per data block (Reader.Filter
	// gives no policy), probed key by key.
	{"leveldb", Options{Format: FormatLevelDB, FilterPolicy: filter.NewLevelDBBloomPolicy(10)}},
}

// TestReview10bMultiGetMixedHashes compares MultiGet and MultiGetInto
// with a Get loop (answers and per-level filter counts) on stores whose
// levels alternate filter policies of different key hashes, for three key
// shapes, at batch sizes around the four-key search groups and the 64-key
// chunks, with parallelism 1 and 8, at the latest state and through a
// snapshot.
func TestReview10bMultiGetMixedHashes(t *testing.T) {
	const nkeys = 1500
	for _, kf := range r10bKeyFormats {
		for _, mix := range r10bMixes {
			fs := vfs.NewMem()
			r10bBuild(t, fs, mix.o, kf.key, nkeys)
			for _, par := range []int{1, 8} {
				t.Run(fmt.Sprintf("%s/%s/par%d", kf.name, mix.name, par), func(t *testing.T) {
					o := mix.o
					o.FS, o.DisableAutomaticCompactions, o.MultiGetParallelism = fs, true, par
					d := mustOpen(t, "/db", &o)
					defer d.Close()
					d.loading.Wait()
					review9bDeep(t, d)
					snap := d.NewSnapshot()
					defer snap.Release()
					for i := 0; i < nkeys; i += 13 {
						d.Put(kf.key(i), []byte("new"), nil)
					}
					bounds := r10bBounds(d)
					rng := rand.New(rand.NewSource(int64(par)))
					sizes := r10bSizes
					if raceEnabled || testing.Short() {
						sizes = sizes[:len(sizes)-1] // not 1000
					}
					for _, n := range sizes {
						keys := r10bProbeKeys(rng, n, nkeys, kf.key, bounds)
						review9bCompare(t, d, keys, nil, fmt.Sprintf("latest n=%d", n))
						review9bCompare(t, d, keys, &ReadOptions{Snapshot: snap}, fmt.Sprintf("snapshot n=%d", n))
					}
					// Every table bound at once.
					review9bCompare(t, d, bounds, nil, "bounds")
				})
			}
		}
	}
}

// TestReview10bMultiGetLevel0Hashes: level-0 tables written with
// different policies (reopened with another level-0 policy between
// flushes) are probed table by table, newest first, each probe of another
// policy name than the last: the hashes must follow the policy.
func TestReview10bMultiGetLevel0Hashes(t *testing.T) {
	fs := vfs.NewMem()
	pols := []filter.Policy{r10bExactA, filter.NewBloomPolicy(10), r10bExactB, filter.NewLegacyBloomPolicy(10), r10bExactA, filter.None, r10bExactB}
	all := Options{FS: fs, DisableAutomaticCompactions: true, L0CompactionTrigger: 100,
		L0SlowdownWritesTrigger: 200, L0StopWritesTrigger: 300}
	// Every policy known to every open, so every table's filter is read.
	known := []filter.Policy{r10bExactA, r10bExactB}
	const nkeys = 700
	for gen, p := range pols {
		o := all
		o.LevelFilterPolicies = []filter.Policy{p, known[0], known[1]}
		d := mustOpen(t, "/db", &o)
		for i := gen; i < nkeys; i += 1 + gen%3 {
			if err := d.Put([]byte(fmt.Sprintf("key%05d", i)), []byte(fmt.Sprintf("g%d-%d", gen, i)), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
	for _, par := range []int{1, 8} {
		o := all
		o.LevelFilterPolicies, o.MultiGetParallelism = known, par
		d := mustOpen(t, "/db", &o)
		if n := d.Metrics().Levels[0].Files; n != len(pols) {
			d.Close()
			t.Fatalf("%d level-0 tables, want %d", n, len(pols))
		}
		rng := rand.New(rand.NewSource(int64(par)))
		keyf := func(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }
		bounds := r10bBounds(d)
		for _, n := range r10bSizes {
			keys := r10bProbeKeys(rng, n, nkeys, keyf, bounds)
			review9bCompare(t, d, keys, nil, fmt.Sprintf("par %d, n=%d", par, n))
		}
		d.Close()
	}
}

// TestReview10bMultiGetReopenOtherPolicy writes a store with one set of
// policies, reopens it with another FilterPolicy (tables of the old custom
// policies then have no filter a reader knows), writes and compacts
// part of it with the new policy, and compares MultiGet with Get.
func TestReview10bMultiGetReopenOtherPolicy(t *testing.T) {
	const nkeys = 1500
	keyf := r10bKeyFormats[1].key
	fs := vfs.NewMem()
	r10bBuild(t, fs, r10bMixes[1].o, keyf, nkeys)
	for step, fp := range []filter.Policy{r10bExactB, filter.NewLegacyBloomPolicy(7), filter.None, r10bExactA} {
		o := &Options{FS: fs, FilterPolicy: fp, WriteBufferSize: 4 << 10, TargetFileSize: 4 << 10, MultiGetParallelism: 1 + 7*(step%2)}
		d := mustOpen(t, "/db", o)
		d.loading.Wait()
		rng := rand.New(rand.NewSource(int64(step)))
		bounds := r10bBounds(d)
		for _, n := range []int{3, 64, 129, 1000} {
			keys := r10bProbeKeys(rng, n, nkeys, keyf, bounds)
			review9bCompare(t, d, keys, nil, fmt.Sprintf("reopened with %s, n=%d", fp.Name(), n))
		}
		// New tables with this policy next to the old ones.
		for i := step; i < nkeys; i += 5 {
			d.Put(keyf(i), []byte(fmt.Sprintf("s%d", step)), nil)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		lo, hi := keyf(nkeys/4*step), keyf(nkeys/4*step+nkeys/5)
		if err := d.CompactRange(lo, hi); err != nil {
			t.Fatal(err)
		}
		waitCompactions(t, d)
		bounds = r10bBounds(d)
		for _, n := range []int{4, 65, 128, 1000} {
			keys := r10bProbeKeys(rng, n, nkeys, keyf, bounds)
			review9bCompare(t, d, keys, nil, fmt.Sprintf("after writes with %s, n=%d", fp.Name(), n))
		}
		d.Close()
	}
}

// TestReview10bMultiGetPooledScratch runs MultiGet and MultiGetInto
// concurrently on two stores whose tables use different key hashes (all
// exact A; Bloom and exact B alternating), batches of random sizes and
// keys, so the pooled scratch and its key hashes pass from call to call,
// store to store and policy to policy: every answer must be the one a
// Get gave before.
func TestReview10bMultiGetPooledScratch(t *testing.T) {
	iters := 150
	if raceEnabled || testing.Short() {
		iters = 40
	}
	r10bPoolAcross(t, [][]filter.Policy{
		{r10bExactA, r10bExactA, r10bExactA, r10bExactA, r10bExactA, r10bExactA, r10bExactA},
		{filter.NewBloomPolicy(10), r10bExactB, filter.NewBloomPolicy(10), r10bExactB, filter.NewBloomPolicy(10), r10bExactB, filter.NewBloomPolicy(10)},
	}, func(s int) int { return 1 + 7*s }, iters, 0,
		func(rng *rand.Rand, it, g, nstores int) int { return rng.Intn(nstores) },
		func(rng *rand.Rand) int {
			n := r10bSizes[rng.Intn(len(r10bSizes))]
			if n == 1000 && rng.Intn(4) != 0 {
				n = 200
			}
			return n
		})
}

// r10bPoolAcross builds a store of 1,200 keys for each policy mix (one
// policy a level; MultiGetParallelism par(s) for the s-th), records
// Get's answers, then has four goroutines make iters MultiGet and
// MultiGetInto batches each across the stores (batch it of goroutine g
// on store pick(...), of size(rng) keys, present, absent and near
// misses; goroutine g's random source seeded seed+g), and checks every
// answer against Get's.
func r10bPoolAcross(t *testing.T, mixes [][]filter.Policy, par func(s int) int, iters int, seed int64,
	pick func(rng *rand.Rand, it, g, nstores int) int, size func(rng *rand.Rand) int) {
	t.Helper()
	const nkeys = 1200
	keyf := r10bKeyFormats[0].key
	type store struct {
		d    *DB
		want map[string]string // key -> value, "" for not found
	}
	var stores []store
	for s, pol := range mixes {
		fs := vfs.NewMem()
		r10bBuild(t, fs, Options{LevelFilterPolicies: pol}, keyf, nkeys)
		d := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true, LevelFilterPolicies: pol, MultiGetParallelism: par(s)})
		defer d.Close()
		d.loading.Wait()
		review9bDeep(t, d)
		want := map[string]string{}
		for i := 0; i < nkeys+20; i++ {
			for _, k := range [][]byte{keyf(i), append(keyf(i), 'x')} {
				v, err := d.Get(k, nil)
				switch {
				case err == nil:
					want[string(k)] = string(v)
				case r10bNotFound(err):
					want[string(k)] = ""
				default:
					t.Fatalf("Get(%q): %v", k, err)
				}
			}
		}
		stores = append(stores, store{d, want})
	}
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed + int64(g)))
			for it := 0; it < iters; it++ {
				st := stores[pick(rng, it, g, len(stores))]
				n := size(rng)
				keys := make([][]byte, n)
				for j := range keys {
					keys[j] = keyf(rng.Intn(nkeys + 20))
					if rng.Intn(4) == 0 {
						keys[j] = append(keys[j], 'x')
					}
				}
				var vals [][]byte
				var errs []error
				if it%2 == 0 {
					vals, errs = st.d.MultiGet(keys, nil)
				} else {
					vals, errs = make([][]byte, n), make([]error, n)
					if err := st.d.MultiGetInto(keys, vals, errs, nil); err != nil {
						errc <- err
						return
					}
				}
				for j, k := range keys {
					w := st.want[string(k)]
					switch {
					case errs[j] == nil && string(vals[j]) == w && w != "":
					case r10bNotFound(errs[j]) && w == "" && vals[j] == nil:
					default:
						errc <- fmt.Errorf("goroutine %d, batch %d of %d keys: [%d] %q = %q, %v; want %q", g, it, n, j, k, vals[j], errs[j], w)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

func r10bNotFound(err error) bool { return err != nil && errors.Is(err, ErrNotFound) }

// TestReview10bMultiGetHashesOnce: a batch over levels of one hashed
// policy hashes each key at most once a probe of a new policy name, and
// with a single policy once a call (7c1ebf7's claim); more would mean the
// cache is not used, fewer than the keys that reach a filter that it is
// shared across calls.
func TestReview10bMultiGetHashesOnce(t *testing.T) {
	const nkeys = 1500
	keyf := r10bKeyFormats[0].key
	p := newR10bExact(7)
	pol := []filter.Policy{p, p, p, p, p, p, p}
	fs := vfs.NewMem()
	r10bBuild(t, fs, Options{LevelFilterPolicies: pol}, keyf, nkeys)
	d := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true, LevelFilterPolicies: pol})
	defer d.Close()
	d.loading.Wait()
	review9bDeep(t, d)
	// The keys a table holds (with the memtable empty, each is found
	// through a filter probe, so each is hashed).
	var present [][]byte
	for i := 0; i < nkeys; i++ {
		if _, err := d.Get(keyf(i), nil); err == nil {
			present = append(present, keyf(i))
		}
	}
	rng := rand.New(rand.NewSource(3))
	for _, n := range []int{2, 5, 64, 65, 300} {
		for rep := 0; rep < 3; rep++ {
			keys := make([][]byte, n)
			for j := range keys {
				keys[j] = present[rng.Intn(len(present))]
			}
			before := p.hashes.Load()
			review9bCompare(t, d, keys, nil, fmt.Sprintf("n=%d", n))
			// review9bCompare makes one MultiGet and one MultiGetInto.
			if got := p.hashes.Load() - before; got != 2*int64(n) {
				t.Fatalf("batch of %d keys: %d KeyHash calls in a MultiGet and a MultiGetInto, want %d", n, got, 2*n)
			}
			// Absent keys and keys outside every table: never more than
			// once a key a call.
			keys = r10bProbeKeys(rng, n, nkeys, keyf, nil)
			before = p.hashes.Load()
			review9bCompare(t, d, keys, nil, fmt.Sprintf("n=%d", n))
			if got := p.hashes.Load() - before; got > 2*int64(n) {
				t.Fatalf("batch of %d keys: %d KeyHash calls in a MultiGet and a MultiGetInto, want at most %d", n, got, 2*n)
			}
		}
	}
}

// r10bLevel builds a Version whose level 1 holds tables with the given
// user-key bounds (sorted, disjoint or sharing a boundary).
func r10bLevel(t *testing.T, bounds [][2][]byte) *manifest.Version {
	t.Helper()
	e := &manifest.VersionEdit{}
	for i, b := range bounds {
		seq := uint64(1000 - i)
		e.NewFiles = append(e.NewFiles, manifest.NewFileEntry{Level: 1, Meta: &manifest.FileMetadata{
			FileNum: uint64(i + 1), Size: 1,
			Smallest: base.MakeInternalKey(b[0], seq, base.KindSet), Largest: base.MakeInternalKey(b[1], seq, base.KindSet),
			SmallestSeq: seq, LargestSeq: seq,
		}})
	}
	b := manifest.NewBuilder(nil)
	if err := b.Apply(e); err != nil {
		t.Fatal(err)
	}
	v, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// r10bFirstHolding returns the index of the first of bounds (tables'
// smallest and largest keys) that holds k, -1 when none does.
func r10bFirstHolding(bounds [][2][]byte, k []byte) int {
	for i, b := range bounds {
		if bytes.Compare(b[0], k) <= 0 && bytes.Compare(k, b[1]) <= 0 {
			return i
		}
	}
	return -1
}

// r10bSortedKeys returns n distinct random keys of r10bKey, sorted.
func r10bSortedKeys(rng *rand.Rand, prefix []byte, n int) []string {
	set := map[string]bool{}
	for len(set) < n {
		set[string(r10bKey(rng, prefix))] = true
	}
	sorted := make([]string, 0, n)
	for k := range set {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	return sorted
}

// r10bKey returns a random key over a small alphabet, with a prefix
// shared by most keys, of random length (zero included).
func r10bKey(rng *rand.Rand, prefix []byte) []byte {
	k := append([]byte(nil), prefix[:rng.Intn(len(prefix)+1)]...)
	if rng.Intn(3) != 0 {
		k = append(k[:0], prefix...)
	}
	alpha := []byte{0, 1, 'a', 'b', 0xfe, 0xff}
	for n := rng.Intn(12); n > 0; n-- {
		k = append(k, alpha[rng.Intn(len(alpha))])
	}
	return k
}

// TestReview10bFindFileBatch compares FindFileBatch with a scan of the
// level's tables on random levels of 1 to 200 tables (common prefixes of
// 0 to 20 bytes, keys shorter and longer than them, empty keys, bounds
// equal between neighbours), for batches of 1 to 200 keys holding the
// tables' bounds, keys next to them and random ones.
func TestReview10bFindFileBatch(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	ntables := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65, 100, 184, 200}
	iters := 400
	if raceEnabled {
		iters = 100
	}
	for it := 0; it < iters; it++ {
		prefix := make([]byte, rng.Intn(21))
		for i := range prefix {
			prefix[i] = []byte{'p', 0, 0xff, 'q'}[rng.Intn(4)]
		}
		nt := ntables[it%len(ntables)]
		// 2*nt distinct sorted keys; a table is [keys[2i], keys[2i+1]],
		// sometimes a single key, sometimes sharing its neighbour's bound.
		sorted := r10bSortedKeys(rng, prefix, 2*nt)
		var bounds [][2][]byte
		for i := 0; i < nt; i++ {
			lo, hi := []byte(sorted[2*i]), []byte(sorted[2*i+1])
			if rng.Intn(6) == 0 {
				hi = lo
			}
			bounds = append(bounds, [2][]byte{lo, hi})
		}
		v := r10bLevel(t, bounds)
		shared := v.SharedBoundaries[1]
		if shared {
			t.Fatalf("disjoint bounds made a level with shared boundaries")
		}
		n := []int{1, 2, 3, 4, 5, 7, 8, 9, 63, 64, 65, 128, 129, 200}[rng.Intn(14)]
		keys := make([][]byte, n)
		for j := range keys {
			switch r := rng.Intn(6); {
			case r < 2:
				b := bounds[rng.Intn(nt)][rng.Intn(2)]
				keys[j] = append([]byte(nil), b...)
				if rng.Intn(2) == 0 {
					if rng.Intn(2) == 0 && len(b) > 0 {
						keys[j] = keys[j][:len(b)-1]
					} else {
						keys[j] = append(keys[j], byte(rng.Intn(3))*0x7f)
					}
				}
			case r == 2:
				keys[j] = nil
			default:
				keys[j] = r10bKey(rng, prefix)
			}
		}
		at := make([]int, n+1)
		at[n] = -7
		v.FindFileBatch(1, keys, at[:n])
		if at[n] != -7 {
			t.Fatalf("FindFileBatch wrote past its keys")
		}
		for j, k := range keys {
			want := r10bFirstHolding(bounds, k)
			if at[j] != want {
				t.Fatalf("%d tables (prefix %q), batch of %d: key %d %q: FindFileBatch %d, scan %d (bounds %q)",
					nt, prefix, n, j, k, at[j], want, bounds)
			}
			var ff int = -1
			if fs := v.FindFiles(1, k); len(fs) > 0 {
				ff = int(fs[0].FileNum) - 1
			}
			if ff != want {
				t.Fatalf("%d tables: key %q: FindFiles %d, scan %d", nt, k, ff, want)
			}
		}
	}
}

// TestReview10bFindFileBatchShared: on a level whose neighbours share a
// boundary key (a LevelDB level), FindFileBatch gives each key its first
// table.
func TestReview10bFindFileBatchShared(t *testing.T) {
	rng := rand.New(rand.NewSource(43))
	for it := 0; it < 200; it++ {
		nt := 1 + rng.Intn(40)
		prefix := []byte("common/prefix/")[:rng.Intn(15)]
		sorted := r10bSortedKeys(rng, prefix, nt+1)
		var bounds [][2][]byte
		for i := 0; i < nt; i++ {
			// Table i is [sorted[i], sorted[i+1]]: every inner bound shared.
			bounds = append(bounds, [2][]byte{[]byte(sorted[i]), []byte(sorted[i+1])})
		}
		v := r10bLevel(t, bounds)
		if nt > 1 && !v.SharedBoundaries[1] {
			t.Fatalf("no shared boundaries")
		}
		n := 1 + rng.Intn(150)
		keys := make([][]byte, n)
		for j := range keys {
			if rng.Intn(2) == 0 {
				keys[j] = []byte(sorted[rng.Intn(len(sorted))])
			} else {
				keys[j] = r10bKey(rng, prefix)
			}
		}
		at := make([]int, n)
		v.FindFileBatch(1, keys, at)
		for j, k := range keys {
			want := r10bFirstHolding(bounds, k)
			if at[j] != want {
				t.Fatalf("%d tables sharing bounds, batch of %d: key %q: FindFileBatch %d, first table holding it %d", nt, n, k, at[j], want)
			}
		}
	}
}

// r10bTagged is a filter policy of a type Go cannot compare (it holds a
// slice), used by value as policies commonly are: the Bloom policy's
// filters under another name, a HashBatchPolicy.
type r10bTagged struct {
	filter.Policy
	tags []string
}

func (p r10bTagged) Name() string { return "test.r10b.Tagged" }
func (p r10bTagged) MayContainBatch(filters, keys [][]byte, maybe []bool) {
	p.Policy.(filter.BatchPolicy).MayContainBatch(filters, keys, maybe)
}
func (p r10bTagged) KeyHash(key []byte) uint64 { return p.Policy.(filter.HashBatchPolicy).KeyHash(key) }
func (p r10bTagged) MayContainHashBatch(filters [][]byte, hashes []uint64, maybe []bool) {
	p.Policy.(filter.HashBatchPolicy).MayContainHashBatch(filters, hashes, maybe)
}

// TestReview10bMultiGetUncomparablePolicy: nothing in filter.Policy asks
// for a comparable type, and Get works with one; MultiGet, whose probe
// checks that the queued tables share a policy with p != policy, must
// too (comparing two interfaces holding the same uncomparable type
// panics).
func TestReview10bMultiGetUncomparablePolicy(t *testing.T) {
	pol := r10bTagged{Policy: filter.NewBloomPolicy(10), tags: []string{"x"}}
	const nkeys = 1500
	keyf := r10bKeyFormats[0].key
	fs := vfs.NewMem()
	r10bBuild(t, fs, Options{FilterPolicy: pol}, keyf, nkeys)
	d := mustOpen(t, "/db", &Options{FS: fs, FilterPolicy: pol, DisableAutomaticCompactions: true})
	defer d.Close()
	d.loading.Wait()
	review9bDeep(t, d)
	if m := d.Metrics(); m.Levels[0].Files+m.Levels[1].Files+m.Levels[2].Files < 2 {
		t.Fatalf("want tables to probe together")
	}
	rng := rand.New(rand.NewSource(5))
	for _, n := range []int{2, 64, 200} {
		keys := r10bProbeKeys(rng, n, nkeys, keyf, nil)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("MultiGet of %d keys panicked: %v", n, r)
				}
			}()
			review9bCompare(t, d, keys, nil, fmt.Sprintf("n=%d", n))
		}()
	}
}
