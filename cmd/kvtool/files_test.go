package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

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
	row := regexp.MustCompile(fmt.Sprintf(`(?m)^L0 +%06d +\S+ +%d +%s +\d+\.\d+ +1-%d +key00000 \.\. key01999$`,
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

// TestNotAStoreFile: wal and sst commands given a file of another kind say
// so and fail, instead of reporting damage or nothing.
func TestNotAStoreFile(t *testing.T) {
	dir := buildStore(t, nil)
	current := filepath.Join(dir, "CURRENT")
	if _, errs := mustRun(t, 1, "wal", "dump", current); !strings.Contains(errs, "is not a log file") {
		t.Errorf("wal dump CURRENT: %q", errs)
	}
	for _, cmd := range []string{"props", "dump", "check"} {
		for _, f := range []string{current, oneFile(t, dir, ".log")} {
			if _, errs := mustRun(t, 1, "sst", cmd, f); !strings.Contains(errs, "is not a table file") {
				t.Errorf("sst %s %s: %q", cmd, filepath.Base(f), errs)
			}
		}
	}
	// A real table with a damaged byte is damage, not "not a table".
	sst := oneFile(t, dir, ".sst")
	flipByte(t, sst, 10)
	if _, errs := mustRun(t, 1, "sst", "check", sst); strings.Contains(errs, "not a table") {
		t.Errorf("sst check of a damaged table: %q", errs)
	}
}
