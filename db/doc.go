// Package db is bloomkv's public face: an embeddable, LSM-style key-value
// store whose read path asks a per-table filter before touching any block.
//
// Writes go to a write-ahead log and a memtable (group commit: concurrent
// writers share one WAL append and at most one fsync). A full memtable is
// frozen and flushed in the background to a level-0 table. Every table
// carries a filter block built by Options.FilterPolicy (a Bloom filter of 10
// bits per key by default) that is held in memory while the table is open.
//
// Get looks in the memtable, then the frozen memtable, then the tables from
// newest to oldest; for each table whose key range holds the key it asks
// the filter first, and only on a "may contain" reads the index (resident)
// and one data block (block cache, then the table file, read through a
// read-only memory map). Metrics reports every step.
//
// Options.ReadOnly opens a store to look at it without changing a byte of
// its directory: the write-ahead logs are replayed into memory, nothing is
// written, removed, flushed or compacted, and writes fail with
// ErrReadOnly. Read-only opens share the store's LOCK with each other (a
// shared flock), never with a read-write DB.
//
// A DB is safe for concurrent use by many goroutines. Keys and values are
// arbitrary byte strings (empty keys and zero bytes included), up to
// MaxKeySize and MaxValueSize.
//
// # Errors
//
// Errors are checked with errors.Is against ErrNotFound, ErrClosed,
// ErrSnapshotReleased, ErrCorruption, ErrInvalidArgument,
// ErrInvalidOptions, ErrLocked, ErrDBExists, ErrDBMissing and ErrReadOnly;
// they carry context (the directory, a file name, an offset) and say
// "bloomkv: " once, at the front. ErrLocked means only that another DB holds
// the store: a LOCK or directory this user may not open fails with an error
// matching fs.ErrPermission instead.
//
// # Closing
//
// Close a DB, every Iterator (Close) and every Snapshot (Release) when done
// with it: an open iterator pins its tables and a live snapshot keeps the
// versions it can see from being compacted away. Closing twice is harmless
// everywhere and follows os.File's rule: the first call releases, and a
// later one does nothing and returns ErrClosed (DB.Close, Iterator.Close).
// Snapshot.Release returns no error, so a second Release simply does
// nothing. After DB.Close every call on the DB, its iterators and its
// snapshots returns ErrClosed, except an iterator's first Close, which
// releases it and returns the iterator's error (ErrClosed once a call
// after DB.Close has set it, nil for an iterator not used since); a read
// through a released snapshot returns ErrSnapshotReleased.
package db
