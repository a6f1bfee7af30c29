package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/sstable"
)

func runSST(args []string, stdout, stderr io.Writer) int {
	return subcommand("sst", map[string]command{
		"dump":  {"dump", "print a table's entries (and, with --blocks, its block layout)", runSSTDump},
		"props": {"props", "print a table's properties, layout summary and filter parameters", runSSTProps},
		"check": {"check", "verify a table's checksums and measure its filter's false-positive rate", runSSTCheck},
	}, args, stdout, stderr)
}

// table is an open table file with its layout and properties.
type table struct {
	path   string
	r      *sstable.Reader
	f      *os.File
	layout *sstable.Layout
	// props are the table's properties, with what a LevelDB table does
	// not record computed by a scan (sstable.Reader.ScanProperties).
	props *sstable.Properties
}

// openTableFile opens the table at path with every filter kvtool knows,
// and reads its layout and properties through package sstable.
func openTableFile(path string) (*table, error) {
	r, f, err := openTable(path, true)
	if err != nil {
		return nil, err
	}
	t := &table{path: path, r: r, f: f}
	if t.layout, err = r.Layout(); err == nil {
		if t.props, err = r.ScanProperties(); err == nil {
			return t, nil
		}
	}
	r.Close()
	f.Close()
	return nil, err
}

// compressionCounts returns how many data blocks use each compression, in
// the order they first appear: "12 snappy, 1 none".
func compressionCounts(l *sstable.Layout) string {
	counts := map[sstable.Compression]int{}
	var order []sstable.Compression
	for _, b := range l.Data {
		if counts[b.Compression] == 0 {
			order = append(order, b.Compression)
		}
		counts[b.Compression]++
	}
	parts := make([]string, 0, len(order))
	for _, c := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[c], c))
	}
	return strings.Join(parts, ", ")
}

func (t *table) close() {
	t.r.Close()
	t.f.Close()
}

func runSSTDump(args []string, stdout, stderr io.Writer) int {
	f := newFlags("sst dump", "kvtool sst dump [flags] FILE",
		`Prints the entries of the table FILE in order, one per line as
KEY#SEQ,KIND => VALUE. With --blocks it first lists every block: data
blocks (offset, size, compression, index separator) and meta blocks. A
separator is >= every key of its block and < every key of the next: the
block's last entry (KEY#SEQ,KIND), or, when the writer could shorten it,
a user key between the blocks that no entry has, printed as KEY (max
sequence). A table that holds range tombstones (DB.DeleteRange) lists
them before its entries, under "range tombstones (N):", one per line as
[START, END)#SEQ: the tombstone deletes the keys from START, inclusive,
to END, exclusive, older than SEQ. They are listed whole, whatever
--start and --limit say. A LevelDB table (NNNNNN.ldb) has no
properties block: its counts come from a scan of its data blocks.`)
	blocks := f.Bool("blocks", false, "list the blocks first")
	noEntries := f.Bool("no_entries", false, "do not print the entries")
	start := f.String("start", "", "start at this user key")
	limit := f.Int("limit", 0, "print at most this many entries (0: all)")
	hexOut := f.Bool("hex", false, "print keys and values as hex (and read --start as hex)")
	maxLen := f.Int("max_len", 64, "abbreviate keys and values longer than this many bytes (0: print whole)")
	pos, err := f.parse(args, 1, 1, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	t, err := openTableFile(pos[0])
	if err != nil {
		return fail(stderr, "sst dump", err)
	}
	defer t.close()
	bf := byteFormat{Hex: *hexOut, Max: *maxLen}
	p := t.props
	fmt.Fprintf(stdout, "%s: %d entries in %d data blocks, %s compression, filter %s, format %s\n",
		filepath.Base(t.path), p.NumEntries, p.NumDataBlocks, p.Compression, policyName(p.FilterPolicy), p.Format)
	if *blocks {
		l := t.layout
		for i, b := range l.Data {
			fmt.Fprintf(stdout, "data block %d: offset %d, size %d, %s, separator %s\n",
				i, b.Offset, b.Size, b.Compression, bf.formatSeparator(b.Separator))
		}
		for _, m := range l.Meta {
			fmt.Fprintf(stdout, "meta block %q: offset %d, size %d\n", m.Name, m.Offset, m.Size)
		}
		fmt.Fprintf(stdout, "metaindex block: offset %d, size %d\n", l.Metaindex.Offset, l.Metaindex.Size)
		fmt.Fprintf(stdout, "index block: offset %d, size %d\n", l.Index.Offset, l.Index.Size)
		fmt.Fprintf(stdout, "footer: offset %d, size %d\n", l.FooterOffset, l.FooterSize)
	}
	if ts := t.r.RangeDels(); len(ts) > 0 {
		fmt.Fprintf(stdout, "range tombstones (%d):\n", len(ts))
		for _, rt := range ts {
			fmt.Fprintf(stdout, "  %s\n", bf.formatTombstone(rt))
		}
	}
	if *noEntries {
		return exitOK
	}
	var seek []byte
	if *start != "" {
		ukey, err := parseBytes(*start, *hexOut)
		if err != nil {
			return fail(stderr, "sst dump", err)
		}
		seek = base.MakeSeekKey(ukey, base.MaxSeqNum)
	}
	it := t.r.NewIterator()
	defer it.Close()
	n := 0
	ok := it.First()
	if seek != nil {
		ok = it.SeekGE(seek)
	}
	for ; ok && (*limit == 0 || n < *limit); ok = it.Next() {
		k := it.Key()
		if _, _, kind, valid := base.ParseInternalKey(k); valid && kind == base.KindDelete {
			fmt.Fprintf(stdout, "%s\n", bf.formatIKey(k))
		} else {
			fmt.Fprintf(stdout, "%s => %s\n", bf.formatIKey(k), bf.format(it.Value()))
		}
		n++
	}
	if err := it.Error(); err != nil {
		return fail(stderr, "sst dump", err)
	}
	return exitOK
}

func policyName(name string) string {
	if name == "" {
		return "none"
	}
	return name
}

func runSSTProps(args []string, stdout, stderr io.Writer) int {
	f := newFlags("sst props", "kvtool sst props [flags] FILE",
		"Prints the properties of the table FILE (entries, sizes, key range,\ncompression, filter policy and bits per key), a summary of its blocks, and\nits filter's parameters with the false-positive rate theory predicts.\nThe smallest and largest keys are those of the point entries; for a table\nwith range tombstones it also prints their count and the table's bounds\nas the MANIFEST records them, which cover the tombstones too. A LevelDB\ntable (NNNNNN.ldb) records only its block sizes and filter policy: the\nrest is computed by reading every data block once.")
	hexOut := f.Bool("hex", false, "print the smallest and largest keys as hex")
	pos, err := f.parse(args, 1, 1, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	t, err := openTableFile(pos[0])
	if err != nil {
		return fail(stderr, "sst props", err)
	}
	defer t.close()
	p, l := t.props, t.layout
	bf := byteFormat{Hex: *hexOut}
	w := stdout
	fmt.Fprintf(w, "file: %s (%d bytes)\n", t.path, l.FileSize)
	if p.Format == sstable.FormatLevelDB {
		fmt.Fprintf(w, "format: %s (no properties block: the counts, key range, compression and bits per key below come from a scan of the data blocks)\n", p.Format)
	} else {
		fmt.Fprintf(w, "format: %s, version %d\n", p.Format, p.FormatVersion)
	}
	fmt.Fprintf(w, "entries: %d\n", p.NumEntries)
	fmt.Fprintf(w, "deletions: %d\n", p.NumDeletions)
	fmt.Fprintf(w, "raw key bytes: %d\n", p.RawKeySize)
	fmt.Fprintf(w, "raw value bytes: %d\n", p.RawValueSize)
	fmt.Fprintf(w, "data blocks: %d (%s)\n", p.NumDataBlocks, compressionCounts(l))
	fmt.Fprintf(w, "data size: %d\n", p.DataSize)
	fmt.Fprintf(w, "index size: %d\n", p.IndexSize)
	fmt.Fprintf(w, "compression: %s\n", p.Compression)
	if p.Smallest == nil && p.Largest == nil {
		fmt.Fprintf(w, "smallest key: none (no point entries)\n")
		fmt.Fprintf(w, "largest key: none (no point entries)\n")
	} else {
		fmt.Fprintf(w, "smallest key: %s\n", bf.formatIKey(p.Smallest))
		fmt.Fprintf(w, "largest key: %s\n", bf.formatIKey(p.Largest))
	}
	if p.NumRangeDeletions > 0 {
		fmt.Fprintf(w, "range deletions: %d\n", p.NumRangeDeletions)
		lo, hi := tableBounds(p, t.r.RangeDels())
		fmt.Fprintf(w, "bounds with range deletions: %s .. %s\n", bf.formatBound(lo), bf.formatBound(hi))
	}
	fmt.Fprintf(w, "filter policy: %s\n", policyName(p.FilterPolicy))
	if p.PrefixExtractor != "" {
		fmt.Fprintf(w, "prefix extractor: %s (%d distinct prefixes in the filter)\n", p.PrefixExtractor, p.NumPrefixes)
	}
	if p.RangeFilter != "" {
		fmt.Fprintf(w, "range filter: %s, %d bytes (%.2f bits per key)\n", p.RangeFilter, p.RangeFilterSize, float64(8*p.RangeFilterSize)/float64(max(p.NumEntries, 1)))
	}
	if p.FilterPolicy != "" {
		fmt.Fprintf(w, "filter size: %d\n", p.FilterSize)
		fmt.Fprintf(w, "filter bits per key: %.4f\n", p.FilterBitsPerKey)
		fm := modelFilter(p.FilterPolicy, p.FilterSize, t.r.FilterParts(), p.NumEntries)
		fmt.Fprintf(w, "filter parameters: %s\n", fm.params)
		if !t.r.HasFilter() {
			fmt.Fprintf(w, "filter usable: no (kvtool does not know policy %q)\n", p.FilterPolicy)
		}
		if fm.ok {
			fmt.Fprintf(w, "filter theoretical false-positive rate: %.4f%% (counting every entry as a key; sst check measures it)\n", 100*fm.theory)
		}
	}
	return exitOK
}

// tableBounds returns the bounds the MANIFEST records for a table with
// properties p and range tombstones ts, as db computes them: its first and
// last point entries, widened to cover each tombstone [start, end)#seq by
// start#seq,RANGEDEL and rangedel.BoundEnd(end)#seq,RANGEDEL (in
// base.CompareInternal order).
// Both are nil for a table with neither entries nor tombstones.
func tableBounds(p *sstable.Properties, ts []rangedel.Tombstone) (smallest, largest []byte) {
	return tableBoundsEnd(p, ts, rangedel.BoundEnd)
}

// tableBoundsEnd is tableBounds with end giving the user key of a
// tombstone's largest bound; before compaction cut tables inside
// tombstones, db recorded the end itself.
func tableBoundsEnd(p *sstable.Properties, ts []rangedel.Tombstone, end func([]byte) []byte) (smallest, largest []byte) {
	smallest, largest = p.Smallest, p.Largest
	for _, t := range ts {
		lo := base.MakeInternalKey(t.Start, t.Seq, base.KindRangeDelete)
		hi := base.MakeInternalKey(end(t.End), t.Seq, base.KindRangeDelete)
		if smallest == nil || base.CompareInternal(lo, smallest) < 0 {
			smallest = lo
		}
		if largest == nil || base.CompareInternal(hi, largest) > 0 {
			largest = hi
		}
	}
	return smallest, largest
}
