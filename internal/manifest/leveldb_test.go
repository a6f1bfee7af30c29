package manifest

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// levelDBEdit encodes, field by field as LevelDB 1.23's VersionEdit::EncodeTo
// lays them out, an edit with a comparator, log number, next file number,
// last sequence, a compact pointer, a deleted file and two new files (tag 7).
func levelDBEdit() []byte {
	var b []byte
	str := func(s []byte) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, 1)
	str([]byte("leveldb.BytewiseComparator"))
	b = binary.AppendUvarint(b, 2)
	b = binary.AppendUvarint(b, 12)
	b = binary.AppendUvarint(b, 3)
	b = binary.AppendUvarint(b, 14)
	b = binary.AppendUvarint(b, 4)
	b = binary.AppendUvarint(b, 500)
	b = binary.AppendUvarint(b, 5)
	b = binary.AppendUvarint(b, 1)
	str(base.MakeInternalKey([]byte("k"), 40, base.KindSet))
	b = binary.AppendUvarint(b, 6)
	b = binary.AppendUvarint(b, 1)
	b = binary.AppendUvarint(b, 9)
	for i, f := range []struct {
		level, num, size uint64
		lo, hi           string
	}{{0, 11, 4096, "a", "m"}, {1, 13, 8192, "c", "z"}} {
		b = binary.AppendUvarint(b, 7)
		b = binary.AppendUvarint(b, f.level)
		b = binary.AppendUvarint(b, f.num)
		b = binary.AppendUvarint(b, f.size)
		str(base.MakeInternalKey([]byte(f.lo), uint64(100+i), base.KindSet))
		str(base.MakeInternalKey([]byte(f.hi), uint64(7+i), base.KindDelete))
	}
	return b
}

// TestLevelDBEditDecode: a MANIFEST record as LevelDB writes it decodes,
// its tables marked as having unknown sequence numbers, and re-encodes to
// the same bytes with EncodeLevelDB (field order aside, which both keep).
func TestLevelDBEditDecode(t *testing.T) {
	enc := levelDBEdit()
	var e VersionEdit
	if err := e.Decode(enc); err != nil {
		t.Fatal(err)
	}
	if e.Comparer != "leveldb.BytewiseComparator" || e.LogNumber != 12 || e.NextFileNumber != 14 ||
		e.LastSequence != 500 || len(e.CompactPointers) != 1 || len(e.DeletedFiles) != 1 || len(e.NewFiles) != 2 {
		t.Fatalf("decoded %+v", e)
	}
	for _, n := range e.NewFiles {
		m := n.Meta
		if !m.SeqsUnknown || m.SmallestSeq != 0 || m.LargestSeq != base.MaxSeqNum {
			t.Fatalf("table %d: seqs %d..%d unknown=%v", m.FileNum, m.SmallestSeq, m.LargestSeq, m.SeqsUnknown)
		}
	}
	for _, encode := range []func(*VersionEdit) []byte{
		func(e *VersionEdit) []byte { b, err := e.EncodeLevelDB(nil); must(t, err); return b },
		func(e *VersionEdit) []byte { return e.Encode(nil) }, // unknown seqs keep tag 7
	} {
		if got := encode(&e); !slices.Equal(got, enc) {
			t.Fatalf("re-encoded\n% x\nwant\n% x", got, enc)
		}
	}
	// Truncating the last table's payload anywhere is corruption.
	for n := len(enc) - 1; n > len(enc)-20; n-- {
		if err := e.Decode(enc[:n]); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestEncodeLevelDB: tables with known sequence numbers lose them (LevelDB
// has no field for them) and come back as unknown; a table with range
// tombstones is refused and nothing is appended.
func TestEncodeLevelDB(t *testing.T) {
	m := meta(5, "a", "f", 3, 9)
	e := &VersionEdit{Comparer: "leveldb.BytewiseComparator", NewFiles: []NewFileEntry{{Level: 2, Meta: m}}}
	enc, err := e.EncodeLevelDB([]byte("x"))
	must(t, err)
	var got VersionEdit
	must(t, got.Decode(enc[1:]))
	g := got.NewFiles[0].Meta
	if !g.SeqsUnknown || g.FileNum != 5 || g.Size != m.Size || !slices.Equal(g.Smallest, m.Smallest) ||
		!slices.Equal(g.Largest, m.Largest) || got.NewFiles[0].Level != 2 {
		t.Fatalf("got %v", g)
	}
	m.RangeDels = 1
	out, err := e.EncodeLevelDB([]byte("x"))
	if !errors.Is(err, ErrNotLevelDB) || string(out) != "x" {
		t.Fatalf("a table with range tombstones: %q, %v", out, err)
	}
	// A SeqsUnknown table must carry the unknown bounds.
	bad := meta(6, "a", "b", 0, 5)
	bad.SeqsUnknown = true
	if bad.check() == nil {
		t.Fatal("check accepted unknown seqs with a recorded range")
	}
}

// TestL0OrderUnknownSeqs: level 0 orders a table with unknown sequence
// numbers by file number against every other table (LevelDB's rule), and
// tables with known numbers among themselves by LargestSeq.
func TestL0OrderUnknownSeqs(t *testing.T) {
	unknown := func(num uint64) *FileMetadata {
		m := meta(num, "a", "b", 0, 0)
		m.UnknownSeqs()
		return m
	}
	e := VersionEdit{NewFiles: []NewFileEntry{
		{Level: 0, Meta: unknown(4)},
		{Level: 0, Meta: meta(12, "a", "b", 600, 700)}, // flushed after reopening
		{Level: 0, Meta: unknown(7)},
		{Level: 0, Meta: meta(10, "a", "b", 501, 599)},
		{Level: 0, Meta: unknown(2)},
	}}
	b := NewBuilder(nil)
	must(t, b.Apply(&e))
	v, err := b.Finish()
	must(t, err)
	var got []uint64
	for _, f := range v.Files[0] {
		got = append(got, f.FileNum)
	}
	if want := []uint64{12, 10, 7, 4, 2}; !slices.Equal(got, want) {
		t.Fatalf("L0 order %v, want %v", got, want)
	}
}

// TestFindFilesSharedBoundaries: on a level whose tables split a key's
// versions (as LevelDB can write), FindFiles returns every table that may
// hold the key, newest first; elsewhere one table or none.
func TestFindFilesSharedBoundaries(t *testing.T) {
	e := VersionEdit{NewFiles: []NewFileEntry{
		{Level: 2, Meta: meta(1, "a", "k", 9, 9)}, // ends with k#9
		{Level: 2, Meta: meta(2, "k", "k", 5, 7)}, // k#7 .. k#5
		{Level: 2, Meta: meta(3, "k", "p", 3, 4)}, // starts with k#4
		{Level: 2, Meta: meta(4, "q", "z", 1, 1)},
		{Level: 3, Meta: meta(5, "a", "k", 1, 1)},
		{Level: 3, Meta: meta(6, "l", "z", 1, 1)},
	}}
	b := NewBuilder(nil)
	must(t, b.Apply(&e))
	v, err := b.Finish()
	must(t, err)
	if !v.SharedBoundaries[2] || v.SharedBoundaries[3] {
		t.Fatalf("SharedBoundaries = %v", v.SharedBoundaries)
	}
	nums := func(fs []*FileMetadata) (out []uint64) {
		for _, f := range fs {
			out = append(out, f.FileNum)
		}
		return out
	}
	for _, tc := range []struct {
		level int
		key   string
		want  []uint64
	}{
		{2, "k", []uint64{1, 2, 3}},
		{2, "b", []uint64{1}},
		{2, "m", []uint64{3}},
		{2, "pa", nil},
		{2, "r", []uint64{4}},
		{3, "k", []uint64{5}},
		{3, "kk", nil},
	} {
		if got := nums(v.FindFiles(tc.level, []byte(tc.key))); !slices.Equal(got, tc.want) {
			t.Errorf("FindFiles(L%d, %q) = %v, want %v", tc.level, tc.key, got, tc.want)
		}
	}
	// An edit that leaves level 2 alone keeps its flag.
	b = NewBuilder(v)
	must(t, b.Apply(&VersionEdit{DeletedFiles: []DeletedFileEntry{{Level: 3, FileNum: 6}}}))
	v2, err := b.Finish()
	must(t, err)
	if !v2.SharedBoundaries[2] {
		t.Fatal("SharedBoundaries lost by an edit of another level")
	}
}
