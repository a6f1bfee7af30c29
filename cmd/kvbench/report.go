package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
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
	// Scanned counts the entries the scans returned (seekprefix,
	// scanempty, scanshort; seekrandom's --seek_nexts).
	Scanned int64 `json:"scanned,omitempty"`
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
	WriterOps int64 `json:"writer_ops,omitempty"`
	// WaitedForCompactions is how long the benchmark waited, before it
	// started, for the store's flushes and compactions
	// (--wait_for_compactions); it is not in Elapsed.
	WaitedForCompactions time.Duration   `json:"waited_for_compactions_ns,omitempty"`
	ReadPath             *readPath       `json:"read_path,omitempty"`
	WritePath            *writePath      `json:"write_path,omitempty"`
	Latency              *latencySummary `json:"latency,omitempty"`
	Levels               []levelFiles    `json:"levels,omitempty"`
	// VsGet is --multiget_vs_get's comparison.
	VsGet *vsGet `json:"vs_get,omitempty"`

	before, after *db.Metrics
	hist          *histogram // the merged latencies, with --histogram or --report
}

// vsGet compares a MultiGet benchmark's batches with the loop-of-Get
// batches it alternated with (--multiget_vs_get): the time of the calls,
// without the harness's drawing of the keys.
type vsGet struct {
	MultiGetKeys         int64   `json:"multiget_keys"`
	LoopKeys             int64   `json:"loop_keys"`
	MultiGetMicrosPerKey float64 `json:"multiget_micros_per_key"`
	LoopMicrosPerKey     float64 `json:"loop_micros_per_key"`
	// Ratio is LoopMicrosPerKey / MultiGetMicrosPerKey: how many times
	// faster MultiGet was.
	Ratio float64 `json:"ratio"`
}

func (v *vsGet) String() string {
	return fmt.Sprintf("in alternation with a loop of Get: MultiGet %.3f micros/key, loop of Get %.3f; loop/MultiGet %.2fx (%d and %d keys)",
		v.MultiGetMicrosPerKey, v.LoopMicrosPerKey, v.Ratio, v.MultiGetKeys, v.LoopKeys)
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
	// KeyIndexSkips counts the data block lookups that the block's key
	// index answered without a search (db.Metrics.BlockKeyIndexSkips).
	KeyIndexSkips int64 `json:"block_key_index_skips"`
	// DataBlockBytesRead is the bytes of the data blocks the benchmark's
	// reads (Get, iterators) read from table files.
	DataBlockBytesRead int64 `json:"data_block_bytes_read"`
	// CompactionBlocksRead and CompactionBlockBytesRead count the data
	// blocks compactions read from table files during the benchmark
	// (--wait_for_compactions=false lets them run); they are not in
	// DataBlocksRead.
	CompactionBlocksRead     int64 `json:"compaction_blocks_read"`
	CompactionBlockBytesRead int64 `json:"compaction_block_bytes_read"`
	// Scans is set for the benchmarks that scan bounded ranges
	// (seekprefix, scanempty, scanshort, seekrandom): what the prefix and
	// range filters did, and the blocks and keys per scan.
	Scans *scanPath `json:"scans,omitempty"`
}

// scanPath is what the prefix and range filters (Options.Prefix,
// Options.RangeFilter) did during a scan benchmark: deltas of
// db.Metrics.PrefixFilter and RangeFilter (Useful: tables skipped without
// reading anything of them), and per scan (an op is one scan).
type scanPath struct {
	PrefixChecks    int64 `json:"prefix_filter_checks"`
	PrefixSkipped   int64 `json:"prefix_filter_tables_skipped"`
	PrefixPositives int64 `json:"prefix_filter_positives"`
	RangeChecks     int64 `json:"range_filter_checks"`
	RangeSkipped    int64 `json:"range_filter_tables_skipped"`
	RangePositives  int64 `json:"range_filter_positives"`
	// PrefixSkippedPerLevel and RangeSkippedPerLevel are the tables
	// skipped per level (index: level), when any were.
	PrefixSkippedPerLevel []int64 `json:"prefix_filter_tables_skipped_per_level,omitempty"`
	RangeSkippedPerLevel  []int64 `json:"range_filter_tables_skipped_per_level,omitempty"`
	// KeysPerScan is the entries a scan returned, on average.
	KeysPerScan float64 `json:"keys_per_scan"`
	// DataBlocksPerScan is readPath.DataBlocksPerOp: data blocks read
	// from table files per scan.
	DataBlocksPerScan float64 `json:"data_blocks_read_per_scan"`
}

func (p *readPath) addScans(b, a *db.Metrics, ops, scanned int64) {
	s := &scanPath{
		PrefixChecks:      a.PrefixFilter.Checks - b.PrefixFilter.Checks,
		PrefixSkipped:     a.PrefixFilter.Useful - b.PrefixFilter.Useful,
		PrefixPositives:   a.PrefixFilter.Positives - b.PrefixFilter.Positives,
		RangeChecks:       a.RangeFilter.Checks - b.RangeFilter.Checks,
		RangeSkipped:      a.RangeFilter.Useful - b.RangeFilter.Useful,
		RangePositives:    a.RangeFilter.Positives - b.RangeFilter.Positives,
		DataBlocksPerScan: p.DataBlocksPerOp,
	}
	if ops > 0 {
		s.KeysPerScan = float64(scanned) / float64(ops)
	}
	perLevel := func(f func(l int) int64) []int64 {
		var out []int64
		for l := range a.Levels {
			if d := f(l); d != 0 {
				out = make([]int64, len(a.Levels))
				break
			}
		}
		for l := range out {
			out[l] = f(l)
		}
		return out
	}
	s.PrefixSkippedPerLevel = perLevel(func(l int) int64 { return a.Levels[l].PrefixFilter.Useful - b.Levels[l].PrefixFilter.Useful })
	s.RangeSkippedPerLevel = perLevel(func(l int) int64 { return a.Levels[l].RangeFilter.Useful - b.Levels[l].RangeFilter.Useful })
	p.Scans = s
}

// writePath is what the write path did during one benchmark.
type writePath struct {
	WALBytes        int64 `json:"wal_bytes"`
	WALSyncs        int64 `json:"wal_syncs"`
	Flushes         int64 `json:"flushes"`
	FlushBytes      int64 `json:"flush_bytes"`
	Compactions     int64 `json:"compactions"`
	CompactionBytes int64 `json:"compaction_bytes"` // written
	// CompactionBytesRead is the data block bytes compactions read.
	CompactionBytesRead int64   `json:"compaction_bytes_read"`
	WriteStalls         int64   `json:"write_stalls"`
	WriteAmp            float64 `json:"write_amplification"`
	TablesAfter         int     `json:"tables_after"`
	L0TablesAfter       int     `json:"l0_tables_after"`
	StoreBytesAfter     uint64  `json:"table_bytes_after"`
	MemTableAfter       int64   `json:"memtable_bytes_after"`
	BackgroundErrors    string  `json:"background_error,omitempty"`
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
	var vs vsGet
	var loopTime, multiTime time.Duration
	for _, t := range threads {
		vs.LoopKeys += t.loopKeys
		loopTime += t.loopCalls
		multiTime += t.multiCalls
		r.Ops += t.ops
		r.Bytes += t.bytes
		r.Found += t.found
		r.Scanned += t.scanned
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
	lookups := r.Ops // the keys the read path saw: the loop's too
	if vs.LoopKeys > 0 {
		vs.MultiGetKeys = r.Ops
		lookups += vs.LoopKeys
		vs.LoopMicrosPerKey = float64(loopTime.Nanoseconds()) / 1e3 / float64(vs.LoopKeys)
		if r.Ops > 0 {
			vs.MultiGetMicrosPerKey = float64(multiTime.Nanoseconds()) / 1e3 / float64(r.Ops)
		}
		if vs.MultiGetMicrosPerKey > 0 {
			vs.Ratio = vs.LoopMicrosPerKey / vs.MultiGetMicrosPerKey
		}
		r.VsGet = &vs
	}
	switch r.Kind {
	case kindRead:
		r.ReadPath = newReadPath(r.before, r.after, lookups)
		if isScan(r.Name) {
			r.ReadPath.addScans(r.before, r.after, r.Ops, r.Scanned)
		}
	case kindWrite:
		r.WritePath = newWritePath(r.before, r.after)
	}
	if r.Name == "compact" {
		r.WritePath = newWritePath(r.before, r.after)
	}
}

func newReadPath(b, a *db.Metrics, ops int64) *readPath {
	p := &readPath{
		FilterChecks:             a.Filter.Checks - b.Filter.Checks,
		FilterNegatives:          a.Filter.Useful - b.Filter.Useful,
		FilterPositives:          a.Filter.Positives - b.Filter.Positives,
		FilterTruePositives:      a.Filter.TruePositives - b.Filter.TruePositives,
		DataBlocksRead:           a.DataBlocksRead - b.DataBlocksRead,
		DataBlockBytesRead:       a.DataBlockBytesRead - b.DataBlockBytesRead,
		CompactionBlocksRead:     a.CompactionBlocksRead - b.CompactionBlocksRead,
		CompactionBlockBytesRead: a.CompactionBlockBytesRead - b.CompactionBlockBytesRead,
		CacheHits:                a.BlockCacheHits - b.BlockCacheHits,
		CacheMisses:              a.BlockCacheMisses - b.BlockCacheMisses,
		KeyIndexSkips:            a.BlockKeyIndexSkips - b.BlockKeyIndexSkips,
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
		WALBytes:            a.WALBytesWritten - b.WALBytesWritten,
		WALSyncs:            a.WALSyncs - b.WALSyncs,
		Flushes:             a.Flushes - b.Flushes,
		FlushBytes:          a.FlushBytesWritten - b.FlushBytesWritten,
		Compactions:         a.Compactions - b.Compactions,
		CompactionBytes:     a.CompactionBytesWritten - b.CompactionBytesWritten,
		CompactionBytesRead: a.CompactionBlockBytesRead - b.CompactionBlockBytesRead,
		WriteStalls:         a.WriteStalls - b.WriteStalls,
		L0TablesAfter:       a.Levels[0].Files,
		MemTableAfter:       a.MemTableBytes,
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
	case "readrandom", "readmissing", "readhot", "seekrandom", "readwhilewriting", "multiget", "multimissing",
		"seekprefix", "scanempty", "scanshort": // the scans: those that found a key
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
	var s string
	if sc := p.Scans; sc != nil {
		s = fmt.Sprintf("read path: prefix filter %d checks, %d tables skipped; range filter %d checks, %d tables skipped; %.2f keys/scan; data blocks read %.3f/scan; block cache hit %.1f%%",
			sc.PrefixChecks, sc.PrefixSkipped, sc.RangeChecks, sc.RangeSkipped, sc.KeysPerScan, sc.DataBlocksPerScan, 100*p.CacheHitRate)
	} else {
		s = fmt.Sprintf("read path: filter %d checks, %d negatives, fp rate %.3f%%; data blocks read %.3f/op; block cache hit %.1f%%",
			p.FilterChecks, p.FilterNegatives, 100*p.FalsePositiveRate, p.DataBlocksPerOp, 100*p.CacheHitRate)
	}
	if p.KeyIndexSkips > 0 {
		s += fmt.Sprintf("; %d block searches skipped by key indexes", p.KeyIndexSkips)
	}
	if p.CompactionBlocksRead > 0 {
		s += fmt.Sprintf("; meanwhile compactions read %d blocks (%s), not counted above", p.CompactionBlocksRead, mib(p.CompactionBlockBytesRead))
	}
	return s
}

func (p *writePath) String() string {
	s := fmt.Sprintf("write path: WAL %s (%d syncs), %d flushes (%s), %d compactions (read %s, wrote %s), write amp %.2f, %d stalls; %d tables (%d in L0, %s)",
		mib(p.WALBytes), p.WALSyncs, p.Flushes, mib(p.FlushBytes), p.Compactions, mib(p.CompactionBytesRead), mib(p.CompactionBytes),
		p.WriteAmp, p.WriteStalls, p.TablesAfter, p.L0TablesAfter, mib(int64(p.StoreBytesAfter)))
	if p.BackgroundErrors != "" {
		s += "; background error: " + p.BackgroundErrors
	}
	return s
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// printResult prints r's lines: db_bench's result line, its read- or
// write-path line and, when hist is set, its latency histogram.
func printResult(w io.Writer, r *result, hist bool) {
	if r.Name == "stats" && r.Skipped == "" {
		fmt.Fprintf(w, "%-12s :\n", r.Name)
		return
	}
	fmt.Fprintln(w, resultLine(r))
	if r.ReadPath != nil {
		fmt.Fprintln(w, indent+r.ReadPath.String())
	}
	if r.VsGet != nil {
		fmt.Fprintln(w, indent+r.VsGet.String())
	}
	if r.WritePath != nil {
		fmt.Fprintln(w, indent+r.WritePath.String())
	}
	if hist && r.hist != nil && r.hist.n > 0 {
		fmt.Fprint(w, r.hist.dbBenchString(r.histUnit()))
	}
}

// histUnit is what one latency of r's histogram times: "op", or "call
// (N ops per call)" for fillbatch and the MultiGet benchmarks, which time
// a call of many ops.
func (r *result) histUnit() string {
	if r.hist == nil || r.hist.n == r.Ops {
		return "op"
	}
	return fmt.Sprintf("call (%.4g ops per call)", float64(r.Ops)/float64(r.hist.n))
}

// printHeader prints db_bench's header: the machine, then what the run
// works on. For a fresh store that is the flags' store; for an existing one
// (--use_existing_db) it is the store on disk as existing describes it,
// with the flags' figures only for what this run writes and reads.
func printHeader(cfg *config, out io.Writer, dir string, p filter.Policy, existing *storeInfo) {
	fmt.Fprintf(out, "bloomkv kvbench (%s, %s/%s, %d CPUs)\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Fprintf(out, "Date:       %s\n", time.Now().Format(time.RFC1123))
	fmt.Fprintf(out, "Keys:       %s\n", cfg.layout().describe(cfg.prefix()))
	values := fmt.Sprintf("%d bytes each (%d bytes after compression)", cfg.valueSize, int(float64(cfg.valueSize)*cfg.compressionRatio+0.5))
	if existing == nil {
		raw := float64(cfg.num) * float64(keyLen+cfg.valueSize)
		file := float64(cfg.num) * (keyLen + float64(cfg.valueSize)*cfg.compressionRatio)
		fmt.Fprintf(out, "Values:     %s\n", values)
		fmt.Fprintf(out, "Entries:    %d (reads %d per thread, %d threads)\n", cfg.num, cfg.reads, cfg.threads)
		fmt.Fprintf(out, "RawSize:    %.1f MB (estimated)\n", raw/1048576)
		fmt.Fprintf(out, "FileSize:   %.1f MB (estimated)\n", file/1048576)
		fmt.Fprintf(out, "Filter:     %s\n", describePolicy(p))
		printFilterExtras(out, cfg, p)
	} else {
		existing.printHeader(out, cfg, p, values)
	}
	cache := "none"
	if cfg.cacheSize > 0 {
		cache = fmt.Sprintf("%d bytes", cfg.cacheSize)
	}
	fmt.Fprintf(out, "Cache:      %s; write buffer %d bytes; block size %d bytes; sync %v\n", cache, cfg.writeBufferSize, cfg.blockSize, cfg.sync)
	fmt.Fprintf(out, "Store:      %s\n", dir)
	fmt.Fprintf(out, "------------------------------------------------\n")
}

// storeInfo describes a store on disk from its tables' properties; it is
// also the JSON form.
type storeInfo struct {
	Tables    int    `json:"tables"`
	FileBytes uint64 `json:"file_bytes"`
	// Entries counts the tables' entries: every version of a key that no
	// compaction has merged yet, and Deletions of them are tombstones.
	Entries   uint64 `json:"entries"`
	Deletions uint64 `json:"deletions"`
	// RawBytes is the user keys and values as written, before compression.
	RawBytes uint64 `json:"raw_bytes"`
	// Smallest and Largest are the smallest and largest user keys.
	Smallest string      `json:"smallest,omitempty"`
	Largest  string      `json:"largest,omitempty"`
	Filters  []filterUse `json:"filters"`
	// Problems are the tables that could not be read.
	Problems []string `json:"problems,omitempty"`
}

// filterUse is one filter policy of the tables of a store.
type filterUse struct {
	Policy     string  `json:"policy"` // "none": no filter
	Tables     int     `json:"tables"`
	Entries    uint64  `json:"entries"`
	BitsPerKey float64 `json:"bits_per_key"` // over the tables' entries
}

// describeStore reads the properties of the tables of the store in dir,
// which must be open (Open has replayed its logs into tables and removed
// obsolete files, so the directory's tables are the live ones; a table a
// compaction removes meanwhile is skipped). It reads no filter and no
// data block.
func describeStore(dir string) *storeInfo {
	info := &storeInfo{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		info.Problems = append(info.Problems, err.Error())
		return info
	}
	uses := map[string]*filterUse{}
	var smallest, largest []byte
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sst") {
			continue
		}
		props, size, err := tableProperties(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			info.Problems = append(info.Problems, fmt.Sprintf("%s: %v", e.Name(), err))
			continue
		}
		info.Tables++
		info.FileBytes += uint64(size)
		info.Entries += props.NumEntries
		info.Deletions += props.NumDeletions
		if user := props.RawKeySize + props.RawValueSize; user >= 8*props.NumEntries {
			info.RawBytes += user - 8*props.NumEntries // internal keys carry 8 bytes of trailer
		}
		if props.NumEntries > 0 {
			if k := base.UserKey(props.Smallest); smallest == nil || bytes.Compare(k, smallest) < 0 {
				smallest = slices.Clone(k)
			}
			if k := base.UserKey(props.Largest); largest == nil || bytes.Compare(k, largest) > 0 {
				largest = slices.Clone(k)
			}
		}
		name := props.FilterPolicy
		if name == "" {
			name = "none"
		}
		u := uses[name]
		if u == nil {
			u = &filterUse{Policy: name}
			uses[name] = u
		}
		u.Tables++
		u.Entries += props.NumEntries
		u.BitsPerKey += props.FilterBitsPerKey * float64(props.NumEntries) // a sum until below
	}
	info.Smallest, info.Largest = string(smallest), string(largest)
	for _, u := range uses {
		if u.Entries > 0 {
			u.BitsPerKey /= float64(u.Entries)
		}
		info.Filters = append(info.Filters, *u)
	}
	sort.Slice(info.Filters, func(i, j int) bool { return info.Filters[i].Policy < info.Filters[j].Policy })
	return info
}

// tableProperties returns the properties and size of the table at path.
func tableProperties(path string) (*sstable.Properties, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	r, err := sstable.NewReader(f, fi.Size(), sstable.ReaderOptions{}) // no Filters: the filter block is not read
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	return r.Properties(), fi.Size(), nil
}

// countOf is n and noun, made plural with an s unless n is 1.
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// keyNumber returns the number of a key kvbench wrote (16 decimal digits).
func keyNumber(k string) (int, bool) {
	if len(k) != keyLen || !allDigits(k) {
		return 0, false
	}
	n := 0
	for i := 0; i < len(k); i++ {
		n = n*10 + int(k[i]-'0')
	}
	return n, true
}

// printHeader prints the header lines that describe an existing store,
// and a warning when --num does not match the store's keys.
func (s *storeInfo) printHeader(out io.Writer, cfg *config, p filter.Policy, values string) {
	fmt.Fprintf(out, "Values:     %s, in what this run writes\n", values)
	fmt.Fprintf(out, "Existing:   %s, %.1f MB on disk (--use_existing_db; the lines below describe them)\n", countOf(s.Tables, "table"), float64(s.FileBytes)/1048576)
	fmt.Fprintf(out, "Entries:    %d in the tables, %d of them deletions (a key overwritten since its last compaction counts once per version)\n", s.Entries, s.Deletions)
	if s.Entries > 0 {
		fmt.Fprintf(out, "Key range:  %q .. %q\n", s.Smallest, s.Largest)
	}
	fmt.Fprintf(out, "RawSize:    %.1f MB (the tables' keys and values before compression)\n", float64(s.RawBytes)/1048576)
	for i, u := range s.Filters {
		label := "Filter:    "
		if i > 0 {
			label = "           "
		}
		if u.Policy == "none" {
			fmt.Fprintf(out, "%s none in %s\n", label, countOf(u.Tables, "table"))
		} else {
			fmt.Fprintf(out, "%s %s, %.2f bits/key in %s\n", label, u.Policy, u.BitsPerKey, countOf(u.Tables, "table"))
		}
	}
	if len(s.Filters) == 0 {
		fmt.Fprintf(out, "Filter:     no table\n")
	}
	fmt.Fprintf(out, "New tables: %s (--filter_policy, --bloom_bits: the tables this run writes; a table keeps the filter it was written with)\n", describePolicy(p))
	printFilterExtras(out, cfg, p)
	fmt.Fprintf(out, "Reads:      keys 0 .. %d (--num=%d), %d per thread, %d threads\n", cfg.num-1, cfg.num, cfg.reads, cfg.threads)
	for _, pr := range s.Problems {
		fmt.Fprintf(out, "Warning:    cannot read table %s\n", pr)
	}
	if w := s.numWarning(cfg.num, cfg.layout()); w != "" {
		fmt.Fprintf(out, "Warning:    %s\n", w)
	}
}

// numWarning says how --num misses the store's keys, when the store holds
// kvbench's keys and its largest is not about --num-1 (a random fill
// leaves the largest few keys unwritten now and then, so within 1% is
// about).
func (s *storeInfo) numWarning(num int, keys keyLayout) string {
	hi, ok := keys.number(s.Largest)
	if !ok || s.Entries == 0 {
		return ""
	}
	switch {
	case hi >= num:
		return fmt.Sprintf("the store's keys go up to %d but --num=%d: the benchmarks use only keys below %d (--num=%d covers them all)", hi, num, num, hi+1)
	case float64(hi+1) < 0.99*float64(num):
		return fmt.Sprintf("the store's keys go up to %d but --num=%d: %.0f%% of the random reads look for keys above them (--num=%d matches the store)", hi, num, 100*(1-float64(hi+1)/float64(num)), hi+1)
	}
	return ""
}

// filterEffect is the closing comparison: readmissing with the configured
// filter and with none, over several alternating rounds.
type filterEffect struct {
	Filter        string  `json:"filter"`
	Lookups       int64   `json:"lookups"`
	Rounds        int     `json:"rounds"`
	WithOpsPerSec float64 `json:"with_filter_ops_per_sec"` // medians over the rounds
	NoneOpsPerSec float64 `json:"no_filter_ops_per_sec"`
	WithBlocks    float64 `json:"with_filter_data_blocks_read_per_op"`
	NoneBlocks    float64 `json:"no_filter_data_blocks_read_per_op"`
	WithLookups   float64 `json:"with_filter_block_lookups_per_op"`
	NoneLookups   float64 `json:"no_filter_block_lookups_per_op"`
	WithFPR       float64 `json:"with_filter_false_positive_rate"`
	// FilterChecks counts the filter probes of the rounds with the
	// filter: none means every key was still in the memtable.
	FilterChecks int64 `json:"filter_checks"`
	// ShortestRound is the shortest round with the filter (wall time).
	ShortestRound time.Duration `json:"shortest_round_ns"`
	Speedups      []float64     `json:"speedups"` // per round: no-filter time / filter time
	Speedup       float64       `json:"speedup"`  // their median
	// Low and High are the smallest and largest round's speedup: an
	// interval that holds the median speedup with probability Confidence
	// (1 - 2^(1-Rounds)), if the rounds are independent draws of one
	// distribution.
	Low        float64 `json:"speedup_low"`
	High       float64 `json:"speedup_high"`
	Confidence float64 `json:"confidence"`
	// Significant is false when the interval holds 1, when the filter was
	// never consulted, or when a round was too short to time (Verdict
	// says which).
	Significant bool   `json:"significant"`
	Verdict     string `json:"verdict"`
}

// minRoundTime is the shortest round with the filter from which the
// comparison calls a speedup a result: on a shared machine a shorter round
// is timed across a handful of scheduler time slices, and one slice lost
// to another job moves it by a factor (two identical --num=20000 runs once
// gave 0.57x and 1.82x from one round each).
const minRoundTime = 20 * time.Millisecond

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

// newFilterEffect compares readmissing's rounds with the filter and with
// none (with[i] and without[i] ran one after the other) and judges the
// speedup; nil when there is nothing to compare.
func newFilterEffect(p filter.Policy, with, without []*result) *filterEffect {
	if len(with) == 0 || len(with) != len(without) {
		return nil
	}
	fe := &filterEffect{Filter: describeShort(p), Lookups: with[0].Ops, Rounds: len(with), ShortestRound: with[0].Elapsed}
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
		fe.FilterChecks += w.ReadPath.FilterChecks
		fe.ShortestRound = min(fe.ShortestRound, w.Elapsed)
		fe.Speedups = append(fe.Speedups, n.MicrosPerOp/w.MicrosPerOp)
	}
	fe.WithOpsPerSec, fe.NoneOpsPerSec = median(wo), median(no)
	fe.WithBlocks, fe.NoneBlocks = median(wb), median(nb)
	fe.WithLookups, fe.NoneLookups = median(wl), median(nl)
	fe.WithFPR = median(fpr)
	sp := slices.Clone(fe.Speedups)
	fe.Speedup = median(sp)
	fe.Low, fe.High = sp[0], sp[len(sp)-1]
	fe.Confidence = 1 - math.Pow(2, float64(1-fe.Rounds))
	spread := fmt.Sprintf("median %.2fx of %d alternating rounds, which ranged %.2fx to %.2fx", fe.Speedup, fe.Rounds, fe.Low, fe.High)
	switch {
	case fe.FilterChecks == 0:
		fe.Verdict = fmt.Sprintf("not significant: the filter was never consulted, every key being still in the memtable (%s); use a larger --num or a smaller --write_buffer_size", spread)
	case fe.ShortestRound < minRoundTime:
		fe.Verdict = fmt.Sprintf("not significant: too little work to time, a round with the filter took %v (under %v) (%s); use a larger --num or --reads",
			fe.ShortestRound.Round(10*time.Microsecond), minRoundTime, spread)
	case fe.Low <= 1 && fe.High >= 1:
		fe.Verdict = fmt.Sprintf("not significant: the rounds fall on both sides of 1 (%s); use a larger --num or --reads, or a quieter machine", spread)
	default:
		fe.Significant = true
		how := fmt.Sprintf("%.2fx as fast", fe.Speedup)
		if fe.High < 1 {
			how = fmt.Sprintf("slower: %.2fx as fast", fe.Speedup)
		}
		fe.Verdict = fmt.Sprintf("the filter makes readmissing %s (%s: with %.0f%% confidence the median speedup lies in that range); measured fp rate %.3f%%",
			how, spread, 100*fe.Confidence, 100*fe.WithFPR)
	}
	return fe
}

// printFilterEffect prints readmissing with the configured filter and with
// none side by side (medians over the rounds), then the verdict on the
// speedup, and returns the comparison.
func printFilterEffect(out io.Writer, p filter.Policy, with, without []*result) *filterEffect {
	fe := newFilterEffect(p, with, without)
	if fe == nil {
		return nil
	}
	row := func(name string, ops, blocks, lookups float64) {
		fmt.Fprintf(out, "%-28s | %12.0f | %16.3f | %17.3f\n", name, ops, blocks, lookups)
	}
	fmt.Fprintf(out, "\nThe filter's effect on readmissing (%d lookups of absent keys, same keys, same store shape; medians of %d alternating rounds):\n", fe.Lookups, fe.Rounds)
	fmt.Fprintf(out, "%-28s | %12s | %16s | %17s\n", "filter", "ops/s", "file blocks/op", "block reads/op")
	fmt.Fprintf(out, "%s\n", strings.Repeat("-", 28+3+12+3+16+3+17))
	row(fe.Filter, fe.WithOpsPerSec, fe.WithBlocks, fe.WithLookups)
	row("none", fe.NoneOpsPerSec, fe.NoneBlocks, fe.NoneLookups)
	fmt.Fprintf(out, "(file blocks: data blocks read from table files; block reads: data blocks fetched, from the cache or the files)\n")
	fmt.Fprintln(out, fe.Verdict)
	return fe
}

// report is the --json document.
type report struct {
	Config jsonConfig `json:"config"`
	// ExistingStore describes the store --use_existing_db found.
	ExistingStore *storeInfo    `json:"existing_store,omitempty"`
	Results       []*result     `json:"results"`
	FilterEffect  *filterEffect `json:"filter_effect,omitempty"`
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
	// Issue 17: the key layout, the prefix and range filters and the
	// scans' parameters.
	PrefixSize           int     `json:"prefix_size"`
	KeysPerPrefix        int     `json:"keys_per_prefix"`
	PrefixExtractor      string  `json:"prefix_extractor,omitempty"`
	RangeFilterBits      int     `json:"range_filter_bits"`
	RangeFilter          string  `json:"range_filter"`
	SeekNexts            int     `json:"seek_nexts"`
	AbsentPrefixFraction float64 `json:"absent_prefix_fraction"`
	ScanWidth            int     `json:"scan_width"`
}

func (c *config) jsonConfig(dir string, p filter.Policy) jsonConfig {
	j := jsonConfig{
		Date: time.Now().Format(time.RFC3339), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(),
		Benchmarks: c.benchmarks, Num: c.num, Reads: c.reads, KeySize: keyLen, ValueSize: c.valueSize,
		CompressionRatio: c.compressionRatio, BloomBits: c.bloomBits, FilterPolicy: describePolicy(p),
		CacheSize: c.cacheSize, WriteBufferSize: c.writeBufferSize, BlockSize: c.blockSize,
		Threads: c.threads, Sync: c.sync, DB: dir, UseExistingDB: c.useExisting, Seed: c.seed,

		PrefixSize: c.prefixSize, KeysPerPrefix: c.keysPerPrefix, RangeFilterBits: c.rangeFilterBits,
		SeekNexts: c.seekNexts, AbsentPrefixFraction: c.absentPrefixFraction, ScanWidth: c.scanWidth,
	}
	if pr := c.prefix(); pr != nil {
		j.PrefixExtractor = pr.Name()
	}
	rp, _ := c.rangePolicy()
	j.RangeFilter = describeRange(rp, c.rangeFilterBits)
	return j
}

// printFilterExtras prints the header lines of the prefix and range
// filters, when the run uses them.
func printFilterExtras(out io.Writer, cfg *config, p filter.Policy) {
	if pr := cfg.prefix(); pr != nil {
		if filter.IsNone(p) {
			fmt.Fprintf(out, "Prefixes:   %s, but no filter holds them (--bloom_bits=0): no prefix filtering\n", pr.Name())
		} else {
			fmt.Fprintf(out, "Prefixes:   %s in every table's filter; prefix-bounded iterators ask it\n", pr.Name())
		}
	}
	if cfg.rangeFilterBits > 0 {
		rp, _ := cfg.rangePolicy()
		fmt.Fprintf(out, "Range:      %s; iterators with both bounds ask it\n", describeRange(rp, cfg.rangeFilterBits))
	}
}

func writeJSON(path string, rep *report) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// memoryLine reports, after a garbage collection, the Go heap in use next
// to what the store is meant to hold in memory: the block cache, the
// resident filters and indexes, and the memtables (the active one's size,
// and a full write buffer for a frozen one being flushed); and the filter
// bits per key over num keys (issue 20: filters within 5% of bits/key x
// keys / 8, the heap within 1.5x of the parts).
func memoryLine(m *db.Metrics, num int) string {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mem := m.MemTableBytes
	if m.ImmutableMemTables > 0 {
		mem += int64(m.ImmutableMemTables) * int64(m.MemTableBytes) // about a write buffer each
	}
	parts := m.BlockCacheSize + m.FilterBytes + m.IndexBytes + mem
	line := fmt.Sprintf("memory: Go heap in use %s; block cache %s + filters %s + indexes %s + memtables %s = %s",
		mib(int64(ms.HeapInuse)), mib(m.BlockCacheSize), mib(m.FilterBytes), mib(m.IndexBytes), mib(mem), mib(parts))
	if parts > 0 {
		line += fmt.Sprintf(" (heap/parts %.2fx)", float64(ms.HeapInuse)/float64(parts))
	}
	if num > 0 {
		line += fmt.Sprintf("; filters %.3f bits per --num key (%d; all in tables after fillseq)", float64(8*m.FilterBytes)/float64(num), num)
	}
	return line
}
