package sstable

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
)

// The tables under testdata/leveldb were written by LevelDB 1.23 itself
// (testdata/ldbgen/gen.cc, "ldbgen make"): two stores of the same writes,
// block_size 1024, Bloom filter of 10 bits/key, one with snappy and one
// without, each three tables. <store>.expected lists the store's final
// contents. bloomkv-*.ldb were written by this package, and bloomkv-*.dump
// is what LevelDB's Table reader ("ldbgen dump") read from them.

// ldbFill is gen.cc's Fill: byte i of a value written at sequence seq.
func ldbFill(seq, i uint64) byte {
	if seq%3 == 0 {
		x := seq*0x9e3779b97f4a7c15 + i*0xbf58476d1ce4e5b9
		x ^= x >> 31
		x *= 0x94d049bb133111eb
		x ^= x >> 29
		return byte(x)
	}
	return byte('a' + (seq+i/8)%4)
}

// ldbValue is the value of length n gen.cc writes at sequence seq.
func ldbValue(seq uint64, n int) []byte {
	v := []byte(fmt.Sprintf("s%d:", seq))
	for len(v) < n {
		v = append(v, ldbFill(seq, uint64(len(v))))
	}
	return v
}

// ldbPolicy is the filter policy of the LevelDB fixtures.
var ldbPolicy = filter.NewLevelDBBloomPolicy(10)

// ldbStores are the fixture stores and whether their tables are snappy.
var ldbStores = []struct {
	name   string
	snappy bool
}{{"snappy", true}, {"none", false}}

// readLevelDBFixture reads a fixture table and its entries (checked to be
// in strictly increasing order).
func readLevelDBFixture(t *testing.T, path string) ([]byte, model) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{ldbPolicy}})
	defer r.Close()
	var m model
	it := r.NewIterator()
	for ok := it.First(); ok; ok = it.Next() {
		if len(m) > 0 && base.CompareInternal(m[len(m)-1].key, it.Key()) >= 0 {
			t.Fatalf("%s: keys out of order at %s", path, base.FormatInternalKey(it.Key()))
		}
		m = append(m, kv{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
	}
	if err := it.Close(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data, m
}

func fixtureTables(t *testing.T, store string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "leveldb", store+"-*.ldb"))
	if err != nil || len(paths) < 2 {
		t.Fatalf("fixtures of store %s: %v %v", store, paths, err)
	}
	return paths
}

// readExpected parses <store>.expected: hexkey,seq,valuelen lines.
func readExpected(t *testing.T, store string) map[string][2]uint64 {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "leveldb", store+".expected"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string][2]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), ",")
		if len(parts) != 3 {
			t.Fatalf("bad line %q", sc.Text())
		}
		k, err1 := hex.DecodeString(parts[0])
		seq, err2 := strconv.ParseUint(parts[1], 10, 64)
		n, err3 := strconv.ParseUint(parts[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		want[string(k)] = [2]uint64{seq, n}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestLevelDBFixtures reads the tables LevelDB 1.23 wrote: every entry
// holds the value its writer gave it, every reading path agrees, the filter
// never rejects a present key, and the newest entry of each key across the
// tables is the store's final contents.
func TestLevelDBFixtures(t *testing.T) {
	for _, st := range ldbStores {
		t.Run(st.name, func(t *testing.T) {
			newest := map[string]kv{} // user key -> newest entry
			var tableCompressed, indexCompressed, emptyFilters int
			for _, path := range fixtureTables(t, st.name) {
				data, m := readLevelDBFixture(t, path)
				for _, e := range m {
					ukey, seq, kind, ok := base.ParseInternalKey(e.key)
					if !ok {
						t.Fatalf("%s: malformed key %q", path, e.key)
					}
					switch {
					case kind == base.KindDelete && len(e.value) != 0:
						t.Fatalf("%s: tombstone %s with a value", path, base.FormatInternalKey(e.key))
					case kind == base.KindSet && !bytes.Equal(e.value, ldbValue(seq, len(e.value))):
						t.Fatalf("%s: %s holds %q, not the value written at its sequence number", path, base.FormatInternalKey(e.key), e.value)
					}
					if old, ok := newest[string(ukey)]; !ok || base.Trailer(old.key)>>8 < seq {
						newest[string(ukey)] = e
					}
				}

				r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{ldbPolicy}})
				if r.Format() != FormatLevelDB || !r.HasFilter() || r.FilterPolicyName() != filter.LevelDBBloomPolicyName {
					t.Fatalf("%s: format %v, filter %q", path, r.Format(), r.FilterPolicyName())
				}
				if p, _ := r.Filter(); p != nil {
					t.Fatalf("%s: Filter() gave a whole-table policy for per-block filters", path)
				}
				if err := r.VerifyChecksums(); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				checkTable(t, r, m, rand.New(rand.NewSource(int64(len(data)))), 3*len(m))
				for _, e := range m {
					if !r.MayContain(base.UserKey(e.key)) {
						t.Fatalf("%s: MayContain(%q) false for a present key", path, base.UserKey(e.key))
					}
				}
				sp, err := r.ScanProperties()
				if err != nil {
					t.Fatal(err)
				}
				if sp.NumEntries != uint64(len(m)) || !bytes.Equal(sp.Smallest, m[0].key) || !bytes.Equal(sp.Largest, m[len(m)-1].key) {
					t.Fatalf("%s: ScanProperties %+v", path, sp)
				}
				if raw, comp := blockTypes(t, data); comp > 0 {
					tableCompressed++
					if !st.snappy {
						t.Fatalf("%s: %d snappy data blocks in an uncompressed store", path, comp)
					}
					t.Logf("%s: %d entries, %d raw and %d snappy data blocks, %d filters", path, len(m), raw, comp, r.ldbFilter.num)
				} else {
					t.Logf("%s: %d entries, %d raw data blocks, %d filters", path, len(m), raw, r.ldbFilter.num)
				}
				ft, err := decodeFooter(data[len(data)-LevelDBFooterLen:])
				if err != nil {
					t.Fatal(err)
				}
				if Compression(data[ft.index.offset+ft.index.size]) == SnappyCompression {
					indexCompressed++
				}
				for i := 0; i < r.ldbFilter.num; i++ {
					if _, ok := r.ldbFilter.forBlock(uint64(i) << r.ldbFilter.baseLg); !ok {
						emptyFilters++
					}
				}
				r.Close()
			}
			if st.snappy && (tableCompressed == 0 || indexCompressed == 0) {
				t.Fatalf("snappy store: %d tables with snappy data blocks, %d with a snappy index; want some of each", tableCompressed, indexCompressed)
			}
			if emptyFilters == 0 {
				t.Fatal("no empty filter (2 KiB range without a block start) in the fixtures")
			}
			want := readExpected(t, st.name)
			got := 0
			for ukey, e := range newest {
				_, seq, kind, _ := base.ParseInternalKey(e.key)
				w, ok := want[ukey]
				if kind == base.KindDelete {
					if ok {
						t.Fatalf("key %q: newest entry is a tombstone, LevelDB has it", ukey)
					}
					continue
				}
				got++
				if !ok || w != [2]uint64{seq, uint64(len(e.value))} {
					t.Fatalf("key %q: newest entry %s with %d bytes, LevelDB has %v (present %v)", ukey, base.FormatInternalKey(e.key), len(e.value), w, ok)
				}
			}
			if got != len(want) {
				t.Fatalf("%d live keys in the tables, LevelDB has %d", got, len(want))
			}
		})
	}
}

// TestLevelDBRewriteIdentical rewrites the entries of each LevelDB-written
// fixture with this package's Writer in FormatLevelDB, with the options of
// the store, and compares the bytes. Uncompressed tables must come out
// identical, filter block included; a snappy table may differ only where
// Go's snappy encoder chose other bytes than C++ snappy, so its blocks are
// compared decoded.
func TestLevelDBRewriteIdentical(t *testing.T) {
	identical := 0
	defer func() { t.Logf("%d tables byte for byte identical", identical) }()
	for _, st := range ldbStores {
		for _, path := range fixtureTables(t, st.name) {
			data, m := readLevelDBFixture(t, path)
			ours, _ := buildTable(t, m, WriterOptions{
				Format: FormatLevelDB, BlockSize: 1024, FilterPolicy: ldbPolicy, DisableCompression: !st.snappy,
			})
			if bytes.Equal(ours, data) {
				identical++
				continue
			}
			if !st.snappy {
				i := 0
				for i < len(ours) && i < len(data) && ours[i] == data[i] {
					i++
				}
				t.Fatalf("%s: rewritten table (%d bytes) differs from LevelDB's (%d bytes) at offset %d", path, len(ours), len(data), i)
			}
			compareDecodedLayout(t, path, data, ours)
		}
	}
}

// compareDecodedLayout checks that two LevelDB tables hold the same blocks
// at the same positions once decoded: the same index and filter (after
// decoding), and data blocks with the same contents.
func compareDecodedLayout(t *testing.T, path string, want, got []byte) {
	t.Helper()
	rw := openTable(t, want, ReaderOptions{Filters: []filter.Policy{ldbPolicy}})
	rg := openTable(t, got, ReaderOptions{Filters: []filter.Policy{ldbPolicy}})
	if !bytes.Equal(rw.filterData, rg.filterData) {
		t.Fatalf("%s: filter blocks differ", path)
	}
	var iw, ig blockIter
	iw.init(false, rw.index)
	ig.init(false, rg.index)
	okw, okg := iw.First(), ig.First()
	for ; okw && okg; okw, okg = iw.Next(), ig.Next() {
		if !bytes.Equal(iw.Key(), ig.Key()) {
			t.Fatalf("%s: index keys differ: %s, %s", path, base.FormatInternalKey(iw.Key()), base.FormatInternalKey(ig.Key()))
		}
		hw, _, _ := decodeHandle(iw.Value())
		hg, _, _ := decodeHandle(ig.Value())
		bw, err := rw.readBlock(hw)
		if err != nil {
			t.Fatal(err)
		}
		bg, err := rg.readBlock(hg)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bw, bg) {
			t.Fatalf("%s: data blocks at %d and %d differ decoded", path, hw.offset, hg.offset)
		}
	}
	if okw || okg {
		t.Fatalf("%s: index lengths differ", path)
	}
}

// TestLevelDBReadsOurTables checks the tables this package writes in
// FormatLevelDB against what LevelDB 1.23's own Table reader read from
// them (testdata/leveldb/bloomkv-*.dump, made by "ldbgen dump"). The
// tables are rebuilt from a fixed model and must still be the bytes
// LevelDB read; if the Writer's output changes on purpose, rerun with
// BLOOMKV_WRITE_LEVELDB=1 to rewrite the tables, then regenerate each dump
// with ldbgen dump and check it.
func TestLevelDBReadsOurTables(t *testing.T) {
	m := randomModel(rand.New(rand.NewSource(19)), 150, 12, 40)
	for _, compress := range []bool{true, false} {
		name := "bloomkv-none"
		if compress {
			name = "bloomkv-snappy"
		}
		data, _ := buildTable(t, m, WriterOptions{
			Format: FormatLevelDB, BlockSize: 256, FilterPolicy: ldbPolicy, DisableCompression: !compress,
		})
		path := filepath.Join("testdata", "leveldb", name+".ldb")
		if os.Getenv("BLOOMKV_WRITE_LEVELDB") == "1" {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s: now run ldbgen dump %s > %s.dump", path, path, strings.TrimSuffix(path, ".ldb"))
			continue
		}
		committed, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(committed, data) {
			t.Fatalf("%s: the Writer no longer writes the table LevelDB read (see the test's doc to regenerate)", path)
		}
		if _, comp := blockTypes(t, data); compress != (comp > 0) {
			t.Fatalf("%s: %d snappy data blocks", path, comp)
		}
		dump, err := os.ReadFile(strings.TrimSuffix(path, ".ldb") + ".dump")
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		for _, e := range m {
			fmt.Fprintf(&want, "%x,%x\n", e.key, e.value)
		}
		if !bytes.Equal(dump, want.Bytes()) {
			t.Fatalf("%s: LevelDB read other entries than were written", path)
		}
	}
}

// levelDBBlockTrailer returns the offset of the trailer of the index block
// of a LevelDB table.
func levelDBIndexTrailer(t testing.TB, data []byte) int {
	ft, err := decodeFooter(data[len(data)-LevelDBFooterLen:])
	if err != nil {
		t.Fatal(err)
	}
	return int(ft.index.offset + ft.index.size)
}

// setBlockType rewrites the compression type in the trailer at off and
// recomputes its LevelDB checksum, as a writer of that type would have.
func setBlockType(data []byte, blockStart, trailer int, typ byte) {
	data[trailer] = typ
	binary.LittleEndian.PutUint32(data[trailer+1:], levelDBChecksum(data[blockStart:trailer+1]))
}
