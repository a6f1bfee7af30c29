package db

import (
	"errors"
	"time"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// errCompactionAborted stops a compaction when the DB is closing; its
// outputs are discarded and nothing is lost.
var errCompactionAborted = errors.New("bloomkv: compaction aborted: closing")

func (d *DB) compactionOptions() *compaction.Options {
	return &compaction.Options{
		L0Trigger:       d.opts.L0CompactionTrigger,
		BaseLevelBytes:  uint64(d.opts.LBaseMaxBytes),
		LevelMultiplier: uint64(d.opts.LevelMultiplier),
		TargetFileSize:  uint64(d.opts.TargetFileSize),
	}
}

// maybeScheduleCompactionLocked starts the background compaction loop
// when the tree needs it and none runs.
func (d *DB) maybeScheduleCompactionLocked() {
	if d.compacting || d.manual > 0 || d.bgErr != nil || d.isClosed || d.opts.DisableAutomaticCompactions {
		return
	}
	if compaction.Pick(d.vs.current, d.copts, &d.pointers) == nil {
		return
	}
	d.compacting = true
	go d.compactionLoop()
}

// WaitForCompactions waits until no flush or compaction runs and, unless
// Options.DisableAutomaticCompactions is set, the tree needs none (level 0
// under its trigger, every level under its target size). A benchmark calls
// it between loading and reading, as db_bench does, so that reads are not
// measured against the load's background work, and read counters
// (Metrics) are not mixed with compactions'. Writes that arrive meanwhile
// can prolong the wait. It returns the background error that stopped
// flushes or compactions, if any, and ErrClosed once the DB is closed. On
// a read-only DB, which never compacts, it returns at once.
func (d *DB) WaitForCompactions() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		switch {
		case d.isClosed:
			return ErrClosed
		case d.bgErr != nil:
			return d.bgErr
		case d.opts.ReadOnly:
			return nil
		}
		busy := d.imm != nil || d.flushing || d.compacting || d.manual > 0
		if !busy && !d.opts.DisableAutomaticCompactions && compaction.Pick(d.vs.current, d.copts, &d.pointers) != nil {
			d.maybeScheduleCompactionLocked()
			busy = d.compacting
		}
		if !busy {
			return nil
		}
		d.bgCond.Wait()
	}
}

// compactionLoop runs compactions until the tree needs none.
func (d *DB) compactionLoop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.bgErr == nil && !d.isClosed && d.manual == 0 {
		c := compaction.Pick(d.vs.current, d.copts, &d.pointers)
		if c == nil {
			break
		}
		if err := d.runCompactionLocked(c); err != nil {
			if !errors.Is(err, errCompactionAborted) {
				d.setBGErrorLocked(wrapf(err, "compaction"))
			}
			break
		}
	}
	d.compacting = false
	d.bgCond.Broadcast()
}

// runCompactionLocked performs c. It is called with d.mu held and releases
// it while reading and writing tables.
func (d *DB) runCompactionLocked(c *compaction.Compaction) error {
	start := time.Now()
	out := c.OutputLevel()
	lm := &d.m.levels[out]
	edit := &manifest.VersionEdit{}
	for i, files := range c.Inputs {
		for _, f := range files {
			edit.DeletedFiles = append(edit.DeletedFiles, manifest.DeletedFileEntry{Level: c.Level + i, FileNum: f.FileNum})
		}
	}
	if len(c.Inputs[0]) > 0 {
		d.pointers[c.Level] = append([]byte(nil), c.Inputs[0][len(c.Inputs[0])-1].Largest...)
	}

	if !c.Manual && c.IsTrivialMove(d.copts) {
		f := c.Inputs[0][0]
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: out, Meta: f})
		if err := d.logAndApplyLocked(edit); err != nil {
			return err
		}
		d.publishLocked()
		d.m.trivialMoves.Add(1)
		d.events.info("moved table", "table", f.FileNum, "from", c.Level, "to", out, "bytes", f.Size)
		d.bgCond.Broadcast()
		return nil
	}

	smallestSnap, ok := d.snaps.oldest()
	if !ok {
		smallestSnap = d.visibleSeq.Load()
	}
	v := d.vs.current
	d.mu.Unlock()
	metas, st, err := d.mergeInputs(c, v, smallestSnap)
	d.mu.Lock()
	if err != nil {
		return err
	}
	for _, m := range metas {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: out, Meta: m})
	}
	if err := d.logAndApplyLocked(edit); err != nil {
		// The outputs stay: a failed MANIFEST write or sync may still have
		// made the edit durable. The next Open removes them if unnamed.
		for _, m := range metas {
			d.tables.evict(m.FileNum)
		}
		return err
	}
	d.addZombies(c.Inputs[0])
	d.addZombies(c.Inputs[1])
	d.publishLocked()

	var written uint64
	for _, m := range metas {
		written += m.Size
	}
	in := c.InputBytes()
	lm.compactions.Add(1)
	lm.compactionBytesIn.Add(int64(in))
	lm.compactionBytesOut.Add(int64(written))
	d.m.compactionBytes.Add(int64(written))
	d.m.compactions.Add(1)
	d.m.coveredDropped.Add(st.DroppedCovered)
	d.events.info("compacted", "from", c.Level, "to", out, "inputs", len(c.Inputs[0])+len(c.Inputs[1]),
		"outputs", len(metas), "bytes_in", in, "bytes_out", written, "entries_in", st.EntriesIn,
		"entries_out", st.EntriesOut, "dropped_shadowed", st.DroppedShadowed, "dropped_tombstones", st.DroppedTombstone,
		"dropped_covered", st.DroppedCovered, "range_tombstones_in", st.RangeDelsIn, "range_tombstones_out", st.RangeDelsOut, "zeroed_seqs", st.ZeroedSeqs,
		"manual", c.Manual, "duration", time.Since(start).String())
	d.bgCond.Broadcast()
	return nil
}

// mergeInputs merges the compaction's inputs into new tables.
func (d *DB) mergeInputs(c *compaction.Compaction, v *manifest.Version, smallestSnap uint64) ([]*manifest.FileMetadata, compaction.MergeStats, error) {
	var iters []base.InternalIterator
	if c.Level == 0 {
		for _, f := range c.Inputs[0] {
			r, err := d.tables.get(f)
			if err != nil {
				for _, it := range iters {
					it.Close()
				}
				return nil, compaction.MergeStats{}, err
			}
			iters = append(iters, r.NewCompactionIterator())
		}
	} else {
		iters = append(iters, &levelIter{d: d, files: c.Inputs[0], compaction: true})
	}
	if len(c.Inputs[1]) > 0 {
		iters = append(iters, &levelIter{d: d, files: c.Inputs[1], compaction: true})
	}
	it := compaction.NewMergingIterator(iters...)
	var tombs []rangedel.Tombstone
	for _, files := range c.Inputs {
		for _, f := range files {
			if f.RangeDels == 0 {
				continue
			}
			r, err := d.tables.get(f)
			if err != nil {
				it.Close()
				return nil, compaction.MergeStats{}, err
			}
			tombs = append(tombs, r.RangeDels()...)
		}
	}
	sink := &compactionSink{d: d, level: c.OutputLevel()}
	st, err := compaction.Merge(it, rangedel.Build(tombs), c, v, d.copts, smallestSnap, sink)
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		sink.abandon()
		return nil, st, err
	}
	return sink.done, st, nil
}

// compactionSink writes compaction output tables.
type compactionSink struct {
	d     *DB
	level int
	cur   *tableOut
	done  []*manifest.FileMetadata
	n     int
}

func (s *compactionSink) Add(ikey, value []byte) error {
	// Check for Close every 1,024 entries or 4 MiB, whichever comes
	// first, so Close waits for little work.
	s.n += 1 + (len(ikey)+len(value))>>12
	if s.n >= 1024 {
		s.n = 0
		if s.d.closed.Load() {
			return errCompactionAborted
		}
	}
	if err := s.open(); err != nil {
		return err
	}
	return s.cur.add(ikey, value)
}

func (s *compactionSink) AddRangeDel(start, end []byte, seq uint64) error {
	if err := s.open(); err != nil {
		return err
	}
	return s.cur.addRangeDel(start, end, seq)
}

// open starts a new output table when none is open.
func (s *compactionSink) open() error {
	if s.cur != nil {
		return nil
	}
	s.d.mu.Lock()
	num := s.d.vs.newFileNum()
	s.d.mu.Unlock()
	t, err := s.d.newTableOut(num, s.level)
	if err != nil {
		return err
	}
	s.cur = t
	return nil
}

func (s *compactionSink) CurrentSize() uint64 {
	if s.cur == nil {
		return 0
	}
	return s.cur.estimatedSize()
}

func (s *compactionSink) Cut() error {
	if s.cur == nil {
		return nil
	}
	t := s.cur
	s.cur = nil
	m, err := t.finish()
	if err != nil {
		return err
	}
	s.done = append(s.done, m)
	return nil
}

func (s *compactionSink) abandon() {
	if s.cur != nil {
		s.cur.abandon()
		s.cur = nil
	}
	for _, m := range s.done {
		s.d.tables.evict(m.FileNum)
		_ = s.d.removeTable(m.FileNum)
	}
	s.done = nil
}

// CompactRange flushes the memtable and compacts every table holding keys
// in [start, limit] (nil bounds are open) down, level by level, to the
// deepest level that holds data, dropping overwritten versions and
// deletions that no snapshot needs. CompactRange(nil, nil) compacts the
// whole store; after deleting every key it returns the disk space.
func (d *DB) CompactRange(start, limit []byte) error {
	if d.opts.ReadOnly {
		return d.errReadOnly()
	}
	if err := d.Flush(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.manual++
	defer func() {
		d.manual--
		// Close waits for manual to reach zero: wake it on every return.
		d.bgCond.Broadcast()
		d.maybeScheduleCompactionLocked()
	}()
	// Wait for a running background compaction to stop.
	for d.compacting && d.bgErr == nil && !d.isClosed {
		d.bgCond.Wait()
	}
	if d.isClosed {
		return ErrClosed
	}
	if d.bgErr != nil {
		return d.bgErr
	}
	d.compacting = true
	defer func() {
		d.compacting = false
		d.bgCond.Broadcast()
	}()
	// Tables that exist now and overlap the range are rewritten at least
	// once; those written from here on (by this call, or flushes to level
	// 0) are not rewritten again in the deepest level.
	before := map[uint64]bool{}
	for _, n := range d.vs.current.AllFileNums() {
		before[n] = true
	}
	run := func(c *compaction.Compaction) error {
		if err := d.runCompactionLocked(c); err != nil {
			if errors.Is(err, errCompactionAborted) {
				return ErrClosed
			}
			err = wrapf(err, "compaction")
			d.setBGErrorLocked(err)
			return err
		}
		return nil
	}
	for level := 0; level < NumLevels-1; level++ {
		// Stop above the deepest level holding anything below this one.
		deeper := false
		for l := level + 1; l < NumLevels; l++ {
			if d.vs.current.NumFiles(l) > 0 {
				deeper = true
			}
		}
		if level > 0 && !deeper {
			break
		}
		if level == 0 && !deeper && d.vs.current.NumFiles(0) == 0 {
			break
		}
		c := compaction.PickRange(d.vs.current, d.copts, level, start, limit)
		if c == nil {
			continue
		}
		if err := run(c); err != nil {
			return err
		}
	}
	// The deepest level holding data is never an input above: rewrite in
	// place its tables in the range that this call did not just write, so
	// versions and tombstones kept there for snapshots since released are
	// dropped (RocksDB's BottommostLevelCompaction::kForceOptimized).
	bottom := 0
	for l := NumLevels - 1; l > 0; l-- {
		if d.vs.current.NumFiles(l) > 0 {
			bottom = l
			break
		}
	}
	if bottom == 0 {
		return nil
	}
	skip := map[uint64]bool{}
	for {
		for _, n := range d.vs.current.AllFileNums() {
			if !before[n] {
				skip[n] = true
			}
		}
		c := compaction.PickRangeInPlace(d.vs.current, d.copts, bottom, start, limit, skip)
		if c == nil {
			return nil
		}
		if err := run(c); err != nil {
			return err
		}
	}
}
