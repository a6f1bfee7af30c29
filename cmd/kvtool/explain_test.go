package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
)

// TestExplain runs kvtool explain on buildStore's store: a key in the
// table, a key the log's batch deleted (answered by the memtable replayed
// from the log), an absent key the filter rules out, and --json.
func TestExplain(t *testing.T) {
	dir := buildStore(t, filter.NewBloomPolicy(10))
	out, _ := mustRun(t, exitOK, "explain", dir, string(key(7)))
	for _, re := range []string{
		`^get "key00007"  →  found  \(0 tables skipped by filter, 0 false positives, 1 data block read from files, 0 data blocks from the cache, `,
		`(?m)^  memtable +filter: not there$`,
		`(?m)^  L0  \d{6}\.sst   filter bloomkv\.BloomFilter64v2 10\.\d bits/key: maybe → index \(in memory\) → block @\d+ \(file, [\d.]+ (B|KiB) → [\d.]+ (B|KiB)\) → found  \(`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("explain of a present key does not match %s:\n%s", re, out)
		}
	}
	out, _ = mustRun(t, exitOK, "explain", dir, string(key(1)))
	if !strings.HasPrefix(out, `get "key00001"  →  deleted`) || !regexp.MustCompile(`(?m)^  memtable +deleted$`).MatchString(out) {
		t.Errorf("explain of a key the log deleted:\n%s", out)
	}
	out, _ = mustRun(t, exitOK, "explain", dir, "key00007x")
	if !strings.HasPrefix(out, `get "key00007x"  →  not found  (1 table skipped by filter`) || !strings.Contains(out, "bits/key: no") {
		t.Errorf("explain of an absent key:\n%s", out)
	}
	out, _ = mustRun(t, exitOK, "explain", "--json", dir, string(key(7)))
	var tr db.LookupTrace
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if tr.Outcome != db.OutcomeFound || string(tr.Key) != string(key(7)) || len(tr.Steps) != 2 || len(tr.Steps[1].Blocks) != 1 {
		t.Errorf("--json trace: %+v", tr)
	}
	mustRun(t, exitUsage, "explain", dir)
}

// TestExplainSeek runs kvtool explain --seek on a store written with a
// prefix extractor and a range filter: kvtool opens it with both (read
// back from the tables), so an absent prefix's scan shows the table its
// prefix filter ruled out, and a present one lands on its first key.
func TestExplainSeek(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{Prefix: filter.FixedPrefix(7), RangeFilter: filter.NewGrafiteRangePolicy(16)})
	if err != nil {
		t.Fatal(err)
	}
	// key(20*i): the 7-byte prefixes "key0000", "key0002", ... hold keys,
	// "key0001", "key0003", ... none.
	for i := 0; i < 500; i++ {
		if err := d.Put(key(20*i), value(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	out, _ := mustRun(t, exitOK, "explain", "--seek", "--prefix", "key0001", dir, "key0001")
	if !strings.HasPrefix(out, `seek "key0001" in ["key0001", "key0002")  →  end of the range  (1 table skipped by filter, 0 data blocks read from files`) ||
		!regexp.MustCompile(`(?m)^  L0  \d{6}\.sst   prefix filter: no$`).MatchString(out) {
		t.Errorf("explain --seek of an absent prefix:\n%s", out)
	}
	// An empty range across two prefixes: the range filter's to rule out.
	out, _ = mustRun(t, exitOK, "explain", "--seek", "--lower", "key00021", "--upper", "key00039", dir, "key00021")
	if !regexp.MustCompile(`(?m)^  L0  \d{6}\.sst   range filter: no$`).MatchString(out) {
		t.Errorf("explain --seek of an empty range:\n%s", out)
	}
	out, _ = mustRun(t, exitOK, "explain", "--seek", "--prefix", "key0002", dir, "key0002")
	if !strings.HasPrefix(out, `seek "key0002" in ["key0002", "key0003")  →  "key00020"`) || !strings.Contains(out, `first entry "key00020"`) {
		t.Errorf("explain --seek of a present prefix:\n%s", out)
	}
	out, _ = mustRun(t, exitOK, "explain", "--seek", "--json", dir, "key00100")
	var tr db.SeekTrace
	if err := json.Unmarshal([]byte(out), &tr); err != nil || !tr.Found || string(tr.Result) != "key00100" {
		t.Errorf("--seek --json: %v\n%s", err, out)
	}
	mustRun(t, exitFailure, "explain", "--prefix", "key", dir, "key")
}
