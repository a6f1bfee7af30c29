package db

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/sstable"
)

// Errors returned by the DB. Check them with errors.Is: the errors returned
// carry context (file names, offsets) and wrap these sentinels.
var (
	// ErrNotFound is returned by Get when the key has no live value.
	ErrNotFound = errors.New("bloomkv: not found")
	// ErrClosed is returned by every call on a DB (or an iterator or
	// snapshot of it) after Close.
	ErrClosed = errors.New("bloomkv: closed")
	// ErrSnapshotReleased is returned by Get and NewIterator given a
	// snapshot that was released: the versions it saw may be gone.
	ErrSnapshotReleased = errors.New("bloomkv: snapshot released")
	// ErrCorruption is wrapped by every error that reports damaged bytes in
	// a table, log or MANIFEST (bad checksum, impossible length, bad format).
	ErrCorruption = base.ErrCorruption
	// ErrInvalidArgument is wrapped by a write refused before it reached the
	// log: a key, value or batch over its limit (MaxKeySize, MaxValueSize,
	// MaxBatchSize, MaxBatchCount). Nothing of the write is applied.
	ErrInvalidArgument = errors.New("bloomkv: invalid argument")
	// ErrInvalidOptions is wrapped by Open when an option is out of range.
	ErrInvalidOptions = errors.New("bloomkv: invalid options")
	// ErrLocked is wrapped by Open when another DB (in this process or
	// another) holds the directory's LOCK: a read-write DB, or for a
	// read-write Open a read-only one. A LOCK that cannot be opened for
	// lack of permission is not ErrLocked: that error matches
	// fs.ErrPermission.
	ErrLocked = errors.New("bloomkv: database is locked by another user")
	// ErrDBExists is wrapped by Open when Options.ErrorIfExists is set and
	// the directory already holds a store.
	ErrDBExists = errors.New("bloomkv: database already exists")
	// ErrDBMissing is wrapped by Open when Options.ErrorIfMissing is set and
	// the directory holds no store.
	ErrDBMissing = errors.New("bloomkv: database does not exist")
	// ErrReadOnly is returned by Put, Delete, Write, Flush and CompactRange
	// on a DB opened with Options.ReadOnly. (Write of an empty batch, which
	// changes nothing, returns nil as on any DB.)
	ErrReadOnly = errors.New("bloomkv: database is open read-only")
	// ErrIncompleteCheckpoint is wrapped by Open when the directory holds
	// a checkpoint that DB.Checkpoint did not finish (it crashed or
	// failed): remove the directory and take the checkpoint again.
	ErrIncompleteCheckpoint = errors.New("bloomkv: incomplete checkpoint")
	// ErrUnsupportedCompression is wrapped by Open when a LevelDB-format
	// store holds tables compressed with something other than snappy or
	// nothing (LevelDB's zstd, say), and by reads of such a block. It is
	// sstable.ErrUnsupportedCompression.
	ErrUnsupportedCompression = sstable.ErrUnsupportedCompression
	// ErrUnsupportedFormat is wrapped by Open when the directory holds a
	// store of a format bloomkv does not read: RocksDB's (its MANIFEST
	// and tables differ from LevelDB's although its comparator has
	// LevelDB's name).
	ErrUnsupportedFormat = errors.New("bloomkv: unsupported store format")
)

// errorPrefix starts every error the DB makes, once.
const errorPrefix = "bloomkv: "

// wrapf returns an error "bloomkv: <context>: <err>" that wraps err
// (errors.Is and errors.As see through it). The "bloomkv: " that err's own
// message starts with, when it is one of the DB's errors, is dropped so
// the prefix appears once: "bloomkv: open /x: database does not exist",
// not "bloomkv: open /x: bloomkv: database does not exist".
func wrapf(err error, format string, args ...any) error {
	return &wrapped{context: fmt.Sprintf(format, args...), err: err}
}

type wrapped struct {
	context string
	err     error
}

func (w *wrapped) Error() string {
	return errorPrefix + w.context + ": " + strings.TrimPrefix(w.err.Error(), errorPrefix)
}

func (w *wrapped) Unwrap() error { return w.err }
