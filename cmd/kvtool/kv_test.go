package main

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
)

func TestGetPutDelete(t *testing.T) {
	dir := buildStore(t, nil)

	// Keys from the table and from the replayed log.
	for k, want := range map[string]string{"key00000": "value00000", "key01999": "value01999", "wal-a": "A", "wal-b": "B"} {
		out, _ := mustRun(t, 0, "get", dir, k)
		if out != want+"\n" {
			t.Errorf("get %s = %q, want %q", k, out, want+"\n")
		}
	}
	// key(1) was deleted in the log; a missing key fails with status 1.
	for _, k := range []string{"key00001", "nope"} {
		_, errs := mustRun(t, 1, "get", dir, k)
		if !strings.Contains(errs, "not found") {
			t.Errorf("get %s: stderr %q, want \"not found\"", k, errs)
		}
	}

	// put, get, delete, get; with flags after the positional arguments.
	mustRun(t, 0, "put", dir, "new", "line1\nline2")
	if out, _ := mustRun(t, 0, "get", dir, "new"); out != `line1\nline2`+"\n" {
		t.Errorf("get new = %q (text output escapes)", out)
	}
	if out, _ := mustRun(t, 0, "get", "--raw", dir, "new"); out != "line1\nline2" {
		t.Errorf("get --raw new = %q", out)
	}
	mustRun(t, 0, "delete", dir, "new")
	mustRun(t, 1, "get", dir, "new")

	// Binary keys and values through --hex.
	k, v := []byte{0, 0xff, '\\'}, []byte{1, 2, 3, 0}
	mustRun(t, 0, "put", "--hex", dir, hex.EncodeToString(k), hex.EncodeToString(v))
	if out, _ := mustRun(t, 0, "get", dir, "--hex", hex.EncodeToString(k)); out != "01020300\n" {
		t.Errorf("get --hex = %q", out)
	}
	if out, _ := mustRun(t, 0, "get", dir, string(k)); out != `\x01\x02\x03\x00`+"\n" {
		t.Errorf("get text of binary value = %q", out)
	}
	// A key that starts with "-" after "--".
	mustRun(t, 0, "put", dir, "--", "-dash", "x")
	if out, _ := mustRun(t, 0, "get", dir, "--", "-dash"); out != "x\n" {
		t.Errorf("get -dash = %q", out)
	}

	// The store kvtool wrote is the one db sees.
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, err := d.Get(k, nil); err != nil || string(got) != string(v) {
		t.Errorf("db.Get after kvtool put = %q, %v", got, err)
	}
	if _, err := d.Get([]byte("new"), nil); err == nil {
		t.Errorf("db.Get(new) after kvtool delete found it")
	}
}

func TestPutCreate(t *testing.T) {
	dir := t.TempDir() + "/store"
	_, errs := mustRun(t, 1, "put", dir, "k", "v")
	if !strings.Contains(errs, "no store") {
		t.Errorf("put on a missing store: stderr %q", errs)
	}
	mustRun(t, 0, "put", "--create", dir, "k", "v")
	if out, _ := mustRun(t, 0, "get", "--filter", "leveldb:12", dir, "k"); out != "v\n" {
		t.Errorf("get = %q", out)
	}
	// get opens read-only: the write stays in the log, no table is made.
	if out, _ := mustRun(t, 0, "lsm", dir); strings.Contains(out, ".sst") || strings.Contains(out, "Bloom") {
		t.Errorf("lsm after get:\n%s", out)
	}
	// The next read-write open replays the log into a table with the
	// policy it was given: a store does not record its policy, each open
	// chooses.
	mustRun(t, 0, "put", "--filter", "leveldb:12", dir, "k2", "v2")
	out, _ := mustRun(t, 0, "lsm", dir)
	if !strings.Contains(out, "leveldb.BuiltinBloomFilter2") {
		t.Errorf("lsm after put --filter leveldb:12:\n%s", out)
	}
	_, errs = mustRun(t, exitUsage, "get", "--filter", "cuckoo", dir, "k")
	if !strings.Contains(errs, "unknown filter") {
		t.Errorf("bad --filter: %q", errs)
	}
}

func TestScan(t *testing.T) {
	dir := buildStore(t, nil)
	lines := func(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

	out, _ := mustRun(t, 0, "scan", dir)
	got := lines(out)
	// numKeys keys, one deleted, plus wal-a and wal-b.
	if len(got) != numKeys+1 {
		t.Fatalf("scan: %d lines, want %d", len(got), numKeys+1)
	}
	if got[0] != "key00000\tvalue00000" || got[1] != "key00002\tvalue00002" || got[len(got)-1] != "wal-b\tB" {
		t.Errorf("scan lines: %q %q ... %q", got[0], got[1], got[len(got)-1])
	}

	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--prefix", "key0001", "--limit", "3"}, []string{"key00010\tvalue00010", "key00011\tvalue00011", "key00012\tvalue00012"}},
		{[]string{"--start", "key01998"}, []string{"key01998\tvalue01998", "key01999\tvalue01999", "wal-a\tA", "wal-b\tB"}},
		{[]string{"--start", "key00000", "--end", "key00003"}, []string{"key00000\tvalue00000", "key00002\tvalue00002"}},
		{[]string{"--prefix", "wal-", "--keys-only"}, []string{"wal-a", "wal-b"}},
		{[]string{"--prefix", "wal", "--start", "wal-b"}, []string{"wal-b\tB"}},
		{[]string{"--prefix", "key", "--start", "a", "--end", "key00002"}, []string{"key00000\tvalue00000"}},
		{[]string{"--prefix", "zzz"}, nil},
		{[]string{"--hex", "--prefix", hex.EncodeToString([]byte("wal-a"))}, []string{hex.EncodeToString([]byte("wal-a")) + "\t41"}},
		{[]string{"--prefix", "key01999", "--max-len", "4"}, []string{"key0...(8 bytes)\tvalu...(10 bytes)"}},
		// Underscores are the canonical spelling; hyphens work too.
		{[]string{"--prefix", "key01999", "--max_len", "4"}, []string{"key0...(8 bytes)\tvalu...(10 bytes)"}},
		{[]string{"--prefix", "key01999", "-max_len=4"}, []string{"key0...(8 bytes)\tvalu...(10 bytes)"}},
		{[]string{"--prefix", "wal-", "--keys_only"}, []string{"wal-a", "wal-b"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, _ := mustRun(t, 0, append([]string{"scan", dir}, tc.args...)...)
			var got []string
			if out != "" {
				got = lines(out)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	mustRun(t, 2, "scan", dir, "--limit", "-1")
	mustRun(t, 2, "scan", dir, "extra")
}

func TestLockedStore(t *testing.T) {
	dir := buildStore(t, nil)
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, args := range [][]string{
		{"get", dir, "key00000"},
		{"put", dir, "k", "v"},
		{"delete", dir, "k"},
		{"scan", dir},
		{"metrics", dir},
	} {
		_, errs := mustRun(t, 1, args...)
		if !strings.Contains(errs, "is locked: another process has it open") {
			t.Errorf("kvtool %s on a store held open: stderr %q", args[0], errs)
		}
	}
	// The commands that read files take no lock.
	mustRun(t, 0, "lsm", dir)
	mustRun(t, 0, "check", dir)
	d.Close()

	// Next to a read-only DB (another reader), the read commands run and
	// the write commands are locked out.
	r, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mustRun(t, 0, "get", dir, "key00000")
	mustRun(t, 0, "scan", dir)
	mustRun(t, 0, "metrics", dir)
	for _, args := range [][]string{{"put", dir, "k", "v"}, {"delete", dir, "k"}} {
		_, errs := mustRun(t, 1, args...)
		if !strings.Contains(errs, "is locked: another process has it open") {
			t.Errorf("kvtool %s on a store open read-only: stderr %q", args[0], errs)
		}
	}
}

func TestMetrics(t *testing.T) {
	dir := buildStore(t, nil)
	out, _ := mustRun(t, 0, "metrics", dir)
	if !strings.Contains(out, "L0") || !strings.Contains(out, "total") {
		t.Errorf("metrics:\n%s", out)
	}
}

func TestUsage(t *testing.T) {
	if code, _, errs := runTool(t); code != 2 || !strings.Contains(errs, "usage: kvtool COMMAND") {
		t.Errorf("no arguments: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runTool(t, "frobnicate"); code != 2 || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, stderr %q", code, errs)
	}
	if code, out, _ := runTool(t, "--help"); code != 0 || !strings.Contains(out, "manifest") {
		t.Errorf("--help: exit %d, stdout %q", code, out)
	}
	for _, c := range [][]string{
		{"get"}, {"put"}, {"delete"}, {"scan"}, {"lsm"}, {"check"}, {"metrics"},
		{"sst", "dump"}, {"sst", "props"}, {"sst", "check"}, {"manifest", "dump"}, {"wal", "dump"},
	} {
		name := strings.Join(c, " ")
		code, out, _ := runTool(t, append(c, "--help")...)
		if code != 0 || !strings.HasPrefix(out, "usage: kvtool "+name+" ") {
			t.Errorf("%s --help: exit %d, stdout %q", name, code, out)
		}
		if code, out, _ := runTool(t, "help", c[0]); code != 0 || !strings.HasPrefix(out, "usage: kvtool "+c[0]) {
			t.Errorf("help %s: exit %d, stdout %q", c[0], code, out)
		}
		// No arguments, and an unknown flag, are usage errors.
		if code, _, errs := runTool(t, c...); code != 2 || !strings.Contains(errs, "usage: kvtool "+name) {
			t.Errorf("%s without arguments: exit %d, stderr %q", name, code, errs)
		}
		if code, _, errs := runTool(t, append(c, "--no-such-flag", "x")...); code != 2 || !strings.Contains(errs, "no-such-flag") {
			t.Errorf("%s --no-such-flag: exit %d, stderr %q", name, code, errs)
		}
	}
	for _, g := range []string{"sst", "manifest", "wal"} {
		if code, _, _ := runTool(t, g); code != 2 {
			t.Errorf("%s without subcommand: exit %d", g, code)
		}
		if code, _, errs := runTool(t, g, "bogus"); code != 2 || !strings.Contains(errs, "unknown subcommand") {
			t.Errorf("%s bogus: exit %d, stderr %q", g, code, errs)
		}
		if code, out, _ := runTool(t, g, "--help"); code != 0 || !strings.HasPrefix(out, "usage: kvtool "+g) {
			t.Errorf("%s --help: exit %d, stdout %q", g, code, out)
		}
	}
}

// TestFlagSpelling: help shows the underscore spellings (kvbench's and
// db_bench's convention), and an unknown flag in either spelling is still a
// usage error.
func TestFlagSpelling(t *testing.T) {
	out, _ := mustRun(t, 0, "scan", "--help")
	if !strings.Contains(out, "-max_len") || !strings.Contains(out, "-keys_only") || strings.Contains(out, "-max-len") {
		t.Errorf("scan --help does not show the underscore spellings:\n%s", out)
	}
	dir := buildStore(t, nil)
	for _, bad := range []string{"--max-lenn", "--no-such-flag", "--no_such_flag"} {
		if code, _, _ := runTool(t, "scan", bad, "1", dir); code != exitUsage {
			t.Errorf("scan %s: exit %d, want %d", bad, code, exitUsage)
		}
	}
}

// TestWritesKeepTheStorePolicy: kvtool's writes use the policy of the
// store's newest table (here a blocked Bloom filter of 14 bits per key),
// not kvtool's default, unless --filter says otherwise.
func TestWritesKeepTheStorePolicy(t *testing.T) {
	for _, tc := range []struct {
		p    filter.Policy
		flag string
		want string
	}{
		{filter.NewBlockedBloomPolicy(14), "", filter.BlockedBloomPolicyName},
		{filter.NewBinaryFusePolicy(16), "", filter.BinaryFusePolicyName},
		{filter.None, "", ""},
		{filter.NewBlockedBloomPolicy(14), "--filter=leveldb:8", filter.LevelDBBloomPolicyName},
	} {
		dir := buildStore(t, tc.p)
		args := []string{"put", dir, "new-key", "new-value"}
		if tc.flag != "" {
			args = append(args, tc.flag)
		}
		before := len(storeFiles(t, dir, ".sst"))
		mustRun(t, 0, args...)
		// The put's open replays the store's log (wal-a, wal-b) into a new
		// table: the newest table is kvtool's.
		tables := storeFiles(t, dir, ".sst")
		if len(tables) != before+1 {
			t.Fatalf("kvtool put wrote %d tables, want 1", len(tables)-before)
		}
		newest := tables[len(tables)-1]
		out, _ := mustRun(t, 0, "sst", "props", newest)
		wantLine := "filter policy: " + tc.want
		if tc.want == "" {
			wantLine = "filter policy: none"
		}
		if !strings.Contains(out, wantLine) {
			t.Errorf("%s %s: the table kvtool wrote says:\n%s\nwant %q", tc.p.Name(), tc.flag, out, wantLine)
		}
	}
}

// TestCheckpointCommand: kvtool checkpoint copies a store (tables and the
// writes still in its log) without changing it, and refuses an existing
// destination.
func TestCheckpointCommand(t *testing.T) {
	dir := buildStore(t, nil)
	before, _ := mustRun(t, 0, "scan", dir)
	dest := filepath.Join(t.TempDir(), "copy")
	mustRun(t, 0, "checkpoint", dir, dest)
	after, _ := mustRun(t, 0, "scan", dest)
	if after != before {
		t.Fatalf("the checkpoint scans differently from the store")
	}
	if again, _ := mustRun(t, 0, "scan", dir); again != before {
		t.Fatalf("checkpoint changed the store")
	}
	if _, errs := mustRun(t, 1, "checkpoint", dir, dest); !strings.Contains(errs, "already exists") {
		t.Errorf("checkpoint to an existing directory: %q", errs)
	}
	mustRun(t, 2, "checkpoint", dir)
}

// TestRepeatedPutsKeepTheBudget: each put replays the last log into a
// one-entry table, whose filter measures far more bits per key than its
// budget; repeated puts must not grow the store's budget (the review found
// 72, 136, 200, 264 bits/key after four puts).
func TestRepeatedPutsKeepTheBudget(t *testing.T) {
	for _, p := range []filter.Policy{nil, filter.NewBinaryFusePolicy(8)} {
		dir := buildStore(t, p)
		for _, k := range []string{"b", "c", "d", "e", "f"} {
			mustRun(t, 0, "put", dir, k, "1")
		}
		got := storePolicy(dir)
		want := filter.NewBloomPolicy(10)
		if p != nil {
			want = p
		}
		if got.Name() != want.Name() {
			t.Fatalf("policy %s after puts, want %s", got.Name(), want.Name())
		}
		if bk, ok := got.(filter.BitsPerKeyer); ok && bk.BitsPerKey() != 10 {
			t.Fatalf("%s budget grew to %d bits/key", got.Name(), bk.BitsPerKey())
		}
	}
}

// TestBadFilterFlagIsUsageError: a --filter kvtool cannot parse is a usage
// error (exit 2), and nothing is created.
func TestBadFilterFlagIsUsageError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	for _, bad := range []string{"--filter=bloom:0", "--filter=fuse:12", "--filter=BLOOM", "--filter=bloom:"} {
		mustRun(t, exitUsage, "put", "--create", bad, dir, "a", "b")
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("a refused put created the store")
	}
}
