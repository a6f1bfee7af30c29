// Package logrec is the content of a write-ahead log's records: batches of
// writes, and the markers of a memtable switch (a header naming the log
// before, and the end record). Package wal frames the records; package db
// writes and replays them; kvtool reads them.
//
// A batch is a 12-byte header (the sequence number of its first write and
// the number of writes, both little endian) and then, per write, a kind
// byte, the varint-prefixed key and, for a Set, the varint-prefixed value.
// A header record is the tag 0xfe and the varint number of the previous
// log: shorter than a batch's header, so never taken for one. An empty
// record ends a log.
package logrec

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
)

// BatchHeaderLen is the size of a batch's header.
const BatchHeaderLen = 12

// HeaderTag starts the header record of a log.
const HeaderTag = 0xfe

// Type tells what one record of a write-ahead log holds.
type Type int

const (
	// Batch is a batch of writes (or damage, which decoding it reports).
	Batch Type = iota
	// Header starts a log made at a memtable switch and names the log
	// before it.
	Header
	// End ends a log at a memtable switch: no write follows it there.
	End
)

// AppendHeader appends the header record of a log whose predecessor (the
// log of the memtable before) is prev, 0 for none.
func AppendHeader(dst []byte, prev uint64) []byte {
	dst = append(dst, HeaderTag)
	return binary.AppendUvarint(dst, prev)
}

// DecodeHeader decodes a header record made by AppendHeader.
func DecodeHeader(rec []byte) (prev uint64, ok bool) {
	if len(rec) < 2 || len(rec) >= BatchHeaderLen || rec[0] != HeaderTag {
		return 0, false
	}
	prev, n := binary.Uvarint(rec[1:])
	return prev, n == len(rec)-1
}

// Classify reports what rec holds; for a Header, prev is the number of the
// log before.
func Classify(rec []byte) (t Type, prev uint64) {
	if len(rec) == 0 {
		return End, 0
	}
	if prev, ok := DecodeHeader(rec); ok {
		return Header, prev
	}
	return Batch, 0
}

// Op is one write of a batch; Key and Value alias the record. For a range
// deletion (base.KindRangeDelete) Key is the range's start and Value its
// end, exclusive.
type Op struct {
	Kind       base.Kind
	Key, Value []byte
}

// ForEachOp decodes a batch, checking every length against the bytes
// present before slicing, and calls fn (when not nil) for each write in
// order. A malformed batch (including a count that does not match the
// writes) is an error wrapping base.ErrCorruption; fn has then possibly
// been called for a prefix, so a caller that must not half-apply a batch
// validates it first with fn == nil.
func ForEachOp(rep []byte, fn func(op Op) error) error {
	if len(rep) < BatchHeaderLen {
		return base.CorruptionErrorf("batch of %d bytes is shorter than its header", len(rep))
	}
	want := int(binary.LittleEndian.Uint32(rep[8:12]))
	p := rep[BatchHeaderLen:]
	n := 0
	for len(p) > 0 {
		kind := base.Kind(p[0])
		p = p[1:]
		if kind > base.KindMax && kind != base.KindRangeDelete {
			return base.CorruptionErrorf("batch record %d has unknown kind %d", n, kind)
		}
		key, rest, err := readLengthPrefixed(p)
		if err != nil {
			return fmt.Errorf("batch record %d key: %w", n, err)
		}
		p = rest
		var value []byte
		if kind == base.KindSet || kind == base.KindRangeDelete {
			value, rest, err = readLengthPrefixed(p)
			if err != nil {
				return fmt.Errorf("batch record %d value: %w", n, err)
			}
			p = rest
		}
		if kind == base.KindRangeDelete && bytes.Compare(key, value) >= 0 {
			return base.CorruptionErrorf("batch record %d deletes the empty range [%q, %q)", n, key, value)
		}
		if fn != nil {
			if err := fn(Op{kind, key, value}); err != nil {
				return err
			}
		}
		n++
	}
	if n != want {
		return base.CorruptionErrorf("batch header says %d records, found %d", want, n)
	}
	return nil
}

// DecodeBatch decodes a batch record: the sequence number of its first
// write, and its writes in order, aliasing rec.
func DecodeBatch(rec []byte) (seq uint64, ops []Op, err error) {
	err = ForEachOp(rec, func(op Op) error {
		ops = append(ops, op)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return binary.LittleEndian.Uint64(rec), ops, nil
}

func readLengthPrefixed(p []byte) (field, rest []byte, err error) {
	l, n := binary.Uvarint(p)
	if n <= 0 {
		return nil, nil, base.CorruptionErrorf("bad varint length")
	}
	p = p[n:]
	if l > uint64(len(p)) {
		return nil, nil, base.CorruptionErrorf("length %d runs past the %d bytes left", l, len(p))
	}
	return p[:l:l], p[l:], nil
}
