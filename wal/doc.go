// Package wal reads and writes the record log used by bloomkv for both the
// write-ahead log and the MANIFEST. The on-disk format is LevelDB's log
// format, so logs written here can be read by LevelDB's log reader and the
// other way round.
//
// # Format
//
// A log is a sequence of 32 KiB blocks (BlockSize); only the last block may
// be short. A block holds physical records, each a 7-byte header followed by
// a payload:
//
//	checksum uint32 LE  masked CRC-32C (Castagnoli) of the type byte and the payload
//	length   uint16 LE  payload length
//	type     uint8      1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST (0 only in zero fill)
//	payload  [length]byte
//
// A physical record never crosses a block boundary. When fewer than 7 bytes
// are left in a block the writer fills them with zeros and continues in the
// next block. A logical record (what AddRecord is given and Next returns) is
// stored as one FULL fragment, or as FIRST, zero or more MIDDLE, and LAST
// fragments. Empty logical records are allowed (one FULL fragment with an
// empty payload). The checksum is masked as LevelDB does, so that a log
// stored inside another checksummed stream does not defeat it.
//
// # Reader guarantees
//
//   - A returned record is exactly a record that was written: every fragment
//     passed its checksum and the fragments came in a valid sequence.
//   - The end of the file, a torn tail (a header or a payload cut short by
//     the end of the file, or a record whose later fragments never made it),
//     and a zero-filled tail (bytes the file system allocated but never wrote)
//     all end the log with io.EOF: they are what a crash while appending
//     leaves behind.
//   - Anything else that is not a valid record (a checksum mismatch, an
//     unknown type, a length running past its block, a broken fragment
//     sequence, a zeroed region followed by more data) is reported with an
//     error wrapping base.ErrCorruption; the reader skips the damage (for a
//     bad checksum or length, to the next block boundary) and the following
//     call to Next resumes with the next good record. Like LevelDB, a
//     checksum mismatch is reported even in the last record of the file.
//   - Zero fill is recognized by a header of type 0 and length 0 with only
//     zeros after it. Where LevelDB skips such a region silently wherever it
//     is, this reader ends the log only when the zeros run to the end of the
//     file; a zeroed hole followed by more data, or a zero header followed
//     by non-zero bytes in its block, is reported as corruption, since the
//     records after a hole may depend on ones lost in it.
//   - The reader reads its input one block at a time and never allocates on
//     the strength of a length read from the file: a logical record is
//     assembled only from bytes actually read.
//
// # Writer guarantees
//
// AddRecord hands all of a record's bytes (headers, payload and any block
// padding) to the underlying io.Writer in one Write call, so a group-commit
// batch costs one write system call. The first error from the underlying
// writer, or from Sync, is sticky: the Writer refuses everything afterwards
// with that error, since the state of the file is then unknown.
package wal
