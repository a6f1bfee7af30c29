package db

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/wal"
)

// manifestEdits decodes every record of the store's current MANIFEST.
func manifestEdits(t *testing.T, dir string) []manifest.VersionEdit {
	t.Helper()
	cur, err := os.ReadFile(filepath.Join(dir, "CURRENT"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, strings.TrimSpace(string(cur))))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := wal.NewReader(f)
	var edits []manifest.VersionEdit
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return edits
		}
		if err != nil {
			t.Fatal(err)
		}
		var e manifest.VersionEdit
		if err := e.Decode(rec); err != nil {
			t.Fatal(err)
		}
		edits = append(edits, e)
	}
}

// tableNames returns the store's table file names by extension.
func tableNames(t *testing.T, dir string) (sst, ldb []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".sst":
			sst = append(sst, e.Name())
		case ".ldb":
			ldb = append(ldb, e.Name())
		}
	}
	return sst, ldb
}

func fillFormat(t *testing.T, d *DB, n int, tag string) map[string]string {
	t.Helper()
	model := map[string]string{}
	for i := 0; i < n; i++ {
		k, v := fmt.Sprintf("key%05d", i), fmt.Sprintf("%s-%d", tag, i)
		if err := d.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		model[k] = v
	}
	return model
}

func checkFormatModel(t *testing.T, d *DB, model map[string]string) {
	t.Helper()
	for k, v := range model {
		got, err := d.Get([]byte(k), nil)
		if err != nil || string(got) != v {
			t.Fatalf("Get(%q) = %q, %v; want %q", k, got, err, v)
		}
	}
	it := d.NewIterator(nil)
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if model[string(it.Key())] != string(it.Value()) {
			t.Fatalf("iterator: %q=%q, model %q", it.Key(), it.Value(), model[string(it.Key())])
		}
		n++
	}
	if n != len(model) {
		t.Fatalf("iterator saw %d keys, model has %d", n, len(model))
	}
}

// TestFormatLevelDBNewStore: a store created with FormatLevelDB keeps
// LevelDB's MANIFEST encoding and file names across reopens, with its data.
func TestFormatLevelDBNewStore(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{Format: FormatLevelDB, WriteBufferSize: 32 << 10}
	d, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if d.Format() != FormatLevelDB {
		t.Fatalf("Format() = %v", d.Format())
	}
	model := fillFormat(t, d, 3000, "a")
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	checkFormatModel(t, d, model)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	sst, ldb := tableNames(t, dir)
	if len(sst) != 0 || len(ldb) == 0 {
		t.Fatalf("tables %v (.sst) and %v (.ldb): want only .ldb", sst, ldb)
	}
	edits := manifestEdits(t, dir)
	if edits[0].Comparer != levelDBComparerName {
		t.Fatalf("MANIFEST comparer %q", edits[0].Comparer)
	}
	for _, e := range edits {
		for _, n := range e.NewFiles {
			if !n.Meta.SeqsUnknown {
				t.Fatalf("table %d recorded with sequence numbers (not LevelDB's tag 7)", n.Meta.FileNum)
			}
		}
	}
	// Reopened with the default format, it stays LevelDB's.
	d, err = Open(dir, &Options{WriteBufferSize: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Format() != FormatLevelDB {
		t.Fatalf("reopened: Format() = %v", d.Format())
	}
	checkFormatModel(t, d, model)
	for k, v := range fillFormat(t, d, 500, "b") {
		model[k] = v
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	checkFormatModel(t, d, model)
	if sst, _ := tableNames(t, dir); len(sst) != 0 {
		t.Fatalf("a reopened LevelDB-format store wrote %v", sst)
	}
}

// TestFormatLevelDBLogs: a LevelDB-format store's logs hold only batches
// (no header or end-of-log record), which LevelDB would take for damage.
func TestFormatLevelDBLogs(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{Format: FormatLevelDB, WriteBufferSize: 16 << 10, DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	fillFormat(t, d, 2000, "a") // several memtable switches
	logs := 0
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".log" {
			continue
		}
		logs++
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		r := wal.NewReader(f)
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			if len(rec) < batchHeaderLen {
				t.Fatalf("%s holds a %d-byte record, not a batch", e.Name(), len(rec))
			}
		}
		f.Close()
	}
	if logs == 0 {
		t.Fatal("no log")
	}
	d.Close()
}

// TestFormatLevelDBRefusesRangeDeletes: DeleteRange, alone or in a batch,
// is refused with ErrInvalidArgument and writes nothing.
func TestFormatLevelDBRefusesRangeDeletes(t *testing.T) {
	d, err := Open(t.TempDir(), &Options{Format: FormatLevelDB})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.Put([]byte("a"), []byte("1"), nil))
	if err := d.DeleteRange([]byte("a"), []byte("z"), nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("DeleteRange: %v", err)
	}
	var b Batch
	b.Put([]byte("b"), []byte("2"))
	b.DeleteRange([]byte("a"), []byte("c"))
	if err := d.Write(&b, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a batch with a DeleteRange: %v", err)
	}
	if v, err := d.Get([]byte("a"), nil); err != nil || string(v) != "1" {
		t.Fatalf("a = %q, %v", v, err)
	}
	if _, err := d.Get([]byte("b"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("b of the refused batch: %v", err)
	}
}

// TestFormatConversion: FormatBloomKV converts a LevelDB-format store, one
// way, keeping every key; FormatLevelDB on a bloomkv store is refused and
// changes nothing.
func TestFormatConversion(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{Format: FormatLevelDB, WriteBufferSize: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	model := fillFormat(t, d, 2000, "a")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// A read-only open cannot convert.
	if _, err := Open(dir, &Options{Format: FormatBloomKV, ReadOnly: true}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("read-only conversion: %v", err)
	}
	d, err = Open(dir, &Options{Format: FormatBloomKV, WriteBufferSize: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if d.Format() != FormatBloomKV {
		t.Fatalf("converted: Format() = %v", d.Format())
	}
	checkFormatModel(t, d, model)
	// Range deletions are allowed now.
	if err := d.DeleteRange([]byte("key00000"), []byte("key00100"), nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		delete(model, fmt.Sprintf("key%05d", i))
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	checkFormatModel(t, d, model)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if c := manifestEdits(t, dir)[0].Comparer; c != comparerName {
		t.Fatalf("converted MANIFEST comparer %q", c)
	}
	before := dirState(t, dir)
	if _, err := Open(dir, &Options{Format: FormatLevelDB}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("FormatLevelDB on a bloomkv store: %v", err)
	}
	if after := dirState(t, dir); !sameDirState(before, after) {
		t.Fatal("a refused Open changed the directory")
	}
	d, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	checkFormatModel(t, d, model)
}

func sameDirState(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestFormatLevelDBRefusedOptions: options a LevelDB-format store cannot
// honour are refused before anything changes, for a new store and for an
// existing one opened with the default format.
func TestFormatLevelDBRefusedOptions(t *testing.T) {
	bad := []struct {
		name string
		opts Options
	}{
		{"prefix", Options{Prefix: filter.FixedPrefix(4)}},
		{"range filter", Options{RangeFilter: filter.NewGrafiteRangePolicy(16)}},
		{"bloomkv bloom", Options{FilterPolicy: filter.NewBloomPolicy(10)}},
		{"level policy", Options{LevelFilterPolicies: []filter.Policy{nil, filter.NewBlockedBloomPolicy(10)}}},
	}
	dir := t.TempDir()
	d, err := Open(dir, &Options{Format: FormatLevelDB})
	if err != nil {
		t.Fatal(err)
	}
	fillFormat(t, d, 10, "a")
	d.Close()
	before := dirState(t, dir)
	for _, c := range bad {
		o := c.opts
		if _, err := Open(dir, &o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s on an existing LevelDB store: %v", c.name, err)
		}
		if !sameDirState(before, dirState(t, dir)) {
			t.Fatalf("%s: the refused Open changed the directory", c.name)
		}
		o.Format = FormatLevelDB
		if _, err := Open(filepath.Join(t.TempDir(), "new"), &o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s on a new LevelDB store: %v", c.name, err)
		}
	}
	// LevelDB's own policy, or none, is fine.
	for _, p := range []filter.Policy{filter.NewLevelDBBloomPolicy(16), filter.None} {
		d, err := Open(dir, &Options{FilterPolicy: p})
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		d.Close()
	}
}

// TestOpenRefusesOtherComparer: a MANIFEST written with a comparer that is
// neither bloomkv's nor LevelDB's bytewise one is refused, changing
// nothing.
func TestOpenRefusesOtherComparer(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{Format: FormatLevelDB})
	if err != nil {
		t.Fatal(err)
	}
	fillFormat(t, d, 10, "a")
	d.Close()
	// Rewrite the MANIFEST with another comparer name.
	cur, _ := os.ReadFile(filepath.Join(dir, "CURRENT"))
	name := filepath.Join(dir, strings.TrimSpace(string(cur)))
	edits := manifestEdits(t, dir)
	edits[0].Comparer = "leveldb.ReverseBytewiseComparator"
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := wal.NewWriter(f)
	for i := range edits {
		rec, err := edits[i].EncodeLevelDB(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	before := dirState(t, dir)
	for _, ro := range []bool{false, true} {
		_, err := Open(dir, &Options{ReadOnly: ro})
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "ReverseBytewise") {
			t.Fatalf("read-only %v: %v", ro, err)
		}
	}
	if !sameDirState(before, dirState(t, dir)) {
		t.Fatal("a refused Open changed the directory")
	}
}
