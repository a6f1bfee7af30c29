package sstable

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/bloomkv/bloomkv/internal/cache"
)

// TestCompactionIterator scans tables (compressed and raw, read with
// ReadAt and through a mapping) with NewCompactionIterator: it must yield
// exactly the model's entries, read every data block once, and leave the
// block cache untouched.
func TestCompactionIterator(t *testing.T) {
	for _, raw := range []bool{false, true} {
		for _, mapped := range []bool{false, true} {
			rng := rand.New(rand.NewSource(9))
			m := randomModel(rng, 4000, 12, 400)
			data, props := buildTable(t, m, WriterOptions{BlockSize: 512, DisableCompression: raw})
			c := cache.New(1 << 30)
			var st ReadStats
			o := ReaderOptions{Cache: c, FileID: 3, Stats: &st}
			var f interface {
				ReadAt([]byte, int64) (int, error)
			} = bytes.NewReader(data)
			if mapped {
				_, vf, mp := mapTable(t, data)
				defer mp.Unmap()
				f, o.Mapped = vf, mp.Bytes()
			}
			r, err := NewReader(f, int64(len(data)), o)
			if err != nil {
				t.Fatal(err)
			}
			it := r.NewCompactionIterator()
			i := 0
			for ok := it.First(); ok; ok = it.Next() {
				if i >= len(m) || !bytes.Equal(it.Key(), m[i].key) || !bytes.Equal(it.Value(), m[i].value) {
					t.Fatalf("raw=%v mapped=%v: entry %d differs from the model", raw, mapped, i)
				}
				i++
			}
			if err := it.Close(); err != nil || i != len(m) {
				t.Fatalf("raw=%v mapped=%v: %d of %d entries, err %v", raw, mapped, i, len(m), err)
			}
			if got := st.CompactionBlocksRead.Load(); got != int64(props.NumDataBlocks) {
				t.Errorf("raw=%v mapped=%v: read %d data blocks, the table has %d", raw, mapped, got, props.NumDataBlocks)
			}
			if got := st.DataBlocksRead.Load(); got != 0 {
				t.Errorf("raw=%v mapped=%v: a one-pass read counted %d blocks as user reads", raw, mapped, got)
			}
			if h, miss := st.CacheHits.Load(), st.CacheMisses.Load(); h != 0 || miss != 0 || c.Size() != 0 {
				t.Errorf("raw=%v mapped=%v: the block cache was used: %d hits, %d misses, %d bytes", raw, mapped, h, miss, c.Size())
			}
		}
	}
}
