package manifest

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// keyShape draws user keys of one family. The families are chosen to
// reach every branch of the level index: keys whose common prefix is long,
// keys that differ only after the 8-byte window (long runs of equal
// windows), short keys and keys that are proper prefixes of each other
// with zero bytes (zero-padding ties), and arbitrary bytes.
type keyShape func(rng *rand.Rand) []byte

var keyShapes = map[string]keyShape{
	"random": func(rng *rand.Rand) []byte { return randBytes(rng, 12) },
	"decimal": func(rng *rand.Rand) []byte {
		return []byte(fmt.Sprintf("%016d", rng.Intn(100000)))
	},
	"beyond-window": func(rng *rand.Rand) []byte {
		// "tenant" + 12 bytes that rarely differ + a varying tail: every
		// window after the common prefix is one of two values.
		k := []byte("tenant:")
		if rng.Intn(2) == 0 {
			k = append(k, "aaaaaaaaaaaa"...)
		} else {
			k = append(k, "aaaaaaaaaaab"...)
		}
		return append(k, fmt.Sprintf("%06d", rng.Intn(5000))...)
	},
	"zeros": func(rng *rand.Rand) []byte {
		k := []byte("p")
		for n := rng.Intn(11); n > 0; n-- {
			k = append(k, []byte{0, 0, 1, 0xff}[rng.Intn(4)])
		}
		return k
	},
	"tiny": func(rng *rand.Rand) []byte { return []byte{byte(rng.Intn(3))}[:rng.Intn(2)] },
}

// sortedLevel builds a Version (through a Builder, so with its index)
// whose level 1 holds n disjoint tables cut from sorted distinct keys
// drawn from shape; with shared, some adjacent tables share a boundary
// user key, as LevelDB can write.
func sortedLevel(t testing.TB, rng *rand.Rand, shape keyShape, n int, shared bool) *Version {
	seen := map[string]bool{}
	var keys [][]byte
	for i := 0; i < 4*n+2; i++ {
		k := shape(rng)
		if !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	var e VersionEdit
	num := uint64(1)
	// A shared boundary key's newer versions end one table (sequence
	// number 60 here) and its older ones start the next (40).
	startSeq := uint64(90)
	for i := 0; i < len(keys); {
		lo := i
		hi := min(len(keys)-1, lo+rng.Intn(4))
		m := &FileMetadata{FileNum: num, Size: 100, SmallestSeq: 1, LargestSeq: 100,
			Smallest: base.MakeInternalKey(keys[lo], startSeq, base.KindSet)}
		num++
		i, startSeq = hi+1, 90
		endSeq := uint64(10)
		if shared && hi > lo && rng.Intn(3) == 0 && i < len(keys) {
			i, startSeq, endSeq = hi, 40, 60 // the next table starts at this one's last key
		}
		m.Largest = base.MakeInternalKey(keys[hi], endSeq, base.KindSet)
		if lo == hi && startSeq < endSeq {
			m.Smallest, m.Largest = m.Largest, m.Smallest
		}
		e.NewFiles = append(e.NewFiles, NewFileEntry{Level: 1, Meta: m})
	}
	return buildVersion(t, &e)
}

// buildVersion applies e to the empty Version through a Builder, so the
// result has its level index.
func buildVersion(t testing.TB, e *VersionEdit) *Version {
	t.Helper()
	b := NewBuilder(nil)
	if err := b.Apply(e); err != nil {
		t.Fatal(err)
	}
	v, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLevelIndexAgainstScan checks the indexed searches (FindFiles,
// SearchLargest, SearchSmallest) against a linear scan and against the
// same Version without its index, for every key shape, with and without
// shared boundaries, for keys drawn from the level's own bounds, their
// neighbours and unrelated bytes.
func TestLevelIndexAgainstScan(t *testing.T) {
	for name, shape := range keyShapes {
		for _, shared := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/shared=%v", name, shared), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(len(name))))
				sawShared := false
				defer func() {
					if shared && !sawShared && name != "tiny" {
						t.Error("no level with a shared boundary was built")
					}
				}()
				for round := 0; round < 30; round++ {
					v := sortedLevel(t, rng, shape, 1+rng.Intn(60), shared)
					sawShared = sawShared || v.SharedBoundaries[1]
					if v.index[1] == nil && len(v.Files[1]) > 0 {
						t.Fatal("Finish built no index")
					}
					plain := &Version{Files: v.Files, SharedBoundaries: v.SharedBoundaries}
					files := v.Files[1]
					var probes [][]byte
					for _, f := range files {
						for _, k := range [][]byte{f.smallestUkey(), f.largestUkey()} {
							probes = append(probes, k, append(slices.Clone(k), 0), k[:len(k)-min(len(k), 1)])
							if len(k) > 0 {
								up := slices.Clone(k)
								up[len(up)-1]++
								probes = append(probes, up)
							}
						}
					}
					for i := 0; i < 200; i++ {
						probes = append(probes, shape(rng), randBytes(rng, 20))
					}
					probes = append(probes, nil, []byte{}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
					rng.Shuffle(len(probes), func(a, b int) { probes[a], probes[b] = probes[b], probes[a] })
					for _, w := range []*Version{v, plain} {
						at := make([]int, len(probes))
						w.FindFileBatch(1, probes, at)
						for j, k := range probes {
							want := -1
							if fs := w.FindFiles(1, k); len(fs) > 0 {
								want = slices.Index(files, fs[0])
							}
							if at[j] != want {
								t.Fatalf("FindFileBatch: key %d of %d (%q) at %d, want %d (indexed %v)\n%s", j, len(probes), k, at[j], want, w == v, v)
							}
						}
					}
					for _, k := range probes {
						wantL := slices.IndexFunc(files, func(f *FileMetadata) bool { return bytes.Compare(f.largestUkey(), k) >= 0 })
						if wantL < 0 {
							wantL = len(files)
						}
						wantS := slices.IndexFunc(files, func(f *FileMetadata) bool { return bytes.Compare(f.smallestUkey(), k) >= 0 })
						if wantS < 0 {
							wantS = len(files)
						}
						var wantF []*FileMetadata
						for _, f := range files {
							if bytes.Compare(f.smallestUkey(), k) <= 0 && bytes.Compare(k, f.largestUkey()) <= 0 {
								wantF = append(wantF, f)
							}
						}
						if !shared && len(wantF) > 1 {
							t.Fatalf("a disjoint level holds %q in %d tables", k, len(wantF))
						}
						for _, w := range []*Version{v, plain} {
							if got := w.SearchLargest(1, k); got != wantL {
								t.Fatalf("SearchLargest(%q) = %d, want %d (indexed %v)\n%s", k, got, wantL, w == v, v)
							}
							if got := w.SearchSmallest(1, k); got != wantS {
								t.Fatalf("SearchSmallest(%q) = %d, want %d (indexed %v)\n%s", k, got, wantS, w == v, v)
							}
							if got := w.FindFiles(1, k); !slices.Equal(got, wantF) {
								t.Fatalf("FindFiles(%q) = %v, want %v (indexed %v)\n%s", k, got, wantF, w == v, v)
							}
						}
					}
				}
			})
		}
	}
}

// TestLevelIndexFollowsEdits: a Version built on another keeps the index
// of each level the edits left alone and rebuilds the others, so searches
// stay right through a sequence of edits (random valid histories).
func TestLevelIndexFollowsEdits(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		v, _ := randomVersion(seed, 40)
		rng := rand.New(rand.NewSource(seed))
		for level := 1; level < NumLevels; level++ {
			files := v.Files[level]
			if (v.index[level] != nil) != (len(files) > 0) {
				t.Fatalf("seed %d L%d: %d files, index %v", seed, level, len(files), v.index[level] != nil)
			}
			for q := 0; q < 500; q++ {
				k := queryKey(rng, false)
				want := bruteOverlaps(v, level, k, k)
				if got := v.FindFiles(level, k); !slices.Equal(got, want) {
					t.Fatalf("seed %d: FindFiles(L%d, %q) = %v, want %v\n%s", seed, level, k, got, want, v)
				}
			}
		}
	}
}

// FuzzLevelIndex: any sorted set of keys cut into tables, any probe: the
// indexed search agrees with the plain one.
func FuzzLevelIndex(f *testing.F) {
	f.Add([]byte("a\x00b\x00c"), []byte("b"), uint8(1))
	f.Add([]byte("00000000001\x0000000000002\x0000000000003"), []byte("0000000000015"), uint8(2))
	f.Add([]byte("p\x00\x00\x00p\x00\x00p\x00p"), []byte("p\x00"), uint8(0))
	f.Fuzz(func(t *testing.T, keyData, probe []byte, cut uint8) {
		parts := bytes.Split(keyData, []byte{0})
		slices.SortFunc(parts, bytes.Compare)
		parts = slices.CompactFunc(parts, bytes.Equal)
		if len(parts) == 0 || len(parts) > 200 {
			return
		}
		var e VersionEdit
		step := int(cut%4) + 1
		for i, num := 0, uint64(1); i < len(parts); i, num = i+step, num+1 {
			hi := min(i+step-1, len(parts)-1)
			e.NewFiles = append(e.NewFiles, NewFileEntry{Level: 2, Meta: meta(num, string(parts[i]), string(parts[hi]), 1, 2)})
		}
		v := buildVersion(t, &e)
		plain := &Version{Files: v.Files}
		if a, b := v.SearchLargest(2, probe), plain.SearchLargest(2, probe); a != b {
			t.Fatalf("SearchLargest(%q) = %d indexed, %d plain", probe, a, b)
		}
		if a, b := v.SearchSmallest(2, probe), plain.SearchSmallest(2, probe); a != b {
			t.Fatalf("SearchSmallest(%q) = %d indexed, %d plain", probe, a, b)
		}
		if a, b := v.FindFiles(2, probe), plain.FindFiles(2, probe); !slices.Equal(a, b) {
			t.Fatalf("FindFiles(%q) = %v indexed, %v plain", probe, a, b)
		}
		// The batch: the probe and the level's own bounds.
		batch := append([][]byte{probe}, parts...)
		at := make([]int, len(batch))
		v.FindFileBatch(2, batch, at)
		for j, k := range batch {
			want := -1
			if fs := plain.FindFiles(2, k); len(fs) > 0 {
				want = slices.Index(v.Files[2], fs[0])
			}
			if at[j] != want {
				t.Fatalf("FindFileBatch(%q) = %d, want %d", k, at[j], want)
			}
		}
	})
}

// BenchmarkFindFiles: the search of a Get's table on a level of 184
// tables of 16-byte decimal keys (a 10,000,000-key store compacted), with
// and without the index.
func BenchmarkFindFiles(b *testing.B) {
	var e VersionEdit
	const n = 184
	for i := 0; i < n; i++ {
		lo := fmt.Sprintf("%016d", i*54000)
		hi := fmt.Sprintf("%016d", i*54000+53999)
		e.NewFiles = append(e.NewFiles, NewFileEntry{Level: 3, Meta: meta(uint64(i+1), lo, hi, 1, 2)})
	}
	v := buildVersion(b, &e)
	rng := rand.New(rand.NewSource(1))
	keys := make([][]byte, 4096)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("%016d", rng.Intn(n*54000)))
	}
	b.Run("batch64", func(b *testing.B) {
		var at [64]int
		found := 0
		for i := 0; i < b.N; i += 64 {
			start := i % len(keys)
			v.FindFileBatch(3, keys[start:start+64], at[:])
			for _, a := range at {
				found += b2i(a >= 0)
			}
		}
		if found < b.N {
			b.Fatalf("found %d of %d", found, b.N)
		}
	})
	for _, indexed := range []bool{true, false} {
		w := v
		if !indexed {
			w = &Version{Files: v.Files}
		}
		b.Run(fmt.Sprintf("indexed=%v", indexed), func(b *testing.B) {
			found := 0
			for i := 0; i < b.N; i++ {
				found += len(w.FindFiles(3, keys[i%len(keys)]))
			}
			if found != b.N {
				b.Fatalf("found %d of %d", found, b.N)
			}
		})
	}
}

func TestWindow(t *testing.T) {
	for _, b := range [][]byte{nil, {1}, {1, 2, 3}, {0xff, 0, 0xff, 0, 0xff, 0, 0xff}, {1, 2, 3, 4, 5, 6, 7, 8}, {9, 8, 7, 6, 5, 4, 3, 2, 1}} {
		var w [8]byte
		copy(w[:], b)
		want := uint64(0)
		for _, c := range w {
			want = want<<8 | uint64(c)
		}
		if got := window(b); got != want {
			t.Errorf("window(%x) = %x, want %x", b, got, want)
		}
	}
}

func TestTailWindow(t *testing.T) {
	key := []byte("0123456789abcdef")
	for n := 0; n <= len(key); n++ {
		for cp := 0; cp <= n; cp++ {
			if got, want := tailWindow(key[:n], cp), window(key[cp:n]); got != want {
				t.Errorf("tailWindow(%q, %d) = %x, want %x", key[:n], cp, got, want)
			}
		}
	}
}

// inRangeWant is InRangeLevel0's answer for one key by whole-key
// comparisons.
func inRangeWant(files []*FileMetadata, k []byte) uint8 {
	var in uint8
	for t, f := range files {
		if bytes.Compare(k, f.smallestUkey()) >= 0 && bytes.Compare(k, f.largestUkey()) <= 0 {
			in |= 1 << t
		}
	}
	return in
}

// level0Version is a Version whose level 0 holds tables with the given
// bounds (lo, hi pairs), newest first, built by a Builder as the DB's are.
func level0Version(t testing.TB, bounds [][2][]byte) *Version {
	t.Helper()
	b := NewBuilder(nil)
	var e VersionEdit
	for i, lh := range bounds {
		n := uint64(len(bounds) - i)
		e.NewFiles = append(e.NewFiles, NewFileEntry{Level: 0, Meta: meta(n, string(lh[0]), string(lh[1]), 2*n, 2*n+1)})
	}
	if err := b.Apply(&e); err != nil {
		t.Fatal(err)
	}
	v, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkInRangeLevel0 runs InRangeLevel0 on keys, with level 0's index and
// without it, and compares every answer with inRangeWant; it also checks
// that nothing past the keys is written.
func checkInRangeLevel0(t *testing.T, v *Version, keys [][]byte) {
	t.Helper()
	files := v.Files[0]
	bare := &Version{}
	bare.Files[0] = files
	for _, v := range []*Version{v, bare} {
		in := make([]uint8, len(keys)+1)
		in[len(keys)] = 0xa5
		every := v.InRangeLevel0(keys, in[:len(keys)])
		wantEvery := ^uint8(0)
		for j, k := range keys {
			want := inRangeWant(files, k)
			if in[j] != want {
				t.Fatalf("InRangeLevel0(%q) = %08b, want %08b (index %v)\n%s", k, in[j], want, v.index[0] != nil, v)
			}
			wantEvery &= want
		}
		if every != wantEvery {
			t.Fatalf("InRangeLevel0 of %d keys: every = %08b, want %08b (index %v)", len(keys), every, wantEvery, v.index[0] != nil)
		}
		if in[len(keys)] != 0xa5 {
			t.Fatal("InRangeLevel0 wrote past its keys")
		}
		// Each key alone: every is its own answer (and not 0 when a
		// table holds it).
		for _, k := range keys {
			if got, want := v.InRangeLevel0([][]byte{k}, in[:1]), inRangeWant(files, k); got != want {
				t.Fatalf("InRangeLevel0(%q) alone: every = %08b, want %08b (index %v)", k, got, want, v.index[0] != nil)
			}
		}
	}
}

// TestInRangeLevel0AgainstCompare checks InRangeLevel0 against whole-key
// comparisons on levels of 1 to 8 tables and probe keys of every key
// family, including bounds that share more than 8 bytes
// ("beyond-window"), keys shorter than 8 bytes or than the bounds'
// prefix ("zeros", "tiny"), each bound and its neighbours, and tables of
// one key.
func TestInRangeLevel0AgainstCompare(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for name, shape := range keyShapes {
		t.Run(name, func(t *testing.T) {
			for iter := 0; iter < 300; iter++ {
				var bounds [][2][]byte
				var keys [][]byte
				for range 1 + rng.Intn(MaxInRangeLevel0) {
					a, b := shape(rng), shape(rng)
					if rng.Intn(10) == 0 {
						b = a
					}
					if bytes.Compare(a, b) > 0 {
						a, b = b, a
					}
					bounds = append(bounds, [2][]byte{a, b})
					keys = append(keys, a, b, append(slices.Clip(a), 0), append(slices.Clip(b), 0), a[:len(a)/2], b[:max(0, len(b)-1)])
				}
				for len(keys) < 80 {
					keys = append(keys, shape(rng))
				}
				checkInRangeLevel0(t, level0Version(t, bounds), keys)
			}
		})
	}
}

// TestInRangeLevel0TooManyTables: a level 0 of more tables than a byte
// has bits is refused, not answered with bits that wrap.
func TestInRangeLevel0TooManyTables(t *testing.T) {
	var bounds [][2][]byte
	for i := range MaxInRangeLevel0 + 1 {
		bounds = append(bounds, [2][]byte{[]byte(fmt.Sprintf("a%02d", i)), []byte(fmt.Sprintf("z%02d", i))})
	}
	v := level0Version(t, bounds)
	defer func() {
		if recover() == nil {
			t.Fatal("InRangeLevel0 of 9 tables did not panic")
		}
	}()
	v.InRangeLevel0([][]byte{[]byte("m")}, make([]uint8, 1))
}

// FuzzInRangeLevel0 checks InRangeLevel0 against whole-key comparisons
// for a level 0 of two tables with any bounds, and any probe.
func FuzzInRangeLevel0(f *testing.F) {
	f.Add([]byte("0000000000000008"), []byte("0000000000199995"), []byte("0000000000000100"), []byte("0000000000100002"), []byte("0000000000012345."))
	f.Add([]byte("tenant:aaaaaaaaaaaa000001"), []byte("tenant:aaaaaaaaaaab004999"), []byte("tenant:aaaaaaaaaaaa"), []byte("tenant:b"), []byte("tenant:aaaaaaaaaaab"))
	f.Add([]byte("p\x00\x00"), []byte("p\x00\x01"), []byte("p"), []byte("p\x00\x00\x00\x00\x00\x00\x00\x00\x00"), []byte("p\x00"))
	f.Add([]byte(""), []byte("\xff"), []byte("a"), []byte("b"), []byte(""))
	f.Fuzz(func(t *testing.T, a, b, c, d, probe []byte) {
		if bytes.Compare(a, b) > 0 {
			a, b = b, a
		}
		if bytes.Compare(c, d) > 0 {
			c, d = d, c
		}
		v := level0Version(t, [][2][]byte{{a, b}, {c, d}})
		checkInRangeLevel0(t, v, [][]byte{probe, a, b, c, d, append(slices.Clip(probe), 0), probe[:len(probe)/2]})
	})
}
