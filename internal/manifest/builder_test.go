package manifest

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// checkVersion compares v with the model and checks the ordering rules.
func checkVersion(t *testing.T, v *Version, live map[uint64]modelFile) {
	t.Helper()
	want := make(map[int][]uint64)
	for num, f := range live {
		want[f.level] = append(want[f.level], num)
	}
	for level, files := range v.Files {
		var got []uint64
		for _, f := range files {
			got = append(got, f.FileNum)
			if live[f.FileNum].m != f {
				t.Fatalf("L%d file %d: metadata is not the one added", level, f.FileNum)
			}
		}
		w := slices.Clone(want[level])
		slices.Sort(w)
		g := slices.Clone(got)
		slices.Sort(g)
		if !slices.Equal(w, g) {
			t.Fatalf("L%d files = %v, want %v", level, g, w)
		}
		for i := 1; i < len(files); i++ {
			a, b := files[i-1], files[i]
			if level == 0 {
				if a.LargestSeq < b.LargestSeq || (a.LargestSeq == b.LargestSeq && a.FileNum < b.FileNum) {
					t.Fatalf("L0 out of order: %v before %v", a, b)
				}
			} else if bytes.Compare(base.UserKey(a.Largest), base.UserKey(b.Smallest)) >= 0 {
				t.Fatalf("L%d overlap or disorder: %v before %v", level, a, b)
			}
		}
	}
	var all []uint64
	for num := range live {
		all = append(all, num)
	}
	slices.Sort(all)
	if got := v.AllFileNums(); !slices.Equal(got, all) {
		t.Fatalf("AllFileNums = %v, want %v", got, all)
	}
}

// TestBuilderModel applies random valid edits (adds, deletes, moves between
// levels) and random invalid ones, through a fresh Builder per edit (as the
// db does for each new edit) and through one long-lived Builder (as
// recovery does), and compares both against a model.
func TestBuilderModel(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		g := newVersionGen(seed)
		rng := g.rng
		v := &Version{}
		long := NewBuilder(nil)
		var edits []*VersionEdit
		for step := 0; step < 300; step++ {
			before := v.String()
			if rng.Intn(5) == 0 && len(g.live) > 0 {
				bad := g.invalidEdit()
				if err := NewBuilder(v).Apply(bad); !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("seed %d step %d: Apply(%+v) = %v, want corruption", seed, step, bad, err)
				}
				if err := long.Apply(bad); !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("seed %d step %d: long Apply = %v, want corruption", seed, step, err)
				}
			}
			e, next := g.validEdit()
			b := NewBuilder(v)
			if err := b.Apply(e); err != nil {
				t.Fatalf("seed %d step %d: Apply: %v", seed, step, err)
			}
			nv, err := b.Finish()
			if err != nil {
				t.Fatalf("seed %d step %d: Finish: %v", seed, step, err)
			}
			if err := long.Apply(e); err != nil {
				t.Fatalf("seed %d step %d: long Apply: %v", seed, step, err)
			}
			lv, err := long.Finish()
			if err != nil {
				t.Fatalf("seed %d step %d: long Finish: %v", seed, step, err)
			}
			if after := v.String(); after != before {
				t.Fatalf("seed %d step %d: building changed the base version", seed, step)
			}
			g.live = next
			checkVersion(t, nv, g.live)
			checkVersion(t, lv, g.live)
			if !equalVersions(nv, lv) {
				t.Fatalf("seed %d step %d: per-edit and long builders differ:\n%s\n%s", seed, step, nv, lv)
			}
			v = nv
			edits = append(edits, e)
		}
		// Replaying the encoded edits from scratch (recovery) gives the same
		// version.
		rb := NewBuilder(nil)
		for _, e := range edits {
			var d VersionEdit
			if err := d.Decode(e.Encode(nil)); err != nil {
				t.Fatal(err)
			}
			if err := rb.Apply(&d); err != nil {
				t.Fatal(err)
			}
		}
		rv, err := rb.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if !equalVersions(v, rv) {
			t.Fatalf("seed %d: replay differs:\n%s\n%s", seed, v, rv)
		}
	}
}

// equalVersions reports whether a and b hold equal files in the same order
// (cheaper than cmp on large versions).
func equalVersions(a, b *Version) bool {
	for level := range a.Files {
		if !slices.EqualFunc(a.Files[level], b.Files[level], func(x, y *FileMetadata) bool {
			return x.FileNum == y.FileNum && x.Size == y.Size && x.SmallestSeq == y.SmallestSeq &&
				x.LargestSeq == y.LargestSeq && bytes.Equal(x.Smallest, y.Smallest) && bytes.Equal(x.Largest, y.Largest)
		}) {
			return false
		}
	}
	return true
}

// invalidEdit returns an edit that Apply must reject.
func (g *versionGen) invalidEdit() *VersionEdit {
	nums := g.liveNums()
	f := g.live[nums[g.rng.Intn(len(nums))]]
	fresh := meta(1<<40+uint64(g.rng.Intn(1000)), "a", "b", 1, 1)
	switch g.rng.Intn(6) {
	case 0: // delete a file that does not exist
		return &VersionEdit{DeletedFiles: []DeletedFileEntry{{Level: f.level, FileNum: 1 << 50}}}
	case 1: // delete a live file at the wrong level
		return &VersionEdit{DeletedFiles: []DeletedFileEntry{{Level: (f.level + 1) % NumLevels, FileNum: f.m.FileNum}}}
	case 2: // delete one file twice
		d := DeletedFileEntry{Level: f.level, FileNum: f.m.FileNum}
		return &VersionEdit{DeletedFiles: []DeletedFileEntry{d, d}}
	case 3: // add a live file number again (plus a valid add, which must not stick)
		dup := *f.m
		return &VersionEdit{NewFiles: []NewFileEntry{{Level: 0, Meta: fresh}, {Level: 0, Meta: &dup}}}
	case 4: // add one number twice in an edit
		return &VersionEdit{NewFiles: []NewFileEntry{{Level: 0, Meta: fresh}, {Level: 0, Meta: fresh}}}
	}
	// A valid deletion followed by an invalid level: nothing may stick.
	return &VersionEdit{
		DeletedFiles: []DeletedFileEntry{{Level: f.level, FileNum: f.m.FileNum}},
		NewFiles:     []NewFileEntry{{Level: NumLevels, Meta: fresh}},
	}
}

func TestBuilderApplyErrors(t *testing.T) {
	v0 := &Version{}
	v0.Files[0] = []*FileMetadata{meta(1, "a", "c", 1, 2)}
	v0.Files[2] = []*FileMetadata{meta(2, "d", "f", 3, 3)}
	bad := meta(9, "a", "b", 5, 5)
	bad.SmallestSeq = 6
	for _, tc := range []struct {
		name string
		e    VersionEdit
	}{
		{"delete missing", VersionEdit{DeletedFiles: []DeletedFileEntry{{Level: 0, FileNum: 3}}}},
		{"delete wrong level", VersionEdit{DeletedFiles: []DeletedFileEntry{{Level: 1, FileNum: 2}}}},
		{"delete level out of range", VersionEdit{DeletedFiles: []DeletedFileEntry{{Level: -1, FileNum: 1}}}},
		{"delete twice", VersionEdit{DeletedFiles: []DeletedFileEntry{{Level: 0, FileNum: 1}, {Level: 0, FileNum: 1}}}},
		{"add live number", VersionEdit{NewFiles: []NewFileEntry{{Level: 3, Meta: meta(2, "x", "y", 4, 4)}}}},
		{"add twice", VersionEdit{NewFiles: []NewFileEntry{{Level: 3, Meta: meta(5, "x", "y", 4, 4)}, {Level: 4, Meta: meta(5, "x", "y", 4, 4)}}}},
		{"add nil meta", VersionEdit{NewFiles: []NewFileEntry{{Level: 3}}}},
		{"add level out of range", VersionEdit{NewFiles: []NewFileEntry{{Level: NumLevels, Meta: meta(5, "x", "y", 4, 4)}}}},
		{"add bad metadata", VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: bad}}}},
		{"add bad key", VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: &FileMetadata{FileNum: 5, Smallest: []byte("x"), Largest: []byte("y")}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(v0)
			if err := b.Apply(&tc.e); !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("Apply = %v, want corruption", err)
			}
			v, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(v0, v, cmpopts.IgnoreUnexported(Version{}, FileMetadata{})); diff != "" {
				t.Fatalf("failed Apply changed the builder:\n%s", diff)
			}
		})
	}
}

func TestBuilderMoveAndReAdd(t *testing.T) {
	f := meta(1, "a", "c", 1, 2)
	b := NewBuilder(nil)
	steps := []VersionEdit{
		{NewFiles: []NewFileEntry{{Level: 0, Meta: f}}},
		// Move L0 -> L1 in one edit.
		{DeletedFiles: []DeletedFileEntry{{Level: 0, FileNum: 1}}, NewFiles: []NewFileEntry{{Level: 1, Meta: f}}},
		{DeletedFiles: []DeletedFileEntry{{Level: 1, FileNum: 1}}, NewFiles: []NewFileEntry{{Level: 2, Meta: f}}},
	}
	for i := range steps {
		if err := b.Apply(&steps[i]); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	v, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if v.NumFiles(0) != 0 || v.NumFiles(1) != 0 || v.NumFiles(2) != 1 || v.Files[2][0] != f {
		t.Fatalf("after moves:\n%s", v)
	}
	// From the finished version: delete the base file and re-add it, then
	// delete it again.
	b = NewBuilder(v)
	for _, e := range []VersionEdit{
		{DeletedFiles: []DeletedFileEntry{{Level: 2, FileNum: 1}}, NewFiles: []NewFileEntry{{Level: 2, Meta: f}}},
		{DeletedFiles: []DeletedFileEntry{{Level: 2, FileNum: 1}}},
	} {
		if err := b.Apply(&e); err != nil {
			t.Fatal(err)
		}
	}
	if v2, err := b.Finish(); err != nil || len(v2.AllFileNums()) != 0 {
		t.Fatalf("Finish = %v, %v; want empty", v2, err)
	}
}

func TestBuilderOverlap(t *testing.T) {
	type file struct {
		lo, hi     string
		sseq, lseq uint64
	}
	for _, tc := range []struct {
		name    string
		level   int
		files   []file
		overlap bool
	}{
		{"disjoint", 1, []file{{"a", "c", 1, 1}, {"d", "f", 2, 2}, {"g", "g", 3, 3}}, false},
		{"disjoint unsorted", 3, []file{{"x", "z", 1, 1}, {"a", "b", 2, 2}, {"m", "n", 3, 3}}, false},
		{"nested", 1, []file{{"a", "z", 1, 1}, {"d", "f", 2, 2}}, true},
		{"partial", 2, []file{{"a", "e", 1, 1}, {"d", "f", 2, 2}}, true},
		{"shared boundary user key", 1, []file{{"a", "c", 1, 1}, {"c", "f", 2, 2}}, true},
		{"same single key, versions split (LevelDB)", 6, []file{{"k", "k", 1, 1}, {"k", "k", 2, 2}}, false},
		{"boundary key's versions split (LevelDB)", 1, []file{{"a", "c", 2, 2}, {"c", "f", 1, 1}}, false},
		{"identical", 1, []file{{"a", "b", 1, 1}, {"a", "b", 2, 2}}, true},
		{"L0 may overlap", 0, []file{{"a", "z", 1, 1}, {"d", "f", 2, 2}, {"d", "f", 3, 3}}, false},
		{"empty user key", 1, []file{{"", "", 1, 1}, {"a", "b", 2, 2}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e VersionEdit
			for i, f := range tc.files {
				e.NewFiles = append(e.NewFiles, NewFileEntry{Level: tc.level, Meta: meta(uint64(i+1), f.lo, f.hi, f.sseq, f.lseq)})
			}
			b := NewBuilder(nil)
			if err := b.Apply(&e); err != nil {
				t.Fatal(err)
			}
			v, err := b.Finish()
			if tc.overlap {
				if !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("Finish = %v, %v; want overlap corruption", v, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.NumFiles(tc.level) != len(tc.files) {
				t.Fatalf("got %d files", v.NumFiles(tc.level))
			}
			if shared := strings.Contains(tc.name, "split"); v.SharedBoundaries[tc.level] != shared {
				t.Fatalf("SharedBoundaries[%d] = %v", tc.level, v.SharedBoundaries[tc.level])
			}
		})
	}
	// An overlap created against the base version is caught too.
	v0, _ := NewBuilder(nil).Finish()
	b := NewBuilder(v0)
	if err := b.Apply(&VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: meta(1, "a", "m", 1, 1)}}}); err != nil {
		t.Fatal(err)
	}
	v1, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	b = NewBuilder(v1)
	if err := b.Apply(&VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: meta(2, "m", "z", 2, 2)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Finish(); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("overlap with base: %v", err)
	}
}

func TestL0Order(t *testing.T) {
	// Newest first by LargestSeq; FileNum breaks ties.
	e := VersionEdit{NewFiles: []NewFileEntry{
		{Level: 0, Meta: meta(5, "a", "b", 1, 10)},
		{Level: 0, Meta: meta(3, "a", "b", 11, 20)},
		{Level: 0, Meta: meta(4, "a", "b", 5, 10)},
		{Level: 0, Meta: meta(9, "a", "b", 1, 2)},
	}}
	b := NewBuilder(nil)
	if err := b.Apply(&e); err != nil {
		t.Fatal(err)
	}
	v, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, f := range v.Files[0] {
		got = append(got, f.FileNum)
	}
	if want := []uint64{3, 5, 4, 9}; !slices.Equal(got, want) {
		t.Fatalf("L0 order %v, want %v", got, want)
	}
}
