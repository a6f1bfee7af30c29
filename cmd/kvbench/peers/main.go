// Command peers runs the same db_bench workloads against bloomkv,
// goleveldb (github.com/syndtr/goleveldb) and Pebble
// (github.com/cockroachdb/pebble/v2) and prints each engine's ops/s and
// the ratio bloomkv/peer for every benchmark.
//
// It lives in its own Go module so that the peers never become
// dependencies of bloomkv: a program importing bloomkv does not see them.
//
// Every engine gets the same settings: 16-byte keys (%016d), --value_size
// values that compress to --compression_ratio, a Bloom filter of
// --bloom_bits bits per key (bloomkv filter.NewBloomPolicy, goleveldb
// filter.NewBloomFilter, pebble bloom.FilterPolicy on every level), a
// --cache_size block cache, a --write_buffer_size memtable, --block_size
// data blocks, snappy compression (each engine's default), writes without
// sync. The sequence, per engine and round:
//
//	fillseq      fresh store, --num writes in key order; the store is then removed
//	fillrandom   fresh store, --num writes of random keys of [0, --num)
//	overwrite    --num more random writes on the same store
//	compact      the whole key range (DB.CompactRange / CompactRange / Compact), when --compact
//	(close and reopen the store)
//	readrandom   --reads gets of random keys
//	readmissing  --reads gets of absent keys (a real key with its last byte dropped)
//	readhot      --reads gets of random keys of the first 1% of the range
//	seekrandom   --reads seeks of a new iterator to random keys
//	readseq      iterate --reads entries from the first
//	seekprefix   --reads scans of whole prefixes, --absent_prefix_fraction of them absent (with --prefix_size)
//	scanempty    --reads bounded scans of 16-key ranges between keys that hold none
//	scanshort    --reads bounded scans of ranges [key(k), key(k+16))
//
// The last three are kvbench's benchmarks of the same names (issue 17), at
// its defaults (--absent_prefix_fraction=0.5, --scan_width=16; the first
// can be set here too). With
// --prefix_size=N the keys take kvbench's --prefix_size layout (N digits
// of k/16, then 16-N digits of k%16: 16 keys per prefix, the key order
// unchanged) and each engine gets what it has for prefixes: bloomkv
// Options.Prefix = filter.FixedPrefix(N) (its filters hold keys and
// prefixes), Pebble a Comparer whose Split is the first N bytes (its
// Bloom filters then hold prefixes only, so Get is filtered by prefix
// too, and readmissing's keys, which share a real key's prefix, pass its
// filter), goleveldb nothing (it has no prefix filter: util.BytesPrefix
// ranges only). seekprefix uses bounded iterators in bloomkv
// (db.PrefixBounds), SeekPrefixGE in Pebble (the only way it consults its
// filter on a scan) and util.BytesPrefix in goleveldb. scanempty and
// scanshort are bounded iterators everywhere; neither peer has a range
// filter, so only bloomkv with --range_filter_bits can skip a table for
// an empty range that lies within a present prefix. After the table, the
// program prints what each engine read from its table files per scan.
//
// Every engine draws the same keys (same seeds), so the found counts must
// agree; the program says so when they do not.
//
// Usage (from cmd/kvbench/peers):
//
//	go run . --num=1000000 --reads=300000
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
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
}

func defaultConfig() *config {
	return &config{
		num: 1_000_000, reads: 300_000, valueSize: 100, compressionRatio: 0.5,
		settings: settings{bloomBits: 10, cacheSize: 8 << 20, writeBufferSize: 4 << 20, blockSize: 4 << 10},
		engines:  strings.Join(engineOrder, ","), rounds: 1, compact: "auto", seed: 301,
		absentPrefixFraction: 0.5,
	}
}

func (c *config) registerFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.num, "num", c.num, "number of keys")
	fs.IntVar(&c.reads, "reads", c.reads, "operations of each read benchmark")
	fs.IntVar(&c.valueSize, "value_size", c.valueSize, "value size in bytes")
	fs.Float64Var(&c.compressionRatio, "compression_ratio", c.compressionRatio, "values compress to this fraction of their size")
	fs.IntVar(&c.bloomBits, "bloom_bits", c.bloomBits, "Bloom filter bits per key for every engine (0: no filter)")
	fs.Int64Var(&c.cacheSize, "cache_size", c.cacheSize, "block cache bytes for every engine")
	fs.IntVar(&c.writeBufferSize, "write_buffer_size", c.writeBufferSize, "memtable bytes for every engine")
	fs.IntVar(&c.blockSize, "block_size", c.blockSize, "data block bytes for every engine")
	fs.StringVar(&c.engines, "engines", c.engines, "engines to run, in order: "+strings.Join(engineOrder, ", "))
	fs.IntVar(&c.rounds, "rounds", c.rounds, "run the whole sequence this many times per engine (engines take turns) and report the median")
	fs.StringVar(&c.compact, "compact", c.compact, "compact every engine after the writes: true, false, or auto (when bloomkv has DB.CompactRange)")
	fs.StringVar(&c.dir, "dir", "", "directory for the stores (default: a temporary directory, removed at exit)")
	fs.Uint64Var(&c.seed, "seed", c.seed, "random seed")
	fs.IntVar(&c.prefixSize, "prefix_size", c.prefixSize, "bytes of each key that are its prefix (0: none, and seekprefix is not run); keys then hold 16 keys per prefix, and every engine gets its prefix filter (see the package comment)")
	fs.Float64Var(&c.absentPrefixFraction, "absent_prefix_fraction", c.absentPrefixFraction, "share of seekprefix's scans whose prefix is absent from the store (in [0, 1])")
	fs.IntVar(&c.rangeFilterBits, "range_filter_bits", c.rangeFilterBits, "bloomkv only: a range filter of this many bits per key (Options.RangeFilter; 0: none); neither peer has one")
}

// benchmark names in report order.
var benchNames = []string{"fillseq", "fillrandom", "overwrite", "compact", "readrandom", "readmissing", "readhot", "seekrandom", "readseq", "seekprefix", "scanempty", "scanshort"}

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
}

func (m measurement) opsPerSec() float64 {
	if m.elapsed <= 0 {
		return 0
	}
	return float64(m.ops) / m.elapsed.Seconds()
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
	if err := run(cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "peers: %v\n", err)
		os.Exit(1)
	}
}

func run(cfg *config, out, errOut io.Writer) error {
	names := strings.Split(cfg.engines, ",")
	for _, n := range names {
		if engines[n] == nil {
			return fmt.Errorf("unknown engine %q (have %s)", n, strings.Join(engineOrder, ", "))
		}
	}
	if cfg.num <= 0 || cfg.reads <= 0 || cfg.rounds <= 0 {
		return fmt.Errorf("--num, --reads and --rounds must be positive")
	}
	if cfg.prefixSize < 0 || cfg.prefixSize >= keyLen || cfg.prefixSize > 0 && cfg.num/keysPerPrefix >= pow10(cfg.prefixSize) {
		return fmt.Errorf("--prefix_size must be in [0, %d] and number --num/%d prefixes", keyLen-1, keysPerPrefix)
	}
	if cfg.rangeFilterBits < 0 {
		return fmt.Errorf("--range_filter_bits must be >= 0")
	}
	if !(cfg.absentPrefixFraction >= 0 && cfg.absentPrefixFraction <= 1) {
		return fmt.Errorf("--absent_prefix_fraction must be in [0, 1]")
	}
	compact := cfg.compact == "true" || cfg.compact == "auto" && bloomKVHasCompactRange()
	if cfg.compact != "true" && cfg.compact != "false" && cfg.compact != "auto" {
		return fmt.Errorf("--compact must be true, false or auto")
	}
	root := cfg.dir
	if root == "" {
		tmp, err := os.MkdirTemp("", "peers-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		root = tmp
	}

	fmt.Fprintf(out, "peers: bloomkv vs %s (%s, %s/%s, %d CPUs, %s)\n", strings.Join(names[1:], ", "), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().Format("2006-01-02 15:04 MST"))
	if cfg.prefixSize > 0 {
		fmt.Fprintf(out, "keys with %d-byte prefixes of %d keys each; ", cfg.prefixSize, keysPerPrefix)
	}
	if cfg.rangeFilterBits > 0 {
		fmt.Fprintf(out, "bloomkv range filter %d bits/key; ", cfg.rangeFilterBits)
	}
	fmt.Fprintf(out, "keys 16 bytes, values %d bytes (compressible to %.2f), --num %d, --reads %d, bloom %d bits/key, cache %d, write buffer %d, block %d, compact after writes: %v, rounds %d\n\n",
		cfg.valueSize, cfg.compressionRatio, cfg.num, cfg.reads, cfg.bloomBits, cfg.cacheSize, cfg.writeBufferSize, cfg.blockSize, compact, cfg.rounds)

	res := map[string]map[string][]measurement{} // engine -> benchmark -> rounds
	levels := map[string]string{}
	for round := 0; round < cfg.rounds; round++ {
		for _, name := range names {
			dir := filepath.Join(root, fmt.Sprintf("%s-%d", name, round))
			ms, lv, err := runEngine(cfg, name, dir, compact, errOut)
			os.RemoveAll(dir)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if res[name] == nil {
				res[name] = map[string][]measurement{}
			}
			for b, m := range ms {
				res[name][b] = append(res[name][b], m)
			}
			levels[name] = lv
		}
	}
	printTable(out, cfg, names, res, compact)
	fmt.Fprintf(out, "\ntables per level after the writes%s and a reopen; what the reads did (last round):\n", map[bool]string{true: ", compaction", false: ""}[compact])
	for _, n := range names {
		fmt.Fprintf(out, "  %-10s %s\n", n, levels[n])
	}
	printScans(out, cfg, names, res)
	return nil
}

// printScans prints, per scan benchmark and engine, the entries per scan
// and what the engine read from its table files per scan (medians).
func printScans(out io.Writer, cfg *config, names []string, res map[string]map[string][]measurement) {
	fmt.Fprintf(out, "\nper scan (median round): entries returned; table file reads (bloomkv: data blocks read from files; pebble: block cache misses, any block kind; goleveldb: bytes read from files, all kinds):\n\n")
	rows := [][]string{append([]string{"benchmark"}, names...)}
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
	writeMarkdownTable(out, rows)
}

// ran reports whether benchmark b is part of the run.
func ran(cfg *config, b string) bool {
	return b != "seekprefix" || cfg.prefixSize > 0
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

func printTable(out io.Writer, cfg *config, names []string, res map[string]map[string][]measurement, compact bool) {
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
		if b == "compact" && !compact || !ran(cfg, b) {
			continue
		}
		row := []string{b}
		var base float64
		founds := map[int][]string{}
		for i, n := range names {
			m := median(res[n][b])
			v := m.opsPerSec()
			if i == 0 {
				base = v
			}
			if b == "compact" {
				row = append(row, fmt.Sprintf("%.2f s", m.elapsed.Seconds()))
			} else {
				row = append(row, thousands(v))
			}
			founds[m.found] = append(founds[m.found], n)
		}
		for _, n := range names[1:] {
			m := median(res[n][b])
			if b == "compact" {
				// Speed ratio as for the others: peer time / bloomkv time.
				row = append(row, fmt.Sprintf("%.2fx", m.elapsed.Seconds()/median(res[names[0]][b]).elapsed.Seconds()))
				continue
			}
			row = append(row, fmt.Sprintf("%.2fx", base/m.opsPerSec()))
		}
		rows = append(rows, row)
		switch {
		case len(founds) > 1:
			notes = append(notes, fmt.Sprintf("WARNING: %s found counts differ (found: engines): %v", b, founds))
		case b == "readrandom" || b == "readmissing" || b == "readhot" || b == "seekrandom":
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
			if b == "compact" && !compact || !ran(cfg, b) {
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
	fmt.Fprintf(out, "\nratios: bloomkv ops/s / peer ops/s, so above 1 means bloomkv is faster (compact: peer seconds / bloomkv seconds). Medians of %d round(s).\n", cfg.rounds)
	for _, n := range notes {
		fmt.Fprintln(out, n)
	}
}

func writeMarkdownTable(out io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(&b, " %-*s |", widths[i], c)
			} else {
				fmt.Fprintf(&b, " %*s |", widths[i], c)
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

// runEngine runs the whole sequence on one engine in dir.
func runEngine(cfg *config, name, dir string, compact bool, errOut io.Writer) (map[string]measurement, string, error) {
	open := engines[name]
	ms := map[string]measurement{}
	step := func(b string, m measurement) {
		ms[b] = m
		fmt.Fprintf(errOut, "%-10s %-12s %10.0f ops/s  (%.1f s)\n", name, b, m.opsPerSec(), m.elapsed.Seconds())
	}

	// fillseq on a store of its own.
	seqDir := dir + "-seq"
	e, err := open(seqDir, cfg.settings)
	if err != nil {
		return nil, "", err
	}
	m, err := fill(e, cfg, newRand(cfg, 1), false)
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	os.RemoveAll(seqDir)
	if err != nil {
		return nil, "", fmt.Errorf("fillseq: %w", err)
	}
	step("fillseq", m)

	e, err = open(dir, cfg.settings)
	if err != nil {
		return nil, "", err
	}
	for _, b := range []string{"fillrandom", "overwrite"} {
		m, err := fill(e, cfg, newRand(cfg, map[string]uint64{"fillrandom": 2, "overwrite": 3}[b]), true)
		if err != nil {
			e.Close()
			return nil, "", fmt.Errorf("%s: %w", b, err)
		}
		step(b, m)
	}
	if compact {
		t0 := time.Now()
		if err := e.Compact(); err != nil {
			e.Close()
			return nil, "", fmt.Errorf("compact: %w", err)
		}
		step("compact", measurement{ops: 1, elapsed: time.Since(t0)})
	}
	if err := e.Close(); err != nil {
		return nil, "", err
	}
	e, err = open(dir, cfg.settings)
	if err != nil {
		return nil, "", fmt.Errorf("reopen: %w", err)
	}
	levels := e.Levels()
	reads := []struct {
		name string
		run  func(Engine, *config, *rand.Rand) (measurement, error)
	}{
		{"readrandom", func(e Engine, c *config, r *rand.Rand) (measurement, error) { return get(e, c, r, c.num, false) }},
		{"readmissing", func(e Engine, c *config, r *rand.Rand) (measurement, error) { return get(e, c, r, c.num, true) }},
		{"readhot", func(e Engine, c *config, r *rand.Rand) (measurement, error) {
			return get(e, c, r, max((c.num+99)/100, 1), false)
		}},
		{"seekrandom", seek},
		{"readseq", scan},
		{"seekprefix", seekPrefix},
		{"scanempty", scanEmpty},
		{"scanshort", scanShort},
	}
	for i, r := range reads {
		if !ran(cfg, r.name) {
			continue
		}
		m, err := counted(e, func() (measurement, error) { return r.run(e, cfg, newRand(cfg, uint64(10+i))) })
		if err != nil {
			e.Close()
			return nil, "", fmt.Errorf("%s: %w", r.name, err)
		}
		step(r.name, m)
	}
	levels += "; reads: " + e.ReadStats()
	return ms, levels, e.Close()
}
