//go:build cgo && cppengines

package main

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

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

// TestCppRocksDBExistingNoAbort: RocksDB 7.8.3 aborts the process when it
// opens read-write a LevelDB-format store whose logs hold writes beside a
// table without sequence numbers ("Assertion `smallest_seqno <=
// largest_seqno' failed" in VersionEdit::AddFile, as it recovers the logs
// into level 0). goleveldb writes such a store here: its writes
// compacted into one table, then more writes in the log. --existing_db
// opens RocksDB's copy read-only even without --existing_read_only, so
// the run survives and RocksDB reads the store or is reported.
func TestCppRocksDBExistingNoAbort(t *testing.T) {
	cfg := defaultConfig()
	cfg.num, cfg.reads = 3000, 300
	cfg.writeBufferSize = 1 << 20 // the writes after the compaction stay in the log
	dir := filepath.Join(t.TempDir(), "store")
	e, err := openGoLevelDB(dir, cfg.settings)
	if err != nil {
		t.Fatal(err)
	}
	first, rest := *cfg, *cfg
	first.num, rest.num = 2000, 1000
	if _, err := fill(e, &first, newRand(cfg, 2), true); err != nil {
		t.Fatal(err)
	}
	if err := e.Compact(); err != nil {
		t.Fatal(err)
	}
	if _, err := fill(e, &rest, newRand(cfg, 3), true); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.engines = "leveldb,rocksdb"
	cfg.benchmarks = "readrandom"
	cfg.existingDB = dir
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "WARNING") || findRow(s, "readrandom") == "" {
		t.Errorf("output:\n%s", s)
	}
}
