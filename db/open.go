package db

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/logrec"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// open does the work of Open. Everything that can fail on bad input
// (path, LOCK, CURRENT, MANIFEST, options) is checked before the first
// byte is written, so a refused Open leaves the directory as it found it.
func (d *DB) open() (err error) {
	if d.opts.ReadOnly {
		return d.openReadOnly()
	}
	start := time.Now()
	fi, statErr := d.fs.Stat(d.dirname)
	switch {
	case statErr == nil && !fi.IsDir():
		return fmt.Errorf("%s is not a directory", d.dirname)
	case statErr != nil && !errors.Is(statErr, fs.ErrNotExist):
		return statErr
	case statErr != nil:
		if d.opts.ErrorIfMissing {
			return ErrDBMissing
		}
		if err := d.fs.MkdirAll(d.dirname, 0o755); err != nil {
			return err
		}
	}
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return fmt.Errorf("reading directory: %w", err)
	}
	if err := checkNotIncompleteCheckpoint(names); err != nil {
		return err
	}
	if err := checkNotRocksDB(names); err != nil {
		return err
	}
	lockExisted := slices.Contains(names, "LOCK")
	lock, err := d.fs.Lock(lockFileName(d.dirname))
	if err != nil {
		return lockError(err)
	}
	d.lock = lock
	defer func() {
		if err != nil {
			lock.Close()
			if !lockExisted {
				_ = d.fs.Remove(lockFileName(d.dirname))
			}
		}
	}()

	d.vs = &versionSet{fs: d.fs, dirname: d.dirname}
	exists := slices.Contains(names, "CURRENT")
	if exists {
		if d.opts.ErrorIfExists {
			return ErrDBExists
		}
		if err := d.vs.recover(); err != nil {
			return err
		}
		if err := checkLiveFiles(names, d.vs); err != nil {
			return err
		}
	} else {
		if d.opts.ErrorIfMissing {
			return ErrDBMissing
		}
		// A crash while a store was being created can leave a MANIFEST and
		// an empty log without CURRENT: no write was acknowledged yet, so
		// they are leftovers (deleteObsoleteFiles removes them). A table or
		// a log with data means a store lost its CURRENT.
		for _, name := range names {
			t, num, ok := parseFileName(name)
			if !ok || (t != fileTypeTable && t != fileTypeLog) {
				continue
			}
			if fi, err := d.fs.Stat(logFileName(d.dirname, num)); t == fileTypeLog && err == nil && fi.Size() == 0 {
				continue
			}
			return fmt.Errorf("%w: directory holds %s but no CURRENT; refusing to create a store over it", ErrCorruption, name)
		}
		d.vs.current = new(manifest.Version)
		d.vs.nextFileNum = 1
		d.vs.format = FormatBloomKV
		if d.opts.Format == FormatLevelDB {
			d.vs.format = FormatLevelDB
		}
	}
	// The tables are checked in the store's own format, before Open
	// converts it (settleFormat): a conversion changes the MANIFEST.
	d.noteTableNames(names)
	if err := d.checkLevelDBTables(); err != nil {
		return err
	}
	converting, err := d.settleFormat()
	if err != nil {
		return err
	}

	// Find the logs to replay before writing anything.
	logs := d.logsToReplay(names)

	events, err := openEventLog(d.fs, d.dirname, d.opts.Logger)
	if err != nil {
		return fmt.Errorf("opening LOG: %w", err)
	}
	d.events = events
	defer func() {
		if err != nil {
			d.events.error("open failed", "err", err)
			d.events.close()
		}
	}()
	d.tables = newTableCache(d)
	defer func() {
		if err != nil {
			d.tables.close()
		}
	}()

	if d.opts.ParanoidChecks {
		if err := d.verifyTables(d.vs.current); err != nil {
			return err
		}
	}

	// Replay the logs into tables: a store is reopened with an empty
	// memtable and a fresh log, so old logs can go.
	v := d.vs.current
	sink := &tableSink{d: d}
	maxSeq, err := d.replayLogs(logs, sink)
	if err != nil {
		for _, m := range sink.metas {
			d.tables.evict(m.FileNum)
			_ = d.removeTable(m.FileNum)
		}
		return err
	}
	added := sink.metas
	if len(added) > 0 {
		edit := &manifest.VersionEdit{}
		for _, m := range added {
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: m})
		}
		b := manifest.NewBuilder(v)
		if err := b.Apply(edit); err != nil {
			return err
		}
		if v, err = b.Finish(); err != nil {
			return err
		}
	}
	d.vs.lastSeq = maxSeq
	d.seq = maxSeq
	d.visibleSeq.Store(maxSeq)

	// A fresh log, then a fresh MANIFEST that names it.
	d.logNum = d.vs.newFileNum()
	d.logFile, err = d.createLog(d.logNum)
	if err != nil {
		return err
	}
	d.log = wal.NewWriter(d.logFile)
	if err := d.vs.writeNewManifest(v, d.logNum); err != nil {
		// The empty log stays: CURRENT may already name the MANIFEST that
		// names it. The next Open removes it if not.
		d.logFile.Close()
		return err
	}
	d.mem = d.newMemTable()
	d.publishLocked()
	d.deleteObsoleteFiles()
	// Load every table's filter and index, top level first, on a
	// goroutine of its own, so Open returns at once and the first reads
	// find most of them resident: a read that needs a table not loaded
	// yet loads it itself (the table cache opens each table once). On a
	// store of 250 tables, loading them in Open took 25-35 ms, while
	// LevelDB opens in 2 ms and pays in its first reads (issue 20's
	// coldstart). A table that fails to open is reported here and by the
	// reads that need it.
	d.loading.Add(1)
	go d.loadTables(d.loadReadState())
	if converting {
		d.events.info("converted the store from LevelDB's format to bloomkv's (one way: LevelDB and goleveldb can no longer open it)")
	}
	d.events.info("opened", "dir", d.dirname, "format", d.vs.format.String(), "tables", len(v.AllFileNums()), "logs_replayed", len(logs),
		"last_seq", maxSeq, "duration", time.Since(start).String())
	return nil
}

// loadTables opens every table of ref's version in the table cache,
// stopping early when the DB closes. The reference keeps a compaction
// from deleting (and the table cache from evicting) a table before the
// loader opens it, which would leave it cached with no version holding
// it.
func (d *DB) loadTables(ref readRef) {
	defer d.loading.Done()
	defer ref.unref()
	for _, files := range ref.rs.v.Files {
		for _, f := range files {
			if d.closed.Load() {
				return
			}
			if _, err := d.tables.get(f); err != nil && !errors.Is(err, ErrClosed) {
				d.events.error("opening table failed", "table", f.FileNum, "err", err)
			}
		}
	}
}

// lockError classifies a failure to take the LOCK: only a lock that
// someone else holds is ErrLocked; a permission or I/O error is returned
// as itself (errors.Is(err, fs.ErrPermission) holds for the former).
func lockError(err error) error {
	if errors.Is(err, vfs.ErrLockHeld) {
		return fmt.Errorf("%w: %w", ErrLocked, err)
	}
	return fmt.Errorf("taking LOCK: %w", err)
}

// logsToReplay returns, in order, the logs among the directory's names
// that may hold writes the recovered version lacks, and moves the next
// file number past every numbered file.
func (d *DB) logsToReplay(names []string) []uint64 {
	var logs []uint64
	for _, name := range names {
		if t, num, ok := parseFileName(name); ok && t == fileTypeLog && (num >= d.vs.logNum || num == d.vs.prevLogNum) {
			logs = append(logs, num)
		}
		if _, num, ok := parseFileName(name); ok && num >= d.vs.nextFileNum {
			d.vs.nextFileNum = num + 1
		}
	}
	slices.Sort(logs)
	return logs
}

// replaySink receives the batches that log replay reads, in log order:
// a read-write Open writes them to level-0 tables (tableSink), a
// read-only one keeps them in a memtable (memSink).
type replaySink interface {
	// add applies one batch; its sequence numbers are set.
	add(b *Batch) error
	// endLog is called when a log was read to its end (not when it was
	// refused or failed).
	endLog() error
}

// replayLogs replays logs, in order, into sink and returns the largest
// sequence number recovered (at least the MANIFEST's). A log that names
// its predecessor in a header is replayed only if that predecessor's
// writes are in tables, or it was replayed just before and ended with its
// end-of-log record: otherwise a crash may have lost the predecessor's
// tail (it is synced in the background after the switch), and replaying
// the later log would leave a hole. Replay then stops there.
func (d *DB) replayLogs(logs []uint64, sink replaySink) (maxSeq uint64, err error) {
	maxSeq = d.vs.lastSeq
	var last replayedLog
	for i, num := range logs {
		prevOK := func(prev uint64, known bool) bool {
			if !known { // the log's first record is damaged: it may have been a header
				return last.num == 0 || last.ended
			}
			return (prev < d.vs.logNum && prev != d.vs.prevLogNum) || (last.num == prev && last.ended)
		}
		res, err := d.replayLog(num, prevOK, sink)
		if err != nil {
			return 0, err
		}
		if res.refused {
			d.events.warn("a log's predecessor did not end with its end-of-log record (a crash cut it short): not replaying this log or any later one, so the store keeps a prefix of its writes",
				"log", num, "predecessor", res.prev, "logs_not_replayed", len(logs)-i)
			break
		}
		maxSeq = max(maxSeq, res.maxSeq)
		last = res
	}
	return maxSeq, nil
}

// replayedLog is what replayLog found in a log.
type replayedLog struct {
	num    uint64
	maxSeq uint64 // largest sequence number seen
	// ended: the log ends with its end-of-log record, and nothing before
	// it was damaged or missing.
	ended bool
	// refused: the log's header names a predecessor that prevOK refused;
	// nothing of the log was replayed.
	refused bool
	prev    uint64 // the predecessor named by the header
}

// replayLog reads one WAL into sink. A header record naming the log's
// predecessor is checked with prevOK before any write of the log is
// replayed; so is a damaged first record (known false), which may have
// been a header.
func (d *DB) replayLog(num uint64, prevOK func(prev uint64, known bool) bool, sink replaySink) (replayedLog, error) {
	res := replayedLog{num: num}
	name := logFileName(d.dirname, num)
	f, err := d.fs.Open(name)
	if err != nil {
		return res, err
	}
	defer f.Close()
	r := wal.NewReader(f)
	var (
		records int
		dropped int
		ended   bool
	)
	for first := true; ; first = false {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err == nil && len(rec) < batchHeaderLen {
			switch prev, ok := logrec.DecodeHeader(rec); {
			case len(rec) == 0 && !ended:
				ended = true // the end-of-log record
				continue
			case ok && first:
				if !prevOK(prev, true) {
					res.refused, res.prev = true, prev
					return res, nil
				}
				continue
			}
		}
		if err == nil {
			if ended {
				err = base.CorruptionErrorf("record after the end-of-log record")
			} else {
				err = logrec.ForEachOp(rec, nil)
			}
		}
		if err != nil && first && errors.Is(err, ErrCorruption) && !prevOK(0, false) {
			res.refused = true
			return res, nil
		}
		if err != nil {
			err = fmt.Errorf("log %06d record %d: %w", num, records, err)
			// Only damaged records are skipped: the reader's I/O errors are
			// sticky, so skipping one would loop forever.
			if d.opts.ParanoidChecks || !errors.Is(err, ErrCorruption) {
				return res, err
			}
			dropped++
			d.events.warn("dropping damaged log record", "err", err)
			continue
		}
		records++
		b := &Batch{rep: rec}
		if err := sink.add(b); err != nil {
			return res, err
		}
		if last := b.seq() + uint64(b.Count()) - 1; last > res.maxSeq {
			res.maxSeq = last
		}
	}
	if err := sink.endLog(); err != nil {
		return res, err
	}
	res.ended = ended && dropped == 0 && r.DroppedBytes() == 0
	if dropped > 0 || r.DroppedBytes() > 0 {
		d.events.warn("log replay dropped data", "log", num, "records_dropped", dropped, "bytes_dropped", r.DroppedBytes())
	}
	d.events.info("replayed log", "log", num, "records", records)
	return res, nil
}

// tableSink is the read-write Open's replaySink: batches go into a
// memtable, and each full one, and the last one of each log, is written to
// a level-0 table.
type tableSink struct {
	d     *DB
	mem   *memtable.MemTable
	metas []*manifest.FileMetadata // the tables written, oldest first
}

func (s *tableSink) add(b *Batch) error {
	if s.mem == nil {
		s.mem = memtable.New()
	}
	insertBatch(s.mem, b)
	if s.mem.ApproximateMemoryUsage() >= s.d.opts.WriteBufferSize {
		return s.flush()
	}
	return nil
}

func (s *tableSink) endLog() error { return s.flush() }

func (s *tableSink) flush() error {
	if s.mem == nil {
		return nil
	}
	meta, err := s.d.writeLevel0Table(s.mem)
	if err != nil {
		return err
	}
	if meta != nil {
		s.metas = append(s.metas, meta)
	}
	s.mem = nil
	return nil
}

// verifyTables checks every block checksum of every table in v.
func (d *DB) verifyTables(v *manifest.Version) error {
	for level := range v.Files {
		for _, f := range v.Files[level] {
			r, err := d.tables.get(f)
			if err != nil {
				return err
			}
			if err := r.VerifyChecksums(); err != nil {
				return fmt.Errorf("table %06d: %w", f.FileNum, err)
			}
		}
	}
	return nil
}

// deleteObsoleteFiles removes what no current state refers to: tables not
// in the version (orphans of a crash), logs older than the current one,
// MANIFESTs other than the current one, and temporary files.
func (d *DB) deleteObsoleteFiles() {
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return
	}
	live := map[uint64]bool{}
	for _, n := range d.vs.current.AllFileNums() {
		live[n] = true
	}
	for _, name := range names {
		t, num, ok := parseFileName(name)
		if !ok {
			continue
		}
		remove := false
		switch t {
		case fileTypeTable:
			remove = !live[num]
		case fileTypeLog:
			remove = num < d.logNum
		case fileTypeManifest:
			remove = num != d.vs.manifestNum
		case fileTypeTemp:
			remove = true
		}
		if remove {
			if t == fileTypeTable {
				d.tables.evict(num)
			}
			if err := d.fs.Remove(vfs.Join(d.dirname, name)); err != nil {
				d.events.warn("removing obsolete file failed", "file", name, "err", err)
			} else {
				d.events.info("removed obsolete file", "file", name)
			}
		}
	}
}

// checkLiveFiles requires the files the recovered MANIFEST depends on to
// exist: every table of the version, and the log it names (a log is only
// deleted after a later edit moved the log number past it). A MANIFEST whose
// last records were lost (a damaged length makes a record look like a torn
// tail) describes an older version whose files are gone; without this
// check Open would accept it and lose data silently.
func checkLiveFiles(names []string, vs *versionSet) error {
	tables, logs := map[uint64]bool{}, map[uint64]bool{}
	for _, name := range names {
		if t, num, ok := parseFileName(name); ok && t == fileTypeTable {
			tables[num] = true
		} else if ok && t == fileTypeLog {
			logs[num] = true
		}
	}
	for _, num := range vs.current.AllFileNums() {
		if !tables[num] {
			return fmt.Errorf("%w: MANIFEST-%06d names table %06d, which is missing", ErrCorruption, vs.manifestNum, num)
		}
	}
	if vs.logNum != 0 && !logs[vs.logNum] {
		return fmt.Errorf("%w: MANIFEST-%06d names log %06d, which is missing", ErrCorruption, vs.manifestNum, vs.logNum)
	}
	return nil
}

// checkNotIncompleteCheckpoint refuses a directory that a Checkpoint did
// not finish writing.
func checkNotIncompleteCheckpoint(names []string) error {
	if slices.Contains(names, checkpointMarker) {
		return fmt.Errorf("%w: the directory holds %s, left by a DB.Checkpoint that did not finish; remove the directory and take the checkpoint again",
			ErrIncompleteCheckpoint, checkpointMarker)
	}
	return nil
}

// settleFormat reconciles Options.Format with the format of the store
// (d.vs.format, recovered or chosen for a new store) before Open changes
// anything. It reports whether Open converts a LevelDB-format store to
// bloomkv's format (its new MANIFEST is then bloomkv's), and fixes the
// options a LevelDB-format store needs: LevelDB's Bloom filter.
func (d *DB) settleFormat() (converting bool, err error) {
	switch {
	case d.opts.Format == FormatLevelDB && d.vs.format == FormatBloomKV:
		return false, fmt.Errorf("%w: Format is FormatLevelDB but the store is in bloomkv's format; converting a store to LevelDB's format is not supported", ErrInvalidOptions)
	case d.opts.Format == FormatBloomKV && d.vs.format == FormatLevelDB:
		if d.opts.ReadOnly {
			return false, fmt.Errorf("%w: Format FormatBloomKV converts a LevelDB-format store, which a read-only Open cannot do", ErrInvalidOptions)
		}
		d.vs.format = FormatBloomKV
		return true, nil
	}
	if d.vs.format != FormatLevelDB {
		return false, nil
	}
	if err := d.opts.checkLevelDB(); err != nil {
		return false, err
	}
	if d.opts.FilterPolicy == nil {
		d.opts.filterPolicy = filter.NewLevelDBBloomPolicy(DefaultBloomBitsPerKey)
	}
	return false, nil
}

// Format returns the store's on-disk format: FormatBloomKV or
// FormatLevelDB (see Options.Format).
func (d *DB) Format() Format { return d.vs.format }

// checkLevelDBTables opens every table of a LevelDB-format store (before
// any conversion) and refuses the store, before Open changes anything, if
// a table uses a block compression bloomkv does not read (LevelDB's later
// zstd, say): sstable.Reader.CheckCompression, which reads one byte per
// data block of the tables whose index block is stored raw (all of them
// in a store written without compression). Other failures to open a
// table are left to the reads that need it, as in any store.
func (d *DB) checkLevelDBTables() error {
	if d.vs.format != FormatLevelDB {
		return nil
	}
	for level, files := range d.vs.current.Files {
		for _, f := range files {
			err := d.probeTable(f.FileNum)
			if errors.Is(err, sstable.ErrUnsupportedCompression) || errors.Is(err, ErrUnsupportedFormat) {
				return fmt.Errorf("L%d table %06d: %w", level, f.FileNum, err)
			}
		}
	}
	return nil
}

// probeTable opens table num's file and its reader, and closes both.
func (d *DB) probeTable(num uint64) error {
	f, err := d.fs.Open(d.tablePath(num))
	if err != nil {
		return err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return err
	}
	if err := checkNotRocksDBTable(f, size); err != nil {
		return err
	}
	r, err := sstable.NewReader(f, size, sstable.ReaderOptions{Filters: d.knownFilters()})
	if err != nil {
		return err
	}
	err = r.CheckCompression()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkNotRocksDB refuses a RocksDB store: RocksDB writes IDENTITY and
// OPTIONS-NNNNNN files, which LevelDB and bloomkv never do, and its
// MANIFEST records and tables, though they borrow LevelDB's comparator
// name and some of its tags, are not LevelDB's.
func checkNotRocksDB(names []string) error {
	for _, name := range names {
		if name == "IDENTITY" || strings.HasPrefix(name, "OPTIONS-") {
			return fmt.Errorf("%w: the directory holds %s, so it is a RocksDB store; bloomkv opens its own stores, LevelDB's and goleveldb's", ErrUnsupportedFormat, name)
		}
	}
	return nil
}

// RocksDB's table magic numbers (block-based since format_version 1, plain,
// and cuckoo), which a store that otherwise passes for LevelDB's may hold.
var rocksDBTableMagics = map[uint64]string{
	0x88e241b785f4cff7: "block-based",
	0x8242229663bf9564: "plain",
	0x4f3418eb7a8f13b8: "plain (legacy)",
	0x926789d0c5f17873: "cuckoo",
}

// checkNotRocksDBTable refuses a table that ends with one of RocksDB's
// magic numbers, with ErrUnsupportedFormat; any other table is left to
// sstable.NewReader.
func checkNotRocksDBTable(f io.ReaderAt, size int64) error {
	if size < 8 {
		return nil
	}
	var b [8]byte
	if _, err := f.ReadAt(b[:], size-8); err != nil {
		return nil
	}
	if kind, ok := rocksDBTableMagics[binary.LittleEndian.Uint64(b[:])]; ok {
		return fmt.Errorf("%w: a RocksDB %s table", ErrUnsupportedFormat, kind)
	}
	return nil
}
