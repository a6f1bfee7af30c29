package db

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/logrec"
)

// batchHeaderLen is the size of a batch's header: an 8-byte sequence number
// and a 4-byte count, both little endian.
const batchHeaderLen = logrec.BatchHeaderLen

// Batch is an ordered set of writes applied atomically by DB.Write: after a
// crash either all of a batch is there or none of it. The zero value is an
// empty batch ready to use. A Batch is not safe for concurrent use.
//
// Its encoding is also the WAL record: a 12-byte header (sequence number,
// count) then, per write, a kind byte, the varint-prefixed key and, for
// puts, the varint-prefixed value (for range deletions, the varint-prefixed
// end of the range).
//
// A write over a size limit (MaxKeySize, MaxValueSize, MaxBatchSize,
// MaxBatchCount) is not added: the batch records the first such error,
// Err returns it, and DB.Write refuses the whole batch with it.
type Batch struct {
	rep []byte
	err error // the first write refused by a limit; sticky until Reset
	// userBytes is the key and value bytes of the writes, the "bytes
	// written by the user" of Metrics.WriteAmplification.
	userBytes int64
	// rangeDels counts the batch's range deletions, which a
	// LevelDB-format store refuses.
	rangeDels int
}

func (b *Batch) init() {
	if len(b.rep) < batchHeaderLen {
		b.rep = make([]byte, batchHeaderLen, 256)
	}
}

// Put adds a write of key=value to the batch. The batch copies both.
func (b *Batch) Put(key, value []byte) {
	if !b.admit(key, len(value)) {
		return
	}
	b.init()
	b.setCount(b.Count() + 1)
	b.userBytes += int64(len(key) + len(value))
	b.rep = append(b.rep, byte(base.KindSet))
	b.rep = binary.AppendUvarint(b.rep, uint64(len(key)))
	b.rep = append(b.rep, key...)
	b.rep = binary.AppendUvarint(b.rep, uint64(len(value)))
	b.rep = append(b.rep, value...)
}

// Delete adds a deletion of key to the batch. The batch copies key.
func (b *Batch) Delete(key []byte) {
	if !b.admit(key, -1) {
		return
	}
	b.init()
	b.setCount(b.Count() + 1)
	b.userBytes += int64(len(key))
	b.rep = append(b.rep, byte(base.KindDelete))
	b.rep = binary.AppendUvarint(b.rep, uint64(len(key)))
	b.rep = append(b.rep, key...)
}

// DeleteRange adds a deletion of every key in [start, end) to the batch:
// the keys written before it (in earlier batches, or earlier in this one)
// are gone for every read that sees the batch, and keys written after it
// are not affected. The batch copies both keys. An empty range (start ==
// end) adds nothing; an inverted one (start > end) is refused like a write
// over a limit: Err returns an error wrapping ErrInvalidArgument and
// DB.Write applies none of the batch. Both keys are subject to MaxKeySize.
func (b *Batch) DeleteRange(start, end []byte) {
	if b.err != nil {
		return
	}
	switch c := bytes.Compare(start, end); {
	case c > 0:
		b.err = fmt.Errorf("%w: DeleteRange start %q is after its end %q", ErrInvalidArgument, start, end)
		return
	case c == 0:
		return
	}
	if err := checkKV(end, -1); err != nil {
		b.err = fmt.Errorf("%w (the end of a DeleteRange)", err)
		return
	}
	if !b.admit(start, len(end)) {
		return
	}
	b.init()
	b.setCount(b.Count() + 1)
	b.userBytes += int64(len(start) + len(end))
	b.rangeDels++
	b.rep = append(b.rep, byte(base.KindRangeDelete))
	b.rep = binary.AppendUvarint(b.rep, uint64(len(start)))
	b.rep = append(b.rep, start...)
	b.rep = binary.AppendUvarint(b.rep, uint64(len(end)))
	b.rep = append(b.rep, end...)
}

// admit checks a write (valueLen -1 for a deletion) against the limits
// before it is added, recording the first refusal in b.err.
func (b *Batch) admit(key []byte, valueLen int) bool {
	if b.err != nil {
		return false
	}
	if err := checkKV(key, valueLen); err != nil {
		b.err = err
		return false
	}
	size := max(len(b.rep), batchHeaderLen) + 1 + uvarintLen(len(key)) + len(key)
	if valueLen >= 0 {
		size += uvarintLen(valueLen) + valueLen
	}
	switch {
	case b.Count() >= MaxBatchCount:
		b.err = fmt.Errorf("%w: batch already holds MaxBatchCount (%d) writes", ErrInvalidArgument, MaxBatchCount)
	case size > MaxBatchSize:
		b.err = fmt.Errorf("%w: batch would grow to %d bytes, over MaxBatchSize (%d)", ErrInvalidArgument, size, MaxBatchSize)
	}
	return b.err == nil
}

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// Err returns the error of the first write the batch refused for being
// over a size limit (wrapping ErrInvalidArgument), or nil. DB.Write
// returns it without applying anything of the batch.
func (b *Batch) Err() error { return b.err }

// Count returns the number of writes in the batch.
func (b *Batch) Count() int {
	if len(b.rep) < batchHeaderLen {
		return 0
	}
	return int(binary.LittleEndian.Uint32(b.rep[8:12]))
}

// Len returns the size of the batch's encoding in bytes.
func (b *Batch) Len() int { return len(b.rep) }

// Reset empties the batch, keeping its memory for reuse, and clears Err.
func (b *Batch) Reset() {
	b.err = nil
	b.userBytes = 0
	b.rangeDels = 0
	if len(b.rep) >= batchHeaderLen {
		b.rep = b.rep[:batchHeaderLen]
		clear(b.rep)
	}
}

func (b *Batch) setCount(n int) { binary.LittleEndian.PutUint32(b.rep[8:12], uint32(n)) }

func (b *Batch) seq() uint64 { return binary.LittleEndian.Uint64(b.rep[:8]) }

func (b *Batch) setSeq(seq uint64) { binary.LittleEndian.PutUint64(b.rep[:8], seq) }

// appendBatch appends the writes of src to b (used by group commit).
func (b *Batch) appendBatch(src *Batch) {
	b.init()
	if src.Count() == 0 {
		return
	}
	b.setCount(b.Count() + src.Count())
	b.userBytes += src.userBytes
	b.rangeDels += src.rangeDels
	b.rep = append(b.rep, src.rep[batchHeaderLen:]...)
}
