package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

// reuseStore is a store of keys "a000".."a099" in one flushed table,
// with a 4-byte prefix extractor: a scan of prefix "b000" is ruled out by
// the table's prefix filter (or its key range), one of "a0xx" finds keys.
func reuseStore(t testing.TB) *DB {
	t.Helper()
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), Prefix: filter.FixedPrefix(4)})
	for i := 0; i < 100; i++ {
		if err := d.Put([]byte(fmt.Sprintf("a%03d", i)), []byte(fmt.Sprintf("v%03d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	return d
}

func prefixRO(p string) *ReadOptions {
	lo, hi := PrefixBounds([]byte(p))
	return &ReadOptions{LowerBound: lo, UpperBound: hi}
}

// TestIteratorStateReuse checks the iterator whose state Close gives back
// for reuse (one that never stood at a key): after Close it behaves as
// any closed iterator, and nothing done through it reaches the iterator
// that reuses its state.
func TestIteratorStateReuse(t *testing.T) {
	d := reuseStore(t)
	defer d.Close()

	old := d.NewIterator(prefixRO("b000"))
	if old.First() || old.Last() || old.Seek([]byte("b000")) || old.Next() || old.Prev() {
		t.Fatalf("an absent prefix found %q", old.Key())
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if old.s != nil {
		t.Fatal("an iterator that found nothing kept its state after Close")
	}
	if old.Valid() || old.Key() != nil || old.Value() != nil || old.Error() != nil {
		t.Fatalf("closed: Valid %v, Key %q, Value %q, Error %v", old.Valid(), old.Key(), old.Value(), old.Error())
	}

	// New iterators now take states from the pool, maybe old's; old's
	// calls between their steps must not move them.
	for round := 0; round < 50; round++ {
		p := fmt.Sprintf("a0%d", round%10)
		it := d.NewIterator(prefixRO(p))
		var got []string
		for ok := it.First(); ok; ok = it.Next() {
			got = append(got, string(it.Key())+"="+string(it.Value()))
			if old.Seek([]byte("a000")) || old.First() || old.Next() || old.Last() || old.Prev() {
				t.Fatal("a closed iterator moved")
			}
			if !errors.Is(old.Close(), ErrClosed) || !errors.Is(old.Error(), ErrClosed) || old.Key() != nil {
				t.Fatalf("closed iterator: Error %v, Key %q", old.Error(), old.Key())
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 10 {
			t.Fatalf("prefix %s: %d keys, want 10: %v", p, len(got), got)
		}
		for i, kv := range got {
			if want := fmt.Sprintf("%s%d=v%s%d", p, i, p[1:], i); kv != want {
				t.Fatalf("prefix %s: entry %d is %s, want %s", p, i, kv, want)
			}
		}
		// An absent one between, whose state goes back to the pool.
		none := d.NewIterator(prefixRO("b001"))
		if none.First() {
			t.Fatal("found a key of an absent prefix")
		}
		none.Close()
	}
}

// TestIteratorKeyAfterCloseWithReuse checks that Key and Value read before
// and after Close stay what they were while many iterators, absent and
// present, are made and closed after it: an iterator that stood at a key
// keeps its state.
func TestIteratorKeyAfterCloseWithReuse(t *testing.T) {
	d := reuseStore(t)
	defer d.Close()
	type kept struct {
		it         *Iterator
		key, value []byte
		want       string
	}
	var all []kept
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		it := d.NewIterator(prefixRO(fmt.Sprintf("a0%d", rng.Intn(10))))
		n := rng.Intn(4)
		ok := it.First()
		for j := 0; ok && j < n; j++ {
			ok = it.Next()
		}
		if !ok {
			t.Fatal("a present prefix ended early")
		}
		k := kept{it: it, key: it.Key(), value: it.Value(), want: string(it.Key()) + "=" + string(it.Value())}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		all = append(all, k)
		for j := 0; j < 3; j++ {
			none := d.NewIterator(prefixRO(fmt.Sprintf("b%03d", j)))
			none.Seek([]byte("b"))
			none.Close()
		}
	}
	for i, k := range all {
		if got := string(k.key) + "=" + string(k.value); got != k.want {
			t.Fatalf("iterator %d: Key/Value read before Close changed to %s, want %s", i, got, k.want)
		}
		if got := string(k.it.Key()) + "=" + string(k.it.Value()); got != k.want {
			t.Fatalf("iterator %d: Key/Value after Close are %s, want %s", i, got, k.want)
		}
	}
}

// TestIteratorErrorKeptAfterClose checks that an iterator with an error
// keeps reporting it after Close, rather than give its state back.
func TestIteratorErrorKeptAfterClose(t *testing.T) {
	d := reuseStore(t)
	s := d.NewSnapshot()
	s.Release()
	it := d.NewIterator(&ReadOptions{Snapshot: s, LowerBound: []byte("b"), UpperBound: []byte("c")})
	if it.First() {
		t.Fatal("an iterator of a released snapshot found a key")
	}
	if err := it.Close(); !errors.Is(err, ErrSnapshotReleased) {
		t.Fatalf("Close: %v, want ErrSnapshotReleased", err)
	}
	if !errors.Is(it.Error(), ErrSnapshotReleased) {
		t.Fatalf("Error after Close: %v, want ErrSnapshotReleased", it.Error())
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIteratorReuseConcurrent makes and closes absent and present
// iterators from several goroutines, against a flush, a compaction and
// the DB's Close, each scan checked: a pooled state must never carry one
// iterator's bounds, key or read state into another's.
func TestIteratorReuseConcurrent(t *testing.T) {
	d := reuseStore(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errc := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				present := rng.Intn(2) == 0
				p := fmt.Sprintf("b%03d", rng.Intn(100))
				if present {
					p = fmt.Sprintf("a0%d", rng.Intn(10))
				}
				it := d.NewIterator(prefixRO(p))
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					if !bytes.HasPrefix(it.Key(), []byte(p)) {
						errc <- fmt.Errorf("prefix %s: key %q", p, it.Key())
						it.Close()
						return
					}
					n++
				}
				err := it.Close()
				if errors.Is(err, ErrClosed) {
					return // the DB closed
				}
				if err != nil {
					errc <- err
					return
				}
				if want := map[bool]int{true: 10, false: 0}[present]; n != want {
					errc <- fmt.Errorf("prefix %s: %d keys, want %d", p, n, want)
					return
				}
			}
		}(g)
	}
	for i := 0; i < 20; i++ {
		if err := d.Put([]byte(fmt.Sprintf("c%03d", i)), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	withWatchdog(t, time.Minute, "the scanners to stop", wg.Wait)
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

// TestIteratorNoneAllocs checks that a scan of an absent prefix, the
// case the prefix filter serves, allocates nothing: the state comes from
// the pool and the Iterator stays on the caller's stack.
func TestIteratorNoneAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates, and drops pooled items")
	}
	d := reuseStore(t)
	defer d.Close()
	ro := prefixRO("b000")
	allocs := testing.AllocsPerRun(200, func() {
		it := d.NewIterator(ro)
		if it.First() {
			t.Fatal("found a key of an absent prefix")
		}
		it.Close()
	})
	if allocs != 0 {
		t.Fatalf("an absent-prefix scan made %v allocations, want 0", allocs)
	}
}

// TestRangeDelsLoadRetried checks that a failure to load a read state's
// range tombstones (a table that cannot be opened) fails only the reads
// that met it: once the fault passes, the same read state answers again,
// with no write, flush or compaction in between (review of issue 17's
// iterator change: the failure had been kept for the state's lifetime).
func TestRangeDelsLoadRetried(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, DisableAutomaticCompactions: true}
	d := mustOpen(t, "/db", o)
	for c := 'a'; c <= 'z'; c++ {
		if err := d.Put([]byte{byte(c)}, []byte{byte(c)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteRange([]byte("c"), []byte("f"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	var tombTable string // the later flush's table
	for _, n := range names {
		if strings.HasSuffix(n, ".sst") && n > tombTable {
			tombTable = n
		}
	}
	ffs := vfs.NewFaultFS(fs, nil)
	ffs.SetInjector(vfs.Fault{Ops: vfs.OpOpen, PathContains: tombTable, Count: -1}.Injector())
	o.FS = ffs
	d = mustOpen(t, "/db", o)
	defer d.Close()
	d.loading.Wait()
	if _, err := d.Get([]byte("a"), nil); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("Get with the tombstones' table unopenable: %v, want its error", err)
	}
	it := d.NewIterator(nil)
	if it.First() || it.Error() == nil {
		t.Fatalf("iterator with the tombstones' table unopenable: Error %v", it.Error())
	}
	it.Close()
	ffs.SetInjector(nil)
	if v, err := d.Get([]byte("a"), nil); err != nil || string(v) != "a" {
		t.Fatalf("Get after the fault passed: %q, %v", v, err)
	}
	if _, err := d.Get([]byte("d"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a deleted key after the fault passed: %v", err)
	}
	it = d.NewIterator(nil)
	var got []byte
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, it.Key()...)
	}
	if err := it.Close(); err != nil || string(got) != "abfghijklmnopqrstuvwxyz" {
		t.Fatalf("scan after the fault passed: %q, %v", got, err)
	}
}

// TestIteratorNonePinsNoTable checks that an iterator with nothing to
// merge (an absent prefix ruled out by the prefix filter) holds no read
// state: a compaction while it is open deletes the tables it looked at,
// and it still finds nothing, with no error.
func TestIteratorNonePinsNoTable(t *testing.T) {
	d := reuseStore(t)
	defer d.Close()
	it := d.NewIterator(prefixRO("b000"))
	if !it.s.none || it.s.rs != nil {
		t.Fatalf("absent prefix: none %v, read state held %v", it.s.none, it.s.rs != nil)
	}
	before := d.Metrics().TablesDeleted
	if err := d.Put([]byte("a0000"), []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for d.Metrics().TablesDeleted == before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if d.Metrics().TablesDeleted == before {
		t.Fatalf("the open iterator kept the compacted tables: %s", d.Metrics())
	}
	if it.First() || it.Seek([]byte("b")) || it.Last() || it.Error() != nil {
		t.Fatalf("found %q, Error %v", it.Key(), it.Error())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	// ExplainSeek's iterator keeps its read state to trace it.
	if tr, err := d.ExplainSeek([]byte("b000"), prefixRO("b000")); err != nil || tr.Found || len(tr.Steps) == 0 {
		t.Fatalf("ExplainSeek of an absent prefix: found %v, %d steps, err %v", tr.Found, len(tr.Steps), err)
	}
}
