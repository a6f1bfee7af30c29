package wal

import "hash/crc32"

// BlockSize is the size of a log block. Physical records never cross a
// block boundary.
const BlockSize = 32 << 10

// headerSize is the size of a physical record header: checksum (4), length
// (2), type (1).
const headerSize = 7

// maxFragment is the largest payload one physical record can carry.
const maxFragment = BlockSize - headerSize

// Fragment types.
const (
	typeZero   = 0 // never written; seen in zero-filled (preallocated) space
	typeFull   = 1
	typeFirst  = 2
	typeMiddle = 3
	typeLast   = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskDelta is added after rotating a CRC, as LevelDB does.
const maskDelta = 0xa282ead8

// maskCRC disguises a CRC so that the checksum of data that itself embeds
// CRCs is not trivially predictable.
func maskCRC(c uint32) uint32 { return (c>>15 | c<<17) + maskDelta }

// fragmentChecksum returns the masked checksum stored in a header. typeAndPayload
// is the type byte immediately followed by the payload, which is how both the
// writer and the reader hold them in memory.
func fragmentChecksum(typeAndPayload []byte) uint32 {
	return maskCRC(crc32.Checksum(typeAndPayload, castagnoli))
}
