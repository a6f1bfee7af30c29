package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"testing"
	"testing/iotest"

	"github.com/bloomkv/bloomkv/internal/base"
)

// ---- helpers ----

// makeRecord returns a record of size n whose bytes depend on seed, so that
// records of equal size still differ.
func makeRecord(seed, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// writeLog writes recs and returns the log, and for each record the file
// offsets where its writing started and ended.
func writeLog(t testing.TB, recs [][]byte) (log []byte, starts, ends []int64) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, r := range recs {
		starts = append(starts, w.Size())
		if err := w.AddRecord(r); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, w.Size())
	}
	if w.Size() != int64(buf.Len()) {
		t.Fatalf("Size() = %d, wrote %d bytes", w.Size(), buf.Len())
	}
	return buf.Bytes(), starts, ends
}

// readResult is what a full pass of a Reader over a log produced.
type readResult struct {
	recs    [][]byte // copies of the returned records
	errs    int      // corruption errors returned before EOF
	order   []int    // -1 for each corruption error, else the index into recs
	dropped int64
}

// readAll reads until io.EOF, failing the test on any error that is neither
// io.EOF nor a corruption. It also checks that EOF is sticky.
func readAll(t testing.TB, src io.Reader) readResult {
	t.Helper()
	r := NewReader(src)
	var res readResult
	for i := 0; ; i++ {
		if i > 1<<22 {
			t.Fatal("reader does not terminate")
		}
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			res.errs++
			res.order = append(res.order, -1)
			continue
		}
		res.order = append(res.order, len(res.recs))
		res.recs = append(res.recs, bytes.Clone(rec))
	}
	for range 2 {
		if rec, err := r.Next(); err != io.EOF || rec != nil {
			t.Fatalf("Next after EOF = %q, %v", rec, err)
		}
	}
	res.dropped = r.DroppedBytes()
	return res
}

func equalRecs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func describe(recs [][]byte) string {
	var s []int
	for _, r := range recs {
		s = append(s, len(r))
	}
	return fmt.Sprint(s)
}

// checkLayout parses log independently of Reader, strictly: every fragment
// lies inside one block and has a good checksum, fragment types come in a
// valid sequence, block tails shorter than a header are zero, and the
// logical records are want.
func checkLayout(t *testing.T, log []byte, want [][]byte) {
	t.Helper()
	var got [][]byte
	var cur []byte
	inRec := false
	for off := 0; off < len(log); {
		blockLeft := BlockSize - off%BlockSize
		if blockLeft < headerSize {
			for _, c := range log[off : off+min(blockLeft, len(log)-off)] {
				if c != 0 {
					t.Fatalf("non-zero padding at %d", off)
				}
			}
			off += blockLeft
			continue
		}
		if len(log)-off < headerSize {
			t.Fatalf("truncated header at %d", off)
		}
		n := int(binary.LittleEndian.Uint16(log[off+4:]))
		typ := log[off+6]
		if headerSize+n > blockLeft || off+headerSize+n > len(log) {
			t.Fatalf("fragment at %d (len %d) crosses block or file end", off, n)
		}
		c := crc32.Checksum(log[off+6:off+headerSize+n], crc32.MakeTable(crc32.Castagnoli))
		if binary.LittleEndian.Uint32(log[off:]) != (c>>15|c<<17)+0xa282ead8 {
			t.Fatalf("bad checksum at %d", off)
		}
		p := log[off+headerSize : off+headerSize+n]
		switch {
		case typ == typeFull && !inRec:
			got = append(got, bytes.Clone(p))
		case typ == typeFirst && !inRec:
			cur, inRec = append([]byte(nil), p...), true
		case typ == typeMiddle && inRec:
			cur = append(cur, p...)
		case typ == typeLast && inRec:
			got, inRec = append(got, append(cur, p...)), false
		default:
			t.Fatalf("bad fragment type %d at %d (in record: %v)", typ, off, inRec)
		}
		// A fragment other than the last of its record fills its block.
		if (typ == typeFirst || typ == typeMiddle) && headerSize+n != blockLeft {
			t.Fatalf("non-final fragment at %d does not fill its block", off)
		}
		off += headerSize + n
	}
	if inRec {
		t.Fatal("log ends inside a record")
	}
	if !equalRecs(got, want) {
		t.Fatalf("layout holds records %s, want %s", describe(got), describe(want))
	}
}

// sweepOffsets returns the offsets 0..n-1 for an exhaustive sweep. Under the
// race detector it keeps only offsets within 16 bytes of a record start or
// end or of a block boundary, plus every 97th offset.
func sweepOffsets(n int, starts, ends []int64) []int {
	near := make(map[int]bool)
	if raceEnabled {
		var marks []int64
		marks = append(marks, starts...)
		marks = append(marks, ends...)
		for b := int64(0); b <= int64(n); b += BlockSize {
			marks = append(marks, b)
		}
		for _, m := range marks {
			for d := -16; d <= 16; d++ {
				near[int(m)+d] = true
			}
		}
	}
	var offs []int
	for i := 0; i < n; i++ {
		if !raceEnabled || near[i] || i%97 == 0 {
			offs = append(offs, i)
		}
	}
	return offs
}

// physical appends one hand-made fragment to dst.
func physical(dst []byte, typ byte, payload []byte) []byte {
	h := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, typ)
	binary.LittleEndian.PutUint16(dst[h+4:], uint16(len(payload)))
	dst = append(dst, payload...)
	binary.LittleEndian.PutUint32(dst[h:], fragmentChecksum(dst[h+6:]))
	return dst
}

// padBlock zero-fills dst to the next block boundary.
func padBlock(dst []byte) []byte {
	if r := len(dst) % BlockSize; r != 0 {
		dst = append(dst, make([]byte, BlockSize-r)...)
	}
	return dst
}

// ---- format ----

func TestChecksumAndMask(t *testing.T) {
	// Standard CRC-32C check value: the table must be Castagnoli's.
	if got := crc32.Checksum([]byte("123456789"), castagnoli); got != 0xe3069283 {
		t.Fatalf("crc32c check value = %#x", got)
	}
	for _, c := range []uint32{0, 1, 0x80000000, 0xdeadbeef, 0xffffffff} {
		want := (c>>15 | c<<17) + 0xa282ead8
		if got := maskCRC(c); got != want {
			t.Fatalf("mask(%#x) = %#x, want %#x", c, got, want)
		}
	}
}

func TestGoldenBytes(t *testing.T) {
	log, _, _ := writeLog(t, [][]byte{[]byte("foo"), {}, []byte("bar!")})
	want := []byte{}
	for _, f := range []struct {
		typ     byte
		payload string
	}{{1, "foo"}, {1, ""}, {1, "bar!"}} {
		c := crc32.Checksum(append([]byte{f.typ}, f.payload...), crc32.MakeTable(crc32.Castagnoli))
		m := (c>>15 | c<<17) + 0xa282ead8
		want = binary.LittleEndian.AppendUint32(want, m)
		want = binary.LittleEndian.AppendUint16(want, uint16(len(f.payload)))
		want = append(want, f.typ)
		want = append(want, f.payload...)
	}
	if !bytes.Equal(log, want) {
		t.Fatalf("log bytes\n got %x\nwant %x", log, want)
	}
}

func TestBlockPadding(t *testing.T) {
	// After a record that leaves k bytes in the block, the next record starts
	// in the same block when k >= 7 (with k == 7 that is an empty FIRST
	// fragment) and after k zero bytes otherwise.
	for k := 0; k <= 9; k++ {
		first := makeRecord(k, BlockSize-headerSize-k)
		log, starts, _ := writeLog(t, [][]byte{first, []byte("x")})
		var wantLen int
		if k > headerSize {
			wantLen = BlockSize - k + headerSize + 1
		} else {
			wantLen = BlockSize + headerSize + 1
		}
		if len(log) != wantLen {
			t.Fatalf("k=%d: log length %d, want %d", k, len(log), wantLen)
		}
		if starts[1] != BlockSize-int64(k) {
			t.Fatalf("k=%d: second record started at %d", k, starts[1])
		}
		checkLayout(t, log, [][]byte{first, []byte("x")})
	}
}

// ---- round trips ----

func TestRoundTrip(t *testing.T) {
	sizes := []int{0, 1, BlockSize - 7 - 1, BlockSize - 7, BlockSize - 6, BlockSize, 3*BlockSize + 17, 1 << 20}
	type tc struct {
		name string
		recs [][]byte
	}
	var cases []tc
	for i, n := range sizes {
		cases = append(cases, tc{fmt.Sprintf("single-%d", n), [][]byte{makeRecord(i, n)}})
	}
	var all [][]byte
	for i, n := range sizes {
		all = append(all, makeRecord(100+i, n))
	}
	cases = append(cases, tc{"all-sizes", all})
	var allRev [][]byte
	for i := len(all) - 1; i >= 0; i-- {
		allRev = append(allRev, all[i], makeRecord(i, i*3))
	}
	cases = append(cases, tc{"all-sizes-reversed-interleaved", allRev})

	rng := rand.New(rand.NewSource(1))
	var small [][]byte
	for i := range 5000 {
		small = append(small, makeRecord(i, rng.Intn(120)))
	}
	cases = append(cases, tc{"many-small", small})

	// Records ending 0..8 bytes before a block boundary, then more records.
	var edges [][]byte
	for k := 0; k <= 8; k++ {
		edges = append(edges, makeRecord(k, BlockSize-headerSize-k), makeRecord(k, k), []byte{})
	}
	// Records that start right at the beginning of a block and exactly fill
	// one, two and three blocks' worth of fragments.
	cases = append(cases, tc{"block-edges", edges})
	cases = append(cases, tc{"exact-multi-block", [][]byte{
		makeRecord(1, 2*maxFragment), makeRecord(2, 3*maxFragment), {}, makeRecord(3, maxFragment),
	}})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, _, _ := writeLog(t, c.recs)
			checkLayout(t, log, c.recs)
			for _, src := range []struct {
				name string
				r    io.Reader
			}{
				{"bytes", bytes.NewReader(log)},
				{"half", iotest.HalfReader(bytes.NewReader(log))},
				{"dataerr", iotest.DataErrReader(bytes.NewReader(log))},
			} {
				res := readAll(t, src.r)
				if res.errs != 0 || res.dropped != 0 {
					t.Fatalf("%s: %d errors, %d dropped bytes on a clean log", src.name, res.errs, res.dropped)
				}
				if !equalRecs(res.recs, c.recs) {
					t.Fatalf("%s: read %s, want %s", src.name, describe(res.recs), describe(c.recs))
				}
			}
		})
	}
}

func TestEmptyLog(t *testing.T) {
	res := readAll(t, bytes.NewReader(nil))
	if len(res.recs) != 0 || res.errs != 0 || res.dropped != 0 {
		t.Fatalf("empty log: %+v", res)
	}
}

// countingWriter records each Write call.
type countingWriter struct {
	bytes.Buffer
	calls int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.calls++
	return c.Buffer.Write(p)
}

func TestOneWritePerRecord(t *testing.T) {
	var cw countingWriter
	w := NewWriter(&cw)
	for i, n := range []int{0, 10, BlockSize - 20, BlockSize, 1 << 20, 5, 3 * BlockSize} {
		before := cw.calls
		if err := w.AddRecord(makeRecord(i, n)); err != nil {
			t.Fatal(err)
		}
		if cw.calls-before != 1 {
			t.Fatalf("record of %d bytes took %d Write calls", n, cw.calls-before)
		}
	}
}

// ---- torn and zero-filled tails ----

func tailTestRecords() [][]byte {
	// Several records: small ones, an empty one, one ending 3 bytes before
	// the end of block 0 (zero padding), one whose FIRST fragment fills
	// block 1 exactly and whose LAST starts block 2, and a few after it.
	recs := [][]byte{
		makeRecord(1, 10), {}, makeRecord(2, 1000), makeRecord(3, BlockSize-1041),
		makeRecord(4, maxFragment+300), makeRecord(5, 3), {}, makeRecord(6, 300), makeRecord(7, 1),
	}
	return recs
}

// readCompare reads data with a reader reusing block, comparing each record
// with the originals as it goes (no copies). It returns the indexes of the
// returned records in recs (greedy match in increasing order; -1 when a
// record matches none), the number of corruption errors and the dropped
// bytes.
func readCompare(t *testing.T, data []byte, recs [][]byte, block []byte) (got []int, errs int, dropped int64) {
	t.Helper()
	r := &Reader{r: bytes.NewReader(data), block: block}
	j := 0
	for i := 0; ; i++ {
		if i > 4*len(data)+10 {
			t.Fatal("reader does not terminate")
		}
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			errs++
			continue
		}
		for j < len(recs) && !bytes.Equal(recs[j], rec) {
			j++
		}
		if j == len(recs) {
			got = append(got, -1)
			continue
		}
		got = append(got, j)
		j++
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next after EOF = %v", err)
	}
	return got, errs, r.DroppedBytes()
}

func TestTruncationEveryPrefix(t *testing.T) {
	recs := tailTestRecords()
	log, starts, ends := writeLog(t, recs)
	if ends[3] != BlockSize-3 || ends[4] != 2*BlockSize+307 {
		t.Fatalf("unexpected layout: ends %v", ends)
	}
	block := make([]byte, BlockSize)
	for _, n := range sweepOffsets(len(log)+1, starts, ends) {
		got, errs, dropped := readCompare(t, log[:n], recs, block)
		if errs != 0 {
			t.Fatalf("prefix %d: %d corruption errors", n, errs)
		}
		// Exactly the records that ended within the prefix, in order.
		k := 0
		for k < len(ends) && ends[k] <= int64(n) {
			k++
		}
		if len(got) != k {
			t.Fatalf("prefix %d: read %d records (%v), want %d", n, len(got), got, k)
		}
		for i, g := range got {
			if g != i {
				t.Fatalf("prefix %d: record %d is original %d", n, i, g)
			}
		}
		if k > 0 && dropped > int64(n)-ends[k-1] || k == 0 && dropped > int64(n) {
			t.Fatalf("prefix %d: dropped %d bytes", n, dropped)
		}
	}
}

func TestZeroFilledTail(t *testing.T) {
	recs := tailTestRecords()
	log, _, _ := writeLog(t, recs)
	toBlock := BlockSize - len(log)%BlockSize
	for _, z := range []int{1, 6, 7, 8, 100, toBlock - 1, toBlock, toBlock + 1, toBlock + 7, toBlock + BlockSize, toBlock + 2*BlockSize + 5} {
		data := append(bytes.Clone(log), make([]byte, z)...)
		res := readAll(t, bytes.NewReader(data))
		if res.errs != 0 || res.dropped != 0 || !equalRecs(res.recs, recs) {
			t.Fatalf("%d zero bytes: errs=%d dropped=%d recs=%s", z, res.errs, res.dropped, describe(res.recs))
		}
	}
}

func TestTornRecordZeroFilled(t *testing.T) {
	// A crash can leave a record's bytes partly written and the rest of the
	// file's allocated space zero. Cut the log inside every record at a few
	// points, overwrite the remainder of the file with zeros.
	recs := tailTestRecords()
	log, starts, ends := writeLog(t, recs)
	for i := range recs {
		for _, cut := range []int64{starts[i], starts[i] + 3, starts[i] + 7, (starts[i] + ends[i]) / 2, ends[i] - 1} {
			if cut < starts[i] || cut >= ends[i] {
				continue
			}
			data := bytes.Clone(log)
			clear(data[cut:])
			res := readAll(t, bytes.NewReader(data))
			if !equalRecs(res.recs[:min(i, len(res.recs))], recs[:min(i, len(res.recs))]) || len(res.recs) < i {
				t.Fatalf("record %d cut at %d: read %s", i, cut, describe(res.recs))
			}
			// Records after the cut may never come back.
			if len(res.recs) > i {
				t.Fatalf("record %d cut at %d: %d records returned", i, cut, len(res.recs))
			}
		}
	}
}

func TestZeroHoleThenData(t *testing.T) {
	// Zeros in the middle of a log (a hole that was never written) followed
	// by more records: the loss is reported, and the records after it come
	// back.
	var log []byte
	log = physical(log, typeFull, []byte("a"))
	log = physical(log, typeFirst, bytes.Repeat([]byte("p"), 100)) // lost in the hole
	holeStart := len(log)
	log = padBlock(append(log, 1)) // make room, then zero the hole
	clear(log[holeStart:])
	log = append(log, make([]byte, BlockSize)...) // a whole zero block
	log = physical(log, typeFull, []byte("b"))
	res := readAll(t, bytes.NewReader(log))
	if res.errs != 1 || !equalRecs(res.recs, [][]byte{[]byte("a"), []byte("b")}) {
		t.Fatalf("got errs=%d recs=%q", res.errs, res.recs)
	}
	if want := int64(headerSize+100) + int64(2*BlockSize-holeStart); res.dropped != want {
		t.Fatalf("dropped %d, want %d", res.dropped, want)
	}
}

// ---- corruption ----

func TestCorruptionCases(t *testing.T) {
	rec := func(s string) []byte { return []byte(s) }
	bigA := bytes.Repeat([]byte("A"), maxFragment)
	cases := []struct {
		name    string
		log     func() []byte
		want    []string // records in order; "!" for a corruption error
		dropped int64    // -1: don't check
	}{
		{"orphan-middle", func() []byte {
			b := physical(nil, typeMiddle, rec("mm"))
			return physical(b, typeFull, rec("a"))
		}, []string{"!", "a"}, 9},
		{"orphan-last", func() []byte {
			b := physical(nil, typeLast, rec("ll"))
			return physical(b, typeFull, rec("a"))
		}, []string{"!", "a"}, 9},
		{"first-then-full", func() []byte {
			b := physical(nil, typeFirst, rec("xx"))
			return physical(b, typeFull, rec("a"))
		}, []string{"!", "a"}, 9},
		{"first-first-last", func() []byte {
			b := physical(nil, typeFirst, rec("x"))
			b = physical(b, typeFirst, rec("y"))
			return physical(b, typeLast, rec("z"))
		}, []string{"!", "yz"}, 8},
		{"first-middle-full", func() []byte {
			b := physical(nil, typeFirst, rec("x"))
			b = physical(b, typeMiddle, rec("y"))
			return physical(b, typeFull, rec("z"))
		}, []string{"!", "z"}, 16},
		{"unknown-type-good-checksum", func() []byte {
			b := physical(nil, typeFull, rec("a"))
			b = physical(b, 5, rec("???"))
			return physical(b, typeFull, rec("b"))
		}, []string{"a", "!", "b"}, 10},
		{"type-zero-with-length", func() []byte {
			b := physical(nil, typeZero, rec("zz"))
			return physical(b, typeFull, rec("b"))
		}, []string{"!", "b"}, 9},
		{"bad-checksum-skips-block", func() []byte {
			b := physical(nil, typeFull, rec("a"))
			bad := len(b)
			b = physical(b, typeFull, rec("lost"))
			b = physical(b, typeFull, rec("lost too"))
			b[bad] ^= 1
			b = padBlock(b)
			return physical(b, typeFull, rec("b"))
		}, []string{"a", "!", "b"}, BlockSize - 8},
		{"bad-checksum-in-last-fragment", func() []byte {
			b := physical(nil, typeFull, rec("a"))
			b = physical(b, typeFull, rec("bb"))
			b[len(b)-1] ^= 0x80
			return b
		}, []string{"a", "!"}, 9},
		{"length-past-full-block", func() []byte {
			b := physical(nil, typeFull, rec("a"))
			h := len(b)
			b = physical(b, typeFull, rec("c"))
			binary.LittleEndian.PutUint16(b[h+4:], 0xffff)
			b = padBlock(b)
			return physical(b, typeFull, rec("b"))
		}, []string{"a", "!", "b"}, BlockSize - 8},
		{"length-past-block-size-in-last-block", func() []byte {
			b := physical(nil, typeFull, rec("a"))
			h := len(b)
			b = physical(b, typeFull, rec("c"))
			binary.LittleEndian.PutUint16(b[h+4:], BlockSize-10)
			return b
		}, []string{"a", "!"}, 8},
		{"zero-header-then-junk", func() []byte {
			b := physical(nil, typeFull, rec("a"))
			b = append(b, 0, 0, 0, 0, 0, 0, 0, 9, 9)
			b = padBlock(b)
			return physical(b, typeFull, rec("b"))
		}, []string{"a", "!", "b"}, BlockSize - 8},
		{"first-at-block-end-orphaned", func() []byte {
			// A FIRST fragment filling block 0, then block 1 starts with a
			// FULL: the record never finished.
			b := physical(nil, typeFirst, bigA)
			return physical(b, typeFull, rec("b"))
		}, []string{"!", "b"}, BlockSize},
		{"torn-first-at-eof", func() []byte {
			b := physical(nil, typeFull, rec("a"))
			return physical(b, typeFirst, rec("half"))
		}, []string{"a"}, 11},
		{"nonzero-padding-ignored", func() []byte {
			b := physical(nil, typeFull, bytes.Repeat([]byte("x"), BlockSize-headerSize-3))
			b = append(b, 1, 2, 3)
			return physical(b, typeFull, rec("b"))
		}, []string{string(bytes.Repeat([]byte("x"), BlockSize-headerSize-3)), "b"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := readAll(t, bytes.NewReader(c.log()))
			var got []string
			for _, o := range res.order {
				if o < 0 {
					got = append(got, "!")
				} else {
					got = append(got, string(res.recs[o]))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			if c.dropped >= 0 && res.dropped != c.dropped {
				t.Fatalf("dropped %d bytes, want %d", res.dropped, c.dropped)
			}
		})
	}
}

func TestCorruptionErrorMessage(t *testing.T) {
	b := physical(nil, typeFull, []byte("a"))
	b[0] ^= 1
	_, err := NewReader(bytes.NewReader(b)).Next()
	if !errors.Is(err, base.ErrCorruption) || err.Error() != "bloomkv: corruption: wal: checksum mismatch at offset 0" {
		t.Fatalf("got %v", err)
	}
}

func TestByteFlip(t *testing.T) {
	recs := [][]byte{
		makeRecord(1, 5), {}, makeRecord(2, 200), makeRecord(3, BlockSize-340), // ends 107 bytes before block 1
		makeRecord(4, 100+maxFragment+500), // FIRST in block 0, MIDDLE fills block 1, LAST in block 2
		makeRecord(5, 17), makeRecord(6, 1), makeRecord(7, 900), makeRecord(8, 2), makeRecord(9, 33),
	}
	// (Records are pairwise distinct so that a returned record identifies
	// its position.)
	log, starts, ends := writeLog(t, recs)
	if ends[3] != BlockSize-107 || ends[4] != 2*BlockSize+507 {
		t.Fatalf("unexpected layout: ends %v", ends)
	}
	blockOf := func(off int64) int64 { return off / BlockSize }
	block := make([]byte, BlockSize)
	data := bytes.Clone(log)
	for _, i := range sweepOffsets(len(log), starts, ends) {
		data[i] ^= 0x80
		got, errs, _ := readCompare(t, data, recs, block)
		data[i] ^= 0x80
		// Every returned record is one of the originals, in increasing order.
		for _, g := range got {
			if g < 0 {
				t.Fatalf("flip at %d: returned a record that was never written (got %v)", i, got)
			}
		}
		// Records that do not touch the damaged block all come back.
		damaged := blockOf(int64(i))
		k := 0
		for idx := range recs {
			touches := blockOf(starts[idx]) <= damaged && damaged <= blockOf(ends[idx]-1)
			if touches {
				continue
			}
			for k < len(got) && got[k] < idx {
				k++
			}
			if k == len(got) || got[k] != idx {
				t.Fatalf("flip at %d (block %d): record %d [%d,%d) lost; got %v", i, damaged, idx, starts[idx], ends[idx], got)
			}
		}
		// Silent loss only at the tail: without a reported error the records
		// are a prefix of the originals.
		if errs == 0 {
			for idx, g := range got {
				if g != idx {
					t.Fatalf("flip at %d: records %v lost without an error", i, got)
				}
			}
		}
	}
}

// ---- errors from the underlying writer or reader ----

type failingWriter struct {
	okCalls int // Write calls that succeed before failing
	short   bool
	calls   int
	err     error
	n       int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	f.calls++
	if f.calls <= f.okCalls {
		f.n += len(p)
		return len(p), nil
	}
	if f.short {
		f.n += len(p) / 2
		return len(p) / 2, nil
	}
	f.n += 3
	return 3, f.err
}

func (f *failingWriter) Sync() error { return nil }

func TestWriteErrorSticks(t *testing.T) {
	errDisk := errors.New("disk on fire")
	for _, short := range []bool{false, true} {
		fw := &failingWriter{okCalls: 2, short: short, err: errDisk}
		want := errDisk
		if short {
			want = io.ErrShortWrite
		}
		w := NewWriter(fw)
		for i := range 2 {
			if err := w.AddRecord(makeRecord(i, 100)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.AddRecord(makeRecord(9, 100)); !errors.Is(err, want) {
			t.Fatalf("short=%v: AddRecord error = %v, want %v", short, err, want)
		}
		for range 3 {
			if err := w.AddRecord([]byte("x")); !errors.Is(err, want) {
				t.Fatalf("short=%v: later AddRecord = %v", short, err)
			}
			if err := w.Sync(); !errors.Is(err, want) {
				t.Fatalf("short=%v: later Sync = %v", short, err)
			}
		}
		if fw.calls != 3 {
			t.Fatalf("short=%v: %d Write calls after the error, want none", short, fw.calls-3)
		}
		if w.Size() != int64(fw.n) {
			t.Fatalf("short=%v: Size %d, underlying writer got %d", short, w.Size(), fw.n)
		}
	}
}

type fakeSyncer struct {
	bytes.Buffer
	syncs    int
	syncErr  error
	syncedAt []int
}

func (f *fakeSyncer) Sync() error {
	f.syncs++
	f.syncedAt = append(f.syncedAt, f.Len())
	return f.syncErr
}

func TestSync(t *testing.T) {
	fs := &fakeSyncer{}
	w := NewWriter(fs)
	if err := w.AddRecord([]byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.AddRecord([]byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if fs.syncs != 2 || fs.syncedAt[0] != 10 || fs.syncedAt[1] != 20 {
		t.Fatalf("syncs=%d at %v", fs.syncs, fs.syncedAt)
	}

	// A writer without Sync: Sync is a no-op.
	var plain bytes.Buffer
	w = NewWriter(&plain)
	if err := w.Sync(); err != nil {
		t.Fatalf("Sync on a plain writer: %v", err)
	}

	// A failed sync sticks.
	errSync := errors.New("fsync failed")
	fs = &fakeSyncer{syncErr: errSync}
	w = NewWriter(fs)
	if err := w.AddRecord([]byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); !errors.Is(err, errSync) {
		t.Fatalf("Sync = %v", err)
	}
	if err := w.AddRecord([]byte("two")); !errors.Is(err, errSync) {
		t.Fatalf("AddRecord after failed Sync = %v", err)
	}
	if err := w.Sync(); !errors.Is(err, errSync) || fs.syncs != 1 {
		t.Fatalf("second Sync = %v after %d syncs", err, fs.syncs)
	}
	if fs.Len() != 10 {
		t.Fatalf("bytes written after failed Sync: %d", fs.Len())
	}
}

func TestReaderIOError(t *testing.T) {
	recs := [][]byte{makeRecord(1, 100), makeRecord(2, BlockSize), makeRecord(3, 10)}
	log, _, _ := writeLog(t, recs)
	errIO := errors.New("read failed")
	src := io.MultiReader(bytes.NewReader(log[:BlockSize+10]), iotest.ErrReader(errIO))
	r := NewReader(src)
	rec, err := r.Next()
	if err != nil || !bytes.Equal(rec, recs[0]) {
		t.Fatalf("first record: %v", err)
	}
	for range 2 {
		if _, err := r.Next(); err != errIO {
			t.Fatalf("Next = %v, want the I/O error", err)
		}
	}
}

func TestRecordValidUntilNext(t *testing.T) {
	// A returned multi-fragment record keeps its bytes while the caller
	// holds it, and its capacity ends at its length so an append cannot
	// write into the reader's buffer.
	recs := [][]byte{makeRecord(1, 3*BlockSize), makeRecord(2, 10)}
	log, _, _ := writeLog(t, recs)
	r := NewReader(bytes.NewReader(log))
	rec, err := r.Next()
	if err != nil || !bytes.Equal(rec, recs[0]) || cap(rec) != len(rec) {
		t.Fatalf("err=%v cap=%d len=%d", err, cap(rec), len(rec))
	}
	rec, err = r.Next()
	if err != nil || !bytes.Equal(rec, recs[1]) || cap(rec) != len(rec) {
		t.Fatalf("err=%v cap=%d len=%d", err, cap(rec), len(rec))
	}
}
