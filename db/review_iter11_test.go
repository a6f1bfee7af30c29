package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// Adversarial review of 7f04977 (MultiGet's deeper: a direct-mapped memo
// of 64 opened tables a level, keys gathered once for a batch of at most
// 64, queueing by hand), 77bbe7a (memtable.Get answers an empty memtable
// at once), cdd8f4a (a Reader keeps its policy's name and the caller's
// copy of the prefix extractor's; PrefixFiltered compares prefixName) and
// the DB-level consequences of each.

func r11Key(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }

// r11BuildWide writes into fs a store of nkeys keys whose sorted levels
// hold many small tables (with 16,000 keys, two levels of well over 128
// tables), versions of the keys in several levels (overwrites and
// deletions in each of four generations), and closes it.
func r11BuildWide(t *testing.T, fs vfs.FS, o Options, nkeys int) {
	t.Helper()
	o.FS, o.WriteBufferSize, o.BlockSize, o.LBaseMaxBytes = fs, 8<<10, 128, 16<<10
	o.LevelMultiplier, o.TargetFileSize, o.L0CompactionTrigger = 4, 700, 2
	d := mustOpen(t, "/db", &o)
	writeGenerations(t, d, r11Key, nkeys, 4, 6)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// r11Files returns a copy of the current version's files, level by level.
func r11Files(d *DB) (files [NumLevels][]*manifest.FileMetadata) {
	ref := d.loadReadState()
	defer ref.unref()
	for l, fs := range ref.rs.v.Files {
		files[l] = append([]*manifest.FileMetadata(nil), fs...)
	}
	return files
}

// r11TableKeys returns keys that land in table f: its bounds, and its
// bounds' neighbours that still lie inside it (present or absent).
func r11TableKeys(f *manifest.FileMetadata) [][]byte {
	lo := append([]byte(nil), base.UserKey(f.Smallest)...)
	hi := append([]byte(nil), base.UserKey(f.Largest)...)
	out := [][]byte{lo, hi, append(append([]byte(nil), lo...), 0)}
	if n := len(hi); n > 0 && hi[n-1] > 0 {
		c := append([]byte(nil), hi...)
		c[n-1]--
		if bytes.Compare(c, lo) >= 0 {
			out = append(out, c)
		}
	}
	return out
}

// r11Colliding returns, for each level of more than 64 tables, keys of
// tables whose indexes differ by multiples of 64 (so they share a slot of
// deeper's memo), interleaved so that consecutive keys alternate between
// the tables of one slot: a, a+64, a, a+128, a+64, ...
func r11Colliding(files [NumLevels][]*manifest.FileMetadata, rng *rand.Rand) [][]byte {
	var out [][]byte
	for l := 1; l < NumLevels; l++ {
		n := len(files[l])
		if n <= 64 {
			continue
		}
		for _, a := range []int{0, 1, 17, 63, rng.Intn(64)} {
			var group [][][]byte
			for i := a; i < n; i += 64 {
				group = append(group, r11TableKeys(files[l][i]))
			}
			if len(group) < 2 {
				continue
			}
			for round := 0; round < 4; round++ {
				for g := range group {
					gg := (g + round) % len(group)
					keys := group[gg]
					out = append(out, keys[rng.Intn(len(keys))])
					out = append(out, group[0][rng.Intn(len(group[0]))])
				}
			}
		}
	}
	return out
}

// r11Batch draws n probe keys: present and absent ones, keys landing in
// colliding tables, duplicates; in random, sorted or reversed order.
func r11Batch(rng *rand.Rand, n, nkeys int, colliding [][]byte) [][]byte {
	keys := make([][]byte, n)
	for j := range keys {
		switch r := rng.Intn(10); {
		case r < 3 && len(colliding) > 0:
			keys[j] = colliding[rng.Intn(len(colliding))]
		case r == 3 && j > 0:
			keys[j] = keys[rng.Intn(j)]
		case r == 4:
			keys[j] = append(r11Key(rng.Intn(nkeys)), 'x')
		case r == 5:
			keys[j] = r11Key(nkeys + rng.Intn(100))
		default:
			keys[j] = r11Key(rng.Intn(nkeys))
		}
	}
	switch rng.Intn(3) {
	case 1:
		sort.Slice(keys, func(a, b int) bool { return bytes.Compare(keys[a], keys[b]) < 0 })
	case 2:
		sort.Slice(keys, func(a, b int) bool { return bytes.Compare(keys[a], keys[b]) > 0 })
	}
	return keys
}

func r11Sizes() []int {
	if testing.Short() || raceEnabled {
		return []int{2, 64, 65, 129}
	}
	return []int{2, 63, 64, 65, 127, 128, 129, 300, 1000}
}

// TestReview11MultiGetWideLevels compares MultiGet and MultiGetInto with a
// Get loop (answers, per-level filter counts and, without a block cache,
// the blocks read) on a store with two sorted levels of more than 128
// tables, level-0 tables and a memtable, for batches around the 64-key
// gathering and the 64-slot memo, many of whose keys fall in tables of
// one memo slot, at the latest state and through a snapshot.
func TestReview11MultiGetWideLevels(t *testing.T) {
	const nkeys = 16000
	type variant struct {
		name     string
		o        Options // the build's and the open's
		readOnly bool
	}
	variants := []variant{
		{"par1-nocache", Options{MultiGetParallelism: 1, DisableBlockCache: true}, false},
		{"par4", Options{MultiGetParallelism: 4}, false},
		{"bloom1", Options{MultiGetParallelism: 1, DisableBlockCache: true, FilterPolicy: filter.NewBloomPolicy(1)}, false},
		{"readonly", Options{MultiGetParallelism: 1, DisableBlockCache: true}, true},
	}
	if !testing.Short() && !raceEnabled {
		// Per-level policies of several key hashes and kinds
		// (review_iter10b_test.go), LevelDB's format among them.
		for _, mix := range r10bMixes {
			o := mix.o
			o.MultiGetParallelism, o.DisableBlockCache = 1, true
			variants = append(variants, variant{"mix-" + mix.name, o, false})
		}
	}
	for _, tc := range variants {
		t.Run(tc.name, func(t *testing.T) {
			mfs := vfs.NewMem()
			r11BuildWide(t, mfs, tc.o, nkeys)
			o := tc.o
			o.FS, o.DisableAutomaticCompactions, o.ReadOnly = mfs, true, tc.readOnly
			o.L0CompactionTrigger, o.L0SlowdownWritesTrigger, o.L0StopWritesTrigger = 50, 60, 70
			d := mustOpen(t, "/db", &o)
			defer d.Close()
			d.loading.Wait()
			files := r11Files(d)
			wide := 0
			for l := 1; l < NumLevels; l++ {
				if len(files[l]) > 128 {
					wide++
				}
			}
			if wide < 1 {
				t.Fatalf("no sorted level of more than 128 tables: %v", r11Counts(files))
			}
			r11BatchPath(t, d)
			rng := rand.New(rand.NewSource(11))
			colliding := r11Colliding(files, rng)
			snap := d.NewSnapshot()
			defer snap.Release()
			// Level-0 tables and a memtable above the sorted levels.
			for gen := 0; gen < 3 && !tc.readOnly; gen++ {
				for i := gen; i < nkeys; i += 97 + gen {
					if i%3 == 0 {
						d.Delete(r11Key(i), nil)
					} else {
						d.Put(r11Key(i), []byte(fmt.Sprintf("l0-%d-%d", gen, i)), nil)
					}
				}
				if gen < 2 {
					if err := d.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n := d.Metrics().Levels[0].Files; n < 2 && !tc.readOnly {
				t.Fatalf("%d level-0 tables, want 2", n)
			}
			for _, n := range r11Sizes() {
				for rep := 0; rep < 2; rep++ {
					keys := r11Batch(rng, n, nkeys, colliding)
					review9bCompare(t, d, keys, nil, fmt.Sprintf("latest n=%d", n))
					review9bCompare(t, d, keys, &ReadOptions{Snapshot: snap}, fmt.Sprintf("snapshot n=%d", n))
				}
			}
			// Only colliding keys, in one batch and in batches of 65.
			review9bCompare(t, d, colliding, nil, "all colliding")
			for s := 0; s+65 <= len(colliding); s += 65 * 7 {
				review9bCompare(t, d, colliding[s:s+65], &ReadOptions{Snapshot: snap}, "colliding 65")
			}
		})
	}
}

// r11BatchPath requires that MultiGet on d takes its batched path (no
// range tombstones, no level whose tables share a boundary key), not the
// loop of Get it falls back to.
func r11BatchPath(t *testing.T, d *DB) {
	t.Helper()
	ref := d.loadReadState()
	defer ref.unref()
	if ref.rs.hasRangeDels() || ref.rs.v.SharedBoundaries != ([manifest.NumLevels]bool{}) {
		t.Fatalf("MultiGet would fall back to Get: range tombstones %v, shared boundaries %v", ref.rs.hasRangeDels(), ref.rs.v.SharedBoundaries)
	}
}

func r11Counts(files [NumLevels][]*manifest.FileMetadata) []int {
	var c []int
	for _, f := range files {
		c = append(c, len(f))
	}
	return c
}

// TestReview11MultiGetWideOpenFaults: in a level of more than 128
// tables, tables that share a memo slot with healthy ones cannot be
// opened. A batch whose keys alternate between a broken table and its
// healthy slot-mates (memo hits, the failed path, memo replacements) must
// answer every key as Get does, errors and filter counts included.
func TestReview11MultiGetWideOpenFaults(t *testing.T) {
	const nkeys = 16000
	fs := vfs.NewMem()
	r11BuildWide(t, fs, Options{}, nkeys)
	var files [NumLevels][]*manifest.FileMetadata
	{
		d := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true})
		files = r11Files(d)
		d.Close()
	}
	_, lf := r11WidestLevel(t, files)
	for _, tc := range []struct {
		name   string
		broken []int // indexes in the level
	}{
		{"a", []int{5}},
		{"a+64", []int{69}},
		{"a-and-a+64", []int{5, 69}},
		{"a-and-a+128", []int{5, 133}},
		{"two-slots", []int{5, 6, 70}},
	} {
		for _, par := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/par%d", tc.name, par), func(t *testing.T) {
				broken := map[string]bool{}
				for _, i := range tc.broken {
					broken[fmt.Sprintf("%06d.sst", lf[i].FileNum)] = true
				}
				ffs := vfs.NewFaultFS(fs, vfs.InjectorFunc(func(op vfs.Op, path string) error {
					if op == vfs.OpOpen && broken[filepath.Base(path)] {
						return errors.New("r11: injected open failure")
					}
					return nil
				}))
				d := mustOpen(t, "/db", &Options{FS: ffs, DisableAutomaticCompactions: true, MultiGetParallelism: par,
					DisableBlockCache: true, DisableMmapReads: par == 1})
				defer d.Close()
				d.loading.Wait()
				r11BatchPath(t, d)
				rng := rand.New(rand.NewSource(int64(len(tc.broken)*10 + par)))
				// Keys of slot 5 (and 6): tables 5, 69, 133, 197 of the
				// level, alternating.
				slot := r11SlotKeys(rng, lf, []int{69, 5, 69, 133, 5, 197, 69, 6, 70, 6, 134}, 3)
				failed := 0
				check := r11CheckCounting(t, d, &failed)
				check(slot, "slot keys")
				check(slot[:min(64, len(slot))], "slot keys, 64")
				if len(slot) > 65 {
					check(slot[:65], "slot keys, 65")
				}
				colliding := r11Colliding(files, rng)
				for _, n := range r11Sizes() {
					keys := r11Batch(rng, n, nkeys, append(colliding, slot...))
					check(keys, fmt.Sprintf("n=%d", n))
				}
				if failed == 0 {
					t.Fatalf("no key reached a broken table")
				}
			})
		}
	}
}

// r11WidestLevel returns the sorted level of files with the most
// tables, and its tables; it fails t unless that level has more than 128.
func r11WidestLevel(t *testing.T, files [NumLevels][]*manifest.FileMetadata) (int, []*manifest.FileMetadata) {
	t.Helper()
	level := 0
	for l := 1; l < NumLevels; l++ {
		if len(files[l]) > 128 && (level == 0 || len(files[l]) > len(files[level])) {
			level = l
		}
	}
	if level == 0 {
		t.Fatalf("no sorted level of more than 128 tables: %v", r11Counts(files))
	}
	return level, files[level]
}

// r11KeepFlushing flushes d over and over until stop closes, sending a
// failed flush to errc; the returned WaitGroup is done when it stops.
func r11KeepFlushing(d *DB, stop <-chan struct{}, errc chan<- error) *sync.WaitGroup {
	var fwg sync.WaitGroup
	fwg.Add(1)
	go func() {
		defer fwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := d.Flush(); err != nil {
				errc <- err
				return
			}
		}
	}()
	return &fwg
}

// r11SlotKeys draws a key of each of the level's tables at the indexes of
// tables (those it has), rounds times: keys whose tables share slots of
// MultiGet's memo when the indexes differ by 64.
func r11SlotKeys(rng *rand.Rand, lf []*manifest.FileMetadata, tables []int, rounds int) [][]byte {
	var slot [][]byte
	for round := 0; round < rounds; round++ {
		for _, a := range tables {
			if a < len(lf) {
				ks := r11TableKeys(lf[a])
				slot = append(slot, ks[rng.Intn(len(ks))])
			}
		}
	}
	return slot
}

// r11CheckCounting returns a check that compares a MultiGet of keys with
// Get (review9bCompare) and adds to *failed the keys Get failed on.
func r11CheckCounting(t *testing.T, d *DB, failed *int) func(keys [][]byte, what string) {
	return func(keys [][]byte, what string) {
		t.Helper()
		review9bCompare(t, d, keys, nil, what)
		for _, k := range keys {
			if _, err := d.Get(k, nil); err != nil && !errors.Is(err, ErrNotFound) {
				*failed++
			}
		}
	}
}

// TestReview11MultiGetRacingWrites runs batches of MultiGet through
// snapshots while writers overwrite and delete keys, memtables switch,
// flush and compact into levels of many small tables, and snapshots are
// released: each batch must equal a Get loop through the same snapshot.
// Batches without a snapshot must see every write acknowledged before
// they began.
func TestReview11MultiGetRacingWrites(t *testing.T) {
	const nkeys = 3000
	fs := vfs.NewMem()
	o := &Options{FS: fs, WriteBufferSize: 4 << 10, BlockSize: 128, LBaseMaxBytes: 16 << 10,
		LevelMultiplier: 4, TargetFileSize: 700, L0CompactionTrigger: 2, MultiGetParallelism: 2}
	d := mustOpen(t, "/db", o)
	defer d.Close()
	for i := 0; i < nkeys; i++ {
		if err := d.Put(r11Key(i), []byte("v0-0"), nil); err != nil {
			t.Fatal(err)
		}
	}
	// acked[i] is the version of key i last acknowledged (each key has
	// one writer, which writes "v<version>-..." or deletes at odd versions
	// of keys divisible by 7).
	acked := make([]atomic.Int64, nkeys)
	const writers = 2
	rounds := 4000
	batches := 60
	if testing.Short() || raceEnabled {
		rounds, batches = 1200, 20
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errc := make(chan error, 16)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for r := 0; r < rounds; r++ {
				i := rng.Intn(nkeys/writers)*writers + w
				ver := acked[i].Load() + 1
				var err error
				if i%7 == 0 && ver%2 == 1 {
					err = d.Delete(r11Key(i), nil)
				} else {
					err = d.Put(r11Key(i), []byte(fmt.Sprintf("v%d-%d", ver, r)), nil)
				}
				if err != nil {
					errc <- err
					return
				}
				acked[i].Store(ver)
			}
		}(w)
	}
	fwg := r11KeepFlushing(d, stop, errc)
	version := func(v []byte, err error) (int64, error) {
		if errors.Is(err, ErrNotFound) {
			return -1, nil // a deletion
		}
		if err != nil {
			return 0, err
		}
		s := string(v)
		if len(s) < 2 || s[0] != 'v' {
			return 0, fmt.Errorf("value %q", v)
		}
		j := bytes.IndexByte(v, '-')
		return strconv.ParseInt(s[1:j], 10, 64)
	}
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(100 + g)))
			sizes := []int{2, 64, 65, 129, 200}
			for b := 0; b < batches; b++ {
				n := sizes[rng.Intn(len(sizes))]
				keys := make([][]byte, n)
				idx := make([]int, n)
				for j := range keys {
					idx[j] = rng.Intn(nkeys)
					keys[j] = r11Key(idx[j])
				}
				if b%2 == 0 {
					snap := d.NewSnapshot()
					vals, errs := d.MultiGet(keys, &ReadOptions{Snapshot: snap})
					for j, k := range keys {
						v, err := d.Get(k, &ReadOptions{Snapshot: snap})
						if !review9bSame(vals[j], errs[j], v, err) {
							errc <- fmt.Errorf("batch %d (%d keys) through a snapshot: MultiGet[%d] %q = %q, %v; Get = %q, %v", b, n, j, k, vals[j], errs[j], v, err)
							snap.Release()
							return
						}
					}
					snap.Release()
					continue
				}
				lo := make([]int64, n)
				for j, i := range idx {
					lo[j] = acked[i].Load()
				}
				vals, errs := d.MultiGet(keys, nil)
				for j, k := range keys {
					ver, err := version(vals[j], errs[j])
					if err != nil {
						errc <- fmt.Errorf("MultiGet %q: %v", k, err)
						return
					}
					i := idx[j]
					want := lo[j]
					deleted := i%7 == 0 && want%2 == 1
					switch {
					case ver == -1 && !deleted && want >= 0:
						// Not found: only right if a later deletion
						// came (a newer version than want, odd).
						if i%7 != 0 {
							errc <- fmt.Errorf("batch %d: MultiGet %q not found; version %d was acknowledged before", b, k, want)
							return
						}
					case ver >= 0 && ver < want:
						errc <- fmt.Errorf("batch %d: MultiGet %q = version %d; version %d was acknowledged before", b, k, ver, want)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait() // writers and readers
	close(stop)
	fwg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	// Final state: MultiGet equals a Get loop, and a model of the acked
	// versions.
	waitCompactions(t, d)
	keys := make([][]byte, nkeys)
	for i := range keys {
		keys[i] = r11Key(i)
	}
	review9bCompare(t, d, keys[:1000], nil, "final")
	for i := 0; i < nkeys; i++ {
		v, err := d.Get(keys[i], nil)
		ver, perr := version(v, err)
		if perr != nil {
			t.Fatal(perr)
		}
		want := acked[i].Load()
		if i%7 == 0 && want%2 == 1 {
			want = -1
		}
		if ver != want {
			t.Fatalf("final Get %q = version %d, want %d", keys[i], ver, want)
		}
	}
}

// r11Model reads every key of 0..n (and an absent neighbour of each) with
// Get: key -> value, "" for not found.
func r11Model(t *testing.T, d *DB, n int) map[string]string {
	t.Helper()
	m := map[string]string{}
	for i := 0; i < n; i++ {
		for _, k := range [][]byte{r11Key(i), append(r11Key(i), 'x')} {
			v, err := d.Get(k, nil)
			switch {
			case err == nil:
				m[string(k)] = string(v)
			case errors.Is(err, ErrNotFound):
				m[string(k)] = ""
			default:
				t.Fatalf("Get(%q): %v", k, err)
			}
		}
	}
	return m
}

// r11CheckModel checks a batch's answers against m; a batch may instead
// fail as a whole with allowed (every entry that error).
func r11CheckModel(m map[string]string, keys, vals [][]byte, errs []error, allowed error) error {
	whole := 0
	for j := range keys {
		if allowed != nil && errors.Is(errs[j], allowed) {
			whole++
		}
	}
	if whole > 0 {
		if whole != len(keys) {
			return fmt.Errorf("%d of %d entries failed with %v, the others not", whole, len(keys), allowed)
		}
		return nil
	}
	for j, k := range keys {
		w := m[string(k)]
		switch {
		case errs[j] == nil && w != "" && string(vals[j]) == w:
		case errs[j] != nil && errors.Is(errs[j], ErrNotFound) && w == "" && vals[j] == nil:
		default:
			return fmt.Errorf("[%d] %q = %q, %v; want %q", j, k, vals[j], errs[j], w)
		}
	}
	return nil
}

// TestReview11MultiGetRacingClose: MultiGet and MultiGetInto of batches
// of 2 to 200 keys on a store of wide levels while Close runs. Each batch
// answers every key as the model does, or fails every key with
// ErrClosed; nothing panics or hangs, and the store reopens.
func TestReview11MultiGetRacingClose(t *testing.T) {
	const nkeys = 16000
	reps := 4
	if testing.Short() || raceEnabled {
		reps = 2
	}
	fs := vfs.NewMem()
	r11BuildWide(t, fs, Options{}, nkeys)
	for rep := 0; rep < reps; rep++ {
		d := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true, MultiGetParallelism: 1 + rep%2*3})
		r11BatchPath(t, d)
		m := r11Model(t, d, nkeys/8)
		var wg sync.WaitGroup
		errc := make(chan error, 4)
		var started sync.WaitGroup
		for g := 0; g < 3; g++ {
			wg.Add(1)
			started.Add(1)
			go func(g int) {
				defer wg.Done()
				rng := rand.New(rand.NewSource(int64(rep*10 + g)))
				sizes := []int{2, 64, 65, 129, 200}
				for b := 0; ; b++ {
					if b == 3 {
						started.Done()
					}
					n := sizes[rng.Intn(len(sizes))]
					keys := make([][]byte, n)
					for j := range keys {
						keys[j] = r11Key(rng.Intn(nkeys / 8))
						if rng.Intn(3) == 0 {
							keys[j] = append(keys[j], 'x')
						}
					}
					var vals [][]byte
					var errs []error
					if b%2 == 0 {
						vals, errs = d.MultiGet(keys, nil)
					} else {
						vals, errs = make([][]byte, n), make([]error, n)
						if err := d.MultiGetInto(keys, vals, errs, nil); err != nil {
							errc <- err
							return
						}
					}
					if err := r11CheckModel(m, keys, vals, errs, ErrClosed); err != nil {
						errc <- fmt.Errorf("goroutine %d, batch %d: %v", g, b, err)
						return
					}
					if errors.Is(errs[0], ErrClosed) {
						return
					}
				}
			}(g)
		}
		started.Wait()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
	}
	d := mustOpen(t, "/db", &Options{FS: fs})
	if _, err := d.Get(r11Key(1), nil); err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	d.Close()
}

// TestReview11MultiGetSnapshotRelease: batches through a snapshot while
// another goroutine releases it and writers overwrite every key and
// compactions run: a batch answers as of the snapshot (the model taken
// when it was made) or fails every key with ErrSnapshotReleased.
func TestReview11MultiGetSnapshotRelease(t *testing.T) {
	const nkeys = 4000
	fs := vfs.NewMem()
	r11BuildWide(t, fs, Options{}, nkeys)
	d := mustOpen(t, "/db", &Options{FS: fs, WriteBufferSize: 8 << 10, BlockSize: 128, LBaseMaxBytes: 16 << 10,
		LevelMultiplier: 4, TargetFileSize: 700, L0CompactionTrigger: 2, MultiGetParallelism: 2})
	defer d.Close()
	rounds := 12
	if testing.Short() || raceEnabled {
		rounds = 5
	}
	rng := rand.New(rand.NewSource(5))
	for r := 0; r < rounds; r++ {
		m := r11Model(t, d, nkeys/4)
		snap := d.NewSnapshot()
		var wg sync.WaitGroup
		errc := make(chan error, 4)
		// Writers: overwrite or delete the keys the readers read.
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for i := r % 3; i < nkeys/4; i += 2 {
				var err error
				if i%5 == r%5 {
					err = d.Delete(r11Key(i), nil)
				} else {
					err = d.Put(r11Key(i), []byte(fmt.Sprintf("r%d-%d", r, i)), nil)
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}(r)
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func(seed int64) {
				defer wg.Done()
				rng := rand.New(rand.NewSource(seed))
				for b := 0; b < 30; b++ {
					n := []int{2, 65, 129, 300}[rng.Intn(4)]
					keys := make([][]byte, n)
					for j := range keys {
						keys[j] = r11Key(rng.Intn(nkeys / 4))
						if rng.Intn(4) == 0 {
							keys[j] = append(keys[j], 'x')
						}
					}
					vals, errs := d.MultiGet(keys, &ReadOptions{Snapshot: snap})
					if err := r11CheckModel(m, keys, vals, errs, ErrSnapshotReleased); err != nil {
						errc <- fmt.Errorf("round %d, batch %d: %v", r, b, err)
						return
					}
				}
			}(int64(r*10 + g))
		}
		// Release the snapshot somewhere in the middle.
		time.Sleep(time.Duration(rng.Intn(3000)) * time.Microsecond)
		snap.Release()
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
	}
}

// TestReview11AckedWriteVisible: a writer acknowledges keys one after
// another into a store whose 1 KiB memtable switches every few writes (the
// new memtable empty while the frozen one holds the data, flushes and
// compactions running); readers check that the newest acknowledged key is
// found by Get, MultiGet (batch and one key), and an iterator, at every
// moment.
func TestReview11AckedWriteVisible(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), WriteBufferSize: 1 << 10, TargetFileSize: 2 << 10,
		LBaseMaxBytes: 8 << 10, L0CompactionTrigger: 2})
	defer d.Close()
	n := 6000
	if testing.Short() || raceEnabled {
		n = 1500
	}
	var ackd atomic.Int64
	ackd.Store(-1)
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			if err := d.Put(r11Key(i), []byte(fmt.Sprintf("val%d", i)), nil); err != nil {
				errc <- err
				return
			}
			ackd.Store(int64(i))
		}
	}()
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			checks := 0
			for {
				a := int(ackd.Load())
				if a < 0 {
					continue
				}
				k := r11Key(a)
				want := fmt.Sprintf("val%d", a)
				var got string
				var err error
				switch checks % 4 {
				case 0:
					var v []byte
					v, err = d.Get(k, nil)
					got = string(v)
				case 1:
					vals, errs := d.MultiGet([][]byte{r11Key(max(a-100, 0)), k, r11Key(a + 1)}, nil)
					got, err = string(vals[1]), errs[1]
					if errs[0] != nil {
						err = fmt.Errorf("the older key %d: %w", max(a-100, 0), errs[0])
					}
				case 2:
					vals, errs := d.MultiGet([][]byte{k}, nil)
					got, err = string(vals[0]), errs[0]
				case 3:
					it := d.NewIterator(nil)
					if it.Seek(k) && bytes.Equal(it.Key(), k) {
						got = string(it.Value())
					} else {
						err = fmt.Errorf("iterator: not found (%v)", it.Error())
					}
					it.Close()
				}
				if err != nil || got != want {
					errc <- fmt.Errorf("reader %d, check %d: acknowledged key %q = %q, %v; want %q", g, checks, k, got, err, want)
					return
				}
				checks++
				if a == n-1 {
					return
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

// TestReview11ReadOnlyMemtable: writes and a range tombstone left in the
// log (not flushed) are replayed into the memtable of a read-only open:
// Get, MultiGet and iterators see them; a store whose log holds only a
// range tombstone (the memtable's only entry) hides the covered keys.
func TestReview11ReadOnlyMemtable(t *testing.T) {
	for _, only := range []string{"puts", "rangedel", "both"} {
		t.Run(only, func(t *testing.T) {
			fs := vfs.NewMem()
			d := mustOpen(t, "/db", &Options{FS: fs})
			m := map[string]string{}
			for i := 0; i < 200; i++ {
				d.Put(r11Key(i), []byte("table"), nil)
				m[string(r11Key(i))] = "table"
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			if only != "rangedel" {
				for i := 100; i < 300; i += 3 {
					d.Put(r11Key(i), []byte("log"), nil)
					m[string(r11Key(i))] = "log"
				}
			}
			if only != "puts" {
				if err := d.DeleteRange(r11Key(50), r11Key(120), nil); err != nil {
					t.Fatal(err)
				}
				for i := 50; i < 120; i++ {
					delete(m, string(r11Key(i)))
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			for _, ro := range []bool{true, false} {
				d := mustOpen(t, "/db", &Options{FS: fs, ReadOnly: ro, DisableAutomaticCompactions: true})
				keys := make([][]byte, 0, 310)
				for i := 0; i < 310; i++ {
					keys = append(keys, r11Key(i))
				}
				vals, errs := d.MultiGet(keys, nil)
				for i, k := range keys {
					w, ok := m[string(k)]
					v, err := d.Get(k, nil)
					if ok != (err == nil) || string(v) != w {
						t.Fatalf("read-only %v: Get(%q) = %q, %v; want %q (present %v)", ro, k, v, err, w, ok)
					}
					if !review9bSame(vals[i], errs[i], v, err) {
						t.Fatalf("read-only %v: MultiGet(%q) = %q, %v; Get %q, %v", ro, k, vals[i], errs[i], v, err)
					}
				}
				var got []string
				it := d.NewIterator(nil)
				for ok := it.First(); ok; ok = it.Next() {
					if m[string(it.Key())] != string(it.Value()) {
						t.Fatalf("iterator %q = %q, want %q", it.Key(), it.Value(), m[string(it.Key())])
					}
					got = append(got, string(it.Key()))
				}
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
				if want := r7Want(m, nil, nil); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("read-only %v: iterator saw %d keys, want %d", ro, len(got), len(want))
				}
				d.Close()
			}
		})
	}
}

// r11PKey is key j of prefix p: "ppp:jjjjj", whose FixedPrefix(4) and
// DelimitedPrefix(':') prefixes are both "ppp:".
func r11PKey(p, j int) []byte { return []byte(fmt.Sprintf("%03d:%05d", p, j)) }

// r11PrefixScans scans d through the bounds of every prefix of 4 and 5
// bytes of p in [0, 100) (half of them absent) and of odd keys, and
// compares each with the model.
func r11PrefixScans(t *testing.T, d *DB, m map[string]string, what string) {
	t.Helper()
	var prefixes [][]byte
	for p := 0; p < 100; p++ {
		q := []byte(fmt.Sprintf("%03d:", p))
		prefixes = append(prefixes, q, append(append([]byte(nil), q...), '0'), append(append([]byte(nil), q...), '1'), q[:3])
	}
	prefixes = append(prefixes, []byte("ab"), []byte{0xff}, []byte{0xff, 0xff, 0xff, ':'}, []byte{0xff, 0xff, 0xff, 0xff}, []byte("zz"))
	for _, q := range prefixes {
		lo, hi := PrefixBounds(q)
		it := d.NewIterator(&ReadOptions{LowerBound: lo, UpperBound: hi})
		var got []string
		for ok := it.First(); ok; ok = it.Next() {
			if v := m[string(it.Key())]; v != string(it.Value()) {
				t.Fatalf("%s: prefix %q: %q = %q, want %q", what, q, it.Key(), it.Value(), v)
			}
			got = append(got, string(it.Key()))
		}
		if err := it.Close(); err != nil {
			t.Fatalf("%s: prefix %q: %v", what, q, err)
		}
		want := r7Want(m, lo, hi)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: prefix %q: iterator saw %d keys %v, want %d %v", what, q, len(got), got, len(want), want)
		}
		// Backwards too.
		it = d.NewIterator(&ReadOptions{LowerBound: lo, UpperBound: hi})
		n := 0
		for ok := it.Last(); ok; ok = it.Prev() {
			n++
		}
		it.Close()
		if n != len(want) {
			t.Fatalf("%s: prefix %q: backwards %d keys, want %d", what, q, n, len(want))
		}
	}
}

// TestReview11PrefixReopen writes tables with one prefix extractor and
// filter policy, then reopens the store with others (DelimitedPrefix of
// the same prefixes, no extractor, FixedPrefix(5), LevelDB's legacy
// Bloom, no filter at all, read-only) writing more tables each time, so
// tables of every extractor and policy lie side by side; after every
// reopen, under every extractor, prefix-bounded iterators must return
// exactly the model's keys.
func TestReview11PrefixReopen(t *testing.T) {
	fs := vfs.NewMem()
	m := map[string]string{}
	extra := map[string]string{"ab": "short", "\xff\xff\xff:1": "ff", "\xff\xff\xff\xff": "ffff", "zz": "z"}
	steps := []struct {
		name   string
		prefix filter.Prefix
		pol    filter.Policy
	}{
		{"fixed4", filter.FixedPrefix(4), nil},
		{"delim", filter.DelimitedPrefix(':'), nil},
		{"none", nil, nil},
		{"fixed5-legacy", filter.FixedPrefix(5), filter.NewLegacyBloomPolicy(10)},
		{"fixed4-nofilter", filter.FixedPrefix(4), filter.None},
		{"fixed4-again", filter.FixedPrefix(4), filter.NewBloomPolicy(4)},
	}
	base := func(s int) *Options {
		return &Options{FS: fs, Prefix: steps[s].prefix, FilterPolicy: steps[s].pol, WriteBufferSize: 4 << 10,
			TargetFileSize: 2 << 10, BlockSize: 256, LBaseMaxBytes: 8 << 10, L0CompactionTrigger: 2}
	}
	for s, st := range steps {
		d := mustOpen(t, "/db", base(s))
		// Prefixes p with p%len(steps) == s, on even p only (odd ones
		// stay absent), plus overwrites and deletions of earlier ones.
		for p := 0; p < 100; p += 2 {
			if (p/2)%len(steps) != s && (p/2+s)%5 != 0 {
				continue
			}
			for j := 0; j < 12; j++ {
				k := r11PKey(p, j*3+s%3)
				if (p+j+s)%7 == 0 {
					d.Delete(k, nil)
					delete(m, string(k))
					continue
				}
				v := fmt.Sprintf("%s-%d-%d", st.name, p, j)
				if err := d.Put(k, []byte(v), nil); err != nil {
					t.Fatal(err)
				}
				m[string(k)] = v
			}
		}
		if s == 0 {
			for k, v := range extra {
				d.Put([]byte(k), []byte(v), nil)
				m[k] = v
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		if s%2 == 1 {
			lo, hi := r11PKey(20*s, 0), r11PKey(20*s+30, 0)
			if err := d.CompactRange(lo, hi); err != nil {
				t.Fatal(err)
			}
		}
		waitCompactions(t, d)
		// A memtable on top, unflushed.
		k := r11PKey(2*s, 99)
		d.Put(k, []byte("mem"), nil)
		m[string(k)] = "mem"
		r11PrefixScans(t, d, m, "after step "+st.name)
		d.Close()
		// Every step's options, and read-only, on the same files.
		for s2 := range steps {
			o := base(s2)
			o.ReadOnly = s2%2 == 0
			d := mustOpen(t, "/db", o)
			r11PrefixScans(t, d, m, fmt.Sprintf("after step %s, reopened as %s (read-only %v)", st.name, steps[s2].name, o.ReadOnly))
			d.Close()
		}
	}
	// The prefix filters were asked and ruled tables out somewhere
	// (otherwise this test checks nothing of them).
	d := mustOpen(t, "/db", base(0))
	defer d.Close()
	before := d.Metrics().PrefixFilter
	r11PrefixScans(t, d, m, "final")
	after := d.Metrics().PrefixFilter
	if after.Checks == before.Checks || after.Useful == before.Useful {
		t.Fatalf("prefix filter metrics did not move: %+v -> %+v", before, after)
	}
}
