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
		`(?m)^  memtable +miss$`,
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
