package db

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Lifecycle tests: what Close, snapshot release and concurrent calls do to
// a store's answers, files and memory maps. Each test here failed on
// 4324f50 (see RELIABILITY.md, "Bugs these tests found").

// openFilesUnder lists the descriptors (/proc/self/fd) and memory maps
// (/proc/self/maps) of this process that refer to files in dir. It
// returns ok false where /proc is not there.
func openFilesUnder(t *testing.T, dir string) (fds, maps []string, ok bool) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, nil, false
	}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(os.PathSeparator)) {
			fds = append(fds, target)
		}
	}
	raw, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, nil, false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if i := strings.Index(line, dir+string(os.PathSeparator)); i >= 0 {
			maps = append(maps, line[i:])
		}
	}
	return fds, maps, true
}

// requireNoOpenFiles fails the test if any descriptor or mapping of a file
// in dir is left.
func requireNoOpenFiles(t *testing.T, dir, when string) {
	t.Helper()
	fds, maps, ok := openFilesUnder(t, dir)
	if !ok {
		return
	}
	if len(fds) > 0 || len(maps) > 0 {
		t.Fatalf("%s: %d descriptors and %d memory maps of the store's files are left, e.g. %q %q",
			when, len(fds), len(maps), first(fds), first(maps))
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// withWatchdog runs f and fails the test (with every goroutine's stack)
// if it has not returned within limit.
func withWatchdog(t *testing.T, limit time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(limit):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%s did not return within %v; goroutines:\n%s", what, limit, buf)
	}
}

// TestCloseReleasesFilesUnderLoad: readers that loop NewIterator → Seek →
// Next → Close, Gets, snapshots, writes, flushes and CompactRanges run
// while the DB is closed.
// Close returns in bounded time; once it has and every reader stopped, no
// descriptor or memory map of the store's files is left, and every call
// reports ErrClosed. On 4324f50 iterator steps checked "closed" before
// registering as readers and NewIterator did not register at all, so
// tables were reopened (and mapped) after Close: hundreds of maps stayed.
func TestCloseReleasesFilesUnderLoad(t *testing.T) {
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	dir := t.TempDir()
	// Many small tables, so iterators open several.
	o := &Options{WriteBufferSize: 32 << 10, TargetFileSize: 32 << 10, BlockCacheSize: 64 << 10}
	d := mustOpen(t, dir, o)
	for i := 0; i < 3000; i++ {
		if err := d.Put(memKey(i), bytes.Repeat([]byte{byte(i)}, 100), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// No background compaction may read tables while the test drops them.
	o.DisableAutomaticCompactions = true
	for round := 0; round < rounds; round++ {
		d := mustOpen(t, dir, o)
		// Drop the tables Open loaded, so readers open them lazily: the
		// window this test is about.
		d.tables.close()
		d.tables.closed.Store(false)
		var stop atomic.Bool
		var wg sync.WaitGroup
		var unexpected atomic.Value
		check := func(err error) {
			if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrNotFound) {
				unexpected.Store(err)
			}
		}
		for g := 0; g < 7; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; !stop.Load(); i++ {
					k := memKey((i*131 + g*997) % 3000)
					if g == 6 { // flushes and compactions
						if i%2 == 0 {
							check(d.Flush())
						} else {
							check(d.CompactRange(k, memKey(2999)))
						}
						continue
					}
					switch g % 3 {
					case 0:
						it := d.NewIterator(nil)
						for ok, n := it.Seek(k), 0; ok && n < 3; ok, n = it.Next(), n+1 {
						}
						check(it.Close())
					case 1:
						_, err := d.Get(k, nil)
						check(err)
					default:
						s := d.NewSnapshot()
						it := d.NewIterator(&ReadOptions{Snapshot: s})
						it.Last()
						it.Prev()
						check(it.Close())
						s.Release()
						check(d.Put(k, []byte("x"), nil))
					}
				}
			}(g)
		}
		time.Sleep(time.Duration(2+round%5) * time.Millisecond)
		withWatchdog(t, 20*time.Second, "Close under load", func() {
			if err := d.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		stop.Store(true)
		wg.Wait()
		if err, _ := unexpected.Load().(error); err != nil {
			t.Fatalf("round %d: a concurrent call failed: %v", round, err)
		}
		requireNoOpenFiles(t, dir, fmt.Sprintf("round %d, after Close and every reader stopped", round))
	}
}

// TestCallsAfterCloseOnDisk: every call on a closed DB on the operating
// system's files, and on iterators and snapshots made before or after it
// closed, reports ErrClosed, and no file or map of the store stays open.
func TestCallsAfterCloseOnDisk(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	if err := d.Put([]byte("a"), []byte("1"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	snap := d.NewSnapshot()
	it := d.NewIterator(nil)
	if !it.First() {
		t.Fatal("iterator is empty")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	requireNoOpenFiles(t, dir, "after Close with an open iterator and snapshot")
	var b Batch
	b.Put([]byte("b"), []byte("2"))
	checks := map[string]error{
		"Put":    d.Put([]byte("a"), []byte("2"), nil),
		"Delete": d.Delete([]byte("a"), nil),
		"Write":  d.Write(&b, nil),
		"Flush":  d.Flush(),
		"Close":  d.Close(),
		"CompactRange": func() error {
			return d.CompactRange(nil, nil)
		}(),
		"Get": func() error {
			_, err := d.Get([]byte("a"), nil)
			return err
		}(),
		"Get(old snapshot)": func() error {
			_, err := d.Get([]byte("a"), &ReadOptions{Snapshot: snap})
			return err
		}(),
		"Get(snapshot taken after Close)": func() error {
			_, err := d.Get([]byte("a"), &ReadOptions{Snapshot: d.NewSnapshot()})
			return err
		}(),
		"NewIterator": func() error {
			it := d.NewIterator(nil)
			if it.First() {
				return errors.New("First returned true")
			}
			return it.Close()
		}(),
		"old iterator Next": func() error {
			if it.Next() {
				return errors.New("Next returned true")
			}
			return it.Error()
		}(),
	}
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	snap.Release()
	it.Close()
	requireNoOpenFiles(t, dir, "after the iterator and snapshot were released")
}

// TestIteratorUseAfterClose: an iterator's calls after its own Close
// return false and its Error reports ErrClosed, never a stale key.
func TestIteratorUseAfterClose(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	if err := d.Put([]byte("a"), []byte("1"), nil); err != nil {
		t.Fatal(err)
	}
	it := d.NewIterator(nil)
	if !it.First() {
		t.Fatal("empty")
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() bool{
		"First": it.First, "Last": it.Last, "Next": it.Next, "Prev": it.Prev,
		"Seek": func() bool { return it.Seek([]byte("a")) },
	} {
		if f() || it.Valid() {
			t.Errorf("%s after Close returned true", name)
		}
	}
	if !errors.Is(it.Error(), ErrClosed) {
		t.Errorf("Error after use after Close = %v, want ErrClosed", it.Error())
	}
}

// TestReleasedSnapshotRefusesReads: a read through a released snapshot
// fails with ErrSnapshotReleased. On 4324f50, after a compaction dropped
// the version it saw, Get said "not found" and the iterator was empty,
// with no error.
func TestReleasedSnapshotRefusesReads(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	if err := d.Put([]byte("k"), []byte("v1"), nil); err != nil {
		t.Fatal(err)
	}
	s := d.NewSnapshot()
	if err := d.Put([]byte("k"), []byte("v2"), nil); err != nil {
		t.Fatal(err)
	}
	// While live, the snapshot sees v1, also after a compaction.
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Get([]byte("k"), &ReadOptions{Snapshot: s}); err != nil || string(v) != "v1" {
		t.Fatalf("Get through a live snapshot = %q, %v; want v1", v, err)
	}
	held := d.NewIterator(&ReadOptions{Snapshot: s})
	defer held.Close()
	s.Release()
	s.Release() // a second Release is a no-op
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Get([]byte("k"), &ReadOptions{Snapshot: s}); !errors.Is(err, ErrSnapshotReleased) {
		t.Fatalf("Get through a released snapshot = %q, %v; want ErrSnapshotReleased", v, err)
	}
	it := d.NewIterator(&ReadOptions{Snapshot: s})
	if it.First() {
		t.Fatalf("iterator on a released snapshot is at %q", it.Key())
	}
	if err := it.Close(); !errors.Is(err, ErrSnapshotReleased) {
		t.Fatalf("iterator on a released snapshot: %v, want ErrSnapshotReleased", err)
	}
	// An iterator made before the release keeps its consistent view.
	if !held.First() || string(held.Value()) != "v1" {
		t.Fatalf("iterator made before the release: %q %q %v", held.Key(), held.Value(), held.Error())
	}
	// Without a snapshot the store reads on.
	if v, err := d.Get([]byte("k"), nil); err != nil || string(v) != "v2" {
		t.Fatalf("Get = %q, %v; want v2", v, err)
	}
}

// TestCloseDuringCompactRange: Close returns while CompactRange calls
// wait for a background compaction, or run. On 4324f50 a CompactRange
// that returned ErrClosed after waiting did not wake Close, which waited
// for it forever: when the background compaction ended, Close and the
// CompactRange woke together, and if Close looked first it slept again.
// Each round sets that scene (a long background compaction, a
// CompactRange waiting for it, then Close), so a round hangs the old code
// with probability about 1/2.
func TestCloseDuringCompactRange(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 6
	}
	dir := t.TempDir()
	o := &Options{WriteBufferSize: 64 << 10, TargetFileSize: 64 << 10, L0CompactionTrigger: 2,
		DisableCompression: true, DisableAutomaticCompactions: true}
	{
		d := mustOpen(t, dir, o)
		val := bytes.Repeat([]byte{'v'}, 1000)
		for i := 0; i < 8000; i++ { // 8 MB in about 120 level-0 tables
			if err := d.Put(memKey(i*7919%8000), val, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	o.DisableAutomaticCompactions = false
	hits := 0
	for round := 0; round < rounds; round++ {
		// Work on a copy, so every round starts with the deep level 0
		// that Open's background compaction then works through.
		rdir := filepath.Join(t.TempDir(), "db")
		copyDir(t, dir, rdir)
		d := mustOpen(t, rdir, o)
		d.mu.Lock()
		running := d.compacting
		d.mu.Unlock()
		errc := make(chan error, 1)
		go func() { errc <- d.CompactRange(nil, nil) }()
		// Wait until the CompactRange waits (manual > 0).
		for {
			d.mu.Lock()
			m := d.manual
			d.mu.Unlock()
			if m > 0 {
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
		d.mu.Lock()
		if running && d.compacting {
			hits++
		}
		d.mu.Unlock()
		withWatchdog(t, 20*time.Second, fmt.Sprintf("round %d: Close during CompactRange", round), func() {
			if err := d.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		if err := <-errc; err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("CompactRange: %v", err)
		}
	}
	t.Logf("%d of %d rounds closed while a CompactRange waited for a background compaction", hits, rounds)
	if hits == 0 {
		t.Fatal("no round set the scene: the test no longer tests what it says")
	}
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGetDuringFlushAndCompaction: one goroutine rewrites a key and
// compacts the store in a loop (automatic compactions off) while many
// Get it: the key is never missing. On 4324f50 Get took the sequence
// number before the read state, and a flush and compaction in between
// dropped the only version that sequence number could see. The window is
// small; the concurrent checker (reliability_checker_test.go) is the
// test that finds it reliably, this one is its plain form.
func TestGetDuringFlushAndCompaction(t *testing.T) {
	dur := 2 * time.Second
	if testing.Short() {
		dur = 500 * time.Millisecond
	}
	// Frequent collections preempt readers at function calls, which is
	// what opens the window.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	d := mustOpen(t, t.TempDir(), &Options{DisableAutomaticCompactions: true})
	defer d.Close()
	key := []byte("k")
	if err := d.Put(key, []byte("0"), nil); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var misses, gets atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				_, err := d.Get(key, nil)
				gets.Add(1)
				if err != nil {
					misses.Add(1)
				}
			}
		}()
	}
	deadline := time.Now().Add(dur)
	for i := 1; time.Now().Before(deadline); i++ {
		if err := d.Put(key, []byte(fmt.Sprint(i)), nil); err != nil {
			t.Fatal(err)
		}
		if err := d.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if m := misses.Load(); m > 0 {
		t.Fatalf("%d of %d Gets missed a key that was never deleted", m, gets.Load())
	}
	t.Logf("%d Gets, none missed", gets.Load())
}
