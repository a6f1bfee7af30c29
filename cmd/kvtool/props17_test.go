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
