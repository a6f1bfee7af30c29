package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
)

// NumLevels is the number of levels in the LSM tree (L0 through L6).
const NumLevels = 7

// Field tags of an encoded VersionEdit (see the package documentation).
const (
	tagComparer       = 1
	tagLogNumber      = 2
	tagNextFileNumber = 3
	tagLastSequence   = 4
	tagCompactPointer = 5
	tagDeletedFile    = 6
	// tagNewFileLevelDB is LevelDB's new-file tag: tagNewFile's payload
	// without the sequence numbers.
	tagNewFileLevelDB = 7
	tagPrevLogNumber  = 9
	tagNewFile        = 10
	// tagNewFileRangeDels is tagNewFile followed by the number of range
	// tombstones the table holds (at least one). Tables without any are
	// written with tagNewFile, so stores that never used DeleteRange keep
	// the encoding of earlier versions; a store with a range tombstone is
	// refused by a version that does not know them ("unknown tag 11")
	// instead of being read without its tombstones.
	tagNewFileRangeDels = 11
)

// NewFileEntry is a table added to a level by a VersionEdit.
type NewFileEntry struct {
	Level int
	Meta  *FileMetadata
}

// DeletedFileEntry is a table removed from a level by a VersionEdit.
type DeletedFileEntry struct {
	Level   int
	FileNum uint64
}

// CompactPointer records, for a level, the internal key just after which
// the next compaction of that level should start (LevelDB's round-robin
// compaction cursor). The Version does not hold it; the db package does.
type CompactPointer struct {
	Level int
	Key   []byte // an internal key
}

// VersionEdit is one MANIFEST record: a change to the set of live tables
// plus updates to the database's counters. The scalar fields are set only
// when their Has flag is true; Comparer is set when it is non-empty.
//
// When applied (Builder.Apply), an edit's deletions take effect before its
// additions, so one edit can move a table between levels by deleting and
// re-adding its file number.
type VersionEdit struct {
	// Comparer is the name of the user-key comparer; empty means unset.
	Comparer string

	LogNumber         uint64
	HasLogNumber      bool
	PrevLogNumber     uint64
	HasPrevLogNumber  bool
	NextFileNumber    uint64
	HasNextFileNumber bool
	LastSequence      uint64
	HasLastSequence   bool

	CompactPointers []CompactPointer
	DeletedFiles    []DeletedFileEntry
	NewFiles        []NewFileEntry
}

// Encode appends the encoding of e to dst and returns the extended slice.
// Every NewFiles entry must have a non-nil Meta. Encode does not validate e;
// an edit that breaks the invariants encodes, but Decode rejects it. A table
// whose sequence numbers are unknown is written with LevelDB's tag 7.
func (e *VersionEdit) Encode(dst []byte) []byte {
	dst, _ = e.encode(dst, false)
	return dst
}

// ErrNotLevelDB is returned by EncodeLevelDB for an edit that LevelDB's
// encoding cannot express: a table with range tombstones.
var ErrNotLevelDB = errors.New("manifest: edit cannot be written in LevelDB's encoding")

// EncodeLevelDB appends e in LevelDB's encoding: every new table with tag
// 7, without its sequence numbers, so that LevelDB and goleveldb can read
// the MANIFEST. It fails with ErrNotLevelDB, appending nothing, when a new
// table holds range tombstones.
func (e *VersionEdit) EncodeLevelDB(dst []byte) ([]byte, error) {
	for _, n := range e.NewFiles {
		if n.Meta.RangeDels > 0 {
			return dst, fmt.Errorf("%w: table %06d holds %d range tombstones", ErrNotLevelDB, n.Meta.FileNum, n.Meta.RangeDels)
		}
	}
	return e.encode(dst, true)
}

func (e *VersionEdit) encode(dst []byte, leveldb bool) ([]byte, error) {
	if e.Comparer != "" {
		dst = binary.AppendUvarint(dst, tagComparer)
		dst = appendBytes(dst, []byte(e.Comparer))
	}
	if e.HasLogNumber {
		dst = binary.AppendUvarint(dst, tagLogNumber)
		dst = binary.AppendUvarint(dst, e.LogNumber)
	}
	if e.HasPrevLogNumber {
		dst = binary.AppendUvarint(dst, tagPrevLogNumber)
		dst = binary.AppendUvarint(dst, e.PrevLogNumber)
	}
	if e.HasNextFileNumber {
		dst = binary.AppendUvarint(dst, tagNextFileNumber)
		dst = binary.AppendUvarint(dst, e.NextFileNumber)
	}
	if e.HasLastSequence {
		dst = binary.AppendUvarint(dst, tagLastSequence)
		dst = binary.AppendUvarint(dst, e.LastSequence)
	}
	for _, cp := range e.CompactPointers {
		dst = binary.AppendUvarint(dst, tagCompactPointer)
		dst = binary.AppendUvarint(dst, uint64(cp.Level))
		dst = appendBytes(dst, cp.Key)
	}
	for _, d := range e.DeletedFiles {
		dst = binary.AppendUvarint(dst, tagDeletedFile)
		dst = binary.AppendUvarint(dst, uint64(d.Level))
		dst = binary.AppendUvarint(dst, d.FileNum)
	}
	for _, n := range e.NewFiles {
		m := n.Meta
		tag := uint64(tagNewFile)
		switch {
		case leveldb || (m.SeqsUnknown && m.RangeDels == 0):
			tag = tagNewFileLevelDB
		case m.RangeDels > 0:
			tag = tagNewFileRangeDels
		}
		dst = binary.AppendUvarint(dst, tag)
		dst = binary.AppendUvarint(dst, uint64(n.Level))
		dst = binary.AppendUvarint(dst, m.FileNum)
		dst = binary.AppendUvarint(dst, m.Size)
		dst = appendBytes(dst, m.Smallest)
		dst = appendBytes(dst, m.Largest)
		if tag == tagNewFileLevelDB {
			continue
		}
		dst = binary.AppendUvarint(dst, m.SmallestSeq)
		dst = binary.AppendUvarint(dst, m.LargestSeq)
		if tag == tagNewFileRangeDels {
			dst = binary.AppendUvarint(dst, m.RangeDels)
		}
	}
	return dst, nil
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// Decode replaces e with the edit encoded in src. It fails, with an error
// wrapping base.ErrCorruption, on an unknown tag, a truncated or overlong
// field, a repeated scalar field, a level >= NumLevels, or file metadata or a
// compact pointer that breaks the package invariants. On error e is reset to
// the zero edit. The decoded edit does not alias src.
func (e *VersionEdit) Decode(src []byte) error {
	*e = VersionEdit{}
	var out VersionEdit
	// Byte strings are sliced from one private copy of src, so the edit does
	// not alias the caller's buffer and costs one allocation for all keys.
	d := decoder{src: bytes.Clone(src)}
	var seen uint64 // bit per scalar tag
	scalar := func(tag uint64, name string) error {
		if seen&(1<<tag) != 0 {
			return d.errorf("duplicate %s field", name)
		}
		seen |= 1 << tag
		return nil
	}
	for d.off < len(d.src) {
		tag, err := d.uvarint("tag")
		if err != nil {
			return err
		}
		switch tag {
		case tagComparer:
			if err := scalar(tag, "comparer"); err != nil {
				return err
			}
			name, err := d.bytes("comparer")
			if err != nil {
				return err
			}
			if len(name) == 0 {
				return d.errorf("empty comparer name")
			}
			out.Comparer = string(name)
		case tagLogNumber:
			if err := scalar(tag, "log number"); err != nil {
				return err
			}
			if out.LogNumber, err = d.uvarint("log number"); err != nil {
				return err
			}
			out.HasLogNumber = true
		case tagPrevLogNumber:
			if err := scalar(tag, "prev log number"); err != nil {
				return err
			}
			if out.PrevLogNumber, err = d.uvarint("prev log number"); err != nil {
				return err
			}
			out.HasPrevLogNumber = true
		case tagNextFileNumber:
			if err := scalar(tag, "next file number"); err != nil {
				return err
			}
			if out.NextFileNumber, err = d.uvarint("next file number"); err != nil {
				return err
			}
			out.HasNextFileNumber = true
		case tagLastSequence:
			if err := scalar(tag, "last sequence"); err != nil {
				return err
			}
			if out.LastSequence, err = d.uvarint("last sequence"); err != nil {
				return err
			}
			if out.LastSequence > base.MaxSeqNum {
				return d.errorf("last sequence %d exceeds the maximum", out.LastSequence)
			}
			out.HasLastSequence = true
		case tagCompactPointer:
			level, err := d.level()
			if err != nil {
				return err
			}
			key, err := d.bytes("compact pointer key")
			if err != nil {
				return err
			}
			if _, _, _, ok := base.ParseInternalKey(key); !ok {
				return d.errorf("compact pointer key %q is not an internal key", key)
			}
			out.CompactPointers = append(out.CompactPointers, CompactPointer{Level: level, Key: key})
		case tagDeletedFile:
			level, err := d.level()
			if err != nil {
				return err
			}
			num, err := d.uvarint("deleted file number")
			if err != nil {
				return err
			}
			out.DeletedFiles = append(out.DeletedFiles, DeletedFileEntry{Level: level, FileNum: num})
		case tagNewFileLevelDB, tagNewFile, tagNewFileRangeDels:
			level, err := d.level()
			if err != nil {
				return err
			}
			m := new(FileMetadata)
			if m.FileNum, err = d.uvarint("file number"); err != nil {
				return err
			}
			if m.Size, err = d.uvarint("file size"); err != nil {
				return err
			}
			if m.Smallest, err = d.bytes("smallest key"); err != nil {
				return err
			}
			if m.Largest, err = d.bytes("largest key"); err != nil {
				return err
			}
			if tag == tagNewFileLevelDB {
				m.UnknownSeqs()
			} else {
				if m.SmallestSeq, err = d.uvarint("smallest seq"); err != nil {
					return err
				}
				if m.LargestSeq, err = d.uvarint("largest seq"); err != nil {
					return err
				}
			}
			if tag == tagNewFileRangeDels {
				if m.RangeDels, err = d.uvarint("range tombstones"); err != nil {
					return err
				}
				if m.RangeDels == 0 {
					return d.errorf("file %d: tagged with range tombstones but holds none", m.FileNum)
				}
			}
			if err := m.check(); err != nil {
				return d.errorf("file %d: %v", m.FileNum, err)
			}
			out.NewFiles = append(out.NewFiles, NewFileEntry{Level: level, Meta: m})
		default:
			return d.errorf("unknown tag %d", tag)
		}
	}
	*e = out
	return nil
}

// decoder reads fields from an encoded edit, checking every length.
type decoder struct {
	src []byte
	off int // start of the unread input
	pos int // start of the field being read, for error messages
}

func (d *decoder) errorf(format string, args ...any) error {
	return base.CorruptionErrorf("manifest: version edit at offset %d: %s", d.pos, fmt.Sprintf(format, args...))
}

func (d *decoder) uvarint(field string) (uint64, error) {
	d.pos = d.off
	v, n := binary.Uvarint(d.src[d.off:])
	switch {
	case n == 0:
		return 0, d.errorf("truncated %s", field)
	case n < 0:
		return 0, d.errorf("%s overflows 64 bits", field)
	}
	d.off += n
	return v, nil
}

// bytes reads a length-prefixed byte string and returns it, with its
// capacity clipped so that appends to it cannot clobber the next field.
func (d *decoder) bytes(field string) ([]byte, error) {
	n, err := d.uvarint(field + " length")
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.src)-d.off) {
		return nil, d.errorf("%s length %d exceeds the %d bytes left", field, n, len(d.src)-d.off)
	}
	end := d.off + int(n)
	b := d.src[d.off:end:end]
	d.off = end
	return b, nil
}

func (d *decoder) level() (int, error) {
	v, err := d.uvarint("level")
	if err != nil {
		return 0, err
	}
	if v >= NumLevels {
		return 0, d.errorf("level %d out of range [0,%d)", v, NumLevels)
	}
	return int(v), nil
}
