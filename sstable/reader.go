package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/cache"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/golang/snappy"
)

// ReadStats count the data block reads of one or more Readers. A single
// ReadStats may be shared by many Readers used concurrently; its counters
// are striped over cache lines, so readers on different cores do not slow
// each other down by counting.
type ReadStats struct {
	// DataBlocksRead and DataBlockBytesRead count data blocks read from
	// the file (trailers included in the bytes) by Get and by iterators
	// made with NewIterator, not those found in the cache.
	DataBlocksRead, DataBlockBytesRead base.Counter
	// CompactionBlocksRead and CompactionBlockBytesRead count the data
	// blocks read by one-pass iterators (NewCompactionIterator), which is
	// how compactions read their inputs.
	CompactionBlocksRead, CompactionBlockBytesRead base.Counter
	// CacheHits and CacheMisses count block cache lookups for data blocks
	// (only when the Reader has a cache).
	CacheHits, CacheMisses base.Counter
	// KeyIndexSkips counts the point lookups (Get) of a cached data block
	// that its key index answered without searching the block: the user
	// key is not in the block (blockkeys.go).
	KeyIndexSkips base.Counter
}

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// Filters are the filter policies this reader knows. The table's filter
	// is used only when one of them has the name stored in the table;
	// otherwise the reader acts as if the table had no filter.
	Filters []filter.Policy
	// RangeFilters are the range filter policies this reader knows, as
	// Filters for the whole-key filter.
	RangeFilters []filter.RangePolicy
	// Cache, when not nil, holds this reader's decompressed data blocks
	// under (FileID, block offset). FileID must be unique among the tables
	// sharing the cache.
	Cache  *cache.Cache
	FileID uint64
	// Stats, when not nil, counts data block reads and cache lookups.
	Stats *ReadStats
	// Mapped, when not nil, is the whole table (its size bytes) mapped
	// into memory, as vfs.Mapper maps it. Data blocks are then checked and
	// decoded straight from it, without a ReadAt (a system call) per block
	// read, and the table's other blocks are copied from it: the Reader
	// never reads the file, which the caller may close once NewReader
	// returns. The mapping must outlive the Reader. A memory fault while
	// reading it (the file was truncated, or the device failed) becomes an
	// error of the read, not a crash.
	Mapped []byte

	// skipChecksums is for fuzzing only: it lets crafted blocks reach the
	// decoders behind the checksum, as a hostile file with valid checksums
	// would.
	skipChecksums bool
}

// Reader reads a table. It holds the table's index block and filter in
// memory from NewReader until Close; afterwards it reads only data blocks,
// one ReadAt per block. A Reader is safe for concurrent use, except that
// Close must come after every other call and after every Iterator of it is
// closed.
type Reader struct {
	f     io.ReaderAt
	size  int64
	opts  ReaderOptions
	props *Properties

	format Format

	index      []byte
	filterData []byte
	policy     filter.Policy // nil: no usable filter
	policyName string        // policy.Name(), asked once ("" with no policy)
	ldbFilter  levelDBFilter // FormatLevelDB: filterData parsed
	ldbSeps    levelDBSeps   // FormatLevelDB with a filter: the index decoded
	iwin       indexWindows  // the index's search windows (seekIndex)
	rangeDels  []rangedel.Tombstone

	rangeData   []byte
	rangePolicy filter.RangePolicy // nil: no usable range filter

	dataEnd     uint64      // data blocks lie in [0, dataEnd)
	indexStored Compression // how the index block is stored
	closed      bool
}

// errClosed is returned by calls on a closed Reader.
var errClosed = errors.New("sstable: reader is closed")

// NewReader opens the table held in f, which has the given size. It tells
// the format (bloomkv's or LevelDB's) from the footer's magic number, and
// reads and verifies the footer, metaindex, properties (bloomkv tables
// only), index and (when its policy is known) filter blocks. Damaged bytes
// give an error wrapping base.ErrCorruption; an index or meta block
// compressed in a way this package does not decode, one wrapping
// ErrUnsupportedCompression. The caller keeps ownership of f.
func NewReader(f io.ReaderAt, size int64, o ReaderOptions) (*Reader, error) {
	if size < LevelDBFooterLen {
		return nil, base.CorruptionErrorf("sstable: file of %d bytes is too short for a table", size)
	}
	if o.Mapped != nil && int64(len(o.Mapped)) != size {
		return nil, fmt.Errorf("sstable: mapping of %d bytes for a table of %d", len(o.Mapped), size)
	}
	r := &Reader{f: f, size: size, opts: o}
	ft, err := r.readFooter()
	if err != nil {
		return nil, err
	}
	r.format = ft.format
	if r.index, err = r.readBlock(ft.index); err != nil {
		return nil, err
	}
	var typ [1]byte
	if err := r.readAt(typ[:], ft.index.offset+ft.index.size); err != nil {
		return nil, err
	}
	r.indexStored = Compression(typ[0])
	metaindex, err := r.readBlock(ft.metaindex)
	if err != nil {
		return nil, err
	}
	mi, err := r.parseMetaindex(metaindex, ft.metaindex.offset)
	if err != nil {
		return nil, err
	}
	r.dataEnd = mi.metaStart
	if r.format == FormatLevelDB {
		if err := r.openLevelDB(mi); err != nil {
			return nil, err
		}
		return r, nil
	}
	propsHandle, filterHandle, rangeDelHandle, filterName := mi.props, mi.filter, mi.rangeDel, mi.filterName
	pblock, err := r.readBlock(propsHandle)
	if err != nil {
		return nil, err
	}
	if r.props, err = decodeProperties(pblock); err != nil {
		return nil, err
	}
	if r.props.FormatVersion != ft.version {
		return nil, base.CorruptionErrorf("sstable: properties say format version %d, footer %d", r.props.FormatVersion, ft.version)
	}
	if (rangeDelHandle != blockHandle{}) != (r.props.NumRangeDeletions > 0) {
		return nil, base.CorruptionErrorf("sstable: properties count %d range deletions, metaindex disagrees", r.props.NumRangeDeletions)
	}
	if r.props.NumRangeDeletions > 0 {
		b, err := r.readBlock(rangeDelHandle)
		if err != nil {
			return nil, err
		}
		if r.rangeDels, err = rangedel.Decode(b); err != nil {
			return nil, err
		}
		if uint64(len(r.rangeDels)) != r.props.NumRangeDeletions {
			return nil, base.CorruptionErrorf("sstable: properties count %d range deletions, the block holds %d", r.props.NumRangeDeletions, len(r.rangeDels))
		}
	}
	if mi.rangeFilterName != "" {
		for _, p := range o.RangeFilters {
			if p != nil && p.Name() == mi.rangeFilterName {
				if r.rangeData, err = r.readBlock(mi.rangeFilter); err != nil {
					return nil, err
				}
				r.rangePolicy = p
				break
			}
		}
	}
	if filterName != "" {
		if p := findPolicy(o.Filters, filterName); p != nil {
			if r.filterData, err = r.readBlock(filterHandle); err != nil {
				return nil, err
			}
			r.policy, r.policyName = p, p.Name()
		}
	}
	if err := r.checkIndex(); err != nil {
		return nil, err
	}
	return r, nil
}

// readFooter reads and decodes the footer and checks that the index block
// lies before it and the metaindex block before the index.
func (r *Reader) readFooter() (footer, error) {
	n := min(r.size, FooterLen)
	fbuf := make([]byte, n)
	if err := r.readAt(fbuf, uint64(r.size-n)); err != nil {
		return footer{}, err
	}
	ft, err := decodeFooter(fbuf)
	if err != nil {
		return ft, err
	}
	footerStart := uint64(r.size) - uint64(ft.format.footerLen())
	if err := checkRegion(ft.index, 0, footerStart, "index"); err != nil {
		return ft, err
	}
	if err := checkRegion(ft.metaindex, 0, ft.index.offset, "metaindex"); err != nil {
		return ft, err
	}
	return ft, nil
}

// openLevelDB completes NewReader for a LevelDB table: it has no
// properties block, so the properties are those the index and metaindex
// tell (see Properties.Format), and its filter block holds one filter per
// 2 KiB of data-block offsets.
func (r *Reader) openLevelDB(mi metaHandles) error {
	r.props = &Properties{
		Format:       FormatLevelDB,
		DataSize:     r.dataEnd,
		IndexSize:    uint64(len(r.index)),
		FilterPolicy: mi.filterName,
		FilterSize:   mi.filter.size,
	}
	if mi.filterName != "" {
		if p := findPolicy(r.opts.Filters, mi.filterName); p != nil {
			b, err := r.readBlock(mi.filter)
			if err != nil {
				return err
			}
			if r.ldbFilter, err = parseLevelDBFilter(b); err != nil {
				return err
			}
			r.filterData, r.policy, r.policyName = b, p, p.Name()
			r.props.FilterSize = uint64(len(b))
		}
	}
	if err := r.checkIndex(); err != nil {
		return err
	}
	if r.policy != nil {
		r.ldbSeps = decodeLevelDBSeps(r.index)
	}
	return nil
}

// findPolicy returns the policy of ps named name, ignoring nil and None.
func findPolicy(ps []filter.Policy, name string) filter.Policy {
	for _, p := range ps {
		if p != nil && !filter.IsNone(p) && p.Name() == name {
			return p
		}
	}
	return nil
}

// metaHandles are what the metaindex locates.
type metaHandles struct {
	props, filter, rangeDel, rangeFilter blockHandle
	filterName, rangeFilterName          string
	metaStart                            uint64 // the lowest offset of any meta block
}

// parseMetaindex finds the properties, filter, range filter and
// range-deletion handles (in a LevelDB table, only the filter's), checks
// that every meta block lies before the metaindex, and finds the lowest
// offset of any meta block, where the data blocks must end.
func (r *Reader) parseMetaindex(block []byte, metaindexOff uint64) (mi metaHandles, err error) {
	var it blockIter
	if err = it.init(true, block); err != nil {
		return
	}
	mi.metaStart = metaindexOff
	haveProps := false
	leveldb := r.format == FormatLevelDB
	for ok := it.First(); ok; ok = it.Next() {
		name := string(it.Key())
		isFilter := strings.HasPrefix(name, MetaFilterPrefix)
		isRangeFilter := !leveldb && strings.HasPrefix(name, MetaRangeFilterPrefix)
		isBloomKV := !leveldb && (name == MetaPropertiesKey || name == MetaRangeDelKey)
		if !isBloomKV && !isFilter && !isRangeFilter {
			continue // a block this version does not know
		}
		h, n, herr := decodeHandle(it.Value())
		if herr != nil {
			err = herr
			return
		}
		if n != len(it.Value()) {
			err = base.CorruptionErrorf("sstable: metaindex entry %q has trailing bytes", name)
			return
		}
		if err = checkRegion(h, 0, metaindexOff, name); err != nil {
			return
		}
		mi.metaStart = min(mi.metaStart, h.offset)
		switch {
		case isFilter, isRangeFilter:
			prefix, kind, dst, dstName := MetaFilterPrefix, "filter", &mi.filter, &mi.filterName
			if isRangeFilter {
				prefix, kind, dst, dstName = MetaRangeFilterPrefix, "range filter", &mi.rangeFilter, &mi.rangeFilterName
			}
			if *dstName != "" {
				err = base.CorruptionErrorf("sstable: metaindex names two %ss", kind)
				return
			}
			*dstName = name[len(prefix):]
			if *dstName == "" {
				err = base.CorruptionErrorf("sstable: metaindex names a %s with no policy name", kind)
				return
			}
			*dst = h
		case name == MetaRangeDelKey:
			if h.size == 0 {
				err = base.CorruptionErrorf("sstable: empty range-deletion block")
				return
			}
			mi.rangeDel = h
		default:
			mi.props = h
			haveProps = true
		}
	}
	if err = it.Error(); err != nil {
		return
	}
	if !haveProps && !leveldb {
		err = base.CorruptionErrorf("sstable: metaindex has no properties block")
	}
	return
}

// checkIndex walks the index once: separators must be internal keys in
// strictly increasing order, and handles must be well formed, in file
// order, not overlapping, inside the data region, and as many as the
// properties say (in a LevelDB table, which has no count to check, their
// number becomes Properties.NumDataBlocks). It then builds the index's
// search windows (indexWindows).
func (r *Reader) checkIndex() error {
	var it blockIter
	if err := it.init(false, r.index); err != nil {
		return err
	}
	var prevKey []byte
	var prevEnd, n uint64
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) < base.TrailerLen {
			return base.CorruptionErrorf("sstable: index key %q is not an internal key", k)
		}
		if prevKey != nil && base.CompareInternal(prevKey, k) >= 0 {
			return base.CorruptionErrorf("sstable: index keys out of order")
		}
		prevKey = append(prevKey[:0], k...)
		h, m, err := decodeHandle(it.Value())
		if err != nil {
			return err
		}
		if m != len(it.Value()) {
			return base.CorruptionErrorf("sstable: index entry has trailing bytes")
		}
		if err := checkRegion(h, prevEnd, r.dataEnd, "data"); err != nil {
			return err
		}
		prevEnd = h.end()
		n++
	}
	if err := it.Error(); err != nil {
		return err
	}
	if r.format == FormatLevelDB {
		r.props.NumDataBlocks = n
	} else if n != r.props.NumDataBlocks {
		return base.CorruptionErrorf("sstable: index has %d data blocks, properties say %d", n, r.props.NumDataBlocks)
	}
	r.iwin = buildIndexWindows(r.index)
	return nil
}

// readAt fills buf from offset off; a short read is corruption (the file is
// shorter than its size said).
func (r *Reader) readAt(buf []byte, off uint64) error {
	if m := r.opts.Mapped; m != nil {
		return r.copyMapped(buf, off)
	}
	n, err := r.f.ReadAt(buf, int64(off))
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return base.CorruptionErrorf("sstable: short read: %d of %d bytes at offset %d", n, len(buf), off)
	}
	return err
}

// copyMapped is readAt for a mapped table: a copy from the mapping, so
// that the file itself is never read again once the table is mapped (the
// table cache closes the descriptor of a mapped table). A memory fault
// under the mapping is an error, as in decodeMapped.
func (r *Reader) copyMapped(buf []byte, off uint64) (err error) {
	m := r.opts.Mapped
	if off > uint64(len(m)) || uint64(len(buf)) > uint64(len(m))-off {
		return base.CorruptionErrorf("sstable: short read: %d bytes at offset %d of a %d-byte table", len(buf), off, len(m))
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer catchFault(blockHandle{offset: off, size: uint64(len(buf))}, &err)
	copy(buf, m[off:])
	return nil
}

// readBlock reads the block h (already checked to lie inside the file) and
// its trailer with one ReadAt, verifies the checksum and decompresses it.
func (r *Reader) readBlock(h blockHandle) ([]byte, error) {
	buf := make([]byte, h.size+BlockTrailerLen)
	if err := r.readAt(buf, h.offset); err != nil {
		return nil, err
	}
	return decodeStoredBlock(r.format, buf, h, r.opts.skipChecksums)
}

// decodeStoredBlock checks and decompresses a block of a table of format f
// read with its trailer.
func decodeStoredBlock(f Format, buf []byte, h blockHandle, skipChecksum bool) ([]byte, error) {
	return decodeStoredBlockTo(f, nil, buf, h, skipChecksum)
}

// decodeStoredBlockTo is decodeStoredBlock decompressing into dst when its
// capacity suffices (a new buffer otherwise). An uncompressed block is
// returned as the stored bytes, aliasing buf.
func decodeStoredBlockTo(f Format, dst, buf []byte, h blockHandle, skipChecksum bool) ([]byte, error) {
	if err := verifyStoredBlock(f, buf, h, skipChecksum); err != nil {
		return nil, err
	}
	n := len(buf) - BlockTrailerLen
	stored := buf[:n:n]
	switch typ := Compression(buf[n]); typ {
	case NoCompression:
		return stored, nil
	case SnappyCompression:
		dl, err := snappyDecodedLen(stored, h)
		if err != nil {
			return nil, err
		}
		if cap(dst) < dl {
			dst = make([]byte, dl)
		}
		out, err := snappy.Decode(dst[:dl], stored)
		if err != nil {
			return nil, base.CorruptionErrorf("sstable: block at offset %d: %v", h.offset, err)
		}
		return out, nil
	default:
		return nil, compressionError(f, byte(typ), h)
	}
}

// verifyStoredBlock checks the checksum in the trailer of buf, a block as
// stored in a table of format f (buf holds at least the trailer).
func verifyStoredBlock(f Format, buf []byte, h blockHandle, skipChecksum bool) error {
	n := len(buf) - BlockTrailerLen
	want := binary.LittleEndian.Uint32(buf[n+1:])
	if got := f.checksum(buf[:n+1]); got != want && !skipChecksum {
		return base.CorruptionErrorf("sstable: block at offset %d: checksum %#08x, want %#08x", h.offset, got, want)
	}
	return nil
}

// snappyDecodedLen returns the decoded length that the snappy block stored
// claims, refusing lengths no writer makes before anything is allocated.
func snappyDecodedLen(stored []byte, h blockHandle) (int, error) {
	dl, err := snappy.DecodedLen(stored)
	if err != nil {
		return 0, base.CorruptionErrorf("sstable: block at offset %d: %v", h.offset, err)
	}
	if dl > maxDecodedBlockLen || uint64(dl) > maxSnappyRatio*uint64(len(stored)) {
		return 0, base.CorruptionErrorf("sstable: block at offset %d: %d stored bytes claim %d decoded", h.offset, len(stored), dl)
	}
	return dl, nil
}

// readDataBlock returns the decompressed data block h, from the cache when
// it is there, with a reference the caller must release once it no longer
// reads the block. Its buffer comes from the cache's pool, so a miss
// allocates nothing once evicted blocks are being recycled; the cache keeps
// the block when it has room.
func (r *Reader) readDataBlock(h blockHandle) (*cache.Block, error) {
	return r.readDataBlockTraced(h, nil, readUser)
}

// readKind says how a data block read counts in ReadStats.
type readKind uint8

const (
	readUser    readKind = iota // a user read: counted, through the cache
	readOnePass                 // a compaction's read: counted apart, no cache
	readQuiet                   // a trace's look: not counted, the cache not filled
)

// readDataBlockTraced is readDataBlock that, when tr is not nil, records
// whether the block came from the cache and its decoded size. A readQuiet
// read counts nothing and leaves the cache as it found it (bar the
// recency of a block it finds there).
func (r *Reader) readDataBlockTraced(h blockHandle, tr *BlockRead, kind readKind) (*cache.Block, error) {
	b, fresh, err := r.loadDataBlock(h, tr, kind)
	if err == nil && kind != readQuiet {
		r.cacheBlock(h, b, fresh, false)
	}
	return b, err
}

// loadDataBlock is readDataBlockTraced without filling the cache: fresh
// is set when the block was read from the file, and the caller then
// caches it (cacheBlock) unless kind is readQuiet.
func (r *Reader) loadDataBlock(h blockHandle, tr *BlockRead, kind readKind) (b *cache.Block, fresh bool, err error) {
	if err := checkRegion(h, 0, r.dataEnd, "data"); err != nil {
		return nil, false, err
	}
	st := r.opts.Stats
	if kind == readQuiet {
		st = nil
	}
	c := r.opts.Cache
	if c != nil {
		if b, ok := c.Get(r.opts.FileID, h.offset); ok {
			if st != nil {
				st.CacheHits.Add(1)
			}
			if tr != nil {
				tr.Cached, tr.DecodedSize = true, len(b.Data())
			}
			return b, false, nil
		}
		if st != nil {
			st.CacheMisses.Add(1)
		}
	}
	if r.opts.Mapped != nil {
		b, err = r.decodeMapped(h, kind)
	} else {
		b, err = r.readDecoded(h, kind)
	}
	if err != nil {
		return nil, false, err
	}
	if tr != nil {
		tr.DecodedSize = len(b.Data())
	}
	return b, true, nil
}

// cacheBlock puts data block h, b, into the cache when it is fresh (read
// from the file by loadDataBlock), with its key index when index is set
// (buildBlockKeys). The caller keeps its reference.
func (r *Reader) cacheBlock(h blockHandle, b *cache.Block, fresh, index bool) {
	c := r.opts.Cache
	if !fresh || c == nil {
		return
	}
	if index {
		// Not when the index would make a block that fits the cache on
		// its own too large for it.
		if aux, ok := buildBlockKeys(b.Data(), nil); ok && c.Fits(r.opts.FileID, h.offset, b.Charge()+8*int64(cap(aux))) {
			b.SetAux(aux)
		}
	}
	c.Set(r.opts.FileID, h.offset, b)
}

// readDecoded reads data block h with its trailer into a pooled block,
// checks it and decodes it: an uncompressed block is returned in the
// buffer it was read into, a compressed one is decompressed into a second
// pooled block and the first is released.
func (r *Reader) readDecoded(h blockHandle, kind readKind) (*cache.Block, error) {
	n := int(h.size)
	rb := cache.Alloc(n + BlockTrailerLen)
	buf := rb.Data()
	if err := r.readAt(buf, h.offset); err != nil {
		rb.Release()
		return nil, err
	}
	r.countRead(len(buf), kind)
	if err := verifyStoredBlock(r.format, buf, h, r.opts.skipChecksums); err != nil {
		rb.Release()
		return nil, err
	}
	if Compression(buf[n]) == NoCompression {
		rb.Truncate(n)
		return rb, nil
	}
	b, err := decodeStoredToBlock(r.format, buf, h)
	rb.Release()
	return b, err
}

// decodeStoredToBlock decodes the checked block buf (stored bytes and
// trailer) of a table of format f into a new pooled block, copying it when
// it is not compressed.
func decodeStoredToBlock(f Format, buf []byte, h blockHandle) (*cache.Block, error) {
	n := len(buf) - BlockTrailerLen
	stored := buf[:n:n]
	switch Compression(buf[n]) {
	case NoCompression:
		b := cache.Alloc(n)
		copy(b.Data(), stored)
		return b, nil
	case SnappyCompression:
		dl, err := snappyDecodedLen(stored, h)
		if err != nil {
			return nil, err
		}
		b := cache.Alloc(dl)
		if _, err := snappy.Decode(b.Data(), stored); err != nil {
			b.Release()
			return nil, base.CorruptionErrorf("sstable: block at offset %d: %v", h.offset, err)
		}
		return b, nil
	}
	return nil, compressionError(f, buf[n], h)
}

// decodeMapped checks and decodes data block h (inside the data region)
// from the mapped table into a new pooled block. The result never aliases
// the mapping: an uncompressed block is copied, since the mapping goes away
// when the table is closed while its blocks may stay cached, and since
// only the functions that defer catchFault turn memory faults under the
// mapping into errors. (A block being decoded when a fault strikes is
// left to the garbage collector.)
func (r *Reader) decodeMapped(h blockHandle, kind readKind) (b *cache.Block, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer catchFault(h, &err)
	stored := r.mappedBlock(h, kind)
	if err := verifyStoredBlock(r.format, stored, h, r.opts.skipChecksums); err != nil {
		return nil, err
	}
	return decodeStoredToBlock(r.format, stored, h)
}

// decodeMappedTo is decodeMapped for a one-pass reader: it decodes into
// dst when dst is large enough and copies an uncompressed block there.
func (r *Reader) decodeMappedTo(dst []byte, h blockHandle) (b []byte, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer catchFault(h, &err)
	stored := r.mappedBlock(h, readOnePass)
	b, err = decodeStoredBlockTo(r.format, dst, stored, h, r.opts.skipChecksums)
	if err == nil && Compression(stored[h.size]) == NoCompression {
		b = append(dst[:0], b...)
	}
	return b, err
}

// mappedBlock returns data block h and its trailer in the mapping, and
// counts the read as kind says.
func (r *Reader) mappedBlock(h blockHandle, kind readKind) []byte {
	end := h.offset + h.size + BlockTrailerLen
	stored := r.opts.Mapped[h.offset:end:end]
	r.countRead(len(stored), kind)
	return stored
}

// countRead counts a data block of n bytes (trailer included) read from
// the file, as kind says.
func (r *Reader) countRead(n int, kind readKind) {
	st := r.opts.Stats
	switch {
	case st == nil || kind == readQuiet:
	case kind == readOnePass:
		st.CompactionBlocksRead.Add(1)
		st.CompactionBlockBytesRead.Add(int64(n))
	default:
		st.DataBlocksRead.Add(1)
		st.DataBlockBytesRead.Add(int64(n))
	}
}

// catchFault, deferred (after debug.SetPanicOnFault(true)) by a function
// that reads the mapping, turns a memory fault into *err; other panics go
// on.
func catchFault(h blockHandle, err *error) {
	if e := recover(); e != nil {
		if _, ok := e.(interface{ Addr() uintptr }); !ok {
			panic(e)
		}
		*err = fmt.Errorf("sstable: block at offset %d: memory fault reading the mapped table (truncated file or device error): %v", h.offset, e)
	}
}

// maxReusedDecodeBuf bounds the decode buffer a one-pass reader keeps
// between blocks, so that one huge block does not pin its buffer.
const maxReusedDecodeBuf = 256 << 10

// readUncachedBlock reads data block h for a one-pass reader: neither
// looked up in nor added to the block cache, read into *rbuf and decoded
// into *dbuf, both reused from block to block. The result is valid until
// the next call with the same buffers.
func (r *Reader) readUncachedBlock(h blockHandle, rbuf, dbuf *[]byte) ([]byte, error) {
	if err := checkRegion(h, 0, r.dataEnd, "data"); err != nil {
		return nil, err
	}
	var b []byte
	var err error
	if r.opts.Mapped != nil {
		b, err = r.decodeMappedTo(*dbuf, h)
	} else {
		n := int(h.size + BlockTrailerLen)
		if cap(*rbuf) < n {
			*rbuf = make([]byte, n, max(n, 8<<10))
		}
		buf := (*rbuf)[:n]
		if err := r.readAt(buf, h.offset); err != nil {
			return nil, err
		}
		r.countRead(n, readOnePass)
		b, err = decodeStoredBlockTo(r.format, *dbuf, buf, h, r.opts.skipChecksums)
		if err != nil || Compression(buf[n-BlockTrailerLen]) == NoCompression {
			return b, err // b aliases rbuf; dbuf is untouched
		}
	}
	if err != nil {
		return nil, err
	}
	if cap(b) > cap(*dbuf) && cap(b) <= maxReusedDecodeBuf {
		*dbuf = b[:0] // a larger decode buffer was made: keep it
	}
	return b, nil
}

// Properties returns the table's properties. The caller must not modify
// them. Those of a LevelDB table hold only what its index and metaindex
// tell (see Properties.Format); ScanProperties computes the rest.
func (r *Reader) Properties() *Properties { return r.props }

// Format returns the table's format, told by its footer.
func (r *Reader) Format() Format { return r.format }

// RangeDels returns the table's range tombstones in canonical order (nil
// when it has none). The caller must not modify them.
func (r *Reader) RangeDels() []rangedel.Tombstone { return r.rangeDels }

// HasFilter reports whether the table has a filter this reader can use.
func (r *Reader) HasFilter() bool { return r.policy != nil }

// FilterPolicyName returns the name of the filter in use, "" when none.
func (r *Reader) FilterPolicyName() string { return r.policyName }

// FilterBytes returns the bytes of filter held in memory.
func (r *Reader) FilterBytes() int { return len(r.filterData) }

// IndexBytes returns the bytes of index held in memory: the index block,
// and for a LevelDB table with a filter its decoded copy (levelDBSeps).
func (r *Reader) IndexBytes() int {
	s := &r.ldbSeps
	return len(r.index) + cap(s.keys) + 4*cap(s.ends) + 8*cap(s.offs) + r.iwin.bytes()
}

// MayContain asks the table's filter whether user key ukey may be in the
// table. It is true when the table has no usable filter. It reads nothing.
// In a LevelDB table, whose filters each cover the data blocks of 2 KiB of
// file offsets, it first seeks the resident index for the data block
// ukey's newest entry would be in, then asks that block's filter (and the
// next block's, while ukey's versions may continue there). It does not
// allocate.
func (r *Reader) MayContain(ukey []byte) bool {
	if r.policy == nil {
		return true
	}
	if r.format == FormatLevelDB {
		return r.levelDBMayContain(ukey)
	}
	return r.policy.MayContain(r.filterData, ukey)
}

// Filter returns the policy and the bytes of the table's filter, or a nil
// policy when the table has no usable filter: for a caller that probes
// the filters of many tables in one batch (filter.MayContainBatch). The
// caller must not modify the bytes. A LevelDB table's filters are per
// block, not one whole-table filter, so Filter returns a nil policy even
// when HasFilter is true: such a caller asks MayContain instead.
func (r *Reader) Filter() (filter.Policy, []byte) {
	if r.format == FormatLevelDB {
		return nil, nil
	}
	return r.policy, r.filterData
}

// HasRangeFilter reports whether the table has a range filter this reader
// can use.
func (r *Reader) HasRangeFilter() bool { return r.rangePolicy != nil }

// RangeMayContain asks the table's range filter whether a key of the
// table may lie in [lo, hi). It is true when the table has no usable range
// filter. It reads nothing.
func (r *Reader) RangeMayContain(lo, hi []byte) bool {
	if r.rangePolicy == nil {
		return true
	}
	return r.rangePolicy.MayContainRange(r.rangeData, lo, hi)
}

// PrefixMayContain asks the table's filter whether a key with the given
// prefix may be in the table. It is true unless the table has a usable
// filter built with the extractor named extractor (Properties'
// PrefixExtractor): a table built with no extractor or another one cannot
// rule a prefix out. It reads nothing.
func (r *Reader) PrefixMayContain(extractor string, prefix []byte) bool {
	_, may := r.PrefixCheck(extractor, prefix)
	return may
}

// PrefixCheck is PrefixFiltered and PrefixMayContain in one call: checked
// reports whether the table's filter answers for extractor's prefixes, and
// may is false only when it rules prefix out.
func (r *Reader) PrefixCheck(extractor string, prefix []byte) (checked, may bool) {
	if !r.PrefixFiltered(extractor) {
		return false, true
	}
	return true, r.policy.MayContain(r.filterData, prefix)
}

// PrefixFiltered reports whether PrefixMayContain can rule out prefixes
// of the extractor named extractor.
func (r *Reader) PrefixFiltered(extractor string) bool {
	return r.policy != nil && extractor != "" && r.props.PrefixExtractor == extractor
}

// Find returns the first entry whose internal key is >= ikey, moving on to
// the next data block when the block that may hold it has none; ok is false
// past the end of the table. It does not consult the filter, and in the
// common case reads one data block. The returned key and value are copies
// the caller owns.
func (r *Reader) Find(ikey []byte) (key, value []byte, ok bool, err error) {
	if r.closed {
		return nil, nil, false, errClosed
	}
	var idx blockIter
	if err := idx.init(false, r.index); err != nil {
		return nil, nil, false, err
	}
	var data blockIter
	for valid := r.seekIndex(&idx, ikey, base.UserKey(ikey)); valid; valid = idx.Next() {
		h, _, err := decodeHandle(idx.Value())
		if err != nil {
			return nil, nil, false, err
		}
		b, err := r.readDataBlock(h)
		if err != nil {
			return nil, nil, false, err
		}
		if err := data.init(false, b.Data()); err != nil {
			b.Release()
			return nil, nil, false, err
		}
		if data.SeekGE(ikey) {
			key = append([]byte(nil), data.Key()...)
			value = append(make([]byte, 0, len(data.Value())), data.Value()...)
			b.Release()
			return key, value, true, nil
		}
		err = data.Error()
		b.Release()
		if err != nil {
			return nil, nil, false, err
		}
	}
	return nil, nil, false, idx.Error()
}

// getIters are the block iterators of one Get, pooled so that a lookup
// allocates nothing (their key buffers are reused); seek is the seek key
// buffer of a LevelDB table's MayContain.
type getIters struct {
	idx, data blockIter
	seek      []byte
}

var getItersPool sync.Pool

// Get finds the entry a point lookup needs: the first entry whose internal
// key is >= seek (built by the caller from ukey and its snapshot sequence
// number), if its user key is ukey. It returns that entry's value and kind;
// found is false (and kind 0) when the table holds no visible entry of
// ukey. Like Find it does not consult the filter. The value is a copy the caller owns
// (non-nil, even when empty), and it is the only allocation: the block
// the value was found in is released, and recycled once evicted.
func (r *Reader) Get(seek, ukey []byte) (value []byte, kind base.Kind, found bool, err error) {
	value, _, kind, found, err = r.GetEntry(seek, ukey)
	return value, kind, found, err
}

// BlockRead describes a data block a traced lookup read (GetTraced).
type BlockRead struct {
	Offset      uint64 `json:"offset"`       // the block's offset in the file
	StoredSize  uint64 `json:"stored_size"`  // its size in the file, without the trailer
	DecodedSize int    `json:"decoded_size"` // its size decoded (decompressed)
	Cached      bool   `json:"cached"`       // found in the block cache; else read from the file
}

// GetTraced is GetEntry that also appends to blocks the data blocks it
// read, in order (the index is always in memory), and returns them.
func (r *Reader) GetTraced(seek, ukey []byte, blocks []BlockRead) (value []byte, seq uint64, kind base.Kind, found bool, _ []BlockRead, err error) {
	tr := &getTrace{blocks: blocks}
	value, seq, kind, found, err = r.getEntry(seek, ukey, tr)
	return value, seq, kind, found, tr.blocks, err
}

// getTrace collects the blocks of a traced lookup.
type getTrace struct{ blocks []BlockRead }

// GetEntry is Get that also returns the entry's sequence number, which a
// read must compare with the range tombstones that cover ukey.
func (r *Reader) GetEntry(seek, ukey []byte) (value []byte, seq uint64, kind base.Kind, found bool, err error) {
	return r.getEntry(seek, ukey, nil)
}

func (r *Reader) getEntry(seek, ukey []byte, tr *getTrace) (value []byte, seq uint64, kind base.Kind, found bool, err error) {
	if r.closed {
		return nil, 0, 0, false, errClosed
	}
	its, _ := getItersPool.Get().(*getIters)
	if its == nil {
		its = new(getIters)
	}
	defer getItersPool.Put(its)
	idx, data := &its.idx, &its.data
	if err := idx.init(false, r.index); err != nil {
		return nil, 0, 0, false, err
	}
	for valid := r.seekIndex(idx, seek, base.UserKey(seek)); valid; valid = idx.Next() {
		h, _, err := decodeHandle(idx.Value())
		if err != nil {
			return nil, 0, 0, false, err
		}
		var read *BlockRead
		if tr != nil {
			tr.blocks = append(tr.blocks, BlockRead{Offset: h.offset, StoredSize: h.size})
			read = &tr.blocks[len(tr.blocks)-1]
		}
		// A block read from the file goes into the cache after the
		// search, with a key index when the key is not in it: the index
		// serves the false positives of later lookups, and a block read
		// for a key it holds does not pay for it.
		b, fresh, err := r.loadDataBlock(h, read, readUser)
		if err != nil {
			return nil, 0, 0, false, err
		}
		if aux := b.Aux(); len(aux) > 0 {
			if a := findBlockKeys(aux, ukey); a != keysOpen {
				if st := r.opts.Stats; st != nil {
					st.KeyIndexSkips.Add(1)
				}
				b.Release()
				if a == keysPast {
					continue // the seek goes on to the next block
				}
				// The seek would stop in this block, at another user key.
				return nil, 0, 0, false, nil
			}
		}
		if err := data.init(false, b.Data()); err != nil {
			r.cacheBlock(h, b, fresh, false)
			b.Release()
			return nil, 0, 0, false, err
		}
		if data.SeekGE(seek) {
			k, eseq, kind, ok := base.ParseInternalKey(data.Key())
			switch {
			case !ok:
				err = base.CorruptionErrorf("sstable: malformed internal key in a data block")
			case bytes.Equal(k, ukey):
				found, seq = true, eseq
				v := data.Value()
				value = append(make([]byte, 0, len(v)), v...)
			default:
				kind = 0 // another key's: nothing found
			}
			r.cacheBlock(h, b, fresh, ok && !found)
			b.Release() // data is re-initialized before its next use
			return value, seq, kind, found, err
		}
		err = data.Error()
		r.cacheBlock(h, b, fresh, err == nil)
		b.Release()
		if err != nil {
			return nil, 0, 0, false, err
		}
	}
	return nil, 0, 0, false, idx.Error()
}

// NewIterator returns an iterator over the whole table. It reads data
// blocks lazily, through the block cache.
func (r *Reader) NewIterator() *Iterator {
	it := &Iterator{r: r}
	if r.closed {
		it.err = errClosed
		return it
	}
	if err := it.index.init(false, r.index); err != nil {
		it.err = err
	}
	return it
}

// NewCompactionIterator returns an iterator over the whole table for one
// forward pass, as compaction makes: it reads each data block straight
// from the file into buffers it reuses, and neither looks blocks up in the
// block cache nor adds them, so a compaction does not evict the blocks
// readers use (LevelDB's fill_cache=false). Key and Value are valid only
// until the next positioning call.
func (r *Reader) NewCompactionIterator() *Iterator {
	it := r.NewIterator()
	it.uncached = true
	return it
}

// VerifyChecksums reads every block of the table from the file (bypassing
// the cache) and verifies its checksum, and checks that the data blocks
// decode into strictly increasing internal keys that agree with the index.
func (r *Reader) VerifyChecksums() error {
	if r.closed {
		return errClosed
	}
	ft, err := r.readFooter()
	if err != nil {
		return err
	}
	if ft.format != r.format {
		return base.CorruptionErrorf("sstable: the footer now says format %s, it said %s", ft.format, r.format)
	}
	if _, err := r.readBlock(ft.index); err != nil {
		return err
	}
	metaindex, err := r.readBlock(ft.metaindex)
	if err != nil {
		return err
	}
	var mi blockIter
	if err := mi.init(true, metaindex); err != nil {
		return err
	}
	for ok := mi.First(); ok; ok = mi.Next() {
		h, _, err := decodeHandle(mi.Value())
		if err != nil {
			return err
		}
		if err := checkRegion(h, 0, ft.metaindex.offset, "meta"); err != nil {
			return err
		}
		if _, err := r.readBlock(h); err != nil {
			return err
		}
	}
	if err := mi.Error(); err != nil {
		return err
	}

	var idx, data blockIter
	if err := idx.init(false, r.index); err != nil {
		return err
	}
	var prev []byte
	var n uint64
	for ok := idx.First(); ok; ok = idx.Next() {
		h, _, err := decodeHandle(idx.Value())
		if err != nil {
			return err
		}
		if err := checkRegion(h, 0, r.dataEnd, "data"); err != nil {
			return err
		}
		b, err := r.readBlock(h)
		if err != nil {
			return err
		}
		if err := data.init(false, b); err != nil {
			return err
		}
		empty := true
		for ok := data.First(); ok; ok = data.Next() {
			empty = false
			k := data.Key()
			if _, _, _, ok := base.ParseInternalKey(k); !ok {
				return base.CorruptionErrorf("sstable: block at offset %d holds malformed key %q", h.offset, k)
			}
			if prev != nil && base.CompareInternal(prev, k) >= 0 {
				return base.CorruptionErrorf("sstable: block at offset %d: keys out of order", h.offset)
			}
			if base.CompareInternal(k, idx.Key()) > 0 {
				return base.CorruptionErrorf("sstable: block at offset %d: key past its index separator", h.offset)
			}
			prev = append(prev[:0], k...)
			n++
		}
		if err := data.Error(); err != nil {
			return err
		}
		if empty {
			return base.CorruptionErrorf("sstable: empty data block at offset %d", h.offset)
		}
	}
	if err := idx.Error(); err != nil {
		return err
	}
	if r.format == FormatBloomKV && n != r.props.NumEntries {
		return base.CorruptionErrorf("sstable: %d entries, properties say %d", n, r.props.NumEntries)
	}
	return nil
}

// Close releases the reader. It does not close the file, which the caller
// owns. The reader's blocks stay in the block cache; call
// cache.EvictFile when the file is deleted. Closing twice is a no-op.
func (r *Reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.index = nil
	r.iwin = indexWindows{}
	r.filterData = nil
	r.policy, r.policyName = nil, ""
	return nil
}

// SeekTraced finds the first entry whose internal key is >= seek, as an
// iterator's SeekGE does, and reports the data blocks it read on the way
// (the index is in memory): for tools that show a seek's path. ok is false
// when the table holds no such entry. The returned key is a copy. Its
// reads are looks: they count in no ReadStats and add nothing to the
// block cache, so the seek a tool traces and then performs meets the
// cache as it was and counts once (a block is reported Cached when the
// cache held it).
func (r *Reader) SeekTraced(seek []byte) (ikey []byte, ok bool, blocks []BlockRead, err error) {
	if r.closed {
		return nil, false, nil, errClosed
	}
	var idx, data blockIter
	if err := idx.init(false, r.index); err != nil {
		return nil, false, nil, err
	}
	for valid := r.seekIndex(&idx, seek, base.UserKey(seek)); valid; valid = idx.Next() {
		h, _, err := decodeHandle(idx.Value())
		if err != nil {
			return nil, false, blocks, err
		}
		blocks = append(blocks, BlockRead{Offset: h.offset, StoredSize: h.size})
		b, err := r.readDataBlockTraced(h, &blocks[len(blocks)-1], readQuiet)
		if err != nil {
			return nil, false, blocks, err
		}
		if err := data.init(false, b.Data()); err != nil {
			b.Release()
			return nil, false, blocks, err
		}
		if data.SeekGE(seek) {
			ikey = bytes.Clone(data.Key())
			b.Release()
			return ikey, true, blocks, nil
		}
		err = data.Error()
		b.Release()
		if err != nil {
			return nil, false, blocks, err
		}
	}
	return nil, false, blocks, idx.Error()
}

// CheckCompression reports, with an error wrapping
// ErrUnsupportedCompression, a table whose data blocks use a compression
// this package does not decode (such as the zstd of LevelDB releases after
// 1.23), before any read of them fails. A table's writer compresses every
// block with one type, storing a block raw where compressing saves too
// little, so an index block stored compressed (with a type NewReader
// accepted) answers for the whole table; when the index is stored raw,
// CheckCompression reads the type byte of every data block's trailer.
func (r *Reader) CheckCompression() error {
	if r.closed {
		return errClosed
	}
	if r.indexStored != NoCompression {
		return nil
	}
	var it blockIter
	if err := it.init(false, r.index); err != nil {
		return err
	}
	var typ [1]byte
	for ok := it.First(); ok; ok = it.Next() {
		h, _, err := decodeHandle(it.Value())
		if err != nil {
			return err
		}
		if err := checkRegion(h, 0, r.dataEnd, "data"); err != nil {
			return err
		}
		if err := r.readAt(typ[:], h.offset+h.size); err != nil {
			return err
		}
		if c := Compression(typ[0]); c != NoCompression && c != SnappyCompression {
			return compressionError(r.format, typ[0], h)
		}
	}
	return it.Error()
}
