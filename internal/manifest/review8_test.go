package manifest

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// review8Key draws a key of a small alphabet (0x00, 0x01, 0x7f, 0xff)
// after one of a few prefixes of lengths around the 8-byte window, so
// that level bounds share prefixes of every length, are proper prefixes
// of each other and tie on their windows.
func review8Key(rng *rand.Rand, prefixes [][]byte) []byte {
	k := slices.Clone(prefixes[rng.Intn(len(prefixes))])
	for n := rng.Intn(12); n > 0; n-- {
		k = append(k, []byte{0, 0, 1, 0x7f, 0xff, 0xff}[rng.Intn(6)])
	}
	return k
}

func review8Prefixes(rng *rand.Rand) [][]byte {
	var ps [][]byte
	base := bytes.Repeat([]byte{0xff}, rng.Intn(20))
	if rng.Intn(2) == 0 {
		base = bytes.Repeat([]byte{0}, rng.Intn(20))
	}
	for n := 1 + rng.Intn(3); n > 0; n-- {
		p := slices.Clone(base)
		for m := rng.Intn(10); m > 0; m-- {
			p = append(p, []byte{0, 1, 0xff}[rng.Intn(3)])
		}
		ps = append(ps, p)
	}
	return ps
}

// TestReview8IndexThroughEdits builds levels by a history of edits, each
// Version on the previous one (so untouched levels reuse their index),
// and checks FindFiles, FindFileBatch (batches over 64 keys),
// SearchLargest and SearchSmallest of every level against a linear scan.
func TestReview8IndexThroughEdits(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 15
	}
	for seed := 0; seed < seeds; seed++ {
		rng := rand.New(rand.NewSource(int64(seed)))
		prefixes := review8Prefixes(rng)
		var v *Version
		num := uint64(1)
		for step := 0; step < 6; step++ {
			var e VersionEdit
			// Replace one random level's tables wholesale, or leave them.
			level := 1 + rng.Intn(3)
			if v != nil {
				for _, f := range v.Files[level] {
					if rng.Intn(3) > 0 {
						e.DeletedFiles = append(e.DeletedFiles, DeletedFileEntry{Level: level, FileNum: f.FileNum})
					}
				}
			}
			// Keep the files not deleted, and add tables in the gaps.
			kept := map[uint64]bool{}
			if v != nil {
				for _, f := range v.Files[level] {
					kept[f.FileNum] = true
				}
				for _, d := range e.DeletedFiles {
					delete(kept, d.FileNum)
				}
			}
			var keys [][]byte
			seen := map[string]bool{}
			for i := rng.Intn(200); i > 0; i-- {
				k := review8Key(rng, prefixes)
				if !seen[string(k)] {
					seen[string(k)] = true
					keys = append(keys, k)
				}
			}
			slices.SortFunc(keys, bytes.Compare)
			var keptFiles []*FileMetadata
			if v != nil {
				for _, f := range v.Files[level] {
					if kept[f.FileNum] {
						keptFiles = append(keptFiles, f)
					}
				}
			}
			inKept := func(k []byte) bool {
				for _, f := range keptFiles {
					if bytes.Compare(f.smallestUkey(), k) <= 0 && bytes.Compare(k, f.largestUkey()) <= 0 {
						return true
					}
				}
				return false
			}
			// Cut runs of keys that no kept table spans into new tables.
			for i := 0; i < len(keys); {
				if inKept(keys[i]) {
					i++
					continue
				}
				j := i
				for j+1 < len(keys) && j-i < rng.Intn(4) && !inKept(keys[j+1]) {
					// A table [keys[i], keys[j+1]] must not swallow a kept one.
					ok := true
					for _, f := range keptFiles {
						if bytes.Compare(keys[i], f.smallestUkey()) <= 0 && bytes.Compare(f.largestUkey(), keys[j+1]) <= 0 {
							ok = false
						}
					}
					if !ok {
						break
					}
					j++
				}
				e.NewFiles = append(e.NewFiles, NewFileEntry{Level: level, Meta: meta(num, string(keys[i]), string(keys[j]), 1, 2)})
				num++
				i = j + 1
			}
			b := NewBuilder(v)
			if err := b.Apply(&e); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			nv, err := b.Finish()
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			v = nv
			// Probes: bounds, their neighbours, fresh keys.
			var probes [][]byte
			for l := 1; l < 4; l++ {
				for _, f := range v.Files[l] {
					for _, k := range [][]byte{f.smallestUkey(), f.largestUkey()} {
						probes = append(probes, k, append(slices.Clone(k), 0), k[:len(k)-min(1, len(k))])
						if len(k) > 0 {
							c := slices.Clone(k)
							c[len(c)-1]--
							probes = append(probes, c)
							c = slices.Clone(k)
							c[len(c)-1]++
							probes = append(probes, c)
						}
					}
				}
			}
			for i := 0; i < 150; i++ {
				probes = append(probes, review8Key(rng, prefixes))
			}
			for _, p := range prefixes {
				probes = append(probes, p, p[:len(p)/2])
			}
			probes = append(probes, nil, []byte{}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
			rng.Shuffle(len(probes), func(a, b int) { probes[a], probes[b] = probes[b], probes[a] })
			for l := 1; l < 4; l++ {
				files := v.Files[l]
				at := make([]int, len(probes))
				v.FindFileBatch(l, probes, at)
				for j, k := range probes {
					want := -1
					for i, f := range files {
						if bytes.Compare(f.smallestUkey(), k) <= 0 && bytes.Compare(k, f.largestUkey()) <= 0 {
							want = i
							break
						}
					}
					what := fmt.Sprintf("seed %d step %d L%d (%d files) key %x", seed, step, l, len(files), k)
					if at[j] != want {
						t.Fatalf("%s: FindFileBatch = %d, want %d\n%s", what, at[j], want, v)
					}
					got := v.FindFiles(l, k)
					if want < 0 && len(got) != 0 || want >= 0 && (len(got) != 1 || got[0] != files[want]) {
						t.Fatalf("%s: FindFiles = %v, want %d", what, got, want)
					}
					wl := slices.IndexFunc(files, func(f *FileMetadata) bool { return bytes.Compare(f.largestUkey(), k) >= 0 })
					if wl < 0 {
						wl = len(files)
					}
					ws := slices.IndexFunc(files, func(f *FileMetadata) bool { return bytes.Compare(f.smallestUkey(), k) >= 0 })
					if ws < 0 {
						ws = len(files)
					}
					if g := v.SearchLargest(l, k); g != wl {
						t.Fatalf("%s: SearchLargest = %d, want %d", what, g, wl)
					}
					if g := v.SearchSmallest(l, k); g != ws {
						t.Fatalf("%s: SearchSmallest = %d, want %d", what, g, ws)
					}
				}
			}
		}
	}
}
