package sstable

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/bloomkv/bloomkv/internal/cache"
	"github.com/bloomkv/bloomkv/vfs"
)

// mapTable writes data to a file and maps it the way the db does.
func mapTable(t *testing.T, data []byte) (path string, f vfs.File, m *vfs.Mapping) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "000001.sst")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	mf, ok := f.(vfs.Mapper)
	if !ok {
		t.Skip("this platform's files cannot be mapped")
	}
	if m, err = mf.MapReadOnly(int64(len(data))); err != nil {
		t.Skipf("mmap: %v", err)
	}
	return path, f, m
}

// TestMappedReader reads compressed and raw tables through a memory map and
// checks every entry against the model, with and without a block cache;
// blocks cached from the mapping stay correct after it is unmapped.
func TestMappedReader(t *testing.T) {
	for _, raw := range []bool{false, true} {
		rng := rand.New(rand.NewSource(7))
		m := randomModel(rng, 3000, 12, 300)
		data, _ := buildTable(t, m, WriterOptions{BlockSize: 512, DisableCompression: raw})
		_, f, mp := mapTable(t, data)
		c := cache.New(1 << 30)
		var st ReadStats
		r, err := NewReader(f, int64(len(data)), ReaderOptions{Mapped: mp.Bytes(), Cache: c, FileID: 1, Stats: &st})
		if err != nil {
			t.Fatal(err)
		}
		checkTable(t, r, m, rng, 2000)
		if st.DataBlocksRead.Load() == 0 {
			t.Fatalf("raw=%v: no data block read counted", raw)
		}
		// Every block is now cached. Unmap, and read them all again
		// from the cache: none may alias the mapping.
		r.Close()
		if err := mp.Unmap(); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		r2, err := NewReader(bytes.NewReader(data), int64(len(data)), ReaderOptions{Cache: c, FileID: 1})
		if err != nil {
			t.Fatal(err)
		}
		before := st.DataBlocksRead.Load()
		checkTable(t, r2, m, rng, 2000)
		if st.DataBlocksRead.Load() != before {
			t.Fatal("the second reader read blocks it should have found cached")
		}
	}
}

// TestMappedTruncated truncates a mapped table under its reader: reading a
// block past the new end is a memory fault, which must come back as an
// error of the read, never a crash or a wrong value.
func TestMappedTruncated(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	m := randomModel(rng, 3000, 12, 300)
	data, _ := buildTable(t, m, WriterOptions{BlockSize: 512})
	path, f, mp := mapTable(t, data)
	defer mp.Unmap()
	r, err := NewReader(f, int64(len(data)), ReaderOptions{Mapped: mp.Bytes()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	it := r.NewIterator()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Key(), m[n].key) || !bytes.Equal(it.Value(), m[n].value) {
			t.Fatalf("entry %d: wrong entry from a truncated table", n)
		}
		n++
	}
	if it.Error() == nil {
		t.Fatalf("scan of a truncated mapped table: %d entries and no error", n)
	}
	t.Logf("scan stopped after %d entries: %v", n, it.Error())
}
