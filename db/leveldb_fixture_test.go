package db

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/ldbcompat"
	"github.com/bloomkv/bloomkv/sstable"
)

// leveldbFixtures are the stores LevelDB 1.23 and goleveldb wrote
// (internal/ldbcompat describes their writes).
var leveldbFixtures = []string{"testdata/leveldb/cpp", "testdata/leveldb/goleveldb"}

// copyFixture copies a fixture store into a new temporary directory, so
// that opening it (which replays its logs and rewrites its MANIFEST)
// leaves the committed one as it is.
func copyFixture(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := ldbcompat.CopyStore(src, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestOpenLevelDBFixtures: bloomkv opens the stores LevelDB and goleveldb
// wrote, in place, and reads every key as they wrote it (the model of
// their writes), through Get, the iterator in both directions and
// MultiGet; an absent key is answered by the tables' LevelDB Bloom
// filters, counted in Metrics, without reading a data block for most.
func TestOpenLevelDBFixtures(t *testing.T) {
	for _, fixture := range leveldbFixtures {
		t.Run(filepath.Base(fixture), func(t *testing.T) {
			for _, ro := range []bool{true, false} {
				dir := copyFixture(t, fixture)
				d, err := Open(dir, &Options{ReadOnly: ro})
				if err != nil {
					t.Fatalf("read-only %v: %v", ro, err)
				}
				if d.Format() != FormatLevelDB {
					t.Fatalf("Format() = %v", d.Format())
				}
				model := ldbcompat.Model()
				checkFormatModel(t, d, model)
				checkReverse(t, d, model)

				keys := make([][]byte, 0, 64)
				for i := 0; i < 64; i++ {
					keys = append(keys, []byte(ldbcompat.Key(i*31)))
				}
				vals, errs := d.MultiGet(keys, nil)
				for i, k := range keys {
					v, ok := model[string(k)]
					switch {
					case ok && (errs[i] != nil || string(vals[i]) != v):
						t.Fatalf("MultiGet %q = %q, %v; want %q", k, vals[i], errs[i], v)
					case !ok && !errors.Is(errs[i], ErrNotFound):
						t.Fatalf("MultiGet %q = %q, %v; want not found", k, vals[i], errs[i])
					}
				}

				// Absent keys: the filters answer.
				if !ro {
					// Flush what the logs held, so every key is in a table.
					if err := d.CompactRange(nil, nil); err != nil {
						t.Fatal(err)
					}
				}
				before := d.Metrics()
				absent := ldbcompat.Absent(2000)
				for _, k := range absent {
					if _, err := d.Get([]byte(k), nil); !errors.Is(err, ErrNotFound) {
						t.Fatalf("Get(%q) = %v", k, err)
					}
				}
				after := d.Metrics()
				checks := after.Filter.Checks - before.Filter.Checks
				useful := after.Filter.Useful - before.Filter.Useful
				blocks := after.DataBlocksRead - before.DataBlocksRead
				t.Logf("read-only %v: %d absent Gets: %d filter checks, %d negatives, %d data blocks read",
					ro, len(absent), checks, useful, blocks)
				// A few absent keys lie outside every table's range.
				if checks < int64(len(absent))*9/10 {
					t.Fatalf("%d filter checks for %d absent keys: the LevelDB filters were not asked", checks, len(absent))
				}
				// 10 bits/key: about 1% false positives per table checked;
				// 5% leaves room for chance and for tables without a filter.
				if float64(checks-useful) > 0.05*float64(checks) || float64(blocks) > 0.05*float64(checks) {
					t.Fatalf("filters said maybe %d times of %d, %d blocks read", checks-useful, checks, blocks)
				}
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func checkReverse(t *testing.T, d *DB, model map[string]string) {
	t.Helper()
	it := d.NewIterator(nil)
	defer it.Close()
	n := 0
	var prev []byte
	for it.Last(); it.Valid(); it.Prev() {
		if prev != nil && bytes.Compare(it.Key(), prev) >= 0 {
			t.Fatalf("reverse iteration: %q after %q", it.Key(), prev)
		}
		prev = append(prev[:0], it.Key()...)
		if model[string(it.Key())] != string(it.Value()) {
			t.Fatalf("reverse: %q=%q, model %q", it.Key(), it.Value(), model[string(it.Key())])
		}
		n++
	}
	if n != len(model) {
		t.Fatalf("reverse iteration saw %d keys, model has %d", n, len(model))
	}
}

// TestLevelDBFixtureWriteReopen: bloomkv writes to a LevelDB fixture,
// deletes, compacts and reopens it; the store keeps LevelDB's format and
// every key, and the committed fixture is untouched.
func TestLevelDBFixtureWriteReopen(t *testing.T) {
	for _, fixture := range leveldbFixtures {
		t.Run(filepath.Base(fixture), func(t *testing.T) {
			orig := dirState(t, fixture)
			dir := copyFixture(t, fixture)
			d, err := Open(dir, &Options{WriteBufferSize: 64 << 10, TargetFileSize: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			model := ldbcompat.Model()
			ops := ldbcompat.RoundTripOps()
			for _, op := range ops {
				if op.Delete {
					err = d.Delete([]byte(op.Key), nil)
				} else {
					err = d.Put([]byte(op.Key), []byte(op.Value), nil)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			ldbcompat.Apply(model, ops)
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			checkFormatModel(t, d, model)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if sst, _ := tableNames(t, dir); len(sst) != 0 {
				t.Fatalf("bloomkv wrote %v into a LevelDB store", sst)
			}
			d, err = Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if d.Format() != FormatLevelDB {
				t.Fatalf("Format() = %v after reopening", d.Format())
			}
			checkFormatModel(t, d, model)
			checkReverse(t, d, model)
			if !sameDirState(orig, dirState(t, fixture)) {
				t.Fatal("the committed fixture changed")
			}
		})
	}
}

// setZstd sets the trailer of the block of the table file at name that
// lies at [off, off+size) to compression type 2 (zstd, as LevelDB releases
// after 1.23 write it) with a checksum that matches.
func setZstd(t *testing.T, name string, off, size uint64) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	end := off + size
	if end+5 > uint64(len(b)) {
		t.Fatalf("block [%d, %d) past the file's %d bytes", off, end, len(b))
	}
	b[end] = 2
	tab := crc32.MakeTable(crc32.Castagnoli)
	crc := crc32.Update(crc32.Checksum(b[off:end], tab), tab, b[end:end+1])
	binary.LittleEndian.PutUint32(b[end+1:], (crc>>15|crc<<17)+0xa282ead8)
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tableLayout returns the layout of the table file at name.
func tableLayout(t *testing.T, name string) *sstable.Layout {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	r, err := sstable.NewReader(f, fi.Size(), sstable.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestOpenRefusesUnsupportedCompression: a LevelDB store with a table
// whose blocks use a compression bloomkv does not read (zstd, type 2, as
// later LevelDB releases write) is refused with ErrUnsupportedCompression
// before anything in its directory changes: read-write, read-only, and
// when asked to convert the store. The zstd block is the index of a
// snappy table (000036), or a data block of a table stored raw (000042,
// written without compression: its index says nothing), which the review
// found opened, the store rewritten, and the reads failing after.
func TestOpenRefusesUnsupportedCompression(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table string
		patch func(t *testing.T, name string)
	}{
		{"index block", "000036", func(t *testing.T, name string) {
			l := tableLayout(t, name)
			setZstd(t, name, l.Index.Offset, l.Index.Size)
		}},
		{"data block of a raw table", "000042", func(t *testing.T, name string) {
			l := tableLayout(t, name)
			if l.Data[0].Compression != sstable.NoCompression {
				t.Fatalf("table 000042's first block is stored %v, not raw", l.Data[0].Compression)
			}
			last := l.Data[len(l.Data)-1]
			setZstd(t, name, last.Offset, last.Size)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyFixture(t, "testdata/leveldb/cpp")
			tc.patch(t, filepath.Join(dir, tc.table+".ldb"))
			before := dirState(t, dir)
			for _, o := range []Options{{}, {ReadOnly: true}, {Format: FormatBloomKV}} {
				_, err := Open(dir, &o)
				if !errors.Is(err, ErrUnsupportedCompression) || !strings.Contains(err.Error(), tc.table) || !strings.Contains(err.Error(), "zstd") {
					t.Fatalf("%+v: Open = %v, want ErrUnsupportedCompression naming the table and zstd", o, err)
				}
				if !sameDirState(before, dirState(t, dir)) {
					t.Fatalf("%+v: the refused Open changed the directory", o)
				}
			}
		})
	}
}

// TestExplainLevelDBTables: a lookup's trace on a LevelDB store names its
// tables by their files (.ldb) and its LevelDB filters without a made-up
// bits per key.
func TestExplainLevelDBTables(t *testing.T) {
	d, err := Open(copyFixture(t, "testdata/leveldb/cpp"), &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, tr, err := d.ExplainGet([]byte(ldbcompat.Absent(1)[0]), nil)
	if !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	tables := 0
	for _, s := range tr.Steps {
		if s.Where == "table" {
			tables++
			if !strings.HasSuffix(s.FileName, ".ldb") {
				t.Fatalf("step names %q", s.FileName)
			}
		}
	}
	text := tr.String()
	if tables == 0 || !strings.Contains(text, ".ldb") || strings.Contains(text, "0.0 bits/key") || !strings.Contains(text, "leveldb.BuiltinBloomFilter2") {
		t.Fatalf("trace:\n%s", text)
	}
}

// TestOpenRefusesRocksDB: a store RocksDB 7.8.3 wrote (its comparator is
// named as LevelDB's) is refused with ErrUnsupportedFormat, read-write and
// read-only, changing nothing (it used to fail as "corruption: unknown tag
// 103"); so is a LevelDB store holding a table with RocksDB's magic.
func TestOpenRefusesRocksDB(t *testing.T) {
	dir := copyFixture(t, "testdata/rocksdb/store")
	before := dirState(t, dir)
	for _, o := range []Options{{}, {ReadOnly: true}, {Format: FormatBloomKV}} {
		if _, err := Open(dir, &o); !errors.Is(err, ErrUnsupportedFormat) || !strings.Contains(err.Error(), "RocksDB") {
			t.Fatalf("%+v: %v", o, err)
		}
		if !sameDirState(before, dirState(t, dir)) {
			t.Fatalf("%+v: the refused Open changed the directory", o)
		}
	}

	dir = copyFixture(t, "testdata/leveldb/cpp")
	name := filepath.Join(dir, "000040.ldb")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(b[len(b)-8:], 0x88e241b785f4cff7)
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before = dirState(t, dir)
	for _, o := range []Options{{}, {ReadOnly: true}} {
		if _, err := Open(dir, &o); !errors.Is(err, ErrUnsupportedFormat) || !strings.Contains(err.Error(), "000040") {
			t.Fatalf("%+v: %v", o, err)
		}
	}
	if !sameDirState(before, dirState(t, dir)) {
		t.Fatal("the refused Open changed the directory")
	}
}

// TestLevelDBFixtureCorruption: one flipped byte anywhere in a LevelDB
// table (here every 3,671st of the level-2 table, data, index, filter and
// footer alike) makes reads of that table fail with ErrCorruption or
// still answer right: never a wrong value, never "not found" for a
// present key.
func TestLevelDBFixtureCorruption(t *testing.T) {
	if testing.Short() {
		t.Skip("opens the fixture once per flipped byte")
	}
	orig, err := os.ReadFile("testdata/leveldb/cpp/000036.ldb")
	if err != nil {
		t.Fatal(err)
	}
	model := ldbcompat.Model()
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	dir := copyFixture(t, "testdata/leveldb/cpp")
	name := filepath.Join(dir, "000036.ldb")
	detected := 0
	for off := len(orig) - 1; off >= 0; off -= 3671 {
		b := bytes.Clone(orig)
		b[off] ^= 0x10
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := Open(dir, &Options{ReadOnly: true})
		if err != nil {
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("byte %d: Open = %v", off, err)
			}
			detected++
			continue
		}
		bad := false
		for _, k := range keys {
			v, err := d.Get([]byte(k), nil)
			switch {
			case err == nil && string(v) == model[k]:
			case err != nil && errors.Is(err, ErrCorruption):
				bad = true
			default:
				d.Close()
				t.Fatalf("byte %d flipped: Get(%q) = %q, %v; want %q or a corruption error", off, k, v, err, model[k])
			}
		}
		for _, k := range ldbcompat.Absent(200) {
			if _, err := d.Get([]byte(k), nil); err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrCorruption) {
				d.Close()
				t.Fatalf("byte %d flipped: Get(%q) = %v", off, k, err)
			}
		}
		if bad {
			detected++
		}
		d.Close()
	}
	t.Logf("%d of %d flips reported as corruption, the rest read right", detected, (len(orig)+3670)/3671)
}

// TestLevelDBTableWithUnknownFilter: a LevelDB table whose filter has a
// name bloomkv does not know is read without a filter, correctly; the
// other tables still use theirs.
func TestLevelDBTableWithUnknownFilter(t *testing.T) {
	dir := copyFixture(t, "testdata/leveldb/cpp")
	name := filepath.Join(dir, "000036.ldb")
	l := tableLayout(t, name)
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	mi := b[l.Metaindex.Offset : l.Metaindex.Offset+l.Metaindex.Size]
	if b[l.Metaindex.Offset+l.Metaindex.Size] != 0 {
		t.Skip("the metaindex is compressed")
	}
	i := bytes.Index(mi, []byte("BuiltinBloomFilter2"))
	if i < 0 {
		t.Fatal("no filter entry in the metaindex")
	}
	mi[i+len("BuiltinBloomFilter2")-1] = 'X' // filter.leveldb.BuiltinBloomFilterX
	setZstdFree := func() {
		end := l.Metaindex.Offset + l.Metaindex.Size
		tab := crc32.MakeTable(crc32.Castagnoli)
		crc := crc32.Update(crc32.Checksum(b[l.Metaindex.Offset:end], tab), tab, b[end:end+1])
		binary.LittleEndian.PutUint32(b[end+1:], (crc>>15|crc<<17)+0xa282ead8)
	}
	setZstdFree()
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	checkFormatModel(t, d, ldbcompat.Model())
	before := d.Metrics()
	for _, k := range ldbcompat.Absent(500) {
		if _, err := d.Get([]byte(k), nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q) = %v", k, err)
		}
	}
	after := d.Metrics()
	if l2 := after.Levels[2].Filter.Checks - before.Levels[2].Filter.Checks; l2 != 0 {
		t.Fatalf("%d filter checks in the level-2 table, whose filter is unknown", l2)
	}
	if l1 := after.Levels[1].Filter.Checks - before.Levels[1].Filter.Checks; l1 == 0 {
		t.Fatal("no filter checks in level 1, whose filter is LevelDB's")
	}
}
