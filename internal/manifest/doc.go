// Package manifest owns the contents of the MANIFEST: the VersionEdit record
// and its encoding, and the in-memory Version (the set of live tables per
// level) that a sequence of edits builds. It does not do file I/O: the
// MANIFEST file is a log in the wal package's format whose records are
// encoded VersionEdits; the db package writes and reads that log.
//
// # Record encoding
//
// An encoded VersionEdit is a sequence of fields, each a uvarint tag followed
// by the tag's payload. Integers are uvarints; byte strings are a uvarint
// length followed by the bytes. Fields may appear in any order, but a scalar
// field (comparer, log numbers, next file number, last sequence) at most
// once. The tags and payloads are:
//
//	1  comparer         name (non-empty)
//	2  log number       uvarint
//	3  next file number uvarint
//	4  last sequence    uvarint (<= base.MaxSeqNum)
//	5  compact pointer  level, internal key
//	6  deleted file     level, file number
//	9  prev log number  uvarint
//	7  new file         level, file number, size, smallest internal key,
//	   (LevelDB's)      largest internal key
//	10 new file         tag 7's payload, then smallest seq, largest seq
//	11 new file with    tag 10's payload, then the number of range
//	   range tombstones tombstones in the table (>= 1)
//
// Tags 1 to 7 and 9 are LevelDB's (and goleveldb's) with the same payloads,
// so Decode reads a LevelDB MANIFEST as it is. Tag 7 carries no sequence
// numbers: its table is marked SeqsUnknown. Encode writes bloomkv's tags 10
// and 11; EncodeLevelDB writes tag 7 instead and refuses a table with range
// tombstones, which LevelDB cannot read. LevelDB's obsolete tag 8 and every
// other unknown tag is a decoding error. Decode checks every length against
// the remaining input before it slices or allocates, so hostile input can
// make it allocate at most about the input's size, and every error wraps
// base.ErrCorruption.
//
// # Invariants
//
// A FileMetadata describes an immutable table: Smallest and Largest are
// well-formed internal keys (of kind KindRangeDelete too, for a table whose
// range tombstones reach past its entries) with Smallest <= Largest
// (base.CompareInternal),
// SmallestSeq <= LargestSeq <= base.MaxSeqNum, and the sequence numbers of
// Smallest and Largest lie in [SmallestSeq, LargestSeq]. Decode and
// Builder.Apply enforce this.
//
// A Version is immutable once built and may be shared by any number of
// readers. Its FileMetadata values are shared between versions and must not
// be modified. Level 0 is ordered newest first: by LargestSeq descending,
// ties broken by FileNum descending, so a reader that walks L0 in order sees
// newer entries before older ones; two tables one of which has unknown
// sequence numbers are ordered by FileNum descending alone, LevelDB's rule.
// The two rules agree because the db package numbers level-0 tables in the
// order their memtables were frozen, as LevelDB does. Levels 1 and up are ordered by Smallest
// and their files' user-key ranges are disjoint, with one exception that
// LevelDB and goleveldb can write: two adjacent tables may share a boundary
// user key when their internal keys are still strictly ordered (the first
// ends with newer versions of the key, the second starts with older ones)
// and neither holds range tombstones. Version.SharedBoundaries marks such
// levels; FindFiles returns every table that may hold a key, and a
// compaction that takes one of two such tables takes the other too.
// bloomkv's own compactions cut tables only between user keys.
package manifest
