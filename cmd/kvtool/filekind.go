package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"strings"

	"github.com/bloomkv/bloomkv/internal/logrec"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/wal"
)

// This file tells the kinds of a store's files apart, so that a command
// given a file of another kind (wal dump CURRENT, sst props on a log) says
// so instead of reporting damage, while a file of the right kind that is
// damaged is still reported as damaged.
//
// The rule: what a file's bytes show decides when they show a kind (an
// intact record of the log format, the table magic number, CURRENT's one
// line); a file whose bytes show no kind (empty, or damaged beyond
// recognition) is taken for what its name says: a damaged file of the
// command's kind when the name is the store's name for that kind (*.log,
// *.sst or *.ldb, MANIFEST-*), and a file of another kind otherwise.

// fileKind is what the bytes of a file show it to be.
type fileKind int

const (
	kindUnknown   fileKind = iota // bytes of no kind kvtool knows (nor empty)
	kindEmpty                     // no bytes
	kindCurrent                   // a store's CURRENT: "MANIFEST-NNNNNN\n"
	kindTable                     // ends with a table magic number (bloomkv's or LevelDB's)
	kindWAL                       // log format; its first intact record is a batch or a log header or end
	kindManifest                  // log format; its first intact record is a version edit
	kindLogFormat                 // log format; its first intact record is neither
)

// wrongKindError is the error for a file that is not of the kind a
// command reads.
type wrongKindError struct {
	path   string
	what   string // "a log file", "a table file", "a MANIFEST"
	reason string // what the file is instead, or why it is not one
}

func (e *wrongKindError) Error() string {
	return fmt.Sprintf("%s is not %s: %s", e.path, e.what, e.reason)
}

// sniffed is what sniffFile found.
type sniffed struct {
	kind fileKind
	size int64
	// detail is, for a CURRENT, the MANIFEST it names.
	detail string
}

// sniffFile reads the file at path far enough to tell its kind: up to the
// first intact record of the log format, which for a file of another kind
// means to its end.
func sniffFile(path string) (sniffed, error) {
	f, err := os.Open(path)
	if err != nil {
		return sniffed{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return sniffed{}, err
	}
	s := sniffed{size: fi.Size()}
	if s.size == 0 {
		s.kind = kindEmpty
		return s, nil
	}
	if s.size <= maxCurrentSize {
		b := make([]byte, s.size)
		if _, err := f.ReadAt(b, 0); err != nil {
			return s, err
		}
		if name, ok := strings.CutSuffix(string(b), "\n"); ok && manifestName.MatchString(name) {
			s.kind, s.detail = kindCurrent, name
			return s, nil
		}
	}
	_, magic, err := sstable.SniffFormat(f, s.size)
	if err != nil {
		return s, err
	}
	r := wal.NewReader(f)
	for first := true; ; first = false {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !isCorruption(err) {
			return s, err
		}
		if err != nil {
			if first && magic {
				// No intact record at offset 0, and a table magic
				// number at the end: a table (a log ends with the last
				// write's bytes, which may well be "bloomkv!", but starts
				// with an intact record unless it is damaged there too).
				s.kind = kindTable
				return s, nil
			}
			continue
		}
		s.kind = classifyRecord(rec)
		return s, nil
	}
	if magic {
		s.kind = kindTable
	}
	return s, nil
}

// classifyRecord tells which kind of log an intact record comes from.
func classifyRecord(rec []byte) fileKind {
	if t, _ := logrec.Classify(rec); t != logrec.Batch {
		return kindWAL
	}
	if _, err := decodeBatch(rec); err == nil {
		return kindWAL
	}
	var e manifest.VersionEdit
	if e.Decode(rec) == nil {
		return kindManifest
	}
	return kindLogFormat
}

// lastWord returns the last 8 bytes of the file as a little-endian
// number, what a table's footer ends with; false when the file is
// shorter than the shorter footer (LevelDB's) or cannot be read. Only
// messages and nearTableMagic use it: sstable.SniffFormat tells a table.
func lastWord(f io.ReaderAt, size int64) (uint64, bool) {
	if size < sstable.LevelDBFooterLen {
		return 0, false
	}
	var b [8]byte
	if _, err := f.ReadAt(b[:], size-8); err != nil {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[:]), true
}

// nearTableMagic reports whether m differs from a table magic number
// (bloomkv's or LevelDB's) in at most a few bits: a damaged magic number
// rather than other bytes (unrelated bytes differ in about half of the
// 64).
func nearTableMagic(m uint64) bool {
	return bits.OnesCount64(m^sstable.TableMagic) <= 8 || bits.OnesCount64(m^sstable.LevelDBTableMagic) <= 8
}

// describe says what s is, for "X is not a ...: it is ..." messages, and
// which command reads it.
func (s sniffed) describe() string {
	switch s.kind {
	case kindEmpty:
		return "it is empty"
	case kindCurrent:
		return fmt.Sprintf("it is a store's CURRENT file (it names %s; kvtool manifest dump DIR reads that)", s.detail)
	case kindTable:
		return "it is a table (it ends with a table magic number; kvtool sst reads it)"
	case kindWAL:
		return "it is a write-ahead log (its first intact record is a batch; kvtool wal dump reads it)"
	case kindManifest:
		return "it is a MANIFEST (its first intact record is a version edit; kvtool manifest dump reads it)"
	case kindLogFormat:
		return "its records are of the log format, but its first intact record is neither a batch nor a version edit"
	}
	return fmt.Sprintf("none of its %d bytes is an intact record of the log format", s.size)
}

// Names the store gives its files (a table is NNNNNN.sst, or NNNNNN.ldb
// as LevelDB and goleveldb name theirs).
func isLogName(path string) bool      { return strings.HasSuffix(filepath.Base(path), ".log") }
func isManifestName(path string) bool { return strings.HasPrefix(filepath.Base(path), "MANIFEST-") }
func isTableName(path string) bool {
	b := filepath.Base(path)
	return strings.HasSuffix(b, ".sst") || strings.HasSuffix(b, ".ldb")
}

// notA returns the error for path, which is not a file of the kind what
// names ("a log file", "a table file", "a MANIFEST").
func notA(path, what, reason string) error {
	return &wrongKindError{path: path, what: what, reason: reason}
}

// checkLogKind decides whether the file at path is read as a write-ahead
// log (want kindWAL) or as a MANIFEST (want kindManifest). It returns nil
// for a file of that kind, damaged or not, and for an empty file of its
// name (an empty log is what a crash right after its creation leaves); a
// *wrongKindError otherwise.
func checkLogKind(path string, want fileKind) error {
	s, err := sniffFile(path)
	if err != nil {
		return err
	}
	what, named := "a log file", isLogName(path)
	if want == kindManifest {
		what, named = "a MANIFEST", isManifestName(path)
	}
	switch s.kind {
	case want, kindLogFormat:
		// kindLogFormat: intact records of the log format that do not
		// decode; reading reports them.
		return nil
	case kindEmpty, kindUnknown:
		if named {
			return nil // damaged, or empty: reading says which
		}
	}
	return notA(path, what, s.describe())
}
