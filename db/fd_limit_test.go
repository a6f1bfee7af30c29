//go:build linux

package db

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestManyTablesUnderLowFileLimit opens a store of 400 level-0 tables with
// the process's soft limit on open files lowered to 128: every table used
// to keep its descriptor, so Gets and scans failed with "too many open
// files" (issue 20: 38,979 of 42,858 Gets with 1,300 tables). A mapped
// table now closes its descriptor once mapped: every read must succeed.
// With DisableMmapReads the tables are read with pread, and hold their
// descriptors only while among Options.MaxOpenFiles most recently read
// (by default half the soft limit): every read must succeed too.
func TestManyTablesUnderLowFileLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 400 tables")
	}
	for _, mmap := range []bool{true, false} {
		t.Run(fmt.Sprintf("mmap=%v", mmap), func(t *testing.T) { testManyTablesUnderLowFileLimit(t, mmap) })
	}
}

func testManyTablesUnderLowFileLimit(t *testing.T, mmap bool) {
	const tables = 400
	dir := t.TempDir()
	o := &Options{DisableMmapReads: !mmap, DisableAutomaticCompactions: true, L0StopWritesTrigger: 1 << 20, L0SlowdownWritesTrigger: 1 << 20}
	d := mustOpen(t, dir, o)
	for i := 0; i < tables; i++ {
		// Each table spans the whole key range, so every Get asks them all.
		for _, k := range []int{i, tables + i} {
			if err := d.Put([]byte(fmt.Sprintf("key%06d", k)), []byte(fmt.Sprintf("value%d", k)), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = 128
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("cannot lower the open-file limit: %v", err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })

	d = mustOpen(t, dir, o)
	defer d.Close()
	if n := d.Metrics().Levels[0].Files; n != tables {
		t.Fatalf("%d level-0 tables, want %d", n, tables)
	}
	for k := 0; k < 2*tables; k++ {
		v, err := d.Get([]byte(fmt.Sprintf("key%06d", k)), nil)
		if err != nil || string(v) != fmt.Sprintf("value%d", k) {
			t.Fatalf("Get(key%06d) = %q, %v", k, v, err)
		}
	}
	if _, err := d.Get([]byte("absent"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(absent) = %v", err)
	}
	it := d.NewIterator(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != 2*tables {
		t.Fatalf("the scan saw %d keys (%v), want %d", n, err, 2*tables)
	}
	if held := d.tables.files.held(); held > 64 {
		t.Fatalf("%d descriptors held, over the default bound of 64 (half the limit of 128)", held)
	}
}

// TestFileLimiter reads many files from many goroutines through a limiter
// of 4 descriptors: every read returns the file's bytes, the limiter holds
// at most its bound once the reads are done, and a closed file refuses
// reads.
func TestFileLimiter(t *testing.T) {
	fs := vfs.NewMem()
	const files = 40
	for i := 0; i < files; i++ {
		f, err := fs.Create(fmt.Sprintf("/f%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(fmt.Sprintf("file %02d contents", i)))
		f.Close()
	}
	lim := newFileLimiter(fs, 4)
	lfs := make([]*limitedFile, files)
	for i := range lfs {
		f, err := fs.Open(fmt.Sprintf("/f%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		lfs[i] = lim.adopt(fmt.Sprintf("/f%02d", i), f)
	}
	if h := lim.held(); h != 4 {
		t.Fatalf("%d descriptors held after adopting %d files, want 4", h, files)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			buf := make([]byte, 2)
			for n := 0; n < 2000; n++ {
				i := (g*31 + n*7) % files
				if _, err := lfs[i].ReadAt(buf, 5); err != nil || string(buf) != fmt.Sprintf("%02d", i) {
					errc <- fmt.Errorf("file %d: read %q, %v", i, buf, err)
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
	if h := lim.held(); h > 4 {
		t.Fatalf("%d descriptors held when idle, over the bound of 4", h)
	}
	for _, lf := range lfs {
		if err := lf.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if h := lim.held(); h != 0 {
		t.Fatalf("%d descriptors held after closing every file", h)
	}
	if _, err := lfs[0].ReadAt(make([]byte, 1), 0); !errors.Is(err, errFileClosed) {
		t.Fatalf("a read after Close: %v", err)
	}
}

// TestMaxOpenFilesOption reads a store of 30 tables (on MemFS, which
// cannot map, so every table is read with ReadAt) with MaxOpenFiles 4:
// every key reads back and at most 4 descriptors are held between reads.
func TestMaxOpenFilesOption(t *testing.T) {
	o := &Options{FS: vfs.NewMem(), MaxOpenFiles: 4, DisableAutomaticCompactions: true, DisableBlockCache: true}
	d := mustOpen(t, "/db", o)
	defer d.Close()
	for i := 0; i < 30; i++ {
		if err := d.Put([]byte(fmt.Sprintf("key%03d", i)), []byte(fmt.Sprint(i)), nil); err != nil {
			t.Fatal(err)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round < 3; round++ {
		for i := 0; i < 30; i++ {
			if v, err := d.Get([]byte(fmt.Sprintf("key%03d", i)), nil); err != nil || string(v) != fmt.Sprint(i) {
				t.Fatalf("Get(key%03d) = %q, %v", i, v, err)
			}
			if h := d.tables.files.held(); h > 4 {
				t.Fatalf("%d descriptors held, MaxOpenFiles 4", h)
			}
		}
	}
}
