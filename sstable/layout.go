package sstable

import (
	"encoding/binary"
	"errors"
	"io"

	"github.com/bloomkv/bloomkv/internal/base"
)

// This file describes a table's structure for tools (kvtool sst dump and
// props): where each block lies, how each data block is stored, and the
// filters the Reader holds. Lookups never need it.

// BlockHandle locates a block in a table file. Size excludes the 5-byte
// trailer (BlockTrailerLen) that follows the block.
type BlockHandle struct {
	Offset, Size uint64
}

// DataBlock is a data block of a table, as the index names it.
type DataBlock struct {
	BlockHandle
	// Compression is the compression type in the block's trailer. Layout
	// reads that one byte, not the block: VerifyChecksums checks it.
	Compression Compression
	// Separator is the block's index key: an internal key >= every key of
	// the block and < every key of the next one.
	Separator []byte
}

// MetaBlock is an entry of the metaindex: a meta block and its name, such
// as MetaPropertiesKey or MetaFilterPrefix followed by a policy name.
type MetaBlock struct {
	Name string
	BlockHandle
}

// Layout is where the blocks of a table lie, in the terms of the package
// documentation's file layout.
type Layout struct {
	// Format is the table's format, told by the footer.
	Format Format
	// FileSize is the size of the table file.
	FileSize uint64
	// Data are the data blocks, in index (and file) order.
	Data []DataBlock
	// Meta are the metaindex's entries, in its order, names this package
	// does not know included.
	Meta []MetaBlock
	// Metaindex and Index locate the metaindex and index blocks.
	Metaindex, Index BlockHandle
	// FooterOffset and FooterSize locate the footer, which ends the file
	// (FooterLen bytes, LevelDBFooterLen in a LevelDB table).
	FooterOffset, FooterSize uint64
}

// Layout reads the footer, the metaindex and the compression type of
// every data block, and returns where the table's blocks lie. Every
// handle is checked to lie inside the region its block must lie in (the
// data blocks in file order before the meta blocks, the meta blocks before
// the metaindex, the metaindex before the index, the index before the
// footer) before anything is read at it; a handle that does not gives an
// error wrapping base.ErrCorruption. It does not read the data blocks
// themselves.
func (r *Reader) Layout() (*Layout, error) {
	if r.closed {
		return nil, errClosed
	}
	ft, err := r.readFooter()
	if err != nil {
		return nil, err
	}
	fl := uint64(ft.format.footerLen())
	l := &Layout{
		Format:       ft.format,
		FileSize:     uint64(r.size),
		Metaindex:    BlockHandle{ft.metaindex.offset, ft.metaindex.size},
		Index:        BlockHandle{ft.index.offset, ft.index.size},
		FooterOffset: uint64(r.size) - fl,
		FooterSize:   fl,
	}
	metaindex, err := r.readBlock(ft.metaindex)
	if err != nil {
		return nil, err
	}
	var it blockIter
	if err := it.init(true, metaindex); err != nil {
		return nil, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		h, _, err := decodeHandle(it.Value())
		if err != nil {
			return nil, err
		}
		name := string(it.Key())
		if err := checkRegion(h, 0, ft.metaindex.offset, name); err != nil {
			return nil, err
		}
		l.Meta = append(l.Meta, MetaBlock{Name: name, BlockHandle: BlockHandle{h.offset, h.size}})
	}
	if err := it.Error(); err != nil {
		return nil, err
	}

	if err := it.init(false, r.index); err != nil {
		return nil, err
	}
	var prevEnd uint64
	var typ [1]byte
	for ok := it.First(); ok; ok = it.Next() {
		h, _, err := decodeHandle(it.Value())
		if err != nil {
			return nil, err
		}
		if err := checkRegion(h, prevEnd, r.dataEnd, "data"); err != nil {
			return nil, err
		}
		prevEnd = h.end()
		// checkRegion put the trailer inside the data region, so its
		// first byte lies inside the file.
		if err := r.readAt(typ[:], h.offset+h.size); err != nil {
			return nil, err
		}
		l.Data = append(l.Data, DataBlock{
			BlockHandle: BlockHandle{h.offset, h.size},
			Compression: Compression(typ[0]),
			Separator:   append([]byte(nil), it.Key()...),
		})
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	return l, nil
}

// FilterParts returns the filters the Reader holds, each as its policy's
// MayContain reads one: for a bloomkv table, the whole-table filter (what
// Filter returns); for a LevelDB table, one filter per 2 KiB range of
// data-block offsets, in offset order, empty for a range where no data
// block starts (see the package documentation). It returns nil when
// HasFilter is false. The slices alias the Reader's memory: the caller must
// not modify them, nor use them after Close.
func (r *Reader) FilterParts() [][]byte {
	if r.policy == nil {
		return nil
	}
	if r.format != FormatLevelDB {
		return [][]byte{r.filterData}
	}
	f := &r.ldbFilter
	parts := make([][]byte, 0, f.num)
	for i := 0; i < f.num; i++ {
		// parseLevelDBFilter checked that offsets 0..num are in order
		// and end at or before the array, which lies inside the block.
		start := binary.LittleEndian.Uint32(f.block[f.array+4*i:])
		limit := binary.LittleEndian.Uint32(f.block[f.array+4*i+4:])
		parts = append(parts, f.block[start:limit:limit])
	}
	return parts
}

// SniffFormat tells the format of the table held in f, of the given size,
// from the magic number in its last 8 bytes, as NewReader does, and reads
// nothing else: ok is false when the file is shorter than that format's
// footer or ends with neither magic number. Only NewReader tells whether
// the table is intact. err is an error reading f.
func SniffFormat(f io.ReaderAt, size int64) (format Format, ok bool, err error) {
	if size < LevelDBFooterLen {
		return 0, false, nil
	}
	var b [8]byte
	if n, err := f.ReadAt(b[:], size-8); n < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = base.CorruptionErrorf("sstable: short read: %d of 8 bytes at offset %d", n, size-8)
		}
		return 0, false, err
	}
	switch binary.LittleEndian.Uint64(b[:]) {
	case TableMagic:
		return FormatBloomKV, size >= FooterLen, nil
	case LevelDBTableMagic:
		return FormatLevelDB, true, nil
	}
	return 0, false, nil
}
