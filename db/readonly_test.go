package db

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// unflushedStore is a store left by a process that died with writes in
// two logs whose memtables never reached a table, on top of tables in
// level 0 and below.
type unflushedStore struct {
	mem     *vfs.MemFS // the store, in "/db"
	m       model      // what it holds
	touched []string   // every key ever written or deleted
}

// buildUnflushedStore writes keys to tables (compacted ones, then a
// level-0 table), then blocks every table creation so the next memtable
// switch leaves its frozen memtable unflushed, and writes on into the new
// log: puts, deletes and overwrites of keys in the tables, in the first
// log and in the second. It copies the file system at that moment, as a
// crash of the process would leave it (every write reached the log).
func buildUnflushedStore(t *testing.T) unflushedStore {
	t.Helper()
	mem := vfs.NewMem()
	var blocking atomic.Bool
	release := make(chan struct{})
	ffs := vfs.NewFaultFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpCreate && strings.HasSuffix(path, ".sst") && blocking.Load() {
			<-release
		}
		return nil
	}))
	d := mustOpen(t, "/db", &Options{FS: ffs, WriteBufferSize: 32 << 10})
	st := unflushedStore{m: model{}}
	seen := map[string]bool{}
	touch := func(k string) {
		if !seen[k] {
			seen[k] = true
			st.touched = append(st.touched, k)
		}
	}
	put := func(b *Batch, k, v string) {
		b.Put([]byte(k), []byte(v))
		st.m[k] = v
		touch(k)
	}
	del := func(b *Batch, k string) {
		b.Delete([]byte(k))
		delete(st.m, k)
		touch(k)
	}
	write := func(f func(b *Batch)) {
		t.Helper()
		var b Batch
		f(&b)
		if err := d.Write(&b, nil); err != nil {
			t.Fatal(err)
		}
	}
	tkey := func(i int) string { return fmt.Sprintf("t%04d", i%300) }

	// Tables: 300 keys compacted below level 0, a third overwritten in a
	// level-0 table.
	for i := 0; i < 300; i++ {
		write(func(b *Batch) { put(b, tkey(i), fmt.Sprintf("deep-%d", i)) })
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i += 3 {
		write(func(b *Batch) { put(b, tkey(i), fmt.Sprintf("l0-%d", i)) })
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}

	// The first log: written until the memtable switches; its flush
	// blocks. The write that switches already goes to the second log.
	blocking.Store(true)
	switched := func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.imm != nil
	}
	for i := 0; !switched(); i++ {
		if i > 100000 {
			t.Fatal("the memtable never switched")
		}
		write(func(b *Batch) {
			switch i % 4 {
			case 0:
				put(b, fmt.Sprintf("w%05d", i), fmt.Sprintf("log1-%d", i))
			case 1:
				del(b, tkey(i)) // a tombstone over a table's value
			case 2:
				put(b, tkey(i*7), fmt.Sprintf("log1-%d", i))
			case 3: // a batch: a new key, and a delete of a key of this log
				put(b, fmt.Sprintf("b%05d", i), fmt.Sprintf("log1-batch-%d", i))
				if i%8 == 3 {
					del(b, fmt.Sprintf("w%05d", i-3))
				}
			}
		})
	}
	// The second log: overwrites and deletes of the first log's keys and
	// of the tables', and a key deleted in the first log written again.
	for i := 0; i < 40; i++ {
		write(func(b *Batch) {
			switch i % 4 {
			case 0:
				put(b, fmt.Sprintf("w%05d", i*4), fmt.Sprintf("log2-%d", i))
			case 1:
				del(b, fmt.Sprintf("b%05d", i*4+3))
			case 2:
				put(b, tkey(i*4+1), fmt.Sprintf("log2-back-%d", i)) // deleted in log 1
			case 3:
				del(b, tkey(i*5))
				put(b, fmt.Sprintf("x%05d", i), "log2")
			}
		})
	}
	st.mem = mem.Clone()
	blocking.Store(false)
	close(release)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	var logs, tables int
	names, _ := st.mem.List("/db")
	for _, n := range names {
		if t, _, ok := parseFileName(n); ok && t == fileTypeLog {
			if fi, _ := st.mem.Stat(vfs.Join("/db", n)); fi.Size() > 0 {
				logs++
			}
		} else if ok && t == fileTypeTable {
			tables++
		}
	}
	if logs < 2 || tables < 2 {
		t.Fatalf("store has %d non-empty logs and %d tables, want at least 2 of each: %v", logs, tables, names)
	}
	return st
}

// fileState is what a test compares of a file before and after.
type fileState struct {
	size int64
	mod  time.Time
	data string
}

// dirFiles returns the name, size, modification time and contents of
// every entry of dir, and the directory's own modification time as ".".
func dirFiles(t *testing.T, fsys vfs.FS, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	fi, err := fsys.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	out["."] = fileState{mod: fi.ModTime()}
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := vfs.Join(dir, n)
		fi, err := fsys.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fsys.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[n] = fileState{size: fi.Size(), mod: fi.ModTime(), data: string(data)}
	}
	return out
}

// sameDir fails the test unless the two states are equal, naming what
// changed.
func sameDir(t *testing.T, before, after map[string]fileState) {
	t.Helper()
	for n, b := range before {
		a, ok := after[n]
		switch {
		case !ok:
			t.Errorf("%s was removed", n)
		case a.size != b.size || a.data != b.data:
			t.Errorf("%s changed: %d bytes, was %d", n, a.size, b.size)
		case !a.mod.Equal(b.mod):
			t.Errorf("%s: modification time %v, was %v", n, a.mod, b.mod)
		}
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			t.Errorf("%s was created", n)
		}
	}
}

// copyToOS writes the files of mem's dir into dir on the OS file system,
// every one (and dir) with a modification time an hour old, so a rewrite
// shows even with coarse timestamps.
func copyToOS(t *testing.T, mem *vfs.MemFS, from, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := mem.List(from)
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, n := range names {
		f, err := mem.Open(vfs.Join(from, n))
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, past, past); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(dir, past, past); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use, for a Logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// checkModel requires d to hold exactly st's model: every key read with
// Get (the deleted ones absent), and iterators and a snapshot agreeing.
func checkModel(t *testing.T, d *DB, st unflushedStore) {
	t.Helper()
	for _, k := range st.touched {
		v, err := d.Get([]byte(k), nil)
		want, ok := st.m[k]
		switch {
		case ok && (err != nil || string(v) != want):
			t.Fatalf("Get(%q) = %q, %v; want %q", k, v, err, want)
		case !ok && !errors.Is(err, ErrNotFound):
			t.Fatalf("Get(%q) = %q, %v; want ErrNotFound (deleted)", k, v, err)
		}
	}
	rng := rand.New(rand.NewSource(1))
	checkIterator(t, rng, d, nil, st.m, t.Fatalf)
	s := d.NewSnapshot()
	defer s.Release()
	checkIterator(t, rng, d, &ReadOptions{Snapshot: s}, st.m, t.Fatalf)
}

// TestReadOnlyChangesNothing opens a store with unflushed writes in two
// logs read-only, reads every key (the logs' writes and deletes
// included), iterates, takes a snapshot, reads Metrics, tries every
// write, opens it read-only a second time and read-write once (refused),
// and closes: the directory is byte-for-byte as it was, modification
// times included, and the events went to Options.Logger. On the OS file
// system and on MemFS.
func TestReadOnlyChangesNothing(t *testing.T) {
	st := buildUnflushedStore(t)
	for _, name := range []string{"os", "mem"} {
		t.Run(name, func(t *testing.T) {
			var fsys vfs.FS = st.mem.Clone()
			dir := "/db"
			if name == "os" {
				fsys, dir = vfs.Default, filepath.Join(t.TempDir(), "db")
				copyToOS(t, st.mem, "/db", dir)
			}
			before := dirFiles(t, fsys, dir)

			var events syncBuffer
			logger := slog.New(slog.NewTextHandler(&events, &slog.HandlerOptions{Level: slog.LevelDebug}))
			d := mustOpen(t, dir, &Options{FS: fsys, ReadOnly: true, Logger: logger})
			checkModel(t, d, st)

			m := d.Metrics()
			if m.MemTableBytes == 0 || m.Levels[0].Files == 0 || m.TablesOpen == 0 || m.Gets == 0 {
				t.Errorf("Metrics of the read-only DB: memtable %d bytes, %d L0 files, %d tables open, %d gets",
					m.MemTableBytes, m.Levels[0].Files, m.TablesOpen, m.Gets)
			}

			// Every write is refused, and none takes effect.
			var b Batch
			b.Put([]byte("new"), []byte("v"))
			for what, err := range map[string]error{
				"Put":          d.Put([]byte("new"), []byte("v"), nil),
				"Delete":       d.Delete([]byte(st.touched[0]), &WriteOptions{Sync: true}),
				"Write":        d.Write(&b, nil),
				"Flush":        d.Flush(),
				"CompactRange": d.CompactRange(nil, nil),
			} {
				if !errors.Is(err, ErrReadOnly) {
					t.Errorf("%s on a read-only DB: %v, want ErrReadOnly", what, err)
				}
			}
			mustMiss(t, d, "new")
			if err := d.Write(new(Batch), nil); err != nil {
				t.Errorf("Write of an empty batch on a read-only DB: %v, want nil (it changes nothing)", err)
			}

			// Another read-only open shares the store; a read-write one
			// is locked out (and changes nothing either).
			d2 := mustOpen(t, dir, &Options{FS: fsys, ReadOnly: true})
			checkModel(t, d2, st)
			if _, err := Open(dir, &Options{FS: fsys}); !errors.Is(err, ErrLocked) {
				t.Errorf("read-write Open next to read-only ones: %v, want ErrLocked", err)
			}
			if err := d2.Close(); err != nil {
				t.Fatal(err)
			}
			checkModel(t, d, st)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if err := d.Put([]byte("k"), []byte("v"), nil); !errors.Is(err, ErrClosed) {
				t.Errorf("Put after Close: %v, want ErrClosed", err)
			}
			if _, err := d.Get([]byte("k"), nil); !errors.Is(err, ErrClosed) {
				t.Errorf("Get after Close: %v, want ErrClosed", err)
			}

			sameDir(t, before, dirFiles(t, fsys, dir))
			log := events.String()
			if !strings.Contains(log, "opened read-only") || strings.Count(log, "replayed log") < 2 {
				t.Errorf("Logger got:\n%s\nwant the open and two replayed logs", log)
			}

			// The store is intact for a read-write open.
			d = mustOpen(t, dir, &Options{FS: fsys})
			checkModel(t, d, st)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReadOnlyMutatesNothing counts: a read-only open, reads, iteration
// and Close make no mutating file-system call at all (FaultFS fails every
// one, and counts none), and take one shared lock.
func TestReadOnlyMutatesNothing(t *testing.T) {
	st := buildUnflushedStore(t)
	ffs := vfs.NewFaultFS(st.mem, vfs.Fault{Ops: vfs.OpMutating, Count: -1}.Injector())
	d := mustOpen(t, "/db", &Options{FS: ffs, ReadOnly: true})
	checkModel(t, d, st)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if n := ffs.Count(vfs.OpMutating); n != 0 {
		t.Errorf("%d mutating operations, want 0", n)
	}
	if n := ffs.Count(vfs.OpLockShared); n != 1 {
		t.Errorf("%d shared locks taken, want 1", n)
	}
}

// TestReadOnlyLocking: read-only opens coexist; a read-write DB and a
// read-only one exclude each other with ErrLocked, whichever came first.
func TestReadOnlyLocking(t *testing.T) {
	for _, name := range []string{"os", "mem"} {
		t.Run(name, func(t *testing.T) {
			var fsys vfs.FS = vfs.NewMem()
			dir := "/db"
			if name == "os" {
				fsys, dir = vfs.Default, filepath.Join(t.TempDir(), "db")
			}
			rw := &Options{FS: fsys}
			ro := &Options{FS: fsys, ReadOnly: true}
			d := mustOpen(t, dir, rw)
			if err := d.Put([]byte("k"), []byte("v"), nil); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir, ro)
			if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "read-write") {
				t.Fatalf("read-only Open next to a read-write DB: %v, want ErrLocked naming the read-write holder", err)
			}
			d.Close()

			var readers []*DB
			for range 3 {
				r := mustOpen(t, dir, ro)
				mustGet(t, r, "k", "v")
				readers = append(readers, r)
			}
			for i, r := range readers {
				if _, err := Open(dir, rw); !errors.Is(err, ErrLocked) {
					t.Fatalf("read-write Open next to %d read-only DBs: %v, want ErrLocked", len(readers)-i, err)
				}
				r.Close()
			}
			d = mustOpen(t, dir, rw)
			mustGet(t, d, "k", "v")
			d.Close()
		})
	}
}

const readOnlyChildEnv = "BLOOMKV_READONLY_CHILD_DIR"

// TestReadOnlyChild is the other process of TestReadOnlyAcrossProcesses:
// it opens the store read-only (or read-write with
// BLOOMKV_READONLY_CHILD_RW set), reads "k", and prints the outcome.
// Run directly it does nothing.
func TestReadOnlyChild(t *testing.T) {
	dir := os.Getenv(readOnlyChildEnv)
	if dir == "" {
		return
	}
	d, err := Open(dir, &Options{ReadOnly: os.Getenv("BLOOMKV_READONLY_CHILD_RW") == ""})
	switch {
	case errors.Is(err, ErrLocked):
		fmt.Println("RESULT locked")
		return
	case err != nil:
		fmt.Println("RESULT error", err)
		return
	}
	defer d.Close()
	v, err := d.Get([]byte("k"), nil)
	fmt.Printf("RESULT ok %s %v\n", v, err)
}

// TestReadOnlyAcrossProcesses: read-only opens in two processes share a
// store; a read-write one in either excludes a read-only one in the other.
func TestReadOnlyAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := filepath.Join(t.TempDir(), "db")
	d := mustOpen(t, dir, nil)
	if err := d.Put([]byte("k"), []byte("v"), nil); err != nil { // left in the log
		t.Fatal(err)
	}
	d.Close()
	child := func(rw bool) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestReadOnlyChild$", "-test.v")
		cmd.Env = append(os.Environ(), readOnlyChildEnv+"="+dir)
		if rw {
			cmd.Env = append(cmd.Env, "BLOOMKV_READONLY_CHILD_RW=1")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if r, ok := strings.CutPrefix(line, "RESULT "); ok {
				return r
			}
		}
		t.Fatalf("child printed no result:\n%s", out)
		return ""
	}

	before := dirFiles(t, vfs.Default, dir)
	r := mustOpen(t, dir, &Options{ReadOnly: true})
	if got := child(false); got != "ok v <nil>" {
		t.Errorf("read-only open in another process next to a read-only one: %s", got)
	}
	if got := child(true); got != "locked" {
		t.Errorf("read-write open in another process next to a read-only one: %s, want locked", got)
	}
	r.Close()
	sameDir(t, before, dirFiles(t, vfs.Default, dir))

	d = mustOpen(t, dir, nil)
	if got := child(false); got != "locked" {
		t.Errorf("read-only open in another process next to a read-write one: %s, want locked", got)
	}
	d.Close()
}

// TestReadOnlyWithoutLockFile: a store without a LOCK file (a copy) opens
// read-only without a lock, and LOCK is not created.
func TestReadOnlyWithoutLockFile(t *testing.T) {
	for _, name := range []string{"os", "mem"} {
		t.Run(name, func(t *testing.T) {
			var fsys vfs.FS = vfs.NewMem()
			dir := "/db"
			if name == "os" {
				fsys, dir = vfs.Default, filepath.Join(t.TempDir(), "db")
			}
			d := mustOpen(t, dir, &Options{FS: fsys})
			d.Put([]byte("k"), []byte("v"), nil)
			d.Close()
			if err := fsys.Remove(lockFileName(dir)); err != nil {
				t.Fatal(err)
			}
			before := dirFiles(t, fsys, dir)
			for range 2 { // and twice at once
				d := mustOpen(t, dir, &Options{FS: fsys, ReadOnly: true})
				defer d.Close()
				mustGet(t, d, "k", "v")
			}
			if _, err := fsys.Stat(lockFileName(dir)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("LOCK after a read-only open: %v, want it still missing", err)
			}
			sameDir(t, before, dirFiles(t, fsys, dir))
		})
	}
}

// TestReadOnlyMissingStore: a read-only open never creates the directory
// or a store in it: ErrDBMissing.
func TestReadOnlyMissingStore(t *testing.T) {
	for _, name := range []string{"os", "mem"} {
		t.Run(name, func(t *testing.T) {
			var fsys vfs.FS = vfs.NewMem()
			root := "/"
			if name == "os" {
				fsys, root = vfs.Default, t.TempDir()
			}
			missing := vfs.Join(root, "missing")
			if _, err := Open(missing, &Options{FS: fsys, ReadOnly: true}); !errors.Is(err, ErrDBMissing) {
				t.Fatalf("read-only Open of a missing directory: %v, want ErrDBMissing", err)
			}
			if _, err := fsys.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("read-only Open created the directory (%v)", err)
			}
			empty := vfs.Join(root, "empty")
			fsys.MkdirAll(empty, 0o755)
			if _, err := Open(empty, &Options{FS: fsys, ReadOnly: true}); !errors.Is(err, ErrDBMissing) {
				t.Fatalf("read-only Open of an empty directory: %v, want ErrDBMissing", err)
			}
			if names, _ := fsys.List(empty); len(names) != 0 {
				t.Fatalf("read-only Open of an empty directory created %v", names)
			}
		})
	}
	if _, err := Open(t.TempDir(), &Options{ReadOnly: true, ErrorIfExists: true}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("ReadOnly with ErrorIfExists: %v, want ErrInvalidOptions", err)
	}
}

// TestReadOnlyParanoidChecks: ParanoidChecks still refuses a damaged table
// and a damaged log record in a read-only open (without changing
// anything), and without it the damaged record is dropped as in a
// read-write open.
func TestReadOnlyParanoidChecks(t *testing.T) {
	st := buildUnflushedStore(t)
	names, _ := st.mem.List("/db")
	var table, log string
	for _, n := range names {
		switch typ, _, _ := parseFileName(n); {
		case typ == fileTypeTable && strings.HasSuffix(n, ".sst") && table == "":
			table = n
		case typ == fileTypeLog && strings.HasSuffix(n, ".log") && log == "":
			if fi, _ := st.mem.Stat(vfs.Join("/db", n)); fi.Size() > 1000 {
				log = n
			}
		}
	}
	for _, tc := range []struct{ file string }{{table}, {log}} {
		mem := st.mem.Clone()
		flipFileByte(t, mem, vfs.Join("/db", tc.file), 200)
		before := dirFiles(t, mem, "/db")
		_, err := Open("/db", &Options{FS: mem, ReadOnly: true, ParanoidChecks: true})
		if !errors.Is(err, ErrCorruption) {
			t.Errorf("paranoid read-only Open with %s damaged: %v, want ErrCorruption", tc.file, err)
		}
		if tc.file == log {
			d := mustOpen(t, "/db", &Options{FS: mem, ReadOnly: true})
			d.Close()
		}
		sameDir(t, before, dirFiles(t, mem, "/db"))
	}
}

// TestOpenLockPermission: a LOCK that cannot be opened for lack of
// permission is reported as a permission error, not as ErrLocked; a
// read-only open then proceeds without a lock. The error is injected
// (FaultFS) so the classification is tested for every user; the chmod
// variant runs only when not root, since chmod does not deny root.
func TestOpenLockPermission(t *testing.T) {
	t.Run("injected", func(t *testing.T) {
		mem := vfs.NewMem()
		mustOpen(t, "/db", &Options{FS: mem}).Close()
		denied := vfs.NewFaultFS(mem, vfs.Fault{Ops: vfs.OpLock | vfs.OpLockShared, Count: -1,
			Err: &os.PathError{Op: "open", Path: "/db/LOCK", Err: fs.ErrPermission}}.Injector())
		_, err := Open("/db", &Options{FS: denied})
		if !errors.Is(err, fs.ErrPermission) || errors.Is(err, ErrLocked) {
			t.Fatalf("Open with LOCK denied: %v, want fs.ErrPermission and not ErrLocked", err)
		}
		var events syncBuffer
		d := mustOpen(t, "/db", &Options{FS: denied, ReadOnly: true, Logger: slog.New(slog.NewTextHandler(&events, nil))})
		d.Close()
		if !strings.Contains(events.String(), "without a lock") {
			t.Errorf("read-only open with LOCK denied logged:\n%s", events.String())
		}
	})
	t.Run("chmod", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("running as root: chmod does not deny root access (the injected case covers the classification)")
		}
		dir := filepath.Join(t.TempDir(), "db")
		d := mustOpen(t, dir, nil)
		d.Put([]byte("k"), []byte("v"), nil)
		d.Close()
		lock := lockFileName(dir)
		if err := os.Chmod(lock, 0); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(lock, 0o644)
		if _, err := Open(dir, nil); !errors.Is(err, fs.ErrPermission) || errors.Is(err, ErrLocked) {
			t.Fatalf("Open with a mode-000 LOCK: %v, want fs.ErrPermission and not ErrLocked", err)
		}
		d = mustOpen(t, dir, &Options{ReadOnly: true})
		mustGet(t, d, "k", "v")
		d.Close()

		// A directory this user may not write, without a LOCK: the LOCK
		// cannot be created.
		os.Chmod(lock, 0o644)
		os.Remove(lock)
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o755)
		if _, err := Open(dir, nil); !errors.Is(err, fs.ErrPermission) || errors.Is(err, ErrLocked) {
			t.Fatalf("Open of a read-only directory: %v, want fs.ErrPermission and not ErrLocked", err)
		}
		d = mustOpen(t, dir, &Options{ReadOnly: true})
		mustGet(t, d, "k", "v")
		d.Close()
		names, _ := vfs.Default.List(dir)
		if slices.Contains(names, "LOCK") {
			t.Fatal("read-only open created LOCK")
		}
	})
}
