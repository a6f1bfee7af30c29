package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand"
	"runtime"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/golang/snappy"
)

// smallTable returns a table of a few blocks with every kind of block: data
// blocks both compressed and raw, a filter, properties, metaindex, index.
func smallTable(t testing.TB) ([]byte, model) {
	rng := rand.New(rand.NewSource(42))
	m := randomModel(rng, 60, 6, 40)
	data, _ := buildTable(t, m, WriterOptions{BlockSize: 256, FilterPolicy: bloom10})
	return data, m
}

// checkCorruptReader requires that r answers like the model or fails with
// ErrCorruption: never a wrong entry, never a silent short answer.
func checkCorruptReader(t *testing.T, r *Reader, m model, pos int) {
	t.Helper()
	for _, e := range m {
		if !r.MayContain(base.UserKey(e.key)) {
			t.Fatalf("flip at %d: MayContain false for a present key", pos)
		}
		k, v, ok, err := r.Find(e.key)
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("flip at %d: Find error %v does not wrap ErrCorruption", pos, err)
			}
			continue
		}
		if !ok || !bytes.Equal(k, e.key) || !bytes.Equal(v, e.value) {
			t.Fatalf("flip at %d: Find(%s) = %s %q %v: wrong answer", pos, base.FormatInternalKey(e.key), base.FormatInternalKey(k), v, ok)
		}
	}
	it := r.NewIterator()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(m) || !bytes.Equal(it.Key(), m[i].key) || !bytes.Equal(it.Value(), m[i].value) {
			t.Fatalf("flip at %d: scan entry %d is wrong", pos, i)
		}
		i++
	}
	if err := it.Close(); err != nil {
		if !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("flip at %d: scan error %v does not wrap ErrCorruption", pos, err)
		}
	} else if i != len(m) {
		t.Fatalf("flip at %d: scan ended after %d of %d entries without error", pos, i, len(m))
	}
	i = len(m) - 1
	it = r.NewIterator()
	for ok := it.Last(); ok; ok = it.Prev() {
		if i < 0 || !bytes.Equal(it.Key(), m[i].key) || !bytes.Equal(it.Value(), m[i].value) {
			t.Fatalf("flip at %d: reverse scan entry %d is wrong", pos, i)
		}
		i--
	}
	if err := it.Close(); err != nil {
		if !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("flip at %d: reverse scan error %v does not wrap ErrCorruption", pos, err)
		}
	} else if i != -1 {
		t.Fatalf("flip at %d: reverse scan ended early without error", pos)
	}
}

func TestCorruptionEveryByte(t *testing.T) {
	orig, m := smallTable(t)
	filters := []filter.Policy{bloom10}
	raw, compressed := blockTypes(t, orig)
	if raw == 0 || compressed == 0 {
		t.Fatalf("test table has %d raw and %d compressed data blocks; want both kinds", raw, compressed)
	}
	var openErrs, verifyErrs int
	for pos := range orig {
		data := bytes.Clone(orig)
		data[pos] ^= 0x80
		r, err := NewReader(bytes.NewReader(data), int64(len(data)), ReaderOptions{Filters: filters})
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("flip at %d: NewReader error %v does not wrap ErrCorruption", pos, err)
			}
			openErrs++
			continue
		}
		checkCorruptReader(t, r, m, pos)
		// Every byte of the file is covered by a checksum or a format check.
		if err := r.VerifyChecksums(); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("flip at %d: VerifyChecksums = %v, want corruption", pos, err)
		}
		verifyErrs++
	}
	t.Logf("%d bytes: %d flips caught by NewReader, %d by data block checks", len(orig), openErrs, verifyErrs)
}

func TestTruncation(t *testing.T) {
	orig, _ := smallTable(t)
	for n := 0; n < len(orig); n++ {
		_, err := NewReader(bytes.NewReader(orig[:n]), int64(n), ReaderOptions{})
		if !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("truncated to %d of %d bytes: NewReader error %v", n, len(orig), err)
		}
		// A file that is shorter than the size the caller believes.
		_, err = NewReader(bytes.NewReader(orig[:n]), int64(len(orig)), ReaderOptions{})
		if err == nil {
			t.Fatalf("file cut to %d bytes but claimed whole: no error", n)
		}
	}
	// Extra bytes after the footer move the footer: also an error.
	long := append(bytes.Clone(orig), 0, 0, 0)
	if _, err := NewReader(bytes.NewReader(long), int64(len(long)), ReaderOptions{}); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("trailing bytes: %v", err)
	}
}

// allocDuring returns the bytes allocated while f runs.
func allocDuring(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func TestHugeHandles(t *testing.T) {
	orig, _ := smallTable(t)
	fend := len(orig) - FooterLen
	for _, tc := range []struct {
		name             string
		metaindex, index blockHandle
	}{
		{"huge index size", blockHandle{0, 10}, blockHandle{0, 1 << 40}},
		{"max index size", blockHandle{0, 10}, blockHandle{0, 1<<64 - 1}},
		{"wrapping index", blockHandle{0, 10}, blockHandle{1<<64 - 3, 10}},
		{"index past end", blockHandle{0, 10}, blockHandle{uint64(fend), 1}},
		{"huge metaindex", blockHandle{0, 1 << 40}, blockHandle{100, 10}},
		{"metaindex after index", blockHandle{200, 10}, blockHandle{100, 10}},
	} {
		data := bytes.Clone(orig)
		copy(data[fend:], footer{metaindex: tc.metaindex, index: tc.index, version: FormatVersion}.encode())
		var err error
		alloc := allocDuring(func() {
			_, err = NewReader(bytes.NewReader(data), int64(len(data)), ReaderOptions{})
		})
		if !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("%s: NewReader error %v", tc.name, err)
		}
		if alloc > 64<<10 {
			t.Fatalf("%s: NewReader allocated %d bytes on a %d-byte file", tc.name, alloc, len(data))
		}
	}
}

// storedBlock frames payload as a stored block with a valid trailer.
func storedBlock(payload []byte, typ Compression) []byte {
	b := append(bytes.Clone(payload), byte(typ))
	return binary.LittleEndian.AppendUint32(b, checksum(b))
}

func TestHostileSnappyLength(t *testing.T) {
	// A snappy block with a valid checksum that claims 512 MiB decoded.
	payload := binary.AppendUvarint(nil, 512<<20)
	payload = append(payload, 0, 'x')
	var err error
	alloc := allocDuring(func() {
		_, err = decodeStoredBlock(FormatBloomKV, storedBlock(payload, SnappyCompression), blockHandle{0, uint64(len(payload))}, false)
	})
	if !errors.Is(err, base.ErrCorruption) || alloc > 64<<10 {
		t.Fatalf("err %v, allocated %d", err, alloc)
	}
	// A genuine snappy block decodes; an unknown type does not.
	raw := bytes.Repeat([]byte("abcdefgh"), 1000)
	enc := snappy.Encode(nil, raw)
	got, err := decodeStoredBlock(FormatBloomKV, storedBlock(enc, SnappyCompression), blockHandle{0, uint64(len(enc))}, false)
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("valid snappy block: %v", err)
	}
	if _, err := decodeStoredBlock(FormatBloomKV, storedBlock(raw, 7), blockHandle{0, uint64(len(raw))}, false); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("unknown compression type: %v", err)
	}
	// Snappy that lies about its length within the ratio bound.
	bad := append(binary.AppendUvarint(nil, 100), enc[2:]...)
	if _, err := decodeStoredBlock(FormatBloomKV, storedBlock(bad, SnappyCompression), blockHandle{0, uint64(len(bad))}, false); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("snappy with wrong length: %v", err)
	}
}

func TestBlockDecoderCorruption(t *testing.T) {
	var bb blockBuilder
	bb.restartInterval = 4
	var keys [][]byte
	for i := 0; i < 40; i++ {
		k := base.MakeInternalKey([]byte{byte('a' + i/10), byte('a' + i%10)}, 1, base.KindSet)
		keys = append(keys, k)
		bb.add(k, []byte{byte(i)})
	}
	blk := bytes.Clone(bb.finish())
	// Every truncation and every single-byte change: no panic, and any
	// entry returned has a plausible shape (the caller relies on checksums
	// for the rest).
	for n := 0; n <= len(blk); n++ {
		walkBlock(blk[:n], keys[5])
	}
	for pos := range blk {
		for _, x := range []byte{0x80, 0xff, 0x01} {
			d := bytes.Clone(blk)
			d[pos] ^= x
			walkBlock(d, keys[17])
		}
	}
	// Restart counts that cannot fit.
	for _, n := range []uint32{0, 1 << 30, 1<<32 - 1, uint32(len(blk))} {
		d := bytes.Clone(blk)
		binary.LittleEndian.PutUint32(d[len(d)-4:], n)
		var it blockIter
		if err := it.init(false, d); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("restart count %d: %v", n, err)
		}
	}
}

// walkBlock runs every operation of a block iterator over arbitrary bytes,
// with bounded loops, and returns how many entries a forward scan saw.
func walkBlock(data, target []byte) int {
	var it blockIter
	if it.init(false, data) != nil {
		return 0
	}
	n := 0
	for ok := it.First(); ok && n <= len(data); ok = it.Next() {
		n++
	}
	m := 0
	for ok := it.Last(); ok && m <= len(data); ok = it.Prev() {
		m++
	}
	if it.SeekGE(target) {
		it.Next()
		if it.Valid() {
			it.Prev()
		}
	}
	if it.SeekLT(target) {
		it.Prev()
	}
	if n > len(data) || m > len(data) {
		panic("block iteration did not terminate")
	}
	return n
}

// blockTypes counts the raw and snappy data blocks of a table.
func blockTypes(t testing.TB, data []byte) (raw, compressed int) {
	r := openTable(t, data, ReaderOptions{})
	var idx blockIter
	idx.init(false, r.index)
	for ok := idx.First(); ok; ok = idx.Next() {
		h, _, err := decodeHandle(idx.Value())
		if err != nil {
			t.Fatal(err)
		}
		switch Compression(data[h.offset+h.size]) {
		case NoCompression:
			raw++
		case SnappyCompression:
			compressed++
		}
	}
	return raw, compressed
}
