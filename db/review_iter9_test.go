package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// review9Stale is the sentinel error stale result slots are filled with.
var review9Stale = errors.New("review9: stale")

// review9Fill fills result slots with stale contents.
func review9Fill(vals [][]byte, errs []error) {
	for i := range vals {
		vals[i] = []byte("stale-value")
	}
	for i := range errs {
		errs[i] = review9Stale
	}
}

// review9Same reports whether a MultiGetInto entry equals Get's answer.
func review9Same(v1 []byte, e1 error, v2 []byte, e2 error) bool {
	switch {
	case e1 == nil && e2 == nil:
		return bytes.Equal(v1, v2) && (v1 == nil) == (v2 == nil)
	case e1 == nil || e2 == nil:
		return false
	case errors.Is(e1, ErrNotFound) || errors.Is(e2, ErrNotFound):
		return errors.Is(e1, ErrNotFound) && errors.Is(e2, ErrNotFound) && v1 == nil && v2 == nil
	default:
		return v1 == nil && v2 == nil && e1 != review9Stale
	}
}

// review9Check runs MultiGetInto over keys into vals/errs (filled with
// stale contents first) and compares every entry with Get at the same ro.
func review9Check(t *testing.T, d *DB, keys, vals [][]byte, errs []error, ro *ReadOptions, what string) {
	t.Helper()
	review9Fill(vals, errs)
	orig := make([][]byte, len(keys))
	for i, k := range keys {
		if k != nil {
			orig[i] = append([]byte{}, k...)
		}
	}
	if err := d.MultiGetInto(keys, vals, errs, ro); err != nil {
		t.Fatalf("%s: MultiGetInto of %d keys: %v", what, len(keys), err)
	}
	for i, k := range keys {
		if !bytes.Equal(k, orig[i]) || (k == nil) != (orig[i] == nil) {
			t.Fatalf("%s: key %d changed from %q to %q", what, i, orig[i], k)
		}
		v, err := d.Get(k, ro)
		if !review9Same(vals[i], errs[i], v, err) {
			t.Fatalf("%s: MultiGetInto(%d keys)[%d] %q = %q, %v; Get = %q, %v", what, len(keys), i, k, vals[i], errs[i], v, err)
		}
	}
}

// review9Keys draws probe keys: present, absent, nil, empty, duplicates,
// long keys (past MultiGet's 64-byte seek buffer) and keys sharing one
// backing array.
func review9Keys(rng *rand.Rand, n int) [][]byte {
	keys := make([][]byte, 0, n)
	shared := []byte("k0000100k0000200k0000300")
	for len(keys) < n {
		switch r := rng.Intn(20); {
		case r == 0:
			keys = append(keys, nil)
		case r == 1:
			keys = append(keys, []byte{})
		case r == 2 && len(keys) > 0:
			keys = append(keys, keys[rng.Intn(len(keys))]) // the same slice again
		case r == 3:
			o := 8 * rng.Intn(3)
			keys = append(keys, shared[o:o+8:o+8])
		case r == 4:
			keys = append(keys, []byte(fmt.Sprintf("long/%080d", rng.Intn(400))))
		default:
			keys = append(keys, []byte(fmt.Sprintf("k%07d", rng.Intn(3000))))
		}
	}
	return keys
}

// review9Populate writes a store whose keys live in the memtable, level 0
// and deeper levels, with deletions and overwrites; values are distinct
// per write.
func review9Populate(t *testing.T, d *DB, rng *rand.Rand, rounds int) {
	t.Helper()
	gen := 0
	for round := 0; round < rounds; round++ {
		for i := 0; i < 600; i++ {
			gen++
			var k []byte
			if rng.Intn(10) == 0 {
				k = []byte(fmt.Sprintf("long/%080d", rng.Intn(400)))
			} else {
				k = []byte(fmt.Sprintf("k%07d", rng.Intn(3000)))
			}
			var err error
			switch rng.Intn(8) {
			case 0:
				err = d.Delete(k, nil)
			case 1:
				err = d.Put(k, nil, nil) // empty value
			default:
				err = d.Put(k, []byte(fmt.Sprintf("v%d-%s", gen, bytes.Repeat([]byte{'x'}, rng.Intn(80)))), nil)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if round%3 == 2 {
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
		} else if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// Some writes left in the memtable.
	for i := 0; i < 300; i++ {
		k := []byte(fmt.Sprintf("k%07d", rng.Intn(3000)))
		if rng.Intn(4) == 0 {
			d.Delete(k, nil)
		} else {
			d.Put(k, []byte(fmt.Sprintf("mem%d", i)), nil)
		}
	}
}

// TestReview9IntoReusedSlices reuses one pair of result buffers for
// batches of varying sizes, sliced at varying offsets (shorter, longer,
// from the middle), and compares every entry with Get at one snapshot.
func TestReview9IntoReusedSlices(t *testing.T) {
	for _, par := range []int{1, 4, 8} {
		t.Run(fmt.Sprintf("par%d", par), func(t *testing.T) {
			o := smallTree(vfs.NewMem())
			o.MultiGetParallelism = par
			d := mustOpen(t, "/db", o)
			defer d.Close()
			rng := rand.New(rand.NewSource(int64(par)))
			review9Populate(t, d, rng, 6)
			bufV, bufE := make([][]byte, 700), make([]error, 700)
			snap := d.NewSnapshot()
			defer snap.Release()
			// Writes after the snapshot that it must not see.
			for i := 0; i < 200; i++ {
				d.Put([]byte(fmt.Sprintf("k%07d", rng.Intn(3000))), []byte("after-snap"), nil)
			}
			d.Flush()
			for q := 0; q < 60; q++ {
				n := []int{1, 2, 3, 15, 16, 17, 63, 64, 65, 129, 200, 500}[rng.Intn(12)]
				off := rng.Intn(len(bufV) - n + 1)
				keys := review9Keys(rng, n)
				var ro *ReadOptions
				if q%2 == 0 {
					ro = &ReadOptions{Snapshot: snap}
				}
				review9Check(t, d, keys, bufV[off:off+n], bufE[off:off+n], ro, fmt.Sprintf("query %d", q))
			}
		})
	}
}

// TestReview9IntoArgumentsUntouched checks that a refused call leaves
// every slot of values and errs (and keys) as it was, for partial overlaps
// from either side and for values inside keys or keys inside values.
func TestReview9IntoArgumentsUntouched(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer d.Close()
	for i := 0; i < 10; i++ {
		d.Put([]byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprintf("v%d", i)), nil)
	}
	arr := make([][]byte, 10)
	reset := func() {
		for i := range arr {
			arr[i] = []byte(fmt.Sprintf("k%d", i))
		}
	}
	errs := make([]error, 10)
	for _, tc := range []struct {
		name         string
		keys, values [][]byte
	}{
		{"values inside keys", arr[0:6], arr[2:8][:6]},
		{"keys inside values", arr[3:5], arr[2:4]},
		{"one slot shared at the start", arr[4:8], arr[1:5]},
		{"one slot shared at the end", arr[1:5], arr[4:8]},
		{"same slots", arr[2:5], arr[2:5]},
	} {
		reset()
		if len(tc.values) != len(tc.keys) {
			t.Fatalf("%s: bad case", tc.name)
		}
		n := len(tc.keys)
		review9Fill(nil, errs[:n])
		if err := d.MultiGetInto(tc.keys, tc.values, errs[:n], nil); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
		for i := range arr {
			if want := fmt.Sprintf("k%d", i); string(arr[i]) != want {
				t.Fatalf("%s: a refused call changed slot %d to %q", tc.name, i, arr[i])
			}
		}
		for i := 0; i < n; i++ {
			if errs[i] != review9Stale {
				t.Fatalf("%s: a refused call changed errs[%d] to %v", tc.name, i, errs[i])
			}
		}
	}
	// A length mismatch touches nothing either.
	reset()
	vals := make([][]byte, 3)
	review9Fill(vals, errs[:2])
	if err := d.MultiGetInto(arr[:2], vals, errs[:2], nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("length mismatch: %v", err)
	}
	if string(vals[0]) != "stale-value" || errs[0] != review9Stale {
		t.Fatalf("length mismatch touched the results: %q %v", vals[0], errs[0])
	}
	// values in the capacity past keys' length (not its length): allowed.
	reset()
	keys := arr[0:3:3]
	if err := d.MultiGetInto(keys, arr[3:6], errs[:3], nil); err != nil {
		t.Fatalf("disjoint: %v", err)
	}
	for i := 0; i < 3; i++ {
		if string(arr[3+i]) != fmt.Sprintf("v%d", i) || errs[i] != nil {
			t.Fatalf("disjoint entry %d: %q %v", i, arr[3+i], errs[i])
		}
	}
}

// TestReview9IntoConcurrentPool runs MultiGetInto from many goroutines,
// each over its own key group and into its own reused slices, with helper
// goroutines: a result of one call showing up in another (through the
// pooled batch state) would be a value of another group.
func TestReview9IntoConcurrentPool(t *testing.T) {
	dur := time.Second
	if testing.Short() {
		dur = 300 * time.Millisecond
	}
	before := runtime.NumGoroutine()
	o := smallTree(vfs.NewMem())
	o.MultiGetParallelism = 8
	d := mustOpen(t, "/db", o)
	const groups, per = 12, 400
	key := func(g, i int) []byte { return []byte(fmt.Sprintf("g%02d/%06d", g, i)) }
	for g := 0; g < groups; g++ {
		for i := 0; i < per; i += 2 { // odd keys absent
			d.Put(key(g, i), []byte(fmt.Sprintf("val-g%02d/%06d", g, i)), nil)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	// Some in level 0 and the memtable too.
	for g := 0; g < groups; g++ {
		for i := 0; i < per; i += 10 {
			d.Put(key(g, i), []byte(fmt.Sprintf("val-g%02d/%06d", g, i)), nil)
		}
		if g%3 == 0 {
			d.Flush()
		}
	}
	var wg sync.WaitGroup
	var fail atomic.Value
	stop := time.Now().Add(dur)
	for g := 0; g < groups; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			vals, errs := make([][]byte, 300), make([]error, 300)
			for time.Now().Before(stop) && fail.Load() == nil {
				n := 2 + rng.Intn(len(vals)-1)
				keys := make([][]byte, n)
				idx := make([]int, n)
				for j := range keys {
					idx[j] = rng.Intn(per)
					keys[j] = key(g, idx[j])
				}
				review9Fill(vals[:n], errs[:n])
				if err := d.MultiGetInto(keys, vals[:n], errs[:n], nil); err != nil {
					fail.Store(err)
					return
				}
				for j := 0; j < n; j++ {
					if idx[j]%2 == 1 {
						if !errors.Is(errs[j], ErrNotFound) || vals[j] != nil {
							fail.Store(fmt.Errorf("group %d key %s: %q, %v; want not found", g, keys[j], vals[j], errs[j]))
							return
						}
						continue
					}
					if want := fmt.Sprintf("val-g%02d/%06d", g, idx[j]); errs[j] != nil || string(vals[j]) != want {
						fail.Store(fmt.Errorf("group %d key %s: %q, %v; want %q", g, keys[j], vals[j], errs[j], want))
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	if err := fail.Load(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	requireGoroutinesSettle(t, before)
}

// TestReview9IntoRacesBackground runs MultiGetInto at snapshots while a
// writer (puts, deletes, DeleteRange), flushes, compactions and snapshot
// releases go on, then Close in the middle of the reads. Every batch at a
// snapshot must equal the model of that snapshot, or (released snapshot,
// closed store) every entry must be that error with a nil value.
func TestReview9IntoRacesBackground(t *testing.T) {
	dur := 800 * time.Millisecond
	if testing.Short() {
		dur = 250 * time.Millisecond
	}
	for _, tc := range []struct {
		name      string
		par       int
		rangeDels bool
	}{{"par1", 1, false}, {"par6", 6, false}, {"par6-rangedel", 6, true}} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			o := smallTree(vfs.NewMem())
			o.MultiGetParallelism = tc.par
			d := mustOpen(t, "/db", o)
			const nkeys = 2000
			key := func(i int) []byte { return []byte(fmt.Sprintf("k%06d", i)) }

			// The writer publishes (snapshot, model copy) pairs.
			type snapModel struct {
				s     *Snapshot
				model map[string]string
			}
			var mu sync.Mutex
			var snaps []snapModel
			var stop, closed atomic.Bool
			var fail atomic.Value
			report := func(err error) {
				fail.CompareAndSwap(nil, err)
				stop.Store(true)
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewSource(3))
				model := map[string]string{}
				for gen := 0; !stop.Load(); gen++ {
					var b Batch
					for j := 0; j < 50; j++ {
						i := rng.Intn(nkeys)
						k := key(i)
						switch r := rng.Intn(30); {
						case r == 0 && tc.rangeDels:
							e := min(nkeys, i+1+rng.Intn(40))
							b.DeleteRange(k, key(e))
							for x := i; x < e; x++ {
								delete(model, string(key(x)))
							}
						case r < 6:
							b.Delete(k)
							delete(model, string(k))
						default:
							v := fmt.Sprintf("v%d.%d", gen, j)
							b.Put(k, []byte(v))
							model[string(k)] = v
						}
					}
					if err := d.Write(&b, nil); err != nil {
						if !(closed.Load() && errors.Is(err, ErrClosed)) {
							report(fmt.Errorf("write: %w", err))
						}
						return
					}
					if gen%5 == 0 {
						cp := make(map[string]string, len(model))
						for k, v := range model {
							cp[k] = v
						}
						s := d.NewSnapshot()
						mu.Lock()
						snaps = append(snaps, snapModel{s, cp})
						if len(snaps) > 6 {
							// Release the oldest: a reader may be using it.
							snaps[0].s.Release()
							snaps = snaps[1:]
						}
						mu.Unlock()
					}
				}
			}()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; !stop.Load(); i++ {
					var err error
					if i%5 == 4 {
						err = d.CompactRange(key(i*37%nkeys), key((i*37+500)%nkeys))
					} else {
						err = d.Flush()
					}
					if err != nil && !(closed.Load() && errors.Is(err, ErrClosed)) {
						report(fmt.Errorf("flush/compact: %w", err))
						return
					}
					time.Sleep(500 * time.Microsecond)
				}
			}()
			for r := 0; r < 4; r++ {
				wg.Add(1)
				go func(r int) {
					defer wg.Done()
					rng := rand.New(rand.NewSource(int64(100 + r)))
					vals, errs := make([][]byte, 400), make([]error, 400)
					for !stop.Load() {
						mu.Lock()
						if len(snaps) == 0 {
							mu.Unlock()
							runtime.Gosched()
							continue
						}
						sm := snaps[rng.Intn(len(snaps))]
						mu.Unlock()
						n := 2 + rng.Intn(len(vals)-1)
						keys := make([][]byte, n)
						for j := range keys {
							keys[j] = key(rng.Intn(nkeys))
						}
						v, e := vals[:n], errs[:n]
						review9Fill(v, e)
						if err := d.MultiGetInto(keys, v, e, &ReadOptions{Snapshot: sm.s}); err != nil {
							report(err)
							return
						}
						// All entries answered, or all refused with one error.
						if e[0] != nil && !errors.Is(e[0], ErrNotFound) {
							for j := range keys {
								if v[j] != nil || e[j] == nil || e[j].Error() != e[0].Error() {
									report(fmt.Errorf("batch of %d: entry 0 %v, entry %d %q, %v", n, e[0], j, v[j], e[j]))
									return
								}
							}
							continue
						}
						for j, k := range keys {
							want, ok := sm.model[string(k)]
							if ok != (e[j] == nil) || ok && string(v[j]) != want || !ok && (!errors.Is(e[j], ErrNotFound) || v[j] != nil) {
								report(fmt.Errorf("batch of %d [%d] %s = %q, %v; want %q, %v", n, j, k, v[j], e[j], want, ok))
								return
							}
						}
					}
				}(r)
			}
			time.Sleep(dur)
			// Close while everything runs.
			closed.Store(true)
			if err := d.Close(); err != nil {
				report(fmt.Errorf("close: %w", err))
			}
			time.Sleep(20 * time.Millisecond)
			stop.Store(true)
			wg.Wait()
			if err := fail.Load(); err != nil {
				t.Fatal(err)
			}
			requireGoroutinesSettle(t, before)
		})
	}
}

// TestReview9IntoReadFaults reuses stale result slices under read faults
// with helper goroutines: every entry is a right value, a right
// not-found, or another error with a nil value; once the faults stop,
// every entry equals Get.
func TestReview9IntoReadFaults(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.NewMem(), nil)
	o := smallTree(ffs)
	o.DisableBlockCache = true
	o.DisableMmapReads = true
	o.MaxOpenFiles = 16
	o.MultiGetParallelism = 4
	d := mustOpen(t, "/db", o)
	defer func() { d.Close() }()
	model := map[string]string{}
	rng := rand.New(rand.NewSource(9))
	for i := 0; i < 5000; i++ {
		k := fmt.Sprintf("k%07d", rng.Intn(3000))
		v := fmt.Sprintf("v%d", i)
		d.Put([]byte(k), []byte(v), nil)
		model[k] = v
		if i == 3000 {
			d.CompactRange(nil, nil)
		}
	}
	d.Flush()
	waitCompactions(t, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", o)
	waitCompactions(t, d)
	ffs.SetInjector(vfs.Fault{Ops: vfs.OpRead | vfs.OpOpen, PathContains: ".sst", Count: -1, Probability: 0.05, Seed: 2}.Injector())
	vals, errs := make([][]byte, 300), make([]error, 300)
	sawErr := 0
	for q := 0; q < 30; q++ {
		n := 2 + rng.Intn(299)
		keys := review9Keys(rng, n)
		review9Fill(vals[:n], errs[:n])
		if err := d.MultiGetInto(keys, vals[:n], errs[:n], nil); err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			want, ok := model[string(k)]
			switch {
			case errs[i] == nil:
				if !ok || string(vals[i]) != want {
					t.Fatalf("query %d: %q = %q, want %q, %v", q, k, vals[i], want, ok)
				}
			case errors.Is(errs[i], ErrNotFound):
				if ok || vals[i] != nil {
					t.Fatalf("query %d: %q not found (value %q), want %q", q, k, vals[i], want)
				}
			case errs[i] == review9Stale || vals[i] != nil:
				t.Fatalf("query %d: %q = %q, %v: a stale slot", q, k, vals[i], errs[i])
			default:
				sawErr++
			}
		}
	}
	ffs.SetInjector(nil)
	if sawErr == 0 {
		t.Error("no read fault reached MultiGetInto")
	}
	for q := 0; q < 5; q++ {
		n := 2 + rng.Intn(299)
		review9Check(t, d, review9Keys(rng, n), vals[:n], errs[:n], nil, "after faults")
	}
}

// TestReview9IntoSharedBoundary runs MultiGetInto over a hand-written
// LevelDB store whose level 1 splits a key's versions between tables
// (the per-key fallback), read-only and read-write, before and after a
// compaction, against Get.
func TestReview9IntoSharedBoundary(t *testing.T) {
	var tables []sbTable
	num, seq := uint64(10), uint64(1)
	var ents []sbEntry
	for i := 0; i < 300; i += 2 {
		ents = append(ents, sbEntry{fmt.Sprintf("k%07d", i), seq, base.KindSet, fmt.Sprintf("old%d", i)})
		seq++
		if len(ents) == 20 {
			tables = append(tables, sbTable{num, 2, ents})
			num++
			ents = nil
		}
	}
	if len(ents) > 0 {
		tables = append(tables, sbTable{num, 2, ents})
		num++
	}
	seq = 10000
	ents = nil
	for i := 0; i < 300; i += 3 {
		k := fmt.Sprintf("k%07d", i)
		kind, v := base.KindSet, fmt.Sprintf("new%d", i)
		if i%4 == 0 {
			kind, v = base.KindDelete, ""
		}
		ents = append(ents, sbEntry{k, seq, kind, v})
		seq++
		if len(ents) >= 7 {
			tables = append(tables, sbTable{num, 1, ents})
			num++
			ents = []sbEntry{{k, 5000 + uint64(i), base.KindSet, "shadowed"}}
		}
	}
	tables = append(tables, sbTable{num, 1, ents})
	dir := filepath.Join(t.TempDir(), "db")
	writeHandStoreWith(t, dir, tables, seq+1, 128)
	rng := rand.New(rand.NewSource(4))
	vals, errs := make([][]byte, 400), make([]error, 400)
	check := func(d *DB, what string) {
		t.Helper()
		for q := 0; q < 10; q++ {
			n := 2 + rng.Intn(399)
			keys := make([][]byte, n)
			for j := range keys {
				keys[j] = []byte(fmt.Sprintf("k%07d", rng.Intn(320)))
			}
			off := rng.Intn(len(vals) - n + 1)
			review9Check(t, d, keys, vals[off:off+n], errs[off:off+n], nil, what)
		}
	}
	for _, ro := range []bool{true, false} {
		d, err := Open(dir, &Options{ReadOnly: ro, DisableAutomaticCompactions: true, MultiGetParallelism: 4})
		if err != nil {
			t.Fatal(err)
		}
		if !d.readStateForTest().v.SharedBoundaries[1] {
			t.Fatal("level 1 has no shared boundary")
		}
		check(d, fmt.Sprintf("read-only %v", ro))
		if !ro {
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			check(d, "compacted")
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReview9IntoMixedFilters writes tables under many filter policies
// (few probes, legacy, blocked, binary fuse, LevelDB's, none, a prefix
// extractor), reopening with other policies so that one probe queue
// holds filters of many kinds and of one name at different bits per key,
// and checks MultiGetInto against a model and Get.
func TestReview9IntoMixedFilters(t *testing.T) {
	fs := vfs.NewMem()
	model := map[string]string{}
	rng := rand.New(rand.NewSource(11))
	configs := []func(o *Options){
		func(o *Options) { o.FilterPolicy = filter.NewBloomPolicy(1) },
		func(o *Options) { o.FilterPolicy = filter.NewBloomPolicy(4) },
		func(o *Options) { o.FilterPolicy = filter.NewBloomPolicy(5) },
		func(o *Options) { o.FilterPolicy = filter.NewBloomPolicy(30) },
		func(o *Options) { o.FilterPolicy = filter.NewLegacyBloomPolicy(7) },
		func(o *Options) { o.FilterPolicy = filter.NewBlockedBloomPolicy(10) },
		func(o *Options) { o.FilterPolicy = filter.NewBinaryFusePolicy(8) },
		func(o *Options) { o.FilterPolicy = filter.None },
		func(o *Options) { o.FilterPolicy = filter.NewLevelDBBloomPolicy(10) },
		func(o *Options) { o.FilterPolicy = filter.NewBloomPolicy(8); o.Prefix = filter.FixedPrefix(3) },
		func(o *Options) {
			o.LevelFilterPolicies = []filter.Policy{filter.NewBloomPolicy(3), filter.None, filter.NewBloomPolicy(12), filter.NewLegacyBloomPolicy(2)}
		},
	}
	vals, errs := make([][]byte, 500), make([]error, 500)
	for round, cfg := range append(configs, configs...) {
		o := smallTree(fs)
		o.MultiGetParallelism = 1 + round%5
		o.DisableAutomaticCompactions = round%3 == 0
		cfg(o)
		d := mustOpen(t, "/db", o)
		for i := 0; i < 700; i++ {
			k := fmt.Sprintf("k%07d", rng.Intn(4000))
			if rng.Intn(6) == 0 {
				d.Delete([]byte(k), nil)
				delete(model, k)
				continue
			}
			v := fmt.Sprintf("r%d-%d", round, i)
			d.Put([]byte(k), []byte(v), nil)
			model[k] = v
		}
		if round%4 == 3 {
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
		} else {
			d.Flush()
		}
		for q := 0; q < 6; q++ {
			n := []int{2, 17, 64, 65, 200, 500}[q]
			keys := make([][]byte, n)
			for j := range keys {
				keys[j] = []byte(fmt.Sprintf("k%07d", rng.Intn(4100)))
			}
			review9Fill(vals[:n], errs[:n])
			if err := d.MultiGetInto(keys, vals[:n], errs[:n], nil); err != nil {
				t.Fatal(err)
			}
			for j, k := range keys {
				want, ok := model[string(k)]
				if ok != (errs[j] == nil) || ok && string(vals[j]) != want || !ok && !errors.Is(errs[j], ErrNotFound) {
					t.Fatalf("round %d: MultiGetInto(%d)[%d] %s = %q, %v; want %q, %v", round, n, j, k, vals[j], errs[j], want, ok)
				}
				v, err := d.Get(k, nil)
				if !review9Same(vals[j], errs[j], v, err) {
					t.Fatalf("round %d: %s: MultiGetInto %q, %v; Get %q, %v", round, k, vals[j], errs[j], v, err)
				}
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReview9IntoRefusedReads checks MultiGetInto into stale slices when
// every lookup fails the same way (released snapshot, another DB's
// snapshot, closed store), for a batch of one and of many: each entry is
// Get's error and a nil value. Metrics.Gets counts what Get counts.
func TestReview9IntoRefusedReads(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	other := mustOpen(t, "/other", &Options{FS: vfs.NewMem()})
	defer other.Close()
	for i := 0; i < 40; i++ {
		d.Put([]byte(fmt.Sprintf("k%02d", i)), []byte("v"), nil)
	}
	d.Flush()
	released := d.NewSnapshot()
	released.Release()
	foreign := other.NewSnapshot()
	defer foreign.Release()
	vals, errs := make([][]byte, 40), make([]error, 40)
	keys := make([][]byte, 40)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("k%02d", i))
	}
	for _, closed := range []bool{false, true} {
		if closed {
			d.Close()
		}
		for _, s := range []*Snapshot{nil, released, foreign} {
			if s == nil && !closed {
				continue
			}
			ro := &ReadOptions{Snapshot: s}
			for _, n := range []int{1, 2, 40} {
				_, getErr := d.Get(keys[0], ro)
				gets := d.Metrics().Gets
				review9Fill(vals[:n], errs[:n])
				if err := d.MultiGetInto(keys[:n], vals[:n], errs[:n], ro); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < n; i++ {
					if vals[i] != nil || errs[i] == nil || getErr == nil || errs[i].Error() != getErr.Error() {
						t.Fatalf("closed %v snapshot %p batch %d [%d]: %q, %v; Get: %v", closed, s, n, i, vals[i], errs[i], getErr)
					}
				}
				if g := d.Metrics().Gets; g != gets {
					t.Fatalf("closed %v: Gets went from %d to %d for refused reads", closed, gets, g)
				}
			}
		}
	}
}

// TestReview9IntoMetricsGets checks that Metrics.Gets counts each key of
// a MultiGetInto, as n Gets would, on the batched path and the per-key
// one (a range tombstone), and a batch of one.
func TestReview9IntoMetricsGets(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer d.Close()
	for i := 0; i < 100; i++ {
		d.Put([]byte(fmt.Sprintf("k%03d", i)), []byte("v"), nil)
	}
	d.Flush()
	keys := make([][]byte, 70)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("k%03d", i*2))
	}
	vals, errs := make([][]byte, 70), make([]error, 70)
	for round := 0; round < 2; round++ {
		if round == 1 {
			d.DeleteRange([]byte("k010"), []byte("k020"), nil)
		}
		for _, n := range []int{1, 2, 70} {
			before := d.Metrics().Gets
			if err := d.MultiGetInto(keys[:n], vals[:n], errs[:n], nil); err != nil {
				t.Fatal(err)
			}
			if got := d.Metrics().Gets - before; got != int64(n) {
				t.Fatalf("round %d: MultiGetInto of %d keys counted %d Gets", round, n, got)
			}
			for i := 0; i < n; i++ {
				v, err := d.Get(keys[i], nil)
				if !review9Same(vals[i], errs[i], v, err) {
					t.Fatalf("round %d: %s: %q, %v; Get %q, %v", round, keys[i], vals[i], errs[i], v, err)
				}
			}
		}
	}
}
