package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
)

// config holds the flags, named as db_bench names them.
type config struct {
	benchmarks       string
	num              int
	reads            int
	valueSize        int
	compressionRatio float64
	bloomBits        int
	filterPolicy     string
	cacheSize        int64
	writeBufferSize  int
	blockSize        int
	dbPath           string
	useExisting      bool
	threads          int
	histogram        bool
	sync             bool
	jsonPath         string
	reportPath       string
	seed             uint64
	compare          bool
	cpuProfile       string
	memProfile       string
	tracePath        string
	mmapRead         bool
	mmapWAL          bool
	l0Trigger        int
	l0Slowdown       int
	l0Stop           int
	lbaseBytes       int64
	waitCompactions  bool
	batchSize        int
	multiGetPar      int
	multiGetAlloc    bool
	multiGetVsGet    bool
	// The key layout, prefix and range filters and scans (issue 17).
	prefixSize           int
	keysPerPrefix        int
	seekNexts            int
	rangeFilterBits      int
	absentPrefixFraction float64
	scanWidth            int
}

// defaultBenchmarks is the suite a run with no flags does: about half a
// minute on two cores at the default --num. readmissing comes early so
// the no-filter comparison only has to repeat fillrandom..readmissing.
const defaultBenchmarks = "fillseq,fillrandom,readrandom,readmissing,readhot,seekrandom,readseq,readreverse,overwrite,compact,readrandom,readmissing,stats"

func defaultConfig() *config {
	return &config{
		benchmarks:       defaultBenchmarks,
		num:              200000,
		reads:            -1,
		valueSize:        100,
		compressionRatio: 0.5,
		bloomBits:        10,
		filterPolicy:     "bloom",
		cacheSize:        8 << 20,
		writeBufferSize:  4 << 20,
		blockSize:        4 << 10,
		threads:          1,
		seed:             301,
		compare:          true,
		mmapRead:         true,
		mmapWAL:          true,
		waitCompactions:  true,
		batchSize:        64,

		keysPerPrefix:        16,
		absentPrefixFraction: 0.5,
		scanWidth:            16,
	}
}

func (c *config) registerFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.benchmarks, "benchmarks", c.benchmarks, "comma-separated benchmarks to run in order: "+strings.Join(benchmarkNames(), ", "))
	fs.IntVar(&c.num, "num", c.num, "number of keys (db_bench's default is 1000000; kvbench's is smaller so the default suite fits in a minute)")
	fs.IntVar(&c.reads, "reads", c.reads, "number of reads per reading thread (negative: --num)")
	fs.IntVar(&c.valueSize, "value_size", c.valueSize, "value size in bytes")
	fs.Float64Var(&c.compressionRatio, "compression_ratio", c.compressionRatio, "values compress to this fraction of their size")
	fs.IntVar(&c.bloomBits, "bloom_bits", c.bloomBits, "filter bits per key (0 or negative: no filter)")
	fs.StringVar(&c.filterPolicy, "filter_policy", c.filterPolicy, "filter policy: "+strings.Join(policyNames(), ", "))
	fs.Int64Var(&c.cacheSize, "cache_size", c.cacheSize, "block cache bytes (0 or negative: no block cache)")
	fs.IntVar(&c.writeBufferSize, "write_buffer_size", c.writeBufferSize, "memtable bytes before a flush")
	fs.IntVar(&c.blockSize, "block_size", c.blockSize, "data block bytes")
	fs.StringVar(&c.dbPath, "db", "", "store directory (default: a temporary directory, removed at exit). A store already there is REMOVED first, with a notice on stderr, unless --use_existing_db is set; a directory holding anything but a store's files, or a store another process has open, is refused")
	fs.BoolVar(&c.useExisting, "use_existing_db", false, "run on the store at --db as it is: it must exist (a missing one is an error, not a new empty store), the header describes it, and the benchmarks that need a fresh store (the fills) are skipped")
	fs.BoolVar(&c.waitCompactions, "wait_for_compactions", c.waitCompactions, "before each read benchmark, wait until the store's flushes and compactions are done, as db_bench does (false: read while they run; compactions' block reads are then reported apart from the benchmark's)")
	fs.IntVar(&c.batchSize, "batch_size", c.batchSize, "keys per DB.MultiGet call of the multiget and multimissing benchmarks")
	fs.BoolVar(&c.multiGetAlloc, "multiget_alloc", false, "multiget and multimissing call DB.MultiGet, which allocates its results, instead of DB.MultiGetInto with results reused from call to call")
	fs.BoolVar(&c.multiGetVsGet, "multiget_vs_get", false, "multiget and multimissing give every other batch of --batch_size keys to a loop of DB.Get instead (the order swapped every pair), and print the time a key of each and their ratio: a comparison in one run, which the machine's drift moves alike; their micros/op and found count the MultiGet batches only, their read-path line both")
	fs.IntVar(&c.multiGetPar, "multiget_parallelism", 0, "Options.MultiGetParallelism: the most goroutines a MultiGet reads data blocks with (0: the default, GOMAXPROCS up to 8; 1: the calling goroutine only)")
	fs.IntVar(&c.threads, "threads", c.threads, "goroutines for the read benchmarks (readwhilewriting adds one writer)")
	fs.BoolVar(&c.histogram, "histogram", false, "print db_bench's latency histogram per benchmark: count, average, stddev, min, median, max, percentiles P50 to P99.99, and the table of buckets (microseconds)")
	fs.BoolVar(&c.sync, "sync", false, "sync every write")
	fs.BoolVar(&c.mmapRead, "mmap_read", c.mmapRead, "read tables through memory maps (false: one pread per block read)")
	fs.IntVar(&c.l0Trigger, "level0_file_num_compaction_trigger", 0, "level-0 tables that start a compaction into level 1 (0: the engine's default)")
	fs.IntVar(&c.l0Slowdown, "level0_slowdown_writes_trigger", 0, "level-0 tables at which each write is delayed 1 ms once (0: the engine's default)")
	fs.IntVar(&c.l0Stop, "level0_stop_writes_trigger", 0, "level-0 tables at which writes wait for compaction (0: the engine's default)")
	fs.Int64Var(&c.lbaseBytes, "max_bytes_for_level_base", 0, "level 1's target size in bytes (0: the engine's default)")
	fs.BoolVar(&c.mmapWAL, "mmap_wal", c.mmapWAL, "append the write-ahead log through a memory map (false: one write(2) per commit)")
	fs.StringVar(&c.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&c.reportPath, "report", "", "also write the run as one self-contained HTML page to this file (no network needed to view it): the header, each benchmark's figures, latency histogram (recorded as --histogram records it, one clock read per operation, but not printed unless --histogram is set), percentiles and read- or write-path counters, the filter comparison and the stats. A path that cannot be written, that is --db or inside it, or that is a link to a file of --db's store fails before the run. The page is written to a file beside the path, made at the end, and renamed over it: a link at the path is replaced, never written through")
	fs.Uint64Var(&c.seed, "seed", c.seed, "random seed: each benchmark's keys come from --seed, its name and its thread (not its place in --benchmarks), so a benchmark draws the same keys wherever it runs: a readrandom after a fillrandom finds about 63% of its keys, in one process or in two with --use_existing_db")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	fs.StringVar(&c.memProfile, "memprofile", "", "write a heap profile to this file at the end of the run, before the store is closed")
	fs.StringVar(&c.tracePath, "trace", "", "write a runtime execution trace of the whole run to this file (go tool trace)")
	fs.IntVar(&c.prefixSize, "prefix_size", c.prefixSize, "bytes of each key that are its prefix (0: none). With N > 0 the store is opened with Options.Prefix = filter.FixedPrefix(N), so each table's filter also holds its keys' N-byte prefixes, and keys are laid out as a prefix and a suffix (--keys_per_prefix); seekrandom then bounds each seek to its key's prefix (db.PrefixBounds). At most 15")
	fs.IntVar(&c.keysPerPrefix, "keys_per_prefix", c.keysPerPrefix, "with --prefix_size=N > 0, key k is N decimal digits of k / keys_per_prefix followed by 16-N digits of k % keys_per_prefix: keys_per_prefix consecutive keys share each prefix, and key order is still k's order (--prefix_size=8: 16 keys per 8-byte prefix, \"00001234\" + \"00000007\"). 0: keys stay %016d, as db_bench's --keys_per_prefix=0 leaves them")
	fs.IntVar(&c.seekNexts, "seek_nexts", c.seekNexts, "Next calls after each Seek of seekrandom (db_bench's flag)")
	fs.IntVar(&c.rangeFilterBits, "range_filter_bits", c.rangeFilterBits, "give every table written a range filter of this many bits per key (Options.RangeFilter = filter.NewGrafiteRangePolicy(N)), asked by every iterator with both bounds (seekprefix, scanempty, scanshort, seekrandom with --prefix_size); 0: none")
	fs.Float64Var(&c.absentPrefixFraction, "absent_prefix_fraction", c.absentPrefixFraction, "the fraction of seekprefix's scans whose prefix is absent: a real key's prefix with its last byte made ':', which sorts among the real prefixes (inside the tables' key ranges), so only a filter rules it out")
	fs.IntVar(&c.scanWidth, "scan_width", c.scanWidth, "the width of scanshort's ranges, in key numbers ([key(k), key(k+width))), and of scanempty's, in 16-byte keys read as integers (the width keys after key(k) with its last byte made '9', which no key holds); at most 197")
	fs.BoolVar(&c.compare, "compare_no_filter", c.compare, "after the run, build the store as the benchmarks up to the first readmissing do, once with the filter and once with none, run readmissing on each in 5 alternating rounds, and print the medians and the speedup with its range (not significant when the range holds 1 or a round is too short to time)")
}

func (c *config) validate() error {
	switch {
	case c.num <= 0 || c.num > maxKeyIndex:
		return fmt.Errorf("--num must be in [1, %d]", maxKeyIndex)
	case c.valueSize < 0:
		return errors.New("--value_size must be >= 0")
	case !(c.compressionRatio > 0 && c.compressionRatio <= 1):
		return errors.New("--compression_ratio must be in (0, 1]")
	case c.threads < 1:
		return errors.New("--threads must be >= 1")
	case c.multiGetPar < 0:
		return fmt.Errorf("--multiget_parallelism=%d: must be 0 (the default) or more", c.multiGetPar)
	case c.batchSize < 1 || c.batchSize > db.MaxBatchCount:
		return fmt.Errorf("--batch_size must be in [1, %d]", db.MaxBatchCount)
	case c.writeBufferSize < 0 || c.blockSize < 0:
		return errors.New("--write_buffer_size and --block_size must be >= 0 (0: the engine's default)")
	case c.useExisting && c.dbPath == "":
		return errors.New("--use_existing_db needs --db")
	case c.seekNexts < 0:
		return errors.New("--seek_nexts must be >= 0")
	case c.rangeFilterBits < 0:
		return errors.New("--range_filter_bits must be >= 0 (0: no range filter)")
	case !(c.absentPrefixFraction >= 0 && c.absentPrefixFraction <= 1):
		return errors.New("--absent_prefix_fraction must be in [0, 1]")
	case c.scanWidth < 1 || c.scanWidth > maxScanWidth:
		return fmt.Errorf("--scan_width must be in [1, %d]", maxScanWidth)
	}
	if err := c.layout().validate(c.num); err != nil {
		return err
	}
	if c.reads < 0 {
		c.reads = c.num
	}
	if _, err := c.policy(); err != nil {
		return err
	}
	_, err := c.rangePolicy()
	return err
}

// layout is the key layout the flags ask for.
func (c *config) layout() keyLayout {
	return keyLayout{prefixSize: c.prefixSize, perPrefix: c.keysPerPrefix}
}

// prefix is the prefix extractor of the store: nil without --prefix_size.
func (c *config) prefix() filter.Prefix {
	if c.prefixSize <= 0 {
		return nil
	}
	return filter.FixedPrefix(c.prefixSize)
}

// rangePolicy is the range filter --range_filter_bits asks for: nil for 0.
func (c *config) rangePolicy() (filter.RangePolicy, error) {
	if c.rangeFilterBits <= 0 {
		return nil, nil
	}
	return newRangePolicy(c.rangeFilterBits)
}

// policyKind describes one filter policy of package filter to kvbench: how
// to make it for a bits-per-key budget and what its false-positive rate
// should be in theory.
type policyKind struct {
	name string
	make func(bitsPerKey int) filter.Policy
	// theory is the expected false-positive rate of p made with
	// bitsPerKey; nil when there is no formula.
	theory func(p filter.Policy, bitsPerKey int) float64
	// budgets, when set, are the only --bloom_bits values that make
	// different filters (the filters laboratory measures just these);
	// nil means every budget from 1 up.
	budgets []int
	about   string
}

// policies lists every filter policy the filter package offers, by the
// name --filter_policy and the filters subcommand use. A new policy is one
// more entry.
var policies = map[string]policyKind{
	"bloom": {
		name: "bloom", make: filter.NewBloomPolicy, theory: bloomTheory,
		about: "bloomkv Bloom, 64-bit hashing, k = floor(0.69*bits)",
	},
	"leveldb": {
		name: "leveldb", make: filter.NewLevelDBBloomPolicy, theory: bloomTheory,
		about: "LevelDB's Bloom, byte for byte (32-bit hash)",
	},
	"blocked": {
		name: "blocked", make: filter.NewBlockedBloomPolicy,
		theory: func(p filter.Policy, bits int) float64 {
			return filter.EstimateBlockedFPR(float64(bits), p.(filter.BitsPerKeyer).NumProbes())
		},
		about: "cache-line-blocked Bloom (512-bit lines, one cache miss per probe)",
	},
	"binaryfuse": {
		name: "binaryfuse",
		make: func(bits int) filter.Policy {
			if bits <= 8 {
				return filter.NewBinaryFusePolicy(8)
			}
			return filter.NewBinaryFusePolicy(16)
		},
		theory: func(p filter.Policy, bits int) float64 {
			return math.Pow(2, -float64(p.(interface{ FingerprintBits() int }).FingerprintBits()))
		},
		budgets: []int{8, 16},
		about:   "binary fuse; the bits per key (--bloom_bits, or each budget of kvbench filters) pick the fingerprint size, 8 (<= 8) or 16 (> 8)",
	},
}

// policyOrder is the order policies are listed and measured in; policies
// not named here follow in alphabetical order.
var policyOrder = []string{"bloom", "leveldb", "blocked", "binaryfuse"}

func policyNames() []string {
	var names, rest []string
	for _, n := range policyOrder {
		if _, ok := policies[n]; ok {
			names = append(names, n)
		}
	}
	for n := range policies {
		if !slices.Contains(names, n) {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...)
}

// bloomTheory is the standard Bloom rate (1 - e^(-k/bits))^k with the
// policy's own k.
func bloomTheory(p filter.Policy, bitsPerKey int) float64 {
	k := filter.OptimalK(float64(bitsPerKey))
	if bk, ok := p.(filter.BitsPerKeyer); ok {
		k = bk.NumProbes()
	}
	return filter.EstimateFPR(float64(bitsPerKey), k)
}

func (c *config) policy() (filter.Policy, error) {
	if c.bloomBits <= 0 {
		return filter.None, nil
	}
	pk, ok := policies[c.filterPolicy]
	if !ok {
		return nil, fmt.Errorf("unknown --filter_policy %q (have %s)", c.filterPolicy, strings.Join(policyNames(), ", "))
	}
	return pk.make(c.bloomBits), nil
}

func (c *config) options(p filter.Policy) *db.Options {
	rp, _ := c.rangePolicy() // validate has checked it
	o := &db.Options{
		FilterPolicy:    p,
		Prefix:          c.prefix(),
		RangeFilter:     rp,
		WriteBufferSize: c.writeBufferSize,
		BlockSize:       c.blockSize,

		DisableMmapReads: !c.mmapRead,
		DisableMmapWAL:   !c.mmapWAL,

		L0CompactionTrigger:     c.l0Trigger,
		L0SlowdownWritesTrigger: c.l0Slowdown,
		L0StopWritesTrigger:     c.l0Stop,
		LBaseMaxBytes:           c.lbaseBytes,

		MultiGetParallelism: c.multiGetPar,
	}
	if c.cacheSize > 0 {
		o.BlockCacheSize = c.cacheSize
	} else {
		o.DisableBlockCache = true
	}
	return o
}

func describePolicy(p filter.Policy) string {
	if filter.IsNone(p) {
		return "none"
	}
	if bk, ok := p.(filter.BitsPerKeyer); ok {
		return fmt.Sprintf("%s, %d bits/key, k=%d", p.Name(), bk.BitsPerKey(), bk.NumProbes())
	}
	return p.Name()
}

func describeShort(p filter.Policy) string {
	if filter.IsNone(p) {
		return "none"
	}
	if bk, ok := p.(filter.BitsPerKeyer); ok {
		return fmt.Sprintf("%s %d bits/key", strings.TrimPrefix(p.Name(), "bloomkv."), bk.BitsPerKey())
	}
	return p.Name()
}
