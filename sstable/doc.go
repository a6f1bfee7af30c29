// Package sstable owns bloomkv's immutable table format: the block builder
// and decoder, the table Writer and Reader, the whole-table filter block,
// the index and metaindex blocks, the properties block, the footer, block
// checksums and compression. It also reads and writes LevelDB's table
// format (see "LevelDB's format" below).
//
// # File layout
//
// A table is, in file order:
//
//	data block 0 | trailer
//	...
//	data block N-1 | trailer
//	filter block | trailer        (only when the table has a filter)
//	properties block | trailer
//	metaindex block | trailer
//	index block | trailer
//	footer                        (FooterLen = 52 bytes)
//
// Block: entries, then the restart array (one uint32 per restart point),
// then the number of restart points (uint32). An entry is
// uvarint(shared) uvarint(unshared) uvarint(valueLen) key[shared:] value,
// where shared is the length of the prefix the key has in common with the
// previous key; an entry at a restart point has shared = 0. Data blocks
// restart every 16 entries by default, the index block at every entry, and
// the properties and metaindex blocks every 16 entries.
//
// Trailer (5 bytes, after every block): one byte of compression type (0
// none, 1 snappy) and a uint32 checksum: the low 32 bits of xxhash64 over the
// block bytes as stored followed by the type byte. Data and index blocks
// are compressed, each only when snappy saves at least 1/8 of it (tables
// written before 2026-11-27 store the index raw; readers take both).
//
// Handle: uvarint(offset) uvarint(size), size excluding the trailer.
//
// Data block keys are internal keys (see internal/base); values are the
// stored values. The filter block holds the filter policy's Finish output
// over the user keys of all entries. The properties block maps property
// names (the Prop* constants) to values: counts and sizes are uvarints,
// everything else raw bytes. The metaindex block maps "filter.<policy name>"
// (MetaFilterPrefix) to the filter block's handle and "bloomkv.properties"
// (MetaPropertiesKey) to the properties block's handle. The index block maps,
// for each data block, a separator internal key (>= every key of the block,
// < every key of the next) to the block's handle.
//
// Footer (52 bytes): metaindex handle and index handle, zero-padded to 40
// bytes; uint32 format version (FormatVersion = 1); uint64 magic
// (TableMagic). All fixed-width integers are little endian.
//
// # LevelDB's format
//
// The package also reads and writes the tables of LevelDB 1.x and goleveldb
// (FormatLevelDB; WriterOptions.Format selects it, and NewReader tells the
// format from the magic number in the file's last 8 bytes). The layout is
// the one above without the properties, range-deletion and range filter
// blocks:
//
//	data blocks | filter block (when the table has a filter) |
//	metaindex block | index block | footer (LevelDBFooterLen = 48 bytes)
//
// Blocks, handles and keys are as above. The trailer's checksum is the
// CRC-32C (Castagnoli) of the block bytes as stored followed by the type
// byte, masked: ((crc >> 15) | (crc << 17)) + 0xa282ead8. The data,
// metaindex and index blocks may be snappy-compressed (when that saves 1/8),
// the filter block never is; LevelDB 1.24 and later may also write zstd
// (type 2), which the Reader refuses with ErrUnsupportedCompression. The
// metaindex maps "filter.<policy name>" to the filter block and nothing
// else. The footer is the two handles zero-padded to 40 bytes, then uint64
// LevelDBTableMagic.
//
// The filter block holds one filter per 2 KiB range of data-block offsets:
// filter i is the policy's filter over the user keys of the data blocks
// whose offset o has o>>base_lg == i (empty when no block starts in the
// range), and the block is the filters, then one uint32 offset per filter,
// then the uint32 offset of that array, then one byte base_lg (11). So
// MayContain seeks the index for the data block a key would be in before
// it asks a filter, and Filter offers no whole-table filter. A LevelDB
// table records no properties: the Reader's Properties hold what the
// index and metaindex tell, and ScanProperties computes the rest.
//
// # Invariants
//
// Keys in a table are strictly increasing by base.CompareInternal. Every
// length and offset the Reader takes from the file is checked against the
// file size and against the region the block must lie in before anything is
// allocated or sliced; damaged bytes give an error wrapping
// base.ErrCorruption, never a panic, a huge allocation or a wrong answer.
// A Reader keeps the index block and the filter resident from NewReader to
// Close; afterwards the only reads it makes are data blocks, through the
// block cache when it has one.
package sstable
