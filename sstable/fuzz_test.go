package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/cache"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// seedBlock returns a small valid data block and a key inside it.
func seedBlock() ([]byte, []byte) {
	var bb blockBuilder
	bb.restartInterval = 3
	var mid []byte
	for i := 0; i < 10; i++ {
		k := base.MakeInternalKey([]byte(fmt.Sprintf("key%02d", i)), uint64(10-i), base.KindSet)
		if i == 5 {
			mid = k
		}
		bb.add(k, []byte(fmt.Sprintf("v%d", i)))
	}
	return bytes.Clone(bb.finish()), mid
}

// seedTable returns a small valid table.
func seedTable(tb testing.TB, compress bool) []byte {
	rng := rand.New(rand.NewSource(7))
	m := randomModel(rng, 12, 4, 24)
	data, _ := buildTable(tb, m, WriterOptions{BlockSize: 96, FilterPolicy: bloom10, DisableCompression: !compress})
	return data
}

func FuzzBlock(f *testing.F) {
	blk, mid := seedBlock()
	f.Add(blk, mid)
	f.Add(blk[:len(blk)-3], mid)
	f.Add([]byte{}, []byte{})
	f.Add([]byte{0, 0, 0, 0}, []byte("x"))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}, []byte("x"))
	f.Fuzz(func(t *testing.T, data, target []byte) {
		var it blockIter
		if err := it.init(false, data); err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("init error %v does not wrap ErrCorruption", err)
			}
			return
		}
		fwd := 0
		for ok := it.First(); ok; ok = it.Next() {
			if fwd > len(data) {
				t.Fatal("forward iteration does not end")
			}
			fwd++
		}
		fwdErr := it.Error()
		if fwdErr != nil && !errors.Is(fwdErr, base.ErrCorruption) {
			t.Fatalf("error %v does not wrap ErrCorruption", fwdErr)
		}
		n := 0
		for ok := it.Last(); ok; ok = it.Prev() {
			if n > len(data) {
				t.Fatal("backward iteration does not end")
			}
			n++
		}
		var it2 blockIter
		it2.init(false, data)
		if it2.SeekGE(target) {
			if base.CompareInternal(it2.Key(), target) < 0 {
				t.Fatalf("SeekGE(%q) landed on smaller key %q", target, it2.Key())
			}
			it2.Next()
		}
		it2.SeekLT(target)
		if it2.Valid() {
			it2.Prev()
		}
	})
}

func FuzzTable(f *testing.F) {
	f.Add(seedTable(f, true))
	f.Add(seedTable(f, false))
	empty, _ := buildTable(f, nil, WriterOptions{})
	f.Add(empty)
	f.Add([]byte{})
	f.Add(rangeDelTable(f, randomModel(rand.New(rand.NewSource(7)), 12, 4, 24), seedRangeDels))
	f.Add(rangeDelTable(f, nil, seedRangeDels))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzTable(t, data, false)
		fuzzTable(t, data, true)
	})
}

// fuzzTable opens data as a table and exercises every read. With
// skipChecksums, mutated blocks reach the block decoders, as a hostile file
// with valid checksums would.
func fuzzTable(t *testing.T, data []byte, skipChecksums bool) {
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), ReaderOptions{
		Filters:       []filter.Policy{bloom10, filter.NewLevelDBBloomPolicy(10)},
		Cache:         cache.New(1 << 20),
		skipChecksums: skipChecksums,
	})
	if err != nil {
		if !isDamage(err) {
			t.Fatalf("NewReader error %v does not wrap ErrCorruption", err)
		}
		return
	}
	defer r.Close()
	_ = r.VerifyChecksums()
	_, _ = r.ScanProperties()
	if ts := r.RangeDels(); len(ts) > 0 {
		// What NewReader accepted is canonical and builds a set.
		for i := range ts {
			if bytes.Compare(ts[i].Start, ts[i].End) >= 0 || i > 0 && bytes.Compare(ts[i-1].Start, ts[i].Start) > 0 {
				t.Fatalf("tombstone %d %v accepted out of order or empty", i, ts[i])
			}
		}
		rangedel.Build(ts).MaxSeq([]byte("k"), base.MaxSeqNum)
	}
	it := r.NewIterator()
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		if len(keys) > len(data) {
			t.Fatal("scan does not end")
		}
		keys = append(keys, bytes.Clone(it.Key()))
	}
	n := 0
	for ok := it.Last(); ok; ok = it.Prev() {
		if n > len(data) {
			t.Fatal("reverse scan does not end")
		}
		n++
	}
	probes := append(keys, []byte("k"), base.MakeSeekKey([]byte("key"), 5), nil)
	for _, k := range probes {
		r.MayContain(base.UserKey(k))
		if _, _, _, err := r.Find(k); err != nil && !isDamage(err) {
			t.Fatalf("Find error %v does not wrap ErrCorruption", err)
		}
		it.SeekGE(k)
		it.SeekLT(k)
		if len(k) >= base.TrailerLen {
			checkSeekIndex(t, r, k)
		}
	}
	if err := it.Close(); err != nil && !isDamage(err) {
		t.Fatalf("iterator error %v does not wrap ErrCorruption", err)
	}
}

// isDamage reports whether err is what a damaged or hostile table may
// give: corruption, or (in a LevelDB table, whose trailer types are
// vouched for by their checksums) a compression type not supported.
func isDamage(err error) bool {
	return errors.Is(err, base.ErrCorruption) || errors.Is(err, ErrUnsupportedCompression)
}

// TestWriteFuzzSeeds regenerates the seed corpus files under testdata/fuzz
// when BLOOMKV_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("BLOOMKV_WRITE_SEEDS") != "1" {
		t.Skip("set BLOOMKV_WRITE_SEEDS=1 to rewrite testdata/fuzz seeds")
	}
	blk, mid := seedBlock()
	emptyTable, _ := buildTable(t, nil, WriterOptions{})
	ldbEmpty, _ := levelDBTable(t, nil, WriterOptions{FilterPolicy: ldbPolicy})
	ldbFooter := footer{format: FormatLevelDB, metaindex: blockHandle{100, 20}, index: blockHandle{125, 300}}.encode()
	q := func(b []byte) string { return fmt.Sprintf("[]byte(%q)", b) }
	seeds := map[string][]string{
		"FuzzBlock/valid-block":       {q(blk), q(mid)},
		"FuzzBlock/truncated-block":   {q(blk[:len(blk)-5]), q(mid)},
		"FuzzBlock/huge-restarts":     {q([]byte("\x00\x00\x00\x00\xff\xff\xff\x7f")), q([]byte("a"))},
		"FuzzTable/valid-snappy":      {q(seedTable(t, true))},
		"FuzzTable/valid-raw":         {q(seedTable(t, false))},
		"FuzzTable/empty-table":       {q(emptyTable)},
		"FuzzRoundTrip/small":         {q([]byte("\x03abc\x02v1\x00\x01\x00\x05hello\x03zzz\x00")), "uint16(64)", "uint8(2)", "bool(true)"},
		"FuzzRoundTrip/one-per-block": {q(bytes.Repeat([]byte("\x02ab\x10aaaaaaaaaaaaaaaa"), 40)), "uint16(1)", "uint8(0)", "bool(false)"},

		"FuzzLevelDBFooter/leveldb":        {q(ldbFooter)},
		"FuzzLevelDBFooter/bloomkv":        {q(footer{metaindex: blockHandle{7, 8}, index: blockHandle{20, 30}, version: FormatVersion}.encode())},
		"FuzzLevelDBFooter/nonzero-pad":    {q(append(append(bytes.Clone(ldbFooter[:39]), 1), ldbFooter[40:]...))},
		"FuzzLevelDBFilterBlock/two":       {q(seedLevelDBFilterBlock()), q([]byte("key0003")), "uint64(2100)"},
		"FuzzLevelDBFilterBlock/empty":     {q([]byte("\x00\x00\x00\x00\x0b")), q([]byte("k")), "uint64(0)"},
		"FuzzLevelDBFilterBlock/bad-array": {q([]byte("ab\x00\x00\x00\x00\x09\x00\x00\x00\x0b")), q([]byte("k")), "uint64(4096)"},
		"FuzzLevelDBTable/snappy":          {q(seedLevelDBTable(t, true))},
		"FuzzLevelDBTable/raw":             {q(seedLevelDBTable(t, false))},
		"FuzzLevelDBTable/empty":           {q(ldbEmpty)},
	}
	for name, args := range seeds {
		var b bytes.Buffer
		b.WriteString("go test fuzz v1\n")
		for _, a := range args {
			b.WriteString(a + "\n")
		}
		p := filepath.Join("testdata", "fuzz", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzRoundTrip builds a table from entries derived from the input and
// checks that a Reader gives back exactly those entries.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("\x03abc\x02v1\x00\x01\x00\x05hello\x03zzz\x00"), uint16(64), uint8(2), true)
	f.Add(bytes.Repeat([]byte("\x02ab\x10aaaaaaaaaaaaaaaa"), 40), uint16(1), uint8(0), false)
	f.Fuzz(func(t *testing.T, in []byte, blockSize uint16, restart uint8, compress bool) {
		// in is a sequence of (keyLen byte, key, valueLen byte, value);
		// each key gets a sequence number from its position.
		seen := map[string]bool{}
		var m model
		for i := 0; len(in) > 0; i++ {
			kl := int(in[0]) % 16
			in = in[1:]
			kl = min(kl, len(in))
			ukey := in[:kl]
			in = in[kl:]
			var v []byte
			if len(in) > 0 {
				vl := min(int(in[0]), len(in)-1)
				v = in[1 : 1+vl]
				in = in[1+vl:]
			}
			kind := base.KindSet
			if i%5 == 4 {
				kind = base.KindDelete
			}
			ik := base.MakeInternalKey(ukey, uint64(i%7), kind)
			if seen[string(ik)] {
				continue
			}
			seen[string(ik)] = true
			m = append(m, kv{ik, v})
		}
		sort.Slice(m, func(i, j int) bool { return base.CompareInternal(m[i].key, m[j].key) < 0 })
		data, _ := buildTable(t, m, WriterOptions{
			BlockSize: int(blockSize), BlockRestartInterval: int(restart % 20),
			DisableCompression: !compress, FilterPolicy: bloom10,
		})
		r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{bloom10}})
		defer r.Close()
		rng := rand.New(rand.NewSource(int64(len(in))))
		checkTable(t, r, m, rng, 2*len(m)+5)
		for _, e := range m {
			if !r.MayContain(base.UserKey(e.key)) {
				t.Fatalf("MayContain(%q) false", base.UserKey(e.key))
			}
		}
		if err := r.VerifyChecksums(); err != nil {
			t.Fatal(err)
		}
	})
}
