package sstable

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// checkSeekIndex compares Reader.seekIndex with the index block's own
// SeekGE for seek: both must stop at the same entry (or both run off the
// end), with the same error.
func checkSeekIndex(t testing.TB, r *Reader, seek []byte) {
	t.Helper()
	var a, b blockIter
	if a.init(false, r.index) != nil || b.init(false, r.index) != nil {
		return
	}
	okA := r.seekIndex(&a, seek, base.UserKey(seek))
	okB := b.SeekGE(seek)
	if okA != okB || okA && a.offset != b.offset || (a.Error() == nil) != (b.Error() == nil) {
		t.Fatalf("seekIndex(%s) = %v at %d (err %v), SeekGE = %v at %d (err %v)",
			base.FormatInternalKey(seek), okA, a.offset, a.Error(), okB, b.offset, b.Error())
	}
	if okA && !bytes.Equal(a.Key(), b.Key()) {
		t.Fatalf("seekIndex(%s) key %q, SeekGE key %q", base.FormatInternalKey(seek), a.Key(), b.Key())
	}
}

// indexKeyFamilies draw user keys that reach every path of seekIndex:
// decimal keys (a prefix of 8 bytes or less), keys sharing more than 8
// bytes and differing past the window (long runs of equal windows), short
// keys (zero-padded windows), and the small alphabet of randomUserKey
// (empty keys, zero and 0xff bytes: separators LevelDB shortens).
var indexKeyFamilies = map[string]func(rng *rand.Rand) []byte{
	"decimal": func(rng *rand.Rand) []byte { return []byte(fmt.Sprintf("%016d", rng.Intn(200000))) },
	"long-prefix": func(rng *rand.Rand) []byte {
		return []byte(fmt.Sprintf("tenant:%012d:aaaaaaaa%06d", rng.Intn(3), rng.Intn(5000)))
	},
	"short":    func(rng *rand.Rand) []byte { return []byte(fmt.Sprintf("%d", rng.Intn(3000))) },
	"alphabet": func(rng *rand.Rand) []byte { return randomUserKey(rng, 12) },
	"all-ones-window": func(rng *rand.Rand) []byte {
		// Windows of all 0xff bytes, the largest, which seekIndex's
		// search for equal windows must still bound.
		k := []byte(fmt.Sprintf("%04d", rng.Intn(3000)))
		if rng.Intn(2) == 0 {
			k = append(bytes.Repeat([]byte{0xff}, 8), k...)
		}
		return k
	},
}

// TestSeekIndexAgainstBlock checks that the index windows find the entry
// the block's binary search finds, for tables of every key family with
// small blocks (hundreds of index entries) and several versions of some
// keys (separators with equal user keys), probing every key at several
// sequence numbers, absent keys, their prefixes and extensions.
func TestSeekIndexAgainstBlock(t *testing.T) {
	for name, draw := range indexKeyFamilies {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(len(name))))
			seen := map[string]bool{}
			var m model
			for len(m) < 3000 {
				u := draw(rng)
				for v := rng.Intn(3); v >= 0; v-- {
					ik := base.MakeInternalKey(u, uint64(rng.Intn(100)), base.KindSet)
					if !seen[string(ik)] {
						seen[string(ik)] = true
						m = append(m, kv{ik, randomValue(rng, 20)})
					}
				}
			}
			sortModel(m)
			for _, o := range []WriterOptions{{BlockSize: 64}, {BlockSize: 512}, {BlockSize: 128, Format: FormatLevelDB}} {
				bs := o.BlockSize
				data, _ := buildTable(t, m, o)
				r := openTable(t, data, ReaderOptions{})
				if r.iwin.w == nil {
					t.Fatalf("block size %d, format %v: no index windows", bs, o.Format)
				}
				// The windows must tell the entries apart, not only give
				// the right answer: equal windows fall back to the block's
				// search. The decimal and short keys differ within 8 bytes
				// of their shared prefix (long-prefix's differ past the
				// window by design, and the alphabet's repeat); some equal ones are
				// versions of one key that span blocks.
				distinct := map[uint64]bool{}
				for _, w := range r.iwin.w {
					distinct[w] = true
				}
				if (name == "decimal" || name == "short") && 4*len(distinct) < 3*len(r.iwin.w) {
					t.Fatalf("block size %d, format %v: %d distinct windows of %d (prefix %q)", bs, o.Format, len(distinct), len(r.iwin.w), r.iwin.prefix)
				}
				probes := 0
				for _, e := range m {
					u := base.UserKey(e.key)
					for _, s := range [][]byte{
						base.MakeSeekKey(u, base.MaxSeqNum), base.MakeSeekKey(u, 50), base.MakeSeekKey(u, 0),
						base.MakeSeekKey(append(bytes.Clone(u), 0), 7), base.MakeSeekKey(u[:len(u)/2], 7),
						base.MakeSeekKey(u[:max(0, len(u)-3)], 7), base.MakeSeekKey(u[:max(0, len(u)-1)], 7),
						base.MakeSeekKey(draw(rng), uint64(rng.Intn(100))),
					} {
						checkSeekIndex(t, r, s)
						probes++
					}
				}
				for _, u := range [][]byte{nil, {0}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, []byte("tenant:"), []byte("z"),
					[]byte("tenant:000000000000"), []byte("tenant:999999999999:zz"), bytes.Repeat([]byte("a"), 24), bytes.Repeat([]byte{0xff}, 40)} {
					checkSeekIndex(t, r, base.MakeSeekKey(u, 5))
				}
				r.Close()
			}
		})
	}
}

// sortModel puts m in internal-key order.
func sortModel(m model) {
	for i := 1; i < len(m); i++ {
		for j := i; j > 0 && base.CompareInternal(m[j-1].key, m[j].key) > 0; j-- {
			m[j-1], m[j] = m[j], m[j-1]
		}
	}
}
