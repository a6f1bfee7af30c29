package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// seedLevelDBTable returns a small LevelDB-format table.
func seedLevelDBTable(tb testing.TB, compress bool) []byte {
	m := randomModel(rand.New(rand.NewSource(7)), 12, 4, 24)
	data, _ := levelDBTable(tb, m, WriterOptions{BlockSize: 96, FilterPolicy: ldbPolicy, DisableCompression: !compress})
	return data
}

// seedLevelDBFilterBlock returns a filter block of keys key0000..key0009
// in blocks at offsets 0 and 2100, with an empty filter between.
func seedLevelDBFilterBlock() []byte {
	fw := levelDBFilterWriter{b: ldbPolicy.NewBuilder()}
	for i := 0; i < 10; i++ {
		if i == 3 {
			fw.startBlock(2100)
		}
		if i == 6 {
			fw.startBlock(4200)
		}
		fw.addKey([]byte(fmt.Sprintf("key%04d", i)))
	}
	b, err := fw.finish()
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzLevelDBFooter decodes arbitrary file tails as footers: no panic,
// errors are corruption, and what decodes re-encodes to the same bytes
// (handles are canonical and the padding zero).
func FuzzLevelDBFooter(f *testing.F) {
	f.Add(footer{format: FormatLevelDB, metaindex: blockHandle{100, 20}, index: blockHandle{125, 300}}.encode())
	f.Add(footer{metaindex: blockHandle{1 << 40, 3}, index: blockHandle{5, 1 << 50}, version: FormatVersion}.encode())
	f.Add([]byte{})
	f.Add(make([]byte, LevelDBFooterLen))
	f.Fuzz(func(t *testing.T, buf []byte) {
		ft, err := decodeFooter(buf)
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error %v does not wrap ErrCorruption", err)
			}
			return
		}
		n := ft.format.footerLen()
		if len(buf) < n {
			t.Fatalf("%d-byte %v footer decoded from %d bytes", n, ft.format, len(buf))
		}
		if got := ft.encode(); !bytes.Equal(got, buf[len(buf)-n:]) {
			t.Fatalf("footer %+v re-encodes to %x, was %x", ft, got, buf[len(buf)-n:])
		}
	})
}

// FuzzLevelDBFilterBlock parses arbitrary filter blocks and probes them:
// no panic, errors are corruption, and a block that parses gives a block
// offset either no filter or a non-empty one within the filter area.
func FuzzLevelDBFilterBlock(f *testing.F) {
	f.Add(seedLevelDBFilterBlock(), []byte("key0003"), uint64(2100))
	f.Add([]byte{0, 0, 0, 0, 11}, []byte("k"), uint64(0))
	f.Add([]byte{}, []byte{}, uint64(1<<63))
	f.Fuzz(func(t *testing.T, block, key []byte, off uint64) {
		fb, err := parseLevelDBFilter(block)
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error %v does not wrap ErrCorruption", err)
			}
			return
		}
		for _, o := range []uint64{off, 0, off >> 1, off + 2048} {
			flt, ok := fb.forBlock(o)
			if ok {
				if len(flt) == 0 || len(flt) > fb.array {
					t.Fatalf("filter of %d bytes in a %d-byte filter area", len(flt), fb.array)
				}
				ldbPolicy.MayContain(flt, key)
			}
		}
	})
}

// FuzzLevelDBTable opens arbitrary bytes as a table, seeded with LevelDB
// tables (this package's and one LevelDB wrote), as FuzzTable does.
func FuzzLevelDBTable(f *testing.F) {
	f.Add(seedLevelDBTable(f, true))
	f.Add(seedLevelDBTable(f, false))
	empty, _ := levelDBTable(f, nil, WriterOptions{FilterPolicy: ldbPolicy})
	f.Add(empty)
	if b, err := os.ReadFile("testdata/leveldb/snappy-000011.ldb"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzTable(t, data, false)
		fuzzTable(t, data, true)
	})
}
