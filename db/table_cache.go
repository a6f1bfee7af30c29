package db

import (
	"fmt"
	"github.com/bloomkv/bloomkv/filter"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// tableCache keeps a reader open for every live table, so each table's
// filter and index stay resident while the table is in use: the filter is
// loaded once, when the table is opened, and every Get asks it from memory.
//
// Every Get looks tables up here, from any core, so finding an open table
// takes no lock and writes no shared memory: the entries are spread over
// shards, each a map that is never modified once published; adding or
// removing an entry publishes a modified copy of its shard. Copies stay
// small (a shard holds 1/64 of the tables) and happen once per table
// opened or dropped. (sync.Map measured 1.5× slower on the absent-key Get,
// which looks up one table per level.)
type tableCache struct {
	d        *DB
	shards   [tableCacheShards]tableShard
	mapped   atomic.Int64 // tables read through a memory map
	mapLimit int64        // maxMappedTables; tests lower it
	files    *fileLimiter // the descriptors of the tables read with ReadAt
	// closed is set by close before it releases the entries; a get after
	// it fails with ErrClosed and never opens (or maps) a table again.
	closed atomic.Bool
}

// maxMappedTables bounds the tables a store maps at once; the rest are read
// with pread, each holding a file descriptor. A mapped table holds none
// (its descriptor is closed once mapped), so this is also how many tables
// a store keeps open without descriptors. It keeps a store well within
// Linux's default limit of 65,530 mappings per process (vm.max_map_count)
// and, at the default 2 MiB table size, maps up to 32 GiB. LevelDB's
// limit is 1,000 tables.
const maxMappedTables = 16384

// takeMapSlot reports whether a table about to open may be mapped, and if
// so counts it. Maps are 64-bit only: on 32-bit systems address space is
// too scarce.
func (tc *tableCache) takeMapSlot() bool {
	if tc.d.opts.DisableMmapReads || strconv.IntSize < 64 {
		return false
	}
	if tc.mapped.Add(1) > tc.mapLimit {
		tc.mapped.Add(-1)
		return false
	}
	return true
}

const tableCacheShards = 64

type tableShard struct {
	mu sync.Mutex                             // serializes changes
	m  atomic.Pointer[map[uint64]*tableEntry] // read without locking
	_  [40]byte
}

func (s *tableShard) load() map[uint64]*tableEntry {
	if p := s.m.Load(); p != nil {
		return *p
	}
	return nil
}

// update publishes a copy of the shard's map changed by f; s.mu is held.
func (s *tableShard) update(f func(m map[uint64]*tableEntry)) {
	old := s.load()
	m := make(map[uint64]*tableEntry, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	f(m)
	s.m.Store(&m)
}

func (tc *tableCache) shard(num uint64) *tableShard { return &tc.shards[num%tableCacheShards] }

type tableEntry struct {
	once sync.Mutex // serializes opening and releasing
	r    atomic.Pointer[sstable.Reader]
	// dead is set when release begins: a FileMetadata that still points
	// here (manifest.FileMetadata.Opened) then sends its reads back
	// through the map, which no longer holds the entry.
	dead atomic.Bool
	f    io.Closer    // the table's file; nil for a mapped table, whose descriptor was closed at open
	m    *vfs.Mapping // nil when the table is read with ReadAt
	done bool         // released
	// mapped is the table cache's count of mapped tables, which release
	// decrements.
	mapped *atomic.Int64
	// The reader's resident bytes, set before r is stored (so visible to
	// whoever loads a non-nil r) and never changed: Metrics reads them
	// without touching a reader that may be closing.
	filterBytes, indexBytes int
}

// release closes the entry's reader, mapping and file; the caller holds
// e.once. It returns the file's Close error. It leaves e.r set: a get that
// found the entry before it left the map reads e.r without e.once.
func (e *tableEntry) release() error {
	e.dead.Store(true)
	r := e.r.Load()
	if r == nil || e.done {
		return nil
	}
	e.done = true
	r.Close()
	if e.m != nil {
		_ = e.m.Unmap()
		e.mapped.Add(-1)
	}
	if e.f == nil {
		return nil // a mapped table: its descriptor was closed at open
	}
	return e.f.Close()
}

func newTableCache(d *DB) *tableCache {
	return &tableCache{d: d, mapLimit: maxMappedTables, files: newFileLimiter(d.fs, d.opts.maxOpenFiles)}
}

// get returns the open reader of a table, opening it on first use. A
// failed open is not cached: the next call tries again.
//
// The table's FileMetadata remembers its entry (SetOpened), so a read,
// which reaches the table through a version, finds the open reader
// without the map: a few loads instead of a hash lookup in a map that is
// rarely in the processor's cache (about 45 ns a table on a 10,000,000-key
// store). A reader holds a version, which keeps its tables out of evict,
// so a live entry is as safe to use as one found in the map; a released
// one is dead, and the map decides.
func (tc *tableCache) get(meta *manifest.FileMetadata) (*sstable.Reader, error) {
	if e, _ := meta.Opened().(*tableEntry); e != nil && !e.dead.Load() {
		if r := e.r.Load(); r != nil {
			return r, nil
		}
	}
	num := meta.FileNum
	sh := tc.shard(num)
	e := sh.load()[num]
	if e != nil {
		if r := e.r.Load(); r != nil {
			meta.SetOpened(e)
			return r, nil
		}
	} else {
		sh.mu.Lock()
		if tc.closed.Load() {
			sh.mu.Unlock()
			return nil, ErrClosed
		}
		if e = sh.load()[num]; e == nil {
			e = &tableEntry{}
			sh.update(func(m map[uint64]*tableEntry) { m[num] = e })
		}
		sh.mu.Unlock()
	}
	e.once.Lock()
	defer e.once.Unlock()
	if r := e.r.Load(); r != nil {
		return r, nil
	}
	if e.done || tc.closed.Load() {
		return nil, ErrClosed
	}
	r, f, m, err := tc.open(meta)
	if err != nil {
		sh.mu.Lock()
		if sh.load()[num] == e {
			sh.update(func(m map[uint64]*tableEntry) { delete(m, num) })
		}
		sh.mu.Unlock()
		return nil, err
	}
	e.f, e.m, e.mapped = f, m, &tc.mapped
	e.filterBytes, e.indexBytes = r.FilterBytes(), r.IndexBytes()
	e.r.Store(r)
	if tc.closed.Load() {
		// close may have passed this entry already: release it here so
		// no file or mapping outlives the cache.
		_ = e.release()
		return nil, ErrClosed
	}
	meta.SetOpened(e)
	return r, nil
}

func (tc *tableCache) open(meta *manifest.FileMetadata) (*sstable.Reader, io.Closer, *vfs.Mapping, error) {
	d := tc.d
	name := d.tablePath(meta.FileNum)
	f, err := d.fs.Open(name)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("opening table %06d: %w", meta.FileNum, err)
	}
	size, err := f.Size()
	if err == nil && meta.Size != 0 && uint64(size) != meta.Size {
		err = fmt.Errorf("%w: table %06d is %d bytes, the MANIFEST says %d", ErrCorruption, meta.FileNum, size, meta.Size)
	}
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	ro := sstable.ReaderOptions{
		Filters: d.knownFilters(),
		Cache:   d.cache,
		FileID:  meta.FileNum,
		Stats:   &d.stats,
	}
	if d.opts.RangeFilter != nil {
		ro.RangeFilters = []filter.RangePolicy{d.opts.RangeFilter}
	}
	// Map the table when the file system can; if mapping fails (no
	// address space, an odd file system) the table is read with ReadAt.
	var m *vfs.Mapping
	if mf, ok := f.(vfs.Mapper); ok && tc.takeMapSlot() {
		if m, err = mf.MapReadOnly(size); err == nil {
			ro.Mapped = m.Bytes()
		} else {
			m = nil
			tc.mapped.Add(-1)
			d.events.warn("mapping table failed; reading it with pread", "table", meta.FileNum, "err", err)
		}
	}
	// A table read with ReadAt holds its descriptor only while among the
	// Options.MaxOpenFiles most recently read.
	var ra io.ReaderAt = f
	var file io.Closer = f
	if m == nil {
		lf := tc.files.adopt(name, f)
		ra, file = lf, lf
	}
	r, err := sstable.NewReader(ra, size, ro)
	if err != nil {
		if m != nil {
			_ = m.Unmap()
			tc.mapped.Add(-1)
		}
		file.Close()
		return nil, nil, nil, fmt.Errorf("table %06d: %w", meta.FileNum, err)
	}
	if m != nil {
		// The reader reads only the mapping: the descriptor is not needed
		// (the mapping keeps the file), so a store of many tables does not
		// run into the process's limit on open files.
		if err := f.Close(); err != nil {
			r.Close()
			_ = m.Unmap()
			tc.mapped.Add(-1)
			return nil, nil, nil, fmt.Errorf("table %06d: closing its descriptor after mapping it: %w", meta.FileNum, err)
		}
		file = nil
	}
	return r, file, m, nil
}

// evict closes a table's reader and drops its cached blocks.
func (tc *tableCache) evict(num uint64) {
	sh := tc.shard(num)
	sh.mu.Lock()
	e := sh.load()[num]
	if e != nil {
		sh.update(func(m map[uint64]*tableEntry) { delete(m, num) })
	}
	sh.mu.Unlock()
	if e != nil {
		e.once.Lock()
		_ = e.release()
		e.once.Unlock()
	}
	if tc.d.cache != nil {
		tc.d.cache.EvictFile(num)
	}
}

// memory returns the bytes of filters and indexes held by open tables.
func (tc *tableCache) memory() (filterBytes, indexBytes int64, open int) {
	for i := range tc.shards {
		for _, e := range tc.shards[i].load() {
			if e.r.Load() != nil {
				filterBytes += int64(e.filterBytes)
				indexBytes += int64(e.indexBytes)
				open++
			}
		}
	}
	return
}

func (tc *tableCache) close() error {
	tc.closed.Store(true)
	var err error
	for i := range tc.shards {
		sh := &tc.shards[i]
		sh.mu.Lock()
		old := sh.load()
		sh.m.Store(nil)
		sh.mu.Unlock()
		for _, e := range old {
			e.once.Lock()
			if cerr := e.release(); err == nil {
				err = cerr
			}
			e.once.Unlock()
		}
	}
	return err
}
