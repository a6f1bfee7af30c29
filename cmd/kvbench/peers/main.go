// Command peers runs the same db_bench workloads against bloomkv,
// goleveldb (github.com/syndtr/goleveldb) and Pebble
// (github.com/cockroachdb/pebble/v2), and, when built with -tags
// cppengines, LevelDB and RocksDB (C++, through cgo and their C APIs),
// and prints each engine's ops/s and the ratio bloomkv/peer for every
// benchmark.
//
// It lives in its own Go module so that the peers never become
// dependencies of bloomkv: a program importing bloomkv does not see them.
//
// Every engine gets the same settings: 16-byte keys (%016d), --value_size
// values that compress to --compression_ratio, a Bloom filter of
// --bloom_bits bits per key (bloomkv filter.NewBloomPolicy, goleveldb
// filter.NewBloomFilter, pebble bloom.FilterPolicy on every level, LevelDB
// its built-in Bloom filter, RocksDB a full Bloom filter), a --cache_size
// LRU block cache, a --write_buffer_size memtable, --block_size data
// blocks, snappy compression, writes without sync. The sequence, per
// engine and round (--benchmarks chooses among them; the order stays):
//
//	fillseq      fresh store, --num writes in key order; the store is then removed
//	fillrandom   fresh store, --num writes of random keys of [0, --num)
//	overwrite    --num more random writes on the same store
//	compact      the whole key range (DB.CompactRange / CompactRange / Compact), when --compact
//	(close the store, open and close it, measure its files, reopen it)
//	coldstart    the reopen and the first 10,000 gets of random keys after it, timed together
//	             (ops/s: those gets over both), so opening tables, filters and indexes counts
//	             whether the engine does it in the open or in the first reads
//	readrandom   --reads gets of random keys
//	readmissing  --reads gets of absent keys (a real key with its last byte dropped)
//	readhot      --reads gets of random keys of the first 1% of the range
//	readzipf     --reads gets of keys drawn from a Zipf distribution (--zipf_s), the hot keys scattered over the range
//	seekrandom   --reads seeks of a new iterator to random keys
//	readseq      iterate --reads entries from the first
//	seekprefix   --reads scans of whole prefixes, --absent_prefix_fraction of them absent (with --prefix_size)
//	scanempty    --reads bounded scans of 16-key ranges between keys that hold none
//	scanshort    --reads bounded scans of ranges [key(k), key(k+16))
//	readwhilewriting  --threads readers doing --reads gets of random keys each, timed one by one,
//	             while one writer puts random keys at --write_rate writes/s
//
// The reads need the store fillrandom makes: when a read is chosen, the
// store is loaded whether or not fillrandom is listed (and reported only
// when it is). readwhilewriting runs last, since it changes the store.
// It reports the readers' Gets per second in the table, then per engine
// the write rate the writer achieved, the p50, p99, p99.9 and maximum
// Get latency, how many Gets took longer than --slow_get, and a histogram
// of the latencies in log2 buckets.
//
// Scans: seekprefix, scanempty and scanshort are kvbench's benchmarks of
// the same names (issue 17), at its defaults (--absent_prefix_fraction=0.5,
// --scan_width=16; the first can be set here too). With
// --prefix_size=N the keys take kvbench's --prefix_size layout (N digits
// of k/16, then 16-N digits of k%16: 16 keys per prefix, the key order
// unchanged) and each engine gets what it has for prefixes: bloomkv
// Options.Prefix = filter.FixedPrefix(N) (its filters hold keys and
// prefixes), Pebble a Comparer whose Split is the first N bytes (its
// Bloom filters then hold prefixes only, so Get is filtered by prefix
// too, and readmissing's keys, which share a real key's prefix, pass its
// filter), RocksDB a fixed prefix extractor (its filters hold keys and
// prefixes), goleveldb and LevelDB nothing (neither has a prefix filter).
// seekprefix uses bounded iterators in bloomkv (db.PrefixBounds),
// SeekPrefixGE in Pebble (the only way it consults its filter on a scan),
// util.BytesPrefix in goleveldb, a bounded prefix seek
// (prefix_same_as_start) in RocksDB and a seek that stops at the bound in
// LevelDB. scanempty and scanshort are bounded iterators everywhere; no
// peer has a range filter, so only bloomkv with --range_filter_bits can
// skip a table for an empty range that lies within a present prefix.
// After the table, the program prints what each engine read from its
// table files per scan, as far as it tells.
//
// Every engine draws the same keys (same seeds), so the found counts must
// agree; the program says so when they do not (readwhilewriting excepted:
// what its readers find depends on how far the writer got).
//
// After the load (the writes and the compaction; the store closed, opened
// and closed again, since goleveldb removes obsolete tables and Pebble old
// logs only at an open) the program measures each store's files: all of
// them, the tables and the logs.
//
// --existing_db DIR runs the read-only benchmarks (readrandom,
// readmissing, readhot, readzipf, seekrandom, readseq and the scans) on
// a store that is already there, in LevelDB's format (written by LevelDB,
// goleveldb, or this program with --keep_stores): each engine opens a
// private copy of it (the tables hard-linked, the rest copied, so DIR is
// never changed) as it opens its own stores, read-write, so that it may
// compact it meanwhile as it would (RocksDB excepted: it always opens
// such a store read-only, since its read-write open can abort the
// process); --existing_read_only opens the copies read-only where the
// engine can (bloomkv, Pebble, RocksDB; LevelDB's C API has no read-only
// open, and goleveldb's fails on a store whose logs hold writes), so the
// reads see the tree as it was. An engine that
// cannot open the store is reported with its error and the others go on
// (Pebble v2 refuses LevelDB's format, and RocksDB its level-0 tables
// without sequence numbers; bloomkv reads it, issue 19). The keys are
// drawn as always, %016d of [0, --num), so --num must be the store's.
//
// --json FILE also writes the results as JSON: the configuration, and per
// engine its version, its results (ops/s per round, the median round,
// the ratio to the first engine, the latency summary and histogram of
// readwhilewriting), its files after the load and the open error, if any.
//
// Usage (from cmd/kvbench/peers):
//
//	go run . --num=1000000 --reads=300000
//	go run -tags cppengines . --engines=bloomkv,pebble,goleveldb,leveldb,rocksdb
//
// The second needs cgo and the C++ libraries (apt-get install
// libleveldb-dev librocksdb-dev); see RESULTS.md, "C++ engines".
package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"time"
)

type config struct {
	num              int
	reads            int
	valueSize        int
	compressionRatio float64
	settings
	engines string
	rounds  int
	compact string
	dir     string
	seed    uint64
	// absentPrefixFraction is the share of seekprefix's scans whose
	// prefix is absent (kvbench's --absent_prefix_fraction).
	absentPrefixFraction float64
	// benchmarks is --benchmarks, a comma-separated list ("": all).
	benchmarks string
	// threads is readwhilewriting's number of readers.
	threads int
	// writeRate is readwhilewriting's writes per second (0: unpaced).
	writeRate float64
	// duration, when positive, is how long readwhilewriting's readers
	// read (instead of --reads Gets each).
	duration time.Duration
	// slowGet is the latency above which readwhilewriting counts a Get
	// as slow.
	slowGet time.Duration
	// zipfS is readzipf's exponent.
	zipfS float64
	// existingDB is the store --existing_db runs the reads on ("": none).
	existingDB string
	// existingReadOnly opens existingDB read-only where the engine can.
	existingReadOnly bool
	// keepStores keeps the stores in --dir.
	keepStores bool
	// jsonPath is where --json writes the results ("": nowhere).
	jsonPath string
	// cpuProfile is where --cpuprofile writes a CPU profile ("": none),
	// from the first benchmark chosen by --benchmarks to the end of the
	// run (beginProfile).
	cpuProfile string
	profiling  bool
	// cpuStart is the process's CPU time when the benchmark running began.
	cpuStart time.Duration

	// Derived by run.
	benchList []string // the benchmarks chosen (nil: all)
	doCompact bool     // the compaction runs
}

func defaultConfig() *config {
	return &config{
		num: 1_000_000, reads: 300_000, valueSize: 100, compressionRatio: 0.5,
		settings: settings{bloomBits: 10, cacheSize: 8 << 20, writeBufferSize: 4 << 20, blockSize: 4 << 10},
		engines:  strings.Join(engineOrder, ","), rounds: 1, compact: "auto", seed: 301,
		absentPrefixFraction: 0.5,
		threads:              1, writeRate: 50_000, slowGet: time.Millisecond, zipfS: 1.01,
	}
}

func (c *config) registerFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.num, "num", c.num, "number of keys")
	fs.IntVar(&c.reads, "reads", c.reads, "operations of each read benchmark (readwhilewriting: of each reader)")
	fs.IntVar(&c.valueSize, "value_size", c.valueSize, "value size in bytes")
	fs.Float64Var(&c.compressionRatio, "compression_ratio", c.compressionRatio, "values compress to this fraction of their size")
	fs.IntVar(&c.bloomBits, "bloom_bits", c.bloomBits, "Bloom filter bits per key for every engine (0: no filter)")
	fs.Int64Var(&c.cacheSize, "cache_size", c.cacheSize, "block cache bytes for every engine")
	fs.IntVar(&c.writeBufferSize, "write_buffer_size", c.writeBufferSize, "memtable bytes for every engine")
	fs.IntVar(&c.blockSize, "block_size", c.blockSize, "data block bytes for every engine")
	fs.StringVar(&c.engines, "engines", c.engines, "engines to run, in order (the first is the base of the ratios): "+strings.Join(engineOrder, ", "))
	fs.StringVar(&c.benchmarks, "benchmarks", c.benchmarks, "benchmarks to run, comma-separated (default: all): "+strings.Join(slices.DeleteFunc(slices.Clone(benchNames), func(b string) bool { return b == "compact" }), ", ")+"; they run in that order whatever the order given")
	fs.IntVar(&c.rounds, "rounds", c.rounds, "run the whole sequence this many times per engine (engines take turns) and report the median")
	fs.StringVar(&c.compact, "compact", c.compact, "compact every engine after the writes: true, false, or auto (when bloomkv has DB.CompactRange)")
	fs.StringVar(&c.dir, "dir", "", "directory for the stores (default: a temporary directory, removed at exit)")
	fs.BoolVar(&c.keepStores, "keep_stores", false, "keep each engine's store in --dir (as <engine>-<round>) instead of removing it after its reads; goleveldb's and leveldb's are LevelDB-format stores for --existing_db")
	fs.Uint64Var(&c.seed, "seed", c.seed, "random seed")
	fs.IntVar(&c.prefixSize, "prefix_size", c.prefixSize, "bytes of each key that are its prefix (0: none, and seekprefix is not run); keys then hold 16 keys per prefix, and every engine gets its prefix filter (see the package comment)")
	fs.Float64Var(&c.absentPrefixFraction, "absent_prefix_fraction", c.absentPrefixFraction, "share of seekprefix's scans whose prefix is absent from the store (in [0, 1])")
	fs.IntVar(&c.rangeFilterBits, "range_filter_bits", c.rangeFilterBits, "bloomkv only: a range filter of this many bits per key (Options.RangeFilter; 0: none); no peer has one")
	fs.IntVar(&c.threads, "threads", c.threads, "readwhilewriting: reader goroutines (one writer besides)")
	fs.Float64Var(&c.writeRate, "write_rate", c.writeRate, "readwhilewriting: the writer's writes per second (0: as fast as it can)")
	fs.DurationVar(&c.duration, "duration", 0, "readwhilewriting: read for this long (instead of --reads Gets per reader)")
	fs.DurationVar(&c.slowGet, "slow_get", c.slowGet, "readwhilewriting: count the Gets slower than this")
	fs.Float64Var(&c.zipfS, "zipf_s", c.zipfS, "readzipf: the Zipf exponent (> 1; larger is more skewed)")
	fs.StringVar(&c.existingDB, "existing_db", "", "run the read-only benchmarks on this existing LevelDB-format store (each engine on a private copy; see the package comment); --num must be the store's")
	fs.BoolVar(&c.existingReadOnly, "existing_read_only", false, "with --existing_db: open the store read-only where the engine can (bloomkv, pebble; rocksdb always opens it read-only), so nothing compacts it during the reads")
	fs.StringVar(&c.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile to this file, from the start of the first benchmark --benchmarks lists (a load it needs but does not list is left out) to the end of the run; C++ engines show as cgo calls. Best with one engine")
}

// benchNames are the benchmarks in run and report order.
var benchNames = []string{"fillseq", "fillrandom", "overwrite", "compact", "coldstart", "readrandom", "readmissing", "readhot", "readzipf", "seekrandom", "readseq", "seekprefix", "scanempty", "scanshort", "readwhilewriting"}

// readOnlyNames are the benchmarks that change nothing: the ones
// --existing_db runs.
var readOnlyNames = []string{"readrandom", "readmissing", "readhot", "readzipf", "seekrandom", "readseq", "seekprefix", "scanempty", "scanshort"}

// scanNames are the scan benchmarks, whose table files reads are reported.
var scanNames = []string{"seekprefix", "scanempty", "scanshort"}

// measurement is one benchmark on one engine in one round.
type measurement struct {
	ops     int
	found   int
	bytes   int64
	elapsed time.Duration
	// The scans: the entries they returned, and what the engine read
	// from its table files meanwhile (-1: the engine does not say).
	keys    int
	blocks  int64
	ioBytes int64
	// readwhilewriting: every Get's latency, and the writer's writes and
	// the time they took.
	lat          *latencies
	writes       int64
	writeElapsed time.Duration
	// coldstart: the open's share of elapsed.
	open time.Duration
	// cpu is the CPU time the whole process used meanwhile (all threads:
	// background flushes and compactions, the C++ engines' threads, and
	// readwhilewriting's writer). On a shared machine it varies less than
	// the elapsed time.
	cpu time.Duration
}

// cpuPerOp is the process's CPU time per operation.
func (m measurement) cpuPerOp() time.Duration {
	if m.ops <= 0 {
		return 0
	}
	return m.cpu / time.Duration(m.ops)
}

func (m measurement) opsPerSec() float64 {
	if m.elapsed <= 0 {
		return 0
	}
	return float64(m.ops) / m.elapsed.Seconds()
}

// writesPerSec is the rate readwhilewriting's writer achieved.
func (m measurement) writesPerSec() float64 {
	if m.writeElapsed <= 0 {
		return 0
	}
	return float64(m.writes) / m.writeElapsed.Seconds()
}

// engineRun is what one round on one engine produced.
type engineRun struct {
	ms        map[string]measurement
	levels    string // tables per level after the load, and what the reads did
	disk      diskUsage
	version   string
	measured  bool // disk was measured
	openError error
}

// diskUsage is the size of a store's files.
type diskUsage struct {
	Files      int   `json:"files"`
	Bytes      int64 `json:"bytes"`
	Tables     int   `json:"tables"`
	TableBytes int64 `json:"table_bytes"`
	WALBytes   int64 `json:"wal_bytes"`
	OtherBytes int64 `json:"other_bytes"`
}

func main() {
	fs := flag.NewFlagSet("peers", flag.ExitOnError)
	cfg := defaultConfig()
	cfg.registerFlags(fs)
	fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "peers: unexpected argument %q\n", fs.Arg(0))
		os.Exit(2)
	}
	err := run(cfg, os.Stdout, os.Stderr)
	if cfg.profiling {
		pprof.StopCPUProfile()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "peers: %v\n", err)
		os.Exit(1)
	}
}

// validate checks the flags and derives benchList and doCompact.
func (cfg *config) validate() error {
	for _, n := range strings.Split(cfg.engines, ",") {
		if err := checkEngine(n); err != nil {
			return err
		}
	}
	if cfg.num <= 0 || cfg.reads <= 0 || cfg.rounds <= 0 {
		return fmt.Errorf("--num, --reads and --rounds must be positive")
	}
	// The suffix must hold k%16 (two digits), and the prefix number
	// --num/16 prefixes: otherwise keys collide.
	if cfg.prefixSize < 0 || cfg.prefixSize > keyLen-2 || cfg.prefixSize > 0 && cfg.num/keysPerPrefix >= pow10(cfg.prefixSize) {
		return fmt.Errorf("--prefix_size must be in [0, %d] and number --num/%d prefixes", keyLen-2, keysPerPrefix)
	}
	if cfg.rangeFilterBits < 0 {
		return fmt.Errorf("--range_filter_bits must be >= 0")
	}
	if !(cfg.absentPrefixFraction >= 0 && cfg.absentPrefixFraction <= 1) {
		return fmt.Errorf("--absent_prefix_fraction must be in [0, 1]")
	}
	if cfg.threads <= 0 || !(cfg.writeRate >= 0) || !(cfg.zipfS > 1) {
		return fmt.Errorf("--threads must be positive, --write_rate >= 0 and --zipf_s > 1")
	}
	if cfg.compact != "true" && cfg.compact != "false" && cfg.compact != "auto" {
		return fmt.Errorf("--compact must be true, false or auto")
	}
	cfg.doCompact = cfg.compact == "true" || cfg.compact == "auto" && bloomKVHasCompactRange()
	cfg.benchList = nil
	if cfg.benchmarks != "" {
		for _, b := range strings.Split(cfg.benchmarks, ",") {
			switch {
			case b == "compact":
				return fmt.Errorf("--benchmarks: the compaction is --compact's")
			case !slices.Contains(benchNames, b):
				return fmt.Errorf("--benchmarks: unknown benchmark %q (have %s)", b, strings.Join(benchNames, ", "))
			}
			cfg.benchList = append(cfg.benchList, b)
		}
	}
	if cfg.keepStores && cfg.dir == "" {
		return fmt.Errorf("--keep_stores needs --dir")
	}
	if cfg.existingDB != "" {
		if _, err := os.Stat(filepath.Join(cfg.existingDB, "CURRENT")); err != nil {
			return fmt.Errorf("--existing_db: no store at %s (no CURRENT file): %w", cfg.existingDB, err)
		}
		cfg.settings.existing = true
		cfg.settings.readOnly = cfg.existingReadOnly
	} else if cfg.existingReadOnly {
		return fmt.Errorf("--existing_read_only needs --existing_db")
	}
	return nil
}

// ran reports whether benchmark b is part of the run.
func ran(cfg *config, b string) bool {
	switch {
	case b == "seekprefix" && cfg.prefixSize <= 0:
		return false
	case cfg.existingDB != "" && !slices.Contains(readOnlyNames, b):
		return false
	case b == "compact":
		return cfg.doCompact && needsStore(cfg)
	}
	return cfg.benchList == nil || slices.Contains(cfg.benchList, b)
}

// needsStore reports whether the run needs fillrandom's store: anything
// but fillseq alone.
func needsStore(cfg *config) bool {
	return cfg.benchList == nil || slices.ContainsFunc(cfg.benchList, func(b string) bool { return b != "fillseq" })
}

func run(cfg *config, out, errOut io.Writer) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	names := strings.Split(cfg.engines, ",")
	root := cfg.dir
	if root != "" {
		// LevelDB creates a store's own directory, not its parents.
		if err := os.MkdirAll(root, 0o755); err != nil {
			return err
		}
	} else {
		tmp, err := os.MkdirTemp("", "peers-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		root = tmp
	}

	vs := names[0]
	if len(names) > 1 {
		vs += " vs " + strings.Join(names[1:], ", ")
	}
	fmt.Fprintf(out, "peers: %s (%s, %s/%s, %d CPUs, %s)\n", vs, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().Format("2006-01-02 15:04 MST"))
	if cfg.existingDB != "" {
		mode := "read-write, as each engine opens its own stores"
		if cfg.existingReadOnly {
			mode = "read-only where the engine can"
		}
		fmt.Fprintf(out, "existing store %s (each engine reads a private copy, opened %s; read-only benchmarks only); ", cfg.existingDB, mode)
	}
	if cfg.prefixSize > 0 {
		fmt.Fprintf(out, "keys with %d-byte prefixes of %d keys each; ", cfg.prefixSize, keysPerPrefix)
	}
	if cfg.rangeFilterBits > 0 {
		fmt.Fprintf(out, "bloomkv range filter %d bits/key; ", cfg.rangeFilterBits)
	}
	compact := fmt.Sprintf("compact after writes: %v, ", cfg.doCompact)
	if cfg.existingDB != "" {
		compact = ""
	}
	fmt.Fprintf(out, "keys 16 bytes, values %d bytes (compressible to %.2f), --num %d, --reads %d, bloom %d bits/key, cache %d, write buffer %d, block %d, %srounds %d\n",
		cfg.valueSize, cfg.compressionRatio, cfg.num, cfg.reads, cfg.bloomBits, cfg.cacheSize, cfg.writeBufferSize, cfg.blockSize, compact, cfg.rounds)
	var extra []string
	if ran(cfg, "readwhilewriting") {
		extra = append(extra, fmt.Sprintf("readwhilewriting: %d reader(s) %s, one writer at %s writes/s", cfg.threads, cfg.readersWork(), rateString(cfg.writeRate)))
	}
	if ran(cfg, "readzipf") {
		extra = append(extra, fmt.Sprintf("readzipf: exponent %g", cfg.zipfS))
	}
	if len(extra) > 0 {
		fmt.Fprintln(out, strings.Join(extra, "; "))
	}
	fmt.Fprintln(out)

	res := map[string]map[string][]measurement{} // engine -> benchmark -> rounds
	last := map[string]engineRun{}
	for round := 0; round < cfg.rounds; round++ {
		for _, name := range names {
			dir := filepath.Join(root, fmt.Sprintf("%s-%d", name, round))
			var r engineRun
			var err error
			if cfg.existingDB != "" {
				r, err = runExisting(cfg, name, dir, errOut)
			} else {
				r, err = runEngine(cfg, name, dir, errOut)
			}
			if !cfg.keepStores {
				os.RemoveAll(dir)
			}
			if r.openError != nil {
				// Only with --existing_db: this engine cannot read the
				// store; the others go on.
				fmt.Fprintf(errOut, "%-10s cannot open %s: %v\n", name, cfg.existingDB, r.openError)
				last[name] = r
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if res[name] == nil {
				res[name] = map[string][]measurement{}
			}
			for b, m := range r.ms {
				res[name][b] = append(res[name][b], m)
			}
			last[name] = r
		}
	}
	var ranNames []string
	for _, n := range names {
		if res[n] != nil {
			ranNames = append(ranNames, n)
		} else if e := last[n].openError; e != nil {
			fmt.Fprintf(out, "%s: not run, it cannot open the store: %v\n", n, e)
		}
	}
	if len(ranNames) > 0 && len(ranNames) < len(names) {
		fmt.Fprintln(out)
	}
	if len(ranNames) == 0 {
		return fmt.Errorf("no engine could run")
	}
	printTable(out, cfg, ranNames, res)
	what := "after the writes"
	if cfg.doCompact {
		what += ", compaction"
	}
	what += " and a reopen"
	if cfg.existingDB != "" {
		what = "of the existing store as each engine opened it"
	}
	fmt.Fprintf(out, "\ntables per level %s; what the reads did (last round):\n", what)
	for _, n := range ranNames {
		fmt.Fprintf(out, "  %-10s %s\n", n, last[n].levels)
	}
	printDisk(out, cfg, ranNames, last)
	printScans(out, cfg, ranNames, res)
	printReadWhileWriting(out, cfg, ranNames, res)
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, buildReport(cfg, names, res, last)); err != nil {
			return err
		}
	}
	return nil
}

// readersWork says how much each readwhilewriting reader reads.
func (cfg *config) readersWork() string {
	if cfg.duration > 0 {
		return "for " + cfg.duration.String()
	}
	return thousands(float64(cfg.reads)) + " each"
}

func rateString(r float64) string {
	if r <= 0 {
		return "unpaced"
	}
	return thousands(r)
}

// printDisk prints each store's files after the load (last round).
func printDisk(out io.Writer, cfg *config, names []string, last map[string]engineRun) {
	if !last[names[0]].measured {
		return
	}
	what := "fillrandom, overwrite"
	if cfg.benchList != nil && !slices.Contains(cfg.benchList, "overwrite") {
		what = "fillrandom"
	}
	if cfg.doCompact {
		what += ", compaction"
	}
	fmt.Fprintf(out, "\non disk after the load (%s; the store closed, opened and closed again, so that every engine has removed the files it no longer needs), last round:\n\n", what)
	rows := [][]string{{"engine", "all files MB", "tables MB", "tables", "WAL MB", names[0] + "/engine (all files)"}}
	base := last[names[0]].disk
	for _, n := range names {
		d := last[n].disk
		rows = append(rows, []string{n, fmt.Sprintf("%.1f", mb(d.Bytes)), fmt.Sprintf("%.1f", mb(d.TableBytes)), fmt.Sprint(d.Tables), fmt.Sprintf("%.1f", mb(d.WALBytes)), fmt.Sprintf("%.2fx", float64(base.Bytes)/float64(d.Bytes))})
	}
	writeMarkdownTable(out, rows)
}

func mb(b int64) float64 { return float64(b) / 1e6 }

// printScans prints, per scan benchmark and engine, the entries per scan
// and what the engine read from its table files per scan (medians).
func printScans(out io.Writer, cfg *config, names []string, res map[string]map[string][]measurement) {
	var rows [][]string
	for _, b := range scanNames {
		if !ran(cfg, b) {
			continue
		}
		row := []string{b}
		for _, n := range names {
			m := median(res[n][b])
			cell := fmt.Sprintf("%.2f keys", float64(m.keys)/float64(m.ops))
			switch {
			case m.blocks >= 0:
				cell += fmt.Sprintf(", %.3f blocks", float64(m.blocks)/float64(m.ops))
			case m.ioBytes >= 0:
				cell += fmt.Sprintf(", %.0f bytes", float64(m.ioBytes)/float64(m.ops))
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(out, "\nper scan (median round): entries returned; table file reads (bloomkv: data blocks read from files; pebble: block cache misses, any block kind; goleveldb: bytes read from files, all kinds; leveldb, rocksdb: not counted):\n\n")
	writeMarkdownTable(out, append([][]string{append([]string{"benchmark"}, names...)}, rows...))
}

// printReadWhileWriting prints readwhilewriting's latencies (median round):
// a row per engine, then the histograms side by side.
func printReadWhileWriting(out io.Writer, cfg *config, names []string, res map[string]map[string][]measurement) {
	if !ran(cfg, "readwhilewriting") {
		return
	}
	fmt.Fprintf(out, "\nreadwhilewriting (median round): %d reader(s) doing Gets of random keys %s while one writer puts random keys, paced at %s writes/s; Get latencies of all readers:\n\n",
		cfg.threads, cfg.readersWork(), rateString(cfg.writeRate))
	rows := [][]string{{"engine", "Gets/s", "writes/s achieved", "p50 µs", "p99 µs", "p99.9 µs", "max µs", "Gets > " + cfg.slowGet.String()}}
	lats := map[string]*latencies{}
	for _, n := range names {
		m := median(res[n]["readwhilewriting"])
		l := m.lat
		lats[n] = l
		rows = append(rows, []string{n, thousands(m.opsPerSec()), thousands(m.writesPerSec()),
			fmt.Sprintf("%.1f", us(l.percentile(0.5))), fmt.Sprintf("%.1f", us(l.percentile(0.99))), fmt.Sprintf("%.1f", us(l.percentile(0.999))), fmt.Sprintf("%.0f", us(l.max())),
			fmt.Sprintf("%s (%s)", thousands(float64(l.over(cfg.slowGet))), share(l.over(cfg.slowGet), l.count()))})
	}
	writeMarkdownTable(out, rows)
	fmt.Fprintf(out, "\nGet latency histogram (median round; Gets in each log2 bucket, and their share):\n\n")
	printHistograms(out, names, lats)
}

func pow10(n int) int {
	p := 1
	for ; n > 0 && p < 1e17; n-- {
		p *= 10
	}
	return p
}

// median returns the round with the median ops/s.
func median(ms []measurement) measurement {
	s := slices.Clone(ms)
	sort.Slice(s, func(i, j int) bool { return s[i].opsPerSec() < s[j].opsPerSec() })
	return s[len(s)/2]
}

// ratio is names[0]'s speed over engine n's for benchmark b (median
// rounds): ops/s over ops/s, and for compact the time over the time.
func ratio(res map[string]map[string][]measurement, base, n, b string) float64 {
	m, bm := median(res[n][b]), median(res[base][b])
	if b == "compact" {
		return m.elapsed.Seconds() / bm.elapsed.Seconds()
	}
	return bm.opsPerSec() / m.opsPerSec()
}

func printTable(out io.Writer, cfg *config, names []string, res map[string]map[string][]measurement) {
	head := []string{"benchmark"}
	for _, n := range names {
		head = append(head, n+" ops/s")
	}
	for _, n := range names[1:] {
		head = append(head, names[0]+"/"+n)
	}
	rows := [][]string{head}
	var notes []string
	for _, b := range benchNames {
		if !ran(cfg, b) {
			continue
		}
		row := []string{b}
		founds := map[int][]string{}
		for _, n := range names {
			m := median(res[n][b])
			if b == "compact" {
				row = append(row, fmt.Sprintf("%.2f s", m.elapsed.Seconds()))
			} else {
				row = append(row, thousands(m.opsPerSec()))
			}
			founds[m.found] = append(founds[m.found], n)
		}
		for _, n := range names[1:] {
			row = append(row, fmt.Sprintf("%.2fx", ratio(res, names[0], n, b)))
		}
		rows = append(rows, row)
		switch {
		case b == "readwhilewriting":
			var parts []string
			for _, n := range names {
				m := median(res[n][b])
				parts = append(parts, fmt.Sprintf("%s %d of %d", n, m.found, m.ops))
			}
			notes = append(notes, "readwhilewriting: found (it depends on the writer's progress): "+strings.Join(parts, ", "))
		case len(founds) > 1:
			notes = append(notes, fmt.Sprintf("WARNING: %s found counts differ (found: engines): %v", b, founds))
		case b == "coldstart":
			var parts []string
			for _, n := range names {
				m := median(res[n][b])
				parts = append(parts, fmt.Sprintf("%s %.1f + %.1f", n, ms(m.open), ms(m.elapsed-m.open)))
			}
			notes = append(notes, "coldstart: ms to open + ms for the first 10,000 reads: "+strings.Join(parts, ", "))
		case b == "readrandom" || b == "readmissing" || b == "readhot" || b == "readzipf" || b == "seekrandom":
			for f := range founds {
				notes = append(notes, fmt.Sprintf("%s: every engine found %d of %d", b, f, cfg.reads))
			}
		case slices.Contains(scanNames, b):
			keys := map[int][]string{}
			for _, n := range names {
				keys[median(res[n][b]).keys] = append(keys[median(res[n][b]).keys], n)
			}
			if len(keys) > 1 {
				notes = append(notes, fmt.Sprintf("WARNING: %s entries returned differ (entries: engines): %v", b, keys))
			}
			for f := range founds {
				notes = append(notes, fmt.Sprintf("%s: every engine found keys in %d of %d scans", b, f, cfg.reads))
			}
		}
	}
	writeMarkdownTable(out, rows)
	if cfg.rounds > 1 {
		fmt.Fprintf(out, "\nspread over the %d rounds (slowest..fastest ops/s; compact: seconds):\n\n", cfg.rounds)
		spread := [][]string{append([]string{"benchmark"}, names...)}
		for _, b := range benchNames {
			if !ran(cfg, b) {
				continue
			}
			row := []string{b}
			for _, n := range names {
				ms := slices.Clone(res[n][b])
				sort.Slice(ms, func(i, j int) bool { return ms[i].opsPerSec() < ms[j].opsPerSec() })
				lo, hi := ms[0], ms[len(ms)-1]
				if b == "compact" {
					row = append(row, fmt.Sprintf("%.2f..%.2f s", lo.elapsed.Seconds(), hi.elapsed.Seconds()))
				} else {
					row = append(row, thousands(lo.opsPerSec())+".."+thousands(hi.opsPerSec()))
				}
			}
			spread = append(spread, row)
		}
		writeMarkdownTable(out, spread)
	}
	fmt.Fprintf(out, "\nratios: %s ops/s / peer ops/s, so above 1 means %[1]s is faster (compact: peer seconds / %[1]s seconds; readwhilewriting: the readers' Gets/s). Medians of %d round(s).\n", names[0], cfg.rounds)
	for _, n := range notes {
		fmt.Fprintln(out, n)
	}
	printCPU(out, cfg, names, res)
}

// printCPU prints the CPU time per operation of the median rounds, and
// each peer's over the first engine's.
func printCPU(out io.Writer, cfg *config, names []string, res map[string]map[string][]measurement) {
	if processCPU() == 0 {
		return
	}
	fmt.Fprintf(out, "\nCPU per operation (median round): µs of CPU, user and system, of the whole process per operation, every thread counted (background flushes and compactions, the C++ engines' threads, readwhilewriting's writer: per Get); compact: CPU seconds. peer/%s above 1 means %[1]s used less:\n\n", names[0])
	head := []string{"benchmark"}
	for _, n := range names {
		head = append(head, n)
	}
	for _, n := range names[1:] {
		head = append(head, n+"/"+names[0])
	}
	rows := [][]string{head}
	for _, b := range benchNames {
		if !ran(cfg, b) {
			continue
		}
		row := []string{b}
		for _, n := range names {
			m := median(res[n][b])
			if b == "compact" {
				row = append(row, fmt.Sprintf("%.2f s", m.cpu.Seconds()))
			} else {
				row = append(row, fmt.Sprintf("%.2f", us(m.cpuPerOp())))
			}
		}
		base := median(res[names[0]][b]).cpuPerOp()
		for _, n := range names[1:] {
			row = append(row, fmt.Sprintf("%.2fx", float64(median(res[n][b]).cpuPerOp())/float64(max(base, 1))))
		}
		rows = append(rows, row)
	}
	writeMarkdownTable(out, rows)
}

func writeMarkdownTable(out io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			if i == 0 {
				fmt.Fprintf(&b, " %s%s |", c, pad)
			} else {
				fmt.Fprintf(&b, " %s%s |", pad, c)
			}
		}
		fmt.Fprintln(out, b.String())
	}
	line(rows[0])
	sep := make([]string, len(widths))
	for i, w := range widths {
		if i == 0 {
			sep[i] = strings.Repeat("-", w)
		} else {
			sep[i] = strings.Repeat("-", w-1) + ":"
		}
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
}

func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// begin is called before each benchmark b: it notes the process's CPU
// time (see cpuSince), and starts --cpuprofile's profile if b is one
// --benchmarks lists (any, when it lists none) and the profile has not
// started yet.
func (cfg *config) begin(b string) {
	cfg.cpuStart = processCPU()
	if cfg.cpuProfile == "" || cfg.profiling || cfg.benchList != nil && !slices.Contains(cfg.benchList, b) {
		return
	}
	f, err := os.Create(cfg.cpuProfile)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "peers: --cpuprofile: %v (no profile)\n", err)
		cfg.cpuProfile = ""
		return
	}
	cfg.profiling = true
}

// runEngine runs the whole sequence on one engine in dir.
func runEngine(cfg *config, name, dir string, errOut io.Writer) (engineRun, error) {
	open := engines[name]
	r := engineRun{ms: map[string]measurement{}}
	step := func(b string, m measurement) {
		m.cpu = processCPU() - cfg.cpuStart
		if ran(cfg, b) {
			r.ms[b] = m
		}
		fmt.Fprintf(errOut, "%-10s %-16s %10.0f ops/s  (%.1f s, CPU %.1f s)\n", name, b, m.opsPerSec(), m.elapsed.Seconds(), m.cpu.Seconds())
	}

	// fillseq on a store of its own.
	if ran(cfg, "fillseq") {
		seqDir := dir + "-seq"
		e, err := open(seqDir, cfg.settings)
		if err != nil {
			return r, err
		}
		if v, ok := e.(versioned); ok {
			r.version = v.Version()
		}
		cfg.begin("fillseq")
		m, err := fill(e, cfg, newRand(cfg, 1), false)
		if cerr := e.Close(); err == nil {
			err = cerr
		}
		os.RemoveAll(seqDir)
		if err != nil {
			return r, fmt.Errorf("fillseq: %w", err)
		}
		step("fillseq", m)
	}
	if !needsStore(cfg) {
		return r, nil
	}

	e, err := open(dir, cfg.settings)
	if err != nil {
		return r, err
	}
	if v, ok := e.(versioned); ok {
		r.version = v.Version()
	}
	for _, b := range []string{"fillrandom", "overwrite"} {
		if b == "overwrite" && !ran(cfg, b) {
			continue
		}
		cfg.begin(b)
		m, err := fill(e, cfg, newRand(cfg, map[string]uint64{"fillrandom": 2, "overwrite": 3}[b]), true)
		if err != nil {
			e.Close()
			return r, fmt.Errorf("%s: %w", b, err)
		}
		step(b, m)
	}
	if cfg.doCompact {
		cfg.begin("compact")
		t0 := time.Now()
		if err := e.Compact(); err != nil {
			e.Close()
			return r, fmt.Errorf("compact: %w", err)
		}
		step("compact", measurement{ops: 1, elapsed: time.Since(t0)})
	}
	if err := e.Close(); err != nil {
		return r, err
	}
	// The files are measured after one more open and close: goleveldb
	// removes the tables a compaction made obsolete, and Pebble its old
	// logs, only when the store is opened again.
	e, err = open(dir, cfg.settings)
	if err != nil {
		return r, fmt.Errorf("reopen: %w", err)
	}
	if err := e.Close(); err != nil {
		return r, err
	}
	if r.disk, err = measureDisk(dir); err != nil {
		return r, err
	}
	r.measured = true
	if ran(cfg, "coldstart") {
		cfg.begin("coldstart")
	}
	t0 := time.Now()
	e, err = open(dir, cfg.settings)
	if err != nil {
		return r, fmt.Errorf("reopen: %w", err)
	}
	if ran(cfg, "coldstart") {
		m, err := coldStart(e, cfg, time.Since(t0))
		if err != nil {
			e.Close()
			return r, fmt.Errorf("coldstart: %w", err)
		}
		step("coldstart", m)
		fmt.Fprintf(errOut, "%-10s %-16s open %.1f ms, then %d random reads %.1f ms\n", name, "", ms(m.open), m.ops, ms(m.elapsed-m.open))
	}
	r.levels = e.Levels()
	if err := runReads(e, cfg, step); err != nil {
		e.Close()
		return r, err
	}
	if ran(cfg, "readwhilewriting") {
		cfg.begin("readwhilewriting")
		m, err := readWhileWriting(e, cfg)
		if err != nil {
			e.Close()
			return r, fmt.Errorf("readwhilewriting: %w", err)
		}
		step("readwhilewriting", m)
		fmt.Fprintf(errOut, "%-10s %-16s writer achieved %.0f writes/s; Get p50 %.1f µs, p99 %.1f µs, p99.9 %.1f µs, max %.0f µs\n", name, "", m.writesPerSec(),
			us(m.lat.percentile(0.5)), us(m.lat.percentile(0.99)), us(m.lat.percentile(0.999)), us(m.lat.max()))
	}
	r.levels += "; reads: " + e.ReadStats()
	return r, e.Close()
}

// runReads runs the read-only benchmarks chosen on the open store e.
func runReads(e Engine, cfg *config, step func(string, measurement)) error {
	// Each benchmark draws its keys from a stream of its own, so that it
	// sees the same keys whichever others run.
	reads := []struct {
		name   string
		stream uint64
		run    func(Engine, *config, *rand.Rand) (measurement, error)
	}{
		{"readrandom", 10, func(e Engine, c *config, r *rand.Rand) (measurement, error) { return get(e, c, r, c.num, false) }},
		{"readmissing", 11, func(e Engine, c *config, r *rand.Rand) (measurement, error) { return get(e, c, r, c.num, true) }},
		{"readhot", 12, func(e Engine, c *config, r *rand.Rand) (measurement, error) {
			return get(e, c, r, max((c.num+99)/100, 1), false)
		}},
		{"readzipf", 18, readZipf},
		{"seekrandom", 13, seek},
		{"readseq", 14, scan},
		{"seekprefix", 15, seekPrefix},
		{"scanempty", 16, scanEmpty},
		{"scanshort", 17, scanShort},
	}
	for _, r := range reads {
		if !ran(cfg, r.name) {
			continue
		}
		cfg.begin(r.name)
		m, err := counted(e, func() (measurement, error) { return r.run(e, cfg, newRand(cfg, r.stream)) })
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		step(r.name, m)
	}
	return nil
}

// runExisting runs the read-only benchmarks on a private copy of
// --existing_db in dir. An engine that cannot open the store gets
// openError set, and no error: the run goes on with the others.
func runExisting(cfg *config, name, dir string, errOut io.Writer) (engineRun, error) {
	r := engineRun{ms: map[string]measurement{}}
	if err := copyStore(cfg.existingDB, dir); err != nil {
		return r, fmt.Errorf("copying %s: %w", cfg.existingDB, err)
	}
	e, err := engines[name](dir, cfg.settings)
	if err != nil {
		r.openError = err
		return r, nil
	}
	if v, ok := e.(versioned); ok {
		r.version = v.Version()
	}
	r.levels = e.Levels()
	step := func(b string, m measurement) {
		m.cpu = processCPU() - cfg.cpuStart
		r.ms[b] = m
		fmt.Fprintf(errOut, "%-10s %-16s %10.0f ops/s  (%.1f s, CPU %.1f s)\n", name, b, m.opsPerSec(), m.elapsed.Seconds(), m.cpu.Seconds())
	}
	if err := runReads(e, cfg, step); err != nil {
		e.Close()
		return r, err
	}
	r.levels += "; reads: " + e.ReadStats()
	return r, e.Close()
}

// isTable reports whether a store's file is a table: .sst (bloomkv,
// Pebble, RocksDB, old LevelDB) or .ldb (LevelDB, goleveldb).
func isTable(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".ldb")
}

// copyStore makes dst a copy of the store in src that no engine's writes
// to dst can change: the tables, which no engine ever modifies, are hard
// links (copies where linking fails), every other file (CURRENT,
// MANIFEST, logs, LOG, LOCK) a copy. Subdirectories are left out.
func copyStore(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, ent := range ents {
		if !ent.Type().IsRegular() {
			continue
		}
		from, to := filepath.Join(src, ent.Name()), filepath.Join(dst, ent.Name())
		if isTable(ent.Name()) && os.Link(from, to) == nil {
			continue
		}
		if err := copyFile(from, to); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// measureDisk sums the sizes of the files of the store in dir (and its
// subdirectories): all of them, the tables, and the write-ahead logs
// (*.log; LOG, the event log, is not one).
func measureDisk(dir string) (diskUsage, error) {
	var d diskUsage
	err := filepath.WalkDir(dir, func(path string, ent fs.DirEntry, err error) error {
		if err != nil || !ent.Type().IsRegular() {
			return err
		}
		info, err := ent.Info()
		if err != nil {
			return err
		}
		d.Files++
		d.Bytes += info.Size()
		switch name := ent.Name(); {
		case isTable(name):
			d.Tables++
			d.TableBytes += info.Size()
		case strings.HasSuffix(name, ".log"):
			d.WALBytes += info.Size()
		default:
			d.OtherBytes += info.Size()
		}
		return nil
	})
	return d, err
}
