package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/wal"
)

// This file reads a store's files directly, without db.Open and without
// its LOCK, so the read-only commands work on a store another process has
// open (what they print may then lag its latest state by an edit).

// maxCurrentSize bounds what is read of CURRENT.
const maxCurrentSize = 4096

var manifestName = regexp.MustCompile(`^MANIFEST-[0-9]+$`)

// readCurrent returns the path of the MANIFEST that dir's CURRENT names.
func readCurrent(dir string) (string, error) {
	f, err := os.Open(filepath.Join(dir, "CURRENT"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCurrentSize+1))
	if err != nil {
		return "", err
	}
	name, ok := strings.CutSuffix(string(b), "\n")
	if len(b) > maxCurrentSize || !ok || !manifestName.MatchString(name) {
		return "", base.CorruptionErrorf("CURRENT does not hold a MANIFEST name and a newline: %q", byteFormat{Max: 64}.format(b))
	}
	return filepath.Join(dir, name), nil
}

// manifestPathOf returns the MANIFEST to read for arg: arg itself, or the
// one CURRENT names when arg is a directory.
func manifestPathOf(arg string) (string, error) {
	fi, err := os.Stat(arg)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return readCurrent(arg)
	}
	return arg, nil
}

// forEachEdit reads the MANIFEST at path and calls fn with each record's
// number (from 1) and decoded edit, or with the error that record gave (a
// damaged log record or an undecodable edit). It returns the bytes the log
// reader dropped and an I/O error, if any.
func forEachEdit(path string, fn func(n int, e *manifest.VersionEdit, err error)) (dropped int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := wal.NewReader(f)
	for n := 1; ; n++ {
		rec, err := r.Next()
		if err == io.EOF {
			return r.DroppedBytes(), nil
		}
		if err != nil && !isCorruption(err) {
			return r.DroppedBytes(), err
		}
		if err != nil {
			fn(n, nil, err)
			continue
		}
		var e manifest.VersionEdit
		if err := e.Decode(rec); err != nil {
			fn(n, nil, err)
			continue
		}
		fn(n, &e, nil)
	}
}

// storeState is what a store's MANIFEST says.
type storeState struct {
	dir          string
	manifestPath string
	version      *manifest.Version
	records      int
	logNum       uint64
	prevLogNum   uint64
	nextFileNum  uint64
	lastSeq      uint64
	comparer     string
	// problems are what is wrong with the MANIFEST; the version is built
	// from the edits that could be read and applied.
	problems []error
}

// Comparer names a MANIFEST records: each tells the store's format, as
// db.DB.Format does (db.Options.Format).
const (
	// comparerName is the comparer of every bloomkv-format store.
	comparerName = "bloomkv.BytewiseComparator"
	// levelDBComparerName is LevelDB's and goleveldb's bytewise comparer,
	// the same order: a store that records it is in LevelDB's format
	// (tables NNNNNN.ldb of LevelDB's table format, MANIFEST records of
	// LevelDB's new-file tag 7, logs of batches alone).
	levelDBComparerName = "leveldb.BytewiseComparator"
)

// format returns the store's format, told by its comparer: a MANIFEST
// that names none is bloomkv's, as db takes it.
func (st *storeState) format() db.Format {
	if st.comparer == levelDBComparerName {
		return db.FormatLevelDB
	}
	return db.FormatBloomKV
}

// loadState reads dir's CURRENT and MANIFEST and builds the current version.
// It fails only when no version can be built at all (no CURRENT, unreadable
// MANIFEST); damaged records are collected in problems.
func loadState(dir string) (*storeState, error) { return loadStateWith(dir, nil) }

// loadStateWith is loadState that also calls onEdit, when not nil, with
// each version edit it applied, in order, and its record number: the
// history of the version it returns, read in the same pass.
func loadStateWith(dir string, onEdit func(n int, e *manifest.VersionEdit)) (*storeState, error) {
	path, err := readCurrent(dir)
	if err != nil {
		return nil, fmt.Errorf("reading CURRENT: %w", err)
	}
	st := &storeState{dir: dir, manifestPath: path}
	b := manifest.NewBuilder(nil)
	name := filepath.Base(path)
	dropped, err := forEachEdit(path, func(n int, e *manifest.VersionEdit, err error) {
		st.records = n
		if err == nil {
			err = b.Apply(e)
		}
		if err != nil {
			st.problems = append(st.problems, fmt.Errorf("%s record %d: %w", name, n, err))
			return
		}
		if e.Comparer != "" {
			st.comparer = e.Comparer
		}
		if e.HasLogNumber {
			st.logNum = e.LogNumber
		}
		if e.HasPrevLogNumber {
			st.prevLogNum = e.PrevLogNumber
		}
		if e.HasNextFileNumber {
			st.nextFileNum = e.NextFileNumber
		}
		if e.HasLastSequence {
			st.lastSeq = e.LastSequence
		}
		if onEdit != nil {
			onEdit(n, e)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if dropped > 0 {
		st.problems = append(st.problems, fmt.Errorf("%s: %d damaged bytes skipped", name, dropped))
	}
	if st.records == 0 {
		st.problems = append(st.problems, base.CorruptionErrorf("%s holds no version edit", name))
	}
	if st.version, err = b.Finish(); err != nil {
		st.problems = append(st.problems, fmt.Errorf("%s: %w", name, err))
		st.version = new(manifest.Version)
	}
	return st, nil
}

// isCorruption reports whether err is about damaged bytes.
func isCorruption(err error) bool { return errors.Is(err, base.ErrCorruption) }

// tablePath names table num of the store in dir as the db package finds
// it: NNNNNN.ldb when a file of that name exists (LevelDB's and goleveldb's
// name, which a LevelDB-format store keeps), NNNNNN.sst otherwise.
func tablePath(dir string, num uint64) string {
	ldb := filepath.Join(dir, fmt.Sprintf("%06d.ldb", num))
	if _, err := os.Stat(ldb); err == nil {
		return ldb
	}
	return filepath.Join(dir, fmt.Sprintf("%06d.sst", num))
}

// storeFile is a file of a store recognised by its name.
type storeFile struct {
	name string
	kind string // "table", "log", "manifest"
	num  uint64
}

// listStoreFiles returns dir's tables, logs and MANIFESTs, by kind and
// number.
func listStoreFiles(dir string) ([]storeFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []storeFile
	for _, e := range ents {
		name := e.Name()
		var kind, digits string
		switch {
		case manifestName.MatchString(name):
			kind, digits = "manifest", strings.TrimPrefix(name, "MANIFEST-")
		case strings.HasSuffix(name, ".sst"):
			kind, digits = "table", strings.TrimSuffix(name, ".sst")
		case strings.HasSuffix(name, ".ldb"):
			kind, digits = "table", strings.TrimSuffix(name, ".ldb")
		case strings.HasSuffix(name, ".log"):
			kind, digits = "log", strings.TrimSuffix(name, ".log")
		default:
			continue
		}
		num, err := strconv.ParseUint(digits, 10, 64)
		if err != nil {
			continue
		}
		out = append(out, storeFile{name: name, kind: kind, num: num})
	}
	slices.SortFunc(out, func(a, b storeFile) int {
		if a.kind != b.kind {
			return strings.Compare(a.kind, b.kind)
		}
		return cmp.Compare(a.num, b.num)
	})
	return out, nil
}

// checkTableKind tells a file that is not a table from a damaged table,
// before the table reader reports either as corruption. A file that ends
// with a table magic number (sstable.SniffFormat: bloomkv's or LevelDB's)
// passes. Otherwise a file whose bytes show another kind (a log, a
// MANIFEST, CURRENT) is not a table; a file whose bytes show no kind is a
// damaged table when it is named *.sst or *.ldb or its last 8 bytes are a
// few flipped bits away from a magic number, and not a table otherwise.
func checkTableKind(f *os.File, path string, size int64) error {
	if _, ok, err := sstable.SniffFormat(f, size); err != nil || ok {
		return err
	}
	s, err := sniffFile(path)
	if err != nil {
		return err
	}
	if s.kind == kindEmpty || s.kind == kindUnknown {
		m, long := lastWord(f, size)
		// bloomkv's magic number in a file too short for its footer:
		// say it is short.
		long = long && !(m == sstable.TableMagic && size < sstable.FooterLen)
		var damage string
		if long {
			damage = fmt.Sprintf("it does not end with the table magic number %#x (%q) nor with LevelDB's %#x, but with %#x",
				sstable.TableMagic, "bloomkv!", sstable.LevelDBTableMagic, m)
		} else {
			damage = fmt.Sprintf("%d bytes, shorter than a table's footer (%d bytes, LevelDB's %d)", size, sstable.FooterLen, sstable.LevelDBFooterLen)
		}
		if isTableName(path) || (long && nearTableMagic(m)) {
			return base.CorruptionErrorf("damaged table: %s", damage)
		}
		if s.kind == kindUnknown {
			return notA(path, "a table file", damage)
		}
	}
	return notA(path, "a table file", s.describe())
}

// openTable opens the table file at path. Without withFilters the reader
// skips the filter block (the properties still name its policy).
func openTable(path string, withFilters bool) (*sstable.Reader, *os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	r, err := tableReader(f, path, withFilters)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return r, f, nil
}

// tableReader reads the table in f, opened from path, as openTable does.
// Closing the reader leaves f open.
func tableReader(f *os.File, path string, withFilters bool) (*sstable.Reader, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkTableKind(f, path, fi.Size()); err != nil {
		return nil, err
	}
	var o sstable.ReaderOptions
	if withFilters {
		o.Filters = knownFilters()
	}
	return sstable.NewReader(f, fi.Size(), o)
}
