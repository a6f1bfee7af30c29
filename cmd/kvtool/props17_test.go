package main

import (
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
)

// TestSSTPropsNewBlocks: sst props shows a table's range deletions, its
// prefix extractor and its range filter.
func TestSSTPropsNewBlocks(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{Prefix: filter.DelimitedPrefix(':'), RangeFilter: testRangePolicy{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a:1", "a:2", "b:1", "c:1"} {
		if err := d.Put([]byte(k), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.DeleteRange([]byte("b:"), []byte("b;"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	out, _ := mustRun(t, 0, "sst", "props", oneFile(t, dir, ".sst"))
	dump, _ := mustRun(t, 0, "sst", "dump", oneFile(t, dir, ".sst"))
	if !strings.Contains(dump, "range tombstones (1):\n  [b:, b;)#5\n") {
		t.Errorf("sst dump does not list the range tombstone:\n%s", dump)
	}
	for _, want := range []string{"range deletions: 1\n", "prefix extractor: bloomkv.DelimitedPrefix(0x3a) (3 distinct prefixes in the filter)\n", "range filter: test.Range, 0 bytes"} {
		if !strings.Contains(out, want) {
			t.Errorf("sst props lacks %q:\n%s", want, out)
		}
	}
}

// testRangePolicy writes an empty range filter that says "may" to all.
type testRangePolicy struct{}

func (testRangePolicy) Name() string                        { return "test.Range" }
func (testRangePolicy) NewBuilder() filter.RangeBuilder     { return testRangeBuilder{} }
func (testRangePolicy) MayContainRange(_, _, _ []byte) bool { return true }

type testRangeBuilder struct{}

func (testRangeBuilder) AddKey([]byte)            {}
func (testRangeBuilder) Finish(dst []byte) []byte { return dst }

// TestWALDumpRangeDel: wal dump prints a range deletion as such.
func TestWALDumpRangeDel(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b db.Batch
	b.Put([]byte("a"), []byte("1"))
	b.DeleteRange([]byte("b"), []byte("d"))
	if err := d.Write(&b, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	var out string
	for _, f := range storeFiles(t, dir, ".log") {
		o, _ := mustRun(t, 0, "wal", "dump", f)
		out += o
	}
	if !strings.Contains(out, " SET a => 1\n") || !strings.Contains(out, " RANGEDEL [b, d)\n") {
		t.Errorf("wal dump:\n%s", out)
	}
}
