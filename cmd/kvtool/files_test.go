package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
)

// tableNum returns the number of the table file path.
func tableNum(t *testing.T, path string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(path), ".sst"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLSM(t *testing.T) {
	dir := buildStore(t, nil)
	sst := oneFile(t, dir, ".sst")
	out, _ := mustRun(t, 0, "lsm", dir)
	row := regexp.MustCompile(fmt.Sprintf(`(?m)^L0 +%06d +\S+ +%d +0 +%s +\d+\.\d+ +1-%d +key00000 \.\. key01999$`,
		tableNum(t, sst), numKeys, regexp.QuoteMeta(filter.BloomPolicyName), numKeys))
	if !row.MatchString(out) {
		t.Errorf("lsm has no row for table %s:\n%s", sst, out)
	}
	if !strings.Contains(out, "total      1") {
		t.Errorf("lsm totals:\n%s", out)
	}

	// A store without filters says so.
	dir = buildStore(t, filter.None)
	out, _ = mustRun(t, 0, "lsm", "--max-len", "3", dir)
	if !regexp.MustCompile(`(?m)^L0 .* none +- +1-\d+ +key\.\.\.\(8 bytes\) \.\. key\.\.\.\(8 bytes\)$`).MatchString(out) {
		t.Errorf("lsm of a store without filters:\n%s", out)
	}

	_, errs := mustRun(t, 1, "lsm", t.TempDir())
	if !strings.Contains(errs, "CURRENT") {
		t.Errorf("lsm of an empty directory: %q", errs)
	}
}

func TestSSTProps(t *testing.T) {
	for _, tc := range []struct {
		policy filter.Policy
		want   string
	}{
		{nil, "filter policy: " + filter.BloomPolicyName},
		{filter.NewLevelDBBloomPolicy(10), "filter policy: " + filter.LevelDBBloomPolicyName},
		{filter.None, "filter policy: none"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			dir := buildStore(t, tc.policy)
			out, _ := mustRun(t, 0, "sst", "props", oneFile(t, dir, ".sst"))
			for _, want := range []string{tc.want, fmt.Sprintf("entries: %d\n", numKeys), "smallest key: key00000#1,SET", "largest key: key01999#2000,SET"} {
				if !strings.Contains(out, want) {
					t.Errorf("sst props lacks %q:\n%s", want, out)
				}
			}
			if tc.policy != filter.None && !strings.Contains(out, "filter parameters: k=6, ") {
				t.Errorf("sst props lacks k=6 for 10 bits per key:\n%s", out)
			}
		})
	}
}

func TestSSTDump(t *testing.T) {
	dir := buildStore(t, nil)
	sst := oneFile(t, dir, ".sst")
	out, _ := mustRun(t, 0, "sst", "dump", sst)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != numKeys+1 {
		t.Fatalf("sst dump: %d lines, want a header and %d entries", len(lines), numKeys)
	}
	if lines[1] != "key00000#1,SET => value00000" || lines[numKeys] != fmt.Sprintf("key01999#%d,SET => value01999", numKeys) {
		t.Errorf("sst dump entries: %q ... %q", lines[1], lines[numKeys])
	}

	out, _ = mustRun(t, 0, "sst", "dump", "--start", fmt.Sprintf("%x", "key01000"), "--limit", "2", "--hex", "--max-len", "0", sst)
	want := fmt.Sprintf("%x#1001,SET => %x\n%x#1002,SET => %x\n", "key01000", "value01000", "key01001", "value01001")
	if !strings.HasSuffix(out, want) {
		t.Errorf("sst dump --start --limit --hex:\n%s\nwant suffix\n%s", out, want)
	}

	out, _ = mustRun(t, 0, "sst", "dump", "--blocks", "--no-entries", sst)
	props, _ := mustRun(t, 0, "sst", "props", sst)
	m := regexp.MustCompile(`data blocks: (\d+) \((\d+) (snappy|none)`).FindStringSubmatch(props)
	if m == nil {
		t.Fatalf("sst props has no data block count:\n%s", props)
	}
	if got := strings.Count(out, "data block "); strconv.Itoa(got) != m[1] || got < 2 {
		t.Errorf("sst dump --blocks lists %d data blocks, props say %s:\n%s", got, m[1], out)
	}
	for _, want := range []string{`meta block "filter.` + filter.BloomPolicyName + `"`, `meta block "bloomkv.properties"`, "index block: offset", "footer: offset"} {
		if !strings.Contains(out, want) {
			t.Errorf("sst dump --blocks lacks %q:\n%s", want, out)
		}
	}
	// Keys of 8 digits compress: snappy is used for these blocks.
	if !strings.Contains(out, ", snappy, separator ") {
		t.Errorf("sst dump --blocks shows no snappy block:\n%s", out)
	}
	// Separators: the last block's is shortened to "l", after every key
	// of the table, with the largest sequence number; the others are
	// their block's last key (key00059 and key00060 cannot be shortened),
	// with its real sequence number and kind.
	seps := regexp.MustCompile(`(?m)^data block \d+: .*, separator (.*)$`).FindAllStringSubmatch(out, -1)
	lastKey := regexp.MustCompile(`^key0\d{4}#\d+,SET$`)
	for i, m := range seps {
		switch {
		case i == len(seps)-1 && m[1] != "l (max sequence)":
			t.Errorf("last separator %q, want %q", m[1], "l (max sequence)")
		case i < len(seps)-1 && !lastKey.MatchString(m[1]):
			t.Errorf("separator %d is %q, want a last key KEY#SEQ,SET", i, m[1])
		}
	}
	if strings.Contains(out, "72057594037927935") {
		t.Errorf("sst dump --blocks prints the largest sequence number as a number:\n%s", out)
	}
	// Escaped as other keys are, or as hex.
	out, _ = mustRun(t, 0, "sst", "dump", "--blocks", "--no_entries", "--hex", sst)
	if !strings.Contains(out, ", separator 6c (max sequence)\n") {
		t.Errorf("sst dump --blocks --hex: no hex separator 6c (max sequence):\n%s", out)
	}
}

// TestSSTDumpSeparators: separators the writer shortened between blocks
// print as escaped user keys with "(max sequence)".
func TestSSTDumpSeparators(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{FilterPolicy: filter.None})
	if err != nil {
		t.Fatal(err)
	}
	// Keys "\x01" + 4 digits, 20 apart: between "\x010020" and "\x010040"
	// the writer puts "\x01003". Values do not compress: a few per block.
	var b db.Batch
	v := make([]byte, 1500)
	for i := 0; i < 60; i++ {
		for j := range v {
			v[j] = byte(i*7 + j*j)
		}
		b.Put([]byte(fmt.Sprintf("\x01%04d", i*20)), v)
	}
	if err := d.Write(&b, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	out, _ := mustRun(t, 0, "sst", "dump", "--blocks", "--no_entries", oneFile(t, dir, ".sst"))
	seps := regexp.MustCompile(`(?m)^data block \d+: .*, separator (.*)$`).FindAllStringSubmatch(out, -1)
	shortened := regexp.MustCompile(`^\\x01\d{3} \(max sequence\)$`)
	lastKey := regexp.MustCompile(`^\\x01\d{4}#\d+,SET$`)
	n := 0
	for i, m := range seps {
		switch {
		case i == len(seps)-1:
			if m[1] != `\x02 (max sequence)` {
				t.Errorf("last separator %q, want %q", m[1], `\x02 (max sequence)`)
			}
		case shortened.MatchString(m[1]):
			n++
		case !lastKey.MatchString(m[1]):
			t.Errorf("separator %d is %q", i, m[1])
		}
	}
	if n == 0 || len(seps) < 5 {
		t.Errorf("%d blocks, %d shortened separators:\n%s", len(seps), n, out)
	}
}

var fprLine = regexp.MustCompile(`false positives: (\d+) of (\d+) probes = ([0-9.]+)% measured, ([0-9.]+)% theory; (.*)`)

func TestSSTCheckMeasuresFPR(t *testing.T) {
	bloom := func(p filter.Policy) float64 {
		b := p.(filter.BitsPerKeyer)
		return filter.EstimateFPR(float64(b.BitsPerKey()), b.NumProbes())
	}
	for _, tc := range []struct {
		name   string
		policy filter.Policy
		theory float64 // computed here, independently of kvtool
		// exact: the verdict must be "consistent with theory". The
		// LevelDB filter's 32-bit hash strays from theory on keys that
		// differ only in a few bytes, so only its theory is checked.
		exact bool
	}{
		{"bloom10", filter.NewBloomPolicy(10), bloom(filter.NewBloomPolicy(10)), true},
		{"bloom6", filter.NewBloomPolicy(6), bloom(filter.NewBloomPolicy(6)), true},
		{"bloom16", filter.NewBloomPolicy(16), bloom(filter.NewBloomPolicy(16)), true},
		{"leveldb10", filter.NewLevelDBBloomPolicy(10), bloom(filter.NewLevelDBBloomPolicy(10)), false},
		{"blocked10", filter.NewBlockedBloomPolicy(10), filter.EstimateBlockedFPR(10, filter.NewBlockedBloomPolicy(10).(filter.BitsPerKeyer).NumProbes()), true},
		{"fuse8", filter.NewBinaryFusePolicy(8), 1.0 / 256, true},
		{"fuse16", filter.NewBinaryFusePolicy(16), 1.0 / 65536, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const probes = 50000
			dir := buildStore(t, tc.policy)
			out, _ := mustRun(t, 0, "sst", "check", "--probes", strconv.Itoa(probes), oneFile(t, dir, ".sst"))
			if !strings.Contains(out, "checksums: ok") || !strings.Contains(out, "no false negatives") {
				t.Errorf("sst check:\n%s", out)
			}
			m := fprLine.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("sst check has no false-positive line:\n%s", out)
			}
			n, _ := strconv.Atoi(m[2])
			measured, _ := strconv.ParseFloat(m[3], 64)
			theory, _ := strconv.ParseFloat(m[4], 64)
			if n != probes {
				t.Errorf("%d probes, want %d", n, probes)
			}
			// kvtool's theory uses the filter's real size, a little more
			// than the budget (rounding, the minimum size).
			if want := 100 * tc.theory; theory < 0.85*want || theory > 1.05*want {
				t.Errorf("theory %.4f%%, want about %.4f%%", theory, want)
			}
			if tc.exact {
				if !strings.HasPrefix(m[5], "consistent with theory") {
					t.Errorf("verdict %q, want consistent with theory", m[5])
				}
				// With enough expected positives, also a plain bound.
				if tc.theory*probes >= 100 && (measured < 0.7*theory || measured > 1.3*theory) {
					t.Errorf("measured %.4f%% is far from theory %.4f%%", measured, theory)
				}
			}
			t.Logf("%s", m[0])
		})
	}

	dir := buildStore(t, filter.None)
	out, _ := mustRun(t, 0, "sst", "check", oneFile(t, dir, ".sst"))
	if !strings.Contains(out, "filter: none") {
		t.Errorf("sst check of a table without filter:\n%s", out)
	}
}

func TestSSTCorrupt(t *testing.T) {
	dir := buildStore(t, nil)
	sst := oneFile(t, dir, ".sst")
	flipByte(t, sst, 100) // inside the first data block
	for _, sub := range []string{"check", "dump"} {
		_, errs := mustRun(t, 1, "sst", sub, sst)
		if !strings.Contains(errs, "corruption") {
			t.Errorf("sst %s of a damaged table: stderr %q", sub, errs)
		}
	}
	flipByte(t, sst, -1) // the magic number
	for _, sub := range []string{"check", "dump", "props"} {
		_, errs := mustRun(t, 1, "sst", sub, sst)
		if !strings.Contains(errs, "magic") {
			t.Errorf("sst %s of a table with a bad footer: stderr %q", sub, errs)
		}
	}
	mustRun(t, 1, "sst", "props", filepath.Join(dir, "missing.sst"))
}

func TestManifestDump(t *testing.T) {
	dir := buildStore(t, nil)
	sst := oneFile(t, dir, ".sst")
	ms, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	if len(ms) != 1 {
		t.Fatalf("MANIFESTs: %v", ms)
	}
	manifest := ms[0]
	for _, arg := range []string{manifest, dir} {
		out, _ := mustRun(t, 0, "manifest", "dump", arg)
		newFile := fmt.Sprintf("new file: L0 %06d size=", tableNum(t, sst))
		for _, want := range []string{"record 1:\n", "comparer: bloomkv.BytewiseComparator", newFile,
			fmt.Sprintf("last sequence: %d", numKeys), "[key00000#1,SET .. key01999#2000,SET]",
			fmt.Sprintf("--- version:\nL0 %06d", tableNum(t, sst))} {
			if !strings.Contains(out, want) {
				t.Errorf("manifest dump %s lacks %q:\n%s", arg, want, out)
			}
		}
	}
	flipByte(t, manifest, 10)
	out, errs := mustRun(t, 1, "manifest", "dump", manifest)
	if !strings.Contains(out, "ERROR") || !strings.Contains(errs, "corruption") {
		t.Errorf("manifest dump of a damaged MANIFEST:\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
}

func TestWALDump(t *testing.T) {
	dir := buildStore(t, nil)
	log := oneFile(t, dir, ".log")
	out, _ := mustRun(t, 0, "wal", "dump", log)
	// The log was made by the memtable switch of Flush: its header record
	// names the log before.
	want := fmt.Sprintf(`record 1: header: the log before is \d{6}\.log
record 2: seq %d, count 1, \d+ bytes
  %d SET wal-a => A
record 3: seq %d, count 2, \d+ bytes
  %d SET wal-b => B
  %d DEL key00001
--- 2 records, 3 writes
`, numKeys+1, numKeys+1, numKeys+2, numKeys+2, numKeys+3)
	if !regexp.MustCompile("^" + want + "$").MatchString(out) {
		t.Errorf("wal dump:\n%s\nwant (regexp):\n%s", out, want)
	}
	out, _ = mustRun(t, 0, "wal", "dump", "--counts-only", "--hex", log)
	if strings.Contains(out, "SET") || !strings.Contains(out, "record 3: seq") {
		t.Errorf("wal dump --counts-only:\n%s", out)
	}

	// Long values are abbreviated.
	dir = buildStore(t, nil)
	mustRun(t, 0, "put", dir, "long", strings.Repeat("v", 1000))
	// The put's open replayed and removed the old log; the new one holds
	// the put.
	out, _ = mustRun(t, 0, "wal", "dump", oneFile(t, dir, ".log"))
	if !strings.Contains(out, "SET long => "+strings.Repeat("v", 32)+"...(1000 bytes)") {
		t.Errorf("wal dump of a long value:\n%s", out)
	}

	// A damaged record is reported; the good ones after it still print.
	dir = buildStore(t, nil)
	log = oneFile(t, dir, ".log")
	flipByte(t, log, 10) // the first batch record's (after the 9-byte header record)
	out, errs := mustRun(t, 1, "wal", "dump", log)
	if !strings.Contains(out, "ERROR") || !strings.Contains(errs, "corruption") {
		t.Errorf("wal dump of a damaged log:\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
}

func TestCheck(t *testing.T) {
	dir := buildStore(t, nil)
	out, _ := mustRun(t, 0, "check", dir)
	for _, want := range []string{"MANIFEST-", fmt.Sprintf(".sst: ok (%d entries", numKeys), ".log: ok (live, 2 records, 3 writes)", "OK: MANIFEST, 1 tables, 2 log records verified"} {
		if !strings.Contains(out, want) {
			t.Errorf("check of a good store lacks %q:\n%s", want, out)
		}
	}

	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string // in stderr
	}{
		{"table data block", func(t *testing.T, dir string) { flipByte(t, oneFile(t, dir, ".sst"), 100) }, ".sst: bloomkv: corruption"},
		{"table index", func(t *testing.T, dir string) { flipByte(t, oneFile(t, dir, ".sst"), -60) }, ".sst: bloomkv: corruption"},
		{"table footer", func(t *testing.T, dir string) { flipByte(t, oneFile(t, dir, ".sst"), -1) }, "magic"},
		{"table missing", func(t *testing.T, dir string) { os.Remove(oneFile(t, dir, ".sst")) }, "no such file"},
		{"table truncated", func(t *testing.T, dir string) {
			sst := oneFile(t, dir, ".sst")
			fi, _ := os.Stat(sst)
			os.Truncate(sst, fi.Size()-1)
		}, "the MANIFEST says"},
		// The log starts with the header record of the switch Flush made
		// (9 bytes), so byte 10 is in record 2, the first batch.
		{"log record", func(t *testing.T, dir string) { flipByte(t, oneFile(t, dir, ".log"), 10) }, ".log record 2: bloomkv: corruption"},
		{"log cut short", func(t *testing.T, dir string) {
			log := oneFile(t, dir, ".log")
			fi, _ := os.Stat(log)
			os.Truncate(log, fi.Size()-3)
		}, ".log: the last "},
		{"manifest record", func(t *testing.T, dir string) {
			ms, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
			flipByte(t, ms[0], 10)
		}, "MANIFEST-"},
		{"CURRENT", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("garbage"), 0o644)
		}, "CURRENT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := buildStore(t, nil)
			tc.damage(t, dir)
			code, out, errs := runTool(t, "check", dir)
			if code != 1 || !strings.Contains(errs, tc.want) {
				t.Errorf("check after damage to the %s: exit %d, stderr %q, want %q\nstdout:\n%s", tc.name, code, errs, tc.want, out)
			}
			if code == 1 && !strings.Contains(out, "FAILED") && !strings.Contains(errs, "CURRENT") {
				t.Errorf("check stdout does not say FAILED:\n%s", out)
			}
		})
	}
}

// writeFile writes b to a file named name in a new directory and returns
// its path.
func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readFile returns the bytes of path.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNotAStoreFile: the commands that read one file, given a file of
// another kind, say what it is and fail (exit 1), instead of reporting
// damage or nothing.
func TestNotAStoreFile(t *testing.T) {
	dir := buildStore(t, nil)
	current := filepath.Join(dir, "CURRENT")
	lock := filepath.Join(dir, "LOCK") // empty
	info := filepath.Join(dir, "LOG")  // db's text log
	log := oneFile(t, dir, ".log")
	sst := oneFile(t, dir, ".sst")
	ms, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	manifest := ms[0]
	garbage := writeFile(t, "garbage.bin", bytes.Repeat([]byte("not a store file "), 100))

	for _, tc := range []struct {
		cmd  []string
		file string
		want string // in stderr
	}{
		{[]string{"wal", "dump"}, current, "CURRENT is not a log file: it is a store's CURRENT file (it names MANIFEST-"},
		{[]string{"wal", "dump"}, lock, "LOCK is not a log file: it is empty"},
		{[]string{"wal", "dump"}, info, "LOG is not a log file: none of its "},
		{[]string{"wal", "dump"}, manifest, " is not a log file: it is a MANIFEST"},
		{[]string{"wal", "dump"}, sst, ".sst is not a log file: it is a table"},
		{[]string{"wal", "dump"}, garbage, "garbage.bin is not a log file: none of its 1700 bytes is an intact record of the log format"},
		{[]string{"manifest", "dump"}, current, "CURRENT is not a MANIFEST: it is a store's CURRENT file"},
		{[]string{"manifest", "dump"}, log, ".log is not a MANIFEST: it is a write-ahead log"},
		{[]string{"manifest", "dump"}, sst, ".sst is not a MANIFEST: it is a table"},
		{[]string{"manifest", "dump"}, lock, "LOCK is not a MANIFEST: it is empty"},
		{[]string{"sst", "props"}, garbage, "garbage.bin is not a table file: it does not end with the table magic number"},
		{[]string{"sst", "props"}, lock, "LOCK is not a table file: it is empty"},
	} {
		_, errs := mustRun(t, 1, append(tc.cmd, tc.file)...)
		if !strings.Contains(errs, tc.want) || strings.Contains(errs, "corruption") {
			t.Errorf("%s %s: stderr %q, want %q", strings.Join(tc.cmd, " "), filepath.Base(tc.file), errs, tc.want)
		}
	}
	for _, cmd := range []string{"props", "dump", "check"} {
		for f, want := range map[string]string{
			current:  "it is a store's CURRENT file",
			log:      "it is a write-ahead log",
			manifest: "it is a MANIFEST",
		} {
			_, errs := mustRun(t, 1, "sst", cmd, f)
			if !strings.Contains(errs, filepath.Base(f)+" is not a table file: "+want) {
				t.Errorf("sst %s %s: stderr %q, want %q", cmd, filepath.Base(f), errs, want)
			}
		}
	}
}

// TestDamagedStoreFile: a log, table or MANIFEST that is damaged, even
// beyond recognition, is reported as damaged (exit 1), not as a file of
// another kind, when its name or bytes say what it is.
func TestDamagedStoreFile(t *testing.T) {
	dir := buildStore(t, nil)
	log := readFile(t, oneFile(t, dir, ".log"))
	sst := readFile(t, oneFile(t, dir, ".sst"))
	damaged := func(b []byte, off int) []byte {
		b = bytes.Clone(b)
		if off < 0 {
			off += len(b)
		}
		b[off] ^= 0x10
		return b
	}
	noise := bytes.Repeat([]byte("\x5a\xa5\x3c"), 700)

	for _, tc := range []struct {
		name string
		cmd  []string
		path string
		want []string // in stdout+stderr
	}{
		// A log whose records all fail their checksums, or that holds
		// only bytes of no record, named as a log.
		{"log, every record damaged", []string{"wal", "dump"}, writeFile(t, "000009.log", damaged(damaged(damaged(log, 2), 12), 40)),
			[]string{"corruption", "damaged bytes skipped"}},
		{"log of noise", []string{"wal", "dump"}, writeFile(t, "000009.log", noise), []string{"the last 2100 bytes are a record cut short"}},
		{"log of noise, 40 KiB", []string{"wal", "dump"}, writeFile(t, "000009.log", bytes.Repeat(noise, 20)), []string{"corruption", "damaged bytes skipped"}},
		// Its last record cut short, as a crash in mid-write leaves it.
		{"log cut short", []string{"wal", "dump"}, writeFile(t, "000009.log", log[:len(log)-3]),
			[]string{"record 2: seq", "the last ", " bytes are a record cut short"}},
		{"log cut short, any name", []string{"wal", "dump"}, writeFile(t, "copy", log[:len(log)-3]),
			[]string{"record 2: seq", " bytes are a record cut short"}},
		// A table with a damaged magic number, or cut short, named as a
		// table; a table with a flipped bit in its magic number, any name.
		{"table magic", []string{"sst", "props"}, writeFile(t, "000009.sst", damaged(sst, -1)),
			[]string{"corruption: damaged table: it does not end with the table magic number"}},
		{"table magic, any name", []string{"sst", "props"}, writeFile(t, "copy", damaged(sst, -3)),
			[]string{"corruption: damaged table: it does not end with the table magic number"}},
		{"table cut short", []string{"sst", "dump"}, writeFile(t, "000009.sst", sst[:len(sst)-100]),
			[]string{"corruption: damaged table"}},
		{"table cut to 10 bytes", []string{"sst", "check"}, writeFile(t, "000009.sst", sst[:10]),
			[]string{"corruption: damaged table: 10 bytes, shorter than a table's"}},
		{"empty table", []string{"sst", "check"}, writeFile(t, "000009.sst", nil),
			[]string{"corruption: damaged table: 0 bytes"}},
		{"table of noise", []string{"sst", "props"}, writeFile(t, "000009.sst", noise),
			[]string{"corruption: damaged table"}},
		// A MANIFEST without any version edit.
		{"empty MANIFEST", []string{"manifest", "dump"}, writeFile(t, "MANIFEST-000009", nil),
			[]string{"holds no version edit"}},
		{"MANIFEST of noise", []string{"manifest", "dump"}, writeFile(t, "MANIFEST-000009", noise),
			[]string{"damaged bytes skipped"}},
	} {
		code, out, errs := runTool(t, append(tc.cmd, tc.path)...)
		all := out + errs
		if code != exitFailure {
			t.Errorf("%s: exit %d, want %d\n%s", tc.name, code, exitFailure, all)
		}
		if strings.Contains(all, "is not a") {
			t.Errorf("%s: reported as a file of another kind:\n%s", tc.name, all)
		}
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, all)
			}
		}
	}

	// An empty log is what a crash right after its creation leaves: no
	// error. Neither is a log whose last write's value ends with the
	// table magic number.
	if out, _ := mustRun(t, 0, "wal", "dump", writeFile(t, "000009.log", nil)); out != "--- 0 records, 0 writes\n" {
		t.Errorf("wal dump of an empty log: %q", out)
	}
	dir = buildStore(t, nil)
	mustRun(t, 0, "put", dir, "k", "bloomkv!")
	logPath := oneFile(t, dir, ".log")
	if b := readFile(t, logPath); !bytes.HasSuffix(b, []byte("bloomkv!")) {
		t.Fatalf("the log does not end with the value: %q", b[max(0, len(b)-16):])
	}
	if out, _ := mustRun(t, 0, "wal", "dump", logPath); !strings.Contains(out, "SET k => bloomkv!") {
		t.Errorf("wal dump of a log ending with the table magic:\n%s", out)
	}
	if _, errs := mustRun(t, 1, "sst", "props", logPath); !strings.Contains(errs, "is not a table file: it is a write-ahead log") {
		t.Errorf("sst props of a log ending with the table magic: %q", errs)
	}
}
