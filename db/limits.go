package db

import (
	"fmt"

	"github.com/bloomkv/bloomkv/memtable"
)

// Size limits of what a store accepts. They are checked where writes are
// accepted (Batch.Put and Batch.Delete, and so DB.Put, DB.Delete and
// DB.Write), before anything reaches the write-ahead log, with an error
// wrapping ErrInvalidArgument: whatever is accepted can be flushed,
// compacted and replayed.
const (
	// MaxKeySize is the largest key, in bytes: 8 MiB (RocksDB's
	// recommended maximum). Keys are copied into index blocks and the
	// MANIFEST, so keep them short.
	MaxKeySize = 8 << 20
	// MaxValueSize is the largest value, in bytes: 256 MiB.
	MaxValueSize = 256 << 20
	// MaxBatchSize is the largest batch encoding (Batch.Len), in bytes:
	// 512 MiB. A batch is one WAL record, applied to one memtable, and
	// replayed whole after a crash.
	MaxBatchSize = 512 << 20
	// MaxBatchCount is the largest number of writes in one batch: 4 Mi
	// (4,194,304). Each write takes a memtable node of about 30 bytes
	// besides its key and value, so this bounds a batch's memory as
	// MaxBatchSize bounds its bytes.
	MaxBatchCount = 1 << 22
	// MaxWriteBufferSize is the largest Options.WriteBufferSize: 1 GiB.
	MaxWriteBufferSize = 1 << 30
)

// checkKV reports whether a key and value (-1: a deletion) are within the
// limits, as an error wrapping ErrInvalidArgument.
func checkKV(key []byte, valueLen int) error {
	if len(key) > MaxKeySize {
		return fmt.Errorf("%w: key of %d bytes exceeds MaxKeySize (%d)", ErrInvalidArgument, len(key), MaxKeySize)
	}
	if valueLen > MaxValueSize {
		return fmt.Errorf("%w: value of %d bytes exceeds MaxValueSize (%d)", ErrInvalidArgument, valueLen, MaxValueSize)
	}
	return nil
}

// A memtable holds less than WriteBufferSize before a write group is
// added to it (the writer switches memtables first; replay flushes after
// each batch), and a group is one batch or small batches of at most
// maxGroupBytes together. Each write costs the memtable its key and value
// plus at most memtable.MaxEntryOverhead, so the memtable never grows
// past the size it supports: this fails to compile if the limits say
// otherwise.
const maxMemtableUsage = MaxWriteBufferSize + max(MaxBatchSize+MaxBatchCount*memtable.MaxEntryOverhead,
	2*maxGroupBytes*(1+memtable.MaxEntryOverhead))

var _ = uint(memtable.MaxMemoryUsage - maxMemtableUsage)

// batchMemtableCost bounds what applying b adds to a memtable's
// ApproximateMemoryUsage.
func batchMemtableCost(b *Batch) int64 {
	return int64(b.Len()) + int64(b.Count())*memtable.MaxEntryOverhead
}
