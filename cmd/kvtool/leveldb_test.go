package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/browsertest"
	"github.com/bloomkv/bloomkv/internal/ldbcompat"
)

// leveldbFixtures are the stores LevelDB 1.23 and goleveldb wrote
// (internal/ldbcompat describes their writes), with the name each gives
// its tables' filter.
var leveldbFixtures = []struct {
	name, dir, policy string
}{
	{"cpp", "../../db/testdata/leveldb/cpp", filter.LevelDBBloomPolicyName},
	{"goleveldb", "../../db/testdata/leveldb/goleveldb", filter.GoLevelDBBloomPolicyName},
}

// copyStore copies the store in src (its files; it has no directories)
// into a new temporary directory: kvtool is pointed at copies only.
func copyStore(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := ldbcompat.CopyStore(src, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// sameSnapshot reports how dir differs from its snapshot before.
func sameSnapshot(t *testing.T, dir string, before, after dirSnapshot) {
	t.Helper()
	for name, b := range before {
		if a, ok := after[name]; !ok {
			t.Errorf("%s: %s was removed", dir, name)
		} else if a != b {
			t.Errorf("%s: %s changed", dir, name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s: %s was created", dir, name)
		}
	}
}

// checkedTables returns the live tables' paths, from kvtool check's lines
// "L1 000040.ldb: ok (645 entries, ...)", with their entry counts.
func checkedTables(t *testing.T, dir, checkOut string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, m := range regexp.MustCompile(`(?m)^L[0-9] ([0-9]{6}\.[a-z]+): ok \(([0-9]+) entries`).FindAllStringSubmatch(checkOut, -1) {
		n, _ := strconv.ParseUint(m[2], 10, 64)
		out[filepath.Join(dir, m[1])] = n
	}
	if len(out) == 0 {
		t.Fatalf("check lists no live table:\n%s", checkOut)
	}
	return out
}

// TestLevelDBStores runs every command that reads a store on copies of
// the stores LevelDB 1.23 and goleveldb wrote: each works, says the store
// is in LevelDB's format, names the tables' filter policy as the tables
// do, agrees with the model of the fixtures' writes, and changes nothing
// in the directory (nor in the committed fixture).
func TestLevelDBStores(t *testing.T) {
	model := ldbcompat.Model()
	for _, fx := range leveldbFixtures {
		t.Run(fx.name, func(t *testing.T) {
			fixtureBefore := snapshotDir(t, fx.dir)
			dir := copyStore(t, fx.dir)
			ageDir(t, dir) // a rewrite shows in the times too
			before := snapshotDir(t, dir)
			policyCol := regexp.MustCompile(`\s` + regexp.QuoteMeta(fx.policy) + `\s`)

			// check: the whole store verifies, in LevelDB's format.
			checkOut, errs := mustRun(t, 0, "check", dir)
			for _, want := range []string{"format: leveldb (comparer leveldb.BytewiseComparator)\n", "OK: MANIFEST, "} {
				if !strings.Contains(checkOut, want) {
					t.Errorf("check lacks %q:\n%s", want, checkOut)
				}
			}
			if strings.Contains(checkOut, "ERROR") || errs != "" {
				t.Errorf("check:\n%s%s", checkOut, errs)
			}
			tables := checkedTables(t, dir, checkOut)
			var entries uint64
			for path, n := range tables {
				if !strings.HasSuffix(path, ".ldb") {
					t.Errorf("live table %s is not NNNNNN.ldb", path)
				}
				entries += n
			}

			// lsm: every table read, entries counted, seqs unknown.
			out, errs := mustRun(t, 0, "lsm", dir)
			if !strings.Contains(out, ", format leveldb\n") || errs != "" {
				t.Errorf("lsm:\n%s%s", out, errs)
			}
			var lsmEntries uint64
			rows := regexp.MustCompile(`(?m)^L[0-9] +[0-9]{6} +\S+ +([0-9?]+) +0 +(.*)$`).FindAllStringSubmatch(out, -1)
			if len(rows) != len(tables) {
				t.Fatalf("lsm lists %d tables, check %d:\n%s", len(rows), len(tables), out)
			}
			for _, r := range rows {
				n, err := strconv.ParseUint(r[1], 10, 64)
				if err != nil {
					t.Errorf("lsm: entries %q", r[1])
				}
				lsmEntries += n
				if !policyCol.MatchString(" "+r[2]) || !strings.Contains(r[2], " unknown ") {
					t.Errorf("lsm row lacks filter %s or seqs unknown: %q", fx.policy, r[0])
				}
			}
			if lsmEntries != entries {
				t.Errorf("lsm counts %d entries, check %d", lsmEntries, entries)
			}

			// manifest dump: the comparer, tag-7 tables without seqs.
			out, errs = mustRun(t, 0, "manifest", "dump", dir)
			for _, want := range []string{"comparer: leveldb.BytewiseComparator\n", "seqs=unknown", "--- format: leveldb (comparer leveldb.BytewiseComparator)\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("manifest dump lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "seqs=0-") || strings.Contains(out, "ERROR") || errs != "" {
				t.Errorf("manifest dump:\n%s%s", out, errs)
			}

			// sst props, dump and check on every live table.
			var sstEntries uint64
			for path, n := range tables {
				props, _ := mustRun(t, 0, "sst", "props", path)
				for _, want := range []string{"format: leveldb (", fmt.Sprintf("entries: %d\n", n), "filter policy: " + fx.policy + "\n",
					"filter parameters: k=6, ", "filter theoretical false-positive rate: "} {
					if !strings.Contains(props, want) {
						t.Errorf("sst props %s lacks %q:\n%s", filepath.Base(path), want, props)
					}
				}
				dump, _ := mustRun(t, 0, "sst", "dump", "--blocks", "--no_entries", path)
				for _, want := range []string{fmt.Sprintf(": %d entries in ", n), "format leveldb\n",
					fmt.Sprintf("meta block %q", "filter."+fx.policy), ", size 48\n"} {
					if !strings.Contains(dump, want) {
						t.Errorf("sst dump %s lacks %q", filepath.Base(path), want)
					}
				}
				dump, _ = mustRun(t, 0, "sst", "dump", path)
				if got := strings.Count(dump, " => ") + strings.Count(dump, ",DEL\n"); uint64(got) != n {
					t.Errorf("sst dump %s prints %d entries, props say %d", filepath.Base(path), got, n)
				}
				check, _ := mustRun(t, 0, "sst", "check", path)
				for _, want := range []string{fmt.Sprintf(" data blocks, %d entries)", n), "filter: " + fx.policy + ", ", "no false negatives", "% measured, "} {
					if !strings.Contains(check, want) {
						t.Errorf("sst check %s lacks %q:\n%s", filepath.Base(path), want, check)
					}
				}
				sstEntries += n
			}
			if sstEntries != entries {
				t.Errorf("sst props count %d entries, check %d", sstEntries, entries)
			}

			// wal dump: batches alone, as many as check verified.
			logRecords := 0
			for _, log := range storeFiles(t, dir, ".log") {
				out, errs := mustRun(t, 0, "wal", "dump", "--counts_only", log)
				m := regexp.MustCompile(`--- ([0-9]+) records, ([0-9]+) writes\n$`).FindStringSubmatch(out)
				if m == nil || errs != "" || strings.Contains(out, "header") || strings.Contains(out, "end of log") {
					t.Fatalf("wal dump %s:\n%s%s", filepath.Base(log), out, errs)
				}
				n, _ := strconv.Atoi(m[1])
				logRecords += n
			}
			if want := fmt.Sprintf("%d log records verified", logRecords); logRecords == 0 || !strings.Contains(checkOut, want) {
				t.Errorf("wal dump reads %d records; check says:\n%s", logRecords, checkOut)
			}

			// scan: the live keys are the model's.
			out, _ = mustRun(t, 0, "scan", dir)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != len(model) {
				t.Errorf("scan prints %d keys, the model holds %d", len(lines), len(model))
			}
			for _, l := range lines {
				k, v, _ := strings.Cut(l, "\t")
				if mv, ok := model[k]; !ok || mv != v {
					t.Errorf("scan: %q => %q; the model has %q (%v)", k, v, mv, ok)
					break
				}
			}

			// get and explain: a live key, a deleted one, an absent one.
			live, deleted := ldbcompat.Key(1), ldbcompat.Key(7)
			if out, _ := mustRun(t, 0, "get", dir, live); out != model[live]+"\n" {
				t.Errorf("get %s: %q, want %q", live, out, model[live])
			}
			mustRun(t, 1, "get", dir, deleted)
			out, _ = mustRun(t, 0, "explain", dir, live)
			if !strings.Contains(out, "→  found") || !strings.Contains(out, "filter "+fx.policy+":") {
				t.Errorf("explain %s:\n%s", live, out)
			}
			for _, k := range []string{deleted, ldbcompat.Absent(1)[0]} {
				if out, _ := mustRun(t, 0, "explain", dir, k); strings.Contains(out, "→  found") {
					t.Errorf("explain %s:\n%s", k, out)
				}
			}

			// The pages: the format, the unknown seqs, measured filters.
			page := filepath.Join(t.TempDir(), "lsm.html")
			out, errs = mustRun(t, 0, "lsm", "--html", page, "--fpr_probes", "2000", dir)
			if !strings.Contains(out, fmt.Sprintf("%d tables", len(tables))) || errs != "" {
				t.Errorf("lsm --html:\n%s%s", out, errs)
			}
			html := string(readFile(t, page))
			for _, want := range []string{`"format":"leveldb"`, `"seqs_unknown":true`, `"filter":"` + fx.policy + `"`, `"filter_known":true`, `"probes":`} {
				if !strings.Contains(html, want) {
					t.Errorf("lsm --html page lacks %s", want)
				}
			}
			page = filepath.Join(t.TempDir(), "explain.html")
			if _, errs := mustRun(t, 0, "explain", "--html", page, dir, live); !strings.Contains(errs, "wrote "+page) {
				t.Errorf("explain --html: %s", errs)
			}
			if html := string(readFile(t, page)); !strings.Contains(html, `"format":"leveldb"`) {
				t.Errorf("explain --html page lacks the format")
			}

			sameSnapshot(t, dir, before, snapshotDir(t, dir))
			sameSnapshot(t, fx.dir, fixtureBefore, snapshotDir(t, fx.dir))
		})
	}
}

// TestLevelDBPagesInBrowser loads the lsm and explain pages of copies of
// the LevelDB and goleveldb stores in Chromium: they render without a
// script error, with a box per live table, the store's format in the
// header, and its tables named NNNNNN.ldb with unknown sequence
// numbers.
func TestLevelDBPagesInBrowser(t *testing.T) {
	browser := browsertest.Require(t)
	for _, fx := range leveldbFixtures {
		dir := copyStore(t, fx.dir)
		path, page := writeLSMPage(t, dir)
		p := pageDataOf(t, page)
		v, live := liveTables(t, dir)
		num := v.Files[0][0].FileNum
		pg := loadPage(t, browser, fmt.Sprintf("%s#%06d", path, num), "", 1280, 800)
		if n := browsertest.Count(pg.DOM, "table"); n != live || len(p.Tables) != live {
			t.Errorf("%s: %d table boxes, %d in the data, %d live tables", fx.name, n, len(p.Tables), live)
		}
		for _, want := range []string{"format leveldb", fmt.Sprintf("Table %06d.ldb", num), "unknown (not in LevelDB's MANIFEST)"} {
			if !strings.Contains(pg.DOM, want) {
				t.Errorf("%s: the lsm page lacks %q", fx.name, want)
			}
		}
		expl := filepath.Join(t.TempDir(), "explain.html")
		mustRun(t, exitOK, "explain", "--html", expl, dir, ldbcompat.Key(1))
		pg = loadPage(t, browser, expl, "", 1280, 800)
		if n := browsertest.Count(pg.DOM, "traced"); n == 0 {
			t.Errorf("%s: the explain page marks no table", fx.name)
		}
		if !strings.Contains(pg.DOM, fmt.Sprintf("L0 %06d.ldb", num)) {
			t.Errorf("%s: the explain page's steps do not name table %06d.ldb", fx.name, num)
		}
	}
}

// TestLevelDBDamagedTable: a LevelDB table whose magic number lost a bit
// is a damaged table under any name, not a file of another kind; one with
// a damaged data block fails sst check and check, naming the .ldb file.
func TestLevelDBDamagedTable(t *testing.T) {
	dir := copyStore(t, leveldbFixtures[0].dir)
	checkOut, _ := mustRun(t, 0, "check", dir)
	var path string
	for p := range checkedTables(t, dir, checkOut) {
		path = p
	}
	sst := readFile(t, path)
	magic := bytes.Clone(sst)
	magic[len(magic)-2] ^= 0x04
	for _, name := range []string{"000009.ldb", "copy"} {
		code, _, errs := runTool(t, "sst", "props", writeFile(t, name, magic))
		if code != exitFailure || !strings.Contains(errs, "corruption: damaged table: it does not end with the table magic number") {
			t.Errorf("sst props of %s with a damaged magic number: exit %d, %q", name, code, errs)
		}
	}
	flipByte(t, path, 100) // in the first data block
	if code, _, errs := runTool(t, "sst", "check", path); code != exitFailure || !strings.Contains(errs, "corruption") {
		t.Errorf("sst check of a damaged data block: exit %d, %q", code, errs)
	}
	out, _ := mustRun(t, 1, "check", dir)
	if !strings.Contains(out, "ERROR L") || !strings.Contains(out, filepath.Base(path)+": ") || !strings.Contains(out, "checksum") {
		t.Errorf("check of a store with a damaged table:\n%s", out)
	}
}
