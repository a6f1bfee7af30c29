//go:build cgo && cppengines

package main

/*
#cgo LDFLAGS: -lleveldb
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <leveldb/c.h>

// bk_cmp compares two byte strings as LevelDB's bytewise comparator does.
static int bk_cmp(const char* a, size_t alen, const char* b, size_t blen) {
	int c = memcmp(a, b, alen < blen ? alen : blen);
	if (c != 0) return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

// bk_ldb_get looks key up and copies min(*vlen, cap) bytes of its value
// into buf, setting *vlen to the value's length. It returns 1 when the key
// is there, 0 when it is not, -1 on an error (*err is set).
static int bk_ldb_get(leveldb_t* db, const leveldb_readoptions_t* ro,
		const char* key, size_t klen, char* buf, size_t cap, size_t* vlen, char** err) {
	size_t n = 0;
	char* v = leveldb_get(db, ro, key, klen, &n, err);
	if (*err != NULL) return -1;
	if (v == NULL) return 0;
	memcpy(buf, v, n < cap ? n : cap);
	leveldb_free(v);
	*vlen = n;
	return 1;
}

// bk_ldb_seek positions a new iterator at the first key >= key and
// returns 1 if that is key itself, 0 if not, -1 on an error.
static int bk_ldb_seek(leveldb_t* db, const leveldb_readoptions_t* ro,
		const char* key, size_t klen, char** err) {
	leveldb_iterator_t* it = leveldb_create_iterator(db, ro);
	leveldb_iter_seek(it, key, klen);
	int found = 0;
	if (leveldb_iter_valid(it)) {
		size_t n;
		const char* k = leveldb_iter_key(it, &n);
		found = bk_cmp(k, n, key, klen) == 0;
	}
	leveldb_iter_get_error(it, err);
	leveldb_iter_destroy(it);
	return *err != NULL ? -1 : found;
}

// bk_ldb_scan iterates through a new iterator from lo (NULL: the first
// key) while the key is below hi (NULL: no bound), at most limit entries
// (limit < 0: no limit), and stores how many entries it saw and the bytes
// of their keys and values. LevelDB has no iterator bounds: the bound is
// checked here, on every key. It returns 0, or -1 on an error.
static int bk_ldb_scan(leveldb_t* db, const leveldb_readoptions_t* ro,
		const char* lo, size_t lolen, const char* hi, size_t hilen, int64_t limit,
		int64_t* count, int64_t* bytes, char** err) {
	leveldb_iterator_t* it = leveldb_create_iterator(db, ro);
	if (lo != NULL) {
		leveldb_iter_seek(it, lo, lolen);
	} else {
		leveldb_iter_seek_to_first(it);
	}
	int64_t c = 0, b = 0;
	for (; leveldb_iter_valid(it) && (limit < 0 || c < limit); leveldb_iter_next(it)) {
		size_t kn, vn;
		const char* k = leveldb_iter_key(it, &kn);
		if (hi != NULL && bk_cmp(k, kn, hi, hilen) >= 0) break;
		leveldb_iter_value(it, &vn);
		c++;
		b += (int64_t)(kn + vn);
	}
	leveldb_iter_get_error(it, err);
	leveldb_iter_destroy(it);
	*count = c;
	*bytes = b;
	return *err != NULL ? -1 : 0;
}

// bk_ldb_property returns the integer value of a property, -1 if the
// store has no such property.
static int64_t bk_ldb_property(leveldb_t* db, const char* name) {
	char* v = leveldb_property_value(db, name);
	if (v == NULL) return -1;
	int64_t n = strtoll(v, NULL, 10);
	leveldb_free(v);
	return n;
}
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/bloomkv/bloomkv/db"
)

// levelDB is LevelDB 1.x (Debian's libleveldb-dev) through leveldb/c.h.
type levelDB struct {
	d      *C.leveldb_t
	opts   *C.leveldb_options_t
	cache  *C.leveldb_cache_t
	policy *C.leveldb_filterpolicy_t
	ro     *C.leveldb_readoptions_t
	wo     *C.leveldb_writeoptions_t
	buf    valueBuffer
}

func freeLevelDB(p unsafe.Pointer) { C.leveldb_free(p) }

// openLevelDB opens LevelDB with the settings every engine gets: a Bloom
// filter of bloomBits bits per key (LevelDB's built-in one), an LRU block
// cache of cacheSize bytes, writeBufferSize, blockSize, snappy, writes
// without sync. Reads verify block checksums, as every other engine here
// does (LevelDB's default is not to). The rest is LevelDB's defaults
// (max_open_files 1000, 2 MiB tables). LevelDB has no prefix filter and
// no read-only open: an existing store (s.existing) is opened read-write
// but not created, even with s.readOnly.
func openLevelDB(dir string, s settings) (Engine, error) {
	e := &levelDB{opts: C.leveldb_options_create()}
	C.leveldb_options_set_create_if_missing(e.opts, C.uchar(boolByte(!s.existing)))
	C.leveldb_options_set_write_buffer_size(e.opts, C.size_t(s.writeBufferSize))
	C.leveldb_options_set_block_size(e.opts, C.size_t(s.blockSize))
	C.leveldb_options_set_compression(e.opts, C.leveldb_snappy_compression)
	if s.cacheSize > 0 {
		e.cache = C.leveldb_cache_create_lru(C.size_t(s.cacheSize))
		C.leveldb_options_set_cache(e.opts, e.cache)
	}
	if s.bloomBits > 0 {
		e.policy = C.leveldb_filterpolicy_create_bloom(C.int(s.bloomBits))
		C.leveldb_options_set_filter_policy(e.opts, e.policy)
	}
	e.ro = C.leveldb_readoptions_create()
	C.leveldb_readoptions_set_verify_checksums(e.ro, 1)
	e.wo = C.leveldb_writeoptions_create()
	C.leveldb_writeoptions_set_sync(e.wo, 0)

	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	var cerr *C.char
	e.d = C.leveldb_open(e.opts, cdir, &cerr)
	if err := cError(cerr, freeLevelDB); err != nil {
		e.free()
		return nil, err
	}
	return e, nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// free releases everything but the store, which must be closed.
func (e *levelDB) free() {
	C.leveldb_readoptions_destroy(e.ro)
	C.leveldb_writeoptions_destroy(e.wo)
	C.leveldb_options_destroy(e.opts)
	if e.cache != nil {
		C.leveldb_cache_destroy(e.cache)
	}
	if e.policy != nil {
		C.leveldb_filterpolicy_destroy(e.policy)
	}
}

// Version is the library's, as it reports it.
func (e *levelDB) Version() string {
	return fmt.Sprintf("LevelDB %d.%d (libleveldb)", C.leveldb_major_version(), C.leveldb_minor_version())
}

func (e *levelDB) Put(k, v []byte) error {
	var cerr *C.char
	C.leveldb_put(e.d, e.wo, cBytes(k), C.size_t(len(k)), cBytes(v), C.size_t(len(v)), &cerr)
	return cError(cerr, freeLevelDB)
}

func (e *levelDB) Get(k []byte) (int, bool, error) {
	buf := e.buf.get()
	for {
		var n C.size_t
		var cerr *C.char
		r := C.bk_ldb_get(e.d, e.ro, cBytes(k), C.size_t(len(k)), cBytes(buf), C.size_t(len(buf)), &n, &cerr)
		switch {
		case r < 0:
			return 0, false, cError(cerr, freeLevelDB)
		case r == 0:
			return 0, false, nil
		case int(n) > len(buf):
			buf = e.buf.grow(int(n)) // the value did not fit: again, once
			continue
		}
		return int(n), true, nil
	}
}

func (e *levelDB) Seek(k []byte) (bool, error) {
	var cerr *C.char
	r := C.bk_ldb_seek(e.d, e.ro, cBytes(k), C.size_t(len(k)), &cerr)
	if r < 0 {
		return false, cError(cerr, freeLevelDB)
	}
	return r == 1, nil
}

func (e *levelDB) scan(lo, hi []byte, limit int) (int, int64, error) {
	var count, nbytes C.int64_t
	var cerr *C.char
	if C.bk_ldb_scan(e.d, e.ro, cBytes(lo), C.size_t(len(lo)), cBytes(hi), C.size_t(len(hi)), C.int64_t(limit), &count, &nbytes, &cerr) < 0 {
		return 0, 0, cError(cerr, freeLevelDB)
	}
	return int(count), int64(nbytes), nil
}

func (e *levelDB) Scan(n int) (int, int64, error) { return e.scan(nil, nil, n) }

// ScanRange: LevelDB's iterators have no bounds; the C loop stops at hi.
func (e *levelDB) ScanRange(lo, hi []byte) (int, int64, error) { return e.scan(lo, hi, -1) }

// ScanPrefix: LevelDB has no prefix filter; the scan is the prefix's
// range, db.PrefixBounds' as bloomkv's.
func (e *levelDB) ScanPrefix(prefix []byte) (int, int64, error) {
	return e.ScanRange(db.PrefixBounds(prefix))
}

// ReadCounters: LevelDB's C API tells nothing of what reads read.
func (e *levelDB) ReadCounters() (int64, int64) { return -1, -1 }

func (e *levelDB) Compact() error {
	C.leveldb_compact_range(e.d, nil, 0, nil, 0)
	return nil
}

func (e *levelDB) property(name string) int64 {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return int64(C.bk_ldb_property(e.d, cname))
}

func (e *levelDB) Levels() string {
	var parts []string
	for l := 0; l < 7; l++ {
		if n := e.property(fmt.Sprintf("leveldb.num-files-at-level%d", l)); n > 0 {
			parts = append(parts, fmt.Sprintf("L%d:%d", l, n))
		}
	}
	return strings.Join(parts, " ")
}

func (e *levelDB) ReadStats() string {
	return "no read counters in LevelDB's C API"
}

func (e *levelDB) Close() error {
	C.leveldb_close(e.d)
	e.free()
	return nil
}
