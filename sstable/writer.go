package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/golang/snappy"
)

const (
	// DefaultBlockSize is the data block size used when WriterOptions.BlockSize is 0.
	DefaultBlockSize = 4096
	// DefaultBlockRestartInterval is the restart interval used when
	// WriterOptions.BlockRestartInterval is 0.
	DefaultBlockRestartInterval = 16
	// MaxBlockSize is the largest BlockSize a Writer uses; larger values are
	// lowered to it.
	MaxBlockSize = 256 << 20
	// MaxEntrySize is the largest len(ikey)+len(value) Add accepts: 512
	// MiB, above the largest key plus value a DB accepts (8 MiB + 256
	// MiB), so a table can always hold what a log holds.
	MaxEntrySize = 512 << 20
)

// WriterOptions configure a Writer. The zero value gives 4 KiB snappy data
// blocks with a restart point every 16 entries and no filter.
type WriterOptions struct {
	// BlockSize is the size at which a data block is closed (uncompressed
	// bytes). 0 means DefaultBlockSize; values above MaxBlockSize are
	// lowered to it. An entry larger than the block size gets a block of its
	// own, as large as it needs.
	BlockSize int
	// BlockRestartInterval is the number of entries between restart points
	// in data blocks. 0 (or negative) means DefaultBlockRestartInterval.
	BlockRestartInterval int
	// DisableCompression stores every data block raw. By default (false)
	// a data block is snappy-compressed when that saves at least 1/8 of its
	// size, and stored raw otherwise.
	DisableCompression bool
	// FilterPolicy builds the table's filter over the user keys of all
	// entries. nil or filter.None: the table gets no filter block.
	FilterPolicy filter.Policy
	// Prefix, when set with a FilterPolicy, also adds each distinct
	// prefix of the keys to the filter, and records the extractor's name
	// in the properties, so Reader.PrefixMayContain can answer for it.
	Prefix filter.Prefix
	// RangeFilter, when set, builds a range filter over the user keys of
	// all entries, for Reader.RangeMayContain.
	RangeFilter filter.RangePolicy
	// Format is the table format to write: FormatBloomKV (the zero value)
	// or FormatLevelDB, a table LevelDB 1.x and goleveldb read: masked
	// CRC-32C trailers; data, metaindex and index blocks snappy-compressed
	// as LevelDB compresses them (unless DisableCompression); index keys
	// shortened by LevelDB's rules; a filter block of one filter per 2 KiB
	// of data-block offsets, named "filter.leveldb.BuiltinBloomFilter2";
	// no properties block; the 48-byte footer. With the same options
	// (BlockSize, BlockRestartInterval, compression, bits per key) and
	// entries, the table is byte for byte the one LevelDB 1.23 writes,
	// snappy's output aside (TestLevelDBRewriteIdentical). In FormatLevelDB, FilterPolicy must be nil,
	// filter.None or made by filter.NewLevelDBBloomPolicy, and Prefix and
	// RangeFilter must be nil; otherwise, and on AddRangeDel, the Writer
	// fails with an error wrapping ErrUnsupportedByFormat.
	Format Format
}

// Writer writes one table to an io.Writer. Keys must be added in strictly
// increasing internal-key order. A Writer is not safe for concurrent use.
// After any error, every later call returns that error.
type Writer struct {
	w      io.Writer
	opts   WriterOptions
	offset uint64

	data  blockBuilder
	index blockBuilder

	filterPolicy filter.Policy
	filter       filter.Builder
	ldbFilter    *levelDBFilterWriter // FormatLevelDB's filter, instead of filter

	props   Properties
	lastKey []byte

	rangeDels []rangedel.Tombstone

	lastPrefix []byte // the last prefix added to the filter
	havePrefix bool

	rangeFilter filter.RangeBuilder

	// After a data block is written, its index entry waits for the first
	// key of the next block, so the separator can be shortened.
	pendingIndex  bool
	pendingHandle blockHandle

	compressBuf []byte
	handleBuf   []byte
	sepBuf      []byte
	err         error
	finished    bool
}

// NewWriter returns a Writer that writes a table to w. It never syncs or
// closes w.
func NewWriter(w io.Writer, o WriterOptions) *Writer {
	if o.BlockSize <= 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.BlockSize > MaxBlockSize {
		o.BlockSize = MaxBlockSize
	}
	if o.BlockRestartInterval <= 0 {
		o.BlockRestartInterval = DefaultBlockRestartInterval
	}
	wr := &Writer{w: w, opts: o}
	wr.data.restartInterval = o.BlockRestartInterval
	wr.index.restartInterval = 1
	if o.RangeFilter != nil {
		wr.rangeFilter = o.RangeFilter.NewBuilder()
	}
	if o.FilterPolicy != nil && !filter.IsNone(o.FilterPolicy) {
		wr.filterPolicy = o.FilterPolicy
		wr.filter = o.FilterPolicy.NewBuilder()
	}
	wr.props.Compression = SnappyCompression.String()
	if o.DisableCompression {
		wr.props.Compression = NoCompression.String()
	}
	wr.props.Format = o.Format
	switch o.Format {
	case FormatBloomKV:
		wr.props.FormatVersion = FormatVersion
	case FormatLevelDB:
		wr.err = checkLevelDBOptions(o)
		if wr.filter != nil {
			wr.ldbFilter = &levelDBFilterWriter{b: wr.filter}
			wr.filter = nil
		}
	default:
		wr.err = fmt.Errorf("sstable: unknown table format %d", o.Format)
	}
	return wr
}

// checkLevelDBOptions refuses the options a LevelDB table cannot honour.
func checkLevelDBOptions(o WriterOptions) error {
	switch {
	case o.FilterPolicy != nil && !filter.IsNone(o.FilterPolicy) && o.FilterPolicy.Name() != filter.LevelDBBloomPolicyName:
		return fmt.Errorf("%w: filter policy %q in a LevelDB table (use filter.NewLevelDBBloomPolicy, which LevelDB reads, or none)", ErrUnsupportedByFormat, o.FilterPolicy.Name())
	case o.Prefix != nil:
		return fmt.Errorf("%w: prefix filter %q in a LevelDB table", ErrUnsupportedByFormat, o.Prefix.Name())
	case o.RangeFilter != nil:
		return fmt.Errorf("%w: range filter %q in a LevelDB table", ErrUnsupportedByFormat, o.RangeFilter.Name())
	}
	return nil
}

// errFinished is returned by calls made after Finish.
var errFinished = errors.New("sstable: writer already finished")

// Add appends an entry. ikey must be a well-formed internal key (user key
// plus an 8-byte trailer of a known kind) greater than every key added
// before it by base.CompareInternal. Add copies what it keeps of ikey and
// value.
func (w *Writer) Add(ikey, value []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.finished {
		return errFinished
	}
	ukey, _, kind, ok := base.ParseInternalKey(ikey)
	if !ok {
		return fmt.Errorf("sstable: malformed internal key %q", ikey)
	}
	if w.props.NumEntries > 0 && base.CompareInternal(ikey, w.lastKey) <= 0 {
		return fmt.Errorf("sstable: key %s added after %s: keys must be strictly increasing",
			base.FormatInternalKey(ikey), base.FormatInternalKey(w.lastKey))
	}
	if uint64(len(ikey))+uint64(len(value)) > MaxEntrySize {
		return fmt.Errorf("sstable: entry of %d bytes exceeds MaxEntrySize", len(ikey)+len(value))
	}
	if w.pendingIndex {
		if w.opts.Format == FormatLevelDB {
			w.sepBuf = appendLevelDBSeparator(w.sepBuf[:0], w.lastKey, ikey)
		} else {
			w.sepBuf = appendSeparator(w.sepBuf[:0], w.lastKey, ikey)
		}
		w.addIndexEntry(w.sepBuf)
	}
	if w.ldbFilter != nil {
		w.ldbFilter.addKey(ukey)
	}
	if w.filter != nil {
		w.filter.AddKey(ukey)
		if w.opts.Prefix != nil {
			// Keys come in order, so a prefix's keys are consecutive.
			if n, ok := w.opts.Prefix.PrefixLen(ukey); ok && n <= len(ukey) && (!w.havePrefix || !bytes.Equal(w.lastPrefix, ukey[:n])) {
				w.filter.AddKey(ukey[:n])
				w.lastPrefix = append(w.lastPrefix[:0], ukey[:n]...)
				w.havePrefix = true
				w.props.NumPrefixes++
			}
		}
	}
	if w.rangeFilter != nil {
		w.rangeFilter.AddKey(ukey)
	}
	w.data.add(ikey, value)
	if w.props.NumEntries == 0 {
		w.props.Smallest = bytes.Clone(ikey)
	}
	w.lastKey = append(w.lastKey[:0], ikey...)
	w.props.NumEntries++
	if kind == base.KindDelete {
		w.props.NumDeletions++
	}
	w.props.RawKeySize += uint64(len(ikey))
	w.props.RawValueSize += uint64(len(value))
	if w.data.estimatedSize() >= w.opts.BlockSize {
		w.flushDataBlock()
	}
	return w.err
}

// EstimatedSize returns the bytes written so far plus the size of the data
// block being built.
func (w *Writer) EstimatedSize() uint64 {
	n := w.offset
	if !w.data.empty() {
		n += uint64(w.data.estimatedSize())
	}
	return n
}

// NumEntries returns the number of entries added so far.
func (w *Writer) NumEntries() uint64 { return w.props.NumEntries }

func (w *Writer) addIndexEntry(sep []byte) {
	w.handleBuf = appendHandle(w.handleBuf[:0], w.pendingHandle)
	w.index.add(sep, w.handleBuf)
	w.pendingIndex = false
}

func (w *Writer) flushDataBlock() {
	if w.data.empty() || w.err != nil {
		return
	}
	h, err := w.writeBlock(w.data.finish(), !w.opts.DisableCompression)
	w.data.reset()
	if err != nil {
		w.err = err
		return
	}
	w.pendingIndex = true
	w.pendingHandle = h
	w.props.NumDataBlocks++
	if w.ldbFilter != nil {
		w.ldbFilter.startBlock(w.offset)
	}
}

// writeBlock writes block (compressing it when allowed and worthwhile) and
// its trailer, and returns its handle.
func (w *Writer) writeBlock(block []byte, compress bool) (blockHandle, error) {
	typ := NoCompression
	stored := block
	if compress {
		w.compressBuf = snappy.Encode(w.compressBuf[:cap(w.compressBuf)], block)
		if len(w.compressBuf) < len(block)-len(block)/8 {
			stored = w.compressBuf
			typ = SnappyCompression
		}
	}
	n := len(stored)
	// stored belongs to the Writer (builder or compression buffer), so the
	// trailer can be appended in place and written in the same call.
	out := append(stored, byte(typ))
	out = binary.LittleEndian.AppendUint32(out, w.opts.Format.checksum(out))
	if _, err := w.w.Write(out); err != nil {
		return blockHandle{}, err
	}
	h := blockHandle{offset: w.offset, size: uint64(n)}
	w.offset += uint64(len(out))
	if typ == SnappyCompression {
		w.compressBuf = out[:0]
	}
	return h, nil
}

// AddRangeDel adds the range tombstone [start, end)#seq to the table's
// range-deletion block. Tombstones may come in any order, before, between
// or after the point entries; start must sort before end and seq be at
// most base.MaxSeqNum. The Writer copies both keys.
func (w *Writer) AddRangeDel(start, end []byte, seq uint64) error {
	if w.err != nil {
		return w.err
	}
	if w.finished {
		return errFinished
	}
	if w.opts.Format == FormatLevelDB {
		w.err = fmt.Errorf("%w: range deletion [%q, %q)#%d in a LevelDB table", ErrUnsupportedByFormat, start, end, seq)
		return w.err
	}
	if bytes.Compare(start, end) >= 0 || seq > base.MaxSeqNum {
		return fmt.Errorf("sstable: bad range tombstone [%q, %q)#%d", start, end, seq)
	}
	w.rangeDels = append(w.rangeDels, rangedel.Tombstone{Start: bytes.Clone(start), End: bytes.Clone(end), Seq: seq})
	return nil
}

// Finish writes the last data block, the filter, properties, metaindex and
// index blocks and the footer, and returns the table's properties. It does
// not sync or close the underlying writer. The Writer can't be used after.
func (w *Writer) Finish() (*Properties, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.finished {
		return nil, errFinished
	}
	w.finished = true
	w.flushDataBlock()
	if w.err != nil {
		return nil, w.err
	}
	if w.pendingIndex {
		if w.opts.Format == FormatLevelDB {
			w.sepBuf = appendLevelDBSuccessor(w.sepBuf[:0], w.lastKey)
		} else {
			w.sepBuf = appendSuccessor(w.sepBuf[:0], w.lastKey)
		}
		w.addIndexEntry(w.sepBuf)
	}
	p := &w.props
	p.DataSize = w.offset
	p.Largest = bytes.Clone(w.lastKey)
	if w.props.NumEntries == 0 {
		p.Largest = nil
	}
	if w.opts.Format == FormatLevelDB {
		return w.finishLevelDB()
	}

	var filterData []byte
	if w.filter != nil {
		filterData = w.filter.Finish(nil)
		w.setFilterProps(len(filterData))
		if w.opts.Prefix != nil {
			p.PrefixExtractor = w.opts.Prefix.Name()
		}
	}
	indexBlock := w.index.finish()
	p.IndexSize = uint64(len(indexBlock))

	var meta blockBuilder
	meta.restartInterval = DefaultBlockRestartInterval

	var filterHandle blockHandle
	if w.filter != nil {
		if filterHandle, w.err = w.writeBlock(filterData, false); w.err != nil {
			return nil, w.err
		}
	}
	var rangeFilterHandle blockHandle
	if w.rangeFilter != nil {
		data := w.rangeFilter.Finish(nil)
		p.RangeFilter = w.opts.RangeFilter.Name()
		p.RangeFilterSize = uint64(len(data))
		if rangeFilterHandle, w.err = w.writeBlock(data, false); w.err != nil {
			return nil, w.err
		}
	}
	var rangeDelHandle blockHandle
	if len(w.rangeDels) > 0 {
		rangedel.Sort(w.rangeDels)
		w.rangeDels = slices.CompactFunc(w.rangeDels, func(a, b rangedel.Tombstone) bool {
			return a.Seq == b.Seq && bytes.Equal(a.Start, b.Start) && bytes.Equal(a.End, b.End)
		})
		p.NumRangeDeletions = uint64(len(w.rangeDels))
		if rangeDelHandle, w.err = w.writeBlock(rangedel.Encode(nil, w.rangeDels), false); w.err != nil {
			return nil, w.err
		}
	}

	for _, kv := range p.encode() {
		meta.add(kv[0], kv[1])
	}
	propsHandle, err := w.writeBlock(meta.finish(), false)
	if err != nil {
		w.err = err
		return nil, err
	}

	meta.reset()
	meta.add([]byte(MetaPropertiesKey), appendHandle(nil, propsHandle))
	// The metaindex keys must be added in order: "bloomkv.properties" <
	// "bloomkv.rangedel" < "filter.".
	if len(w.rangeDels) > 0 {
		meta.add([]byte(MetaRangeDelKey), appendHandle(nil, rangeDelHandle))
	}
	if w.filter != nil {
		meta.add([]byte(MetaFilterPrefix+p.FilterPolicy), appendHandle(nil, filterHandle))
	}
	if w.rangeFilter != nil { // "rangefilter." sorts after "filter."
		meta.add([]byte(MetaRangeFilterPrefix+p.RangeFilter), appendHandle(nil, rangeFilterHandle))
	}
	metaHandle, err := w.writeBlock(meta.finish(), false)
	if err != nil {
		w.err = err
		return nil, err
	}

	// The index is compressed as data blocks are: readers decode it once,
	// at open, and keep it. Its entries (a restart each, separators
	// sharing long prefixes and the same trailer) shrink by about half,
	// about 0.8% of a table of 100-byte values.
	indexHandle, err := w.writeBlock(indexBlock, !w.opts.DisableCompression)
	if err != nil {
		w.err = err
		return nil, err
	}

	ft := footer{metaindex: metaHandle, index: indexHandle, version: FormatVersion}
	if _, err := w.w.Write(ft.encode()); err != nil {
		w.err = err
		return nil, err
	}
	w.offset += FooterLen
	return w.finalProps(), nil
}

// finalProps returns a copy of the properties for Finish to return.
func (w *Writer) finalProps() *Properties {
	out := w.props
	out.Smallest = bytes.Clone(w.props.Smallest)
	out.Largest = bytes.Clone(w.props.Largest)
	return &out
}

// setFilterProps records a finished filter of n bytes in the properties.
func (w *Writer) setFilterProps(n int) {
	p := &w.props
	p.FilterPolicy = w.filterPolicy.Name()
	p.FilterSize = uint64(n)
	if p.NumEntries > 0 {
		bpk := float64(n) * 8 / float64(p.NumEntries)
		p.FilterBitsPerKey = math.Round(bpk*1e4) / 1e4
	}
}

// finishLevelDB is Finish after the data blocks for FormatLevelDB, in
// LevelDB's order: the filter block (never compressed), the metaindex and
// index blocks (compressed as data blocks are), the 48-byte footer.
func (w *Writer) finishLevelDB() (*Properties, error) {
	var meta blockBuilder
	meta.restartInterval = w.opts.BlockRestartInterval
	compress := !w.opts.DisableCompression
	if w.ldbFilter != nil {
		data, err := w.ldbFilter.finish()
		if err != nil {
			w.err = err
			return nil, err
		}
		w.setFilterProps(len(data))
		h, err := w.writeBlock(data, false)
		if err != nil {
			w.err = err
			return nil, err
		}
		meta.add([]byte(MetaFilterPrefix+w.props.FilterPolicy), appendHandle(nil, h))
	}
	metaHandle, err := w.writeBlock(meta.finish(), compress)
	if err != nil {
		w.err = err
		return nil, err
	}
	indexBlock := w.index.finish()
	w.props.IndexSize = uint64(len(indexBlock))
	indexHandle, err := w.writeBlock(indexBlock, compress)
	if err != nil {
		w.err = err
		return nil, err
	}
	ft := footer{format: FormatLevelDB, metaindex: metaHandle, index: indexHandle}
	if _, err := w.w.Write(ft.encode()); err != nil {
		w.err = err
		return nil, err
	}
	w.offset += LevelDBFooterLen
	return w.finalProps(), nil
}

// appendSeparator appends to dst an internal key k with a <= k < b, shorter
// than a when it can: when the user keys differ at byte n and a's byte can
// be incremented while staying below b's, k is a's user key cut after byte
// n with that byte incremented, with the largest trailer (MaxSeqNum,
// KindSeek), so k sorts before every real entry of its user key. Otherwise k
// is a itself.
func appendSeparator(dst, a, b []byte) []byte {
	ua, ub := base.UserKey(a), base.UserKey(b)
	if bytes.Compare(ua, ub) < 0 {
		n := 0
		for n < len(ua) && n < len(ub) && ua[n] == ub[n] {
			n++
		}
		if n < len(ua) && n < len(ub) && ua[n] < 0xff && ua[n]+1 < ub[n] {
			dst = append(dst, ua[:n+1]...)
			dst[len(dst)-1]++
			return base.AppendInternalKey(dst, nil, base.MaxSeqNum, base.KindSeek)
		}
	}
	return append(dst, a...)
}

// appendSuccessor appends to dst a short internal key k >= a: a's user key
// cut after its first byte below 0xff, that byte incremented, with the
// largest trailer; or a itself when every byte is 0xff.
func appendSuccessor(dst, a []byte) []byte {
	ua := base.UserKey(a)
	for i, c := range ua {
		if c != 0xff {
			dst = append(dst, ua[:i+1]...)
			dst[len(dst)-1]++
			return base.AppendInternalKey(dst, nil, base.MaxSeqNum, base.KindSeek)
		}
	}
	return append(dst, a...)
}
