//go:build cgo && cppengines

package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"errors"
	"sync/atomic"
	"unsafe"
)

// The C++ engines, LevelDB and RocksDB, through their C APIs (leveldb/c.h,
// rocksdb/c.h) and cgo. They are built only with -tags cppengines (and
// cgo), so that the default build of this program needs no C compiler and
// no C++ library; the engine module (bloomkv itself) never sees them.
//
// Every operation of a workload is one cgo call into a small C helper in
// the preamble of leveldb.go or rocksdb.go: a Get looks the key up and
// copies the value into a Go buffer, a Seek creates, positions, checks and
// destroys an iterator, a scan walks its whole range in C. Read and write
// options are created once per store, as a C++ program would.

func init() {
	engines["leveldb"] = openLevelDB
	engines["rocksdb"] = openRocksDB
	engineOrder = append(engineOrder, "leveldb", "rocksdb")
}

// cBytes returns a pointer to b's first byte for a C call, nil for an
// empty slice. The C side must not keep it after the call returns.
func cBytes(b []byte) *C.char {
	if len(b) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(&b[0]))
}

// cError turns an error string set by the C API into a Go error, freeing
// it with free (leveldb_free or rocksdb_free).
func cError(cerr *C.char, free func(unsafe.Pointer)) error {
	if cerr == nil {
		return nil
	}
	s := C.GoString(cerr)
	free(unsafe.Pointer(cerr))
	return errors.New(s)
}

// valueBuffer sizes the buffers a C Get copies values into: the largest
// value seen so far (at least 256 bytes), so that a Get needs a second
// call only the first time a longer value shows up.
type valueBuffer struct{ size atomic.Int64 }

// get returns a new buffer for a value (each Get returns a value the
// caller owns, as bloomkv's and goleveldb's do).
func (b *valueBuffer) get() []byte {
	return make([]byte, max(b.size.Load(), 256))
}

// grow makes later buffers hold n bytes and returns one that does.
func (b *valueBuffer) grow(n int) []byte {
	for {
		cur := b.size.Load()
		if int64(n) <= cur || b.size.CompareAndSwap(cur, int64(n)) {
			break
		}
	}
	return make([]byte, n)
}
