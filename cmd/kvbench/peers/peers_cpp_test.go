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
