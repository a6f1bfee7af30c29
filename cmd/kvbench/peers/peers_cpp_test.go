//go:build cgo && cppengines

package main

import "testing"

// TestCppEngines runs every benchmark on LevelDB and RocksDB with the
// checks the Go engines pass (TestAllEngines).
func TestCppEngines(t *testing.T) {
	checkEngines(t, "bloomkv,leveldb,rocksdb")
}

// TestCppExistingDB: LevelDB reads the LevelDB-format store goleveldb
// wrote and agrees with goleveldb; RocksDB reads it too or is reported
// and skipped, as bloomkv and Pebble are.
func TestCppExistingDB(t *testing.T) {
	checkExisting(t, []string{"goleveldb", "leveldb"}, []string{"bloomkv", "pebble", "rocksdb"})
}

// TestCppKeepStores: LevelDB's kept store (in a --dir whose parents did
// not exist: LevelDB creates only the store's own directory) is an
// --existing_db input.
func TestCppKeepStores(t *testing.T) { checkKeepStores(t, "leveldb") }
