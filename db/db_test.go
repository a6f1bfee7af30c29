package db

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

func mustOpen(t testing.TB, dir string, o *Options) *DB {
	t.Helper()
	d, err := Open(dir, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return d
}

func mustGet(t testing.TB, d *DB, key string, want string) {
	t.Helper()
	v, err := d.Get([]byte(key), nil)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if string(v) != want {
		t.Fatalf("Get(%q) = %q, want %q", key, v, want)
	}
}

func mustMiss(t testing.TB, d *DB, key string) {
	t.Helper()
	if v, err := d.Get([]byte(key), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, v, err)
	}
}

func TestBasicOperations(t *testing.T) {
	for _, name := range []string{"os", "mem"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			o := &Options{}
			if name == "mem" {
				o.FS, dir = vfs.NewMem(), "/db"
			}
			d := mustOpen(t, dir, o)
			mustMiss(t, d, "a")
			if err := d.Put([]byte("a"), []byte("1"), nil); err != nil {
				t.Fatal(err)
			}
			mustGet(t, d, "a", "1")
			if err := d.Put([]byte("a"), []byte("2"), &WriteOptions{Sync: true}); err != nil {
				t.Fatal(err)
			}
			mustGet(t, d, "a", "2")
			// Empty keys, zero bytes, empty values.
			for _, k := range []string{"", "\x00", "a\x00b", "\xff\xff"} {
				if err := d.Put([]byte(k), []byte("v"+k), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Put([]byte("empty"), nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Delete([]byte("a"), nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Delete([]byte("never"), nil); err != nil {
				t.Fatal(err)
			}
			check := func() {
				mustMiss(t, d, "a")
				for _, k := range []string{"", "\x00", "a\x00b", "\xff\xff"} {
					mustGet(t, d, k, "v"+k)
				}
				v, err := d.Get([]byte("empty"), nil)
				if err != nil || len(v) != 0 || v == nil {
					t.Fatalf("empty value: %q %v", v, err)
				}
				mustMiss(t, d, "a\x00")
			}
			check()
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			if m := d.Metrics(); m.Levels[0].Files != 1 || m.FilterBytes == 0 {
				t.Fatalf("after flush: %d L0 files, %d filter bytes", m.Levels[0].Files, m.FilterBytes)
			}
			check()
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = mustOpen(t, dir, o)
			check()
			// The returned value is the caller's.
			v, _ := d.Get([]byte(""), nil)
			v[0] = 'X'
			mustGet(t, d, "", "v")
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBatchAtomicAndOrdered(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer d.Close()
	var b Batch
	b.Put([]byte("k"), []byte("1"))
	b.Put([]byte("k"), []byte("2"))
	b.Put([]byte("j"), []byte("x"))
	b.Delete([]byte("j"))
	if b.Count() != 4 {
		t.Fatalf("Count = %d", b.Count())
	}
	if err := d.Write(&b, nil); err != nil {
		t.Fatal(err)
	}
	mustGet(t, d, "k", "2")
	mustMiss(t, d, "j")
	b.Reset()
	if b.Count() != 0 {
		t.Fatal("Reset kept records")
	}
	if err := d.Write(&b, nil); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
	if err := d.Write(nil, nil); err != nil {
		t.Fatalf("nil batch: %v", err)
	}
}

func TestLargeValues(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer d.Close()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	big[12345] = 'Z'
	if err := d.Put([]byte("big"), big, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Put([]byte("after"), []byte("small"), nil); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		v, err := d.Get([]byte("big"), nil)
		if err != nil || !bytes.Equal(v, big) {
			t.Fatalf("round %d: 16 MiB value differs (len %d, err %v)", round, len(v), err)
		}
		mustGet(t, d, "after", "small")
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	t.Run("second open is locked", func(t *testing.T) {
		dir := t.TempDir()
		d := mustOpen(t, dir, nil)
		defer d.Close()
		_, err := Open(dir, nil)
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("second Open: %v, want ErrLocked", err)
		}
	})
	t.Run("path is a file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "file")
		os.WriteFile(p, []byte("x"), 0o644)
		_, err := Open(p, nil)
		if err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("Open(file): %v", err)
		}
	})
	t.Run("unreadable directory", func(t *testing.T) {
		mem := vfs.NewMem()
		mem.MkdirAll("/db", 0o755)
		_, err := Open("/db", &Options{FS: listFailFS{mem}})
		if !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("Open(unreadable): %v", err)
		}
		if names, _ := mem.List("/db"); len(names) != 0 {
			t.Fatalf("unreadable dir changed: %v", names)
		}
		if os.Geteuid() != 0 { // root reads any directory
			dir := filepath.Join(t.TempDir(), "db")
			os.Mkdir(dir, 0)
			defer os.Chmod(dir, 0o755)
			if _, err := Open(dir, nil); err == nil {
				t.Fatal("Open of a mode-000 directory succeeded")
			}
		}
	})
	t.Run("invalid options", func(t *testing.T) {
		for _, o := range []*Options{
			{WriteBufferSize: -1}, {BlockSize: -1}, {BlockCacheSize: -5}, {BlockRestartInterval: -1}, {MaxOpenFiles: -1}, {MultiGetParallelism: -1},
			{ErrorIfExists: true, ErrorIfMissing: true}, {FilterPolicy: filter.NewBloomPolicy(-1)},
		} {
			if _, err := Open(t.TempDir(), o); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("Open(%+v): %v, want ErrInvalidOptions", o, err)
			}
		}
	})
	t.Run("missing and existing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "db")
		if _, err := Open(dir, &Options{ErrorIfMissing: true}); !errors.Is(err, ErrDBMissing) {
			t.Fatalf("ErrorIfMissing: %v", err)
		}
		mustOpen(t, dir, nil).Close()
		if _, err := Open(dir, &Options{ErrorIfExists: true}); !errors.Is(err, ErrDBExists) {
			t.Fatalf("ErrorIfExists: %v", err)
		}
	})
}

// listFailFS fails directory listings with a permission error.
type listFailFS struct{ vfs.FS }

func (listFailFS) List(dir string) ([]string, error) {
	return nil, &os.PathError{Op: "open", Path: dir, Err: fs.ErrPermission}
}

// dirState maps every file of a directory to its contents.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

func TestOpenCorruptCurrentOrManifestChangesNothing(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"CURRENT names nothing", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("garbage"), 0o644)
		}},
		{"CURRENT names a missing MANIFEST", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("MANIFEST-999999\n"), 0o644)
		}},
		{"CURRENT is empty", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "CURRENT"), nil, 0o644)
		}},
		{"MANIFEST byte flipped", func(t *testing.T, dir string) {
			cur, _ := os.ReadFile(filepath.Join(dir, "CURRENT"))
			p := filepath.Join(dir, strings.TrimSpace(string(cur)))
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 0x80
			os.WriteFile(p, b, 0o644)
		}},
		{"MANIFEST truncated to nothing", func(t *testing.T, dir string) {
			cur, _ := os.ReadFile(filepath.Join(dir, "CURRENT"))
			os.WriteFile(filepath.Join(dir, strings.TrimSpace(string(cur))), nil, 0o644)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := mustOpen(t, dir, nil)
			for i := 0; i < 100; i++ {
				d.Put([]byte(fmt.Sprint(i)), []byte("v"), nil)
			}
			d.Flush()
			d.Close()
			tc.damage(t, dir)
			before := dirState(t, dir)
			_, err := Open(dir, nil)
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("Open: %v, want ErrCorruption", err)
			}
			after := dirState(t, dir)
			if len(before) != len(after) {
				t.Fatalf("Open changed the directory: %d files before, %d after", len(before), len(after))
			}
			for k, v := range before {
				if after[k] != v {
					t.Fatalf("Open changed %s", k)
				}
			}
		})
	}
}

func TestCallsAfterClose(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	d.Put([]byte("k"), []byte("v"), nil)
	it := d.NewIterator(nil)
	snap := d.NewSnapshot()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checks := map[string]error{
		"Close":  d.Close(),
		"Put":    d.Put([]byte("k"), []byte("v"), nil),
		"Delete": d.Delete([]byte("k"), nil),
		"Flush":  d.Flush(),
	}
	var b Batch
	b.Put([]byte("x"), nil)
	checks["Write"] = d.Write(&b, nil)
	_, checks["Get"] = d.Get([]byte("k"), nil)
	_, checks["Get(snapshot)"] = d.Get([]byte("k"), &ReadOptions{Snapshot: snap})
	it2 := d.NewIterator(nil)
	it2.First()
	checks["NewIterator"] = it2.Error()
	if it.First() {
		t.Fatal("iterator made before Close still iterates")
	}
	checks["Iterator"] = it.Error()
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	snap.Release()
	it.Close()
	it2.Close()
}

func TestSnapshotsAndIteratorConsistency(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), WriteBufferSize: 4 << 10})
	defer d.Close()
	for i := 0; i < 500; i++ {
		d.Put([]byte(fmt.Sprintf("k%04d", i)), []byte("old"), nil)
	}
	snap := d.NewSnapshot()
	defer snap.Release()
	it := d.NewIterator(nil)
	defer it.Close()
	for i := 0; i < 500; i++ {
		if i%2 == 0 {
			d.Delete([]byte(fmt.Sprintf("k%04d", i)), nil)
		} else {
			d.Put([]byte(fmt.Sprintf("k%04d", i)), []byte("new"), nil)
		}
	}
	d.Put([]byte("k9999"), []byte("new"), nil)
	d.Flush()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if string(it.Value()) != "old" {
			t.Fatalf("iterator sees a later write at %q", it.Key())
		}
		n++
	}
	if err := it.Error(); err != nil || n != 500 {
		t.Fatalf("iterator saw %d keys, err %v", n, err)
	}
	for i := 0; i < 500; i++ {
		v, err := d.Get([]byte(fmt.Sprintf("k%04d", i)), &ReadOptions{Snapshot: snap})
		if err != nil || string(v) != "old" {
			t.Fatalf("snapshot Get k%04d = %q %v", i, v, err)
		}
	}
	mustMiss(t, d, "k0000")
	mustGet(t, d, "k0001", "new")
}

func TestConcurrentReadersAndWriters(t *testing.T) {
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), WriteBufferSize: 32 << 10})
	defer d.Close()
	const writers, perWriter = 4, 1000
	var wg sync.WaitGroup
	errc := make(chan error, 100)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				k := []byte(fmt.Sprintf("w%d-%05d", w, i))
				if err := d.Put(k, k, &WriteOptions{Sync: i%100 == 0}); err != nil {
					errc <- err
					return
				}
				// A write is visible to its writer as soon as Put returns.
				if v, err := d.Get(k, nil); err != nil || !bytes.Equal(v, k) {
					errc <- fmt.Errorf("read-your-write %s: %q %v", k, v, err)
					return
				}
			}
		}(w)
	}
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	for r := 0; r < 2; r++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				it := d.NewIterator(nil)
				var prev []byte
				for ok := it.First(); ok; ok = it.Next() {
					if prev != nil && bytes.Compare(prev, it.Key()) >= 0 {
						errc <- fmt.Errorf("iterator out of order: %q then %q", prev, it.Key())
					}
					if !bytes.Equal(it.Key(), it.Value()) {
						errc <- fmt.Errorf("torn entry %q=%q", it.Key(), it.Value())
					}
					prev = append(prev[:0], it.Key()...)
				}
				if err := it.Close(); err != nil {
					errc <- err
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	for w := 0; w < writers; w++ {
		for i := 0; i < perWriter; i += 37 {
			k := fmt.Sprintf("w%d-%05d", w, i)
			mustGet(t, d, k, k)
		}
	}
}
