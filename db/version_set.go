package db

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// comparerName is recorded in every MANIFEST of a bloomkv-format store, and
// levelDBComparerName in those of a LevelDB-format one (LevelDB's and
// goleveldb's bytewise comparator: the same order). A store written with
// any other ordering is refused.
const (
	comparerName        = "bloomkv.BytewiseComparator"
	levelDBComparerName = "leveldb.BytewiseComparator"
)

// formatOfComparer returns the format a MANIFEST's comparer name implies.
func formatOfComparer(name string) (Format, bool) {
	switch name {
	case comparerName:
		return FormatBloomKV, true
	case levelDBComparerName:
		return FormatLevelDB, true
	}
	return 0, false
}

// maxCurrentSize bounds what Open reads of CURRENT before judging it.
const maxCurrentSize = 4096

// versionSet owns the MANIFEST: the current version, file numbers, and the
// log of edits. Its methods are called with DB.mu held.
type versionSet struct {
	fs      vfs.FS
	dirname string

	current        *manifest.Version
	nextFileNum    uint64
	lastSeq        uint64
	logNum         uint64
	prevLogNum     uint64
	manifestNum    uint64
	manifestFile   vfs.File
	manifestWriter *wal.Writer

	// format is the store's format: set by recover from the MANIFEST's
	// comparer (or by Open for a new store), and changed only by Open's
	// conversion, before the first MANIFEST is written.
	format Format
}

// comparer returns the comparer name the store's MANIFEST records.
func (vs *versionSet) comparer() string {
	if vs.format == FormatLevelDB {
		return levelDBComparerName
	}
	return comparerName
}

// encodeEdit encodes e in the store's format.
func (vs *versionSet) encodeEdit(e *manifest.VersionEdit) ([]byte, error) {
	return encodeEdit(e, vs.format)
}

func encodeEdit(e *manifest.VersionEdit, f Format) ([]byte, error) {
	if f == FormatLevelDB {
		b, err := e.EncodeLevelDB(nil)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
		}
		return b, nil
	}
	return e.Encode(nil), nil
}

func (vs *versionSet) newFileNum() uint64 {
	n := vs.nextFileNum
	vs.nextFileNum++
	return n
}

// readCurrent returns the MANIFEST file number CURRENT names.
func readCurrent(fsys vfs.FS, dirname string) (uint64, error) {
	f, err := fsys.Open(currentFileName(dirname))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCurrentSize+1))
	if err != nil {
		return 0, err
	}
	s := string(b)
	if len(b) > maxCurrentSize || !strings.HasSuffix(s, "\n") {
		return 0, fmt.Errorf("%w: CURRENT is not a single MANIFEST name ending in a newline (%d bytes)", ErrCorruption, len(b))
	}
	name := strings.TrimSuffix(s, "\n")
	t, num, ok := parseFileName(name)
	if !ok || t != fileTypeManifest || strconv.FormatUint(num, 10) == "" || strings.ContainsAny(name, "/\\") {
		return 0, fmt.Errorf("%w: CURRENT names %q, not a MANIFEST", ErrCorruption, name)
	}
	return num, nil
}

// recover loads the version that CURRENT's MANIFEST describes.
func (vs *versionSet) recover() error {
	num, err := readCurrent(vs.fs, vs.dirname)
	if err != nil {
		return fmt.Errorf("reading CURRENT: %w", err)
	}
	name := manifestFileName(vs.dirname, num)
	f, err := vs.fs.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: CURRENT names MANIFEST-%06d, which does not exist", ErrCorruption, num)
		}
		return err
	}
	defer f.Close()
	b := manifest.NewBuilder(nil)
	r := wal.NewReader(f)
	var (
		haveNext, haveLog, haveSeq, haveComparer bool
		records                                  int
	)
	vs.format = FormatBloomKV // a MANIFEST that names no comparer is bloomkv's
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("MANIFEST-%06d record %d: %w", num, records, err)
		}
		records++
		var e manifest.VersionEdit
		if err := e.Decode(rec); err != nil {
			return fmt.Errorf("MANIFEST-%06d record %d: %w", num, records, err)
		}
		if e.Comparer != "" {
			f, ok := formatOfComparer(e.Comparer)
			switch {
			case !ok:
				return fmt.Errorf("%w: MANIFEST-%06d was written with comparer %q; bloomkv orders keys bytewise (%q, or LevelDB's %q)",
					ErrInvalidOptions, num, e.Comparer, comparerName, levelDBComparerName)
			case haveComparer && f != vs.format:
				return fmt.Errorf("%w: MANIFEST-%06d names two comparers, %q and %q", ErrCorruption, num, vs.comparer(), e.Comparer)
			}
			vs.format, haveComparer = f, true
		}
		if err := b.Apply(&e); err != nil {
			return fmt.Errorf("%w: MANIFEST-%06d record %d: %v", ErrCorruption, num, records, err)
		}
		if e.HasNextFileNumber {
			vs.nextFileNum, haveNext = e.NextFileNumber, true
		}
		if e.HasLogNumber {
			vs.logNum, haveLog = e.LogNumber, true
		}
		if e.HasPrevLogNumber {
			vs.prevLogNum = e.PrevLogNumber
		}
		if e.HasLastSequence {
			vs.lastSeq, haveSeq = e.LastSequence, true
		}
	}
	if records == 0 || !haveNext || !haveLog || !haveSeq {
		return fmt.Errorf("%w: MANIFEST-%06d is incomplete (%d records; next file, log number or last sequence missing)", ErrCorruption, num, records)
	}
	v, err := b.Finish()
	if err != nil {
		return fmt.Errorf("MANIFEST-%06d: %w", num, err)
	}
	for _, n := range v.AllFileNums() {
		if n >= vs.nextFileNum {
			return fmt.Errorf("%w: MANIFEST-%06d lists table %06d at or past its next file number %d", ErrCorruption, num, n, vs.nextFileNum)
		}
	}
	if num >= vs.nextFileNum {
		vs.nextFileNum = num + 1
	}
	vs.current = v
	vs.manifestNum = num
	return nil
}

// writeNewManifest starts a new MANIFEST holding a snapshot of v, makes it
// durable and points CURRENT at it. On success it becomes the current one.
func (vs *versionSet) writeNewManifest(v *manifest.Version, logNum uint64) error {
	num := vs.newFileNum()
	name := manifestFileName(vs.dirname, num)
	f, err := vs.fs.Create(name)
	if err != nil {
		return err
	}
	w := wal.NewWriter(f)
	snap := v.Snapshot(vs.nextFileNum, vs.lastSeq, logNum, vs.comparer())
	rec, err := vs.encodeEdit(snap)
	if err == nil {
		err = w.AddRecord(rec)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		// The new MANIFEST and every file it names must have durable
		// directory entries before CURRENT points at it.
		err = vs.fs.SyncDir(vs.dirname)
	}
	switched := false
	if err == nil {
		switched, err = setCurrent(vs.fs, vs.dirname, num)
	}
	if err != nil {
		f.Close()
		if !switched { // once CURRENT may name it, it must stay
			_ = vs.fs.Remove(name)
		}
		return err
	}
	if vs.manifestFile != nil {
		vs.manifestFile.Close()
	}
	vs.manifestNum, vs.manifestFile, vs.manifestWriter = num, f, w
	vs.current, vs.logNum, vs.prevLogNum = v, logNum, 0
	return nil
}

// setCurrent atomically points CURRENT at MANIFEST-num.
// switched reports that the rename happened (CURRENT may name num even
// if err is set).
func setCurrent(fsys vfs.FS, dirname string, num uint64) (switched bool, err error) {
	tmp := tempFileName(dirname, num)
	f, err := fsys.Create(tmp)
	if err != nil {
		return false, err
	}
	_, err = fmt.Fprintf(f, "MANIFEST-%06d\n", num)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, currentFileName(dirname))
		switched = err == nil
	}
	if err == nil {
		err = fsys.SyncDir(dirname)
	}
	if err != nil && !switched {
		_ = fsys.Remove(tmp)
	}
	return switched, err
}

// prepareEdit records the next file number in edit and builds the version
// it makes from the current one. The caller holds the DB's mutex.
func (vs *versionSet) prepareEdit(edit *manifest.VersionEdit) (*manifest.Version, error) {
	edit.NextFileNumber, edit.HasNextFileNumber = vs.nextFileNum, true
	b := manifest.NewBuilder(vs.current)
	if err := b.Apply(edit); err != nil {
		return nil, err
	}
	return b.Finish()
}

// writeEdit appends edit to the MANIFEST and syncs it. It does I/O only,
// and runs without the DB's mutex; the caller makes sure no other edit is
// written meanwhile.
func (vs *versionSet) writeEdit(edit *manifest.VersionEdit) error {
	// The tables and the log an edit names must have durable directory
	// entries before the edit that refers to them is durable.
	if len(edit.NewFiles) > 0 || edit.HasLogNumber {
		if err := vs.fs.SyncDir(vs.dirname); err != nil {
			return fmt.Errorf("MANIFEST: syncing directory: %w", err)
		}
	}
	rec, err := vs.encodeEdit(edit)
	if err != nil {
		return fmt.Errorf("MANIFEST: %w", err)
	}
	if err := vs.manifestWriter.AddRecord(rec); err != nil {
		return fmt.Errorf("MANIFEST write: %w", err)
	}
	if err := vs.manifestFile.Sync(); err != nil {
		return fmt.Errorf("MANIFEST sync: %w", err)
	}
	return nil
}

// installEdit makes v, built from edit, the current version. The caller
// holds the DB's mutex.
func (vs *versionSet) installEdit(v *manifest.Version, edit *manifest.VersionEdit) {
	vs.current = v
	if edit.HasLogNumber {
		vs.logNum = edit.LogNumber
	}
	if edit.HasLastSequence {
		vs.lastSeq = edit.LastSequence
	}
}

// logAndApplyLocked appends edit to the MANIFEST, syncs it, and installs
// the resulting version; on error the current version is unchanged. It is
// called with d.mu held and returns with it held, but releases it for the
// directory sync, the MANIFEST write and its sync (milliseconds each on
// a real disk), so writers and readers are not held up by a flush's or a
// compaction's bookkeeping, as LevelDB does. One edit is written at a
// time; the current version changes only here, so the version built
// before the I/O is still the right successor after it.
func (d *DB) logAndApplyLocked(edit *manifest.VersionEdit) error {
	for d.manifestBusy {
		d.bgCond.Wait()
	}
	v, err := d.vs.prepareEdit(edit)
	if err != nil {
		return err
	}
	d.manifestBusy = true
	d.mu.Unlock()
	err = d.vs.writeEdit(edit)
	d.mu.Lock()
	d.manifestBusy = false
	d.bgCond.Broadcast()
	if err != nil {
		return err
	}
	d.vs.installEdit(v, edit)
	return nil
}

func (vs *versionSet) close() error {
	if vs.manifestFile == nil {
		return nil
	}
	err := vs.manifestFile.Close()
	vs.manifestFile = nil
	return err
}
