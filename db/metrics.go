package db

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// NumLevels is the number of levels of the tree: 7 (L0 to L6), as in
// LevelDB.
const NumLevels = manifest.NumLevels

// counters are the DB's running totals, updated with atomics.
type counters struct {
	levels      [NumLevels]levelCounters
	gets        base.Counter
	walBytes    atomic.Int64
	userBytes   atomic.Int64
	walSyncs    atomic.Int64
	writeNanos  atomic.Int64
	writeStalls atomic.Int64
	flushes     atomic.Int64
	flushBytes  atomic.Int64

	writeSlowdowns  atomic.Int64
	compactions     atomic.Int64
	compactionBytes atomic.Int64
	trivialMoves    atomic.Int64
	coveredDropped  atomic.Int64
	tablesDeleted   atomic.Int64

	// The memtable filters' checks by their answer, and the positives
	// that found the key (Metrics.MemTableFilter).
	memFilterPositives     base.Counter
	memFilterNegatives     base.Counter
	memFilterTruePositives base.Counter
}

type levelCounters struct {
	// Counted by every Get, from any number of goroutines: striped. The
	// negatives ("useful") are checks - positives, so an absent key's
	// filter check costs one count, not two.
	filterChecks        base.Counter
	filterPositives     base.Counter
	filterTruePositives base.Counter

	compactions        atomic.Int64 // compactions writing into this level
	compactionBytesIn  atomic.Int64 // bytes read by them
	compactionBytesOut atomic.Int64 // bytes they wrote here
	// The prefix and range filter checks of iterators, counted by their
	// answer (checks are the sum): one atomic add a check.
	prefixPassed  atomic.Int64 // checks that let the table through
	prefixSkipped atomic.Int64 // checks that skipped it
	rangePassed   atomic.Int64
	rangeSkipped  atomic.Int64
	_             [8]byte // keep these off the next level's line
}

// FilterMetrics count what the per-table filters did for Get.
type FilterMetrics struct {
	// Checks is how many times a filter was asked about a key.
	Checks int64
	// Useful is how many checks said "not there": each saved an index
	// lookup and a data block read.
	Useful int64
	// Positives is how many checks said "may be there".
	Positives int64
	// TruePositives is how many positives found the key in the table.
	TruePositives int64
}

// FalsePositiveRate is the measured rate at which a filter said "may be
// there" for a key the table did not hold:
// (Positives - TruePositives) / (Checks - TruePositives). It is 0 before any
// check of an absent key.
func (f FilterMetrics) FalsePositiveRate() float64 {
	absent := f.Checks - f.TruePositives
	if absent <= 0 {
		return 0
	}
	return float64(f.Positives-f.TruePositives) / float64(absent)
}

func (f *FilterMetrics) add(o FilterMetrics) {
	f.Checks += o.Checks
	f.Useful += o.Useful
	f.Positives += o.Positives
	f.TruePositives += o.TruePositives
}

// LevelMetrics describe one level of the tree.
type LevelMetrics struct {
	// Files and Bytes are the tables in the level and their total size.
	Files int
	Bytes uint64
	// Filter counts the filter checks of Gets in this level's tables.
	Filter FilterMetrics
	// PrefixFilter counts the prefix filter checks of iterators bounded
	// to one prefix (Options.Prefix): Checks, Useful (tables skipped) and
	// Positives. TruePositives stays 0: telling a true positive from a
	// false one takes the block read the filter exists to avoid.
	PrefixFilter FilterMetrics
	// RangeFilter counts the range filter checks (Options.RangeFilter) of
	// iterators with both bounds, as PrefixFilter does.
	RangeFilter FilterMetrics
	// Compactions counts the compactions that wrote into this level;
	// CompactionBytesIn and CompactionBytesOut are what they read (from
	// this level and the one above) and wrote. Trivial moves are not
	// counted.
	Compactions        int64
	CompactionBytesIn  int64
	CompactionBytesOut int64
}

// Metrics is a snapshot of the DB's state and counters. Counters run from
// Open; sizes are current.
type Metrics struct {
	// Levels holds per-level tables and filter counters.
	Levels [NumLevels]LevelMetrics
	// Filter sums Levels[*].Filter, PrefixFilter Levels[*].PrefixFilter
	// and RangeFilter Levels[*].RangeFilter.
	Filter       FilterMetrics
	PrefixFilter FilterMetrics
	RangeFilter  FilterMetrics

	// MemTableFilter counts what the memtables' filters did for reads
	// (Options.DisableMemTableFilter): a check said "not there" (Useful)
	// and saved a search of the memtable, or let the key through
	// (Positives), and the search found it (TruePositives) or not.
	MemTableFilter FilterMetrics
	// MemTableFilterBytes is the size of the memtables' filters.
	MemTableFilterBytes int64

	// Gets counts calls of Get.
	Gets int64
	// DataBlocksRead and DataBlockBytesRead count the data blocks that
	// user reads (Get and iterators) read from table files: block cache
	// misses, or every block read without a cache. Compactions' reads are
	// not in them.
	DataBlocksRead     int64
	DataBlockBytesRead int64
	// CompactionBlocksRead and CompactionBlockBytesRead count the data
	// blocks compactions read from table files (they bypass the block
	// cache).
	CompactionBlocksRead     int64
	CompactionBlockBytesRead int64
	// BlockCacheHits and BlockCacheMisses count block cache lookups.
	BlockCacheHits   int64
	BlockCacheMisses int64
	// BlockKeyIndexSkips counts the lookups of a cached data block (by
	// Get and MultiGet) that the block's key index answered without
	// searching the block: the key is not in it, as for most of a
	// filter's false positives. A data block a point lookup reads into
	// the cache for a key it does not hold gets the index (8 bytes an
	// entry, in BlockCacheSize).
	BlockKeyIndexSkips int64
	// BlockCacheSize and BlockCacheCapacity are the bytes of blocks cached
	// and the cache's limit.
	BlockCacheSize     int64
	BlockCacheCapacity int64

	// TablesOpen is the number of tables held open by the table cache:
	// usually the tables of the tree (the sum of Levels[*].Files), plus
	// tables no longer in the tree that an iterator, a snapshot's reads or
	// a compaction still use, until they are deleted. FilterBytes and
	// IndexBytes are the filter and index bytes those tables keep in
	// memory (the index bytes include the index's search windows, 8 bytes
	// a data block).
	TablesOpen  int
	FilterBytes int64
	IndexBytes  int64

	// MemTableBytes is the active memtable's size; ImmutableMemTables is 1
	// while a frozen memtable waits for its flush.
	MemTableBytes      int64
	ImmutableMemTables int

	// UserBytesWritten is the key and value bytes of the writes applied
	// by Put, Delete and Write (a deletion counts its key).
	UserBytesWritten int64
	// WALBytesWritten and WALSyncs count write-ahead log appends (batch
	// records, before the log's block framing) and fsyncs.
	WALBytesWritten int64
	WALSyncs        int64
	// WriteStalls counts waits of writers for a flush, or for compaction to
	// bring level 0 under Options.L0StopWritesTrigger; WriteSlowdowns
	// counts the 1 ms delays given to writes while level 0 is past
	// Options.L0SlowdownWritesTrigger.
	WriteStalls    int64
	WriteSlowdowns int64
	// Flushes and FlushBytesWritten count memtable flushes and the table
	// bytes they wrote.
	Flushes           int64
	FlushBytesWritten int64
	// CompactionBytesWritten and Compactions count compaction output.
	CompactionBytesWritten int64
	Compactions            int64
	// RangeTombstones counts the range tombstones (DeleteRange) in the
	// tables of the tree, MemTableRangeTombstones those in the memtables.
	// Reads check a key against them only when there is at least one.
	// CoveredEntriesDropped counts the entries compactions dropped because
	// a range tombstone deleted them for every snapshot.
	RangeTombstones         int64
	MemTableRangeTombstones int64
	CoveredEntriesDropped   int64

	// TrivialMoves counts tables moved down a level without rewriting;
	// TablesDeleted counts obsolete tables removed from disk.
	TrivialMoves  int64
	TablesDeleted int64

	// BackgroundError is the sticky error that makes writes fail, if any.
	BackgroundError error
}

// WriteAmplification is the bytes the store wrote to files per byte the
// user wrote, the meaning LevelDB and RocksDB users know: (WAL bytes +
// table bytes written by flushes + table bytes written by compactions) /
// UserBytesWritten. It counts since Open and is 0 before any write.
// Compression can bring the table terms below the user's bytes, but the
// WAL term alone is at least 1 (each write's key and value are logged
// uncompressed).
func (m *Metrics) WriteAmplification() float64 {
	if m.UserBytesWritten == 0 {
		return 0
	}
	return float64(m.WALBytesWritten+m.FlushBytesWritten+m.CompactionBytesWritten) / float64(m.UserBytesWritten)
}

// BlockCacheHitRate is hits / (hits + misses), 0 before any lookup.
func (m *Metrics) BlockCacheHitRate() float64 {
	if t := m.BlockCacheHits + m.BlockCacheMisses; t > 0 {
		return float64(m.BlockCacheHits) / float64(t)
	}
	return 0
}

// Metrics returns a snapshot of the DB's metrics.
func (d *DB) Metrics() *Metrics {
	m := &Metrics{}
	rs := d.rs.Load()
	if rs != nil {
		for l := 0; l < NumLevels; l++ {
			m.Levels[l].Files = rs.v.NumFiles(l)
			m.Levels[l].Bytes = rs.v.LevelBytes(l)
		}
		m.MemTableBytes = int64(rs.mem.ApproximateMemoryUsage())
		m.MemTableFilterBytes = int64(rs.mem.FilterBytes())
		m.MemTableRangeTombstones = int64(rs.mem.NumRangeDels())
		if rs.imm != nil {
			m.ImmutableMemTables = 1
			m.MemTableFilterBytes += int64(rs.imm.FilterBytes())
			m.MemTableRangeTombstones += int64(rs.imm.NumRangeDels())
		}
		for _, files := range rs.v.Files {
			for _, f := range files {
				m.RangeTombstones += int64(f.RangeDels)
			}
		}
	}
	for l := range m.Levels {
		c := &d.m.levels[l]
		// Positives before checks: a check counted between the two loads
		// then shows as a negative, never as a negative count.
		positives := c.filterPositives.Load()
		f := FilterMetrics{
			Checks:        c.filterChecks.Load(),
			Positives:     positives,
			TruePositives: c.filterTruePositives.Load(),
		}
		f.Useful = max(f.Checks-f.Positives, 0)
		m.Levels[l].Filter = f
		m.Filter.add(f)
		pf := FilterMetrics{Useful: c.prefixSkipped.Load(), Positives: c.prefixPassed.Load()}
		pf.Checks = pf.Useful + pf.Positives
		m.Levels[l].PrefixFilter = pf
		m.PrefixFilter.add(pf)
		rf := FilterMetrics{Useful: c.rangeSkipped.Load(), Positives: c.rangePassed.Load()}
		rf.Checks = rf.Useful + rf.Positives
		m.Levels[l].RangeFilter = rf
		m.RangeFilter.add(rf)
		m.Levels[l].Compactions = c.compactions.Load()
		m.Levels[l].CompactionBytesIn = c.compactionBytesIn.Load()
		m.Levels[l].CompactionBytesOut = c.compactionBytesOut.Load()
	}
	mf := FilterMetrics{Useful: d.m.memFilterNegatives.Load(), TruePositives: d.m.memFilterTruePositives.Load()}
	mf.Positives = max(d.m.memFilterPositives.Load(), mf.TruePositives) // loaded after: never fewer
	mf.Checks = mf.Useful + mf.Positives
	m.MemTableFilter = mf
	m.Gets = d.m.gets.Load()
	m.DataBlocksRead = d.stats.DataBlocksRead.Load()
	m.DataBlockBytesRead = d.stats.DataBlockBytesRead.Load()
	m.CompactionBlocksRead = d.stats.CompactionBlocksRead.Load()
	m.CompactionBlockBytesRead = d.stats.CompactionBlockBytesRead.Load()
	m.BlockCacheHits = d.stats.CacheHits.Load()
	m.BlockCacheMisses = d.stats.CacheMisses.Load()
	m.BlockKeyIndexSkips = d.stats.KeyIndexSkips.Load()
	if d.cache != nil {
		m.BlockCacheSize = d.cache.Size()
		m.BlockCacheCapacity = d.cache.Capacity()
	}
	if d.tables != nil {
		m.FilterBytes, m.IndexBytes, m.TablesOpen = d.tables.memory()
	}
	m.WALBytesWritten = d.m.walBytes.Load()
	m.UserBytesWritten = d.m.userBytes.Load()
	m.WALSyncs = d.m.walSyncs.Load()
	m.WriteStalls = d.m.writeStalls.Load()
	m.WriteSlowdowns = d.m.writeSlowdowns.Load()
	m.Compactions = d.m.compactions.Load()
	m.CompactionBytesWritten = d.m.compactionBytes.Load()
	m.TrivialMoves = d.m.trivialMoves.Load()
	m.CoveredEntriesDropped = d.m.coveredDropped.Load()
	m.TablesDeleted = d.m.tablesDeleted.Load()
	m.Flushes = d.m.flushes.Load()
	m.FlushBytesWritten = d.m.flushBytes.Load()
	d.mu.Lock()
	m.BackgroundError = d.bgErr
	d.mu.Unlock()
	return m
}

// String renders the metrics as a table for people: one row per level with
// its files, size, compaction traffic and filter columns, then the totals
// and lines on reads, memory and writes. The table's byte columns share one
// unit, chosen by the largest figure in them.
func (m *Metrics) String() string {
	var b strings.Builder
	var total LevelMetrics
	var rows []int
	for l, lm := range m.Levels {
		total.Files += lm.Files
		total.Bytes += lm.Bytes
		total.Compactions += lm.Compactions
		total.CompactionBytesIn += lm.CompactionBytesIn
		total.CompactionBytesOut += lm.CompactionBytesOut
		if lm.Files != 0 || lm.Filter.Checks != 0 || lm.Compactions != 0 {
			rows = append(rows, l)
		}
	}
	total.Filter = m.Filter
	div, unit := byteScale(max(int64(total.Bytes), total.CompactionBytesIn, total.CompactionBytesOut))
	sizeHdr, readHdr, writtenHdr := "size("+unit+")", "read("+unit+")", "written("+unit+")"
	fmt.Fprintf(&b, "level | files | %9s | compactions | %9s | %12s | filter checks |   useful | positives | true pos | false-pos rate\n",
		sizeHdr, readHdr, writtenHdr)
	fmt.Fprintf(&b, "------+-------+-----------+-------------+-----------+--------------+---------------+----------+-----------+----------+---------------\n")
	row := func(name string, lm LevelMetrics) {
		f := lm.Filter
		fmt.Fprintf(&b, "%5s | %5d | %9.1f | %11d | %9.1f | %12.1f | %13d | %8d | %9d | %8d | %13.4f%%\n",
			name, lm.Files, float64(lm.Bytes)/div, lm.Compactions, float64(lm.CompactionBytesIn)/div,
			float64(lm.CompactionBytesOut)/div, f.Checks, f.Useful, f.Positives, f.TruePositives, 100*f.FalsePositiveRate())
	}
	for _, l := range rows {
		row(fmt.Sprintf("L%d", l), m.Levels[l])
	}
	row("total", total)
	fmt.Fprintf(&b, "reads: %d gets, %d data blocks read (%s) by gets and iterators, %d (%s) by compactions; block cache: %d hits, %d misses (%.1f%% hit), %s of %s; %d block searches skipped by key indexes\n",
		m.Gets, m.DataBlocksRead, humanBytes(m.DataBlockBytesRead), m.CompactionBlocksRead, humanBytes(m.CompactionBlockBytesRead),
		m.BlockCacheHits, m.BlockCacheMisses, 100*m.BlockCacheHitRate(), humanBytes(m.BlockCacheSize), humanBytes(m.BlockCacheCapacity), m.BlockKeyIndexSkips)
	open := fmt.Sprintf("%d tables open", m.TablesOpen)
	if extra := m.TablesOpen - total.Files; extra > 0 {
		open = fmt.Sprintf("%d tables open (%d in the tree, %d no longer in it but still used by an iterator or compaction)", m.TablesOpen, total.Files, extra)
	}
	fmt.Fprintf(&b, "memory: %s, filters %s, indexes %s, memtable %s (+%d frozen), memtable filters %s\n",
		open, humanBytes(m.FilterBytes), humanBytes(m.IndexBytes), humanBytes(m.MemTableBytes), m.ImmutableMemTables, humanBytes(m.MemTableFilterBytes))
	if mf := m.MemTableFilter; mf.Checks > 0 {
		fmt.Fprintf(&b, "memtable filter: %d checks, %d said not there (no search), %d let through, %d of them found (fp rate %.3f%%)\n",
			mf.Checks, mf.Useful, mf.Positives, mf.TruePositives, 100*mf.FalsePositiveRate())
	}
	fmt.Fprintf(&b, "writes: user %s, WAL %s (%d syncs), %d flushes wrote %s, %d compactions wrote %s (+%d trivial moves), write amp %.2f, %d stalls, %d slowdowns\n",
		humanBytes(m.UserBytesWritten), humanBytes(m.WALBytesWritten), m.WALSyncs, m.Flushes, humanBytes(m.FlushBytesWritten),
		m.Compactions, humanBytes(m.CompactionBytesWritten), m.TrivialMoves, m.WriteAmplification(), m.WriteStalls, m.WriteSlowdowns)
	if pf := m.PrefixFilter; pf.Checks > 0 {
		fmt.Fprintf(&b, "prefix filter: %d checks by bounded iterators, %d tables skipped, %d let through\n", pf.Checks, pf.Useful, pf.Positives)
	}
	if rf := m.RangeFilter; rf.Checks > 0 {
		fmt.Fprintf(&b, "range filter: %d checks by bounded iterators, %d tables skipped, %d let through\n", rf.Checks, rf.Useful, rf.Positives)
	}
	if m.RangeTombstones+m.MemTableRangeTombstones+m.CoveredEntriesDropped > 0 {
		fmt.Fprintf(&b, "range tombstones: %d in tables, %d in memtables; %d covered entries dropped by compactions\n",
			m.RangeTombstones, m.MemTableRangeTombstones, m.CoveredEntriesDropped)
	}
	if m.BackgroundError != nil {
		fmt.Fprintf(&b, "background error: %v\n", m.BackgroundError)
	}
	return b.String()
}

// byteScale picks the unit a column of byte counts up to n is shown in.
func byteScale(n int64) (float64, string) {
	switch {
	case n >= 10<<30:
		return 1 << 30, "GiB"
	case n >= 10<<20:
		return 1 << 20, "MiB"
	}
	return 1 << 10, "KiB"
}

func humanBytes(n int64) string { return base.HumanBytes(n) }
