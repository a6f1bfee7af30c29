package main

import (
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// allCommands lists every command, as its words on the command line.
var allCommands = [][]string{
	{"get"}, {"put"}, {"delete"}, {"scan"}, {"lsm"}, {"check"}, {"metrics"}, {"checkpoint"},
	{"sst", "dump"}, {"sst", "props"}, {"sst", "check"}, {"manifest", "dump"}, {"wal", "dump"},
}

// helpFlag matches a flag line of a command's --help: its name and type.
var helpFlag = regexp.MustCompile(`(?m)^  --(\S+)(?: (\S+))?$`)

// TestFlagSpelling: every command's help lists each multi-word flag once,
// with db_bench's underscores, and says the hyphen spelling works too;
// every such flag is accepted in both spellings, with or without "=".
func TestFlagSpelling(t *testing.T) {
	multi := 0
	for _, c := range allCommands {
		name := strings.Join(c, " ")
		help, _ := mustRun(t, 0, append(c, "--help")...)
		flags := helpFlag.FindAllStringSubmatch(help, -1)
		hasMulti := false
		for _, m := range flags {
			flag, typ := m[1], m[2]
			if strings.Contains(flag, "-") {
				t.Errorf("%s --help lists the hyphen spelling --%s:\n%s", name, flag, help)
			}
			if !strings.Contains(flag, "_") {
				continue
			}
			hasMulti = true
			multi++
			value := map[string]string{"": "true", "int": "1", "string": "x"}[typ]
			if value == "" {
				t.Fatalf("%s --%s: no test value for type %q", name, flag, typ)
			}
			for _, spelling := range []string{flag, strings.ReplaceAll(flag, "_", "-")} {
				args := append(append([]string(nil), c...), "--"+spelling+"="+value, "--help")
				if code, _, errs := runTool(t, args...); code != 0 {
					t.Errorf("kvtool %s: exit %d, want 0 (the flag is accepted)\n%s", strings.Join(args, " "), code, errs)
				}
				if typ != "" {
					args = append(append([]string(nil), c...), "--"+spelling, value, "--help")
					if code, _, errs := runTool(t, args...); code != 0 {
						t.Errorf("kvtool %s: exit %d, want 0\n%s", strings.Join(args, " "), code, errs)
					}
				}
			}
		}
		if hasMulti && !strings.Contains(help, flagConvention) {
			t.Errorf("%s --help does not say how flags are spelled:\n%s", name, help)
		}
	}
	if multi < 8 {
		t.Errorf("found %d multi-word flags in the commands' help; the help format changed?", multi)
	}
	if out, _ := mustRun(t, 0, "--help"); !strings.Contains(out, flagConvention) {
		t.Errorf("kvtool --help does not say how flags are spelled:\n%s", out)
	}

	// Both spellings do the same.
	dir := buildStore(t, nil)
	log := oneFile(t, dir, ".log")
	sst := oneFile(t, dir, ".sst")
	for _, tc := range []struct {
		args []string // with the flag as %s
		flag string   // underscore spelling
		want string   // in the output
	}{
		{[]string{"scan", "--limit=1", "%s=3", dir}, "--max_len", "key...(8 bytes)\tval...(10 bytes)\n"},
		{[]string{"scan", "--limit=1", "%s", dir}, "--keys_only", "key00000\n"},
		{[]string{"wal", "dump", "%s", log}, "--counts_only", "record 2: seq"},
		{[]string{"sst", "dump", "--blocks", "%s", sst}, "--no_entries", "footer: offset"},
	} {
		var outs []string
		for _, spelling := range []string{tc.flag, strings.ReplaceAll(tc.flag, "_", "-")} {
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.Replace(a, "%s", spelling, 1)
			}
			out, _ := mustRun(t, 0, args...)
			if !strings.Contains(out, tc.want) {
				t.Errorf("kvtool %s: output lacks %q:\n%s", strings.Join(args, " "), tc.want, out)
			}
			outs = append(outs, out)
		}
		if outs[0] != outs[1] {
			t.Errorf("%s and its hyphen spelling print differently:\n%s\n---\n%s", tc.flag, outs[0], outs[1])
		}
	}
	if out, _ := mustRun(t, 0, "wal", "dump", "--counts-only", log); strings.Contains(out, " SET ") {
		t.Errorf("wal dump --counts-only prints writes:\n%s", out)
	}

	// A flag's value is never taken for a flag: --prefix's value here is
	// the key "--max-len", spelled like a flag.
	mustRun(t, 0, "put", dir, "--", "--max-len", "v")
	if out, _ := mustRun(t, 0, "scan", "--prefix", "--max-len", dir); out != "--max-len\tv\n" {
		t.Errorf("scan --prefix --max-len: %q, want the key --max-len", out)
	}

	for _, bad := range []string{"--max-lenn", "--no-such-flag", "--no_such_flag", "--max__len"} {
		if code, _, _ := runTool(t, "scan", bad, "1", dir); code != exitUsage {
			t.Errorf("scan %s: exit %d, want %d", bad, code, exitUsage)
		}
	}
}

// newestTable returns the table of dir with the largest number: the one
// the last write made.
func newestTable(t *testing.T, dir string) string {
	t.Helper()
	tables := storeFiles(t, dir, ".sst")
	if len(tables) == 0 {
		t.Fatalf("%s holds no table", dir)
	}
	return tables[len(tables)-1]
}

// TestWritesKeepTheStorePolicy: the tables kvtool's writes make (here the
// one a put or delete makes of the store's log when it opens it) get the
// policy and budget of the store's own tables, not kvtool's default, unless
// --filter says otherwise, which kvtool notes.
func TestWritesKeepTheStorePolicy(t *testing.T) {
	for _, tc := range []struct {
		p     filter.Policy
		cmd   []string // after DIR
		flag  string
		want  []string // in sst props of the new table
		note  string   // in stderr
		quiet bool     // stderr must be empty
	}{
		{filter.NewBlockedBloomPolicy(14), []string{"put", "new-key", "v"}, "",
			[]string{"filter policy: " + filter.BlockedBloomPolicyName, "filter parameters: k=9,"}, "", true},
		{filter.NewBlockedBloomPolicy(14), []string{"delete", "key00007"}, "",
			[]string{"filter policy: " + filter.BlockedBloomPolicyName, "filter parameters: k=9,"}, "", true},
		{filter.NewLevelDBBloomPolicy(7), []string{"put", "new-key", "v"}, "",
			[]string{"filter policy: " + filter.LevelDBBloomPolicyName, "filter parameters: k=4,"}, "", true},
		{filter.NewBinaryFusePolicy(16), []string{"put", "new-key", "v"}, "",
			[]string{"filter policy: " + filter.BinaryFusePolicyName, "filter parameters: 16-bit fingerprints"}, "", true},
		{filter.None, []string{"put", "new-key", "v"}, "",
			[]string{"filter policy: none"}, "", true},
		{filter.NewBlockedBloomPolicy(14), []string{"put", "new-key", "v"}, "--filter=leveldb:8",
			[]string{"filter policy: " + filter.LevelDBBloomPolicyName, "filter parameters: k=5,"},
			"kvtool put: note: --filter=leveldb:8 overrides the store's own filter policy (" + filter.BlockedBloomPolicyName + ", 14 bits/key): the tables this command writes get " + filter.LevelDBBloomPolicyName + ", 8 bits/key", false},
		// kvbench's name for binary fuse filters.
		{filter.NewBlockedBloomPolicy(14), []string{"put", "new-key", "v"}, "--filter=binaryfuse:8",
			[]string{"filter policy: " + filter.BinaryFusePolicyName, "filter parameters: 8-bit fingerprints"}, "overrides", false},
		// The store's own policy, given explicitly: nothing to note.
		{filter.NewBlockedBloomPolicy(14), []string{"put", "new-key", "v"}, "--filter=blocked:14",
			[]string{"filter policy: " + filter.BlockedBloomPolicyName, "filter parameters: k=9,"}, "", true},
	} {
		name := fmt.Sprintf("%s %s %s", tc.p.Name(), tc.cmd[0], tc.flag)
		dir := buildStore(t, tc.p)
		args := append([]string{tc.cmd[0], dir}, tc.cmd[1:]...)
		if tc.flag != "" {
			args = append(args, tc.flag)
		}
		before := len(storeFiles(t, dir, ".sst"))
		_, errs := mustRun(t, 0, args...)
		if tc.quiet && errs != "" {
			t.Errorf("%s: stderr %q, want none", name, errs)
		}
		if !strings.Contains(errs, tc.note) {
			t.Errorf("%s: stderr %q, want %q", name, errs, tc.note)
		}
		// The open replays the store's log (wal-a, wal-b) into a new
		// table: the newest table is kvtool's.
		if n := len(storeFiles(t, dir, ".sst")); n != before+1 {
			t.Fatalf("%s: wrote %d tables, want 1", name, n-before)
		}
		out, _ := mustRun(t, 0, "sst", "props", newestTable(t, dir))
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the table kvtool wrote lacks %q:\n%s", name, w, out)
			}
		}
	}
}

// TestCheckpointKeepsTheStorePolicy: the table checkpoint makes of the
// store's log gets the store's own policy, as every table copied does.
func TestCheckpointKeepsTheStorePolicy(t *testing.T) {
	dir := buildStore(t, filter.NewBlockedBloomPolicy(14))
	dest := filepath.Join(t.TempDir(), "copy")
	mustRun(t, 0, "checkpoint", dir, dest)
	tables := storeFiles(t, dest, ".sst")
	if len(tables) != 2 {
		t.Fatalf("the checkpoint holds %d tables, want the store's and one of its log", len(tables))
	}
	for _, sst := range tables {
		out, _ := mustRun(t, 0, "sst", "props", sst)
		if !strings.Contains(out, "filter policy: "+filter.BlockedBloomPolicyName) || !strings.Contains(out, "filter parameters: k=9,") {
			t.Errorf("checkpoint table %s:\n%s", filepath.Base(sst), out)
		}
	}
}

// TestWritesKeepEachLevelsPolicy: a store made with a policy per level
// (db.Options.LevelFilterPolicies) keeps them: the table a put makes at
// level 0 gets level 0's policy, not that of the store's largest table.
func TestWritesKeepEachLevelsPolicy(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{
		FilterPolicy:        filter.NewBlockedBloomPolicy(14),
		LevelFilterPolicies: []filter.Policy{filter.NewLevelDBBloomPolicy(8)},
	})
	if err != nil {
		t.Fatal(err)
	}
	put := func(from, to int) {
		var b db.Batch
		for i := from; i < to; i++ {
			b.Put(key(i), value(i))
		}
		if err := d.Write(&b, nil); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 2*numKeys)
	if err := d.CompactRange(nil, nil); err != nil { // into level 1
		t.Fatal(err)
	}
	put(0, numKeys/2)
	if err := d.Flush(); err != nil { // level 0: it overlaps level 1
		t.Fatal(err)
	}
	put(0, 3) // left in the log, which the put's open flushes
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	sf := storeFilters(dir)
	if got := describeFilter(sf.policy); got != filter.BlockedBloomPolicyName+", 14 bits/key" {
		t.Errorf("store policy %s, want the largest table's, blocked at 14 bits/key", got)
	}
	if len(sf.levels) < 2 || describeFilter(sf.levels[0]) != filter.LevelDBBloomPolicyName+", 8 bits/key" ||
		describeFilter(sf.levels[1]) != filter.BlockedBloomPolicyName+", 14 bits/key" {
		lsm, _ := mustRun(t, 0, "lsm", dir)
		t.Fatalf("level policies %v, want leveldb:8 at L0 and blocked:14 at L1\n%s", sf.levels, lsm)
	}
	before := len(storeFiles(t, dir, ".sst"))
	mustRun(t, 0, "put", dir, "k", "v")
	if n := len(storeFiles(t, dir, ".sst")); n != before+1 {
		t.Fatalf("put wrote %d tables, want 1", n-before)
	}
	out, _ := mustRun(t, 0, "sst", "props", newestTable(t, dir))
	if !strings.Contains(out, "filter policy: "+filter.LevelDBBloomPolicyName) || !strings.Contains(out, "filter parameters: k=5,") {
		t.Errorf("the level-0 table put wrote:\n%s", out)
	}
}

// TestInferredBudget: the budget kvtool infers is the one the store's
// tables were made with, even where the measured bits per entry is off: a
// table holding two versions of every key measures half its budget (a
// filter counts a key once), and a small table measures far more.
func TestInferredBudget(t *testing.T) {
	for _, tc := range []struct {
		p        filter.Policy
		versions int // of each key
		keys     int
	}{
		{filter.NewBlockedBloomPolicy(14), 2, numKeys},
		{filter.NewBloomPolicy(14), 2, numKeys},
		{filter.NewLevelDBBloomPolicy(20), 1, 5},
		{filter.NewBlockedBloomPolicy(14), 1, 40},
		{filter.NewBloomPolicy(6), 1, 5},
	} {
		name := fmt.Sprintf("%s, %d bits/key, %d versions of %d keys", tc.p.Name(), tc.p.(filter.BitsPerKeyer).BitsPerKey(), tc.versions, tc.keys)
		dir := t.TempDir()
		d, err := db.Open(dir, &db.Options{FilterPolicy: tc.p})
		if err != nil {
			t.Fatal(err)
		}
		for v := 0; v < tc.versions; v++ {
			var b db.Batch
			for i := 0; i < tc.keys; i++ {
				b.Put(key(i), value(v))
			}
			if err := d.Write(&b, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		props, _ := mustRun(t, 0, "sst", "props", oneFile(t, dir, ".sst"))
		m := regexp.MustCompile(`filter bits per key: ([0-9.]+)`).FindStringSubmatch(props)
		if m == nil {
			t.Fatalf("%s: no bits per key in\n%s", name, props)
		}
		budget := float64(tc.p.(filter.BitsPerKeyer).BitsPerKey())
		if measured, _ := strconv.ParseFloat(m[1], 64); math.Abs(measured-budget) < 1 {
			t.Fatalf("%s: the table measures %s bits per entry, near its budget: the case tests nothing", name, m[1])
		}
		got := storeFilters(dir).policy
		if got.Name() != tc.p.Name() || got.(filter.BitsPerKeyer).BitsPerKey() != int(budget) {
			t.Errorf("%s: inferred %s", name, describeFilter(got))
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
		got := storeFilters(dir).policy
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
