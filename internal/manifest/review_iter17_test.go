package manifest

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

// TestReview17InRangeLevel0ThroughEdits: level 0's index follows the
// Versions a Builder makes edit after edit, as the DB makes them: tables
// added to and removed from level 0 (by flushes and compactions), and
// edits that touch only other levels (which reuse level 0's index). After
// every edit, InRangeLevel0 on batches of up to 200 keys (more than one
// chunk of 64) answers as whole-key comparisons do, bit t for
// v.Files[0][t] in the Version's own order.
func TestReview17InRangeLevel0ThroughEdits(t *testing.T) {
	rng := rand.New(rand.NewSource(1717))
	shapes := []keyShape{keyShapes["random"], keyShapes["decimal"], keyShapes["beyond-window"], keyShapes["zeros"], r15Key}
	iters := 200
	if testing.Short() {
		iters = 40
	}
	for iter := range iters {
		shape := shapes[iter%len(shapes)]
		v := &Version{}
		num := uint64(1)
		seq := uint64(10)
		var l1 uint64 // the level-1 table, if any
		for step := 0; step < 30; step++ {
			b := NewBuilder(v)
			var e VersionEdit
			switch op := rng.Intn(4); {
			case op <= 1 && len(v.Files[0]) < MaxInRangeLevel0:
				a, c := shape(rng), shape(rng)
				if bytes.Compare(a, c) > 0 {
					a, c = c, a
				}
				e.NewFiles = append(e.NewFiles, NewFileEntry{Level: 0, Meta: meta(num, string(a), string(c), seq, seq+1)})
				num++
				seq += 2
			case op == 2 && len(v.Files[0]) > 0:
				f := v.Files[0][rng.Intn(len(v.Files[0]))]
				e.DeletedFiles = append(e.DeletedFiles, DeletedFileEntry{Level: 0, FileNum: f.FileNum})
			default:
				// Only level 1 changes.
				if l1 != 0 {
					e.DeletedFiles = append(e.DeletedFiles, DeletedFileEntry{Level: 1, FileNum: l1})
				}
				l1 = num
				e.NewFiles = append(e.NewFiles, NewFileEntry{Level: 1, Meta: meta(num, "a", "z", 1, 2)})
				num++
			}
			if err := b.Apply(&e); err != nil {
				t.Fatal(err)
			}
			nv, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			v = nv
			if len(v.Files[0]) == 0 {
				continue
			}
			var keys [][]byte
			for _, f := range v.Files[0] {
				for _, x := range [][]byte{f.smallestUkey(), f.largestUkey()} {
					keys = append(keys, x, append(bytes.Clone(x), 0), append(bytes.Clone(x), 0xff))
					if len(x) > 0 {
						keys = append(keys, x[:len(x)-1])
					}
				}
			}
			for len(keys) < 200 {
				keys = append(keys, shape(rng))
			}
			rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			keys = keys[:1+rng.Intn(len(keys))]
			in := make([]uint8, len(keys))
			every := v.InRangeLevel0(keys, in)
			want := ^uint8(0)
			for j, k := range keys {
				w := inRangeWant(v.Files[0], k)
				if in[j] != w {
					t.Fatalf("iter %d step %d: InRangeLevel0(%q) = %08b, want %08b\n%s", iter, step, k, in[j], w, v)
				}
				want &= w
			}
			if every != want {
				t.Fatalf("iter %d step %d: every = %08b, want %08b", iter, step, every, want)
			}
		}
	}
}

// TestReview17InRangeLevel0TooMany: more tables than it answers for is
// refused with a panic, not answered wrongly through a byte's 8 bits.
func TestReview17InRangeLevel0TooMany(t *testing.T) {
	var bounds [][2][]byte
	for i := range MaxInRangeLevel0 + 1 {
		bounds = append(bounds, [2][]byte{[]byte(fmt.Sprintf("k%02d", i)), []byte("z")})
	}
	v := level0Version(t, bounds)
	defer func() {
		if recover() == nil {
			t.Fatal("InRangeLevel0 of 9 tables did not panic")
		}
	}()
	v.InRangeLevel0([][]byte{[]byte("m")}, make([]uint8, 1))
}
