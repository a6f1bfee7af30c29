package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand"
	"runtime"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestEditRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 500; i++ {
		want := randEdit(rng)
		prefix := []byte("prefix")
		enc := want.Encode(append([]byte(nil), prefix...))
		if !bytes.HasPrefix(enc, prefix) {
			t.Fatalf("Encode clobbered dst")
		}
		enc = enc[len(prefix):]
		var got VersionEdit
		if err := got.Decode(enc); err != nil {
			t.Fatalf("edit %d: Decode: %v\n%+v", i, err, want)
		}
		if diff := cmp.Diff(want, &got, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(FileMetadata{})); diff != "" {
			t.Fatalf("edit %d: round trip mismatch (-want +got):\n%s", i, diff)
		}
		// The decoded edit must not alias the input.
		orig := slices.Clone(enc)
		for j := range enc {
			enc[j] ^= 0xff
		}
		if !bytes.Equal(got.Encode(nil), orig) {
			t.Fatalf("edit %d: decoded edit aliases its input", i)
		}
	}
}

// TestEditRangeDels: a table with range tombstones is written under its
// own tag (a store without any keeps the old encoding), and a count of
// zero under that tag is corruption.
func TestEditRangeDels(t *testing.T) {
	m := &FileMetadata{FileNum: 7, Size: 100, SmallestSeq: 3, LargestSeq: 9,
		Smallest: base.MakeInternalKey([]byte("a"), 9, base.KindRangeDelete),
		Largest:  base.MakeInternalKey([]byte("m"), 9, base.KindRangeDelete)}
	plain := (&VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: m}}}).Encode(nil)
	if plain[0] != tagNewFile {
		t.Fatalf("a table without tombstones got tag %d", plain[0])
	}
	m.RangeDels = 2
	enc := (&VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: m}}}).Encode(nil)
	if enc[0] != tagNewFileRangeDels || enc[len(enc)-1] != 2 {
		t.Fatalf("a table with tombstones: % x", enc)
	}
	var got VersionEdit
	if err := got.Decode(enc); err != nil || got.NewFiles[0].Meta.RangeDels != 2 {
		t.Fatalf("Decode: %v %+v", err, got.NewFiles)
	}
	enc[len(enc)-1] = 0
	if err := got.Decode(enc); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("a zero count under tag %d: %v", tagNewFileRangeDels, err)
	}
	if err := got.Decode(enc[:len(enc)-1]); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("a missing count: %v", err)
	}
}

func TestEditEmpty(t *testing.T) {
	var e VersionEdit
	if enc := e.Encode(nil); len(enc) != 0 {
		t.Fatalf("empty edit encodes to %x", enc)
	}
	e.HasLogNumber = true
	if err := e.Decode(nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(VersionEdit{}, e); diff != "" {
		t.Fatalf("Decode(nil) did not reset the edit:\n%s", diff)
	}
}

// field builds raw encoded fields for the corruption table.
func field(vals ...any) []byte {
	var b []byte
	for _, v := range vals {
		switch v := v.(type) {
		case int:
			b = binary.AppendUvarint(b, uint64(v))
		case uint64:
			b = binary.AppendUvarint(b, v)
		case string: // length-prefixed
			b = appendBytes(b, []byte(v))
		case []byte: // raw
			b = append(b, v...)
		default:
			panic(v)
		}
	}
	return b
}

func TestEditDecodeErrors(t *testing.T) {
	ik := func(u string, seq uint64) string { return string(base.MakeInternalKey([]byte(u), seq, base.KindSet)) }
	newFile := func(level int, lo, hi string, sseq, lseq uint64) []byte {
		return field(tagNewFile, level, 7, 100, lo, hi, sseq, lseq)
	}
	good := newFile(1, ik("a", 5), ik("b", 3), 3, 5)
	var e VersionEdit
	if err := e.Decode(good); err != nil {
		t.Fatalf("baseline new file: %v", err)
	}
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"unknown tag", field(99, 1)},
		{"leveldb obsolete tag 8", field(8, 1, ik("a", 1))},
		{"leveldb new file tag 7 truncated", field(7, 1, 7, 100, ik("a", 1))},
		{"tag 0", field(0)},
		{"truncated varint", []byte{tagLogNumber, 0x80}},
		{"varint overflow", append([]byte{tagLogNumber}, bytes.Repeat([]byte{0xff}, 10)...)},
		{"tag overflow", bytes.Repeat([]byte{0x80}, 11)},
		{"missing value", field(tagNextFileNumber)},
		{"duplicate log number", field(tagLogNumber, 1, tagLogNumber, 2)},
		{"duplicate comparer", field(tagComparer, "a", tagComparer, "a")},
		{"duplicate last sequence", field(tagLastSequence, 1, tagLastSequence, 1)},
		{"duplicate next file", field(tagNextFileNumber, 1, tagNextFileNumber, 1)},
		{"duplicate prev log", field(tagPrevLogNumber, 1, tagPrevLogNumber, 1)},
		{"empty comparer", field(tagComparer, "")},
		{"comparer length past end", field(tagComparer, 5, []byte("abc"))},
		{"huge comparer length", field(tagComparer, uint64(1)<<62, []byte("abc"))},
		{"max comparer length", field(tagComparer, ^uint64(0), []byte("abc"))},
		{"last sequence too big", field(tagLastSequence, base.MaxSeqNum+1)},
		{"compact pointer level", field(tagCompactPointer, NumLevels, ik("a", 1))},
		{"compact pointer huge level", field(tagCompactPointer, ^uint64(0), ik("a", 1))},
		{"compact pointer short key", field(tagCompactPointer, 1, "short")},
		{"compact pointer bad kind", field(tagCompactPointer, 1, string(base.MakeInternalKey([]byte("a"), 1, 9)))},
		{"deleted file level", field(tagDeletedFile, NumLevels, 3)},
		{"deleted file truncated", field(tagDeletedFile, 1)},
		{"new file level", newFile(NumLevels, ik("a", 5), ik("b", 3), 3, 5)},
		{"new file truncated", good[:len(good)-1]},
		{"new file smallest not ikey", newFile(1, "a", ik("b", 3), 3, 5)},
		{"new file largest not ikey", newFile(1, ik("a", 5), "1234567", 3, 5)},
		{"new file smallest > largest", newFile(1, ik("b", 5), ik("a", 3), 3, 5)},
		{"new file same ukey, wrong seq order", newFile(1, ik("a", 3), ik("a", 5), 3, 5)},
		{"new file seq range inverted", newFile(1, ik("a", 5), ik("b", 5), 6, 5)},
		{"new file seq above max", newFile(1, ik("a", 5), ik("b", 5), 5, base.MaxSeqNum+1)},
		{"new file key seq outside range", newFile(1, ik("a", 9), ik("b", 3), 3, 5)},
		{"new file key length past end", field(tagNewFile, 1, 7, 100, 30, []byte("abc"))},
		{"trailing garbage", append(append([]byte(nil), good...), 0x80)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := VersionEdit{HasLogNumber: true, LogNumber: 4}
			err := e.Decode(tc.in)
			if err == nil {
				t.Fatalf("Decode(%x) succeeded: %+v", tc.in, e)
			}
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error %v does not wrap ErrCorruption", err)
			}
			if diff := cmp.Diff(VersionEdit{}, e); diff != "" {
				t.Fatalf("failed Decode left a non-zero edit:\n%s", diff)
			}
		})
	}
}

// decodeChecked decodes in and checks the structural bounds that keep a
// hostile input from inflating the result: every decoded byte string and
// entry is paid for by input bytes.
func decodeChecked(t testing.TB, in []byte) {
	var e VersionEdit
	if err := e.Decode(in); err != nil {
		if !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("Decode(%x): error %v does not wrap ErrCorruption", in, err)
		}
		return
	}
	n := len(e.Comparer) + len(e.CompactPointers) + len(e.DeletedFiles) + len(e.NewFiles)
	for _, cp := range e.CompactPointers {
		n += len(cp.Key)
	}
	for _, nf := range e.NewFiles {
		n += len(nf.Meta.Smallest) + len(nf.Meta.Largest)
		if err := nf.Meta.check(); err != nil {
			t.Fatalf("Decode(%x) accepted bad metadata: %v", in, err)
		}
	}
	if n > len(in) {
		t.Fatalf("Decode(%x): %d decoded bytes and entries from %d input bytes", in, n, len(in))
	}
	// Re-encoding is stable: the encoding is a canonical form of the edit
	// (TestEditRoundTrip checks that it loses nothing).
	enc := e.Encode(nil)
	var e2 VersionEdit
	if err := e2.Decode(enc); err != nil {
		t.Fatalf("re-decode of %x: %v", enc, err)
	}
	if enc2 := e2.Encode(nil); !bytes.Equal(enc, enc2) {
		t.Fatalf("re-encode of Decode(%x) changed the edit: %x then %x", in, enc, enc2)
	}
}

// TestEditDecodeMutations decodes every truncation and every single-byte
// change of encoded edits: each must give an error or a valid edit, never
// a panic, and the memory allocated stays proportional to the input.
func TestEditDecodeMutations(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	decodes, inBytes := 0, 0
	// The first edits get every byte value at every position; the rest a
	// few bit patterns.
	allX := []byte{}
	for x := 1; x < 256; x++ {
		allX = append(allX, byte(x))
	}
	someX := []byte{0x01, 0x02, 0x10, 0x40, 0x7f, 0x80, 0xc0, 0xff}
	for i := 0; i < 40; i++ {
		e := randEdit(rng)
		for len(e.NewFiles) == 0 || len(e.DeletedFiles) == 0 {
			e = randEdit(rng)
		}
		xs := someX
		if i < 3 {
			xs = allX
		}
		enc := e.Encode(nil)
		for n := 0; n < len(enc); n++ {
			decodeChecked(t, enc[:n])
			decodes++
			inBytes += n
		}
		buf := make([]byte, len(enc))
		for pos := range enc {
			for _, x := range xs {
				copy(buf, enc)
				buf[pos] ^= x
				decodeChecked(t, buf)
				decodes++
				inBytes += len(buf)
			}
		}
	}
	runtime.ReadMemStats(&ms1)
	alloc := ms1.TotalAlloc - ms0.TotalAlloc
	// decodeChecked decodes twice and encodes twice; allow generous
	// per-byte and per-call overheads. A single trusted huge length would
	// blow far past this.
	limit := uint64(decodes)*1024 + uint64(inBytes)*32
	t.Logf("%d decodes of %d bytes allocated %d bytes (limit %d)", decodes, inBytes, alloc, limit)
	if alloc > limit {
		t.Fatalf("allocated %d bytes for %d decodes of %d input bytes", alloc, decodes, inBytes)
	}
}

func FuzzVersionEditDecode(f *testing.F) {
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 8; i++ {
		f.Add(randEdit(rng).Encode(nil))
	}
	v, _ := randomVersion(4, 10)
	f.Add(v.Snapshot(100, 50, 7, "bloomkv.bytewise").Encode(nil))
	f.Add([]byte{})
	f.Add(field(tagComparer, ^uint64(0)))
	f.Add(levelDBEdit())
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeChecked(t, data)
		var e VersionEdit
		if e.Decode(data) != nil {
			return
		}
		// A decoded edit applied to an empty version must not panic.
		b := NewBuilder(nil)
		if err := b.Apply(&e); err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("Apply error %v does not wrap ErrCorruption", err)
			}
			return
		}
		v, err := b.Finish()
		if err != nil {
			return
		}
		_ = v.String()
		for level := 1; level < NumLevels; level++ {
			for _, f := range v.Files[level] {
				if got := v.FindFiles(level, base.UserKey(f.Smallest)); !slices.Contains(got, f) {
					t.Fatalf("FindFiles(L%d, smallest of %d) = %v", level, f.FileNum, got)
				}
			}
		}
	})
}
