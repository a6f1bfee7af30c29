package db

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"time"

	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/vfs"
)

// A read-only DB (Options.ReadOnly) looks at a store without changing a
// byte of its directory:
//
//   - it takes a shared lock on LOCK, so read-only opens coexist with
//     each other (in this process and in others) but not with a read-write
//     DB; LOCK is never created, and when it is missing, or cannot be
//     opened for lack of permission, the store is opened without a lock;
//   - it replays the write-ahead logs into a memtable held in memory,
//     under the same rules as a read-write Open (a log whose predecessor
//     was cut short stops the replay), so every acknowledged write is
//     visible; no table is written, no log created, the MANIFEST is not
//     rewritten, CURRENT is not touched, and no file is removed;
//   - it writes no LOG file: its events go to Options.Logger only;
//   - it never flushes or compacts: Write, Put, Delete, Flush and
//     CompactRange fail with ErrReadOnly.
//
// Reads, iterators, snapshots and Metrics work as on any DB.

// openReadOnly does the work of Open for Options.ReadOnly.
func (d *DB) openReadOnly() (err error) {
	start := time.Now()
	d.events = &eventLog{extern: d.opts.Logger}
	defer func() {
		if err != nil {
			d.events.error("read-only open failed", "err", err)
		}
	}()
	fi, err := d.fs.Stat(d.dirname)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("%s is not a directory", d.dirname)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: the directory does not exist (a read-only open creates nothing)", ErrDBMissing)
	case err != nil:
		return err
	}
	if _, err := d.fs.Stat(vfs.Join(d.dirname, checkpointMarker)); err == nil {
		return checkNotIncompleteCheckpoint([]string{checkpointMarker})
	}
	lock, err := d.lockShared()
	if err != nil {
		return err
	}
	d.lock = lock
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	// Listed under the lock: no writer changes the directory from here on
	// (unless the store has no usable LOCK).
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return fmt.Errorf("reading directory: %w", err)
	}
	if !slices.Contains(names, "CURRENT") {
		return fmt.Errorf("%w: no CURRENT in the directory (a read-only open creates nothing)", ErrDBMissing)
	}
	if err := checkNotRocksDB(names); err != nil {
		return err
	}
	d.vs = &versionSet{fs: d.fs, dirname: d.dirname}
	if err := d.vs.recover(); err != nil {
		return err
	}
	if err := checkLiveFiles(names, d.vs); err != nil {
		return err
	}
	d.noteTableNames(names)
	if err := d.checkLevelDBTables(); err != nil {
		return err
	}
	if _, err := d.settleFormat(); err != nil {
		return err
	}
	logs := d.logsToReplay(names)

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
	mem := d.newMemTable()
	maxSeq, err := d.replayLogs(logs, memSink{mem})
	if err != nil {
		return err
	}
	d.vs.lastSeq = maxSeq
	d.seq = maxSeq
	d.visibleSeq.Store(maxSeq)
	d.mu.Lock()
	d.mem = mem
	d.publishLocked()
	d.mu.Unlock()
	v := d.vs.current
	for _, files := range v.Files {
		for _, f := range files {
			if _, err := d.tables.get(f); err != nil {
				d.events.error("opening table failed", "table", f.FileNum, "err", err)
			}
		}
	}
	d.events.info("opened read-only", "dir", d.dirname, "tables", len(v.AllFileNums()), "logs_replayed", len(logs),
		"memtable_bytes", mem.ApproximateMemoryUsage(), "last_seq", maxSeq, "duration", time.Since(start).String())
	return nil
}

// lockShared takes the shared lock of a read-only open. A LOCK held by a
// read-write DB fails with ErrLocked. A missing LOCK (a store copied
// without it) is not created, and a LOCK that cannot be opened for lack
// of permission (another user's store) is not an error either: the store
// is then opened without a lock, and a writer that opens it meanwhile is
// not kept out.
func (d *DB) lockShared() (io.Closer, error) {
	name := lockFileName(d.dirname)
	l, err := d.fs.LockShared(name)
	switch {
	case err == nil:
		return l, nil
	case errors.Is(err, vfs.ErrLockHeld):
		return nil, fmt.Errorf("%w: a read-write DB has it open (read-only opens share a store only with each other): %w", ErrLocked, err)
	case errors.Is(err, fs.ErrNotExist):
		d.events.info("no LOCK file: opening read-only without a lock", "dir", d.dirname)
		return noLock{}, nil
	case errors.Is(err, fs.ErrPermission):
		d.events.warn("LOCK cannot be opened: opening read-only without a lock", "dir", d.dirname, "err", err)
		return noLock{}, nil
	}
	return nil, fmt.Errorf("taking LOCK: %w", err)
}

// noLock stands for the lock of a read-only DB that opened without one.
type noLock struct{}

func (noLock) Close() error { return nil }

// memSink is the read-only Open's replaySink: every log's batches go into
// one memtable, which is never flushed.
type memSink struct{ mem *memtable.MemTable }

func (s memSink) add(b *Batch) error {
	if int64(s.mem.ApproximateMemoryUsage())+batchMemtableCost(b) > memtable.MaxMemoryUsage {
		return fmt.Errorf("the logs hold more than a memtable can (%d bytes): open the store read-write once to flush them to tables",
			int64(memtable.MaxMemoryUsage))
	}
	insertBatch(s.mem, b)
	return nil
}

func (memSink) endLog() error { return nil }

// errReadOnly is what a call that would change a read-only DB returns:
// ErrClosed once it is closed, as every call does, ErrReadOnly before.
func (d *DB) errReadOnly() error {
	if d.closed.Load() {
		return ErrClosed
	}
	return ErrReadOnly
}
