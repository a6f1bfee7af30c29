package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Property names in the properties block. Values of the names marked
// "uvarint" are uvarints; the others are raw bytes.
const (
	PropCompression      = "bloomkv.compression"         // "snappy" or "none"
	PropDataSize         = "bloomkv.data.size"           // uvarint
	PropFilterBitsPerKey = "bloomkv.filter.bits.per.key" // decimal string, e.g. "10.0625"
	PropFilterPolicy     = "bloomkv.filter.policy"       // policy name, "" when none
	PropFilterSize       = "bloomkv.filter.size"         // uvarint
	PropFormatVersion    = "bloomkv.format.version"      // uvarint
	PropIndexSize        = "bloomkv.index.size"          // uvarint
	PropLargestKey       = "bloomkv.largest.key"         // internal key
	PropNumDataBlocks    = "bloomkv.num.data.blocks"     // uvarint
	PropNumDeletions     = "bloomkv.num.deletions"       // uvarint
	PropNumEntries       = "bloomkv.num.entries"         // uvarint
	PropNumRangeDels     = "bloomkv.num.range-deletions" // uvarint, absent when 0
	PropPrefixExtractor  = "bloomkv.prefix.extractor"    // filter.Prefix name, absent when none
	PropRangeFilter      = "bloomkv.range.filter"        // filter.RangePolicy name, absent when none
	PropRangeFilterSize  = "bloomkv.range.filter.size"   // uvarint, absent when none
	PropNumPrefixes      = "bloomkv.num.prefixes"        // uvarint, absent with no extractor
	PropRawKeySize       = "bloomkv.raw.key.size"        // uvarint
	PropRawValueSize     = "bloomkv.raw.value.size"      // uvarint
	PropSmallestKey      = "bloomkv.smallest.key"        // internal key
)

// Properties describe a table. They are written into its properties block
// by Writer.Finish and read back by NewReader.
//
// A LevelDB table has no properties block. Its Reader's Properties hold
// what the index and metaindex tell: Format, NumDataBlocks, DataSize,
// IndexSize, FilterPolicy and FilterSize; every other field is zero (the
// counts and bounds are unknown, not zero: Reader.ScanProperties computes
// them by reading the data blocks). Writer.Finish returns all of them in
// either format.
type Properties struct {
	// Format is the table's format. It is not stored in the properties
	// block (only bloomkv tables have one): the footer tells it.
	Format Format
	// NumEntries counts all entries; NumDeletions those of kind Delete.
	NumEntries, NumDeletions uint64
	// NumRangeDeletions counts the range tombstones of the range-deletion
	// block (not among NumEntries).
	NumRangeDeletions uint64
	// NumDataBlocks counts the data blocks.
	NumDataBlocks uint64
	// RawKeySize and RawValueSize sum the lengths of the internal keys and
	// values added, before prefix compression and block compression.
	RawKeySize, RawValueSize uint64
	// DataSize is the bytes of the file taken by data blocks, trailers
	// included (the offset at which the meta blocks start).
	DataSize uint64
	// IndexSize is the length of the index block decoded (without its
	// trailer): what a Reader holds in memory for the index. Stored, the
	// block may be snappy-compressed.
	IndexSize uint64
	// FilterSize is the length of the filter (without its trailer), 0 when
	// the table has none.
	FilterSize uint64
	// FilterPolicy is the name of the filter policy, "" when none.
	FilterPolicy string
	// PrefixExtractor names the filter.Prefix whose prefixes the filter
	// also holds ("" when none); NumPrefixes counts the distinct prefixes
	// added.
	PrefixExtractor string
	NumPrefixes     uint64
	// RangeFilter names the range filter's policy ("" when none) and
	// RangeFilterSize is its length.
	RangeFilter     string
	RangeFilterSize uint64
	// FilterBitsPerKey is FilterSize*8/NumEntries (0 with no filter or no
	// entries), rounded to 4 decimals.
	FilterBitsPerKey float64
	// Smallest and Largest are the first and last internal keys of the
	// point entries, nil when there are none. (A table's bounds in the
	// MANIFEST also cover its range tombstones.)
	Smallest, Largest []byte
	// Compression is the name of the data block compression: "snappy" or
	// "none".
	Compression string
	// FormatVersion is the table format version.
	FormatVersion uint32
}

// String renders the properties for tools, one per line.
func (p *Properties) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "entries: %d (deletions %d)\n", p.NumEntries, p.NumDeletions)
	if p.NumRangeDeletions > 0 {
		fmt.Fprintf(&b, "range deletions: %d\n", p.NumRangeDeletions)
	}
	fmt.Fprintf(&b, "data blocks: %d, data size %d, index size %d\n", p.NumDataBlocks, p.DataSize, p.IndexSize)
	fmt.Fprintf(&b, "raw key size: %d, raw value size: %d\n", p.RawKeySize, p.RawValueSize)
	fmt.Fprintf(&b, "filter: %q, %d bytes, %.4f bits/key\n", p.FilterPolicy, p.FilterSize, p.FilterBitsPerKey)
	if p.RangeFilter != "" {
		fmt.Fprintf(&b, "range filter: %q, %d bytes\n", p.RangeFilter, p.RangeFilterSize)
	}
	if p.PrefixExtractor != "" {
		fmt.Fprintf(&b, "prefix filter: %q, %d prefixes in the filter\n", p.PrefixExtractor, p.NumPrefixes)
	}
	if p.Smallest == nil {
		fmt.Fprintf(&b, "smallest: none\nlargest: none (no point entries)\n")
	} else {
		fmt.Fprintf(&b, "smallest: %s\nlargest: %s\n", base.FormatInternalKey(p.Smallest), base.FormatInternalKey(p.Largest))
	}
	if p.Format == FormatLevelDB {
		c := p.Compression
		if c == "" {
			c = "unknown"
		}
		fmt.Fprintf(&b, "compression: %s, format leveldb (no properties block: counts are known only after a scan)\n", c)
	} else {
		fmt.Fprintf(&b, "compression: %s, format version %d\n", p.Compression, p.FormatVersion)
	}
	return b.String()
}

// encode returns the sorted name/value pairs of the properties block.
func (p *Properties) encode() [][2][]byte {
	u := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	kv := [][2][]byte{
		{[]byte(PropCompression), []byte(p.Compression)},
		{[]byte(PropDataSize), u(p.DataSize)},
		{[]byte(PropFilterBitsPerKey), []byte(strconv.FormatFloat(p.FilterBitsPerKey, 'f', -1, 64))},
		{[]byte(PropFilterPolicy), []byte(p.FilterPolicy)},
		{[]byte(PropFilterSize), u(p.FilterSize)},
		{[]byte(PropFormatVersion), u(uint64(p.FormatVersion))},
		{[]byte(PropIndexSize), u(p.IndexSize)},
		{[]byte(PropNumDataBlocks), u(p.NumDataBlocks)},
		{[]byte(PropNumDeletions), u(p.NumDeletions)},
		{[]byte(PropNumEntries), u(p.NumEntries)},
		{[]byte(PropRawKeySize), u(p.RawKeySize)},
		{[]byte(PropRawValueSize), u(p.RawValueSize)},
	}
	if p.NumRangeDeletions > 0 {
		kv = append(kv, [2][]byte{[]byte(PropNumRangeDels), u(p.NumRangeDeletions)})
	}
	if p.RangeFilter != "" {
		kv = append(kv, [2][]byte{[]byte(PropRangeFilter), []byte(p.RangeFilter)}, [2][]byte{[]byte(PropRangeFilterSize), u(p.RangeFilterSize)})
	}
	if p.PrefixExtractor != "" {
		kv = append(kv, [2][]byte{[]byte(PropPrefixExtractor), []byte(p.PrefixExtractor)}, [2][]byte{[]byte(PropNumPrefixes), u(p.NumPrefixes)})
	}
	if p.Smallest != nil || p.Largest != nil {
		kv = append(kv, [2][]byte{[]byte(PropSmallestKey), p.Smallest}, [2][]byte{[]byte(PropLargestKey), p.Largest})
	}
	sort.Slice(kv, func(i, j int) bool { return bytes.Compare(kv[i][0], kv[j][0]) < 0 })
	return kv
}

// decodeProperties parses a properties block. Unknown names are ignored so
// that later writers may add properties.
func decodeProperties(block []byte) (*Properties, error) {
	var it blockIter
	if err := it.init(true, block); err != nil {
		return nil, err
	}
	p := &Properties{}
	for ok := it.First(); ok; ok = it.Next() {
		name, v := it.Key(), it.Value()
		var dst *uint64
		switch string(name) {
		case PropCompression:
			p.Compression = string(v)
		case PropFilterPolicy:
			p.FilterPolicy = string(v)
		case PropPrefixExtractor:
			p.PrefixExtractor = string(v)
		case PropRangeFilter:
			p.RangeFilter = string(v)
		case PropRangeFilterSize:
			dst = &p.RangeFilterSize
		case PropNumPrefixes:
			dst = &p.NumPrefixes
		case PropSmallestKey:
			p.Smallest = bytes.Clone(v)
		case PropLargestKey:
			p.Largest = bytes.Clone(v)
		case PropFilterBitsPerKey:
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				return nil, base.CorruptionErrorf("sstable: property %s: %q", name, v)
			}
			p.FilterBitsPerKey = f
		case PropDataSize:
			dst = &p.DataSize
		case PropFilterSize:
			dst = &p.FilterSize
		case PropIndexSize:
			dst = &p.IndexSize
		case PropNumDataBlocks:
			dst = &p.NumDataBlocks
		case PropNumDeletions:
			dst = &p.NumDeletions
		case PropNumEntries:
			dst = &p.NumEntries
		case PropNumRangeDels:
			dst = &p.NumRangeDeletions
		case PropRawKeySize:
			dst = &p.RawKeySize
		case PropRawValueSize:
			dst = &p.RawValueSize
		case PropFormatVersion:
			x, n := binary.Uvarint(v)
			if n <= 0 || n != len(v) || x > 1<<32-1 {
				return nil, base.CorruptionErrorf("sstable: property %s: bad value", name)
			}
			p.FormatVersion = uint32(x)
		}
		if dst != nil {
			x, n := binary.Uvarint(v)
			if n <= 0 || n != len(v) {
				return nil, base.CorruptionErrorf("sstable: property %s: bad uvarint", name)
			}
			*dst = x
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if (p.Smallest == nil) != (p.Largest == nil) {
		return nil, base.CorruptionErrorf("sstable: properties hold only one of smallest and largest key")
	}
	return p, nil
}
