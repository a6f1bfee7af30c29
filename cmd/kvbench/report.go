package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/sstable"
)

// result is one benchmark's outcome; it is also its JSON form.
type result struct {
	Name    string    `json:"name"`
	Skipped string    `json:"skipped,omitempty"`
	Kind    benchKind `json:"-"`
	Threads int       `json:"threads,omitempty"`
	Ops     int64     `json:"ops"`
	Bytes   int64     `json:"bytes"`
	Found   int64     `json:"found"`
	// Elapsed is the wall time of the benchmark; ThreadTime sums the time
	// each goroutine spent.
	Elapsed    time.Duration `json:"elapsed_ns"`
	ThreadTime time.Duration `json:"thread_time_ns"`
	// MicrosPerOp is db_bench's figure: ThreadTime / Ops (per goroutine,
	// so it stays a latency with --threads); OpsPerSec and MBPerSec use
	// the wall time (throughput of all goroutines together).
	MicrosPerOp float64 `json:"micros_per_op"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	MBPerSec    float64 `json:"mb_per_sec"`
	// WriterOps counts readwhilewriting's unmeasured writes.
	WriterOps int64           `json:"writer_ops,omitempty"`
	ReadPath  *readPath       `json:"read_path,omitempty"`
	WritePath *writePath      `json:"write_path,omitempty"`
	Latency   *latencySummary `json:"latency,omitempty"`
	Levels    []levelFiles    `json:"levels,omitempty"`

	before, after *db.Metrics
	hist          *histogram // the merged latencies, with --histogram
}

// readPath is what the read path did during one benchmark (deltas of
// db.Metrics).
type readPath struct {
	FilterChecks        int64   `json:"filter_checks"`
	FilterNegatives     int64   `json:"filter_negatives"`
	FilterPositives     int64   `json:"filter_positives"`
	FilterTruePositives int64   `json:"filter_true_positives"`
	FalsePositiveRate   float64 `json:"false_positive_rate"`
	DataBlocksRead      int64   `json:"data_blocks_read"`
	DataBlocksPerOp     float64 `json:"data_blocks_read_per_op"`
	BlockLookupsPerOp   float64 `json:"block_lookups_per_op"`
	CacheHits           int64   `json:"block_cache_hits"`
	CacheMisses         int64   `json:"block_cache_misses"`
	CacheHitRate        float64 `json:"block_cache_hit_rate"`
	// CompactionBlocksRead counts the data blocks compactions read during
	// the benchmark; they are not in DataBlocksRead.
	CompactionBlocksRead int64 `json:"compaction_blocks_read"`
}

// writePath is what the write path did during one benchmark.
type writePath struct {
	WALBytes         int64   `json:"wal_bytes"`
	WALSyncs         int64   `json:"wal_syncs"`
	Flushes          int64   `json:"flushes"`
	FlushBytes       int64   `json:"flush_bytes"`
	Compactions      int64   `json:"compactions"`
	CompactionBytes  int64   `json:"compaction_bytes"`
	WriteStalls      int64   `json:"write_stalls"`
	WriteAmp         float64 `json:"write_amplification"`
	TablesAfter      int     `json:"tables_after"`
	L0TablesAfter    int     `json:"l0_tables_after"`
	StoreBytesAfter  uint64  `json:"table_bytes_after"`
	MemTableAfter    int64   `json:"memtable_bytes_after"`
	BackgroundErrors string  `json:"background_error,omitempty"`
}

// levelFiles is one non-empty level after a benchmark.
type levelFiles struct {
	Level int    `json:"level"`
	Files int    `json:"files"`
	Bytes uint64 `json:"bytes"`
}

// merge folds the goroutines' counters into r, as db_bench merges its
// threads' stats.
func (r *result) merge(threads []*thread) {
	var hist *histogram
	for _, t := range threads {
		r.Ops += t.ops
		r.Bytes += t.bytes
		r.Found += t.found
		r.ThreadTime += t.elapsed
		if t.hist != nil {
			if hist == nil {
				hist = newHistogram()
			}
			hist.merge(t.hist)
		}
	}
	r.hist = hist
	if r.Ops > 0 {
		r.MicrosPerOp = float64(r.ThreadTime.Nanoseconds()) / 1e3 / float64(r.Ops)
	}
	if s := r.Elapsed.Seconds(); s > 0 {
		r.OpsPerSec = float64(r.Ops) / s
		r.MBPerSec = float64(r.Bytes) / 1048576 / s
	}
	r.Latency = hist.summary()
	for l, lm := range r.after.Levels {
		if lm.Files > 0 {
			r.Levels = append(r.Levels, levelFiles{l, lm.Files, lm.Bytes})
		}
	}
	switch r.Kind {
	case kindRead:
		r.ReadPath = newReadPath(r.before, r.after, r.Ops)
	case kindWrite:
		r.WritePath = newWritePath(r.before, r.after)
	}
	if r.Name == "compact" {
		r.WritePath = newWritePath(r.before, r.after)
	}
}

func newReadPath(b, a *db.Metrics, ops int64) *readPath {
	p := &readPath{
		FilterChecks:         a.Filter.Checks - b.Filter.Checks,
		FilterNegatives:      a.Filter.Useful - b.Filter.Useful,
		FilterPositives:      a.Filter.Positives - b.Filter.Positives,
		FilterTruePositives:  a.Filter.TruePositives - b.Filter.TruePositives,
		DataBlocksRead:       a.DataBlocksRead - b.DataBlocksRead,
		CompactionBlocksRead: a.CompactionBlocksRead - b.CompactionBlocksRead,
		CacheHits:            a.BlockCacheHits - b.BlockCacheHits,
		CacheMisses:          a.BlockCacheMisses - b.BlockCacheMisses,
	}
	if absent := p.FilterChecks - p.FilterTruePositives; absent > 0 {
		p.FalsePositiveRate = float64(p.FilterPositives-p.FilterTruePositives) / float64(absent)
	}
	if ops > 0 {
		p.DataBlocksPerOp = float64(p.DataBlocksRead) / float64(ops)
		p.BlockLookupsPerOp = float64(p.CacheHits+p.CacheMisses) / float64(ops)
	}
	if t := p.CacheHits + p.CacheMisses; t > 0 {
		p.CacheHitRate = float64(p.CacheHits) / float64(t)
	}
	return p
}

func newWritePath(b, a *db.Metrics) *writePath {
	p := &writePath{
		WALBytes:        a.WALBytesWritten - b.WALBytesWritten,
		WALSyncs:        a.WALSyncs - b.WALSyncs,
		Flushes:         a.Flushes - b.Flushes,
		FlushBytes:      a.FlushBytesWritten - b.FlushBytesWritten,
		Compactions:     a.Compactions - b.Compactions,
		CompactionBytes: a.CompactionBytesWritten - b.CompactionBytesWritten,
		WriteStalls:     a.WriteStalls - b.WriteStalls,
		L0TablesAfter:   a.Levels[0].Files,
		MemTableAfter:   a.MemTableBytes,
	}
	if user := a.UserBytesWritten - b.UserBytesWritten; user > 0 {
		// db.Metrics.WriteAmplification's meaning, over this benchmark.
		p.WriteAmp = float64(p.WALBytes+p.FlushBytes+p.CompactionBytes) / float64(user)
	}
	for _, l := range a.Levels {
		p.TablesAfter += l.Files
		p.StoreBytesAfter += l.Bytes
	}
	if a.BackgroundError != nil {
		p.BackgroundErrors = a.BackgroundError.Error()
	}
	return p
}

// resultLine is db_bench's line: name, micros/op, then MB/s when bytes
// moved and "(found of ops found)" for the benchmarks that look keys up.
func resultLine(r *result) string {
	if r.Skipped != "" {
		return fmt.Sprintf("%-12s : skipped (%s)", r.Name, r.Skipped)
	}
	var extra []string
	if r.Bytes > 0 && r.Elapsed > 0 {
		extra = append(extra, fmt.Sprintf("%6.1f MB/s", r.MBPerSec))
	}
	switch r.Name {
	case "readrandom", "readmissing", "readhot", "seekrandom", "readwhilewriting", "multiget", "multimissing":
		extra = append(extra, fmt.Sprintf("(%d of %d found)", r.Found, r.Ops))
	}
	if r.Threads > 1 {
		extra = append(extra, fmt.Sprintf("[%d threads, %.0f ops/s]", r.Threads, r.OpsPerSec))
	}
	sep := ""
	if len(extra) > 0 {
		sep = " "
	}
	return fmt.Sprintf("%-12s : %11.3f micros/op;%s%s", r.Name, r.MicrosPerOp, sep, strings.Join(extra, " "))
}

// indent starts the lines printed under a result line.
const indent = "               "

func (p *readPath) String() string {
	s := fmt.Sprintf("read path: filter %d checks, %d negatives, fp rate %.3f%%; data blocks read %.3f/op; block cache hit %.1f%%",
		p.FilterChecks, p.FilterNegatives, 100*p.FalsePositiveRate, p.DataBlocksPerOp, 100*p.CacheHitRate)
	if p.CompactionBlocksRead > 0 {
		s += fmt.Sprintf("; compactions read %d more blocks meanwhile", p.CompactionBlocksRead)
	}
	return s
}

func (p *writePath) String() string {
	s := fmt.Sprintf("write path: WAL %s (%d syncs), %d flushes (%s), %d compactions (%s), write amp %.2f, %d stalls; %d tables (%d in L0, %s)",
		mib(p.WALBytes), p.WALSyncs, p.Flushes, mib(p.FlushBytes), p.Compactions, mib(p.CompactionBytes),
		p.WriteAmp, p.WriteStalls, p.TablesAfter, p.L0TablesAfter, mib(int64(p.StoreBytesAfter)))
	if p.BackgroundErrors != "" {
		s += "; background error: " + p.BackgroundErrors
	}
	return s
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func printResult(w io.Writer, r *result) {
	if r.Name == "stats" && r.Skipped == "" {
		fmt.Fprintf(w, "%-12s :\n", r.Name)
		return
	}
	fmt.Fprintln(w, resultLine(r))
	if r.ReadPath != nil {
		fmt.Fprintln(w, indent+r.ReadPath.String())
	}
	if r.WritePath != nil {
		fmt.Fprintln(w, indent+r.WritePath.String())
	}
	if r.Latency != nil {
		fmt.Fprintln(w, indent+r.Latency.String())
	}
	if r.hist != nil && r.hist.n > 0 {
		fmt.Fprint(w, r.hist.dbBenchString())
	}
}

func printHeader(cfg *config, out io.Writer, dir string, p filter.Policy) {
	raw := float64(cfg.num) * float64(keyLen+cfg.valueSize)
	file := float64(cfg.num) * (keyLen + float64(cfg.valueSize)*cfg.compressionRatio)
	fmt.Fprintf(out, "bloomkv kvbench (%s, %s/%s, %d CPUs)\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Fprintf(out, "Date:       %s\n", time.Now().Format(time.RFC1123))
	fmt.Fprintf(out, "Keys:       %d bytes each\n", keyLen)
	fmt.Fprintf(out, "Values:     %d bytes each (%d bytes after compression)\n", cfg.valueSize, int(float64(cfg.valueSize)*cfg.compressionRatio+0.5))
	fmt.Fprintf(out, "Entries:    %d (reads %d per thread, %d threads)\n", cfg.num, cfg.reads, cfg.threads)
	fmt.Fprintf(out, "RawSize:    %.1f MB (estimated)\n", raw/1048576)
	fmt.Fprintf(out, "FileSize:   %.1f MB (estimated)\n", file/1048576)
	fmt.Fprintf(out, "Filter:     %s\n", describePolicy(p))
	cache := "none"
	if cfg.cacheSize > 0 {
		cache = fmt.Sprintf("%d bytes", cfg.cacheSize)
	}
	fmt.Fprintf(out, "Cache:      %s; write buffer %d bytes; block size %d bytes; sync %v\n", cache, cfg.writeBufferSize, cfg.blockSize, cfg.sync)
	fmt.Fprintf(out, "Store:      %s\n", dir)
	fmt.Fprintf(out, "------------------------------------------------\n")
}

// filterEffect is the closing comparison: readmissing with the configured
// filter and with none, over several alternating rounds.
type filterEffect struct {
	Filter        string    `json:"filter"`
	Lookups       int64     `json:"lookups"`
	Rounds        int       `json:"rounds"`
	WithOpsPerSec float64   `json:"with_filter_ops_per_sec"` // medians over the rounds
	NoneOpsPerSec float64   `json:"no_filter_ops_per_sec"`
	WithBlocks    float64   `json:"with_filter_data_blocks_read_per_op"`
	NoneBlocks    float64   `json:"no_filter_data_blocks_read_per_op"`
	WithLookups   float64   `json:"with_filter_block_lookups_per_op"`
	NoneLookups   float64   `json:"no_filter_block_lookups_per_op"`
	WithFPR       float64   `json:"with_filter_false_positive_rate"`
	Speedups      []float64 `json:"speedups"` // per round: no-filter time / filter time
	Speedup       float64   `json:"speedup"`  // their median
	Stable        bool      `json:"stable"`   // every round's speedup on the same side of 1, within 2x of each other
}

// median returns the median of xs (xs is sorted in place).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if n := len(xs); n%2 == 1 {
		return xs[n/2]
	} else {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
}

// printFilterEffect prints readmissing with the configured filter and with
// none side by side: medians over the rounds, then the speedup with its
// spread, called a result only when every round agrees.
func printFilterEffect(out io.Writer, p filter.Policy, with, without []*result) *filterEffect {
	if len(with) == 0 || len(with) != len(without) {
		return nil
	}
	fe := &filterEffect{Filter: describeShort(p), Lookups: with[0].Ops, Rounds: len(with)}
	var wo, no, wb, nb, wl, nl, fpr []float64
	for i := range with {
		w, n := with[i], without[i]
		if w.ReadPath == nil || n.ReadPath == nil || w.MicrosPerOp <= 0 {
			return nil
		}
		wo, no = append(wo, w.OpsPerSec), append(no, n.OpsPerSec)
		wb, nb = append(wb, w.ReadPath.DataBlocksPerOp), append(nb, n.ReadPath.DataBlocksPerOp)
		wl, nl = append(wl, w.ReadPath.BlockLookupsPerOp), append(nl, n.ReadPath.BlockLookupsPerOp)
		fpr = append(fpr, w.ReadPath.FalsePositiveRate)
		fe.Speedups = append(fe.Speedups, n.MicrosPerOp/w.MicrosPerOp)
	}
	fe.WithOpsPerSec, fe.NoneOpsPerSec = median(wo), median(no)
	fe.WithBlocks, fe.NoneBlocks = median(wb), median(nb)
	fe.WithLookups, fe.NoneLookups = median(wl), median(nl)
	fe.WithFPR = median(fpr)
	sp := slices.Clone(fe.Speedups)
	fe.Speedup = median(sp)
	lo, hi := sp[0], sp[len(sp)-1]
	fe.Stable = (lo > 1 || hi < 1) && hi <= 2*lo

	row := func(name string, ops, blocks, lookups float64) {
		fmt.Fprintf(out, "%-28s | %12.0f | %16.3f | %17.3f\n", name, ops, blocks, lookups)
	}
	fmt.Fprintf(out, "\nThe filter's effect on readmissing (%d lookups of absent keys, same keys, same store shape; medians of %d alternating rounds):\n", fe.Lookups, fe.Rounds)
	fmt.Fprintf(out, "%-28s | %12s | %16s | %17s\n", "filter", "ops/s", "file blocks/op", "block reads/op")
	fmt.Fprintf(out, "%s\n", strings.Repeat("-", 28+3+12+3+16+3+17))
	row(fe.Filter, fe.WithOpsPerSec, fe.WithBlocks, fe.WithLookups)
	row("none", fe.NoneOpsPerSec, fe.NoneBlocks, fe.NoneLookups)
	fmt.Fprintf(out, "(file blocks: data blocks read from table files; block reads: data blocks fetched, from the cache or the files)\n")
	if fe.Stable {
		fmt.Fprintf(out, "the filter makes readmissing %.2fx as fast: median of %d rounds, which ranged %.2fx to %.2fx (measured fp rate %.3f%%)\n",
			fe.Speedup, fe.Rounds, lo, hi, 100*fe.WithFPR)
	} else {
		fmt.Fprintf(out, "no stable result: the %d rounds' speedups range %.2fx to %.2fx (median %.2fx); too little work for this machine's noise, try a larger --num or --reads\n",
			fe.Rounds, lo, hi, fe.Speedup)
	}
	return fe
}

// report is the --json document.
type report struct {
	Config       jsonConfig    `json:"config"`
	Results      []*result     `json:"results"`
	FilterEffect *filterEffect `json:"filter_effect,omitempty"`
}

type jsonConfig struct {
	Date             string  `json:"date"`
	GoVersion        string  `json:"go_version"`
	CPUs             int     `json:"cpus"`
	Benchmarks       string  `json:"benchmarks"`
	Num              int     `json:"num"`
	Reads            int     `json:"reads"`
	KeySize          int     `json:"key_size"`
	ValueSize        int     `json:"value_size"`
	CompressionRatio float64 `json:"compression_ratio"`
	BloomBits        int     `json:"bloom_bits"`
	FilterPolicy     string  `json:"filter_policy"`
	CacheSize        int64   `json:"cache_size"`
	WriteBufferSize  int     `json:"write_buffer_size"`
	BlockSize        int     `json:"block_size"`
	Threads          int     `json:"threads"`
	Sync             bool    `json:"sync"`
	DB               string  `json:"db"`
	UseExistingDB    bool    `json:"use_existing_db"`
	Seed             uint64  `json:"seed"`
}

func (c *config) jsonConfig(dir string, p filter.Policy) jsonConfig {
	return jsonConfig{
		Date: time.Now().Format(time.RFC3339), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(),
		Benchmarks: c.benchmarks, Num: c.num, Reads: c.reads, KeySize: keyLen, ValueSize: c.valueSize,
		CompressionRatio: c.compressionRatio, BloomBits: c.bloomBits, FilterPolicy: describePolicy(p),
		CacheSize: c.cacheSize, WriteBufferSize: c.writeBufferSize, BlockSize: c.blockSize,
		Threads: c.threads, Sync: c.sync, DB: dir, UseExistingDB: c.useExisting, Seed: c.seed,
	}
}

func writeJSON(path string, rep *report) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// printExistingStore describes the store on disk that --use_existing_db
// runs on, from its tables' properties: the flags describe only what this
// run writes.
func printExistingStore(out io.Writer, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		fmt.Fprintf(out, "Existing:   cannot list %s: %v\n", dir, err)
		return
	}
	type policyUse struct {
		tables     int
		bits, keys float64
	}
	var tables int
	var entriesN, bytes uint64
	policies := map[string]*policyUse{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sst") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			continue
		}
		r, err := sstable.NewReader(f, fi.Size(), sstable.ReaderOptions{})
		if err != nil {
			f.Close()
			fmt.Fprintf(out, "Existing:   %s: %v\n", e.Name(), err)
			continue
		}
		p := r.Properties()
		tables++
		entriesN += p.NumEntries
		bytes += uint64(fi.Size())
		name := p.FilterPolicy
		if name == "" {
			name = "none"
		}
		u := policies[name]
		if u == nil {
			u = &policyUse{}
			policies[name] = u
		}
		u.tables++
		u.bits += p.FilterBitsPerKey * float64(p.NumEntries)
		u.keys += float64(p.NumEntries)
		r.Close()
		f.Close()
	}
	fmt.Fprintf(out, "Existing:   %d tables, %d entries, %.1f MB on disk (the Entries and Filter lines above apply to what this run writes)\n",
		tables, entriesN, float64(bytes)/1048576)
	names := make([]string, 0, len(policies))
	for n := range policies {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		u := policies[n]
		if n == "none" || u.keys == 0 {
			fmt.Fprintf(out, "            filter %s: %d tables\n", n, u.tables)
			continue
		}
		fmt.Fprintf(out, "            filter %s: %d tables, %.2f bits/key\n", n, u.tables, u.bits/u.keys)
	}
}
