package db

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/cache"
	"github.com/bloomkv/bloomkv/internal/logrec"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// DB is an open store. Create one with Open and release it with Close.
type DB struct {
	dirname string
	opts    *resolved
	fs      vfs.FS
	lock    io.Closer
	events  *eventLog
	cache   *cache.Cache
	tables  *tableCache
	stats   sstable.ReadStats
	// ldbTables holds the numbers of the tables named NNNNNN.ldb
	// (LevelDB's name); the others are NNNNNN.sst. See tablePath.
	ldbTables sync.Map
	m         counters

	// visibleSeq is the sequence number of the newest write that readers
	// may see; rs is the current set of memtables and tables to read.
	visibleSeq atomic.Uint64
	rs         atomic.Pointer[readState]
	closed     atomic.Bool
	reads      base.Counter   // Gets and iterator steps in flight (Close waits)
	releases   sync.WaitGroup // read-state releases handed off by Gets (Close waits)
	loading    sync.WaitGroup // Open's loadTables (Close waits)
	knownOnce  sync.Once
	// helpers read MultiGet's blocks beside its caller; nil when
	// MultiGetParallelism is 1. Close stops them.
	helpers *mgHelpers
	known   []filter.Policy // knownFilters

	// copts shape the tree; pointers are the per-level round-robin
	// compaction cursors.
	copts    *compaction.Options
	pointers [NumLevels][]byte

	// vmu guards versionRefs (read states per version) and zombies (tables
	// dropped from the current version but maybe still read).
	vmu         sync.Mutex
	versionRefs map[*manifest.Version]int
	zombies     map[uint64]bool

	mu         sync.Mutex
	bgCond     *sync.Cond // broadcast when a flush ends or a background error is set
	writers    []*writer  // queue of pending writes; the head leads a group
	mem        *memtable.MemTable
	imm        *memtable.MemTable // frozen memtable being flushed, or nil
	immLog     uint64             // log number that holds imm's writes
	logNum     uint64
	logFile    vfs.File
	log        *wal.Writer
	vs         *versionSet
	seq        uint64 // last sequence number assigned
	snaps      snapshotList
	bgErr      error // sticky: a failed WAL write, sync or flush
	flushing   bool
	compacting bool // a compaction (background or manual) runs
	// manifestBusy is set while an edit is written to the MANIFEST
	// without d.mu (logAndApplyLocked); other edits wait for it.
	manifestBusy bool
	manual       int // CompactRange calls waiting or running
	// Logs left at a memtable switch are synced and closed by
	// logSyncLoop, off the writer's path: logSyncQ holds them, logDirDirty
	// says a log was created since the directory was last synced, and
	// logSyncing that the loop runs. A synced write waits until all three
	// are clear (no hole: every older log is durable before it).
	logSyncQ    []vfs.File
	logDirDirty bool
	logSyncing  bool
	isClosed    bool
	closeDone   chan struct{} // closed when the first Close has released everything
}

// writer is one Write waiting in the group-commit queue.
type writer struct {
	batch *Batch // nil: a request to freeze the memtable (Flush)
	sync  bool
	done  bool
	err   error
	cond  sync.Cond
}

// Open opens the store in dirname, creating it unless
// Options.ErrorIfMissing is set. It replays the write-ahead logs left by a
// previous process, so every write that returned is there (those with
// Sync, even after a machine crash). A directory that another DB holds
// open fails with ErrLocked; a damaged CURRENT or MANIFEST fails with
// ErrCorruption and changes nothing. With Options.ReadOnly, Open changes
// nothing in the directory at all: the logs are replayed into memory.
// An empty dirname is refused with ErrInvalidArgument, options out of
// range with ErrInvalidOptions. The tables' filters and indexes are loaded
// by a goroutine that Open starts, top level first, so Open does not wait
// for them; a read that needs a table not loaded yet loads it.
func Open(dirname string, opts *Options) (*DB, error) {
	if dirname == "" {
		return nil, fmt.Errorf("%w: Open needs the store's directory; the path is empty", ErrInvalidArgument)
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, wrapf(err, "open %s", dirname)
	}
	d := &DB{
		dirname:   dirname,
		opts:      o,
		fs:        o.FS,
		closeDone: make(chan struct{}),

		versionRefs: map[*manifest.Version]int{},
		zombies:     map[uint64]bool{},
	}
	if o.multiGetWorkers > 1 {
		d.helpers = newMGHelpers(o.multiGetWorkers - 1)
	}
	d.copts = d.compactionOptions()
	d.bgCond = sync.NewCond(&d.mu)
	d.snaps.init()
	if !o.DisableBlockCache {
		d.cache = cache.New(o.BlockCacheSize)
	}
	if err := d.open(); err != nil {
		return nil, wrapf(err, "open %s", dirname)
	}
	// A store closed with a deep level 0 (or levels past their targets)
	// must not wait for the next write to be compacted: reads would pay
	// for every level-0 table until then.
	d.mu.Lock()
	d.maybeScheduleCompactionLocked()
	d.mu.Unlock()
	return d, nil
}

// knownFilters are the policies whose filters a table reader can decode,
// found by the name each table stores: every table policy of the filter
// package (their readers take k or the fingerprint size from the filter
// bytes, not from the constructor), the configured ones first. The list
// is built once: constructing the blocked Bloom policy sums a Poisson
// series for its k, and doing that for every table made three quarters
// of Open's time on a store of 250 tables.
func (d *DB) knownFilters() []filter.Policy {
	d.knownOnce.Do(func() { d.known = d.buildKnownFilters() })
	return d.known
}

func (d *DB) buildKnownFilters() []filter.Policy {
	var ps []filter.Policy
	if d.opts.filterPolicy != nil {
		ps = append(ps, d.opts.filterPolicy)
	}
	for _, p := range d.opts.LevelFilterPolicies {
		if p != nil && !filter.IsNone(p) {
			ps = append(ps, p)
		}
	}
	return append(ps,
		filter.NewBloomPolicy(DefaultBloomBitsPerKey),
		filter.NewLegacyBloomPolicy(DefaultBloomBitsPerKey),
		filter.NewLevelDBBloomPolicy(DefaultBloomBitsPerKey),
		filter.NewGoLevelDBBloomPolicy(DefaultBloomBitsPerKey),
		filter.NewBlockedBloomPolicy(DefaultBloomBitsPerKey),
		filter.NewBinaryFusePolicy(8),
	)
}

func (d *DB) writerOptions(level int) sstable.WriterOptions {
	o := sstable.WriterOptions{
		BlockSize:            d.opts.BlockSize,
		BlockRestartInterval: d.opts.BlockRestartInterval,
		FilterPolicy:         d.filterPolicyForLevel(level),
		DisableCompression:   d.opts.DisableCompression,
		Prefix:               d.opts.Prefix,
		RangeFilter:          d.opts.RangeFilter,
	}
	if d.vs.format == FormatLevelDB {
		// Open refused the options LevelDB's tables cannot hold.
		o.Format = sstable.FormatLevelDB
		o.Prefix, o.RangeFilter = nil, nil
	}
	return o
}

// Put sets key to value. The DB copies both. A key over MaxKeySize or a
// value over MaxValueSize is refused with an error wrapping
// ErrInvalidArgument, and nothing is written.
func (d *DB) Put(key, value []byte, wo *WriteOptions) error {
	b := getBatch()
	b.Put(key, value)
	err := d.Write(b, wo)
	putBatch(b)
	return err
}

// Delete removes key. Deleting a missing key is not an error; a key over
// MaxKeySize is (ErrInvalidArgument).
func (d *DB) Delete(key []byte, wo *WriteOptions) error {
	b := getBatch()
	b.Delete(key)
	err := d.Write(b, wo)
	putBatch(b)
	return err
}

// DeleteRange deletes every key in [start, end): each key written before
// the call is gone for every read that starts after it returns, and keys
// written after it are not affected. The deletion is one write, a range
// tombstone, whatever the number of keys: reads skip what it covers
// (Get, iterators in both directions, MultiGet; a snapshot taken before
// it still sees the keys), and compactions drop the covered data and then
// the tombstone. DeleteRange(k, k) is a no-op; start after end is refused
// with an error wrapping ErrInvalidArgument.
func (d *DB) DeleteRange(start, end []byte, wo *WriteOptions) error {
	b := getBatch()
	b.DeleteRange(start, end)
	err := d.Write(b, wo)
	putBatch(b)
	return err
}

// Put and Delete reuse their one-write batches, and every write reuses
// its queue entry: nothing holds either once Write returns.
var (
	batchPool  sync.Pool
	writerPool = sync.Pool{New: func() any { return new(writer) }}
)

func getBatch() *Batch {
	if b, ok := batchPool.Get().(*Batch); ok {
		b.Reset()
		return b
	}
	return new(Batch)
}

func putBatch(b *Batch) {
	if cap(b.rep) <= 64<<10 {
		batchPool.Put(b)
	}
}

// Write applies a batch atomically: readers and recovery see all of it or
// none of it. Concurrent writes are grouped into one WAL append and at most
// one fsync. The batch may be reused once Write returns.
//
// A batch that refused a write for being over a size limit (Batch.Err) is
// refused whole with that error, wrapping ErrInvalidArgument. An empty
// batch changes nothing; with Sync it still syncs the log, so the writes
// acknowledged before it are durable when it returns.
func (d *DB) Write(b *Batch, wo *WriteOptions) error {
	if b != nil && b.err != nil {
		return b.err
	}
	if b == nil || b.Count() == 0 {
		if d.closed.Load() {
			return ErrClosed
		}
		if wo == nil || !wo.Sync || d.opts.ReadOnly {
			return nil
		}
		// An empty synced write is a durability barrier, as in LevelDB:
		// it syncs the log, so every write acknowledged before it
		// survives a machine crash.
		var empty Batch
		empty.init()
		return d.write(&empty, true)
	}
	if d.opts.ReadOnly {
		return d.errReadOnly()
	}
	if b.rangeDels > 0 && d.vs.format == FormatLevelDB {
		return fmt.Errorf("%w: DeleteRange: a LevelDB-format store cannot hold range tombstones (LevelDB could not read them); open it with Format: FormatBloomKV to convert it", ErrInvalidArgument)
	}
	return d.write(b, wo != nil && wo.Sync)
}

// maxGroupBytes bounds a write group; a small leading batch only waits for
// small followers so its latency stays low (LevelDB's rule).
const maxGroupBytes = 1 << 20

func (d *DB) write(b *Batch, sync bool) error {
	w := writerPool.Get().(*writer)
	*w = writer{batch: b, sync: sync}
	w.cond.L = &d.mu
	defer writerPool.Put(w)
	d.mu.Lock()
	if d.isClosed {
		d.mu.Unlock()
		return ErrClosed
	}
	d.writers = append(d.writers, w)
	for !w.done && d.writers[0] != w {
		w.cond.Wait()
	}
	if w.done {
		d.mu.Unlock()
		return w.err
	}

	// This writer leads a group.
	err := d.makeRoomForWriteLocked(b == nil)
	if err == nil && w.sync {
		err = d.waitLogSyncsLocked()
	}
	last := 0
	if err == nil && b != nil {
		var group *Batch
		group, last = d.buildGroupLocked()
		seq := d.seq + 1
		group.setSeq(seq)
		d.seq += uint64(group.Count())
		mem, log, logFile := d.mem, d.log, d.logFile
		syncNeeded := w.sync

		// The WAL append, fsync and memtable insert run without d.mu, so
		// readers and the next writers can queue; only the leader touches
		// the log and the memtable.
		d.mu.Unlock()
		start := time.Now()
		err = log.AddRecord(group.rep)
		if err == nil && syncNeeded {
			err = logFile.Sync()
			d.m.walSyncs.Add(1)
		}
		if err == nil {
			d.m.walBytes.Add(int64(len(group.rep)))
			d.m.userBytes.Add(group.userBytes)
			insertBatch(mem, group)
		}
		d.m.writeNanos.Add(int64(time.Since(start)))
		d.mu.Lock()
		if err != nil {
			err = wrapf(err, "write-ahead log")
			d.setBGErrorLocked(err)
		} else {
			d.visibleSeq.Store(d.seq)
		}
	}

	// Wake the members of the group and the next leader.
	for i := 0; i <= last; i++ {
		g := d.writers[0]
		d.writers = d.writers[1:]
		if g != w {
			g.err, g.done = err, true
			g.cond.Signal()
		}
	}
	if len(d.writers) > 0 {
		d.writers[0].cond.Signal()
	} else {
		d.bgCond.Broadcast() // Close waits for the queue to drain
	}
	d.mu.Unlock()
	return err
}

// buildGroupLocked merges the batches at the head of the queue into one.
// It returns the group and the index of its last writer. A sync write does
// not join a group led by a non-sync write, and a Flush request ends a group.
func (d *DB) buildGroupLocked() (*Batch, int) {
	first := d.writers[0]
	limit := maxGroupBytes
	if first.batch.Len() <= 128<<10 {
		limit = first.batch.Len() + 128<<10
	}
	size := first.batch.Len()
	last := 0
	for i := 1; i < len(d.writers); i++ {
		w := d.writers[i]
		if w.batch == nil || (w.sync && !first.sync) {
			break
		}
		size += w.batch.Len() - batchHeaderLen
		if size > limit {
			break
		}
		last = i
	}
	if last == 0 {
		return first.batch, 0
	}
	group := &Batch{rep: make([]byte, 0, size), userBytes: first.batch.userBytes}
	group.rep = append(group.rep, first.batch.rep...)
	for i := 1; i <= last; i++ {
		group.appendBatch(d.writers[i].batch)
	}
	return group, last
}

// insertBatch applies a validated batch to a memtable.
func insertBatch(mem *memtable.MemTable, b *Batch) {
	seq := b.seq()
	_ = logrec.ForEachOp(b.rep, func(op logrec.Op) error {
		if op.Kind == base.KindRangeDelete {
			mem.AddRangeDel(seq, op.Key, op.Value)
		} else {
			mem.Add(seq, op.Kind, op.Key, op.Value)
		}
		seq++
		return nil
	})
}

// makeRoomForWriteLocked freezes the memtable when it is full (or when
// force is set and it holds anything), waiting while an earlier frozen
// memtable is still being flushed.
func (d *DB) makeRoomForWriteLocked(force bool) error {
	allowDelay := !force
	for {
		l0 := d.vs.current.NumFiles(0)
		switch {
		case d.bgErr != nil:
			return d.bgErr
		case d.isClosed:
			return ErrClosed
		case allowDelay && l0 >= d.opts.L0SlowdownWritesTrigger && !d.opts.DisableAutomaticCompactions:
			// Level 0 is filling faster than compaction drains it: give
			// each write a 1 ms delay once, so compaction catches up
			// instead of writes stopping all at once later.
			allowDelay = false
			d.m.writeSlowdowns.Add(1)
			d.mu.Unlock()
			time.Sleep(time.Millisecond)
			d.mu.Lock()
			continue
		case !force && d.mem.ApproximateMemoryUsage() < d.opts.WriteBufferSize:
			return nil
		case force && d.mem.Empty():
			return nil
		case d.imm != nil:
			d.m.writeStalls.Add(1)
			d.bgCond.Wait()
			continue
		case l0 >= d.opts.L0StopWritesTrigger && !d.opts.DisableAutomaticCompactions:
			d.m.writeStalls.Add(1)
			d.maybeScheduleCompactionLocked()
			d.bgCond.Wait()
			continue
		}
		// Switch to a new log and memtable; flush the old one. The old log
		// ends with an end-of-log record and the new one starts with a
		// header naming the old one; the old log is synced and closed in
		// the background, and the new log's directory entry synced. Until
		// then a crash may keep writes of the new log and lose the old
		// log's tail: Open sees that the old log lacks its end record and
		// replays neither the new log nor any later one, so the store
		// keeps a prefix of its writes (no hole). A synced write waits for
		// the background sync (waitLogSyncsLocked).
		//
		// A LevelDB-format store's logs have neither record: LevelDB
		// would take them for damaged batches. Its unsynced writes have
		// LevelDB's guarantee (a crash may lose the old log's tail and
		// keep the new log's writes); synced writes still wait for the
		// old log's sync.
		levelDB := d.vs.format == FormatLevelDB
		if !levelDB {
			if err := d.log.AddRecord(nil); err != nil {
				err = wrapf(err, "write-ahead log")
				d.setBGErrorLocked(err)
				return err
			}
		}
		num := d.vs.newFileNum()
		f, err := d.createLog(num)
		var log *wal.Writer
		if err == nil {
			log = wal.NewWriter(f)
			if !levelDB {
				err = log.AddRecord(logrec.AppendHeader(nil, d.logNum))
			}
			if err != nil {
				f.Close()
				_ = d.fs.Remove(logFileName(d.dirname, num))
			}
		}
		if err != nil {
			err = wrapf(err, "create log")
			d.setBGErrorLocked(err)
			return err
		}
		d.logSyncQ = append(d.logSyncQ, d.logFile)
		d.logDirDirty = true
		d.maybeScheduleLogSyncLocked()
		d.imm, d.immLog = d.mem, d.logNum
		d.logNum, d.logFile, d.log = num, f, log
		d.mem = d.newMemTable()
		d.publishLocked()
		d.maybeScheduleFlushLocked()
		return nil
	}
}

// maybeScheduleLogSyncLocked starts logSyncLoop when there is work for it
// and it does not run.
func (d *DB) maybeScheduleLogSyncLocked() {
	if d.logSyncing || (len(d.logSyncQ) == 0 && !d.logDirDirty) {
		return
	}
	d.logSyncing = true
	go d.logSyncLoop()
}

// logSyncLoop syncs the directory (for new logs' entries) and syncs and
// closes the logs left at memtable switches, until none is left. A
// failed sync stops writes, like a failed WAL sync.
func (d *DB) logSyncLoop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.logSyncQ) > 0 || d.logDirDirty {
		q, dir := d.logSyncQ, d.logDirDirty
		d.logSyncQ, d.logDirDirty = nil, false
		failed := d.bgErr != nil
		d.mu.Unlock()
		var err error
		if dir && !failed {
			err = d.fs.SyncDir(d.dirname)
		}
		for _, f := range q {
			if err == nil && !failed {
				err = f.Sync()
			}
			if cerr := f.Close(); cerr != nil {
				d.events.warn("closing log failed", "err", cerr)
			}
		}
		d.mu.Lock()
		if err != nil {
			d.setBGErrorLocked(wrapf(err, "sync of a previous log"))
		}
	}
	d.logSyncing = false
	d.bgCond.Broadcast()
}

// waitLogSyncsLocked waits until every log older than the current one is
// synced and the current log's directory entry is durable, as a synced
// write needs before it is acknowledged.
func (d *DB) waitLogSyncsLocked() error {
	for d.bgErr == nil && (d.logSyncing || len(d.logSyncQ) > 0 || d.logDirDirty) {
		d.bgCond.Wait()
	}
	return d.bgErr
}

// createLog creates log num, appended through a memory map when the file
// system can (see Options.DisableMmapWAL).
func (d *DB) createLog(num uint64) (vfs.File, error) {
	name := logFileName(d.dirname, num)
	f, err := d.fs.Create(name)
	if err != nil || d.opts.DisableMmapWAL {
		return f, err
	}
	ma, ok := f.(vfs.MapAppender)
	if !ok {
		return f, nil
	}
	mf, err := ma.AppendMapped()
	if err != nil {
		d.events.warn("mapping log failed; appending it with write", "log", num, "err", err)
		return f, nil
	}
	return mf, nil
}

func (d *DB) setBGErrorLocked(err error) {
	if d.bgErr == nil {
		d.bgErr = err
		d.events.error("background error; writes are refused from now on", "err", err)
	}
	d.bgCond.Broadcast()
}

func (d *DB) maybeScheduleFlushLocked() {
	if d.flushing || d.imm == nil || d.bgErr != nil {
		return
	}
	d.flushing = true
	go d.flushLoop()
}

// flushLoop writes frozen memtables to level-0 tables until none is left.
func (d *DB) flushLoop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.imm != nil && d.bgErr == nil {
		imm, immLog := d.imm, d.immLog
		d.mu.Unlock()
		meta, err := d.writeLevel0Table(imm)
		d.mu.Lock()
		if err == nil {
			edit := &manifest.VersionEdit{}
			edit.LogNumber, edit.HasLogNumber = d.logNum, true
			switch {
			case d.vs.format != FormatLevelDB:
				edit.LastSequence, edit.HasLastSequence = d.seq, true
			case meta != nil:
				// The last write in tables, not the last write: goleveldb
				// skips, without a word, every logged batch older than
				// the MANIFEST's last sequence, and the new log holds
				// writes newer than the flushed memtable's. (Open takes
				// the larger of this and what the logs hold.)
				edit.LastSequence, edit.HasLastSequence = max(d.vs.lastSeq, meta.LargestSeq), true
			}
			if meta != nil {
				edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: meta})
			}
			err = d.logAndApplyLocked(edit)
		}
		if err != nil {
			// The table stays: a failed MANIFEST write or sync may still
			// have made the edit durable. The next Open removes it if the
			// MANIFEST does not name it.
			if meta != nil {
				d.tables.evict(meta.FileNum)
			}
			d.setBGErrorLocked(wrapf(err, "flush"))
			break
		}
		d.imm = nil
		d.publishLocked()
		d.m.flushes.Add(1)
		if meta != nil {
			d.m.flushBytes.Add(int64(meta.Size))
		}
		d.maybeScheduleCompactionLocked()
		d.bgCond.Broadcast()
		// Unlinking a log can take milliseconds: not under d.mu, which
		// writers need. (Close waits while flushing is set.)
		logNum := d.logNum
		d.mu.Unlock()
		d.deleteObsoleteLogs(immLog, logNum)
		d.mu.Lock()
	}
	d.flushing = false
	d.bgCond.Broadcast()
}

// deleteObsoleteLogs removes logs up to and including upTo, whose writes
// are now in tables recorded by the MANIFEST, and never the current log
// (number current). It runs without d.mu.
func (d *DB) deleteObsoleteLogs(upTo, current uint64) {
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return
	}
	for _, name := range names {
		if t, num, ok := parseFileName(name); ok && t == fileTypeLog && num <= upTo && num < current {
			if err := d.fs.Remove(vfs.Join(d.dirname, name)); err != nil {
				d.events.warn("removing obsolete log failed", "file", name, "err", err)
			}
		}
	}
}

// writeLevel0Table writes a memtable to a new table and returns its
// metadata, or nil for an empty memtable.
func (d *DB) writeLevel0Table(mem *memtable.MemTable) (*manifest.FileMetadata, error) {
	if mem.Empty() {
		return nil, nil
	}
	start := time.Now()
	d.mu.Lock()
	num := d.vs.newFileNum()
	d.mu.Unlock()
	meta, err := d.writeTable(num, 0, mem.NewIterator(), mem.RangeDelTombstones())
	if err != nil {
		return nil, err
	}
	d.events.info("flushed memtable", "table", num, "entries", mem.Len(), "bytes", meta.Size, "duration", time.Since(start).String())
	return meta, nil
}

// Get returns a copy of the value of key, or an error wrapping ErrNotFound.
func (d *DB) Get(key []byte, ro *ReadOptions) ([]byte, error) {
	readCell := d.reads.Inc()
	defer d.reads.DecAt(readCell)
	if d.closed.Load() {
		return nil, ErrClosed
	}
	// The read state first, the sequence number second: every version a
	// read at seq needs is then in the state's memtables or tables. The
	// other order lets a flush and a compaction run in between and drop,
	// as shadowed by a newer write, the only version seq could see.
	ref := d.loadReadState()
	seq, err := d.readSeq(ro)
	if err != nil {
		ref.unref()
		return nil, err
	}
	v, err := d.get(ref.rs, key, seq)
	ref.unrefAsync()
	return v, err
}

// readSeq returns the sequence number a read with ro sees: its snapshot's,
// or the newest visible one. The caller has taken its read state already,
// so a snapshot found live here was live when that state was taken, and
// the state still holds every version the snapshot sees.
func (d *DB) readSeq(ro *ReadOptions) (uint64, error) {
	if ro == nil || ro.Snapshot == nil {
		return d.visibleSeq.Load(), nil
	}
	s := ro.Snapshot
	if s.db != d {
		return 0, fmt.Errorf("%w: the snapshot belongs to another DB", ErrInvalidArgument)
	}
	if err := s.err(); err != nil {
		return 0, err
	}
	return s.seq, nil
}

// newMemTable returns a memtable for the DB's writes and reads: with a
// filter of one bit per 2 bytes of the write buffer, unless
// Options.DisableMemTableFilter.
func (d *DB) newMemTable() *memtable.MemTable {
	if d.opts.DisableMemTableFilter {
		return memtable.New()
	}
	return memtable.NewWithFilter(d.opts.WriteBufferSize / 2)
}

// memMayContain reports whether mem may hold key, whose memtable.KeyHash
// is h (computed on first use: *h is 0 until then, and a key whose hash
// is 0 is hashed again each time, which is only slower), counting the
// check in the memtable filter metrics.
func (d *DB) memMayContain(mem *memtable.MemTable, key []byte, h *uint64) bool {
	if !mem.HasFilter() {
		return true
	}
	if *h == 0 {
		*h = memtable.KeyHash(key)
	}
	if mem.MayContainHash(*h) {
		d.m.memFilterPositives.Add(1)
		return true
	}
	d.m.memFilterNegatives.Add(1)
	return false
}

// memFound counts a key found in mem after its filter let it through.
func (d *DB) memFound(mem *memtable.MemTable) {
	if mem.HasFilter() {
		d.m.memFilterTruePositives.Add(1)
	}
}

func (d *DB) get(rs *readState, key []byte, seq uint64) ([]byte, error) {
	d.m.gets.Add(1)
	if rs.hasRangeDels() {
		return d.getRangeDels(rs, key, seq)
	}
	return d.getPoint(rs, key, seq)
}

// getPoint is get when no range tombstone covers key.
func (d *DB) getPoint(rs *readState, key []byte, seq uint64) ([]byte, error) {
	var h uint64
	if !rs.mem.Empty() && d.memMayContain(rs.mem, key, &h) {
		if v, kind, ok := rs.mem.Get(key, seq); ok {
			d.memFound(rs.mem)
			return found(v, kind)
		}
	}
	if rs.imm != nil && d.memMayContain(rs.imm, key, &h) {
		if v, kind, ok := rs.imm.Get(key, seq); ok {
			d.memFound(rs.imm)
			return found(v, kind)
		}
	}
	// The seek key is built only when some filter lets the key through:
	// an absent key usually never needs it.
	var buf [64]byte
	var seek []byte
	for level := 0; level < manifest.NumLevels; level++ {
		files := rs.v.Files[level]
		if len(files) == 0 {
			continue
		}
		if level > 0 {
			// One table, except where LevelDB split the key's versions
			// between neighbours (then the newer ones come first).
			files = rs.v.FindFiles(level, key)
		}
		for _, f := range files {
			if level == 0 && (bytes.Compare(key, base.UserKey(f.Smallest)) < 0 || bytes.Compare(key, base.UserKey(f.Largest)) > 0) {
				continue
			}
			r, maybe, err := d.tableMayContain(level, f, key)
			if err != nil {
				return nil, err
			}
			if !maybe {
				continue
			}
			if seek == nil {
				seek = base.AppendInternalKey(buf[:0], key, seq, base.KindSeek)
			}
			v, kind, ok, err := d.tableGet(level, f, r, seek, key)
			if err != nil {
				return nil, err
			}
			if ok {
				if kind == base.KindDelete {
					return nil, ErrNotFound
				}
				return v, nil // already the caller's copy
			}
		}
	}
	return nil, ErrNotFound
}

// getRangeDels is get for a state holding range tombstones. It finds the
// newest tombstone over key that the read sees (at sequence number del);
// every entry older than it is deleted. So tables whose entries are all
// older are skipped without a filter probe, and the first entry found is
// the answer only if it is newer than del.
func (d *DB) getRangeDels(rs *readState, key []byte, seq uint64) ([]byte, error) {
	frozen, err := rs.rangeDels()
	if err != nil {
		return nil, err
	}
	del, _ := frozen.MaxSeq(key, seq)
	if q, ok := rs.mem.RangeDels().MaxSeq(key, seq); ok && q > del {
		del = q
	}
	if del == 0 {
		return d.getPoint(rs, key, seq)
	}
	var h uint64
	for i, mem := range [2]*memtable.MemTable{rs.mem, rs.imm} {
		// An empty active memtable is not asked, as in getPoint.
		if mem == nil || i == 0 && mem.Empty() || !d.memMayContain(mem, key, &h) {
			continue
		}
		if v, eseq, kind, ok := mem.GetEntry(key, seq); ok {
			d.memFound(mem)
			if eseq < del {
				return nil, ErrNotFound
			}
			return found(v, kind)
		}
	}
	var buf [64]byte
	seek := base.AppendInternalKey(buf[:0], key, seq, base.KindSeek)
	for level := 0; level < manifest.NumLevels; level++ {
		files := rs.v.Files[level]
		if level > 0 {
			// One table, except where LevelDB split the key's versions
			// between neighbours (then the newer ones come first).
			files = rs.v.FindFiles(level, key)
		}
		for _, f := range files {
			if f.LargestSeq < del {
				continue // every entry of f is deleted
			}
			if level == 0 && (bytes.Compare(key, base.UserKey(f.Smallest)) < 0 || bytes.Compare(key, base.UserKey(f.Largest)) > 0) {
				continue
			}
			r, maybe, err := d.tableMayContain(level, f, key)
			if err != nil {
				return nil, err
			}
			if !maybe {
				continue
			}
			v, eseq, kind, ok, err := r.GetEntry(seek, key)
			if err != nil {
				return nil, wrapf(err, "table %06d", f.FileNum)
			}
			if !ok {
				continue
			}
			if r.HasFilter() {
				d.m.levels[level].filterTruePositives.Add(1)
			}
			if kind == base.KindDelete || eseq < del {
				return nil, ErrNotFound
			}
			return v, nil
		}
	}
	return nil, ErrNotFound
}

// tableMayContain opens the table (from the table cache) and asks its
// filter about key; maybe is true when it has no filter.
func (d *DB) tableMayContain(level int, f *manifest.FileMetadata, key []byte) (r *sstable.Reader, maybe bool, err error) {
	r, err = d.tables.get(f)
	if err != nil {
		return nil, false, err
	}
	if r.HasFilter() {
		lm := &d.m.levels[level]
		lm.filterChecks.Add(1)
		if !r.MayContain(key) {
			return r, false, nil
		}
		lm.filterPositives.Add(1)
	}
	return r, true, nil
}

// tableGet looks the key up in the table's index and one data block. ok
// reports whether the table holds a visible entry.
func (d *DB) tableGet(level int, f *manifest.FileMetadata, r *sstable.Reader, seek, key []byte) (value []byte, kind base.Kind, ok bool, err error) {
	v, kind, ok, err := r.Get(seek, key)
	if err != nil {
		return nil, 0, false, wrapf(err, "table %06d", f.FileNum)
	}
	if !ok {
		return nil, 0, false, nil
	}
	if r.HasFilter() {
		d.m.levels[level].filterTruePositives.Add(1)
	}
	return v, kind, true, nil
}

// found returns the caller's copy of a value found in a memtable, or
// ErrNotFound for a tombstone.
func found(v []byte, kind base.Kind) ([]byte, error) {
	if kind == base.KindDelete {
		return nil, ErrNotFound
	}
	return append(make([]byte, 0, len(v)), v...), nil
}

// Flush freezes the memtable and waits until it is written to a level-0
// table. It returns at once when the memtable is empty.
func (d *DB) Flush() error {
	if d.opts.ReadOnly {
		return d.errReadOnly()
	}
	if d.closed.Load() {
		return ErrClosed
	}
	// A nil batch in the queue asks the leader to freeze the memtable.
	if err := d.write(nil, false); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.imm != nil && d.bgErr == nil {
		d.bgCond.Wait()
	}
	return d.bgErr
}

// Close flushes nothing (the WAL holds the memtable's writes), syncs the
// WAL, waits for running writes, flushes, compactions and reads (a Get or
// one iterator step: not for open iterators), and releases every file,
// memory map and the LOCK before it returns. Every later call on the DB,
// and on its iterators and snapshots, returns ErrClosed. A compaction in
// progress is abandoned (its inputs stay), so Close returns in bounded
// time.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.isClosed {
		d.mu.Unlock()
		// Another Close runs or ran: return only once it has released
		// everything, so that whoever sees a Close return may reopen.
		<-d.closeDone
		return ErrClosed
	}
	d.isClosed = true
	defer close(d.closeDone)
	d.closed.Store(true)
	d.bgCond.Broadcast() // wake writers stalled on level 0 and waiting CompactRanges
	for len(d.writers) > 0 || d.flushing || d.compacting || d.manual > 0 || d.logSyncing {
		d.bgCond.Wait()
	}
	var err error
	if d.logFile != nil {
		if d.bgErr == nil {
			err = d.logFile.Sync()
		}
		if cerr := d.logFile.Close(); err == nil {
			err = cerr
		}
	}
	if cerr := d.vs.close(); err == nil {
		err = cerr
	}
	d.mu.Unlock()

	// Let in-flight reads finish before their files close.
	for d.reads.Load() > 0 {
		time.Sleep(50 * time.Microsecond)
	}
	if d.helpers != nil {
		d.helpers.stop() // no MultiGet runs now
	}
	d.releases.Wait()
	d.loading.Wait()
	if cerr := d.tables.close(); err == nil {
		err = cerr
	}
	d.events.info("closed")
	if cerr := d.events.close(); err == nil {
		err = cerr
	}
	if cerr := d.lock.Close(); err == nil {
		err = cerr
	}
	return err
}
