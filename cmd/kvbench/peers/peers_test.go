package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/db"
)

// smallConfig is the sequence on a tiny store, every benchmark.
func smallConfig(t *testing.T, engines string) *config {
	cfg := defaultConfig()
	cfg.engines = engines
	cfg.num, cfg.reads = 5000, 1000
	cfg.writeBufferSize = 64 << 10
	cfg.compact = "true"
	cfg.prefixSize = 8 // and so seekprefix too
	cfg.jsonPath = filepath.Join(t.TempDir(), "out.json")
	return cfg
}

// checkEngines runs the whole sequence on a tiny store for the engines
// and checks the table: a row per benchmark with a figure per engine and
// a ratio per peer, identical found counts (every engine saw the same
// keys), absent keys never found, the per-scan rows, the files after the
// load, and readwhilewriting's latencies in the table and the JSON.
func checkEngines(t *testing.T, engines string) {
	cfg := smallConfig(t, engines)
	names := strings.Split(engines, ",")
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Log(s)
	if strings.Contains(s, "WARNING") {
		t.Errorf("engines disagree:\n%s", s)
	}
	for _, b := range benchNames {
		row := findRow(s, b)
		if row == "" {
			t.Errorf("no row for %s", b)
			continue
		}
		// benchmark, the engines, a ratio per peer.
		if cells := strings.Split(strings.Trim(row, "|"), "|"); len(cells) != 2*len(names) {
			t.Errorf("row %q has %d cells, want %d", row, len(cells), 2*len(names))
		}
	}
	for _, want := range []string{
		"readmissing: every engine found 0 of 1000",
		"scanempty: every engine found keys in 0 of 1000 scans",
		"readzipf: every engine found ",
		"readwhilewriting: found (it depends on the writer's progress): ",
		"\nCPU per operation (median round): ",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
	// Half the prefixes are absent; the others hold 16 keys (fillseq's
	// store is gone; fillrandom and overwrite wrote most keys).
	for _, b := range scanNames {
		found := false
		for _, line := range strings.Split(s, "\n") {
			found = found || strings.HasPrefix(line, "| "+b+" ") && strings.Count(line, "keys") == len(names)
		}
		if !found {
			t.Errorf("no per-scan row for %s", b)
		}
	}
	for _, n := range names {
		if !strings.Contains(s, "\n| "+n+" ") {
			t.Errorf("no disk or latency rows for %s", n)
		}
	}

	rep := readReport(t, cfg.jsonPath)
	if len(rep.Engines) != len(names) {
		t.Fatalf("json has %d engines, want %d", len(rep.Engines), len(names))
	}
	for i, e := range rep.Engines {
		if e.Name != names[i] || e.Version == "" || e.Error != "" {
			t.Errorf("json engine %d: %s %q %q", i, e.Name, e.Version, e.Error)
		}
		if e.Disk == nil || e.Disk.Tables == 0 || e.Disk.TableBytes == 0 || e.Disk.Bytes < e.Disk.TableBytes {
			t.Errorf("json %s: disk after load %+v", e.Name, e.Disk)
		}
		var order []string
		var cpu float64
		for _, r := range e.Results {
			cpu += r.CPUSeconds
			order = append(order, r.Name)
			if r.Ops <= 0 || r.OpsPerSec <= 0 || r.Ratio <= 0 || len(r.RoundsOpsPerSec) != 1 {
				t.Errorf("json %s %s: %+v", e.Name, r.Name, r)
			}
			if r.Name != "readwhilewriting" {
				if r.Latency != nil || r.Writer != nil {
					t.Errorf("json %s %s has latencies", e.Name, r.Name)
				}
				continue
			}
			checkLatency(t, e.Name, r)
		}
		if processCPU() > 0 && cpu <= 0 {
			t.Errorf("json %s: no CPU time", e.Name)
		}
		if !slices.Equal(order, rep.Config.Benchmarks) {
			t.Errorf("json %s results %v, want %v", e.Name, order, rep.Config.Benchmarks)
		}
	}
}

// checkLatency checks readwhilewriting's JSON: percentiles in order, a
// histogram that counts every Get in ascending buckets, writes done.
func checkLatency(t *testing.T, engine string, r jsonResult) {
	t.Helper()
	l, w := r.Latency, r.Writer
	if l == nil || w == nil {
		t.Fatalf("json %s readwhilewriting: no latency or writer", engine)
	}
	if l.Count != r.Ops || !(0 < l.P50 && l.P50 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) || l.Slow < 0 || l.Slow > l.Count {
		t.Errorf("json %s latency %+v", engine, l)
	}
	var sum int
	for i, b := range l.Histogram {
		sum += b.Count
		if b.Hi <= b.Lo || i > 0 && b.Lo != l.Histogram[i-1].Hi {
			t.Errorf("json %s histogram bucket %d: %+v", engine, i, b)
		}
	}
	if sum != l.Count || len(l.Histogram) == 0 || l.Histogram[len(l.Histogram)-1].Hi <= l.Max {
		t.Errorf("json %s histogram counts %d of %d Gets, ends at %v µs (max %v)", engine, sum, l.Count, l.Histogram[len(l.Histogram)-1].Hi, l.Max)
	}
	if w.Writes <= 0 || w.AchievedPerSec <= 0 || w.TargetPerSec <= 0 {
		t.Errorf("json %s writer %+v", engine, w)
	}
}

func findRow(s, b string) string {
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "| "+b+" ") { // the first table's
			return line
		}
	}
	return ""
}

func readReport(t *testing.T, path string) *jsonReport {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep jsonReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("--json output does not parse: %v", err)
	}
	return &rep
}

// TestAllEngines runs every benchmark on the Go engines.
func TestAllEngines(t *testing.T) {
	checkEngines(t, "bloomkv,goleveldb,pebble")
}

// TestNoPrefix: without --prefix_size the sequence runs as before plus
// scanempty and scanshort, and seekprefix is left out.
func TestNoPrefix(t *testing.T) {
	cfg := defaultConfig()
	cfg.num, cfg.reads = 2000, 200
	cfg.writeBufferSize = 64 << 10
	cfg.engines = "bloomkv,pebble"
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "| seekprefix ") || !strings.Contains(s, "| scanempty ") || strings.Contains(s, "WARNING") {
		t.Errorf("output:\n%s", s)
	}
}

// TestBenchmarksFlag: --benchmarks runs what it lists (the load runs for
// the reads even when fillrandom is not listed), and refuses what it does
// not know.
func TestBenchmarksFlag(t *testing.T) {
	cfg := defaultConfig()
	cfg.num, cfg.reads = 2000, 200
	cfg.writeBufferSize = 64 << 10
	cfg.engines = "bloomkv,goleveldb"
	cfg.compact = "false"
	cfg.benchmarks = "readmissing,fillseq"
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, b := range benchNames {
		if want := b == "fillseq" || b == "readmissing"; (findRow(s, b) != "") != want {
			t.Errorf("row for %s: %v, want %v\n%s", b, !want, want, s)
		}
	}
	if !strings.Contains(s, "readmissing: every engine found 0 of 200") || !strings.Contains(s, "on disk after the load (fillrandom;") {
		t.Errorf("output:\n%s", s)
	}
	for _, bad := range []string{"readsomething", "compact"} {
		cfg := defaultConfig()
		cfg.benchmarks = "readrandom," + bad
		if err := run(cfg, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--benchmarks") {
			t.Errorf("--benchmarks=%s: %v", cfg.benchmarks, err)
		}
	}
}

// writeGoLevelDBStore writes a LevelDB-format store with goleveldb, as
// fillrandom does (its keys and seed), and returns its directory.
func writeGoLevelDBStore(t *testing.T, cfg *config) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	e, err := openGoLevelDB(dir, cfg.settings)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fill(e, cfg, newRand(cfg, 2), true); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// expectedFound is how many of readrandom's keys fillrandom wrote, from
// a model of the two key streams.
func expectedFound(cfg *config) int {
	written := map[int]bool{}
	rng := newRand(cfg, 2)
	for range cfg.num {
		written[rng.IntN(cfg.num)] = true
	}
	rng = newRand(cfg, 10)
	n := 0
	for range cfg.reads {
		if written[rng.IntN(cfg.num)] {
			n++
		}
	}
	return n
}

// snapshotDir lists a directory's files with their sizes and times.
func snapshotDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fmt.Sprintf("%s %d %v %v", e.Name(), info.Size(), info.Mode(), info.ModTime()))
	}
	return files
}

// checkExisting runs the read-only benchmarks with --existing_db on a
// store goleveldb wrote, opened read-write and with --existing_read_only,
// and checks that every engine in want reads it and finds what the model
// says, that the engines in mayFail either read it as well or are
// reported with their error, and that the store is left as it was.
func checkExisting(t *testing.T, want, mayFail []string) {
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("read_only=%v", readOnly), func(t *testing.T) { checkExistingMode(t, want, mayFail, readOnly) })
	}
}

func checkExistingMode(t *testing.T, want, mayFail []string, readOnly bool) {
	cfg := defaultConfig()
	cfg.num, cfg.reads = 3000, 500
	cfg.writeBufferSize = 64 << 10
	dir := writeGoLevelDBStore(t, cfg)
	before := snapshotDir(t, dir)

	cfg.engines = strings.Join(append(slices.Clone(mayFail), want...), ",")
	cfg.existingDB = dir
	cfg.existingReadOnly = readOnly
	cfg.jsonPath = filepath.Join(t.TempDir(), "out.json")
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Log(s)
	if strings.Contains(s, "WARNING") {
		t.Errorf("engines disagree:\n%s", s)
	}
	if want := expectedFound(cfg); !strings.Contains(s, fmt.Sprintf("readrandom: every engine found %d of 500", want)) {
		t.Errorf("want every engine to find %d of readrandom's keys:\n%s", want, s)
	}
	for _, b := range benchNames {
		if got, want := findRow(s, b) != "", slices.Contains(readOnlyNames, b) && b != "seekprefix"; got != want {
			t.Errorf("row for %s: %v, want %v", b, got, want)
		}
	}
	rep := readReport(t, cfg.jsonPath)
	for _, e := range rep.Engines {
		switch {
		case slices.Contains(want, e.Name) && (e.Error != "" || len(e.Results) == 0):
			t.Errorf("%s did not read the store: %q", e.Name, e.Error)
		case e.Error != "" && !strings.Contains(s, e.Name+": not run, it cannot open the store: "):
			t.Errorf("%s's error is not reported:\n%s", e.Name, s)
		case e.Error == "" && len(e.Results) == 0:
			t.Errorf("%s: no error and no results", e.Name)
		case e.Disk != nil:
			t.Errorf("%s: files measured after no load", e.Name)
		}
	}
	if after := snapshotDir(t, dir); !slices.Equal(before, after) {
		t.Errorf("--existing_db changed the store:\nbefore %q\nafter  %q", before, after)
	}
}

// TestExistingDB: goleveldb reads a LevelDB-format store that it wrote;
// bloomkv and Pebble read it too or are reported and skipped (bloomkv's
// hook for issue 19).
func TestExistingDB(t *testing.T) {
	checkExisting(t, []string{"goleveldb"}, []string{"bloomkv", "pebble"})
}

// TestExistingDBMissing: --existing_db on a directory without a store is
// an error before anything runs, and so is --existing_read_only without
// --existing_db.
func TestExistingDBMissing(t *testing.T) {
	cfg := defaultConfig()
	cfg.existingDB = t.TempDir()
	if err := run(cfg, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--existing_db: no store at") {
		t.Errorf("err = %v", err)
	}
	cfg = defaultConfig()
	cfg.existingReadOnly = true
	if err := run(cfg, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--existing_read_only needs --existing_db") {
		t.Errorf("err = %v", err)
	}
}

// TestLatencies checks the percentiles, the slow count and the buckets on
// known latencies.
func TestLatencies(t *testing.T) {
	var ns []int64
	for i := 1000; i >= 1; i-- { // 1..1000 µs, unsorted
		ns = append(ns, int64(i)*1000)
	}
	l := newLatencies(ns)
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {0.999, 999 * time.Microsecond}, {1, time.Millisecond}, {0, time.Microsecond}} {
		if got := l.percentile(c.p); got != c.want {
			t.Errorf("percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := l.over(time.Millisecond); got != 0 {
		t.Errorf("over(1ms) = %d", got)
	}
	if got := l.over(900 * time.Microsecond); got != 100 {
		t.Errorf("over(900µs) = %d", got)
	}
	bs := l.buckets()
	// [1, 2) µs holds 1 µs, [2, 4) 2 and 3, ..., [512, 1024) the rest.
	if len(bs) != 10 || bs[0].lo != time.Microsecond || bs[0].count != 1 || bs[1].count != 2 || bs[9].hi != 1024*time.Microsecond || bs[9].count != 489 {
		t.Errorf("buckets %+v", bs)
	}
	var out bytes.Buffer
	printHistograms(&out, []string{"a"}, map[string]*latencies{"a": l})
	if s := out.String(); !strings.Contains(s, "| [1µs, 2µs)") || !strings.Contains(s, "[512µs, 1ms)") || strings.Contains(s, "[0, 1µs)") {
		t.Errorf("histogram:\n%s", s)
	}
}

// TestZipfKeys: the ranks map to distinct keys of the range, and the
// draws are skewed (the hottest key is drawn far more than 1/n).
func TestZipfKeys(t *testing.T) {
	cfg := defaultConfig()
	for _, n := range []int{1, 2, 10, 1000, 1 << 10, 999_999} {
		z := newZipfKeys(newRand(cfg, 1), 1.01, n)
		if gcd(z.mul, z.n) != 1 {
			t.Errorf("n=%d: multiplier %d not coprime", n, z.mul)
		}
		counts := map[int]int{}
		for range 10_000 {
			k := z.next()
			if k < 0 || k >= n {
				t.Fatalf("n=%d: key %d out of range", n, k)
			}
			counts[k]++
		}
		if top := slices.Max(slices.Collect(maps.Values(counts))); n >= 1000 && top < 500 {
			t.Errorf("n=%d: the hottest key drawn %d times of 10,000", n, top)
		}
	}
}

// TestReadWhileWritingPaced: with --duration the readers read for that
// long, and the writer never writes faster than --write_rate (plus its
// burst, and the moment between the readers' end and its own).
func TestReadWhileWritingPaced(t *testing.T) {
	cfg := defaultConfig()
	cfg.num, cfg.reads = 2000, 100
	cfg.writeBufferSize = 64 << 10
	cfg.engines = "bloomkv,goleveldb"
	cfg.benchmarks = "readwhilewriting"
	cfg.compact = "false"
	cfg.duration = 300 * time.Millisecond
	cfg.writeRate = 2000
	cfg.threads = 2
	cfg.jsonPath = filepath.Join(t.TempDir(), "out.json")
	var out bytes.Buffer
	if err := run(cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, e := range readReport(t, cfg.jsonPath).Engines {
		if len(e.Results) != 1 {
			t.Fatalf("%s: results %+v", e.Name, e.Results)
		}
		r := e.Results[0]
		checkLatency(t, e.Name, r)
		if r.Seconds < cfg.duration.Seconds() || r.Ops <= cfg.reads {
			t.Errorf("%s: %d Gets in %.3f s, want more than --reads in at least --duration", e.Name, r.Ops, r.Seconds)
		}
		if most := cfg.writeRate*(r.Seconds+0.1+writeBurst.Seconds()) + 1; float64(r.Writer.Writes) > most {
			t.Errorf("%s: %d writes in %.3f s, more than --write_rate allows (%.0f)", e.Name, r.Writer.Writes, r.Seconds, most)
		}
	}
}

// checkKeepStores writes a store with engine into a --dir that does not
// exist yet, keeps it (--keep_stores), and reads it back with
// --existing_db: every key fillrandom wrote is found.
func checkKeepStores(t *testing.T, engine string) {
	cfg := defaultConfig()
	cfg.num, cfg.reads = 2000, 300
	cfg.writeBufferSize = 64 << 10
	cfg.engines = engine
	cfg.benchmarks = "fillrandom"
	cfg.compact = "false"
	cfg.dir = filepath.Join(t.TempDir(), "a", "b")
	cfg.keepStores = true
	if err := run(cfg, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	read := defaultConfig()
	read.num, read.reads = cfg.num, cfg.reads
	read.engines = engine
	read.benchmarks = "readrandom"
	read.existingDB = filepath.Join(cfg.dir, engine+"-0")
	var out bytes.Buffer
	if err := run(read, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("readrandom: every engine found %d of %d", expectedFound(read), read.reads); !strings.Contains(out.String(), want) {
		t.Errorf("want %q in\n%s", want, out.String())
	}
}

// TestKeepStores: goleveldb's kept store is an --existing_db input.
func TestKeepStores(t *testing.T) { checkKeepStores(t, "goleveldb") }

// TestPrefixUpper checks the adapters' reused upper bound against
// db.PrefixBounds, with the buffer reused across prefixes of every shape.
func TestPrefixUpper(t *testing.T) {
	var buf []byte
	for _, p := range []string{"", "a", "user:42:", "ab\xff", "\xff", "\xff\xff", "a\xff\xff", "00000042", "zz"} {
		_, want := db.PrefixBounds([]byte(p))
		buf = prefixUpper(buf, []byte(p))
		if !bytes.Equal(buf, want) || (buf == nil) != (want == nil) {
			t.Errorf("prefixUpper(%q) = %q (nil %v), want %q (nil %v)", p, buf, buf == nil, want, want == nil)
		}
	}
}

// TestKeyLayout: with --prefix_size, keys sort in their number's order,
// 16 share each prefix, and prefix is the key's first --prefix_size bytes.
func TestKeyLayout(t *testing.T) {
	cfg := defaultConfig()
	cfg.prefixSize = 8
	var kb, pb [keyLen]byte
	prev := ""
	for k := range 5000 {
		key := string(cfg.key(kb[:], k))
		if want := fmt.Sprintf("%08d%08d", k/keysPerPrefix, k%keysPerPrefix); key != want {
			t.Fatalf("key(%d) = %q, want %q", k, key, want)
		}
		if key <= prev {
			t.Fatalf("key(%d) = %q sorts before key(%d) = %q", k, key, k-1, prev)
		}
		if p := string(cfg.prefix(pb[:], k)); p != key[:8] {
			t.Fatalf("prefix(%d) = %q, want %q", k, p, key[:8])
		}
		prev = key
	}
}

// TestPrefixSizeLeavesSuffix: --prefix_size must leave two digits for a
// key's position among its prefix's 16 (15 made keys 16q+10 ... 16q+15
// collide with 16q+0 ... 16q+5), and number --num/16 prefixes.
func TestPrefixSizeLeavesSuffix(t *testing.T) {
	for _, c := range []struct {
		size, num int
		ok        bool
	}{{14, 1000, true}, {15, 1000, false}, {16, 1000, false}, {-1, 1000, false}, {1, 160, false}, {1, 159, true}} {
		cfg := defaultConfig()
		cfg.prefixSize, cfg.num, cfg.reads = c.size, c.num, 10
		cfg.benchmarks = "nonexistent-so-nothing-runs"
		err := run(cfg, io.Discard, io.Discard)
		if rejected := err != nil && strings.Contains(err.Error(), "--prefix_size"); rejected == c.ok {
			t.Errorf("--prefix_size=%d --num=%d: %v", c.size, c.num, err)
		}
	}
}
