package db

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// countingFS counts the reads that reach table files, at the file-system
// seam: the code under test cannot make them look cheaper than they are.
type countingFS struct {
	vfs.FS
	tableReads atomic.Int64
}

func (c *countingFS) Open(name string) (vfs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return &countingFile{File: f, n: &c.tableReads}, nil
}

type countingFile struct {
	vfs.File
	n *atomic.Int64
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.n.Add(1)
	return f.File.ReadAt(p, off)
}

func (f *countingFile) Read(p []byte) (int, error) {
	f.n.Add(1)
	return f.File.Read(p)
}

// tableRange is a table's user-key range, read with the sstable package
// directly from the files, not from the DB.
type tableRange struct{ smallest, largest []byte }

func tableRanges(t *testing.T, fsys vfs.FS, dir string) []tableRange {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []tableRange
	for _, name := range names {
		if !strings.HasSuffix(name, ".sst") {
			continue
		}
		f, err := fsys.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		size, _ := f.Size()
		r, err := sstable.NewReader(f, size, sstable.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		it := r.NewIterator()
		var tr tableRange
		if it.First() {
			tr.smallest = append([]byte(nil), base.UserKey(it.Key())...)
		}
		if it.Last() {
			tr.largest = append([]byte(nil), base.UserKey(it.Key())...)
		}
		it.Close()
		r.Close()
		f.Close()
		out = append(out, tr)
	}
	return out
}

// TestFilterSavesIO writes 200,000 keys (the even numbers) into several
// tables and looks up 100,000 absent keys that fall inside the tables'
// ranges (odd numbers). With the Bloom filter, data blocks read from files
// must be at most 2% of (lookups × tables consulted); with no filter, at
// least one read per table consulted.
func TestFilterSavesIO(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 200,000 keys")
	}
	for _, tc := range []struct {
		name   string
		policy filter.Policy
		check  func(reads, consulted int64) error
	}{
		{"bloom10", filter.NewBloomPolicy(10), func(reads, consulted int64) error {
			if float64(reads) > 0.02*float64(consulted) {
				return fmt.Errorf("%d data block reads for %d table consultations (%.3f%%), want <= 2%%", reads, consulted, 100*float64(reads)/float64(consulted))
			}
			return nil
		}},
		{"none", filter.None, func(reads, consulted int64) error {
			if reads < consulted {
				return fmt.Errorf("%d data block reads for %d table consultations, want at least one each", reads, consulted)
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfs := &countingFS{FS: vfs.NewMem()}
			// Compactions off: the point is many overlapping tables.
			opts := &Options{FS: cfs, FilterPolicy: tc.policy, DisableBlockCache: true, WriteBufferSize: 64 << 20, DisableAutomaticCompactions: true}
			d := mustOpen(t, "/db", opts)
			rng := rand.New(rand.NewSource(1))
			const n = 200000
			perm := rng.Perm(n)
			value := bytes.Repeat([]byte("v"), 100)
			for i, p := range perm {
				if err := d.Put([]byte(fmt.Sprintf("%016d", 2*p)), value, nil); err != nil {
					t.Fatal(err)
				}
				if (i+1)%(n/5) == 0 {
					if err := d.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Reopen: Open loads every table's filter and index, so what is
			// counted below is data block reads only.
			d.Close()
			d = mustOpen(t, "/db", opts)
			defer d.Close()
			ranges := tableRanges(t, cfs.FS, "/db")
			if len(ranges) < 5 {
				t.Fatalf("want >= 5 tables, have %d", len(ranges))
			}
			before := cfs.tableReads.Load()
			var consulted int64
			for i := 0; i < 100000; i++ {
				k := []byte(fmt.Sprintf("%016d", 2*rng.Intn(n-1)+1))
				for _, r := range ranges {
					if bytes.Compare(k, r.smallest) >= 0 && bytes.Compare(k, r.largest) <= 0 {
						consulted++
					}
				}
				if _, err := d.Get(k, nil); err != ErrNotFound {
					t.Fatalf("Get(%s): %v", k, err)
				}
			}
			reads := cfs.tableReads.Load() - before
			t.Logf("%s: %d lookups, %d table consultations, %d data block reads (%.3f%%)", tc.name, 100000, consulted, reads, 100*float64(reads)/float64(consulted))
			if consulted < 400000 {
				t.Fatalf("only %d consultations: keys should fall inside most tables", consulted)
			}
			if err := tc.check(reads, consulted); err != nil {
				t.Fatal(err)
			}
			m := d.Metrics()
			if tc.policy != filter.None && (m.Filter.Checks == 0 || m.Filter.Useful == 0) {
				t.Fatalf("metrics show no filter work: %+v", m.Filter)
			}
		})
	}
}
