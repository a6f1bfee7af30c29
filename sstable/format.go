package sstable

import (
	"encoding/binary"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cespare/xxhash/v2"
)

// Compression is the compression type of a block, as stored in the first
// byte of its trailer.
type Compression uint8

// Block compression types.
const (
	NoCompression     Compression = 0
	SnappyCompression Compression = 1
)

// String returns the name recorded in Properties.Compression.
func (c Compression) String() string {
	switch c {
	case NoCompression:
		return "none"
	case SnappyCompression:
		return "snappy"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

const (
	// TableMagic ends every table file. It is "bloomkv!" read as a
	// big-endian number; stored little endian, the file's last 8 bytes are
	// "!vkmoolb".
	TableMagic uint64 = 0x626c6f6f6d6b7621

	// FormatVersion is the table format version this package writes and
	// reads, recorded in the footer and the properties.
	FormatVersion uint32 = 1

	// BlockTrailerLen is the length of the trailer after every block.
	BlockTrailerLen = 5

	// maxHandleLen is the longest encoding of a block handle.
	maxHandleLen = 2 * binary.MaxVarintLen64

	// FooterLen is the fixed length of the footer at the end of a table.
	FooterLen = 2*maxHandleLen + 4 + 8

	// MetaPropertiesKey names the properties block in the metaindex.
	MetaPropertiesKey = "bloomkv.properties"

	// MetaRangeDelKey names the range-deletion block in the metaindex: the
	// table's range tombstones, encoded by rangedel.Encode. A table without
	// tombstones has no such block.
	MetaRangeDelKey = "bloomkv.rangedel"

	// MetaRangeFilterPrefix, followed by the range policy's name, names
	// the range filter block in the metaindex.
	MetaRangeFilterPrefix = "rangefilter."

	// MetaFilterPrefix, followed by the filter policy's name, names the
	// filter block in the metaindex.
	MetaFilterPrefix = "filter."

	// maxDecodedBlockLen bounds the decompressed length a snappy block may
	// claim, whatever its compressed size.
	maxDecodedBlockLen = 1 << 30

	// maxSnappyRatio bounds the decompressed length a snappy block may claim
	// relative to its stored size. Snappy's densest element (a 3-byte copy
	// of 64 bytes) expands 21.3 times, so a real block never exceeds it.
	maxSnappyRatio = 24
)

// blockHandle locates a block in the file: size excludes the trailer.
type blockHandle struct {
	offset, size uint64
}

func (h blockHandle) end() uint64 { return h.offset + h.size + BlockTrailerLen }

func appendHandle(dst []byte, h blockHandle) []byte {
	dst = binary.AppendUvarint(dst, h.offset)
	return binary.AppendUvarint(dst, h.size)
}

// decodeHandle decodes a handle from the front of src and returns the number
// of bytes it took.
func decodeHandle(src []byte) (blockHandle, int, error) {
	off, n := binary.Uvarint(src)
	if n <= 0 || n != uvarintLen(off) {
		return blockHandle{}, 0, base.CorruptionErrorf("sstable: bad block handle offset")
	}
	size, m := binary.Uvarint(src[n:])
	if m <= 0 || m != uvarintLen(size) {
		return blockHandle{}, 0, base.CorruptionErrorf("sstable: bad block handle size")
	}
	return blockHandle{off, size}, n + m, nil
}

// uvarintLen is the length of the canonical (shortest) uvarint of x. A
// handle with a longer encoding of the same number is rejected, so no
// changed byte can leave a handle meaning what it meant.
func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// checkRegion reports whether the block h with its trailer lies within
// [lo, hi), without overflowing.
func checkRegion(h blockHandle, lo, hi uint64, what string) error {
	if hi < lo || h.offset < lo || h.offset > hi || h.size > hi-h.offset ||
		BlockTrailerLen > hi-h.offset-h.size {
		return base.CorruptionErrorf("sstable: %s block handle (offset %d, size %d) outside [%d, %d)",
			what, h.offset, h.size, lo, hi)
	}
	return nil
}

// checksum computes the trailer checksum of a stored block: b holds the
// block bytes followed by the type byte.
func checksum(b []byte) uint32 { return uint32(xxhash.Sum64(b)) }

type footer struct {
	metaindex, index blockHandle
	version          uint32
}

func (f footer) encode() []byte {
	buf := make([]byte, FooterLen)
	p := appendHandle(buf[:0], f.metaindex)
	appendHandle(p, f.index)
	binary.LittleEndian.PutUint32(buf[2*maxHandleLen:], f.version)
	binary.LittleEndian.PutUint64(buf[2*maxHandleLen+4:], TableMagic)
	return buf
}

func decodeFooter(buf []byte) (footer, error) {
	var f footer
	if len(buf) != FooterLen {
		return f, base.CorruptionErrorf("sstable: footer of %d bytes", len(buf))
	}
	if m := binary.LittleEndian.Uint64(buf[2*maxHandleLen+4:]); m != TableMagic {
		return f, base.CorruptionErrorf("sstable: bad magic number %#x", m)
	}
	f.version = binary.LittleEndian.Uint32(buf[2*maxHandleLen:])
	if f.version != FormatVersion {
		return f, base.CorruptionErrorf("sstable: unknown format version %d", f.version)
	}
	handles := buf[:2*maxHandleLen]
	var n, m int
	var err error
	if f.metaindex, n, err = decodeHandle(handles); err != nil {
		return f, err
	}
	if f.index, m, err = decodeHandle(handles[n:]); err != nil {
		return f, err
	}
	for _, b := range handles[n+m:] {
		if b != 0 {
			return f, base.CorruptionErrorf("sstable: nonzero footer padding")
		}
	}
	return f, nil
}
