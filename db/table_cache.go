package db

import (
	"fmt"
	"sync"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/vfs"
	"github.com/bloomkv/bloomkv/sstable"
)

// tableCache keeps a reader open for every live table, so each table's
// filter and index stay resident while the table is in use: the filter is
// loaded once, when the table is opened, and every Get asks it from memory.
type tableCache struct {
	d  *DB
	mu sync.RWMutex
	m  map[uint64]*tableEntry
}

type tableEntry struct {
	once sync.Mutex
	r    *sstable.Reader
	f    vfs.File
	m    *vfs.Mapping // nil when the table is read with ReadAt
	done bool         // released
}

// release closes the entry's reader, mapping and file; the caller holds
// e.once. It returns the file's Close error. It leaves e.r set: a get that
// found the entry before it left the map reads e.r without e.once.
func (e *tableEntry) release() error {
	if e.r == nil || e.done {
		return nil
	}
	e.done = true
	e.r.Close()
	if e.m != nil {
		_ = e.m.Unmap()
	}
	return e.f.Close()
}

func newTableCache(d *DB) *tableCache {
	return &tableCache{d: d, m: map[uint64]*tableEntry{}}
}

// get returns the open reader of a table, opening it on first use. A
// failed open is not cached: the next call tries again.
func (tc *tableCache) get(meta *manifest.FileMetadata) (*sstable.Reader, error) {
	tc.mu.RLock()
	e := tc.m[meta.FileNum]
	tc.mu.RUnlock()
	if e != nil && e.r != nil {
		return e.r, nil
	}
	tc.mu.Lock()
	e = tc.m[meta.FileNum]
	if e == nil {
		e = &tableEntry{}
		tc.m[meta.FileNum] = e
	}
	tc.mu.Unlock()

	e.once.Lock()
	defer e.once.Unlock()
	if e.r != nil {
		return e.r, nil
	}
	r, f, m, err := tc.open(meta)
	if err != nil {
		tc.mu.Lock()
		if tc.m[meta.FileNum] == e {
			delete(tc.m, meta.FileNum)
		}
		tc.mu.Unlock()
		return nil, err
	}
	tc.mu.Lock()
	e.f, e.m = f, m
	e.r = r
	tc.mu.Unlock()
	return r, nil
}

func (tc *tableCache) open(meta *manifest.FileMetadata) (*sstable.Reader, vfs.File, *vfs.Mapping, error) {
	d := tc.d
	name := tableFileName(d.dirname, meta.FileNum)
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
	// Map the table when the file system can; if mapping fails (no
	// address space, an odd file system) the table is read with ReadAt.
	var m *vfs.Mapping
	if mf, ok := f.(vfs.Mapper); ok && !d.opts.DisableMmapReads {
		if m, err = mf.MapReadOnly(size); err == nil {
			ro.Mapped = m.Bytes()
		} else {
			m = nil
			d.events.warn("mapping table failed; reading it with pread", "table", meta.FileNum, "err", err)
		}
	}
	r, err := sstable.NewReader(f, size, ro)
	if err != nil {
		if m != nil {
			_ = m.Unmap()
		}
		f.Close()
		return nil, nil, nil, fmt.Errorf("table %06d: %w", meta.FileNum, err)
	}
	return r, f, m, nil
}

// evict closes a table's reader and drops its cached blocks.
func (tc *tableCache) evict(num uint64) {
	tc.mu.Lock()
	e := tc.m[num]
	delete(tc.m, num)
	tc.mu.Unlock()
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
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	for _, e := range tc.m {
		if e.r != nil {
			filterBytes += int64(e.r.FilterBytes())
			indexBytes += int64(e.r.IndexBytes())
			open++
		}
	}
	return
}

func (tc *tableCache) close() error {
	tc.mu.Lock()
	m := tc.m
	tc.m = map[uint64]*tableEntry{}
	tc.mu.Unlock()
	var err error
	for _, e := range m {
		e.once.Lock()
		if cerr := e.release(); err == nil {
			err = cerr
		}
		e.r = nil
		e.once.Unlock()
	}
	return err
}
