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

// r17Policies are the filter policies level-0 tables of one store are
// written with, one table each: of the batch's hash policy or not, with
// no filter, and one (salted) whose filters become unreadable once the
// store is reopened without it.
var r17Policies = []filter.Policy{
	filter.NewBloomPolicy(10),
	filter.NewBlockedBloomPolicy(10),
	filter.None,
	filter.NewBinaryFusePolicy(8),
	filter.NewLegacyBloomPolicy(10),
	saltedPolicy{filter.NewBloomPolicy(10)},
	filter.NewBloomPolicy(4),
}

// r17Key is key n of a store's key space: fixed-width numbers after a
// shared prefix, or (odd shapes) keys of varying length.
func r17Key(shape, n int) []byte {
	switch shape % 3 {
	case 0:
		return []byte(fmt.Sprintf("key%06d", n))
	case 1:
		return []byte(fmt.Sprintf("tenant/0000000000/%d", n)) // > 16 shared bytes
	default:
		return bytes.Repeat([]byte{byte('a' + n%7)}, 1+n%13)
	}
}

// r17Store builds, from seed, a store of nL0 level-0 tables of various
// ranges (each a Flush, each written with a policy of r17Policies, the
// store reopened in between), optionally a deeper level below them and
// a live memtable. Two calls with one seed build the same store.
func r17Store(t *testing.T, seed int64, nL0 int, deep, mem bool) (*DB, int) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	shape := rng.Intn(3)
	fs := vfs.NewMem()
	opts := func(p filter.Policy) *Options {
		return &Options{FS: fs, FilterPolicy: p, DisableAutomaticCompactions: true,
			L0SlowdownWritesTrigger: 100, L0StopWritesTrigger: 200,
			MultiGetParallelism: 1 + rng.Intn(4), BlockSize: 256 + rng.Intn(2048)}
	}
	const space = 2000
	d := mustOpen(t, "/db", opts(r17Policies[0]))
	if deep {
		for i := 0; i < space; i += 2 {
			d.Put(r17Key(shape, i), []byte(fmt.Sprintf("deep%d", i)), nil)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := d.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	for tb := 0; tb < nL0; tb++ {
		d.Close()
		d = mustOpen(t, "/db", opts(r17Policies[rng.Intn(len(r17Policies))]))
		lo := rng.Intn(space)
		hi := min(space, lo+1+rng.Intn(space/2))
		if rng.Intn(4) == 0 { // a narrow table
			hi = min(space, lo+3)
		}
		for i := lo; i < hi; i++ {
			if rng.Intn(3) == 0 {
				continue
			}
			if rng.Intn(6) == 0 {
				d.Delete(r17Key(shape, i), nil)
			} else {
				d.Put(r17Key(shape, i), []byte(fmt.Sprintf("t%d-%d", tb, i)), nil)
			}
		}
		d.Put(r17Key(shape, lo), []byte(fmt.Sprintf("t%d-%d", tb, lo)), nil)
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	d = mustOpen(t, "/db", opts(r17Policies[rng.Intn(len(r17Policies))]))
	if mem {
		for range 100 {
			i := rng.Intn(space)
			d.Put(r17Key(shape, i), []byte(fmt.Sprintf("mem%d", i)), nil)
		}
	}
	if n := d.Metrics().Levels[0].Files; n != nL0 {
		t.Fatalf("%d level-0 tables, want %d", n, nL0)
	}
	return d, shape
}

// r17Batch draws a batch of n keys of the store's key space (and around
// it: absent keys between, before and after the tables), with duplicates.
func r17Batch(rng *rand.Rand, shape, n int) [][]byte {
	keys := make([][]byte, 0, n)
	for len(keys) < n {
		switch r := rng.Intn(10); {
		case r == 0 && len(keys) > 0:
			keys = append(keys, keys[rng.Intn(len(keys))])
		case r == 1:
			keys = append(keys, append(r17Key(shape, rng.Intn(2000)), 'x'))
		case r == 2:
			keys = append(keys, []byte{})
		case r == 3:
			keys = append(keys, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		default:
			keys = append(keys, r17Key(shape, rng.Intn(2000)))
		}
	}
	return keys
}

func r17Check(t *testing.T, d *DB, keys [][]byte, ro *ReadOptions, desc string) {
	t.Helper()
	vals, errs := d.MultiGet(keys, ro)
	for i, k := range keys {
		v, err := d.Get(k, ro)
		if !bytes.Equal(v, vals[i]) || (err == nil) != (errs[i] == nil) ||
			errors.Is(err, ErrNotFound) != errors.Is(errs[i], ErrNotFound) {
			t.Fatalf("%s: key %d (%q) of %d: MultiGet %q %v, Get %q %v", desc, i, k, len(keys), vals[i], errs[i], v, err)
		}
	}
}

// TestReview17MultiGetLevel0AgainstGet: on stores of 1 to 8 level-0
// tables of various ranges and filter policies (some none, some
// unreadable), with or without a deeper level and a memtable, MultiGet
// and MultiGetInto answer every key as Get does, in batches of 2, 63,
// 64, 65 and 200 keys, and through a snapshot taken before more writes.
func TestReview17MultiGetLevel0AgainstGet(t *testing.T) {
	iters := 24
	if testing.Short() {
		iters = 8
	}
	for iter := range iters {
		nL0 := 1 + iter%8
		deep, mem := iter%3 == 1, iter%2 == 0
		d, shape := r17Store(t, int64(iter), nL0, deep, mem)
		rng := rand.New(rand.NewSource(int64(iter) * 31))
		desc := fmt.Sprintf("iter %d (%d L0 tables, deep %v, mem %v)", iter, nL0, deep, mem)
		for _, n := range []int{2, 63, 64, 65, 200} {
			keys := r17Batch(rng, shape, n)
			r17Check(t, d, keys, nil, desc)
			vals, errs := make([][]byte, n), make([]error, n)
			if err := d.MultiGetInto(keys, vals, errs, nil); err != nil {
				t.Fatal(err)
			}
			want, wantErrs := d.MultiGet(keys, nil)
			for i := range keys {
				if !bytes.Equal(vals[i], want[i]) || (errs[i] == nil) != (wantErrs[i] == nil) {
					t.Fatalf("%s: MultiGetInto key %q: %q %v, MultiGet %q %v", desc, keys[i], vals[i], errs[i], want[i], wantErrs[i])
				}
			}
		}
		// Every key of the space in order (the "every key in range"
		// path when the tables are wide).
		var all [][]byte
		for i := 0; i < 2000; i += 1 + rng.Intn(3) {
			all = append(all, r17Key(shape, i))
		}
		r17Check(t, d, all, nil, desc+" all")
		snap := d.NewSnapshot()
		for i := 0; i < 300; i++ {
			d.Put(r17Key(shape, rng.Intn(2000)), []byte("later"), nil)
		}
		ro := &ReadOptions{Snapshot: snap}
		r17Check(t, d, r17Batch(rng, shape, 130), ro, desc+" snapshot")
		r17Check(t, d, all, ro, desc+" snapshot all")
		snap.Release()
		d.Close()
	}
}

// TestReview17MultiGetLevel0Metrics: a loop of Get and MultiGets of the
// same keys on two copies of a store count the same filter checks,
// positives and true positives, level by level, and the same Gets.
func TestReview17MultiGetLevel0Metrics(t *testing.T) {
	iters := 16
	if testing.Short() {
		iters = 6
	}
	for iter := range iters {
		nL0 := 1 + iter%8
		deep, mem := iter%4 == 3, iter%3 == 0
		a, shape := r17Store(t, int64(100+iter), nL0, deep, mem)
		b, _ := r17Store(t, int64(100+iter), nL0, deep, mem)
		rng := rand.New(rand.NewSource(int64(iter)))
		var batches [][][]byte
		for _, n := range []int{2, 63, 64, 65, 200} {
			batches = append(batches, r17Batch(rng, shape, n))
		}
		var all [][]byte
		for i := 0; i < 2000; i += 3 {
			all = append(all, r17Key(shape, i))
		}
		batches = append(batches, all)
		for _, keys := range batches {
			for _, k := range keys {
				a.Get(k, nil)
			}
			b.MultiGet(keys, nil)
		}
		ma, mb := a.Metrics(), b.Metrics()
		for l := range ma.Levels {
			if ma.Levels[l].Filter != mb.Levels[l].Filter {
				t.Errorf("iter %d (%d L0 tables, deep %v, mem %v): level %d filter: Get loop %+v, MultiGet %+v",
					iter, nL0, deep, mem, l, ma.Levels[l].Filter, mb.Levels[l].Filter)
			}
		}
		if ma.Filter != mb.Filter || ma.Gets != mb.Gets || ma.MemTableFilter != mb.MemTableFilter {
			t.Errorf("iter %d: Get loop %+v %+v %d gets, MultiGet %+v %+v %d gets", iter,
				ma.Filter, ma.MemTableFilter, ma.Gets, mb.Filter, mb.MemTableFilter, mb.Gets)
		}
		a.Close()
		b.Close()
	}
}

// TestReview17MultiGetWhileWriting: MultiGets through a snapshot answer
// as Gets through it while a writer writes, flushes and compacts (level
// 0 gains and loses tables, Versions change under the batches). Run with
// -race.
func TestReview17MultiGetWhileWriting(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), WriteBufferSize: 16 << 10,
		L0CompactionTrigger: 3, MultiGetParallelism: 4, BlockCacheSize: 64 << 10})
	defer d.Close()
	for i := 0; i < 3000; i++ {
		d.Put(r17Key(0, i), []byte(fmt.Sprintf("v0-%d", i)), nil)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(5))
		for n := 0; !stop.Load(); n++ {
			i := rng.Intn(3000)
			if rng.Intn(8) == 0 {
				d.Delete(r17Key(0, i), nil)
			} else {
				d.Put(r17Key(0, i), []byte(fmt.Sprintf("v%d-%d", n, i)), nil)
			}
			if n%500 == 0 {
				d.Flush()
			}
		}
	}()
	rounds := 150
	if testing.Short() {
		rounds = 40
	}
	rng := rand.New(rand.NewSource(6))
	for r := 0; r < rounds; r++ {
		snap := d.NewSnapshot()
		ro := &ReadOptions{Snapshot: snap}
		keys := r17Batch(rng, 0, []int{2, 64, 65, 200}[r%4])
		r17Check(t, d, keys, ro, fmt.Sprintf("round %d", r))
		snap.Release()
	}
	stop.Store(true)
	wg.Wait()
}

// TestReview17MultiGetUnopenableLevel0Table: a level-0 table that cannot
// be opened fails the keys in its range that no newer table answers, as
// Get does, and no other key (those outside its range, those a newer
// table answers).
func TestReview17MultiGetUnopenableLevel0Table(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, DisableAutomaticCompactions: true}
	d := mustOpen(t, "/db", o)
	for _, r := range []string{"m", "a"} { // "m" older, "a" newer
		for i := 0; i < 100; i++ {
			d.Put([]byte(fmt.Sprintf("%s%03d", r, i)), []byte(r), nil)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// The older table's file is overwritten with zeros (of its size)
	// before the store is reopened: its table loader and its reads fail
	// to open it.
	v := d.loadReadState()
	files := v.rs.v.Files[0]
	if len(files) != 2 {
		t.Fatalf("%d level-0 tables", len(files))
	}
	older := files[1]
	v.unrefAsync()
	path := d.tablePath(older.FileNum)
	d.Close()
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, older.Size)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", o)
	defer d.Close()
	var keys [][]byte
	for i := 0; i < 100; i += 7 {
		keys = append(keys, []byte(fmt.Sprintf("a%03d", i)), []byte(fmt.Sprintf("m%03d", i)), []byte(fmt.Sprintf("z%03d", i)))
	}
	r17Check(t, d, keys, nil, "older table missing")
	vals, errs := d.MultiGet(keys, nil)
	for i, k := range keys {
		switch k[0] {
		case 'a':
			if string(vals[i]) != "a" {
				t.Fatalf("%q: %q %v", k, vals[i], errs[i])
			}
		case 'm':
			if errs[i] == nil || errors.Is(errs[i], ErrNotFound) {
				t.Fatalf("%q in the missing table's range: %q %v", k, vals[i], errs[i])
			}
		case 'z':
			if !errors.Is(errs[i], ErrNotFound) {
				t.Fatalf("%q outside every table: %q %v", k, vals[i], errs[i])
			}
		}
	}
}
