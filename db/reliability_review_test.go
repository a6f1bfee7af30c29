package db

import (
	"bytes"
	"errors"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Found by the adversarial review of the issue 14 fixes; each failed
// before its fix.

func requireGoroutinesSettle(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%d goroutines after Close, %d before:\n%s", n, before, buf)
	}
}

// TestConcurrentCloseWaitsForTheFirst: two goroutines close the DB while
// a flush runs. The second Close returned ErrClosed at once, while the
// first still waited for the flush, with the LOCK, descriptors and maps
// held: an Open by the caller who saw Close return failed with ErrLocked.
// Now it returns ErrClosed once the first has released everything.
func TestConcurrentCloseWaitsForTheFirst(t *testing.T) {
	dir := t.TempDir()
	o := &Options{WriteBufferSize: 256 << 20, DisableAutomaticCompactions: true}
	d := mustOpen(t, dir, o)
	val := bytes.Repeat([]byte("v"), 1000)
	for i := 0; i < 100000; i++ { // ~100 MiB in the memtable
		if err := d.Put(memKey(i), val, nil); err != nil {
			t.Fatal(err)
		}
	}
	flushed := make(chan error, 1)
	go func() { flushed <- d.Flush() }() // a flush of ~100 MiB: Close waits for it
	for {
		d.mu.Lock()
		f := d.flushing
		d.mu.Unlock()
		if f {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	first := make(chan error, 1)
	go func() { first <- d.Close() }()
	for !d.closed.Load() {
		time.Sleep(10 * time.Microsecond)
	}
	err := d.Close() // the second Close
	fds, maps, _ := openFilesUnder(t, dir)
	d2, oerr := Open(dir, o)
	if oerr == nil {
		d2.Close()
	}
	stillClosing := len(first) == 0
	t.Logf("second Close returned %v; first still running: %v", err, stillClosing)
	if len(fds) > 0 || len(maps) > 0 || oerr != nil {
		t.Errorf("after the second Close returned: %d descriptors and %d maps of the store still open (%q); Open: %v",
			len(fds), len(maps), fds, oerr)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	<-flushed
	requireNoOpenFiles(t, dir, "after both Closes")
}

// TestCloseWithStalledWriters: Close returns while eight writers are
// stalled on level 0 behind CompactRange calls; they get ErrClosed, and
// no file, map or goroutine is left.
func TestCloseWithStalledWriters(t *testing.T) {
	dir := t.TempDir()
	o := &Options{WriteBufferSize: 4 << 10, TargetFileSize: 64 << 10, L0CompactionTrigger: 2, L0SlowdownWritesTrigger: 3, L0StopWritesTrigger: 4}
	d := mustOpen(t, dir, o)
	val := bytes.Repeat([]byte("v"), 300)
	for i := 0; i < 3000; i++ {
		if err := d.Put(memKey(i), val, nil); err != nil {
			t.Fatal(err)
		}
	}
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 5; i++ {
			if err := d.CompactRange(nil, nil); err != nil {
				return
			}
		}
	}()
	var writes atomic.Int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				if err := d.Put(memKey(g*1000000+i), val, nil); err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Error(err)
					}
					return
				}
				writes.Add(1)
			}
		}(g)
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	withWatchdog(t, 20*time.Second, "Close", func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("Close took %v; %d writes; stalls %d", time.Since(start), writes.Load(), d.Metrics().WriteStalls)
	wg.Wait()
	requireNoOpenFiles(t, dir, "after Close")
	requireGoroutinesSettle(t, before-0)
}

// TestIteratorValueSurvivesClose: Key and Value stay valid until the next
// positioning call, and Close is not one. A Value read from a table block
// did not survive Close: the block went back to the pool and the next
// cache miss overwrote it; Close now copies it.
//
// The common pattern this breaks:
//
//	func lookup(d *DB, k []byte) []byte {
//		it := d.NewIterator(nil)
//		defer it.Close()
//		if it.Seek(k) { return it.Value() }
//		return nil
//	}
func TestIteratorValueSurvivesClose(t *testing.T) {
	for name, o := range map[string]*Options{
		"no block cache":     {DisableBlockCache: true},
		"16 KiB block cache": {BlockCacheSize: 16 << 10},
		"default options":    nil,
	} {
		t.Run(name, func(t *testing.T) { valueAfterClose(t, o) })
	}
}

func valueAfterClose(t *testing.T, o *Options) {
	d := mustOpen(t, t.TempDir(), o)
	defer d.Close()
	const n = 100000 // ~12 MiB of incompressible blocks: more than the default 8 MiB cache
	val := func(i int) []byte {
		v := make([]byte, 100)
		rand.New(rand.NewSource(int64(i))).Read(v)
		return v
	}
	for i := 0; i < n; i++ {
		if err := d.Put(memKey(i), val(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	lookup := func(k []byte) (key, val []byte) {
		it := d.NewIterator(nil)
		defer it.Close()
		if it.Seek(k) {
			return it.Key(), it.Value()
		}
		return nil, nil
	}
	k, v := lookup(memKey(0))
	want := val(0)
	if !bytes.Equal(v, want) {
		t.Fatalf("value right after lookup: %q", v)
	}
	// Other reads (cache misses) reuse the block buffer.
	for i := 1; i < n; i += 5 {
		if _, err := d.Get(memKey(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(k, memKey(0)) {
		t.Errorf("key returned by the closed iterator changed: %q", k)
	}
	if !bytes.Equal(v, want) {
		t.Fatalf("value returned by the closed iterator changed after other reads: got %x..., want %x...", v[:16], want[:16])
	}
}

// TestSnapshotOfAnotherDB: a snapshot of one DB passed to another is an
// invalid argument, for Get and NewIterator alike.
func TestSnapshotOfAnotherDB(t *testing.T) {
	a := mustOpen(t, t.TempDir(), nil)
	defer a.Close()
	b := mustOpen(t, t.TempDir(), nil)
	defer b.Close()
	s := a.NewSnapshot()
	defer s.Release()
	if _, err := b.Get([]byte("k"), &ReadOptions{Snapshot: s}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Get with another DB's snapshot: %v, want ErrInvalidArgument", err)
	}
	it := b.NewIterator(&ReadOptions{Snapshot: s})
	if it.First() {
		t.Error("iterator with another DB's snapshot is at a key")
	}
	if err := it.Close(); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("iterator with another DB's snapshot: %v, want ErrInvalidArgument", err)
	}
}
