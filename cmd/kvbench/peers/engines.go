package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/syndtr/goleveldb/leveldb"
	lvlfilter "github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
)

// Engine is what the workloads need of a store. Every engine is opened
// with the same settings (settings): filter bits per key, block cache,
// write buffer, block size; writes are not synced.
type Engine interface {
	// Put writes key=value.
	Put(key, value []byte) error
	// Get looks key up and returns the length of its value.
	Get(key []byte) (n int, found bool, err error)
	// Seek positions a new iterator at the first key >= key and reports
	// whether that is key itself (db_bench's seekrandom).
	Seek(key []byte) (found bool, err error)
	// Scan iterates up to n entries from the first and returns how many
	// it saw and their bytes.
	Scan(n int) (count int, bytes int64, err error)
	// ScanRange iterates every entry of [lo, hi) through a new bounded
	// iterator and returns how many it saw and their bytes.
	ScanRange(lo, hi []byte) (count int, bytes int64, err error)
	// ScanPrefix iterates every entry whose key starts with prefix
	// (--prefix_size bytes) through a new iterator, using the engine's
	// prefix filter if it has one. It is called from one goroutine at a
	// time (seekprefix is single-threaded): the Go engines keep the upper
	// bound in a buffer reused from scan to scan (prefixUpper), so the
	// bounds cost none of them an allocation.
	ScanPrefix(prefix []byte) (count int, bytes int64, err error)
	// ReadCounters returns what the engine has read from its table files
	// since it was opened, as far as it tells: blocks and bytes, -1 for
	// what it does not count.
	ReadCounters() (blocks, bytes int64)
	// Compact compacts the whole key range.
	Compact() error
	// Levels describes the tables per level, for the report.
	Levels() string
	// ReadStats describes what the read path did since the store was
	// opened (filters, block cache), as far as the engine tells.
	ReadStats() string
	// Close closes the store.
	Close() error
}

// settings are the options every engine gets.
type settings struct {
	bloomBits       int
	cacheSize       int64
	writeBufferSize int
	blockSize       int
	// prefixSize is the key prefix length in bytes (0: none, and no
	// seekprefix): each engine's prefix filter, as far as it has one.
	prefixSize int
	// rangeFilterBits is bloomkv's range filter (0: none).
	rangeFilterBits int
	// existing opens a store that is already there (--existing_db):
	// never create one.
	existing bool
	// readOnly opens the existing store read-only where the engine can
	// (--existing_read_only): bloomkv and Pebble (RocksDB always opens an
	// existing store read-only).
	readOnly bool
}

// opener opens (creating if needed) the store in dir.
type opener func(dir string, s settings) (Engine, error)

var engines = map[string]opener{
	"bloomkv":   openBloomKV,
	"goleveldb": openGoLevelDB,
	"pebble":    openPebble,
}

// engineOrder is the order engines run and are reported in; bloomkv comes
// first since the ratios are bloomkv/peer. The C++ engines add themselves
// when built (cppengines.go).
var engineOrder = []string{"bloomkv", "goleveldb", "pebble"}

// cppEngines are the engines written in C++, LevelDB and RocksDB, built
// only with -tags cppengines (and cgo): without the tag they are neither
// listed nor known.
var cppEngines = []string{"leveldb", "rocksdb"}

// checkEngine returns an error for an engine name this build cannot run,
// saying how to build it when it is a C++ engine.
func checkEngine(name string) error {
	switch {
	case engines[name] != nil:
		return nil
	case slices.Contains(cppEngines, name):
		return fmt.Errorf("engine %q is a C++ engine, built only with cgo and -tags cppengines: apt-get install libleveldb-dev librocksdb-dev, then go run -tags cppengines . (see RESULTS.md, \"C++ engines\")", name)
	}
	return fmt.Errorf("unknown engine %q (have %s)", name, strings.Join(engineOrder, ", "))
}

// versioned is an Engine that can say which version it is.
type versioned interface{ Version() string }

// moduleVersion returns the version of module path this program was built
// with, "" if it cannot tell.
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range bi.Deps {
		if m.Path == path {
			if m.Replace != nil {
				return m.Replace.Path + " " + m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}

// ---- bloomkv ----

type bloomKV struct {
	d     *db.DB
	upper []byte // ScanPrefix's upper bound
}

// compactor is DB.CompactRange; kept as an interface so that this program
// also builds against an engine without it.
type compactor interface {
	CompactRange(start, limit []byte) error
}

func bloomKVHasCompactRange() bool {
	_, ok := any((*db.DB)(nil)).(compactor)
	return ok
}

// newRangePolicy makes bloomkv's range filter of --range_filter_bits (as
// cmd/kvbench's function of the same name does): Grafite.
func newRangePolicy(bitsPerKey int) (filter.RangePolicy, error) {
	return filter.NewGrafiteRangePolicy(bitsPerKey), nil
}

func openBloomKV(dir string, s settings) (Engine, error) {
	o := &db.Options{
		FilterPolicy:    filter.NewBloomPolicy(s.bloomBits),
		WriteBufferSize: s.writeBufferSize,
		BlockSize:       s.blockSize,
		BlockCacheSize:  s.cacheSize,
	}
	if s.bloomBits <= 0 {
		o.FilterPolicy = filter.None
	}
	if s.prefixSize > 0 {
		o.Prefix = filter.FixedPrefix(s.prefixSize)
	}
	if s.rangeFilterBits > 0 {
		rp, err := newRangePolicy(s.rangeFilterBits)
		if err != nil {
			return nil, err
		}
		o.RangeFilter = rp
	}
	if s.existing {
		// A LevelDB-format store (--existing_db): it stays in that format
		// (Options.Format's default keeps a store's format), its filters
		// are LevelDB's Bloom filters, and it can hold no prefix or range
		// filter.
		o.ErrorIfMissing = true
		o.ReadOnly = s.readOnly
		o.FilterPolicy = filter.NewLevelDBBloomPolicy(max(s.bloomBits, 1))
		o.Prefix, o.RangeFilter = nil, nil
	}
	d, err := db.Open(dir, o)
	if err != nil {
		if s.existing {
			// The hook of issue 19 (LevelDB-format stores): a store
			// bloomkv cannot open is reported, and the others go on.
			return nil, fmt.Errorf("bloomkv cannot open this store (LevelDB-format stores: issue 19): %w", err)
		}
		return nil, err
	}
	return &bloomKV{d: d}, nil
}

// Version: bloomkv is the working tree this program was built from.
func (e *bloomKV) Version() string { return "bloomkv (working tree, " + runtime.Version() + ")" }

func (e *bloomKV) Put(k, v []byte) error { return e.d.Put(k, v, nil) }

func (e *bloomKV) Get(k []byte) (int, bool, error) {
	v, err := e.d.Get(k, nil)
	if errors.Is(err, db.ErrNotFound) {
		return 0, false, nil
	}
	return len(v), err == nil, err
}

func (e *bloomKV) Seek(k []byte) (bool, error) {
	it := e.d.NewIterator(nil)
	found := it.Seek(k) && bytes.Equal(it.Key(), k)
	return found, it.Close()
}

func (e *bloomKV) Scan(n int) (int, int64, error) {
	it := e.d.NewIterator(nil)
	var c int
	var b int64
	for ok := it.First(); ok && c < n; ok = it.Next() {
		c++
		b += int64(len(it.Key()) + len(it.Value()))
	}
	return c, b, it.Close()
}

func (e *bloomKV) ScanRange(lo, hi []byte) (int, int64, error) {
	it := e.d.NewIterator(&db.ReadOptions{LowerBound: lo, UpperBound: hi})
	var c int
	var b int64
	for ok := it.First(); ok; ok = it.Next() {
		c++
		b += int64(len(it.Key()) + len(it.Value()))
	}
	return c, b, it.Close()
}

// ScanPrefix bounds the iterator to the prefix: the prefix filter
// (Options.Prefix) and the range filter are asked for each table.
func (e *bloomKV) ScanPrefix(prefix []byte) (int, int64, error) {
	e.upper = prefixUpper(e.upper, prefix)
	return e.ScanRange(prefix, e.upper) // NewIterator copies the bounds
}

func (e *bloomKV) ReadCounters() (int64, int64) {
	m := e.d.Metrics()
	return m.DataBlocksRead, m.DataBlockBytesRead
}

func (e *bloomKV) Compact() error {
	if c, ok := any(e.d).(compactor); ok {
		return c.CompactRange(nil, nil)
	}
	return e.d.Flush()
}

func (e *bloomKV) Levels() string {
	m := e.d.Metrics()
	var parts []string
	for l, lm := range m.Levels {
		if lm.Files > 0 {
			parts = append(parts, fmt.Sprintf("L%d:%d", l, lm.Files))
		}
	}
	return strings.Join(parts, " ")
}

func (e *bloomKV) ReadStats() string {
	m := e.d.Metrics()
	s := fmt.Sprintf("filter checks %d, negatives %d (data block avoided), measured fp rate %.3f%%; block cache hit %.1f%%",
		m.Filter.Checks, m.Filter.Useful, 100*m.Filter.FalsePositiveRate(), 100*m.BlockCacheHitRate())
	if pf := m.PrefixFilter; pf.Checks > 0 {
		s += fmt.Sprintf("; prefix filter checks %d, tables skipped %d", pf.Checks, pf.Useful)
	}
	if rf := m.RangeFilter; rf.Checks > 0 {
		s += fmt.Sprintf("; range filter checks %d, tables skipped %d", rf.Checks, rf.Useful)
	}
	return s
}

func (e *bloomKV) Close() error { return e.d.Close() }

// ---- goleveldb ----

type goLevelDB struct {
	d     *leveldb.DB
	upper []byte // ScanPrefix's upper bound
}

func openGoLevelDB(dir string, s settings) (Engine, error) {
	o := &opt.Options{
		BlockCacheCapacity: int(s.cacheSize),
		WriteBuffer:        s.writeBufferSize,
		BlockSize:          s.blockSize,
	}
	if s.bloomBits > 0 {
		o.Filter = lvlfilter.NewBloomFilter(s.bloomBits)
	}
	if s.existing {
		// Never ReadOnly, not even with --existing_read_only: goleveldb's
		// read-only open fails with "EOF" on a store whose logs hold
		// writes (its recoverJournalRO), as any store closed by goleveldb
		// or LevelDB does. --existing_db gives every engine a private
		// copy, so a read-write open changes nothing that matters.
		o.ErrorIfMissing = true
	}
	d, err := leveldb.OpenFile(dir, o)
	if err != nil {
		return nil, err
	}
	return &goLevelDB{d: d}, nil
}

func (e *goLevelDB) Version() string {
	return "goleveldb " + moduleVersion("github.com/syndtr/goleveldb")
}

func (e *goLevelDB) Put(k, v []byte) error { return e.d.Put(k, v, nil) }

func (e *goLevelDB) Get(k []byte) (int, bool, error) {
	v, err := e.d.Get(k, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return 0, false, nil
	}
	return len(v), err == nil, err
}

func (e *goLevelDB) Seek(k []byte) (bool, error) {
	it := e.d.NewIterator(nil, nil)
	found := it.Seek(k) && bytes.Equal(it.Key(), k)
	it.Release()
	return found, it.Error()
}

func (e *goLevelDB) Scan(n int) (int, int64, error) {
	it := e.d.NewIterator(nil, nil)
	var c int
	var b int64
	for ok := it.First(); ok && c < n; ok = it.Next() {
		c++
		b += int64(len(it.Key()) + len(it.Value()))
	}
	it.Release()
	return c, b, it.Error()
}

func (e *goLevelDB) ScanRange(lo, hi []byte) (int, int64, error) {
	return e.scan(&util.Range{Start: lo, Limit: hi})
}

// ScanPrefix: goleveldb has no prefix filter; util.BytesPrefix only bounds
// the iterator, which reads every table whose key range holds the prefix.
func (e *goLevelDB) ScanPrefix(prefix []byte) (int, int64, error) {
	e.upper = prefixUpper(e.upper, prefix) // util.BytesPrefix's range, without its allocations
	return e.scan(&util.Range{Start: prefix, Limit: e.upper})
}

func (e *goLevelDB) scan(r *util.Range) (int, int64, error) {
	it := e.d.NewIterator(r, nil)
	var c int
	var b int64
	for ok := it.First(); ok; ok = it.Next() {
		c++
		b += int64(len(it.Key()) + len(it.Value()))
	}
	it.Release()
	return c, b, it.Error()
}

// ReadCounters: goleveldb counts bytes read from files (every kind of
// block), not blocks.
func (e *goLevelDB) ReadCounters() (int64, int64) {
	var s leveldb.DBStats
	if err := e.d.Stats(&s); err != nil {
		return -1, -1
	}
	return -1, int64(s.IORead)
}

func (e *goLevelDB) Compact() error { return e.d.CompactRange(util.Range{}) }

func (e *goLevelDB) Levels() string {
	var s leveldb.DBStats
	if err := e.d.Stats(&s); err != nil {
		return err.Error()
	}
	var parts []string
	for l, n := range s.LevelTablesCounts {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("L%d:%d", l, n))
		}
	}
	return strings.Join(parts, " ")
}

func (e *goLevelDB) ReadStats() string {
	var s leveldb.DBStats
	if err := e.d.Stats(&s); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("no filter counters; block cache hit %.1f%%, %d MiB read from tables",
		100*rate(s.BlockCache.HitCount, s.BlockCache.MissCount), s.IORead>>20)
}

func rate(hits, misses int64) float64 {
	if hits+misses == 0 {
		return 0
	}
	return float64(hits) / float64(hits+misses)
}

func (e *goLevelDB) Close() error { return e.d.Close() }

// ---- pebble ----

type pebbleDB struct {
	d     *pebble.DB
	upper []byte // ScanPrefix's upper bound
}

// quietLogger drops pebble's informational messages.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Printf("pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

func openPebble(dir string, s settings) (Engine, error) {
	cache := pebble.NewCache(s.cacheSize)
	defer cache.Unref() // the DB holds its own reference
	o := &pebble.Options{
		Cache:        cache,
		MemTableSize: uint64(s.writeBufferSize),
		Logger:       quietLogger{},
	}
	if s.prefixSize > 0 {
		o.Comparer = prefixComparer(s.prefixSize)
	}
	for i := range o.Levels {
		o.Levels[i].BlockSize = s.blockSize
		if s.bloomBits > 0 {
			o.Levels[i].FilterPolicy = bloom.FilterPolicy(s.bloomBits)
		}
	}
	if s.existing {
		o.ReadOnly, o.ErrorIfNotExists = s.readOnly, true
	}
	d, err := pebble.Open(dir, o)
	if err != nil {
		return nil, err
	}
	return &pebbleDB{d: d}, nil
}

func (e *pebbleDB) Version() string {
	return "pebble " + moduleVersion("github.com/cockroachdb/pebble/v2")
}

func (e *pebbleDB) Put(k, v []byte) error { return e.d.Set(k, v, pebble.NoSync) }

func (e *pebbleDB) Get(k []byte) (int, bool, error) {
	v, closer, err := e.d.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	n := len(v)
	return n, true, closer.Close()
}

func (e *pebbleDB) Seek(k []byte) (bool, error) {
	it, err := e.d.NewIter(nil)
	if err != nil {
		return false, err
	}
	found := it.SeekGE(k) && bytes.Equal(it.Key(), k)
	return found, it.Close()
}

func (e *pebbleDB) Scan(n int) (int, int64, error) {
	it, err := e.d.NewIter(nil)
	if err != nil {
		return 0, 0, err
	}
	var c int
	var b int64
	for ok := it.First(); ok && c < n; ok = it.Next() {
		c++
		b += int64(len(it.Key()) + len(it.Value()))
	}
	return c, b, it.Close()
}

// prefixComparer is Pebble's default comparer with Split returning the
// first n bytes: Pebble's Bloom filters then hold each key's n-byte prefix
// (and only that: Pebble has no filter of whole keys besides), which
// SeekPrefixGE and Get consult.
func prefixComparer(n int) *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Name = fmt.Sprintf("bloomkv.peers.FixedPrefix(%d)", n)
	c.Split = func(k []byte) int { return min(len(k), n) }
	// The smallest prefix key (length <= n) after a prefix key a.
	c.ImmediateSuccessor = func(dst, a []byte) []byte {
		if len(a) < n {
			return append(append(dst, a...), 0)
		}
		for i := len(a) - 1; i >= 0; i-- {
			if a[i] != 0xff {
				dst = append(dst, a[:i+1]...)
				dst[len(dst)-1]++
				return dst
			}
		}
		return append(dst, a...) // all 0xff: no larger prefix key
	}
	return &c
}

func (e *pebbleDB) ScanRange(lo, hi []byte) (int, int64, error) {
	it, err := e.d.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, 0, err
	}
	var c int
	var b int64
	for ok := it.First(); ok; ok = it.Next() {
		c++
		b += int64(len(it.Key()) + len(it.Value()))
	}
	return c, b, it.Close()
}

// ScanPrefix uses SeekPrefixGE, the one iterator call of Pebble that
// consults its (prefix) Bloom filters: a bounded iterator alone reads
// every table whose key range holds the bounds. The bounds are
// db.PrefixBounds', as bloomkv's. UseL6Filters: Pebble's iterators skip
// the filters of level 6, where a compacted store keeps nearly everything,
// unless told otherwise.
func (e *pebbleDB) ScanPrefix(prefix []byte) (int, int64, error) {
	e.upper = prefixUpper(e.upper, prefix) // the iterator is closed before the next scan reuses it
	it, err := e.d.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: e.upper, UseL6Filters: true})
	if err != nil {
		return 0, 0, err
	}
	var c int
	var b int64
	for ok := it.SeekPrefixGE(prefix); ok; ok = it.Next() {
		c++
		b += int64(len(it.Key()) + len(it.Value()))
	}
	return c, b, it.Close()
}

// ReadCounters: Pebble's block cache misses (every kind of block, read
// from the files); no byte count.
func (e *pebbleDB) ReadCounters() (int64, int64) {
	return e.d.Metrics().BlockCache.Misses, -1
}

func (e *pebbleDB) Compact() error {
	return e.d.Compact(context.Background(), []byte{}, []byte{0xff}, true)
}

func (e *pebbleDB) Levels() string {
	m := e.d.Metrics()
	var parts []string
	for l, lm := range m.Levels {
		if lm.TablesCount > 0 {
			parts = append(parts, fmt.Sprintf("L%d:%d", l, lm.TablesCount))
		}
	}
	return strings.Join(parts, " ")
}

func (e *pebbleDB) ReadStats() string {
	m := e.d.Metrics()
	return fmt.Sprintf("filter hits %d (data block avoided), misses %d; block cache hit %.1f%%",
		m.Filter.Hits, m.Filter.Misses, 100*rate(m.BlockCache.Hits, m.BlockCache.Misses))
}

func (e *pebbleDB) Close() error { return e.d.Close() }
