package db

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
)

// TestMetricsReadsAndWriteAmp checks that user reads and compaction reads
// are counted apart, and that the write amplification is the store's file
// bytes over the user's key and value bytes.
func TestMetricsReadsAndWriteAmp(t *testing.T) {
	for _, mmap := range []bool{false, true} {
		t.Run(fmt.Sprintf("mmap=%v", mmap), func(t *testing.T) {
			o := &Options{
				WriteBufferSize: 32 << 10, BlockSize: 512, TargetFileSize: 16 << 10,
				LBaseMaxBytes: 64 << 10, DisableMmapReads: !mmap, DisableBlockCache: true,
			}
			d := mustOpen(t, t.TempDir(), o)
			defer d.Close()

			var user int64
			val := strings.Repeat("v", 100)
			for round := 0; round < 3; round++ {
				for i := 0; i < 2000; i++ {
					k := fmt.Sprintf("key%06d", i)
					if err := d.Put([]byte(k), []byte(val), nil); err != nil {
						t.Fatal(err)
					}
					user += int64(len(k) + len(val))
				}
			}
			b := &Batch{}
			for i := 0; i < 100; i++ {
				k := fmt.Sprintf("key%06d", i)
				b.Delete([]byte(k))
				user += int64(len(k))
			}
			if err := d.Write(b, nil); err != nil {
				t.Fatal(err)
			}
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			m := d.Metrics()
			if m.Compactions == 0 || m.CompactionBlocksRead == 0 || m.CompactionBlockBytesRead == 0 {
				t.Fatalf("after compactions: %d compactions, %d blocks (%d bytes) read by them", m.Compactions, m.CompactionBlocksRead, m.CompactionBlockBytesRead)
			}
			if m.DataBlocksRead != 0 || m.DataBlockBytesRead != 0 {
				t.Fatalf("no user read yet, but DataBlocksRead = %d (%d bytes)", m.DataBlocksRead, m.DataBlockBytesRead)
			}
			if m.UserBytesWritten != user {
				t.Fatalf("UserBytesWritten = %d, want %d", m.UserBytesWritten, user)
			}
			want := float64(m.WALBytesWritten+m.FlushBytesWritten+m.CompactionBytesWritten) / float64(user)
			if got := m.WriteAmplification(); math.Abs(got-want) > 1e-9 || got < 1 {
				t.Fatalf("WriteAmplification = %v, want %v (>= 1: the WAL alone logs every user byte)", got, want)
			}

			compactionReads := m.CompactionBlocksRead
			for i := 100; i < 200; i++ {
				mustGet(t, d, fmt.Sprintf("key%06d", i), val)
			}
			it := d.NewIterator(nil)
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if err := it.Close(); err != nil || n != 1900 {
				t.Fatalf("scan: %d keys, %v", n, err)
			}
			m = d.Metrics()
			if m.DataBlocksRead < 100 || m.DataBlockBytesRead == 0 {
				t.Fatalf("after 100 gets and a scan without a cache: %d data blocks read", m.DataBlocksRead)
			}
			if m.CompactionBlocksRead != compactionReads {
				t.Fatalf("reads changed the compaction counter: %d, was %d", m.CompactionBlocksRead, compactionReads)
			}
			s := m.String()
			for _, w := range []string{"by gets and iterators", "by compactions", "write amp", "user "} {
				if !strings.Contains(s, w) {
					t.Errorf("Metrics.String lacks %q:\n%s", w, s)
				}
			}
		})
	}
}

// TestMetricsStringOneUnit checks that the level table's byte columns share
// one unit, and that tables open beyond the tree's are explained.
func TestMetricsStringOneUnit(t *testing.T) {
	m := &Metrics{TablesOpen: 5}
	m.Levels[0] = LevelMetrics{Files: 1, Bytes: 3 << 20, CompactionBytesIn: 20 << 30, CompactionBytesOut: 900}
	m.Levels[1] = LevelMetrics{Files: 2, Bytes: 500}
	s := m.String()
	header := strings.SplitN(s, "\n", 2)[0]
	if strings.Count(header, "(GiB)") != 3 {
		t.Errorf("header does not give every byte column in GiB: %q", header)
	}
	if !strings.Contains(s, "5 tables open (3 in the tree, 2 no longer in it") {
		t.Errorf("tables open not explained:\n%s", s)
	}
	m = &Metrics{TablesOpen: 1}
	m.Levels[0] = LevelMetrics{Files: 1, Bytes: 3 << 10}
	if s := m.String(); !strings.Contains(strings.SplitN(s, "\n", 2)[0], "size(KiB)") || !strings.Contains(s, "1 tables open,") {
		t.Errorf("small store:\n%s", s)
	}
}

// TestMetricsBlockKeyIndexSkips: a data block an absent key's lookup
// reads into the cache gets a key index, and a later absent key's lookup
// of it (a filter's false positive, or a table without a filter) is
// answered by the index, and counted: at least once a lookup,
// at most twice (a lookup that starts in the block before the key's, past
// its last key, goes on to the next block). Lookups of present keys are
// not. Through Get and MultiGet alike.
func TestMetricsBlockKeyIndexSkips(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(fmt.Sprintf("multiget=%v", multi), func(t *testing.T) {
			// No filter: every absent key inside a table's range is
			// looked up, so the counts are large and exact to reason on.
			d := mustOpen(t, t.TempDir(), &Options{WriteBufferSize: 64 << 10, BlockSize: 1024, FilterPolicy: filter.None})
			defer d.Close()
			val := strings.Repeat("v", 60)
			for i := 0; i < 4000; i++ {
				if err := d.Put([]byte(fmt.Sprintf("%016d", 2*i)), []byte(val), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			get := func(keys []string) {
				t.Helper()
				if multi {
					bs := make([][]byte, len(keys))
					for i, k := range keys {
						bs[i] = []byte(k)
					}
					d.MultiGet(bs, nil)
					return
				}
				for _, k := range keys {
					d.Get([]byte(k), nil)
				}
			}
			var present, absent []string
			for i := 0; i < 4000; i += 3 {
				present = append(present, fmt.Sprintf("%016d", 2*i))
				absent = append(absent, fmt.Sprintf("%016d", 2*i+1))
			}
			// The absent keys' lookups load the blocks, with their
			// indexes (a block read for a key it holds gets none).
			get(absent)
			m0 := d.Metrics()
			get(present)
			m1 := d.Metrics()
			if n := m1.BlockKeyIndexSkips - m0.BlockKeyIndexSkips; n != 0 {
				t.Fatalf("%d present keys: %d lookups answered by key indexes, want 0", len(present), n)
			}
			get(absent)
			m2 := d.Metrics()
			// The last absent key is past the store's last key: no table
			// is looked up for it.
			looked := int64(len(absent) - 1)
			n := m2.BlockKeyIndexSkips - m1.BlockKeyIndexSkips
			if n < looked || n > 2*looked {
				t.Fatalf("%d absent keys looked up: %d lookups answered by key indexes, want %d to %d", looked, n, looked, 2*looked)
			}
			if !strings.Contains(m2.String(), fmt.Sprintf("%d block searches skipped by key indexes", m2.BlockKeyIndexSkips)) {
				t.Fatalf("Metrics.String lacks the key index count:\n%s", m2.String())
			}
		})
	}
}
