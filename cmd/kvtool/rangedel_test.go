package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/wal"
)

// buildRangeDelStore makes a store, closed, whose range tombstones lie
// everywhere kvtool reads them:
//
//   - a level-1 table of key(0..numKeys-1) (written as seqs 1..numKeys;
//     the first compaction, with no snapshot, made them all 0) and the
//     tombstones [a, key00002)#2001 and [key01990, zz)#2002, kept with the
//     keys they cover by a snapshot during the compaction that wrote it:
//     its bounds are a#2001,RANGEDEL and zz#2002,RANGEDEL;
//   - a level-0 table that holds only the tombstone [key00100,
//     key00200)#2003, no point entry;
//   - in the log, a batch of a put of wal-a (2004), the range deletion
//     [key00300, key00400) (2005) and a delete of key00500 (2006), then a
//     put of key00350 (2007), which the range deletion does not hide.
func buildRangeDelStore(t *testing.T, p filter.Policy) string {
	t.Helper()
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{FilterPolicy: p})
	if err != nil {
		t.Fatal(err)
	}
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var b db.Batch
	for i := 0; i < numKeys; i++ {
		b.Put(key(i), value(i))
	}
	check(d.Write(&b, nil))
	check(d.CompactRange(nil, nil))
	snap := d.NewSnapshot()
	check(d.DeleteRange([]byte("a"), key(2), nil))
	check(d.DeleteRange(key(1990), []byte("zz"), nil))
	check(d.CompactRange(nil, nil))
	snap.Release()
	check(d.DeleteRange(key(100), key(200), nil))
	check(d.Flush())
	b.Reset()
	b.Put([]byte("wal-a"), []byte("A"))
	b.DeleteRange(key(300), key(400))
	b.Delete(key(500))
	check(d.Write(&b, nil))
	check(d.Put(key(350), []byte("again"), nil))
	check(d.Close())
	return dir
}

// rangeDelLiveKeys are the keys buildRangeDelStore's store holds, in order.
func rangeDelLiveKeys() []string {
	var keys []string
	for i := 2; i < 1990; i++ {
		switch {
		case i >= 100 && i < 200, i >= 300 && i < 400 && i != 350, i == 500:
			continue
		}
		keys = append(keys, string(key(i)))
	}
	return append(keys, "wal-a")
}

// rangeDelTables returns the two tables of buildRangeDelStore's store: the
// one with point entries and the one of a tombstone alone.
func rangeDelTables(t *testing.T, dir string) (points, tombstoneOnly string) {
	t.Helper()
	tables := storeFiles(t, dir, ".sst")
	if len(tables) != 2 {
		lsm, _ := mustRun(t, 0, "lsm", dir)
		t.Fatalf("the store holds %d tables, want 2:\n%s", len(tables), lsm)
	}
	for _, sst := range tables {
		if n, ok := tableEntries(sst); ok && n == 0 {
			tombstoneOnly = sst
		} else {
			points = sst
		}
	}
	if points == "" || tombstoneOnly == "" {
		t.Fatalf("no table without point entries among %v", tables)
	}
	return points, tombstoneOnly
}

// TestRangeDelSST: sst dump lists a table's range tombstones, in the
// format of the tool's other keys; sst props counts them and gives the
// bounds with them; sst check verifies such tables, even one without any
// point entry.
func TestRangeDelSST(t *testing.T) {
	dir := buildRangeDelStore(t, nil)
	points, only := rangeDelTables(t, dir)

	out, _ := mustRun(t, 0, "sst", "dump", points)
	for _, want := range []string{
		"range tombstones (2):\n  [a, key00002)#2001\n  [key01990, zz)#2002\nkey00000#0,SET => value00000\n",
		"key01999#0,SET => value01999\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("sst dump lacks %q:\n%.600s", want, out)
		}
	}
	out, _ = mustRun(t, 0, "sst", "dump", "--hex", "--no_entries", points)
	if !strings.HasSuffix(out, "range tombstones (2):\n  [61, 6b65793030303032)#2001\n  [6b65793031393930, 7a7a)#2002\n") {
		t.Errorf("sst dump --hex --no_entries:\n%s", out)
	}
	out, _ = mustRun(t, 0, "sst", "dump", "--max_len", "3", "--limit", "1", points)
	if !strings.Contains(out, "  [a, key...(8 bytes))#2001\n") {
		t.Errorf("sst dump --max_len 3 does not abbreviate the tombstones' keys:\n%s", out)
	}

	out, _ = mustRun(t, 0, "sst", "dump", "--blocks", only)
	for _, want := range []string{"0 entries in 0 data blocks", `meta block "bloomkv.rangedel"`} {
		if !strings.Contains(out, want) {
			t.Errorf("sst dump --blocks of a table of a tombstone alone lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, "range tombstones (1):\n  [key00100, key00200)#2003\n") {
		t.Errorf("sst dump of a table of a tombstone alone:\n%s", out)
	}

	out, _ = mustRun(t, 0, "sst", "props", points)
	for _, want := range []string{"smallest key: key00000#0,SET\n", "largest key: key01999#0,SET\n",
		"range deletions: 2\n", "bounds with range deletions: a#2001,RANGEDEL .. zz#2002,RANGEDEL\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("sst props lacks %q:\n%s", want, out)
		}
	}
	out, _ = mustRun(t, 0, "sst", "props", only)
	for _, want := range []string{"entries: 0\n", "smallest key: none (no point entries)\n", "largest key: none (no point entries)\n",
		"range deletions: 1\n", "bounds with range deletions: key00100#2003,RANGEDEL .. key00200#2003,RANGEDEL\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("sst props of a table of a tombstone alone lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "malformed") {
		t.Errorf("sst props:\n%s", out)
	}

	out, _ = mustRun(t, 0, "sst", "check", points)
	if !strings.Contains(out, fmt.Sprintf("checksums: ok (%d data blocks, %d entries, 2 range tombstones)", strings.Count(mustDumpBlocks(t, points), "data block "), numKeys)) {
		t.Errorf("sst check:\n%s", out)
	}
	out, _ = mustRun(t, 0, "sst", "check", only)
	if !strings.Contains(out, "checksums: ok (0 data blocks, 0 entries, 1 range tombstone)") {
		t.Errorf("sst check of a table of a tombstone alone:\n%s", out)
	}

	// A damaged range-deletion block is damage, not a panic.
	l := openLayout(t, only)
	for _, m := range l.Meta {
		if m.Name == "bloomkv.rangedel" {
			flipByte(t, only, int64(m.Offset+m.Size/2))
		}
	}
	if code, _, errs := runTool(t, "sst", "check", only); code != exitFailure || !strings.Contains(errs, "corruption") {
		t.Errorf("sst check of a damaged range-deletion block: exit %d, %q", code, errs)
	}
}

// mustDumpBlocks returns sst dump --blocks --no_entries of path.
func mustDumpBlocks(t *testing.T, path string) string {
	t.Helper()
	out, _ := mustRun(t, 0, "sst", "dump", "--blocks", "--no_entries", path)
	return out
}

// openLayout returns the layout of the table at path.
func openLayout(t *testing.T, path string) *sstable.Layout {
	t.Helper()
	tbl, err := openTableFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.close()
	return tbl.layout
}

// TestRangeDelManifestAndLSM: manifest dump and lsm show each table's
// count of range tombstones and its bounds of kind RANGEDEL (which
// base.ParseInternalKey refuses), and check verifies such a store.
func TestRangeDelManifestAndLSM(t *testing.T) {
	dir := buildRangeDelStore(t, nil)
	points, only := rangeDelTables(t, dir)

	out, errs := mustRun(t, 0, "manifest", "dump", dir)
	for _, want := range []string{
		fmt.Sprintf("%06d size=%d seqs=0-2002 [a#2001,RANGEDEL .. zz#2002,RANGEDEL] rangedels=2\n", tableNum(t, points), fileSize(t, points)),
		fmt.Sprintf("%06d size=%d seqs=2003-2003 [key00100#2003,RANGEDEL .. key00200#2003,RANGEDEL] rangedels=1\n", tableNum(t, only), fileSize(t, only)),
		"[key00000#0,SET .. key01999#0,SET]\n", // the table before the tombstones
	} {
		if !strings.Contains(out, want) {
			t.Errorf("manifest dump lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "malformed") || strings.Contains(out, "ERROR") || errs != "" {
		t.Errorf("manifest dump:\n%s%s", out, errs)
	}

	out, errs = mustRun(t, 0, "lsm", dir)
	for _, row := range []string{
		fmt.Sprintf(`(?m)^level +file +size +entries +rangedels +filter +bits/key +seqs +smallest \.\. largest$`),
		fmt.Sprintf(`(?m)^L1 +%06d +\S+ +%d +2 +%s +\d+\.\d+ +0-2002 +a \.\. zz \(tombstone end\)$`, tableNum(t, points), numKeys, regexp.QuoteMeta(filter.BloomPolicyName)),
		fmt.Sprintf(`(?m)^L0 +%06d +\S+ +0 +1 +%s +0\.00 +2003-2003 +key00100 \.\. key00200 \(tombstone end\)$`, tableNum(t, only), regexp.QuoteMeta(filter.BloomPolicyName)),
	} {
		if !regexp.MustCompile(row).MatchString(out) {
			t.Errorf("lsm does not match %s:\n%s", row, out)
		}
	}
	if errs != "" {
		t.Errorf("lsm stderr: %s", errs)
	}

	out, errs = mustRun(t, 0, "check", dir)
	for _, want := range []string{
		fmt.Sprintf("L1 %06d.sst: ok (%d entries, 2 range tombstones, ", tableNum(t, points), numKeys),
		fmt.Sprintf("L0 %06d.sst: ok (0 entries, 1 range tombstone, ", tableNum(t, only)),
		"OK: MANIFEST, 2 tables, 2 log records verified\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check lacks %q:\n%s%s", want, out, errs)
		}
	}
}

// fileSize returns the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// rewriteManifest gives dir a new MANIFEST, named by CURRENT, that
// describes the store's version with each table's metadata changed by fn.
func rewriteManifest(t *testing.T, dir string, fn func(m *manifest.FileMetadata)) {
	t.Helper()
	st, err := loadState(dir)
	if err != nil || len(st.problems) > 0 {
		t.Fatalf("loadState: %v %v", err, st.problems)
	}
	num := st.nextFileNum
	e := st.version.Snapshot(num+1, st.lastSeq, st.logNum, st.comparer)
	for i, nf := range e.NewFiles {
		m := *nf.Meta
		fn(&m)
		e.NewFiles[i].Meta = &m
	}
	name := fmt.Sprintf("MANIFEST-%06d", num)
	var buf bytes.Buffer
	if err := wal.NewWriter(&buf).AddRecord(e.Encode(nil)); err != nil {
		t.Fatal(err)
	}
	for file, b := range map[string][]byte{name: buf.Bytes(), "CURRENT": []byte(name + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRangeDelCheckFindsManifestMismatch: check compares a table's range
// tombstones with what the MANIFEST says of them: their count (a MANIFEST
// that counts none hides them from the store's reads) and the bounds
// that cover them.
func TestRangeDelCheckFindsManifestMismatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(m *manifest.FileMetadata)
		want string
	}{
		{"count", func(m *manifest.FileMetadata) {
			if m.RangeDels == 2 {
				m.RangeDels = 0
			}
		}, "the table holds 2 range tombstones, the MANIFEST says 0"},
		{"bounds", func(m *manifest.FileMetadata) {
			if m.RangeDels == 2 {
				m.Smallest = base.MakeInternalKey(key(0), 1, base.KindSet)
				m.Largest = base.MakeInternalKey(key(numKeys-1), numKeys, base.KindSet)
			}
		}, "key range [a#2001,RANGEDEL .. zz#2002,RANGEDEL] differs from the MANIFEST's [key00000#1,SET .. key01999#2000,SET]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := buildRangeDelStore(t, nil)
			mustRun(t, 0, "check", dir)
			rewriteManifest(t, dir, tc.fn)
			out, errs := mustRun(t, 1, "check", dir)
			if !strings.Contains(out, "ERROR L1 ") || !strings.Contains(errs, tc.want) {
				t.Errorf("check:\n%s%s\nwant %q", out, errs, tc.want)
			}
			if strings.Count(out, "ERROR") != 1 {
				t.Errorf("check reports more than the changed table:\n%s", out)
			}
		})
	}
}

// TestRangeDelWALDump: wal dump prints a range deletion as RANGEDEL
// [start, end) with its sequence number, among the batch's other writes,
// and a batch holding one is not damaged; check agrees.
func TestRangeDelWALDump(t *testing.T) {
	dir := buildRangeDelStore(t, nil)
	log := oneFile(t, dir, ".log")
	out, errs := mustRun(t, 0, "wal", "dump", log)
	for _, want := range []string{
		"seq 2004, count 3, ",
		"\n  2004 SET wal-a => A\n  2005 RANGEDEL [key00300, key00400)\n  2006 DEL key00500\n",
		"\n  2007 SET key00350 => again\n",
		"--- 2 records, 4 writes\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("wal dump lacks %q:\n%s", want, out)
		}
	}
	if errs != "" || strings.Contains(out, "ERROR") {
		t.Errorf("wal dump reports damage:\n%s%s", out, errs)
	}
	out, _ = mustRun(t, 0, "wal", "dump", "--hex", log)
	if !strings.Contains(out, "  2005 RANGEDEL [6b65793030333030, 6b65793030343030)\n") {
		t.Errorf("wal dump --hex:\n%s", out)
	}
	out, _ = mustRun(t, 0, "wal", "dump", "--max_len", "4", log)
	if !strings.Contains(out, "  2005 RANGEDEL [key0...(8 bytes), key0...(8 bytes))\n") {
		t.Errorf("wal dump --max_len 4:\n%s", out)
	}

	// A log whose first record is a batch of a range deletion alone is
	// a log, not a file of an unknown kind.
	dir = t.TempDir()
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteRange([]byte("b"), []byte("c"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	log = oneFile(t, dir, ".log")
	renamed := writeFile(t, "some-file", readFile(t, log))
	for _, path := range []string{log, renamed} {
		out, errs = mustRun(t, 0, "wal", "dump", path)
		if !strings.Contains(out, "  1 RANGEDEL [b, c)\n--- 1 records, 1 writes\n") || errs != "" {
			t.Errorf("wal dump %s:\n%s%s", path, out, errs)
		}
	}
	if out, _ := mustRun(t, 0, "check", dir); !strings.Contains(out, ".log: ok (live, 1 records, 1 writes)") {
		t.Errorf("check:\n%s", out)
	}
}

// rangeDelBatch encodes a batch record (as the log holds it) with first
// sequence number seq: a put of k => v, and the range deletion [start,
// end).
func rangeDelBatch(seq uint64, k, v, start, end string) []byte {
	rec := binary.LittleEndian.AppendUint64(nil, seq)
	rec = binary.LittleEndian.AppendUint32(rec, 2)
	for _, w := range []struct {
		kind base.Kind
		a, b string
	}{{base.KindSet, k, v}, {base.KindRangeDelete, start, end}} {
		rec = append(rec, byte(w.kind))
		rec = binary.AppendUvarint(rec, uint64(len(w.a)))
		rec = append(rec, w.a...)
		rec = binary.AppendUvarint(rec, uint64(len(w.b)))
		rec = append(rec, w.b...)
	}
	return rec
}

// TestRangeDelBatchDecoding: kvtool's batch decoding reads a range
// deletion (key: start, value: end), tells a record holding one for a
// log's, and reports a batch cut anywhere, or one whose range is empty, as
// damaged without panicking.
func TestRangeDelBatchDecoding(t *testing.T) {
	rec := rangeDelBatch(7, "k", "v", "a", "m")
	b, err := decodeBatch(rec)
	if err != nil {
		t.Fatalf("decodeBatch: %v", err)
	}
	if b.seq != 7 || len(b.ops) != 2 || b.ops[1].Kind != base.KindRangeDelete || string(b.ops[1].Key) != "a" || string(b.ops[1].Value) != "m" {
		t.Fatalf("decodeBatch = %+v", b)
	}
	if k := classifyRecord(rec); k != kindWAL {
		t.Errorf("classifyRecord of a batch with a range deletion = %v, want a log's", k)
	}
	for n := 0; n < len(rec); n++ {
		if _, err := decodeBatch(rec[:n]); err == nil {
			t.Errorf("decodeBatch of the batch cut to %d bytes: no error", n)
		}
	}
	for _, bad := range [][]byte{rangeDelBatch(7, "k", "v", "m", "a"), rangeDelBatch(7, "k", "v", "a", "a")} {
		if _, err := decodeBatch(bad); err == nil || !isCorruption(err) {
			t.Errorf("decodeBatch of an empty range: %v, want corruption", err)
		}
	}
	// Every kind byte, and every length byte changed.
	for i := range rec {
		for _, x := range []byte{0x01, 0x02, 0x03, 0x80, 0xff} {
			d := bytes.Clone(rec)
			d[i] ^= x
			decodeBatch(d)
			classifyRecord(d)
		}
	}
}

// TestRangeDelReads: get and scan open the store with db.Open, so the keys
// a range deletion removed (in a table, in a table of tombstones alone, in
// the log) are not shown; a checkpoint of the store keeps them deleted,
// and so does compacting the checkpoint.
func TestRangeDelReads(t *testing.T) {
	dir := buildRangeDelStore(t, nil)
	want := strings.Join(rangeDelLiveKeys(), "\n") + "\n"
	out, _ := mustRun(t, 0, "scan", "--keys_only", dir)
	if out != want {
		t.Fatalf("scan shows %d keys, want %d:\n%.400s", strings.Count(out, "\n"), strings.Count(want, "\n"), out)
	}
	getsAndScans := func(dir string) {
		t.Helper()
		for _, k := range []string{"key00000", "key00001", "key00100", "key00150", "key00199", "key00300", "key00399", "key00500", "key01990", "key01999"} {
			if _, errs := mustRun(t, 1, "get", dir, k); !strings.Contains(errs, "not found") {
				t.Errorf("get %s: %q", k, errs)
			}
		}
		for k, v := range map[string]string{"key00002": "value00002", "key00099": "value00099", "key00200": "value00200",
			"key00350": "again", "key00400": "value00400", "key01989": "value01989", "wal-a": "A"} {
			if out, _ := mustRun(t, 0, "get", dir, k); out != v+"\n" {
				t.Errorf("get %s = %q, want %q", k, out, v)
			}
		}
		if out, _ := mustRun(t, 0, "scan", "--start", "key00095", "--end", "key00205", "--keys_only", dir); out != "key00095\nkey00096\nkey00097\nkey00098\nkey00099\nkey00200\nkey00201\nkey00202\nkey00203\nkey00204\n" {
			t.Errorf("scan across a range deletion:\n%s", out)
		}
		if out, _ := mustRun(t, 0, "scan", "--prefix", "key003", "--keys_only", dir); out != "key00350\n" {
			t.Errorf("scan --prefix key003:\n%s", out)
		}
	}
	getsAndScans(dir)

	dest := filepath.Join(t.TempDir(), "copy")
	mustRun(t, 0, "checkpoint", dir, dest)
	if out, _ := mustRun(t, 0, "scan", "--keys_only", dest); out != want {
		t.Fatalf("the checkpoint scans %d keys, want %d", strings.Count(out, "\n"), strings.Count(want, "\n"))
	}
	getsAndScans(dest)
	if out, _ := mustRun(t, 0, "check", dest); !strings.Contains(out, "OK: ") {
		t.Errorf("check of the checkpoint:\n%s", out)
	}
	// The checkpoint's table of the log's writes holds its range
	// deletion.
	if out, _ := mustRun(t, 0, "manifest", "dump", dest); !strings.Contains(out, "rangedels=") || strings.Contains(out, "malformed") {
		t.Errorf("manifest dump of the checkpoint:\n%s", out)
	}
	if out, _ := mustRun(t, 0, "scan", "--keys_only", dir); out != want {
		t.Errorf("checkpoint changed the store's keys")
	}

	d, err := db.Open(dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if out, _ := mustRun(t, 0, "scan", "--keys_only", dest); out != want {
		t.Errorf("the compacted checkpoint scans %d keys, want %d", strings.Count(out, "\n"), strings.Count(want, "\n"))
	}
	getsAndScans(dest)
	mustRun(t, 0, "check", dest)
}

// TestRangeDelStoreFilters: a table of range tombstones alone has an empty
// filter, which tells its policy and probe count but not its budget: the
// policies kvtool infers for its writes ignore it when the store has other
// tables, and a store with no other table gets its policy at the smallest
// budget with its probe count.
func TestRangeDelStoreFilters(t *testing.T) {
	for _, tc := range []struct {
		p    filter.Policy
		want string // describeFilter
		k    string // filter parameters
	}{
		{nil, filter.BloomPolicyName + ", 10 bits/key", "k=6,"},
		{filter.NewBlockedBloomPolicy(14), filter.BlockedBloomPolicyName + ", 14 bits/key", "k=9,"},
		{filter.NewLevelDBBloomPolicy(20), filter.LevelDBBloomPolicyName + ", 20 bits/key", "k=13,"},
	} {
		dir := buildRangeDelStore(t, tc.p)
		sf := storeFilters(dir)
		if got := sf.describe(); got != tc.want {
			t.Errorf("store policy %q, want %q at every level", got, tc.want)
		}
		l0 := sf.policy
		if len(sf.levels) > 0 && sf.levels[0] != nil {
			l0 = sf.levels[0]
		}
		if got := describeFilter(l0); got != tc.want {
			t.Errorf("level 0, of a table of a tombstone alone, gets %q, want %q", got, tc.want)
		}
		before := len(storeFiles(t, dir, ".sst"))
		if _, errs := mustRun(t, 0, "put", dir, "k", "v"); errs != "" {
			t.Errorf("put: %s", errs)
		}
		if n := len(storeFiles(t, dir, ".sst")); n != before+1 {
			t.Fatalf("put wrote %d tables, want 1", n-before)
		}
		out, _ := mustRun(t, 0, "sst", "props", newestTable(t, dir))
		if !strings.Contains(out, "filter policy: "+l0.Name()) || !strings.Contains(out, "filter parameters: "+tc.k) {
			t.Errorf("the table put wrote, want %s:\n%s", tc.want, out)
		}
	}

	// A store whose only table holds a tombstone alone.
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{FilterPolicy: filter.NewBlockedBloomPolicy(14)})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteRange([]byte("a"), []byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	oneFile(t, dir, ".sst")
	p := storeFilters(dir).policy
	if bk, ok := p.(filter.BitsPerKeyer); !ok || p.Name() != filter.BlockedBloomPolicyName || bk.NumProbes() != 9 {
		t.Errorf("policy of a store of a tombstone alone: %s, want %s with 9 probes", describeFilter(p), filter.BlockedBloomPolicyName)
	}
}

// TestFormatBound: table bounds of kind RANGEDEL print as other keys do;
// a data block's entries still may not be of that kind.
func TestFormatBound(t *testing.T) {
	rd := base.MakeInternalKey([]byte("k\x00"), 9, base.KindRangeDelete)
	for _, tc := range []struct {
		got, want string
	}{
		{byteFormat{}.formatBound(rd), `k\x00#9,RANGEDEL`},
		{byteFormat{Hex: true}.formatBound(rd), "6b00#9,RANGEDEL"},
		{byteFormat{}.formatBound(base.MakeInternalKey([]byte("k"), 3, base.KindSet)), "k#3,SET"},
		{byteFormat{}.formatBound([]byte("short")), "<malformed internal key 73686f7274>"},
		{byteFormat{}.formatBoundOrNone(nil), "none"},
		{byteFormat{}.formatBoundUser(rd, true), `k\x00 (tombstone end)`},
		{byteFormat{}.formatBoundUser(rd, false), `k\x00`},
		{byteFormat{Max: 1}.formatBoundUser(base.MakeInternalKey([]byte("kk"), 3, base.KindSet), true), "k...(2 bytes)"},
		{byteFormat{}.formatIKey(rd), "<malformed internal key 6b000209000000000000>"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if got := (byteFormat{}).formatBound(base.MakeInternalKey([]byte("k"), 3, base.KindRangeDelete+1)); !strings.HasPrefix(got, "<malformed") {
		t.Errorf("formatBound of an unknown kind = %q", got)
	}
}
