package db

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// checkpointModel fills d with keys in every place a version can be: a
// compacted level, level 0, the frozen memtable's successor and the live
// memtable, with overwrites and deletions across them. It returns the
// model of what d holds.
func checkpointModel(t *testing.T, d *DB, rng *rand.Rand) map[string]string {
	t.Helper()
	model := map[string]string{}
	put := func(k, v string) {
		if err := d.Put([]byte(k), []byte(v), &WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
		model[k] = v
	}
	del := func(k string) {
		if err := d.Delete([]byte(k), &WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
		delete(model, k)
	}
	for phase := 0; phase < 4; phase++ {
		for i := 0; i < 300; i++ {
			k := fmt.Sprintf("k%04d", rng.Intn(600))
			if rng.Intn(5) == 0 {
				del(k)
			} else {
				put(k, fmt.Sprintf("v%d.%d.%x", phase, i, rng.Uint32()))
			}
		}
		switch phase {
		case 0:
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
		case 1, 2:
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return model
}

// requireStoreEquals opens dir and checks it holds exactly model, by Gets
// and by a full scan.
func requireStoreEquals(t *testing.T, dir string, o *Options, model map[string]string) {
	t.Helper()
	c, err := Open(dir, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	defer c.Close()
	requireDBEquals(t, c, model)
}

func requireDBEquals(t *testing.T, c *DB, model map[string]string) {
	t.Helper()
	for k, v := range model {
		got, err := c.Get([]byte(k), nil)
		if err != nil || string(got) != v {
			t.Fatalf("Get(%q) = %q, %v; want %q", k, got, err, v)
		}
	}
	it := c.NewIterator(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if v, ok := model[string(it.Key())]; !ok || v != string(it.Value()) {
			t.Fatalf("scan: %q = %q, model has %q (%v)", it.Key(), it.Value(), v, ok)
		}
		n++
	}
	if err := it.Close(); err != nil || n != len(model) {
		t.Fatalf("scan: %d keys of %d, %v", n, len(model), err)
	}
}

func TestCheckpoint(t *testing.T) {
	for _, name := range []string{"os", "mem"} {
		t.Run(name, func(t *testing.T) {
			o := &Options{WriteBufferSize: 16 << 10, DisableAutomaticCompactions: true}
			root := t.TempDir()
			if name == "mem" {
				o.FS, root = vfs.NewMem(), "/root"
			}
			src := filepath.Join(root, "src")
			d := mustOpen(t, src, o)
			model := checkpointModel(t, d, rand.New(rand.NewSource(1)))
			if m := d.Metrics(); m.Levels[0].Files == 0 || m.MemTableBytes == 0 {
				t.Fatalf("setup: want tables in level 0 and a non-empty memtable: %+v", m.Levels[0])
			}
			cp := filepath.Join(root, "cp")
			if err := d.Checkpoint(cp); err != nil {
				t.Fatal(err)
			}
			if name == "os" {
				// Tables are hard links of the source's (same inode).
				names, _ := os.ReadDir(cp)
				linked := 0
				for _, e := range names {
					if filepath.Ext(e.Name()) != ".sst" {
						continue
					}
					a, err1 := os.Stat(filepath.Join(cp, e.Name()))
					if err1 == nil && a.Sys().(*syscall.Stat_t).Nlink > 1 {
						linked++
					}
				}
				if linked == 0 {
					t.Errorf("no table of the checkpoint is a hard link")
				}
			}
			// The source goes on; the checkpoint does not see it.
			if err := d.Put([]byte("after"), []byte("x"), nil); err != nil {
				t.Fatal(err)
			}
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			requireStoreEquals(t, cp, &Options{FS: o.FS}, model)
			model["after"] = "x"
			requireDBEquals(t, d, model)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			// The checkpoint is a store of its own: writable, reopenable.
			c := mustOpen(t, cp, &Options{FS: o.FS})
			if err := c.Put([]byte("cp-only"), []byte("y"), nil); err != nil {
				t.Fatal(err)
			}
			c.Close()
			delete(model, "after")
			model["cp-only"] = "y"
			requireStoreEquals(t, cp, &Options{FS: o.FS}, model)
		})
	}
}

func TestCheckpointRefusals(t *testing.T) {
	root := t.TempDir()
	d := mustOpen(t, filepath.Join(root, "src"), nil)
	if err := d.Put([]byte("a"), []byte("1"), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "exists"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"", filepath.Join(root, "exists"), filepath.Join(root, "src"), filepath.Join(root, "src") + "/"} {
		if err := d.Checkpoint(dir); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Checkpoint(%q) = %v, want ErrInvalidArgument", dir, err)
		}
	}
	if names, _ := os.ReadDir(filepath.Join(root, "exists")); len(names) != 0 {
		t.Errorf("a refused checkpoint wrote into the existing directory: %v", names)
	}
	d.Close()
	if err := d.Checkpoint(filepath.Join(root, "late")); !errors.Is(err, ErrClosed) {
		t.Errorf("Checkpoint after Close = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "late")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Checkpoint after Close made its directory: %v", err)
	}

	// A read-only DB checkpoints too (its memtable holds the replayed logs).
	ro := mustOpen(t, filepath.Join(root, "src"), &Options{ReadOnly: true})
	defer ro.Close()
	if err := ro.Checkpoint(filepath.Join(root, "fromro")); err != nil {
		t.Fatal(err)
	}
	requireStoreEquals(t, filepath.Join(root, "fromro"), nil, map[string]string{"a": "1"})
}

// TestCheckpointUnderWrites takes checkpoints while writers, flushes and
// compactions run, and checks each against the writers' histories: every
// writer's batch writes all of its keys with the batch number, so a
// checkpoint must show one batch number per writer (no half batch), at
// least the last acknowledged before the call and at most the last
// started before its return.
func TestCheckpointUnderWrites(t *testing.T) {
	const writers, keysPerWriter = 3, 8
	root := t.TempDir()
	o := &Options{WriteBufferSize: 8 << 10, L0CompactionTrigger: 2, LBaseMaxBytes: 32 << 10, TargetFileSize: 8 << 10}
	d := mustOpen(t, filepath.Join(root, "src"), o)
	var started, acked [writers]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pad := make([]byte, 200)
			for j := int64(1); ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				b := &Batch{}
				for k := 0; k < keysPerWriter; k++ {
					b.Put([]byte(fmt.Sprintf("w%d.k%d", w, k)), append([]byte(fmt.Sprintf("%d:", j)), pad...))
				}
				started[w].Store(j)
				if err := d.Write(b, nil); err != nil {
					t.Error(err)
					return
				}
				acked[w].Store(j)
			}
		}()
	}
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	for r := 0; r < rounds; r++ {
		time.Sleep(20 * time.Millisecond)
		var lo [writers]int64
		for w := range lo {
			lo[w] = acked[w].Load()
		}
		cp := filepath.Join(root, fmt.Sprintf("cp%d", r))
		if err := d.Checkpoint(cp); err != nil {
			t.Fatal(err)
		}
		var hi [writers]int64
		for w := range hi {
			hi[w] = started[w].Load()
		}
		c := mustOpen(t, cp, nil)
		for w := 0; w < writers; w++ {
			var seen int64 = -1
			for k := 0; k < keysPerWriter; k++ {
				v, err := c.Get([]byte(fmt.Sprintf("w%d.k%d", w, k)), nil)
				var j int64
				switch {
				case errors.Is(err, ErrNotFound):
					j = 0
				case err != nil:
					t.Fatal(err)
				default:
					if _, err := fmt.Sscanf(string(v), "%d:", &j); err != nil {
						t.Fatalf("value %q: %v", v, err)
					}
				}
				if seen >= 0 && j != seen {
					t.Fatalf("checkpoint %d: writer %d's keys show batches %d and %d: half a batch", r, w, seen, j)
				}
				seen = j
			}
			if seen < lo[w] || seen > hi[w] {
				t.Fatalf("checkpoint %d: writer %d at batch %d, outside [%d acknowledged before, %d started before return]", r, w, seen, lo[w], hi[w])
			}
		}
		c.Close()
	}
	close(stop)
	wg.Wait()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointFaultsAndCrashes fails each file operation of a Checkpoint
// in turn, then simulates a machine crash: the source is untouched, and
// the destination is absent, refused as incomplete, or complete.
func TestCheckpointFaultsAndCrashes(t *testing.T) {
	mem := vfs.NewMem()
	var armed atomic.Bool
	var count, failAt atomic.Int64
	var lastFailed atomic.Value
	ffs := vfs.NewFaultFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if !armed.Load() {
			return nil
		}
		if count.Add(1) == failAt.Load() {
			lastFailed.Store(fmt.Sprintf("%v %s", op, path))
			return fmt.Errorf("injected: %w", syscall.EIO)
		}
		return nil
	}))
	o := &Options{FS: ffs, WriteBufferSize: 16 << 10, DisableAutomaticCompactions: true}
	d := mustOpen(t, "/src", o)
	model := checkpointModel(t, d, rand.New(rand.NewSource(2)))

	// Count the operations of one whole checkpoint.
	failAt.Store(-1)
	armed.Store(true)
	if err := d.Checkpoint("/count"); err != nil {
		t.Fatal(err)
	}
	armed.Store(false)
	total := count.Load()
	if total < 10 {
		t.Fatalf("a checkpoint took only %d file operations", total)
	}
	rng := rand.New(rand.NewSource(3))
	outcomes := map[string]int{}
	for i := int64(1); i <= total; i++ {
		dir := fmt.Sprintf("/cp%d", i)
		count.Store(0)
		failAt.Store(i)
		armed.Store(true)
		err := d.Checkpoint(dir)
		armed.Store(false)
		if err == nil {
			// Only an operation whose failure cannot matter (a write of
			// the info LOG) may let it succeed; then it must be complete.
			requireStoreEquals(t, dir, &Options{FS: mem}, model)
			outcomes["succeeded"]++
			t.Logf("checkpoint succeeded despite a failed %v", lastFailed.Load())
			continue
		}
		// Now, and after a crash: the destination is absent, refused as
		// incomplete, or complete; the source is untouched.
		for _, fsys := range []*vfs.MemFS{mem, mem.CrashClone(rng)} {
			_, err := Open(dir, &Options{FS: fsys, ReadOnly: true})
			switch {
			case errors.Is(err, ErrDBMissing):
				outcomes["absent"]++
			case errors.Is(err, ErrIncompleteCheckpoint):
				outcomes["incomplete"]++
			case err != nil:
				t.Fatalf("fault at operation %d of %d (%v): Open of the destination: %v", i, total, err, err)
			default:
				requireStoreEquals(t, dir, &Options{FS: fsys, ReadOnly: true}, model)
				outcomes["complete"]++
			}
			if fsys != mem {
				requireStoreEquals(t, "/src", &Options{FS: fsys}, model)
			}
		}
	}
	requireDBEquals(t, d, model)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	requireStoreEquals(t, "/src", &Options{FS: mem}, model)
	t.Logf("%d operations failed in turn: %v", total, outcomes)
	if outcomes["incomplete"] == 0 {
		t.Errorf("no fault left an incomplete checkpoint: %v", outcomes)
	}
}

// TestCheckpointRacingClose closes the DB while checkpoints copy tables:
// Close returns, each Checkpoint returns nil or ErrClosed, and what a
// checkpoint left is complete or refused as incomplete.
func TestCheckpointRacingClose(t *testing.T) {
	for round := 0; round < 4; round++ {
		mem := vfs.NewMem()
		o := &Options{FS: mem, WriteBufferSize: 256 << 10, DisableAutomaticCompactions: true, DisableCompression: true}
		d := mustOpen(t, "/src", o)
		model := map[string]string{}
		val := string(make([]byte, 1000))
		for i := 0; i < 6000; i++ {
			k := fmt.Sprintf("k%06d", i)
			if err := d.Put([]byte(k), []byte(val), nil); err != nil {
				t.Fatal(err)
			}
			model[k] = val
		}
		if err := d.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 2)
		for c := 0; c < 2; c++ {
			go func() { errs <- d.Checkpoint(fmt.Sprintf("/cp%d", c)) }()
		}
		time.Sleep(time.Duration(round) * time.Millisecond)
		closed := make(chan error, 1)
		go func() { closed <- d.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Close did not return while checkpoints ran")
		}
		for c := 0; c < 2; c++ {
			if err := <-errs; err != nil && !errors.Is(err, ErrClosed) {
				t.Fatalf("Checkpoint racing Close: %v", err)
			}
			dir := fmt.Sprintf("/cp%d", c)
			_, err := Open(dir, &Options{FS: mem, ReadOnly: true})
			switch {
			case errors.Is(err, ErrDBMissing), errors.Is(err, ErrIncompleteCheckpoint):
			case err != nil:
				t.Fatalf("round %d: Open(%s): %v", round, dir, err)
			default:
				requireStoreEquals(t, dir, &Options{FS: mem, ReadOnly: true}, model)
			}
		}
	}
}
