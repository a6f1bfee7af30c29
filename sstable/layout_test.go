package sstable

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
)

// layoutCases are the tables the layout tests write: both formats, with
// and without compression, small blocks so that there are many.
func layoutCases() []struct {
	name string
	o    WriterOptions
	p    filter.Policy
} {
	ldb := filter.NewLevelDBBloomPolicy(10)
	return []struct {
		name string
		o    WriterOptions
		p    filter.Policy
	}{
		{"bloomkv/snappy", WriterOptions{BlockSize: 512, FilterPolicy: bloom10}, bloom10},
		{"bloomkv/none", WriterOptions{BlockSize: 512, FilterPolicy: bloom10, DisableCompression: true}, bloom10},
		{"leveldb/snappy", WriterOptions{BlockSize: 512, FilterPolicy: ldb, Format: FormatLevelDB}, ldb},
		{"leveldb/none", WriterOptions{BlockSize: 512, FilterPolicy: ldb, Format: FormatLevelDB, DisableCompression: true}, ldb},
	}
}

// TestLayout checks each clause of Layout's description against tables
// the Writer made: the blocks tile the file in the documented order, the
// data blocks are those the index names with their trailers' compression,
// and the metaindex lists the filter (and, in bloomkv's format, the
// properties).
func TestLayout(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	m := randomModel(rng, 3000, 12, 64)
	for _, tc := range layoutCases() {
		t.Run(tc.name, func(t *testing.T) {
			data, props := buildTable(t, m, tc.o)
			r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{tc.p}})
			defer r.Close()
			l, err := r.Layout()
			if err != nil {
				t.Fatal(err)
			}
			if l.Format != tc.o.Format || l.FileSize != uint64(len(data)) {
				t.Errorf("format %s, file size %d; want %s, %d", l.Format, l.FileSize, tc.o.Format, len(data))
			}
			wantFooter := uint64(FooterLen)
			if tc.o.Format == FormatLevelDB {
				wantFooter = LevelDBFooterLen
			}
			if l.FooterSize != wantFooter || l.FooterOffset+l.FooterSize != l.FileSize {
				t.Errorf("footer at %d, %d bytes, in a file of %d; want %d bytes ending the file", l.FooterOffset, l.FooterSize, l.FileSize, wantFooter)
			}
			end := func(h BlockHandle) uint64 { return h.Offset + h.Size + BlockTrailerLen }
			if end(l.Metaindex) != l.Index.Offset || end(l.Index) != l.FooterOffset {
				t.Errorf("metaindex %+v, index %+v, footer at %d: not adjacent", l.Metaindex, l.Index, l.FooterOffset)
			}

			// Data blocks: as many as the properties count, back to back
			// from offset 0 to DataSize, their compression as written.
			if uint64(len(l.Data)) != props.NumDataBlocks || len(l.Data) < 10 {
				t.Fatalf("%d data blocks, properties say %d (want at least 10)", len(l.Data), props.NumDataBlocks)
			}
			var next uint64
			snappyBlocks := 0
			for i, b := range l.Data {
				if b.Offset != next {
					t.Fatalf("data block %d at %d, want %d", i, b.Offset, next)
				}
				next = end(b.BlockHandle)
				if got := Compression(data[b.Offset+b.Size]); b.Compression != got {
					t.Errorf("data block %d: compression %s, trailer says %s", i, b.Compression, got)
				}
				if b.Compression == SnappyCompression {
					snappyBlocks++
				}
			}
			if next != props.DataSize {
				t.Errorf("data blocks end at %d, DataSize %d", next, props.DataSize)
			}
			if tc.o.DisableCompression != (snappyBlocks == 0) {
				t.Errorf("%d snappy blocks with DisableCompression %v", snappyBlocks, tc.o.DisableCompression)
			}

			// Separators: a seek for any key reads first the first block
			// whose separator is >= it.
			for i := 0; i < len(m); i += 37 {
				_, _, blocks, err := r.SeekTraced(m[i].key)
				if err != nil || len(blocks) == 0 {
					t.Fatalf("SeekTraced: %v, %d blocks", err, len(blocks))
				}
				j := sort.Search(len(l.Data), func(j int) bool { return base.CompareInternal(l.Data[j].Separator, m[i].key) >= 0 })
				if j == len(l.Data) || l.Data[j].Offset != blocks[0].Offset {
					t.Fatalf("key %s: separators point at block %d, the seek read the block at %d", base.FormatInternalKey(m[i].key), j, blocks[0].Offset)
				}
			}

			// Meta blocks: between the data and the metaindex; the filter
			// of the size the properties record.
			names := map[string]BlockHandle{}
			for _, mb := range l.Meta {
				if mb.Offset < props.DataSize || end(mb.BlockHandle) > l.Metaindex.Offset {
					t.Errorf("meta block %q %+v outside [%d, %d)", mb.Name, mb.BlockHandle, props.DataSize, l.Metaindex.Offset)
				}
				names[mb.Name] = mb.BlockHandle
			}
			fh, ok := names[MetaFilterPrefix+tc.p.Name()]
			if !ok || fh.Size != props.FilterSize {
				t.Errorf("metaindex %v: no filter %q of %d bytes", names, tc.p.Name(), props.FilterSize)
			}
			_, hasProps := names[MetaPropertiesKey]
			if wantProps := tc.o.Format == FormatBloomKV; hasProps != wantProps || len(l.Meta) != 1+btoi(wantProps) {
				t.Errorf("metaindex %v: properties block %v, want %v", names, hasProps, wantProps)
			}
			if tc.o.DisableCompression && l.Index.Size != props.IndexSize {
				t.Errorf("index of %d bytes, properties say %d", l.Index.Size, props.IndexSize)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestFilterParts: a bloomkv table's one filter is Filter's; a LevelDB
// table's are one per 2 KiB of data-block offsets, empty exactly where no
// block starts, each holding the user keys of the blocks that start in
// its range and ending with the policy's probe count. No usable filter:
// nil.
func TestFilterParts(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	m := randomModel(rng, 3000, 12, 64)
	for _, tc := range layoutCases() {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := buildTable(t, m, tc.o)
			if r := openTable(t, data, ReaderOptions{}); r.FilterParts() != nil {
				t.Errorf("FilterParts of a reader that knows no policy: not nil")
			}
			r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{tc.p}})
			defer r.Close()
			parts := r.FilterParts()
			if tc.o.Format == FormatBloomKV {
				_, whole := r.Filter()
				if len(parts) != 1 || !bytes.Equal(parts[0], whole) {
					t.Fatalf("%d parts; want the one filter Filter returns", len(parts))
				}
				return
			}
			l, err := r.Layout()
			if err != nil {
				t.Fatal(err)
			}
			starts := map[uint64]bool{}
			for _, b := range l.Data {
				starts[b.Offset>>levelDBFilterBaseLg] = true
			}
			if want := l.Data[len(l.Data)-1].Offset>>levelDBFilterBaseLg + 1; uint64(len(parts)) != want {
				t.Fatalf("%d filters for data blocks up to offset %d, want %d", len(parts), l.Data[len(l.Data)-1].Offset, want)
			}
			k := tc.p.(filter.BitsPerKeyer).NumProbes()
			for i, p := range parts {
				if (len(p) == 0) == starts[uint64(i)] {
					t.Errorf("filter %d: %d bytes, a block starts in its range: %v", i, len(p), starts[uint64(i)])
				}
				if len(p) > 0 && int(p[len(p)-1]) != k {
					t.Errorf("filter %d ends with %d, want k=%d", i, p[len(p)-1], k)
				}
			}
			// Every entry's user key is in the filter of its block.
			for i := 0; i < len(m); i += 11 {
				ukey := base.UserKey(m[i].key)
				_, _, blocks, err := r.SeekTraced(m[i].key)
				if err != nil || len(blocks) == 0 {
					t.Fatalf("SeekTraced: %v", err)
				}
				b := blocks[len(blocks)-1].Offset
				if !tc.p.MayContain(parts[b>>levelDBFilterBaseLg], ukey) {
					t.Errorf("the filter of the block at %d denies its key %q", b, ukey)
				}
			}
		})
	}
}

// TestLayoutLevelDBFixtures: Layout reads the tables LevelDB 1.23 wrote.
func TestLayoutLevelDBFixtures(t *testing.T) {
	paths, err := filepath.Glob("testdata/leveldb/*.ldb")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	ldb := filter.NewLevelDBBloomPolicy(10)
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{ldb}})
		l, err := r.Layout()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if l.Format != FormatLevelDB || uint64(len(l.Data)) != r.Properties().NumDataBlocks || len(l.Data) == 0 {
			t.Errorf("%s: format %s, %d data blocks, properties say %d", path, l.Format, len(l.Data), r.Properties().NumDataBlocks)
		}
		if len(l.Meta) != 1 || l.Meta[0].Name != MetaFilterPrefix+filter.LevelDBBloomPolicyName {
			t.Errorf("%s: metaindex %+v, want LevelDB's filter alone", path, l.Meta)
		}
		if n := len(r.FilterParts()); n == 0 {
			t.Errorf("%s: no filters", path)
		}
		r.Close()
	}
}

// TestLayoutDamage changes the bytes of the blocks Layout reads (the
// metaindex, index and footer at the end of the file, and the trailer
// bytes of the data blocks) and cuts the file: every change gives a
// table NewReader refuses, or a Layout, or an error wrapping
// base.ErrCorruption or ErrUnsupportedCompression; never a panic.
func TestLayoutDamage(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	m := randomModel(rng, 400, 12, 64)
	for _, tc := range layoutCases() {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := buildTable(t, m, tc.o)
			r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{tc.p}})
			l, err := r.Layout()
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			var offs []int
			for i := int(l.Metaindex.Offset); i < len(data); i++ {
				offs = append(offs, i)
			}
			for _, b := range l.Data {
				offs = append(offs, int(b.Offset+b.Size))
			}
			check := func(what string, d []byte) {
				r, err := NewReader(bytes.NewReader(d), int64(len(d)), ReaderOptions{Filters: []filter.Policy{tc.p}})
				if err != nil {
					return
				}
				defer r.Close()
				if _, err := r.Layout(); err != nil && !errors.Is(err, base.ErrCorruption) && !errors.Is(err, ErrUnsupportedCompression) {
					t.Errorf("%s: %v", what, err)
				}
				r.FilterParts()
			}
			for _, off := range offs {
				d := bytes.Clone(data)
				d[off] ^= byte(1 + rng.Intn(255))
				check("byte changed", d)
			}
			for n := 0; n < len(data); n += 1 + n/8 {
				check("cut", data[:n])
			}
		})
	}
}

// TestLayoutClosed: a closed Reader has no layout and no filters.
func TestLayoutClosed(t *testing.T) {
	data, _ := buildTable(t, randomModel(rand.New(rand.NewSource(4)), 50, 8, 8), WriterOptions{FilterPolicy: bloom10})
	r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{bloom10}})
	r.Close()
	if _, err := r.Layout(); err == nil {
		t.Errorf("Layout of a closed reader: no error")
	}
	if r.FilterParts() != nil {
		t.Errorf("FilterParts of a closed reader: not nil")
	}
}

// failingReaderAt fails every read.
type failingReaderAt struct{}

var errRead = errors.New("read failed")

func (failingReaderAt) ReadAt([]byte, int64) (int, error) { return 0, errRead }

// TestSniffFormat: the magic number tells the format; a file too short
// for that format's footer, or ending otherwise, is no table; a read error
// is returned.
func TestSniffFormat(t *testing.T) {
	m := randomModel(rand.New(rand.NewSource(5)), 50, 8, 8)
	bkv, _ := buildTable(t, m, WriterOptions{})
	ldb, _ := buildTable(t, m, WriterOptions{Format: FormatLevelDB})
	noise := []byte(strings.Repeat("not a table ", 10))
	for _, tc := range []struct {
		name string
		data []byte
		f    Format
		ok   bool
	}{
		{"bloomkv", bkv, FormatBloomKV, true},
		{"leveldb", ldb, FormatLevelDB, true},
		{"bloomkv footer cut to LevelDB's length", bkv[len(bkv)-LevelDBFooterLen:], 0, false},
		{"bloomkv footer", bkv[len(bkv)-FooterLen:], FormatBloomKV, true},
		{"leveldb footer", ldb[len(ldb)-LevelDBFooterLen:], FormatLevelDB, true},
		{"leveldb footer less a byte", ldb[len(ldb)-LevelDBFooterLen+1:], 0, false},
		{"noise", noise, 0, false},
		{"empty", nil, 0, false},
	} {
		f, ok, err := SniffFormat(bytes.NewReader(tc.data), int64(len(tc.data)))
		if err != nil || ok != tc.ok || (ok && f != tc.f) {
			t.Errorf("%s: %s, %v, %v; want %s, %v", tc.name, f, ok, err, tc.f, tc.ok)
		}
	}
	if _, ok, err := SniffFormat(failingReaderAt{}, 100); ok || !errors.Is(err, errRead) {
		t.Errorf("failing reader: %v, %v", ok, err)
	}
	if _, ok, err := SniffFormat(bytes.NewReader(ldb[:60]), 100); ok || !errors.Is(err, base.ErrCorruption) {
		t.Errorf("file shorter than its size: %v, %v", ok, err)
	}
}
