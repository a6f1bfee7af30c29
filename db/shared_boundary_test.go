package db

import (
	"errors"
	"fmt"
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

// sbTable is one table of a store written by hand: its number, level and
// entries in order.
type sbTable struct {
	num   uint64
	level int
	ents  []sbEntry
}

// writeSharedBoundaryStore writes, by hand, a store whose level 1 splits
// the versions of "k" between tables 5 (k#20 "new") and 6 (k#15 "old"),
// as LevelDB does when a snapshot kept both through a compaction, above a
// level-2 table holding k#1. Its MANIFEST is LevelDB's (tag 7).
func writeSharedBoundaryStore(t *testing.T, dir string) {
	writeHandStore(t, dir, []sbTable{
		{5, 1, []sbEntry{{"a", 10, base.KindSet, "a10"}, {"k", 20, base.KindSet, "new"}}},
		{6, 1, []sbEntry{{"k", 15, base.KindSet, "old"}, {"m", 16, base.KindSet, "m16"}}},
		{7, 2, []sbEntry{{"b", 2, base.KindSet, "b2"}, {"k", 1, base.KindSet, "oldest"}, {"z", 3, base.KindSet, "z3"}}},
	})
}

// writeHandStore writes the tables and a LevelDB-encoded MANIFEST naming
// them (last sequence 30), with the default block size.
func writeHandStore(t *testing.T, dir string, tables []sbTable) {
	t.Helper()
	writeHandStoreWith(t, dir, tables, 30, 0)
}

// writeHandStoreWith writes the tables, in blocks of blockSize bytes (0:
// the default), and a LevelDB-encoded MANIFEST naming them with last
// sequence lastSeq; the log, MANIFEST and next file numbers follow the
// largest table number.
func writeHandStoreWith(t *testing.T, dir string, tables []sbTable, lastSeq uint64, blockSize int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	next := uint64(0)
	for _, tb := range tables {
		next = max(next, tb.num+1)
	}
	edit := &manifest.VersionEdit{
		Comparer: levelDBComparerName, LogNumber: next, HasLogNumber: true,
		NextFileNumber: next + 2, HasNextFileNumber: true, LastSequence: lastSeq, HasLastSequence: true,
	}
	for _, tb := range tables {
		name := filepath.Join(dir, filepath.Base(ldbTableFileName("", tb.num)))
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w := sstable.NewWriter(f, sstable.WriterOptions{BlockSize: blockSize})
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
	mname := fmt.Sprintf("MANIFEST-%06d", next+1)
	mf, err := os.Create(filepath.Join(dir, mname))
	if err != nil {
		t.Fatal(err)
	}
	if err := wal.NewWriter(mf).AddRecord(rec); err != nil {
		t.Fatal(err)
	}
	mf.Close()
	if err := os.WriteFile(filepath.Join(dir, "CURRENT"), []byte(mname+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%06d.log", next)), nil, 0o644); err != nil {
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

// TestSharedBoundaryTombstone is the review's case: LevelDB split "m"
// between two tables of the last level, the first ending with m's
// tombstone (#30), the second starting with an older value (#19). A
// compaction that takes the first table alone (a range compaction of its
// other keys, in place or from the level above) used to drop the
// tombstone, as nothing deeper holds "m", and bring the older value back.
func TestSharedBoundaryTombstone(t *testing.T) {
	stores := []sbTable{
		{5, 2, []sbEntry{{"a0", 10, base.KindSet, "a0"}, {"a5", 11, base.KindSet, "a5"}, {"m", 30, base.KindDelete, ""}}},
		{6, 2, []sbEntry{{"m", 19, base.KindSet, "old"}, {"z0", 12, base.KindSet, "z0"}}},
	}
	want := map[string]string{"a0": "a0", "a5": "a5", "z0": "z0"}
	for _, how := range []string{"in place", "from the level above"} {
		t.Run(how, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			writeHandStore(t, dir, stores)
			d, err := Open(dir, &Options{DisableAutomaticCompactions: true})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if _, err := d.Get([]byte("m"), nil); !errors.Is(err, ErrNotFound) {
				t.Fatalf("opened: Get(m) = %v", err)
			}
			if how == "from the level above" {
				// A table in level 1 that overlaps table 5 only.
				if err := d.Put([]byte("a3"), []byte("a3"), nil); err != nil {
					t.Fatal(err)
				}
				want["a3"] = "a3"
				if err := d.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.CompactRange([]byte("a"), []byte("b")); err != nil {
				t.Fatal(err)
			}
			if v, err := d.Get([]byte("m"), nil); !errors.Is(err, ErrNotFound) {
				t.Fatalf("after CompactRange(a, b): Get(m) = %q, %v; the deleted key came back", v, err)
			}
			checkFormatModel(t, d, want)
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			checkFormatModel(t, d, want)
		})
	}
}
