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
// compactions and the tables left. --histogram adds latency percentiles;
// --json FILE writes every figure as JSON; progress (rate and ETA) goes to
// stderr. The flags keep db_bench's names and meanings (run kvbench -h).
// --threads N runs the read benchmarks in N goroutines, each with its own
// random keys; as in db_bench, micros/op is the time per operation of one
// goroutine, MB/s the throughput of all of them.
//
// The benchmarks: fillseq, fillrandom, fillsync (--num/100 synced writes),
// fillbatch (1000 writes per batch), fill100K (--num/1000 values of 100,000
// bytes), overwrite, deleteseq, deleterandom, readseq, readreverse,
// readrandom, readmissing (a real key with its last byte dropped: absent,
// but sorting among real keys, so only a filter can rule it out), readhot
// (the first 1% of the key range), seekrandom (a new iterator per seek),
// readwhilewriting (--threads readers and one writer), compact (the whole
// key range), flush, stats (the store's metrics).
//
// With no flags kvbench runs a default suite on a temporary store (about
// half a minute on two cores), then repeats fillrandom..readmissing with no
// filter and ends with the two readmissing results side by side.
//
// # Filter laboratory
//
//	kvbench filters [--keys N] [--probes N] [--keys_pattern P] [--probes_pattern P] [--csv FILE] [--svg FILE]
//
// builds, for every filter policy of package filter and every budget of 1
// to 20 bits per key, a filter over --keys keys, then probes it with
// --probes absent keys, and prints the measured false-positive rate next to
// the theoretical one, the actual bits per key, build time per key and time
// per absent-key probe. It draws the rates (one panel per filter, theory
// and measurements) and the probe times against bits per key into
// kvbench-filters.svg in the working directory (--svg to name another
// file, --svg= for none); --csv also writes the table. --keys_pattern
// (seq, spaced, random) and --probes_pattern (after, between, random)
// choose the keys: --keys_pattern=spaced --probes_pattern=between probes
// each key's neighbours, db_bench's keys at their hardest for a weak hash.
//
// Usage:
//
//	go run ./cmd/kvbench
//	go run ./cmd/kvbench --benchmarks=fillrandom,readrandom --num=1000000 --reads=300000 --histogram
//	go run ./cmd/kvbench filters --csv filters.csv
package main

import (
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
	for _, n := range benchmarkNames() {
		fmt.Fprintf(w, "  %-16s %s\n", n, benchmarks[n].about)
	}
	fmt.Fprintf(w, "\nfilter policies (--filter_policy):\n")
	for _, n := range policyNames() {
		fmt.Fprintf(w, "  %-16s %s\n", n, policies[n].about)
	}
	fmt.Fprintf(w, "\nflags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
}
