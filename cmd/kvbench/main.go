// Command kvbench measures bloomkv the way LevelDB's db_bench measures
// LevelDB, and studies its filters.
//
// # Benchmarks
//
// kvbench runs the benchmarks named by --benchmarks in order against one
// store and prints a line per benchmark in db_bench's format
//
//	readrandom   :       5.982 micros/op;   18.2 MB/s (126391 of 200000 found)
//
// followed by what the store did meanwhile: for reads, the filter checks,
// filter negatives, measured false-positive rate, data blocks read per
// operation and block cache hit rate; for writes, WAL bytes, flushes,
// compactions (bytes read and written), write amplification and the tables
// left. --histogram adds db_bench's latency histogram: the summary (count,
// average, standard deviation, min, median, max, P50 to P99.99) and the
// table of buckets. --json FILE writes every figure as JSON; progress
// (rate and ETA) goes to stderr. --report FILE.html writes the run as one
// self-contained HTML page that needs no network to view: the header, a
// chart of each benchmark's throughput, and per benchmark its figures,
// latency histogram (log-scaled, p50, p99 and p99.9 marked), read- or
// write-path counters and the levels after it; then the stats and the
// no-filter comparison. Like --histogram it reads the clock once per
// operation. A --report path that cannot be written, that is --db or
// inside it, or that is a link to a file of --db's store fails before the
// run; the page is written to a temporary file beside the path at the end
// of the run and renamed over it, so a link at the path is replaced, never
// written through, and an interrupted run leaves nothing. The flags keep
// db_bench's names and meanings, with its underscores (--use_existing_db);
// the hyphen spellings (--use-existing-db) work too, and -h lists the flags
// and benchmarks.
// --threads N runs the read benchmarks in N goroutines; as in db_bench,
// micros/op is the time per operation of one goroutine, MB/s the
// throughput of all of them.
//
// Each benchmark draws its random keys from --seed, its name and its
// thread, not from its place in --benchmarks: it draws the same keys
// wherever it runs. readrandom after fillrandom finds about 1-1/e (63%) of
// its keys, in one process or in two (--use_existing_db).
//
// Before each read benchmark kvbench waits, as db_bench does, until the
// store's flushes and compactions are done (--wait_for_compactions=false
// to not); block reads of compactions that run during a benchmark are
// reported apart from the benchmark's own.
//
// The store lives in a temporary directory removed at exit, or in --db.
// A store already in --db is removed first (kvbench says so; a directory
// that holds anything else is refused) unless --use_existing_db is set:
// then the store must exist, the header describes it as found on disk
// (tables, entries, key range, filter policies and bits per key), and the
// fill benchmarks, which need a fresh store, are skipped.
//
// The benchmarks: fillseq, fillrandom, fillsync (--num/100 synced writes),
// fillbatch (1000 writes per batch), fill100K (--num/1000 values of 100,000
// bytes), overwrite, deleteseq, deleterandom, readseq, readreverse,
// readrandom, readmissing (a real key with its last byte dropped: absent,
// but sorting among real keys, so only a filter can rule it out), readhot
// (the first 1% of the key range), multiget and multimissing (the same
// through DB.MultiGet, --batch_size keys a call; with --multiget_vs_get
// every other batch goes to a loop of DB.Get, and a line after the result
// gives both times a key and their ratio, measured in alternation),
// seekrandom (a new iterator per seek),
// readwhilewriting (--threads readers and one writer), compact (the whole
// key range), waitforcompaction, flush, stats (the store's metrics).
//
// # Prefix and range filters
//
// --prefix_size=N (db_bench's flag) opens the store with Options.Prefix =
// filter.FixedPrefix(N), so every table's filter also holds its keys'
// N-byte prefixes, and lays keys out as N decimal digits of
// k/--keys_per_prefix followed by 16-N digits of the rest: with
// --prefix_size=8 and the default --keys_per_prefix=16, key 1234*16+7 is
// "00001234" "00000007", 16 keys share each prefix and keys keep k's order.
// --range_filter_bits=N gives every table a range filter of N bits per key
// (Options.RangeFilter). The scan benchmarks open a new bounded iterator
// per operation:
//
//   - seekprefix (needs --prefix_size) scans whole prefixes
//     (db.PrefixBounds); --absent_prefix_fraction (0.5) of them are absent
//     but sort among the real ones (the last byte made ':'), inside the
//     tables' key ranges, so only the prefix filter can rule them out;
//   - scanempty scans ranges of --scan_width (16) keys read as integers
//     that lie between two real keys and hold none (a key's last byte made
//     ':' up to ':' + width): within a present prefix, so only a range
//     filter can rule them out;
//   - scanshort scans [key(k), key(k + --scan_width)): a few keys each;
//   - seekrandom, with --prefix_size, bounds each seek to its key's prefix,
//     and reads --seek_nexts (0) entries after it.
//
// Their read-path line shows the prefix filter's and the range filter's
// checks and tables skipped (db.Metrics.PrefixFilter and RangeFilter), the
// keys and the data blocks read per scan; --json has the same figures
// under read_path.scans. --bloom_bits=0 --range_filter_bits=0 with the
// same --prefix_size is the baseline without filters on the same keys.
//
// With no flags kvbench runs, on 200,000 keys, fillseq, fillrandom,
// readrandom, readmissing, readhot, seekrandom, readseq, readreverse,
// overwrite, compact, readrandom, readmissing and stats; then it builds two
// stores as fillrandom does, one with the filter and one with none, runs
// readmissing on each in 5 alternating rounds and prints the medians side
// by side with the speedup, its range over the rounds (an interval that
// holds the median speedup with 94% confidence) and a verdict: "not
// significant" when the range holds 1, when no table was read or when a
// round is too short to time.
//
// kvbench exits with status 0 when every benchmark ran, 1 when one or the
// store failed, and 2 for a bad flag or flag value.
//
// # Filter laboratory
//
//	kvbench filters [--policies LIST] [--min_bits N] [--max_bits N] [--keys N] [--probes N]
//	                [--keys_pattern P] [--probes_pattern P] [--csv FILE] [--svg FILE]
//
// builds, for every filter of package filter named by --policies (all by
// default) and every budget of --min_bits to --max_bits bits per key (1 to
// 20), a filter over --keys keys, then probes it with --probes absent keys.
// It prints the measured false-positive rate next to the theoretical one
// with the band chance allows (±2σ), the actual bits per key, build time
// per key and time per absent-key probe. Some filters take only some of
// those budgets, as -h lists: binary fuse 8 and 16, for one, and the cuckoo
// filter each multiple of 4 (its fingerprint size). It draws the rates (one
// panel per filter: theory a thin line, measurements dots, and
// measured/theory under it) and the probe times against bits per key into
// kvbench-filters.svg in the working directory (--svg to name another file,
// --svg= for none) and prints its path; --csv also writes the table.
// --keys_pattern (seq, spaced, random) and --probes_pattern (after,
// between, random, missing) choose the keys: --keys_pattern=spaced
// --probes_pattern=between probes each key's neighbours, db_bench's keys at
// their hardest for a weak hash, and missing probes db_bench's readmissing
// keys.
//
// Usage:
//
//	go run ./cmd/kvbench
//	go run ./cmd/kvbench --benchmarks=fillrandom,readrandom --num=1000000 --reads=300000 --histogram
//	go run ./cmd/kvbench --num=1000000 --prefix_size=8 --benchmarks=fillrandom,compact,seekprefix,scanempty,scanshort,seekrandom
//	go run ./cmd/kvbench filters --csv filters.csv
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "filters" {
		if err := runFiltersCmd(os.Args[2:], os.Stdout, os.Stderr); err != nil {
			if err != flag.ErrHelp {
				fmt.Fprintf(os.Stderr, "kvbench filters: %v\n", err)
			}
			os.Exit(exitCode(err))
		}
		return
	}
	fs := flag.NewFlagSet("kvbench", flag.ContinueOnError)
	cfg := defaultConfig()
	cfg.registerFlags(fs)
	fs.Usage = func() { usage(fs, os.Stderr) }
	if err := fs.Parse(canonicalArgs(fs, os.Args[1:])); err != nil {
		os.Exit(exitCode(err))
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "kvbench: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		os.Exit(2)
	}
	if err := run(cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "kvbench: %v\n", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func exitCode(err error) int {
	if err == flag.ErrHelp {
		return 0
	}
	return 2
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "usage: kvbench [flags]          db_bench-style benchmarks\n")
	fmt.Fprintf(w, "       kvbench filters [flags]  the filter laboratory (kvbench filters -h)\n\nbenchmarks:\n")
	width := 16
	for _, n := range benchmarkNames() {
		width = max(width, len(n))
	}
	for _, n := range benchmarkNames() {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, benchmarks[n].about)
	}
	fmt.Fprintf(w, "\nfilter policies (--filter_policy):\n")
	for _, n := range policyNames() {
		fmt.Fprintf(w, "  %-16s %s\n", n, policies[n].about)
	}
	fmt.Fprintf(w, "\nflags (db_bench's names; the hyphen spellings work too: --use-existing-db is --use_existing_db):\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, "\nexit status: 0 done, 1 a benchmark or the store failed, 2 a bad flag\n")
}
