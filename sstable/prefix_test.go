package sstable

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
)

// TestPrefixFilter: the table records its extractor and counts each
// distinct prefix once; every prefix of a key in the table is "may
// contain" (no false negative); absent prefixes are mostly ruled out; a
// reader asking with another extractor's name, or of a table without one,
// is always told "may contain".
func TestPrefixFilter(t *testing.T) {
	ext := filter.DelimitedPrefix(':')
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{FilterPolicy: bloom10, Prefix: ext})
	for u := 0; u < 500; u += 2 {
		for i := 0; i < 4; i++ {
			if err := w.Add(base.MakeInternalKey([]byte(fmt.Sprintf("u%04d:%d", u, i)), 1, base.KindSet), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A key outside the extractor's domain has no prefix.
	if err := w.Add(base.MakeInternalKey([]byte("zzz"), 1, base.KindSet), nil); err != nil {
		t.Fatal(err)
	}
	props, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if props.PrefixExtractor != ext.Name() || props.NumPrefixes != 250 {
		t.Fatalf("properties: extractor %q, %d prefixes", props.PrefixExtractor, props.NumPrefixes)
	}
	r := openTable(t, buf.Bytes(), ReaderOptions{Filters: nil})
	if r.PrefixFiltered(ext.Name()) || !r.PrefixMayContain(ext.Name(), []byte("nope:")) {
		t.Fatal("a reader that does not know the filter policy ruled a prefix out")
	}
	r.Close()
	r = openTable(t, buf.Bytes(), ReaderOptions{Filters: []filter.Policy{bloom10}})
	defer r.Close()
	if got := r.Properties(); got.PrefixExtractor != ext.Name() || got.NumPrefixes != 250 || !bytes.Contains([]byte(got.String()), []byte("prefix filter")) {
		t.Fatalf("read back: %+v", got)
	}
	fp := 0
	for u := 0; u < 500; u++ {
		p := []byte(fmt.Sprintf("u%04d:", u))
		may := r.PrefixMayContain(ext.Name(), p)
		if u%2 == 0 && !may {
			t.Fatalf("prefix %s of keys in the table ruled out", p)
		}
		if u%2 == 1 && may {
			fp++
		}
		if !r.PrefixMayContain(filter.FixedPrefix(6).Name(), p) || !r.PrefixMayContain("", p) {
			t.Fatal("another extractor's prefix was ruled out")
		}
	}
	if fp > 15 { // 250 absent prefixes at about 1%
		t.Errorf("%d of 250 absent prefixes passed the filter", fp)
	}
	// The filter is sized for keys and prefixes together: within 5% of
	// 10 bits for each.
	want := float64(props.NumEntries+props.NumPrefixes) * 10 / 8
	if got := float64(props.FilterSize); got < 0.95*want || got > 1.05*want {
		t.Errorf("filter of %.0f bytes for %d keys and %d prefixes at 10 bits each (%.0f bytes)", got, props.NumEntries, props.NumPrefixes, want)
	}
}

// TestPrefixFilteredByName: a reader filters exactly the prefixes of the
// extractor its table was built with, asked by a name equal to that one
// (a copy of it too), and a closed reader and one without the filter
// policy filter none.
func TestPrefixFilteredByName(t *testing.T) {
	ext := filter.FixedPrefix(4)
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{FilterPolicy: bloom10, Prefix: ext})
	for u := 0; u < 200; u += 2 {
		if err := w.Add(base.MakeInternalKey([]byte(fmt.Sprintf("%04d-key", u)), 1, base.KindSet), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	// A copy of the name that shares no bytes with ext.Name()'s.
	own := string([]byte(ext.Name()))
	for _, policies := range [][]filter.Policy{nil, {bloom10}} {
		r := openTable(t, buf.Bytes(), ReaderOptions{Filters: policies})
		filtered := policies != nil
		for _, asked := range []string{ext.Name(), own, "", filter.FixedPrefix(5).Name()} {
			want := filtered && asked == ext.Name()
			if got := r.PrefixFiltered(asked); got != want {
				t.Fatalf("policies %d: PrefixFiltered(%q) = %v, want %v", len(policies), asked, got, want)
			}
			for u := 0; u < 200; u += 2 {
				p := []byte(fmt.Sprintf("%04d", u))
				if checked, may := r.PrefixCheck(asked, p); checked != want || !may {
					t.Fatalf("PrefixCheck(%q, %s) = %v, %v: a present prefix", asked, p, checked, may)
				}
			}
		}
		r.Close()
		if r.PrefixFiltered(ext.Name()) {
			t.Fatal("a closed reader still filters prefixes")
		}
	}
}
