//go:build cgo && cppengines

package main

/*
#cgo LDFLAGS: -lrocksdb
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <rocksdb/c.h>

// bk_rdb_cmp compares two byte strings as RocksDB's bytewise comparator does.
static int bk_rdb_cmp(const char* a, size_t alen, const char* b, size_t blen) {
	int c = memcmp(a, b, alen < blen ? alen : blen);
	if (c != 0) return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

// bk_rdb_get looks key up (a pinned value: no copy inside RocksDB) and
// copies min(*vlen, cap) bytes of the value into buf, setting *vlen to
// the value's length. It returns 1 when the key is there, 0 when it is
// not, -1 on an error (*err is set).
static int bk_rdb_get(rocksdb_t* db, const rocksdb_readoptions_t* ro,
		const char* key, size_t klen, char* buf, size_t cap, size_t* vlen, char** err) {
	rocksdb_pinnableslice_t* p = rocksdb_get_pinned(db, ro, key, klen, err);
	if (*err != NULL) return -1;
	if (p == NULL) return 0;
	size_t n = 0;
	const char* v = rocksdb_pinnableslice_value(p, &n);
	memcpy(buf, v, n < cap ? n : cap);
	rocksdb_pinnableslice_destroy(p);
	*vlen = n;
	return 1;
}

// bk_rdb_seek positions a new iterator at the first key >= key and
// returns 1 if that is key itself, 0 if not, -1 on an error.
static int bk_rdb_seek(rocksdb_t* db, const rocksdb_readoptions_t* ro,
		const char* key, size_t klen, char** err) {
	rocksdb_iterator_t* it = rocksdb_create_iterator(db, ro);
	rocksdb_iter_seek(it, key, klen);
	int found = 0;
	if (rocksdb_iter_valid(it)) {
		size_t n;
		const char* k = rocksdb_iter_key(it, &n);
		found = bk_rdb_cmp(k, n, key, klen) == 0;
	}
	rocksdb_iter_get_error(it, err);
	rocksdb_iter_destroy(it);
	return *err != NULL ? -1 : found;
}

// bk_rdb_scan iterates through a new iterator from lo (NULL: the first
// key) to hi (NULL: no bound), at most limit entries (limit < 0: no
// limit), and stores how many entries it saw and the bytes of their keys
// and values. With lo or hi the iterator gets them as its bounds
// (iterate_lower_bound, iterate_upper_bound, on read options made for
// this scan); prefix makes it a prefix scan (prefix_same_as_start, which
// consults the prefix Bloom filters), else it is a total-order scan. It
// returns 0, or -1 on an error.
static int bk_rdb_scan(rocksdb_t* db, const char* lo, size_t lolen,
		const char* hi, size_t hilen, int prefix, int64_t limit,
		int64_t* count, int64_t* bytes, char** err) {
	rocksdb_readoptions_t* ro = rocksdb_readoptions_create();
	if (lo != NULL) rocksdb_readoptions_set_iterate_lower_bound(ro, lo, lolen);
	if (hi != NULL) rocksdb_readoptions_set_iterate_upper_bound(ro, hi, hilen);
	if (prefix) {
		rocksdb_readoptions_set_prefix_same_as_start(ro, 1);
	} else {
		rocksdb_readoptions_set_total_order_seek(ro, 1);
	}
	rocksdb_iterator_t* it = rocksdb_create_iterator(db, ro);
	if (lo != NULL) {
		rocksdb_iter_seek(it, lo, lolen);
	} else {
		rocksdb_iter_seek_to_first(it);
	}
	int64_t c = 0, b = 0;
	for (; rocksdb_iter_valid(it) && (limit < 0 || c < limit); rocksdb_iter_next(it)) {
		size_t kn, vn;
		rocksdb_iter_key(it, &kn);
		rocksdb_iter_value(it, &vn);
		c++;
		b += (int64_t)(kn + vn);
	}
	rocksdb_iter_get_error(it, err);
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	*count = c;
	*bytes = b;
	return *err != NULL ? -1 : 0;
}

// bk_rdb_property returns the integer value of a property, -1 if the
// store has no such property.
static int64_t bk_rdb_property(rocksdb_t* db, const char* name) {
	char* v = rocksdb_property_value(db, name);
	if (v == NULL) return -1;
	int64_t n = strtoll(v, NULL, 10);
	rocksdb_free(v);
	return n;
}
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/bloomkv/bloomkv/db"
)

// rocksDB is RocksDB (Debian's librocksdb-dev) through rocksdb/c.h.
type rocksDB struct {
	d     *C.rocksdb_t
	opts  *C.rocksdb_options_t
	table *C.rocksdb_block_based_table_options_t
	cache *C.rocksdb_cache_t
	ro    *C.rocksdb_readoptions_t
	wo    *C.rocksdb_writeoptions_t
	// prefix: a prefix extractor is set, so Seek and Scan need
	// total-order read options.
	prefix bool
	buf    valueBuffer
	dir    string
}

func freeRocksDB(p unsafe.Pointer) { C.rocksdb_free(p) }

// openRocksDB opens RocksDB with the settings every engine gets: a full
// (whole-table) Bloom filter of bloomBits bits per key, an LRU block
// cache of cacheSize bytes, writeBufferSize, blockSize, snappy, writes
// without sync (the WAL on, as everywhere). With prefixSize, a fixed
// prefix extractor: the filters then hold whole keys and prefixes, as
// bloomkv's do. Index and filter blocks stay in the table readers, not in
// the block cache (RocksDB's default, and what the others do); reads
// verify checksums (RocksDB's default). The rest is RocksDB's defaults
// (level compaction, 64 MiB tables, two background jobs, statistics
// off). An existing store (s.existing, LevelDB's format) is always opened
// read-only, whatever s.readOnly: a read-write open that recovers logs
// beside LevelDB tables, which carry no sequence numbers, aborts the
// whole process in RocksDB 7.8.3 (Debian's build keeps assertions:
// "VersionEdit::AddFile: Assertion `smallest_seqno <= largest_seqno'
// failed"), where a read-only open returns an error or reads the store.
func openRocksDB(dir string, s settings) (Engine, error) {
	e := &rocksDB{opts: C.rocksdb_options_create(), table: C.rocksdb_block_based_options_create(), dir: dir}
	C.rocksdb_options_set_create_if_missing(e.opts, C.uchar(boolByte(!s.existing)))
	C.rocksdb_options_set_write_buffer_size(e.opts, C.size_t(s.writeBufferSize))
	C.rocksdb_options_set_compression(e.opts, C.rocksdb_snappy_compression)
	C.rocksdb_block_based_options_set_block_size(e.table, C.size_t(s.blockSize))
	if s.cacheSize > 0 {
		e.cache = C.rocksdb_cache_create_lru(C.size_t(s.cacheSize))
		C.rocksdb_block_based_options_set_block_cache(e.table, e.cache)
	} else {
		C.rocksdb_block_based_options_set_no_block_cache(e.table, 1)
	}
	if s.bloomBits > 0 {
		// The table options take the policy over.
		C.rocksdb_block_based_options_set_filter_policy(e.table, C.rocksdb_filterpolicy_create_bloom_full(C.double(s.bloomBits)))
	}
	if s.prefixSize > 0 {
		// The options take the extractor over.
		C.rocksdb_options_set_prefix_extractor(e.opts, C.rocksdb_slicetransform_create_fixed_prefix(C.size_t(s.prefixSize)))
		e.prefix = true
	}
	C.rocksdb_options_set_block_based_table_factory(e.opts, e.table)
	e.ro = C.rocksdb_readoptions_create()
	if e.prefix {
		C.rocksdb_readoptions_set_total_order_seek(e.ro, 1)
	}
	e.wo = C.rocksdb_writeoptions_create()
	C.rocksdb_writeoptions_set_sync(e.wo, 0)

	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	var cerr *C.char
	if s.existing {
		e.d = C.rocksdb_open_for_read_only(e.opts, cdir, 0, &cerr)
	} else {
		e.d = C.rocksdb_open(e.opts, cdir, &cerr)
	}
	if err := cError(cerr, freeRocksDB); err != nil {
		e.free()
		return nil, err
	}
	return e, nil
}

// free releases everything but the store, which must be closed.
func (e *rocksDB) free() {
	C.rocksdb_readoptions_destroy(e.ro)
	C.rocksdb_writeoptions_destroy(e.wo)
	C.rocksdb_options_destroy(e.opts)
	C.rocksdb_block_based_options_destroy(e.table)
	if e.cache != nil {
		C.rocksdb_cache_destroy(e.cache)
	}
}

// Version is the library's, as it writes it into the store's OPTIONS
// files (the C API has no call for it, and rocksdb/version.h is C++).
func (e *rocksDB) Version() string {
	files, _ := filepath.Glob(filepath.Join(e.dir, "OPTIONS-*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "rocksdb_version="); ok {
				return "RocksDB " + v + " (librocksdb)"
			}
		}
	}
	return "RocksDB (librocksdb)"
}

func (e *rocksDB) Put(k, v []byte) error {
	var cerr *C.char
	C.rocksdb_put(e.d, e.wo, cBytes(k), C.size_t(len(k)), cBytes(v), C.size_t(len(v)), &cerr)
	return cError(cerr, freeRocksDB)
}

func (e *rocksDB) Get(k []byte) (int, bool, error) {
	buf := e.buf.get()
	for {
		var n C.size_t
		var cerr *C.char
		r := C.bk_rdb_get(e.d, e.ro, cBytes(k), C.size_t(len(k)), cBytes(buf), C.size_t(len(buf)), &n, &cerr)
		switch {
		case r < 0:
			return 0, false, cError(cerr, freeRocksDB)
		case r == 0:
			return 0, false, nil
		case int(n) > len(buf):
			buf = e.buf.grow(int(n)) // the value did not fit: again, once
			continue
		}
		return int(n), true, nil
	}
}

func (e *rocksDB) Seek(k []byte) (bool, error) {
	var cerr *C.char
	r := C.bk_rdb_seek(e.d, e.ro, cBytes(k), C.size_t(len(k)), &cerr)
	if r < 0 {
		return false, cError(cerr, freeRocksDB)
	}
	return r == 1, nil
}

func (e *rocksDB) scan(lo, hi []byte, prefix bool, limit int) (int, int64, error) {
	var count, nbytes C.int64_t
	var cerr *C.char
	if C.bk_rdb_scan(e.d, cBytes(lo), C.size_t(len(lo)), cBytes(hi), C.size_t(len(hi)), C.int(boolByte(prefix)), C.int64_t(limit), &count, &nbytes, &cerr) < 0 {
		return 0, 0, cError(cerr, freeRocksDB)
	}
	return int(count), int64(nbytes), nil
}

func (e *rocksDB) Scan(n int) (int, int64, error) { return e.scan(nil, nil, false, n) }

// ScanRange is a total-order scan with both iterator bounds set.
func (e *rocksDB) ScanRange(lo, hi []byte) (int, int64, error) { return e.scan(lo, hi, false, -1) }

// ScanPrefix bounds the iterator to db.PrefixBounds' range, as bloomkv's;
// with a prefix extractor (--prefix_size) it is a prefix seek
// (prefix_same_as_start), which asks the prefix Bloom filters.
func (e *rocksDB) ScanPrefix(prefix []byte) (int, int64, error) {
	lo, hi := db.PrefixBounds(prefix)
	return e.scan(lo, hi, e.prefix, -1)
}

// ReadCounters: RocksDB counts reads in its statistics, which are off
// here (they cost every operation something; db_bench too leaves them
// off by default).
func (e *rocksDB) ReadCounters() (int64, int64) { return -1, -1 }

func (e *rocksDB) Compact() error {
	C.rocksdb_compact_range(e.d, nil, 0, nil, 0)
	return nil
}

func (e *rocksDB) property(name string) int64 {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return int64(C.bk_rdb_property(e.d, cname))
}

func (e *rocksDB) Levels() string {
	var parts []string
	for l := 0; l < 7; l++ {
		if n := e.property(fmt.Sprintf("rocksdb.num-files-at-level%d", l)); n > 0 {
			parts = append(parts, fmt.Sprintf("L%d:%d", l, n))
		}
	}
	return strings.Join(parts, " ")
}

func (e *rocksDB) ReadStats() string {
	return fmt.Sprintf("statistics off; block cache holds %d KiB", e.property("rocksdb.block-cache-usage")>>10)
}

func (e *rocksDB) Close() error {
	C.rocksdb_close(e.d)
	e.free()
	return nil
}
