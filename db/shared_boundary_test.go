package db

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/wal"
)

type sbEntry struct {
	key  string
	seq  uint64
	kind base.Kind
	val  string
}

// writeSharedBoundaryStore writes, by hand, a store whose level 1 splits
// the versions of "k" between tables 5 (k#20 "new") and 6 (k#15 "old"),
// as LevelDB does when a snapshot kept both through a compaction, above a
// level-2 table holding k#1. Its MANIFEST is LevelDB's (tag 7).
func writeSharedBoundaryStore(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tables := []struct {
		num   uint64
		level int
		ents  []sbEntry
	}{
		{5, 1, []sbEntry{{"a", 10, base.KindSet, "a10"}, {"k", 20, base.KindSet, "new"}}},
		{6, 1, []sbEntry{{"k", 15, base.KindSet, "old"}, {"m", 16, base.KindSet, "m16"}}},
		{7, 2, []sbEntry{{"b", 2, base.KindSet, "b2"}, {"k", 1, base.KindSet, "oldest"}, {"z", 3, base.KindSet, "z3"}}},
	}
	edit := &manifest.VersionEdit{
		Comparer: levelDBComparerName, LogNumber: 0, HasLogNumber: true,
		NextFileNumber: 10, HasNextFileNumber: true, LastSequence: 30, HasLastSequence: true,
	}
	for _, tb := range tables {
		name := filepath.Join(dir, filepath.Base(ldbTableFileName("", tb.num)))
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w := sstable.NewWriter(f, sstable.WriterOptions{})
		for _, e := range tb.ents {
			if err := w.Add(base.MakeInternalKey([]byte(e.key), e.seq, e.kind), []byte(e.val)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		f.Close()
		first, last := tb.ents[0], tb.ents[len(tb.ents)-1]
		m := &manifest.FileMetadata{FileNum: tb.num, Size: uint64(fi.Size()),
			Smallest: base.MakeInternalKey([]byte(first.key), first.seq, first.kind),
			Largest:  base.MakeInternalKey([]byte(last.key), last.seq, last.kind)}
		m.UnknownSeqs()
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: tb.level, Meta: m})
	}
	rec, err := edit.EncodeLevelDB(nil)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := os.Create(filepath.Join(dir, "MANIFEST-000009"))
	if err != nil {
		t.Fatal(err)
	}
	if err := wal.NewWriter(mf).AddRecord(rec); err != nil {
		t.Fatal(err)
	}
	mf.Close()
	if err := os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("MANIFEST-000009\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "000008.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSharedBoundaryLevel: a level that splits a key's versions between
// two tables opens, reads the newest version, and a compaction of a range
// that touches only the first table takes the second along, so the older
// version never ends up above the newer one (LevelDB's bug before its
// AddBoundaryInputs).
func TestSharedBoundaryLevel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	writeSharedBoundaryStore(t, dir)
	d, err := Open(dir, &Options{FilterPolicy: nil, DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	want := map[string]string{"a": "a10", "b": "b2", "k": "new", "m": "m16", "z": "z3"}
	check := func(when string) {
		t.Helper()
		for k, v := range want {
			got, err := d.Get([]byte(k), nil)
			if err != nil || string(got) != v {
				t.Fatalf("%s: Get(%q) = %q, %v; want %q", when, k, got, err, v)
			}
		}
		keys := [][]byte{[]byte("k"), []byte("a"), []byte("zz"), []byte("m")}
		vals, errs := d.MultiGet(keys, nil)
		for i, k := range keys {
			v, ok := want[string(k)]
			if ok != (errs[i] == nil) || string(vals[i]) != v {
				t.Fatalf("%s: MultiGet %q = %q, %v", when, k, vals[i], errs[i])
			}
			if !ok && !errors.Is(errs[i], ErrNotFound) {
				t.Fatalf("%s: MultiGet %q: %v", when, k, errs[i])
			}
		}
		checkFormatModel(t, d, want)
		checkReverse(t, d, want)
	}
	check("opened")
	if v := d.readStateForTest().v; !v.SharedBoundaries[1] || len(v.FindFiles(1, []byte("k"))) != 2 {
		t.Fatalf("level 1: SharedBoundaries %v", v.SharedBoundaries)
	}
	// [a, b] overlaps table 5 only; table 6 must come along.
	if err := d.CompactRange([]byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	check("after CompactRange(a, b)")
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	check("after a full compaction")
}

// readStateForTest returns the current read state (its version is
// immutable, so it may be looked at after the reference is dropped).
func (d *DB) readStateForTest() *readState {
	ref := d.loadReadState()
	defer ref.unref()
	return ref.rs
}
