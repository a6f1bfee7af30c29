package db

import (
	"fmt"
	"log/slog"
	"runtime"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// Defaults used when an Options field is left at its zero value.
const (
	DefaultWriteBufferSize      = 4 << 20
	DefaultBlockSize            = 4 << 10
	DefaultBlockRestartInterval = 16
	DefaultBlockCacheSize       = 8 << 20
	DefaultBloomBitsPerKey      = 10
	DefaultL0CompactionTrigger  = 4
	DefaultL0SlowdownTrigger    = 20
	DefaultL0StopTrigger        = 36
	DefaultLBaseMaxBytes        = 10 << 20
	DefaultLevelMultiplier      = 10
	DefaultTargetFileSize       = 2 << 20
)

// Format is a store's on-disk format: the encoding of its MANIFEST and
// tables (the write-ahead log and the batch encoding are the same in both).
type Format int

const (
	// FormatDefault, Options.Format's zero value, opens an existing store
	// in the format it has and creates a new one in FormatBloomKV.
	FormatDefault Format = iota
	// FormatBloomKV is bloomkv's own format: tables with a properties
	// block, whole-table filters of any filter.Policy, prefix and range
	// filters, range tombstones, and sequence numbers in the MANIFEST.
	// Given for an existing LevelDB-format store, Open converts the store
	// to it, one way: from then on LevelDB and goleveldb cannot open it.
	// The store's existing tables stay as they are (bloomkv reads both
	// table formats); the tables it writes from then on are bloomkv's.
	FormatBloomKV
	// FormatLevelDB is LevelDB's format, as LevelDB 1.x and goleveldb
	// write it: MANIFEST edits with LevelDB's comparator name
	// ("leveldb.BytewiseComparator") and new-file records, tables named
	// NNNNNN.ldb with LevelDB's footer, CRC-32C block checksums and
	// filter block ("filter.leveldb.BuiltinBloomFilter2"), and logs
	// without bloomkv's header and end-of-log records. A store in it stays
	// readable by LevelDB 1.23 and goleveldb. Given for a new store, Open
	// creates the store in it; given for an existing bloomkv-format store,
	// Open refuses (ErrInvalidOptions): that conversion is not offered.
	// A LevelDB-format store cannot hold range tombstones (DeleteRange is
	// refused with ErrInvalidArgument), nor prefix or range filters
	// (Options.Prefix and RangeFilter are refused), and its filters are
	// LevelDB's Bloom filter (FilterPolicy nil, filter.None or
	// filter.NewLevelDBBloomPolicy; FilterBudgetBitsPerKey picks its bits
	// per key by level).
	FormatLevelDB
)

// String returns "default", "bloomkv" or "leveldb".
func (f Format) String() string {
	switch f {
	case FormatDefault:
		return "default"
	case FormatBloomKV:
		return "bloomkv"
	case FormatLevelDB:
		return "leveldb"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Options configure a DB. A nil *Options, and every zero field, means the
// documented default. Open rejects out-of-range values with an error
// wrapping ErrInvalidOptions.
type Options struct {
	// Format is the on-disk format: FormatDefault (the default) keeps an
	// existing store's format and creates new stores in bloomkv's;
	// FormatLevelDB creates a store LevelDB and goleveldb can open;
	// FormatBloomKV converts an existing LevelDB-format store to bloomkv's
	// format (one way). See Format.
	Format Format

	// FilterPolicy builds the filter block of every table written and
	// decodes the filters of tables read. nil means the default, a Bloom
	// filter of 10 bits per key (filter.NewBloomPolicy(10)); filter.None
	// writes tables without a filter.
	FilterPolicy filter.Policy

	// Prefix, when set, makes every table's filter answer for the
	// prefixes of its keys too (filter.FixedPrefix, filter.DelimitedPrefix
	// or an extractor of your own), so an iterator whose bounds lie within
	// one prefix (PrefixBounds(p), or any [lower, upper) inside it) skips
	// each table whose filter says it holds no key with that prefix,
	// without reading its index or blocks. Get keeps using the whole-key
	// filter. Tables written without it, or with an extractor of another
	// name, are not prefix-filtered, never answered wrongly. Default nil:
	// no prefix filtering. The filter grows by bits per key for each
	// distinct prefix; with filter.None there is nothing to add them to.
	Prefix filter.Prefix

	// RangeFilter, when set, gives every table written a range filter
	// (filter.NewGrafiteRangePolicy), and an iterator with both bounds
	// asks each table's range filter whether any of its keys lies in
	// [LowerBound, UpperBound) before reading anything of the table, so a
	// short empty range costs no block read even without a common prefix.
	// Tables written without it (or with another policy) are read as
	// before. Default nil: no range filter.
	RangeFilter filter.RangePolicy

	// WriteBufferSize is how many bytes the memtable holds before it is
	// frozen and flushed to a level-0 table. Default 4 MiB; at least 1 KiB,
	// at most MaxWriteBufferSize (1 GiB).
	WriteBufferSize int

	// DisableMemTableFilter makes reads search the memtables' skiplists
	// for every key. Default false: each memtable keeps a filter of its
	// user keys, one bit per 2 bytes of WriteBufferSize (256 KiB beside a
	// 4 MiB memtable), and a read (Get, MultiGet, ExplainGet) searches a
	// memtable only when its filter says the key may be there. A search
	// of a full 4 MiB memtable costs about 0.7 µs, most of a read of a key
	// the memtable does not hold; the filter check costs a hash of the key
	// (shared with the tables' Bloom filters) and one memory read, and a
	// write pays one more hash and one atomic OR. Metrics.MemTableFilter
	// counts the checks.
	DisableMemTableFilter bool

	// BlockSize is the target uncompressed size of a table's data blocks.
	// Default 4 KiB; at most 256 MiB.
	BlockSize int

	// BlockRestartInterval is the number of keys between restart points of
	// a data block's prefix compression. Default 16; at most 65,536.
	BlockRestartInterval int

	// BlockCacheSize is the capacity in bytes of the cache of uncompressed
	// data blocks shared by all tables. Default 8 MiB; DisableBlockCache
	// turns it off.
	BlockCacheSize int64

	// DisableBlockCache makes every data block read come from the file.
	DisableBlockCache bool

	// DisableCompression stores data blocks uncompressed. By default a block
	// is stored snappy-compressed when that saves at least 12.5%.
	DisableCompression bool

	// ParanoidChecks makes Open verify the checksum of every block of every
	// table and fail on any corruption in the WAL, instead of dropping the
	// damaged records and reporting them in the LOG. Default false.
	ParanoidChecks bool

	// ErrorIfExists makes Open fail with ErrDBExists if the store exists.
	ErrorIfExists bool

	// ErrorIfMissing makes Open fail with ErrDBMissing instead of creating
	// a new store. Default false: Open creates the directory and the store.
	ErrorIfMissing bool

	// ReadOnly opens the store for reading only, changing nothing in its
	// directory. Default false. The store must exist (ErrDBMissing
	// otherwise; the directory is never created). The write-ahead logs are
	// replayed into a memtable in memory, so every acknowledged write is
	// visible, but no table, log, MANIFEST, CURRENT or LOG file is written
	// or removed, and nothing is ever flushed or compacted: Put, Delete,
	// Write, Flush and CompactRange fail with ErrReadOnly; events go to
	// Logger only. Read-only opens take a shared lock on LOCK, so any
	// number of them (in this process and in others) share a store, while
	// a read-write DB and a read-only one exclude each other (ErrLocked).
	// A store without a LOCK file (say, a copy) is opened without a lock,
	// and so is one whose LOCK cannot be opened for lack of permission: a
	// writer that opens it meanwhile is then not kept out. The logs'
	// writes stay in memory while the DB is open.
	ReadOnly bool

	// LevelFilterPolicies sets a filter policy per level: entry i is used
	// for the tables written to level i (flushes write level 0). A missing
	// or nil entry means FilterPolicy; filter.None means no filter for that
	// level. Tables keep the filter they were written with: readers pick
	// the decoder by the policy name stored in each table.
	LevelFilterPolicies []filter.Policy

	// FilterBudgetBitsPerKey, when positive, replaces FilterPolicy and
	// LevelFilterPolicies with Bloom filters whose bits per key differ by
	// level, chosen to minimize the expected number of data blocks an
	// absent-key lookup reads for that total filter memory (Dayan et al.,
	// "Monkey", SIGMOD 2017): each level's false-positive rate is made
	// proportional to its share of the data, so the small upper levels get
	// many bits per key and the largest level fewer. The total filter
	// memory stays about FilterBudgetBitsPerKey × keys / 8 bytes. Default 0
	// (off).
	FilterBudgetBitsPerKey float64

	// L0CompactionTrigger is the number of level-0 tables that starts a
	// compaction into level 1. Default 4.
	L0CompactionTrigger int
	// L0SlowdownWritesTrigger is the number of level-0 tables at which each
	// write is delayed by 1 ms to let compaction catch up. Default 20.
	//
	// The defaults are RocksDB's (20 and 36), not LevelDB's (8 and 12):
	// with random keys every level-0 compaction rewrites all of level 1,
	// so letting more level-0 tables gather makes each rewrite carry more
	// new data. Measured on 1M random overwrites (kvbench --num=1000000
	// --benchmarks=fillrandom,overwrite): 8/12 delayed 4,644 writes by
	// 1 ms each and ran at 8.8 us per write with write amplification 2.90;
	// 20/36 delayed 89 and ran at 4.4 us with 1.84. The price is up to
	// that many more tables for a read to consult while writes outrun
	// compaction: a filter probe each for Get, a seek each for iterators.
	L0SlowdownWritesTrigger int
	// L0StopWritesTrigger is the number of level-0 tables at which writes
	// wait for compaction. Default 36.
	L0StopWritesTrigger int
	// LBaseMaxBytes is level 1's target size. Default 10 MiB (LevelDB's):
	// every level-0 compaction rewrites the part of level 1 its tables
	// span, which under random writes is all of it, so a small level 1
	// keeps those compactions short. At 10,000,000 random writes, 64 MiB
	// took 1.8x longer (BENCHMARKS.md). At most 1 TiB.
	LBaseMaxBytes int64
	// LevelMultiplier is how many times larger each level's target is than
	// the one above. Default 10; at least 2, at most 100.
	LevelMultiplier int
	// TargetFileSize is the size at which compaction splits its output
	// tables. Default 2 MiB; at most 1 TiB.
	TargetFileSize int64
	// DisableMmapReads makes tables be read with one ReadAt (a system call)
	// per data block instead of through read-only memory maps. Default
	// false: where the file system supports it (the operating system's,
	// on Unix) every open table is mapped, as LevelDB does on 64-bit
	// systems, and a block-cache miss decodes the block straight from the
	// page cache. Mapping costs address space, not memory; a device error
	// under a mapping is returned as the read's error. At most 16,384
	// tables are mapped at once (the rest use ReadAt), and none on 32-bit
	// systems.
	DisableMmapReads bool
	// MaxOpenFiles bounds the file descriptors held by tables read with
	// ReadAt (with DisableMmapReads, where the file system cannot map, or
	// past the tables the store maps): each keeps its descriptor while it
	// is among the MaxOpenFiles most recently read and reopens it on the
	// next read after that (LevelDB's and Pebble's max_open_files). A
	// mapped table holds no descriptor at all. Default: 1,000, or half the
	// process's soft limit on open files (RLIMIT_NOFILE) when that is
	// lower, and at least 16. The bound is soft: a read finding every
	// descriptor busy opens one more rather than wait.
	MaxOpenFiles int
	// MultiGetParallelism is the most goroutines, the caller's included,
	// that one MultiGet reads data blocks with. A key that passes its
	// table's filter costs a block read (from the block cache, or a
	// checksum and decompression of a block from the file), most of a
	// present key's lookup; a MultiGet with at least 16 such keys lets
	// helper goroutines take some, so a batch's reads overlap on idle
	// processors. The work done is the same; it is spread.
	//
	// The DB starts its helpers (this bound less one) at the first
	// MultiGet that can use them and stops them at Close. Between
	// MultiGets a helper polls for the next one, yielding its processor
	// every few looks, for about as long as waking it has been taking
	// (5 to 100 µs), then sleeps until a MultiGet wakes it: so
	// MultiGets that follow one another find their helpers awake, at the
	// price of that much processor time after each. A MultiGet wakes at
	// most one sleeping helper per 8 keys to read.
	//
	// A helper saves time only on a processor that would otherwise be
	// idle; on one taken by another thread it takes the processor from
	// that thread, often its caller (measured: present keys 0.6–0.8× a
	// loop of Get with helpers, 1.1× without, with three processes
	// spinning on two processors; BENCHMARKS.md). So on Linux a MultiGet
	// reads alone while the machine's runnable threads, sampled from
	// /proc/loadavg every 10 ms and averaged, the helpers left out, are at
	// least as many as its processors (the file stays open, one descriptor
	// for the process, from the first MultiGet that could use helpers).
	// Elsewhere, set this to 1 on a machine whose processors are busy.
	//
	// Default 0: GOMAXPROCS when the store is opened, at most 8. 1 keeps
	// every read in the calling goroutine and starts no helper. At most
	// 256: Open refuses more with ErrInvalidOptions.
	MultiGetParallelism int
	// DisableMmapWAL makes the write-ahead log be appended with one write
	// system call per commit group. Default false: where the file system
	// supports it (the operating system's, on Linux) the log is written
	// through a shared memory map of a file preallocated a megabyte at a
	// time, so a commit copies its record into the page cache without a
	// system call. The guarantees do not change: a write survives a crash
	// of the process once it returns, and a machine crash once it returns
	// with Sync.
	DisableMmapWAL bool
	// DisableAutomaticCompactions turns background compactions off (for
	// tests and bulk loads); CompactRange still works. Level 0 then grows
	// without bound and writes are never stopped for it.
	DisableAutomaticCompactions bool

	// Logger, if set, also receives the events written to the store's LOG
	// file (flushes, recoveries, errors).
	Logger *slog.Logger

	// FS is the file system the store lives on. nil (the default) means
	// the operating system's, vfs.Default. Package vfs also has an
	// in-memory one (vfs.NewMem, whose CrashClone shows what a machine
	// crash could leave) and a fault injector (vfs.NewFaultFS), for tests
	// of programs that embed the store.
	FS vfs.FS
}

// WriteOptions control a single write.
type WriteOptions struct {
	// Sync makes the write durable before it returns: its WAL record is
	// fsynced, so it survives a machine crash. Without Sync a write
	// survives a crash of the process but may be lost if the machine fails.
	Sync bool
}

// ReadOptions control a single read or iterator.
type ReadOptions struct {
	// Snapshot, if set, makes the read see the store as it was when the
	// snapshot was taken. nil reads the latest state.
	Snapshot *Snapshot

	// LowerBound and UpperBound bound an iterator to the keys k with
	// LowerBound <= k < UpperBound; nil means unbounded on that side (the
	// default). The iterator never returns a key outside them, in either
	// direction, and never reads a table, nor a data block, whose keys all
	// lie outside them: a bounded scan of a narrow range reads only what
	// the range holds. An empty or inverted range (LowerBound >=
	// UpperBound) is an iterator with no keys. NewIterator copies them.
	// PrefixBounds gives the bounds of the keys that start with a prefix.
	// Get and MultiGet ignore them.
	LowerBound, UpperBound []byte
}

// PrefixBounds returns the bounds of the keys that start with prefix, for
// ReadOptions.LowerBound and UpperBound: lower is prefix and upper the
// smallest key greater than every key with the prefix (nil, unbounded,
// when prefix is empty or all 0xff bytes).
func PrefixBounds(prefix []byte) (lower, upper []byte) {
	lower = append([]byte{}, prefix...)
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			upper = append([]byte{}, prefix[:i+1]...)
			upper[i]++
			return lower, upper
		}
	}
	return lower, nil
}

// Upper limits of options, besides MaxWriteBufferSize: they keep level
// targets from overflowing (1 TiB × 100^5 < 2^63) and blocks within what
// the table format decodes.
const (
	// maxDefaultMultiGetWorkers caps MultiGetParallelism's default, and
	// maxMultiGetParallelism the option (its helpers are goroutines the
	// DB keeps).
	maxDefaultMultiGetWorkers = 8
	maxMultiGetParallelism    = 256
	maxBlockRestartInterval   = 1 << 16
	maxLevelMultiplier        = 100
	maxLevelBytes             = 1 << 40
	maxTargetFileSize         = 1 << 40
)

// resolved holds Options with every default filled in.
type resolved struct {
	Options
	filterPolicy filter.Policy // nil when filters are off
	prefixName   string        // Prefix.Name(), asked once: iterators compare it with each table's
	maxOpenFiles int           // MaxOpenFiles, or its default
	// multiGetWorkers is MultiGetParallelism, or its default.
	multiGetWorkers int
}

func (o *Options) resolve() (*resolved, error) {
	var r resolved
	if o != nil {
		r.Options = *o
	}
	bad := func(format string, args ...any) (*resolved, error) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case r.WriteBufferSize < 0:
		return bad("WriteBufferSize %d is negative", r.WriteBufferSize)
	case r.BlockSize < 0:
		return bad("BlockSize %d is negative", r.BlockSize)
	case r.BlockRestartInterval < 0:
		return bad("BlockRestartInterval %d is negative", r.BlockRestartInterval)
	case r.MaxOpenFiles < 0:
		return bad("MaxOpenFiles %d is negative", r.MaxOpenFiles)
	case r.MultiGetParallelism < 0:
		return bad("MultiGetParallelism %d is negative", r.MultiGetParallelism)
	case r.MultiGetParallelism > maxMultiGetParallelism:
		return bad("MultiGetParallelism %d is above %d", r.MultiGetParallelism, maxMultiGetParallelism)
	case r.BlockCacheSize < 0:
		return bad("BlockCacheSize %d is negative (set DisableBlockCache to turn the cache off)", r.BlockCacheSize)
	case r.ErrorIfExists && r.ErrorIfMissing:
		return bad("ErrorIfExists and ErrorIfMissing are both set")
	case r.Prefix != nil && r.Prefix.Name() == "":
		return bad("Prefix has an empty name")
	case r.ReadOnly && r.ErrorIfExists:
		return bad("ReadOnly and ErrorIfExists are both set (a read-only open needs an existing store)")
	case r.L0CompactionTrigger < 0 || r.L0SlowdownWritesTrigger < 0 || r.L0StopWritesTrigger < 0:
		return bad("level-0 triggers must not be negative")
	case r.LBaseMaxBytes < 0 || r.TargetFileSize < 0:
		return bad("LBaseMaxBytes and TargetFileSize must not be negative")
	case r.LevelMultiplier < 0 || r.LevelMultiplier == 1:
		return bad("LevelMultiplier %d must be at least 2", r.LevelMultiplier)
	case r.WriteBufferSize > MaxWriteBufferSize:
		return bad("WriteBufferSize %d is above MaxWriteBufferSize (%d)", r.WriteBufferSize, MaxWriteBufferSize)
	case r.BlockSize > sstable.MaxBlockSize:
		return bad("BlockSize %d is above the maximum of %d", r.BlockSize, sstable.MaxBlockSize)
	case r.BlockRestartInterval > maxBlockRestartInterval:
		return bad("BlockRestartInterval %d is above the maximum of %d", r.BlockRestartInterval, maxBlockRestartInterval)
	case r.LevelMultiplier > maxLevelMultiplier:
		return bad("LevelMultiplier %d is above the maximum of %d", r.LevelMultiplier, maxLevelMultiplier)
	case r.LBaseMaxBytes > maxLevelBytes || r.TargetFileSize > maxTargetFileSize:
		return bad("LBaseMaxBytes %d or TargetFileSize %d is above its maximum (%d, %d)", r.LBaseMaxBytes, r.TargetFileSize, int64(maxLevelBytes), int64(maxTargetFileSize))
	case r.FilterBudgetBitsPerKey < 0 || r.FilterBudgetBitsPerKey > 100:
		return bad("FilterBudgetBitsPerKey %g is outside [0, 100]", r.FilterBudgetBitsPerKey)
	case len(r.LevelFilterPolicies) > NumLevels:
		return bad("LevelFilterPolicies has %d entries; there are %d levels", len(r.LevelFilterPolicies), NumLevels)
	case r.Format < FormatDefault || r.Format > FormatLevelDB:
		return bad("Format %d is not a format", int(r.Format))
	}
	for i, p := range r.LevelFilterPolicies {
		if p != nil {
			if err := filter.Validate(p); err != nil {
				return bad("LevelFilterPolicies[%d]: %v", i, err)
			}
		}
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&r.L0CompactionTrigger, DefaultL0CompactionTrigger)
	def(&r.L0SlowdownWritesTrigger, max(DefaultL0SlowdownTrigger, r.L0CompactionTrigger))
	def(&r.L0StopWritesTrigger, max(DefaultL0StopTrigger, r.L0SlowdownWritesTrigger))
	def(&r.LevelMultiplier, DefaultLevelMultiplier)
	if r.LBaseMaxBytes == 0 {
		r.LBaseMaxBytes = DefaultLBaseMaxBytes
	}
	if r.TargetFileSize == 0 {
		r.TargetFileSize = DefaultTargetFileSize
	}
	if r.L0SlowdownWritesTrigger < r.L0CompactionTrigger || r.L0StopWritesTrigger < r.L0SlowdownWritesTrigger {
		return bad("level-0 triggers must grow: compaction %d <= slowdown %d <= stop %d",
			r.L0CompactionTrigger, r.L0SlowdownWritesTrigger, r.L0StopWritesTrigger)
	}
	if r.WriteBufferSize == 0 {
		r.WriteBufferSize = DefaultWriteBufferSize
	}
	if r.WriteBufferSize < 64<<10 {
		// Tests use small buffers; anything below a block makes no sense.
		if r.WriteBufferSize < 1<<10 {
			return bad("WriteBufferSize %d is below the minimum of 1 KiB", r.WriteBufferSize)
		}
	}
	if r.BlockSize == 0 {
		r.BlockSize = DefaultBlockSize
	}
	if r.BlockRestartInterval == 0 {
		r.BlockRestartInterval = DefaultBlockRestartInterval
	}
	if r.BlockCacheSize == 0 {
		r.BlockCacheSize = DefaultBlockCacheSize
	}
	if r.FS == nil {
		r.FS = vfs.Default
	}
	if r.ReadOnly {
		r.ErrorIfMissing = true
		r.DisableAutomaticCompactions = true // a read-only DB never compacts
	}
	switch {
	case r.FilterPolicy == nil:
		r.filterPolicy = filter.NewBloomPolicy(DefaultBloomBitsPerKey)
	case filter.IsNone(r.FilterPolicy):
		r.filterPolicy = nil
	default:
		if err := filter.Validate(r.FilterPolicy); err != nil {
			return bad("FilterPolicy: %v", err)
		}
		r.filterPolicy = r.FilterPolicy
	}
	if r.Prefix != nil {
		r.prefixName = r.Prefix.Name()
	}
	if r.Format == FormatLevelDB {
		if err := r.checkLevelDB(); err != nil {
			return nil, err
		}
	}
	r.maxOpenFiles = r.MaxOpenFiles
	if r.maxOpenFiles == 0 {
		r.maxOpenFiles = defaultMaxOpenFiles()
	}
	r.multiGetWorkers = r.MultiGetParallelism
	if r.multiGetWorkers == 0 {
		r.multiGetWorkers = min(runtime.GOMAXPROCS(0), maxDefaultMultiGetWorkers)
	}
	return &r, nil
}

// checkLevelDB refuses the options a LevelDB-format store cannot honour:
// its tables carry only LevelDB's Bloom filter and no prefix or range
// filter. A read-only DB writes no table, so it is not refused.
func (r *resolved) checkLevelDB() error {
	if r.ReadOnly {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: a LevelDB-format store: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
	}
	levelDBOK := func(p filter.Policy) bool {
		return p == nil || filter.IsNone(p) || p.Name() == filter.LevelDBBloomPolicyName
	}
	switch {
	case r.Prefix != nil:
		return bad("its tables cannot hold a prefix filter (Options.Prefix %q); convert the store with Format: FormatBloomKV", r.prefixName)
	case r.RangeFilter != nil:
		return bad("its tables cannot hold a range filter (Options.RangeFilter); convert the store with Format: FormatBloomKV")
	case !levelDBOK(r.FilterPolicy):
		return bad("its tables' filter is LevelDB's Bloom filter; FilterPolicy %q is not (use nil or filter.NewLevelDBBloomPolicy)", r.FilterPolicy.Name())
	}
	for i, p := range r.LevelFilterPolicies {
		if !levelDBOK(p) {
			return bad("LevelFilterPolicies[%d] %q is not LevelDB's Bloom filter", i, p.Name())
		}
	}
	return nil
}
