package manifest

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Adversarial review of 4e29c58 and 601ddf3: FindFileBatch's call-free
// findWindows (windows read in place, short keys through the last 8
// bytes shifted, a branch-free choice between table and gap, findLater
// for the keys it cannot place).

// r12Alpha is the byte alphabet of the random keys: zero bytes (padding
// ties), the bytes around them and the largest ones.
var r12Alpha = []byte{0, 1, 2, 'a', 'b', 0x7f, 0x80, 0xfe, 0xff}

// r12Suffix returns n random bytes of r12Alpha.
func r12Suffix(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = r12Alpha[rng.Intn(len(r12Alpha))]
	}
	return b
}

// r12Level builds a Version whose level 1 holds tables cut from sorted
// distinct keys: each key a prefix of plen bytes followed by 0 to maxSuf
// bytes (with the prefix, shorter keys when short is set), in nt tables
// of one or more keys with gaps between them (or none).
func r12Level(t *testing.T, rng *rand.Rand, prefix []byte, maxSuf, nt int, gaps, short bool) (*Version, [][2][]byte) {
	t.Helper()
	set := map[string]bool{}
	want := nt * 4
	for tries := 0; len(set) < want && tries < want*50; tries++ {
		k := append(append([]byte(nil), prefix...), r12Suffix(rng, rng.Intn(maxSuf+1))...)
		if short && rng.Intn(8) == 0 {
			k = k[:rng.Intn(len(k)+1)]
		}
		set[string(k)] = true
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var bounds [][2][]byte
	for i := 0; i < len(keys) && len(bounds) < nt; {
		if gaps && rng.Intn(3) == 0 {
			i++ // a key no table holds
			continue
		}
		n := 1 + rng.Intn(3)
		if i+n > len(keys) {
			n = len(keys) - i
		}
		bounds = append(bounds, [2][]byte{[]byte(keys[i]), []byte(keys[i+n-1])})
		i += n
	}
	e := &VersionEdit{}
	for i, b := range bounds {
		seq := uint64(10000 - i)
		e.NewFiles = append(e.NewFiles, NewFileEntry{Level: 1, Meta: &FileMetadata{
			FileNum: uint64(i + 1), Size: 1,
			Smallest: base.MakeInternalKey(b[0], seq, base.KindSet), Largest: base.MakeInternalKey(b[1], seq, base.KindSet),
			SmallestSeq: seq, LargestSeq: seq,
		}})
	}
	return buildVersion(t, e), bounds
}

// r12Scan is the index of the first of bounds holding k, -1 for none.
func r12Scan(bounds [][2][]byte, k []byte) int {
	for i, b := range bounds {
		if bytes.Compare(b[0], k) <= 0 && bytes.Compare(k, b[1]) <= 0 {
			return i
		}
	}
	return -1
}

// r12Probes returns probe keys for a level: every bound, bounds a byte
// longer and shorter, the last byte moved, the prefix's truncations and
// extensions, keys that change one byte of the prefix, keys of every
// length 0..24, and duplicates.
func r12Probes(rng *rand.Rand, prefix []byte, bounds [][2][]byte, n int) [][]byte {
	var out [][]byte
	for _, b := range bounds {
		for _, k := range b {
			out = append(out, k, append(append([]byte(nil), k...), 0), append(append([]byte(nil), k...), 0xff))
			if len(k) > 0 {
				out = append(out, k[:len(k)-1])
				c := append([]byte(nil), k...)
				c[len(c)-1]++
				out = append(out, c)
				c = append([]byte(nil), k...)
				c[len(c)-1]--
				out = append(out, c)
			}
		}
	}
	for l := 0; l <= len(prefix); l++ {
		out = append(out, append([]byte(nil), prefix[:l]...))
		out = append(out, append(append([]byte(nil), prefix[:l]...), 0, 0, 0, 0, 0, 0, 0, 0))
	}
	for len(out) < n {
		var k []byte
		switch rng.Intn(6) {
		case 0:
			k = r12Suffix(rng, rng.Intn(25))
		case 1:
			k = append(append([]byte(nil), prefix...), r12Suffix(rng, rng.Intn(25-len(prefix)%25))...)
		case 2:
			if len(prefix) > 0 {
				k = append(append([]byte(nil), prefix...), r12Suffix(rng, rng.Intn(12))...)
				k[rng.Intn(len(prefix))] ^= byte(1 + rng.Intn(255))
			}
		case 3:
			if len(out) > 0 {
				k = out[rng.Intn(len(out))]
			}
		case 4:
			b := bounds[rng.Intn(len(bounds))][rng.Intn(2)]
			k = append(append([]byte(nil), b...), r12Suffix(rng, rng.Intn(4))...)
		default:
			b := bounds[rng.Intn(len(bounds))][rng.Intn(2)]
			k = append([]byte(nil), b[:rng.Intn(len(b)+1)]...)
		}
		out = append(out, k)
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// TestReview12FindFileBatchAgainstScan compares FindFileBatch with a scan
// of the level on random levels: prefixes of 0 to 12 bytes (so the index's
// cp is 0, 1..8 and more than 8), bounds of every length with zero bytes
// (equal windows), one table or hundreds, with gaps or none, for batches
// of 1 to 300 keys of every length 0..24, at marked with garbage first.
func TestReview12FindFileBatchAgainstScan(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	cps := map[int]int{}
	for _, plen := range []int{0, 1, 3, 7, 8, 9, 12} {
		for _, maxSuf := range []int{0, 2, 6, 8, 10, 14} {
			for _, nt := range []int{1, 2, 3, 5, 64, 300} {
				for _, gaps := range []bool{false, true} {
					short := rng.Intn(2) == 0
					prefix := r12Suffix(rng, plen)
					v, bounds := r12Level(t, rng, prefix, maxSuf, nt, gaps, short)
					if len(bounds) == 0 {
						continue
					}
					cps[len(v.index[1].prefix)]++
					probes := r12Probes(rng, prefix, bounds, 400)
					what := fmt.Sprintf("plen=%d maxSuf=%d nt=%d(%d) gaps=%v short=%v cp=%d", plen, maxSuf, nt, len(bounds), gaps, short, len(v.index[1].prefix))
					for _, n := range []int{1, 7, 64, 65, 300} {
						for s := 0; s < len(probes); s += n {
							batch := probes[s:min(s+n, len(probes))]
							at := make([]int, len(batch)+1)
							for j := range at {
								at[j] = 12345
							}
							v.FindFileBatch(1, batch, at[:len(batch)])
							for j, k := range batch {
								if want := r12Scan(bounds, k); at[j] != want {
									t.Fatalf("%s: batch of %d: FindFileBatch(%x) = %d, scan %d (bounds %x)", what, len(batch), k, at[j], want, bounds[max(0, min(want, at[j])):min(len(bounds), max(want, at[j])+2)])
								}
								if f := v.FindFile(1, k); (f == nil) != (at[j] < 0) || f != nil && f != v.Files[1][at[j]] {
									t.Fatalf("%s: FindFile(%x) disagrees with FindFileBatch %d", what, k, at[j])
								}
							}
							if at[len(batch)] != 12345 {
								t.Fatalf("%s: FindFileBatch wrote past its keys", what)
							}
						}
					}
				}
			}
		}
	}
	// Every branch of findWindows: cp 0, 1..8, and above 8.
	low, mid, high := 0, 0, 0
	for cp, n := range cps {
		switch {
		case cp == 0:
			low += n
		case cp <= 8:
			mid += n
		default:
			high += n
		}
	}
	if low == 0 || mid == 0 || high == 0 {
		t.Fatalf("common prefixes seen: %v", cps)
	}
}

// TestReview12FindWindowsPlaces checks findWindows on its own: every key
// it places (not findLater) is placed as a scan places it, and it places
// the keys it should (a key of 8 bytes or more that follows a prefix of
// at most 8 bytes and whose window equals no bound's window of its
// table or the one before), so the fast path is not silently bypassed.
func TestReview12FindWindowsPlaces(t *testing.T) {
	rng := rand.New(rand.NewSource(1212))
	for round := 0; round < 300; round++ {
		prefix := r12Suffix(rng, rng.Intn(10))
		v, bounds := r12Level(t, rng, prefix, 4+rng.Intn(12), 1+rng.Intn(150), rng.Intn(2) == 0, rng.Intn(2) == 0)
		if len(bounds) == 0 {
			continue
		}
		x := v.index[1]
		probes := r12Probes(rng, prefix, bounds, 300)
		at := make([]int, len(probes))
		all := x.findWindows(probes, at)
		later := 0
		for j, k := range probes {
			if at[j] == findLater {
				later++
				continue
			}
			if want := r12Scan(bounds, k); at[j] != want {
				t.Fatalf("round %d (cp %d): findWindows(%x) = %d, scan %d", round, len(x.prefix), k, at[j], want)
			}
			if len(x.prefix) > 8 || len(k) < 8 || !bytes.HasPrefix(k, x.prefix) {
				t.Fatalf("round %d: findWindows placed %x (cp %d), which it must leave", round, k, len(x.prefix))
			}
		}
		if all != (later == 0) {
			t.Fatalf("round %d: findWindows reports %v with %d keys left", round, all, later)
		}
		// A key it leaves must be one it cannot place.
		for j, k := range probes {
			if at[j] != findLater || len(x.prefix) > 8 || len(k) < 8 || !bytes.HasPrefix(k, x.prefix) {
				continue
			}
			p := tailWindow(k, len(x.prefix))
			eq := false
			for i := range x.largest {
				if x.largest[i] == p || x.smallest[i] == p {
					eq = true
				}
			}
			if !eq {
				t.Fatalf("round %d: findWindows left %x (window %x) though no bound's window equals it", round, k, p)
			}
		}
	}
}

// TestReview12FindFileBatchSharedBoundaries: on a level whose adjacent
// tables share a boundary user key, FindFileBatch gives the first table
// holding a key, as FindFiles does.
func TestReview12FindFileBatchSharedBoundaries(t *testing.T) {
	rng := rand.New(rand.NewSource(77))
	shared := 0
	for round := 0; round < 60; round++ {
		prefix := r12Suffix(rng, rng.Intn(10))
		set := map[string]bool{}
		for len(set) < 200 {
			set[string(append(append([]byte(nil), prefix...), r12Suffix(rng, rng.Intn(10))...))] = true
		}
		keys := make([]string, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var bounds [][2][]byte
		for i := 0; i+1 < len(keys); {
			n := 1 + rng.Intn(3)
			if i+n >= len(keys) {
				break
			}
			bounds = append(bounds, [2][]byte{[]byte(keys[i]), []byte(keys[i+n])})
			if rng.Intn(2) == 0 {
				i += n // the next table starts at this one's largest key
			} else {
				i += n + 1
			}
		}
		e := &VersionEdit{}
		seq := uint64(100000)
		for i, b := range bounds {
			// Newer versions first: a shared boundary's versions in the
			// first table are the newer ones.
			e.NewFiles = append(e.NewFiles, NewFileEntry{Level: 1, Meta: &FileMetadata{
				FileNum: uint64(i + 1), Size: 1,
				Smallest: base.MakeInternalKey(b[0], seq, base.KindSet), Largest: base.MakeInternalKey(b[1], seq-1, base.KindSet),
				SmallestSeq: seq - 1, LargestSeq: seq,
			}})
			seq -= 2
		}
		v := buildVersion(t, e)
		if v.SharedBoundaries[1] {
			shared++
		}
		probes := r12Probes(rng, prefix, bounds, 300)
		at := make([]int, len(probes))
		v.FindFileBatch(1, probes, at)
		for j, k := range probes {
			want := -1
			if fs := v.FindFiles(1, k); len(fs) > 0 {
				for i, f := range v.Files[1] {
					if f == fs[0] {
						want = i
					}
				}
			}
			if at[j] != want || want != r12Scan(bounds, k) {
				t.Fatalf("round %d: FindFileBatch(%x) = %d, FindFiles' first %d, scan %d", round, k, at[j], want, r12Scan(bounds, k))
			}
		}
	}
	if shared < 30 {
		t.Fatalf("%d of 60 levels share a boundary", shared)
	}
}
