package manifest

import (
	"bytes"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

func bruteOverlaps(v *Version, level int, lo, hi []byte) []*FileMetadata {
	var out []*FileMetadata
	for _, f := range v.Files[level] {
		if lo != nil && bytes.Compare(base.UserKey(f.Largest), lo) < 0 {
			continue
		}
		if hi != nil && bytes.Compare(base.UserKey(f.Smallest), hi) > 0 {
			continue
		}
		out = append(out, f)
	}
	return out
}

// queryKey returns a user key on, between or outside the slot keys, or nil.
func queryKey(rng *rand.Rand, allowNil bool) []byte {
	switch n := rng.Intn(10); {
	case n == 0 && allowNil:
		return nil
	case n == 1:
		return []byte{}
	case n == 2:
		return []byte("z")
	case n < 6:
		return []byte(slotKey(rng.Intn(215)) + "x") // between slots
	}
	return []byte(slotKey(rng.Intn(215)))
}

func TestOverlapsAndFindFile(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for seed := int64(1); seed <= 6; seed++ {
		v, _ := randomVersion(seed, 20*int(seed))
		for q := 0; q < 3000; q++ {
			level := rng.Intn(NumLevels)
			lo, hi := queryKey(rng, true), queryKey(rng, true)
			got := v.Overlaps(level, lo, hi)
			want := bruteOverlaps(v, level, lo, hi)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d: Overlaps(L%d, %q, %q) = %v, want %v\n%s", seed, level, lo, hi, got, want, v)
			}
			if level == 0 {
				continue
			}
			k := queryKey(rng, false)
			w := bruteOverlaps(v, level, k, k)
			if len(w) > 1 {
				t.Fatalf("L%d holds %d files for %q", level, len(w), k)
			}
			var wf *FileMetadata
			if len(w) == 1 {
				wf = w[0]
			}
			if f := v.FindFile(level, k); f != wf {
				t.Fatalf("seed %d: FindFile(L%d, %q) = %v, want %v\n%s", seed, level, k, f, wf, v)
			}
		}
	}
}

func TestOverlapsBounds(t *testing.T) {
	b := NewBuilder(nil)
	e := VersionEdit{NewFiles: []NewFileEntry{
		{Level: 1, Meta: meta(1, "", "", 1, 1)},
		{Level: 1, Meta: meta(2, "b", "d", 2, 2)},
		{Level: 1, Meta: meta(3, "f", "h", 3, 3)},
		{Level: 0, Meta: meta(4, "c", "g", 4, 4)},
	}}
	if err := b.Apply(&e); err != nil {
		t.Fatal(err)
	}
	v, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	nums := func(fs []*FileMetadata) []uint64 {
		var n []uint64
		for _, f := range fs {
			n = append(n, f.FileNum)
		}
		return n
	}
	for _, tc := range []struct {
		level  int
		lo, hi []byte
		want   []uint64
	}{
		{1, nil, nil, []uint64{1, 2, 3}},
		{1, nil, []byte{}, []uint64{1}}, // non-nil empty upper bound is the empty key
		{1, []byte{}, nil, []uint64{1, 2, 3}},
		{1, []byte("d"), []byte("f"), []uint64{2, 3}},
		{1, []byte("d\x00"), []byte("e"), nil},
		{1, []byte("i"), nil, nil},
		{1, nil, []byte("a"), []uint64{1}},
		{0, []byte("a"), []byte("b"), nil},
		{0, []byte("g"), []byte("z"), []uint64{4}},
	} {
		if got := nums(v.Overlaps(tc.level, tc.lo, tc.hi)); !slices.Equal(got, tc.want) {
			t.Errorf("Overlaps(L%d, %q, %q) = %v, want %v", tc.level, tc.lo, tc.hi, got, tc.want)
		}
	}
	for _, tc := range []struct {
		key  string
		want uint64
	}{{"", 1}, {"a", 0}, {"b", 2}, {"c", 2}, {"d", 2}, {"e", 0}, {"h", 3}, {"i", 0}} {
		var got uint64
		if f := v.FindFile(1, []byte(tc.key)); f != nil {
			got = f.FileNum
		}
		if got != tc.want {
			t.Errorf("FindFile(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("FindFile on L0 did not panic")
		}
	}()
	v.FindFile(0, []byte("c"))
}

func TestSnapshotRoundTrip(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		v, _ := randomVersion(seed, 50)
		snap := v.Snapshot(1234, 999, 77, "bloomkv.bytewise")
		var e VersionEdit
		if err := e.Decode(snap.Encode(nil)); err != nil {
			t.Fatal(err)
		}
		if e.Comparer != "bloomkv.bytewise" || !e.HasNextFileNumber || e.NextFileNumber != 1234 ||
			!e.HasLastSequence || e.LastSequence != 999 || !e.HasLogNumber || e.LogNumber != 77 {
			t.Fatalf("snapshot counters: %+v", e)
		}
		b := NewBuilder(nil)
		if err := b.Apply(&e); err != nil {
			t.Fatal(err)
		}
		got, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if !equalVersions(v, got) {
			t.Fatalf("snapshot rebuilds a different version:\n%s\nvs\n%s", v, got)
		}
	}
}

func TestVersionAccessors(t *testing.T) {
	var empty Version
	if empty.String() != "" || empty.AllFileNums() != nil || empty.NumFiles(3) != 0 || empty.LevelBytes(0) != 0 {
		t.Fatal("zero Version is not empty")
	}
	if f := empty.FindFile(1, []byte("a")); f != nil {
		t.Fatal("FindFile on empty version")
	}
	b := NewBuilder(&empty)
	e := VersionEdit{NewFiles: []NewFileEntry{
		{Level: 0, Meta: meta(7, "a", "b", 10, 12)},
		{Level: 0, Meta: meta(3, "a", "b", 1, 2)},
		{Level: 2, Meta: meta(5, "c", "d", 3, 4)},
	}}
	if err := b.Apply(&e); err != nil {
		t.Fatal(err)
	}
	v, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if v.NumFiles(0) != 2 || v.NumFiles(2) != 1 || v.LevelBytes(0) != 1000 || v.LevelBytes(2) != 500 {
		t.Fatalf("counts: %d %d %d %d", v.NumFiles(0), v.NumFiles(2), v.LevelBytes(0), v.LevelBytes(2))
	}
	if got := v.AllFileNums(); !slices.Equal(got, []uint64{3, 5, 7}) {
		t.Fatalf("AllFileNums = %v", got)
	}
	want := `L0 000007 size=700 ["a"#12,SET .. "b"#10,DEL] seqs=[10,12]
L0 000003 size=300 ["a"#2,SET .. "b"#1,DEL] seqs=[1,2]
L2 000005 size=500 ["c"#4,SET .. "d"#3,DEL] seqs=[3,4]
`
	if got := v.String(); got != want {
		t.Fatalf("String:\n%s\nwant:\n%s", got, want)
	}
	if strings.Count(v.String(), "\n") != 3 {
		t.Fatal("one line per file")
	}
}
