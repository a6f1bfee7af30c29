package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
)

// TestKeyLayout: with --prefix_size the keys keep 16 bytes and k's order,
// --keys_per_prefix consecutive keys share a prefix, number inverts key,
// and the absent prefixes and empty ranges sort among the real keys
// without matching any.
func TestKeyLayout(t *testing.T) {
	var buf, hi [keyLen]byte
	l := keyLayout{prefixSize: 8, perPrefix: 16}
	if got := string(l.key(buf[:], 1234*16+7)); got != "0000123400000007" {
		t.Errorf("key(1234*16+7) = %q", got)
	}
	if got, want := string(keyLayout{}.key(buf[:], 42)), fmt.Sprintf("%016d", 42); got != want {
		t.Errorf("no prefix: key(42) = %q, want %q", got, want)
	}
	if got, want := string(keyLayout{prefixSize: 8}.key(buf[:], 42)), fmt.Sprintf("%016d", 42); got != want {
		t.Errorf("--keys_per_prefix=0: key(42) = %q, want %q", got, want)
	}
	const num = 5000
	var keys []string
	for k := 0; k < num; k++ {
		s := string(l.key(buf[:], k))
		if len(s) != keyLen || !allDigits(s) {
			t.Fatalf("key(%d) = %q", k, s)
		}
		if n, ok := l.number(s); !ok || n != k {
			t.Fatalf("number(key(%d) = %q) = %d, %v", k, s, n, ok)
		}
		if k > 0 && s <= keys[k-1] {
			t.Fatalf("key(%d) = %q sorts before key(%d) = %q", k, s, k-1, keys[k-1])
		}
		if want := fmt.Sprintf("%08d", k/16); s[:8] != want {
			t.Fatalf("key(%d) = %q: prefix %q, want %q", k, s, s[:8], want)
		}
		var pb [keyLen]byte
		if p := string(l.prefix(pb[:], k)); p != s[:8] {
			t.Fatalf("prefix(%d) = %q, want key's %q", k, p, s[:8])
		}
		if p := string(keyLayout{prefixSize: 8}.prefix(pb[:], k)); p != fmt.Sprintf("%016d", k)[:8] {
			t.Fatalf("--keys_per_prefix=0: prefix(%d) = %q", k, p)
		}
		keys = append(keys, s)
	}
	if n := testing.AllocsPerRun(100, func() { l.key(buf[:], 4242) }); n != 0 {
		t.Errorf("key allocates %.0f times", n)
	}
	b := &bench{cfg: defaultConfig(), keys: l}
	// Up to the last whole decade of prefixes: an absent prefix sorts
	// after the prefixes of its decade (digit ':' follows '9').
	for k := 16; k < num/160*160; k++ {
		// seekprefix's absent prefix.
		p := []byte(keys[k][:8])
		p[7] = absentByte
		i := sort.SearchStrings(keys, string(p))
		if i == 0 || i == num || strings.HasPrefix(keys[i], string(p)) {
			t.Fatalf("absent prefix %q of key %d: not among the keys, or a key has it (next key %d)", p, k, i)
		}
		// scanempty's range: among the keys, holding none.
		lo, hi := b.emptyRange(buf[:], hi[:], k)
		i = sort.SearchStrings(keys, string(lo))
		if i == 0 || i == num || keys[i] < string(hi) || bytes.Compare(lo, hi) >= 0 {
			t.Fatalf("empty range [%q, %q) of key %d: not among the keys, or holds one (next key %d)", lo, hi, k, i)
		}
	}
	for _, c := range []struct {
		l   keyLayout
		num int
		ok  bool
	}{
		{keyLayout{8, 16}, 1_000_000, true},
		{keyLayout{0, 16}, maxKeyIndex, true},
		{keyLayout{16, 16}, 10, false},
		{keyLayout{-1, 16}, 10, false},
		{keyLayout{2, 16}, 1599, true},
		{keyLayout{2, 16}, 1600, false}, // scanshort's bound key(1600) needs prefix 100
		{keyLayout{8, -1}, 10, false},
		{keyLayout{15, 11}, 10, false}, // 11 keys in a 1-digit suffix
	} {
		if err := c.l.validate(c.num); (err == nil) != c.ok {
			t.Errorf("%+v.validate(%d) = %v, want ok %v", c.l, c.num, err, c.ok)
		}
	}
}

// exactRangePolicy is a range filter that keeps every key and answers
// exactly: the tests measure the scans' use of a range filter with it
// while package filter has none (and a real one's false positives would
// blur what the test checks).
type exactRangePolicy struct{}

func (exactRangePolicy) Name() string                    { return "kvbench-test.ExactRange" }
func (exactRangePolicy) NewBuilder() filter.RangeBuilder { return &exactRangeBuilder{} }
func (exactRangePolicy) MayContainRange(f, lo, hi []byte) bool {
	for len(f) > 0 {
		n, k := binary.Uvarint(f)
		if k <= 0 || n > uint64(len(f)-k) {
			return true
		}
		key := f[k : k+int(n)]
		if bytes.Compare(lo, key) <= 0 && bytes.Compare(key, hi) < 0 {
			return true
		}
		f = f[k+int(n):]
	}
	return false
}

type exactRangeBuilder struct{ buf []byte }

func (b *exactRangeBuilder) AddKey(k []byte) {
	b.buf = binary.AppendUvarint(b.buf, uint64(len(k)))
	b.buf = append(b.buf, k...)
}

func (b *exactRangeBuilder) Finish(dst []byte) []byte {
	dst = append(dst, b.buf...)
	b.buf = b.buf[:0]
	return dst
}

// withExactRangeFilter makes --range_filter_bits use exactRangePolicy
// for the rest of the test.
func withExactRangeFilter(t *testing.T) {
	old := newRangePolicy
	newRangePolicy = func(int) (filter.RangePolicy, error) { return exactRangePolicy{}, nil }
	t.Cleanup(func() { newRangePolicy = old })
}

// scanRun runs the benchmarks on a small store of --prefix_size=8 keys
// (16 per prefix), every block read coming from a file, and returns the
// parsed results by name (the last of each) and the output.
func scanRun(t *testing.T, mod func(*config)) (map[string]*parsed, string) {
	t.Helper()
	cfg := defaultConfig()
	cfg.num, cfg.reads = 8000, 500
	cfg.prefixSize = 8
	cfg.writeBufferSize = 32 << 10
	cfg.cacheSize = -1
	cfg.compare = false
	mod(cfg)
	var out, errOut bytes.Buffer
	if err := run(cfg, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	res := map[string]*parsed{}
	for _, r := range parseOutput(t, out.String()) {
		res[r.name] = r
	}
	for _, n := range strings.Split(cfg.benchmarks, ",") {
		r := res[n]
		if r == nil {
			t.Fatalf("no result line for %s:\n%s", n, out.String())
		}
		if isScan(n) && !r.scan {
			t.Fatalf("%s: no scan read-path line:\n%s", n, out.String())
		}
	}
	return res, out.String()
}

// TestScanBenchmarks: on a store with the prefix filter and a range
// filter, absent prefixes and empty ranges return nothing and read about
// no data block per scan; without filters the same scans read blocks;
// present prefixes and short ranges find their keys; seekrandom bounded to
// the prefix does its --seek_nexts; --json carries the scan figures.
func TestScanBenchmarks(t *testing.T) {
	withExactRangeFilter(t)
	const benches = "fillrandom,seekprefix,scanempty,scanshort,seekrandom"
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "out.json")
	with, out := scanRun(t, func(c *config) {
		c.benchmarks = benches
		c.absentPrefixFraction = 1
		c.rangeFilterBits = 16
		c.seekNexts = 4
		c.jsonPath = jsonPath
		c.dbPath = filepath.Join(dir, "db")
	})
	t.Log(out)
	if !strings.Contains(out, "Prefixes:   bloomkv.FixedPrefix(8) in every table's filter") || !strings.Contains(out, "Range:      kvbench-test.ExactRange, 16 bits/key") {
		t.Errorf("header does not describe the prefix and range filters:\n%s", out)
	}
	none, noneOut := scanRun(t, func(c *config) {
		c.benchmarks = benches
		c.absentPrefixFraction = 1
		c.seekNexts = 4
		c.bloomBits = 0
	})
	t.Log(noneOut)
	for _, n := range []string{"seekprefix", "scanempty"} {
		w, o := with[n], none[n]
		if w.found != 0 || o.found != 0 || w.keysPerScan != 0 || o.keysPerScan != 0 {
			t.Errorf("%s found keys: %d of %d with filters, %d without", n, w.found, w.ops, o.found)
		}
		if w.blocksPerOp > 0.05 {
			t.Errorf("%s: %.3f data blocks per scan with the filters, want about 0", n, w.blocksPerOp)
		}
		if o.blocksPerOp < 0.5 {
			t.Errorf("%s: %.3f data blocks per scan without filters, want about one per level", n, o.blocksPerOp)
		}
	}
	// An absent prefix is ruled out by the prefix filter; an empty range
	// inside an existing prefix only by the range filter (the prefix
	// filter skips just the tables that lack the prefix).
	// A prefix that falls between two tables' key ranges (or past the
	// last) is checked by no table: most scans check one at least.
	if r := with["seekprefix"]; r.prefixSkipped < r.prefixChecks*9/10 || r.prefixChecks < r.ops*9/10 {
		t.Errorf("seekprefix: prefix filter skipped %d of %d checks", r.prefixSkipped, r.prefixChecks)
	}
	if r := with["scanempty"]; r.prefixSkipped >= r.prefixChecks || r.rangeSkipped == 0 || r.rangeSkipped != r.rangeChecks {
		t.Errorf("scanempty: prefix filter skipped %d, range filter %d of %d", r.prefixSkipped, r.rangeSkipped, r.rangeChecks)
	}
	if r := none["scanempty"]; r.prefixChecks != 0 || r.rangeChecks != 0 {
		t.Errorf("scanempty without filters: %d prefix and %d range checks", r.prefixChecks, r.rangeChecks)
	}
	for name, res := range map[string]map[string]*parsed{"with filters": with, "without": none} {
		// fillrandom wrote about 63% of the keys: a range of 16 key
		// numbers holds about 10 of them.
		if r := res["scanshort"]; r.found < r.ops*9/10 || r.keysPerScan < 7 || r.keysPerScan > 13 {
			t.Errorf("scanshort %s: %d of %d ranges held keys, %.2f keys/scan", name, r.found, r.ops, r.keysPerScan)
		}
		// Bounded to the key's prefix, seekrandom's Nexts stop at its end.
		if r := res["seekrandom"]; r.found < r.ops/2 || r.keysPerScan < 1 || r.keysPerScan > 4 {
			t.Errorf("seekrandom %s: found %d of %d, %.2f keys/scan (--seek_nexts=4)", name, r.found, r.ops, r.keysPerScan)
		}
	}
	if with["seekrandom"].found != none["seekrandom"].found || with["scanshort"].keysPerScan != none["scanshort"].keysPerScan {
		t.Errorf("the filters changed what the scans found")
	}

	// Present prefixes, on the same store: about 10 keys each.
	present, out := scanRun(t, func(c *config) {
		c.benchmarks = "seekprefix"
		c.absentPrefixFraction = 0
		c.rangeFilterBits = 16
		c.dbPath = filepath.Join(dir, "db")
		c.useExisting = true
	})
	if r := present["seekprefix"]; r.found != r.ops || r.keysPerScan < 7 || r.keysPerScan > 13 || r.prefixSkipped > r.prefixChecks/2 {
		t.Errorf("seekprefix of present prefixes: found %d of %d, %.2f keys/scan, %d of %d tables skipped\n%s", r.found, r.ops, r.keysPerScan, r.prefixSkipped, r.prefixChecks, out)
	}

	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Config struct {
			PrefixSize      int     `json:"prefix_size"`
			KeysPerPrefix   int     `json:"keys_per_prefix"`
			Extractor       string  `json:"prefix_extractor"`
			RangeFilterBits int     `json:"range_filter_bits"`
			RangeFilter     string  `json:"range_filter"`
			SeekNexts       int     `json:"seek_nexts"`
			Absent          float64 `json:"absent_prefix_fraction"`
			ScanWidth       int     `json:"scan_width"`
		} `json:"config"`
		Results []struct {
			Name     string `json:"name"`
			Found    int64  `json:"found"`
			Scanned  int64  `json:"scanned"`
			ReadPath *struct {
				Scans *struct {
					PrefixChecks  int64    `json:"prefix_filter_checks"`
					PrefixSkipped int64    `json:"prefix_filter_tables_skipped"`
					RangeChecks   int64    `json:"range_filter_checks"`
					RangeSkipped  int64    `json:"range_filter_tables_skipped"`
					RangePerLevel []int64  `json:"range_filter_tables_skipped_per_level"`
					KeysPerScan   *float64 `json:"keys_per_scan"`
					BlocksPerScan *float64 `json:"data_blocks_read_per_scan"`
				} `json:"scans"`
			} `json:"read_path"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	c := rep.Config
	if c.PrefixSize != 8 || c.KeysPerPrefix != 16 || c.Extractor != "bloomkv.FixedPrefix(8)" || c.RangeFilterBits != 16 ||
		!strings.Contains(c.RangeFilter, "ExactRange") || c.SeekNexts != 4 || c.Absent != 1 || c.ScanWidth != 16 {
		t.Errorf("json config = %+v", c)
	}
	for _, r := range rep.Results {
		if r.Name == "fillrandom" {
			continue
		}
		if r.ReadPath == nil || r.ReadPath.Scans == nil || r.ReadPath.Scans.KeysPerScan == nil || r.ReadPath.Scans.BlocksPerScan == nil {
			t.Errorf("json %s: no read_path.scans", r.Name)
			continue
		}
		s := r.ReadPath.Scans
		p := with[r.Name]
		if s.PrefixChecks != int64(p.prefixChecks) || s.PrefixSkipped != int64(p.prefixSkipped) || s.RangeChecks != int64(p.rangeChecks) || s.RangeSkipped != int64(p.rangeSkipped) {
			t.Errorf("json %s: scans %+v, text %+v", r.Name, *s, *p)
		}
		if r.Name == "scanempty" && len(s.RangePerLevel) == 0 {
			t.Errorf("json scanempty: no range filter skips per level")
		}
		if r.Name == "scanshort" && r.Scanned == 0 {
			t.Errorf("json scanshort: scanned 0")
		}
	}
}

// TestScanFlags: the new flags' bad values, and seekprefix without
// --prefix_size, exit 2 with a message; good ones run.
func TestScanFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--prefix_size=16"},
		{"--prefix-size=-1"},
		{"--keys_per_prefix=-1", "--prefix_size=8"},
		{"--prefix_size=2", "--num=5000"}, // 313 prefixes in 2 digits
		{"--seek_nexts=-1"},
		{"--range_filter_bits=-1"},
		{"--absent_prefix_fraction=1.5"},
		{"--absent-prefix-fraction=-0.1"},
		{"--scan_width=0"},
		{fmt.Sprint("--scan_width=", maxScanWidth+1)},
		{"--benchmarks=fillrandom,seekprefix"},
	} {
		args = append([]string{"--num=100", "--compare_no_filter=false"}, args...) // a later --num wins
		if _, stderr, status := kvbenchCmd(t, args...); status != 2 || stderr == "" {
			t.Errorf("kvbench %q: status %d, stderr %q; want 2 and a message", args, status, stderr)
		}
	}
	stdout, stderr, status := kvbenchCmd(t, "--num=2000", "--prefix-size=8", "--seek-nexts=2", "--scan-width=8", "--absent-prefix-fraction=0.25",
		"--benchmarks=fillseq,seekprefix,scanempty,scanshort,seekrandom", "--compare_no_filter=false")
	if status != 0 {
		t.Fatalf("status %d\n%s", status, stderr)
	}
	res := map[string]*parsed{}
	for _, r := range parseOutput(t, stdout) {
		res[r.name] = r
	}
	// After fillseq every prefix holds 16 keys: a quarter of the prefixes
	// absent, 8-key ranges full, seekrandom finds every key and reads up
	// to 2 entries before its prefix ends.
	if r := res["seekprefix"]; r == nil || r.found < 2000*6/10 || r.found > 2000*9/10 {
		t.Errorf("seekprefix: %+v\n%s", r, stdout)
	}
	if r := res["scanshort"]; r == nil || r.keysPerScan != 8 {
		t.Errorf("scanshort: %+v\n%s", r, stdout)
	}
	if r := res["scanempty"]; r == nil || r.found != 0 {
		t.Errorf("scanempty: %+v\n%s", r, stdout)
	}
	if r := res["seekrandom"]; r == nil || r.found != 2000 || r.keysPerScan < 1.5 || r.keysPerScan > 2 {
		t.Errorf("seekrandom: %+v\n%s", r, stdout)
	}
	if !strings.Contains(stdout, "Keys:       16 bytes each: a prefix of 8 bytes, %08d of k/16, then %08d of k%16: 16 keys per prefix") {
		t.Errorf("header:\n%s", stdout)
	}
}
