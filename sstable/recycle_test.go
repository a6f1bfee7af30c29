package sstable

import (
	"bytes"
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/cache"
)

// TestRecycledBlocks runs iterators and Gets on several goroutines against
// a block cache far smaller than the table, so blocks are evicted and their
// buffers recycled while other readers may still hold them. Every entry
// read must match the model: a block recycled too early would show another
// block's bytes (and, under the race detector, a reported race, since
// released buffers are overwritten there).
func TestRecycledBlocks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		raw    bool
		mapped bool
	}{{"snappy", false, false}, {"raw", true, false}, {"snappy-mapped", false, true}, {"raw-mapped", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(11))
			m := randomModel(rng, 4000, 12, 200)
			data, _ := buildTable(t, m, WriterOptions{BlockSize: 1024, DisableCompression: tc.raw})
			o := ReaderOptions{Cache: cache.New(16 * 2048), FileID: 1}
			var r *Reader
			if tc.mapped {
				_, f, mp := mapTable(t, data)
				o.Mapped = mp.Bytes()
				var err error
				if r, err = NewReader(f, int64(len(data)), o); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { mp.Unmap() })
			} else {
				r = openTable(t, data, o)
			}
			defer r.Close()
			n := 2000
			if testing.Short() {
				n = 300
			}
			var wg sync.WaitGroup
			errc := make(chan error, 4)
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					errc <- recycleReader(r, m, rand.New(rand.NewSource(int64(g))), g%2 == 0, n)
				}(g)
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// recycleReader checks n random reads of r against m: forward and backward
// scans of a few entries (iterators), or point lookups.
func recycleReader(r *Reader, m model, rng *rand.Rand, scans bool, n int) error {
	for i := 0; i < n; i++ {
		j := rng.Intn(len(m))
		if !scans {
			ukey := base.UserKey(m[j].key)
			seek := base.MakeInternalKey(ukey, base.MaxSeqNum, base.KindSeek)
			w := m.seekGE(seek)
			v, _, ok, err := r.Get(seek, ukey)
			if err != nil {
				return err
			}
			if !ok || !bytes.Equal(v, m[w].value) {
				return fmt.Errorf("Get(%q) = %q %v, want %q", ukey, v, ok, m[w].value)
			}
			continue
		}
		it := r.NewIterator()
		ok := it.SeekGE(m[j].key)
		step := 1
		if rng.Intn(2) == 0 {
			step = -1
		}
		for w := j; w >= 0 && w < len(m) && w < j+50 && w > j-50; w += step {
			if !ok || !bytes.Equal(it.Key(), m[w].key) || !bytes.Equal(it.Value(), m[w].value) {
				it.Close()
				return fmt.Errorf("scan from %d, at %d: got %q, want %s", j, w, it.Key(), base.FormatInternalKey(m[w].key))
			}
			if step > 0 {
				ok = it.Next()
			} else {
				ok = it.Prev()
			}
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	return nil
}
