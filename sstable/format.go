package sstable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

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

// Format is a table file format. A Reader detects it from the footer's
// magic number; a Writer writes the one WriterOptions.Format names.
type Format uint8

// Table formats.
const (
	// FormatBloomKV is bloomkv's own format (the zero value): xxhash
	// checksums, a whole-table filter, a properties block, a 52-byte footer.
	FormatBloomKV Format = 0
	// FormatLevelDB is the table format of LevelDB 1.x and goleveldb:
	// masked CRC-32C checksums, one filter per 2 KiB of data-block offsets,
	// no properties block, a 48-byte footer. See the package doc.
	FormatLevelDB Format = 1
)

// String names the format.
func (f Format) String() string {
	switch f {
	case FormatBloomKV:
		return "bloomkv"
	case FormatLevelDB:
		return "leveldb"
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

const (
	// LevelDBTableMagic ends every LevelDB table file (stored little endian).
	LevelDBTableMagic uint64 = 0xdb4775248b80fb57

	// LevelDBFooterLen is the fixed length of a LevelDB table's footer:
	// the two handles zero-padded to 40 bytes, then the magic number.
	LevelDBFooterLen = 2*maxHandleLen + 8

	// levelDBFilterBaseLg is the base-2 logarithm of the range of
	// data-block offsets one LevelDB filter covers (2 KiB).
	levelDBFilterBaseLg = 11

	// levelDBZstdCompression is the trailer type of zstd blocks in LevelDB
	// 1.24 and later, which this package does not decode.
	levelDBZstdCompression = 2
)

// ErrUnsupportedCompression is wrapped by the error of a block whose
// trailer names a compression type this package does not decode, such as
// zstd (type 2) in the tables of newer LevelDB releases. In a bloomkv table,
// which only ever holds types 0 and 1, the error also wraps
// base.ErrCorruption; in a LevelDB table (whose trailer checksum vouches
// for the type byte) it does not.
var ErrUnsupportedCompression = errors.New("sstable: unsupported block compression")

// ErrUnsupportedByFormat is wrapped by the error of a Writer asked for what
// its table format cannot hold: range deletions, prefix or range filters,
// or a filter policy other than LevelDB's in FormatLevelDB.
var ErrUnsupportedByFormat = errors.New("sstable: not supported by the table format")

// compressionError is the error of a checked block of unknown compression
// type typ in a table of format f.
func compressionError(f Format, typ byte, h blockHandle) error {
	if f == FormatLevelDB {
		name := fmt.Sprintf("compression type %d", typ)
		if typ == levelDBZstdCompression {
			name = "zstd (compression type 2)"
		}
		return fmt.Errorf("%w: block at offset %d is %s; only none (0) and snappy (1) are supported", ErrUnsupportedCompression, h.offset, name)
	}
	return fmt.Errorf("%w: %w: block at offset %d: unknown compression type %d", base.ErrCorruption, ErrUnsupportedCompression, h.offset, typ)
}

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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// levelDBChecksum computes the trailer checksum of a stored block of a
// LevelDB table: the CRC-32C of b (block bytes and type byte), masked as
// LevelDB masks stored CRCs (rotated right by 15 bits, plus a constant).
func levelDBChecksum(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// checksum computes the trailer checksum of a stored block in format f.
func (f Format) checksum(b []byte) uint32 {
	if f == FormatLevelDB {
		return levelDBChecksum(b)
	}
	return checksum(b)
}

// footerLen is the length of the footer of format f.
func (f Format) footerLen() int {
	if f == FormatLevelDB {
		return LevelDBFooterLen
	}
	return FooterLen
}

type footer struct {
	format           Format
	metaindex, index blockHandle
	version          uint32 // FormatVersion; 0 in LevelDB tables
}

func (f footer) encode() []byte {
	if f.format == FormatLevelDB {
		buf := make([]byte, LevelDBFooterLen)
		p := appendHandle(buf[:0], f.metaindex)
		appendHandle(p, f.index)
		binary.LittleEndian.PutUint64(buf[2*maxHandleLen:], LevelDBTableMagic)
		return buf
	}
	buf := make([]byte, FooterLen)
	p := appendHandle(buf[:0], f.metaindex)
	appendHandle(p, f.index)
	binary.LittleEndian.PutUint32(buf[2*maxHandleLen:], f.version)
	binary.LittleEndian.PutUint64(buf[2*maxHandleLen+4:], TableMagic)
	return buf
}

// decodeFooter decodes the footer at the end of buf, the last
// min(FooterLen, file size) bytes of a table, telling the format by the
// magic number in buf's last 8 bytes.
func decodeFooter(buf []byte) (footer, error) {
	var f footer
	if len(buf) < 8 {
		return f, base.CorruptionErrorf("sstable: file of %d bytes is too short for a table", len(buf))
	}
	var handles []byte
	switch m := binary.LittleEndian.Uint64(buf[len(buf)-8:]); m {
	case TableMagic:
		if len(buf) < FooterLen {
			return f, base.CorruptionErrorf("sstable: file of %d bytes is too short for a table", len(buf))
		}
		buf = buf[len(buf)-FooterLen:]
		f.version = binary.LittleEndian.Uint32(buf[2*maxHandleLen:])
		if f.version != FormatVersion {
			return f, base.CorruptionErrorf("sstable: unknown format version %d", f.version)
		}
		handles = buf[:2*maxHandleLen]
	case LevelDBTableMagic:
		if len(buf) < LevelDBFooterLen {
			return f, base.CorruptionErrorf("sstable: file of %d bytes is too short for a LevelDB table", len(buf))
		}
		f.format = FormatLevelDB
		handles = buf[len(buf)-LevelDBFooterLen : len(buf)-8]
	default:
		return f, base.CorruptionErrorf("sstable: bad magic number %#x", m)
	}
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
