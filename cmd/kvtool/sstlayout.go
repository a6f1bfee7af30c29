package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/sstable"
)

// This file decodes the parts of a table's layout that sstable.Reader does
// not expose: where each data block lies and how it is compressed, the meta
// blocks, and the filter's probe count. It follows the format documented in
// package sstable and is called only on files that sstable.NewReader has
// opened (so the footer, index and metaindex passed their checksums), yet
// it still checks every length and offset before it reads or slices.

// handle locates a block; size excludes the trailer.
type handle struct{ offset, size uint64 }

// blockInfo is one data block.
type blockInfo struct {
	handle
	compression string
	separator   []byte // index key: >= every key of the block
}

// metaBlock is one entry of the metaindex.
type metaBlock struct {
	name string
	handle
}

// tableLayout is where the blocks of a table are.
type tableLayout struct {
	fileSize         uint64
	data             []blockInfo
	meta             []metaBlock
	index, metaindex handle
	filterName       string
	filter           handle
	filterTail       []byte // the filter's last bytes (up to maxFilterTail)
}

// maxFilterTail is how many of the filter's last bytes readLayout keeps:
// enough for every trailer the known policies write.
const maxFilterTail = 16

// compressionCounts returns how many data blocks use each compression.
func (l *tableLayout) compressionCounts() string {
	counts := map[string]int{}
	var order []string
	for _, b := range l.data {
		if counts[b.compression] == 0 {
			order = append(order, b.compression)
		}
		counts[b.compression]++
	}
	parts := make([]string, 0, len(order))
	for _, c := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[c], c))
	}
	return strings.Join(parts, ", ")
}

// maxLayoutBlock bounds the index and metaindex blocks read.
const maxLayoutBlock = 1 << 30

// readLayout decodes the layout of the table in f, of the given size.
func readLayout(f io.ReaderAt, size int64) (*tableLayout, error) {
	if size < sstable.FooterLen {
		return nil, base.CorruptionErrorf("file of %d bytes is too short for a table", size)
	}
	l := &tableLayout{fileSize: uint64(size)}
	footerStart := uint64(size) - sstable.FooterLen
	footer := make([]byte, sstable.FooterLen)
	if _, err := f.ReadAt(footer, int64(footerStart)); err != nil {
		return nil, err
	}
	if m := binary.LittleEndian.Uint64(footer[sstable.FooterLen-8:]); m != sstable.TableMagic {
		return nil, base.CorruptionErrorf("bad magic number %#x", m)
	}
	var n int
	var err error
	if l.metaindex, n, err = decodeHandle(footer); err != nil {
		return nil, err
	}
	if l.index, _, err = decodeHandle(footer[n:]); err != nil {
		return nil, err
	}
	if err := checkWithin(l.index, footerStart, "index"); err != nil {
		return nil, err
	}
	if err := checkWithin(l.metaindex, l.index.offset, "metaindex"); err != nil {
		return nil, err
	}

	meta, err := readRawBlock(f, l.metaindex)
	if err != nil {
		return nil, fmt.Errorf("metaindex: %w", err)
	}
	err = forEachBlockEntry(meta, func(key, value []byte) error {
		h, _, err := decodeHandle(value)
		if err != nil {
			return err
		}
		if err := checkWithin(h, l.metaindex.offset, string(key)); err != nil {
			return err
		}
		l.meta = append(l.meta, metaBlock{string(key), h})
		if name, ok := strings.CutPrefix(string(key), sstable.MetaFilterPrefix); ok {
			l.filterName, l.filter = name, h
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("metaindex: %w", err)
	}
	dataEnd := l.metaindex.offset
	for _, m := range l.meta {
		dataEnd = min(dataEnd, m.offset)
	}
	if l.filterName != "" {
		n := min(l.filter.size, maxFilterTail)
		l.filterTail = make([]byte, n)
		if _, err := f.ReadAt(l.filterTail, int64(l.filter.offset+l.filter.size-n)); err != nil {
			return nil, err
		}
	}

	index, err := readRawBlock(f, l.index)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	err = forEachBlockEntry(index, func(key, value []byte) error {
		h, _, err := decodeHandle(value)
		if err != nil {
			return err
		}
		if err := checkWithin(h, dataEnd, "data"); err != nil {
			return err
		}
		var t [1]byte
		if _, err := f.ReadAt(t[:], int64(h.offset+h.size)); err != nil {
			return err
		}
		l.data = append(l.data, blockInfo{handle: h, compression: sstable.Compression(t[0]).String(), separator: key})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	return l, nil
}

// decodeHandle decodes a handle at the front of b.
func decodeHandle(b []byte) (handle, int, error) {
	off, n := binary.Uvarint(b)
	if n <= 0 {
		return handle{}, 0, base.CorruptionErrorf("bad block handle")
	}
	size, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return handle{}, 0, base.CorruptionErrorf("bad block handle")
	}
	return handle{off, size}, n + m, nil
}

// checkWithin reports whether block h and its trailer end at or before end.
func checkWithin(h handle, end uint64, what string) error {
	if h.offset > end || h.size > end-h.offset || sstable.BlockTrailerLen > end-h.offset-h.size {
		return base.CorruptionErrorf("%s block (offset %d, size %d) runs past offset %d", what, h.offset, h.size, end)
	}
	return nil
}

// readRawBlock reads an uncompressed block (index or metaindex).
func readRawBlock(f io.ReaderAt, h handle) ([]byte, error) {
	if h.size > maxLayoutBlock {
		return nil, base.CorruptionErrorf("block of %d bytes", h.size)
	}
	b := make([]byte, h.size+sstable.BlockTrailerLen)
	if _, err := f.ReadAt(b, int64(h.offset)); err != nil {
		return nil, err
	}
	if c := sstable.Compression(b[h.size]); c != sstable.NoCompression {
		return nil, base.CorruptionErrorf("meta block stored with compression %s", c)
	}
	return b[:h.size], nil
}

// forEachBlockEntry calls fn with every key and value of an uncompressed
// block (entries, then a restart array and its length). The key passed to
// fn is a fresh copy.
func forEachBlockEntry(block []byte, fn func(key, value []byte) error) error {
	if len(block) < 4 {
		return base.CorruptionErrorf("block of %d bytes", len(block))
	}
	restarts := uint64(binary.LittleEndian.Uint32(block[len(block)-4:]))
	if restarts*4 > uint64(len(block)-4) {
		return base.CorruptionErrorf("block claims %d restart points", restarts)
	}
	p := block[:uint64(len(block)-4)-restarts*4]
	var key []byte
	for len(p) > 0 {
		var v [3]uint64
		for i := range v {
			x, n := binary.Uvarint(p)
			if n <= 0 {
				return base.CorruptionErrorf("bad entry header")
			}
			v[i], p = x, p[n:]
		}
		shared, unshared, valueLen := v[0], v[1], v[2]
		if shared > uint64(len(key)) || unshared > uint64(len(p)) || valueLen > uint64(len(p))-unshared {
			return base.CorruptionErrorf("entry lengths (%d shared, %d unshared, %d value) do not fit", shared, unshared, valueLen)
		}
		key = append(key[:shared:shared], p[:unshared]...)
		value := p[unshared : unshared+valueLen]
		p = p[unshared+valueLen:]
		if err := fn(append([]byte(nil), key...), value); err != nil {
			return err
		}
	}
	return nil
}
