package base

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Kind is the type of an internal-key entry.
type Kind uint8

// Entry kinds. KindSet is the largest kind, so a seek key built with
// KindSet sorts before every entry of the same user key and sequence.
const (
	KindDelete Kind = 0
	KindSet    Kind = 1

	// KindRangeDelete marks a range tombstone (DB.DeleteRange). Range
	// tombstones never appear among the point entries of a memtable, a
	// data block or an iterator, so KindMax excludes it; it appears in WAL
	// batches (key: start, value: end) and in the bounds of tables that
	// hold tombstones (ParseBoundKey).
	KindRangeDelete Kind = 2

	// KindMax is the largest valid kind; KindSeek is used to build seek keys.
	KindMax  = KindSet
	KindSeek = KindSet
)

// String names the kind as tools print it (SET, DEL).
func (k Kind) String() string {
	switch k {
	case KindDelete:
		return "DEL"
	case KindSet:
		return "SET"
	case KindRangeDelete:
		return "RANGEDEL"
	}
	return fmt.Sprintf("KIND(%d)", uint8(k))
}

// TrailerLen is the length of the trailer appended to every user key.
const TrailerLen = 8

// MaxSeqNum is the largest sequence number that fits in a trailer.
const MaxSeqNum uint64 = 1<<56 - 1

// ErrCorruption is wrapped by every error that reports bytes on disk that
// fail a checksum, a length check or a format check.
var ErrCorruption = errors.New("bloomkv: corruption")

// CorruptionErrorf returns an error wrapping ErrCorruption with a message.
func CorruptionErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruption, fmt.Sprintf(format, args...))
}

// MakeTrailer packs a sequence number and a kind.
func MakeTrailer(seq uint64, kind Kind) uint64 { return seq<<8 | uint64(kind) }

// AppendInternalKey appends the internal key for (ukey, seq, kind) to dst.
func AppendInternalKey(dst, ukey []byte, seq uint64, kind Kind) []byte {
	dst = append(dst, ukey...)
	return binary.LittleEndian.AppendUint64(dst, MakeTrailer(seq, kind))
}

// MakeInternalKey returns a new internal key for (ukey, seq, kind).
func MakeInternalKey(ukey []byte, seq uint64, kind Kind) []byte {
	return AppendInternalKey(make([]byte, 0, len(ukey)+TrailerLen), ukey, seq, kind)
}

// MakeSeekKey returns the internal key that sorts first among the entries of
// ukey visible at sequence number seq.
func MakeSeekKey(ukey []byte, seq uint64) []byte {
	return MakeInternalKey(ukey, seq, KindSeek)
}

// ParseInternalKey splits an internal key. ok is false when ikey is shorter
// than a trailer or holds an unknown kind.
func ParseInternalKey(ikey []byte) (ukey []byte, seq uint64, kind Kind, ok bool) {
	return parseKey(ikey, KindMax)
}

// parseKey splits an internal key whose kind is at most maxKind.
func parseKey(ikey []byte, maxKind Kind) (ukey []byte, seq uint64, kind Kind, ok bool) {
	n := len(ikey) - TrailerLen
	if n < 0 {
		return nil, 0, 0, false
	}
	t := binary.LittleEndian.Uint64(ikey[n:])
	kind = Kind(t & 0xff)
	if kind > maxKind {
		return nil, 0, 0, false
	}
	return ikey[:n:n], t >> 8, kind, true
}

// ParseBoundKey is ParseInternalKey for the bounds of a table, which may
// also be of kind KindRangeDelete: the start or end of a range tombstone.
func ParseBoundKey(ikey []byte) (ukey []byte, seq uint64, kind Kind, ok bool) {
	return parseKey(ikey, KindRangeDelete)
}

// UserKey returns the user-key part of an internal key. ikey must be at
// least TrailerLen long (callers validate with ParseInternalKey first).
func UserKey(ikey []byte) []byte {
	n := len(ikey) - TrailerLen
	if n < 0 {
		return ikey[:0]
	}
	return ikey[:n:n]
}

// Trailer returns the trailer of an internal key (0 if ikey is too short).
func Trailer(ikey []byte) uint64 {
	n := len(ikey) - TrailerLen
	if n < 0 {
		return 0
	}
	return binary.LittleEndian.Uint64(ikey[n:])
}

// CompareInternal orders internal keys: user key ascending, then trailer
// descending (newer first). Keys shorter than a trailer compare by their
// bytes, before any well-formed key with the same prefix.
func CompareInternal(a, b []byte) int {
	ua, ub := UserKey(a), UserKey(b)
	if c := bytes.Compare(ua, ub); c != 0 {
		return c
	}
	ta, tb := Trailer(a), Trailer(b)
	switch {
	case ta > tb:
		return -1
	case ta < tb:
		return 1
	}
	return 0
}

// FormatInternalKey renders an internal key for logs and tools.
func FormatInternalKey(ikey []byte) string {
	ukey, seq, kind, ok := ParseBoundKey(ikey)
	if !ok {
		return fmt.Sprintf("<malformed %q>", ikey)
	}
	return fmt.Sprintf("%q#%d,%s", ukey, seq, kind)
}

// YieldEvery is how many entries a flush or compaction processes between
// calls to runtime.Gosched. They read memory-mapped tables and memtables
// and make almost no system calls, so without a yield the Go scheduler
// lets one keep its processor for a whole 10 ms time slice while a Get
// waits for one: on two cores that was readwhilewriting's worst Get
// (issue 20). A yield costs about 0.1 us; 256 entries take about 50.
const YieldEvery = 256
