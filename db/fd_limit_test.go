//go:build linux

package db

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
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

// TestFiveThousandTablesUnderFileLimit256 is issue 20's case: a store of
// 5,000 tables (written directly, table by table, with a MANIFEST that
// spreads them over levels 1 to 3) opened with the soft limit on open
// files at 256. Every Get, a scan in both directions and MultiGet succeed,
// with tables mapped and with them read by pread, and the DB holds no more
// descriptors than Options.MaxOpenFiles' default allows.
func TestFiveThousandTablesUnderFileLimit256(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 5,000 tables")
	}
	const tables, perTable = 5000, 3
	dir := t.TempDir()
	// Levels 1..3 each hold a third of the key space's tables, disjoint
	// within a level; the levels overlap one another, so a Get may ask a
	// table of each.
	key := func(i int) string { return fmt.Sprintf("key%08d", i) }
	edit := &manifest.VersionEdit{Comparer: comparerName, HasLogNumber: true,
		NextFileNumber: tables + 10, HasNextFileNumber: true, LastSequence: tables*perTable + 1, HasLastSequence: true}
	want := map[string]string{}
	seq := uint64(1)
	for t0 := 0; t0 < tables; t0++ {
		level := 1 + t0%3
		slot := t0 / 3 // position of the table in its level
		num := uint64(t0 + 1)
		f, err := os.Create(tableFileName(dir, num))
		if err != nil {
			t.Fatal(err)
		}
		w := sstable.NewWriter(f, sstable.WriterOptions{FilterPolicy: filter.NewBloomPolicy(10)})
		m := &manifest.FileMetadata{FileNum: num, SmallestSeq: base.MaxSeqNum}
		for j := 0; j < perTable; j++ {
			// Level l's table at slot s holds keys s*9 + 3*(l-1) + j.
			k := key(slot*9 + 3*(level-1) + j)
			v := fmt.Sprintf("v%d-%d", num, j)
			ik := base.MakeInternalKey([]byte(k), seq, base.KindSet)
			if err := w.Add(ik, []byte(v)); err != nil {
				t.Fatal(err)
			}
			widenBounds(m, ik, ik, seq)
			want[k] = v
			seq++
		}
		if _, err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		m.Size = uint64(fi.Size())
		f.Close()
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: level, Meta: m})
	}
	mf, err := os.Create(manifestFileName(dir, tables+5))
	if err != nil {
		t.Fatal(err)
	}
	if err := wal.NewWriter(mf).AddRecord(edit.Encode(nil)); err != nil {
		t.Fatal(err)
	}
	mf.Close()
	if err := os.WriteFile(currentFileName(dir), []byte(fmt.Sprintf("MANIFEST-%06d\n", tables+5)), 0o644); err != nil {
		t.Fatal(err)
	}

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = 256
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("cannot lower the open-file limit: %v", err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })

	for _, mmap := range []bool{true, false} {
		t.Run(fmt.Sprintf("mmap=%v", mmap), func(t *testing.T) {
			d := mustOpen(t, dir, &Options{DisableMmapReads: !mmap, DisableAutomaticCompactions: true})
			defer d.Close()
			m := d.Metrics()
			if got := m.Levels[1].Files + m.Levels[2].Files + m.Levels[3].Files; got != tables {
				t.Fatalf("%d tables in levels 1-3, want %d", got, tables)
			}
			for k, v := range want {
				got, err := d.Get([]byte(k), nil)
				if err != nil || string(got) != v {
					t.Fatalf("Get(%s) = %q, %v; want %q", k, got, err, v)
				}
			}
			if _, err := d.Get([]byte("key99999999"), nil); !errors.Is(err, ErrNotFound) {
				t.Fatalf("absent key: %v", err)
			}
			checkFormatModel(t, d, want)
			checkReverse(t, d, want)
			keys := make([][]byte, 0, 256)
			for i := 0; i < 256; i++ {
				keys = append(keys, []byte(key(i*53)))
			}
			vals, errs := d.MultiGet(keys, nil)
			for i, k := range keys {
				if errs[i] != nil || string(vals[i]) != want[string(k)] {
					t.Fatalf("MultiGet %s = %q, %v", k, vals[i], errs[i])
				}
			}
			if held := d.tables.files.held(); held > 128 {
				t.Fatalf("%d descriptors held, over the default bound of 128 (half the limit of 256)", held)
			}
		})
	}
}
