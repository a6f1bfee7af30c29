package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/workload"
	"github.com/bloomkv/bloomkv/vfs"
)

// benchKind says how a benchmark uses threads and which path line
// follows its result.
type benchKind int

const (
	kindWrite benchKind = iota // one goroutine; a write-path line follows
	kindRead                   // --threads goroutines; a read-path line follows
	kindOther                  // one call (compact, flush, stats)
)

// benchmark is one named workload, as db_bench defines it.
type benchmark struct {
	about string
	fresh bool // needs an empty store: the store is destroyed first, or the benchmark skipped with --use_existing_db
	kind  benchKind
	// withWriter adds one goroutine that writes random keys until the
	// reading goroutines are done (readwhilewriting); it is not measured.
	withWriter bool
	// ops is the number of operations one goroutine does, for progress.
	ops func(c *config) int
	run func(b *bench, t *thread) error
}

func numOps(c *config) int  { return c.num }
func readOps(c *config) int { return c.reads }
func syncOps(c *config) int { return max(c.num/100, 1) }
func bigOps(c *config) int  { return max(c.num/1000, 1) }
func oneOp(c *config) int   { return 1 }

// bigValue is fill100K's value size.
const bigValue = 100_000

var benchmarks = map[string]benchmark{
	"fillseq": {"write --num values in key order", true, kindWrite, false, numOps,
		func(b *bench, t *thread) error {
			return b.write(t, false, numOps(b.cfg), 1, b.cfg.valueSize, b.cfg.sync)
		}},
	"fillrandom": {"write --num values in random key order", true, kindWrite, false, numOps,
		func(b *bench, t *thread) error {
			return b.write(t, true, numOps(b.cfg), 1, b.cfg.valueSize, b.cfg.sync)
		}},
	"fillsync": {"write --num/100 values in random key order, syncing each", true, kindWrite, false, syncOps,
		func(b *bench, t *thread) error { return b.write(t, true, syncOps(b.cfg), 1, b.cfg.valueSize, true) }},
	"fillbatch": {"write --num values in key order, 1000 per batch", true, kindWrite, false, numOps,
		func(b *bench, t *thread) error {
			return b.write(t, false, numOps(b.cfg), 1000, b.cfg.valueSize, b.cfg.sync)
		}},
	"fill100K": {"write --num/1000 values of 100,000 bytes in random key order", true, kindWrite, false, bigOps,
		func(b *bench, t *thread) error { return b.write(t, true, bigOps(b.cfg), 1, bigValue, b.cfg.sync) }},
	"overwrite": {"write --num values in random key order over the existing store", false, kindWrite, false, numOps,
		func(b *bench, t *thread) error {
			return b.write(t, true, numOps(b.cfg), 1, b.cfg.valueSize, b.cfg.sync)
		}},
	"deleteseq": {"delete --num keys in key order", false, kindWrite, false, numOps,
		func(b *bench, t *thread) error { return b.delete(t, false) }},
	"deleterandom": {"delete --num keys in random order", false, kindWrite, false, numOps,
		func(b *bench, t *thread) error { return b.delete(t, true) }},
	"readseq": {"iterate --reads entries forward from the first", false, kindRead, false, readOps,
		func(b *bench, t *thread) error { return b.scan(t, true) }},
	"readreverse": {"iterate --reads entries backward from the last", false, kindRead, false, readOps,
		func(b *bench, t *thread) error { return b.scan(t, false) }},
	"readrandom": {"get --reads random keys of the key range", false, kindRead, false, readOps,
		func(b *bench, t *thread) error { return b.readRandom(t, readPresent) }},
	"readmissing": {"get --reads absent keys: a real key with its last byte dropped", false, kindRead, false, readOps,
		func(b *bench, t *thread) error { return b.readRandom(t, readMissing) }},
	"readhot": {"get --reads random keys of the first 1% of the key range", false, kindRead, false, readOps,
		func(b *bench, t *thread) error { return b.readRandom(t, readHot) }},
	"multiget": {"DB.MultiGet of --reads random keys of the key range, --batch_size a call", false, kindRead, false, readOps,
		func(b *bench, t *thread) error { return b.multiGet(t, readPresent) }},
	"multimissing": {"DB.MultiGet of --reads absent keys (as readmissing), --batch_size a call", false, kindRead, false, readOps,
		func(b *bench, t *thread) error { return b.multiGet(t, readMissing) }},
	"seekrandom": {"seek a new iterator to --reads random keys, then --seek_nexts Next calls; with --prefix_size the iterator is bounded to the key's prefix", false, kindRead, false, readOps,
		func(b *bench, t *thread) error { return b.seekRandom(t) }},
	"seekprefix": {"scan --reads whole prefixes (--prefix_size) through iterators bounded by db.PrefixBounds; --absent_prefix_fraction of them absent but among the real ones", false, kindRead, false, readOps,
		func(b *bench, t *thread) error { return b.seekPrefix(t) }},
	"scanempty": {"scan --reads bounded ranges of --scan_width keys that lie between real keys and hold none", false, kindRead, false, readOps,
		func(b *bench, t *thread) error { return b.scanEmpty(t) }},
	"scanshort": {"scan --reads bounded ranges [key(k), key(k+--scan_width)) of random k", false, kindRead, false, readOps,
		func(b *bench, t *thread) error { return b.scanShort(t) }},
	"readwhilewriting": {"readrandom in --threads goroutines while one more writes random keys", false, kindRead, true, readOps,
		func(b *bench, t *thread) error { return b.readRandom(t, readPresent) }},
	"compact": {"compact the whole key range (DB.CompactRange(nil, nil))", false, kindOther, false, oneOp,
		func(b *bench, t *thread) error { return b.compact(t) }},
	"waitforcompaction": {"wait until no flush or compaction runs and the tree needs none (RocksDB db_bench's name)", false, kindOther, false, oneOp,
		func(b *bench, t *thread) error { t.ops = 1; return b.d.WaitForCompactions() }},
	"flush": {"flush the memtable to a level-0 table", false, kindOther, false, oneOp,
		func(b *bench, t *thread) error { t.ops = 1; return b.d.Flush() }},
	"stats": {"print the store's metrics", false, kindOther, false, oneOp,
		func(b *bench, t *thread) error { t.ops = 1; return nil }},
}

func benchmarkNames() []string {
	var names []string
	for n := range benchmarks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// step is one benchmark of a run; index is its place in --benchmarks.
// Its random keys depend on its name, the thread and --seed only (see
// newThread), not on its place: a benchmark draws the same keys wherever it
// runs, in this process or the next.
type step struct {
	name  string
	index int
}

func parseBenchmarks(s string) ([]step, error) {
	var steps []step
	for i, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if _, ok := benchmarks[n]; !ok {
			return nil, fmt.Errorf("unknown benchmark %q (have %s)", n, strings.Join(benchmarkNames(), ", "))
		}
		steps = append(steps, step{n, i})
	}
	return steps, nil
}

// bench is the state of one run over one store.
type bench struct {
	cfg    *config
	keys   keyLayout
	dir    string
	policy filter.Policy
	d      *db.DB
	used   bool // a benchmark has run on d
	out    io.Writer
	errOut io.Writer
	quiet  bool // print no result lines (the no-filter comparison run)
}

// thread is one goroutine's share of a benchmark: its own random source,
// value generator, key buffer and counters.
type thread struct {
	id       int
	rng      *rand.Rand
	gen      *workload.ValueGen
	key      [keyLen]byte
	hi       [keyLen]byte // a scan's upper bound
	ops      int64
	bytes    int64
	found    int64
	scanned  int64 // entries the scans returned
	hist     *histogram
	elapsed  time.Duration
	progress atomic.Int64
	// --multiget_vs_get: the keys of the loop-of-Get batches; the time of
	// those batches, drawing their keys included (not in elapsed); the
	// time of the Get and MultiGet calls alone.
	loopKeys              int64
	excluded              time.Duration
	loopCalls, multiCalls time.Duration
	_                     [64]byte // keep threads' hot counters apart
}

// newThread makes thread id of step s. Its random source is seeded from
// --seed, the benchmark's name and the thread: readrandom after fillrandom
// draws keys unrelated to those fillrandom wrote (about 1-1/e of --num
// distinct keys were written, so about 63% are found), whether the two
// run in one process or in two with --use_existing_db.
func newThread(cfg *config, s step, id int) *thread {
	seed := streamSeed(cfg.seed, keyStream(s.name))
	t := &thread{
		id:  id,
		rng: rand.New(rand.NewPCG(seed, uint64(id)+1)),
		gen: workload.NewValueGen(seed^uint64(id)<<32, cfg.compressionRatio),
	}
	if cfg.histogram || cfg.reportPath != "" {
		t.hist = newHistogram()
	}
	return t
}

// start returns the time an operation starts when latencies are kept, and
// the zero time (for free) when they are not.
func (t *thread) start() time.Time {
	if t.hist != nil {
		return time.Now()
	}
	return time.Time{}
}

// finish counts n operations that began at st.
func (t *thread) finish(n int64, st time.Time) {
	if t.hist != nil {
		t.hist.add(time.Since(st))
	}
	t.ops += n
	if t.ops&255 == 0 || n > 1 {
		t.progress.Store(t.ops)
	}
}

// write writes n values of valueSize bytes, perBatch to a Write, to keys
// in order (key i) or drawn at random from [0, --num).
func (b *bench) write(t *thread, random bool, n, perBatch, valueSize int, sync bool) error {
	wo := &db.WriteOptions{Sync: sync}
	var batch db.Batch
	for i := 0; i < n; i += perBatch {
		st := t.start()
		m := min(perBatch, n-i)
		if perBatch == 1 {
			k := i
			if random {
				k = t.rng.IntN(b.cfg.num)
			}
			v := t.gen.Next(valueSize)
			if err := b.d.Put(b.keys.key(t.key[:], k), v, wo); err != nil {
				return err
			}
			t.bytes += int64(keyLen + len(v))
		} else {
			batch.Reset()
			for j := i; j < i+m; j++ {
				k := j
				if random {
					k = t.rng.IntN(b.cfg.num)
				}
				v := t.gen.Next(valueSize)
				batch.Put(b.keys.key(t.key[:], k), v)
				t.bytes += int64(keyLen + len(v))
			}
			if err := b.d.Write(&batch, wo); err != nil {
				return err
			}
		}
		t.finish(int64(m), st)
	}
	return nil
}

func (b *bench) delete(t *thread, random bool) error {
	wo := &db.WriteOptions{Sync: b.cfg.sync}
	for i := 0; i < b.cfg.num; i++ {
		st := t.start()
		k := i
		if random {
			k = t.rng.IntN(b.cfg.num)
		}
		if err := b.d.Delete(b.keys.key(t.key[:], k), wo); err != nil {
			return err
		}
		t.finish(1, st)
	}
	return nil
}

type readMode int

const (
	readPresent readMode = iota // a random key of [0, --num)
	readMissing                 // the same with its last byte dropped
	readHot                     // a random key of the first 1%
)

func (b *bench) readRandom(t *thread, mode readMode) error {
	n := b.cfg.num
	if mode == readHot {
		n = hotRange(n)
	}
	for i := 0; i < b.cfg.reads; i++ {
		k := t.rng.IntN(n)
		var key []byte
		if mode == readMissing {
			key = b.keys.key(t.key[:], k)[:keyLen-1]
		} else {
			key = b.keys.key(t.key[:], k)
		}
		st := t.start()
		v, err := b.d.Get(key, nil)
		switch {
		case err == nil:
			t.found++
			t.bytes += int64(len(key) + len(v))
		case !errors.Is(err, db.ErrNotFound):
			return err
		}
		t.finish(1, st)
	}
	return nil
}

// multiGet reads the keys readRandom would, --batch_size to a
// DB.MultiGet call; an op is one key, so micros/op compares with
// readrandom's (and multimissing's with readmissing's).
func (b *bench) multiGet(t *thread, mode readMode) error {
	size := b.cfg.batchSize
	arena := make([]byte, size*keyLen)
	keys := make([][]byte, 0, size)
	// The results are the caller's arrays, reused from batch to batch, as
	// db_bench's multireadrandom reuses its values and statuses
	// (--multiget_alloc: DB.MultiGet's new slices a batch instead).
	valueBuf, errBuf := make([][]byte, size), make([]error, size)
	for done, batch := 0, 0; done < b.cfg.reads; done, batch = done+len(keys), batch+1 {
		var t0 time.Time
		if b.cfg.multiGetVsGet {
			t0 = time.Now()
		}
		keys = keys[:0]
		for j := 0; j < size && done+j < b.cfg.reads; j++ {
			k := t.rng.IntN(b.cfg.num)
			if mode == readMissing {
				keys = append(keys, b.keys.key(arena[j*keyLen:], k)[:keyLen-1])
			} else {
				keys = append(keys, b.keys.key(arena[j*keyLen:], k))
			}
		}
		var t1 time.Time
		if b.cfg.multiGetVsGet {
			// Batches 2p and 2p+1 are a pair; the loop of Get takes the
			// first of an even pair and the second of an odd one.
			t1 = time.Now()
			if pair := batch / 2; (pair+batch%2)%2 == 0 {
				for _, k := range keys {
					if _, err := b.d.Get(k, nil); err != nil && !errors.Is(err, db.ErrNotFound) {
						return err
					}
				}
				t.loopCalls += time.Since(t1)
				t.excluded += time.Since(t0)
				t.loopKeys += int64(len(keys))
				continue
			}
		}
		st := t.start()
		values, errs := valueBuf[:len(keys)], errBuf[:len(keys)]
		if b.cfg.multiGetAlloc {
			values, errs = b.d.MultiGet(keys, nil)
		} else if err := b.d.MultiGetInto(keys, values, errs, nil); err != nil {
			return err
		}
		for i, err := range errs {
			switch {
			case err == nil:
				t.found++
				t.bytes += int64(len(keys[i]) + len(values[i]))
			case !errors.Is(err, db.ErrNotFound):
				return err
			}
		}
		if b.cfg.multiGetVsGet {
			t.multiCalls += time.Since(t1)
		}
		t.finish(int64(len(keys)), st)
	}
	return nil
}

func (b *bench) scan(t *thread, forward bool) error {
	it := b.d.NewIterator(nil)
	st := t.start()
	ok := it.First()
	if !forward {
		ok = it.Last()
	}
	for ; ok && t.ops < int64(b.cfg.reads); ok = advance(it, forward) {
		t.bytes += int64(len(it.Key()) + len(it.Value()))
		t.finish(1, st)
		st = t.start()
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

func advance(it *db.Iterator, forward bool) bool {
	if forward {
		return it.Next()
	}
	return it.Prev()
}

// compactor is the method compact calls. DB.CompactRange is recent; when
// the engine lacks it, compact flushes the memtable instead and says so.
type compactor interface {
	CompactRange(start, limit []byte) error
}

func (b *bench) compact(t *thread) error {
	t.ops = 1
	if c, ok := any(b.d).(compactor); ok {
		return c.CompactRange(nil, nil)
	}
	fmt.Fprintf(b.errOut, "compact: this engine has no DB.CompactRange; flushing the memtable instead\n")
	return b.d.Flush()
}

// runAll runs the steps in order on the store in b.dir, printing each
// result, and returns the results.
func (b *bench) runAll(steps []step) ([]*result, error) {
	var results []*result
	for _, s := range steps {
		r, err := b.runOne(s)
		if err != nil {
			return results, fmt.Errorf("%s: %w", s.name, err)
		}
		results = append(results, r)
		if !b.quiet {
			printResult(b.out, r, b.cfg.histogram)
			if s.name == "stats" {
				fmt.Fprint(b.out, r.after.String())
				fmt.Fprintln(b.out, memoryLine(r.after, b.cfg.num))
			}
		}
	}
	return results, nil
}

// open opens the store in b.dir. With --use_existing_db the store must
// exist: a mistyped --db is an error, not a new empty store.
func (b *bench) open() error {
	o := b.cfg.options(b.policy)
	o.ErrorIfMissing = b.cfg.useExisting
	d, err := db.Open(b.dir, o)
	if errors.Is(err, db.ErrDBMissing) {
		return fmt.Errorf("--use_existing_db: no store at %s (no such directory, or no CURRENT file in it); check the path, or run a fill benchmark without --use_existing_db first", b.dir)
	}
	if err != nil {
		return err
	}
	b.d, b.used = d, false
	return nil
}

func (b *bench) close() error {
	if b.d == nil {
		return nil
	}
	err := b.d.Close()
	b.d = nil
	return err
}

func (b *bench) runOne(s step) (*result, error) {
	bm := benchmarks[s.name]
	if bm.fresh {
		if b.cfg.useExisting {
			return &result{Name: s.name, Skipped: "--use_existing_db"}, nil
		}
		if b.used {
			if err := b.close(); err != nil {
				return nil, err
			}
			if _, err := removeStore(b.dir); err != nil {
				return nil, err
			}
		}
	}
	if b.d == nil {
		if err := b.open(); err != nil {
			return nil, err
		}
	}
	b.used = true
	var waited time.Duration
	if bm.kind == kindRead && b.cfg.waitCompactions {
		var err error
		if waited, err = b.settle(s.name); err != nil {
			return nil, err
		}
	}

	nthreads := 1
	if bm.kind == kindRead {
		nthreads = b.cfg.threads
	}
	threads := make([]*thread, nthreads)
	for i := range threads {
		threads[i] = newThread(b.cfg, s, i)
	}
	r := &result{Name: s.name, Kind: bm.kind, Threads: nthreads, WaitedForCompactions: waited, before: b.d.Metrics()}
	prog := startProgress(b.errOut, s.name, int64(bm.ops(b.cfg)*nthreads), func() int64 {
		var n int64
		for _, t := range threads {
			n += t.progress.Load()
		}
		return n
	})

	var stopWriter atomic.Bool
	var writerErr error
	var writerWG sync.WaitGroup
	if bm.withWriter {
		w := newThread(b.cfg, s, nthreads)
		w.hist = nil
		writerWG.Add(1)
		go func() {
			defer writerWG.Done()
			wo := &db.WriteOptions{Sync: b.cfg.sync}
			for !stopWriter.Load() {
				if err := b.d.Put(b.keys.key(w.key[:], w.rng.IntN(b.cfg.num)), w.gen.Next(b.cfg.valueSize), wo); err != nil {
					writerErr = err
					return
				}
				w.ops++
			}
			r.WriterOps = w.ops
		}()
	}

	errs := make([]error, nthreads)
	var wg sync.WaitGroup
	start := time.Now()
	for i, t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := time.Now()
			errs[i] = bm.run(b, t)
			t.elapsed = time.Since(st) - t.excluded
		}()
	}
	wg.Wait()
	r.Elapsed = time.Since(start)
	stopWriter.Store(true)
	writerWG.Wait()
	prog.done()
	r.after = b.d.Metrics()
	if err := errors.Join(append(errs, writerErr)...); err != nil {
		return nil, err
	}
	r.merge(threads)
	return r, nil
}

// settle waits, as db_bench does before its reads, until the store's
// flushes and compactions are done, so that reads are measured on a
// settled tree and the read-path counters are not mixed with the
// compactions of what came before. It says so on errOut when the wait was
// noticeable, and returns how long it waited.
func (b *bench) settle(name string) (time.Duration, error) {
	st := time.Now()
	if err := b.d.WaitForCompactions(); err != nil {
		return 0, fmt.Errorf("waiting for compactions: %w", err)
	}
	w := time.Since(st)
	if w > 10*time.Millisecond && !b.quiet {
		fmt.Fprintf(b.errOut, "%s: waited %v for the store's compactions (--wait_for_compactions=false to not wait)\n", name, w.Round(time.Millisecond))
	}
	return w, nil
}

// keyStream names the key stream a benchmark draws: its own, except for the
// MultiGet benchmarks, which draw the keys of their Get counterparts so
// the two compare on the same keys.
func keyStream(name string) string {
	switch name {
	case "multiget":
		return "readrandom"
	case "multimissing":
		return "readmissing"
	}
	return name
}

// streamSeed mixes --seed and a benchmark's name into the seed of its key
// stream (FNV-1a over the name, then a 64-bit finalizer).
func streamSeed(seed uint64, name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	h ^= seed * 0x9e3779b97f4a7c15
	h ^= h >> 31
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>29
}

// storeFile reports whether name is a file a bloomkv store keeps in its
// directory (the names package db gives them).
func storeFile(name string) bool {
	switch name {
	case "CURRENT", "LOCK", "LOG", "LOG.old", "CHECKPOINT-INCOMPLETE":
		return true
	}
	if n, ok := strings.CutPrefix(name, "MANIFEST-"); ok {
		return allDigits(n)
	}
	num, ext, ok := strings.Cut(name, ".")
	return ok && allDigits(num) && (ext == "log" || ext == "sst" || ext == "dbtmp")
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// removeStore removes the store in dir, as db_bench's DestroyDB does
// before a fresh benchmark, and reports whether there was one. It leaves
// dir itself, empty (it may be a mount point or a symbolic link), and a
// missing or empty dir is no error. It removes nothing, and says why, when
// dir holds anything but a store's files (a mistyped --db must not wipe
// someone's files): an entry that is not a regular file with a store's
// name, or no CURRENT. It takes the store's LOCK first, so a store that
// another process has open is refused too.
func removeStore(dir string) (removed bool, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("--db %s: %w", dir, err)
	}
	if len(entries) == 0 {
		return false, nil
	}
	current := false
	for _, e := range entries {
		if !e.Type().IsRegular() || !storeFile(e.Name()) {
			return false, fmt.Errorf("refusing to remove %s: it holds %s, which is not a bloomkv store's file (is --db right?)", dir, e.Name())
		}
		current = current || e.Name() == "CURRENT"
	}
	if !current {
		return false, fmt.Errorf("refusing to remove %s: it holds files but no store (no CURRENT file)", dir)
	}
	lockPath := filepath.Join(dir, "LOCK")
	lock, err := vfs.Default.Lock(lockPath)
	if err != nil {
		return false, fmt.Errorf("refusing to remove the store at %s: %w", dir, err)
	}
	defer func() {
		if cerr := lock.Close(); err == nil {
			err = cerr
		}
		if removed && err == nil {
			err = os.Remove(lockPath)
		}
	}()
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, err
		}
	}
	return true, nil
}

// usageError is a bad flag value: kvbench exits with status 2 for it, as
// for a flag it does not know, and 1 for a failure of the run.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// run is kvbench without the subcommand: it runs --benchmarks and prints
// the results to out, progress to errOut.
func run(cfg *config, out, errOut io.Writer) error {
	if err := cfg.validate(); err != nil {
		return usageError{err}
	}
	steps, err := parseBenchmarks(cfg.benchmarks)
	if err != nil {
		return usageError{err}
	}
	for _, s := range steps {
		if needsPrefix(s.name) && cfg.prefixSize <= 0 {
			return usageError{fmt.Errorf("%s scans prefixes: it needs --prefix_size > 0 (--prefix_size=8 makes 16 keys per prefix)", s.name)}
		}
	}
	policy, err := cfg.policy()
	if err != nil {
		return usageError{err}
	}
	var page *reportTarget
	if cfg.reportPath != "" {
		// Before anything else: a page that cannot be written is known
		// before the store is touched or a benchmark runs.
		if page, err = newReportTarget(cfg.reportPath, cfg.dbPath); err != nil {
			return err
		}
	}
	dir := cfg.dbPath
	if dir == "" {
		tmp, err := os.MkdirTemp("", "kvbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = filepath.Join(tmp, "db")
	} else if !cfg.useExisting {
		removed, err := removeStore(dir)
		if err != nil {
			return err
		}
		if removed {
			fmt.Fprintf(errOut, "kvbench: removed the existing store at %s (use --use_existing_db to keep it)\n", dir)
		}
	}
	b := &bench{cfg: cfg, keys: cfg.layout(), dir: dir, policy: policy, out: out, errOut: errOut}
	defer b.close()
	var existing *storeInfo
	if cfg.useExisting {
		// Open first: a missing store is an error before any output, and
		// the header describes the store as this run finds it (its logs
		// replayed into tables, its compactions done unless told not to
		// wait).
		if err := b.open(); err != nil {
			return err
		}
		if cfg.waitCompactions {
			if _, err := b.settle("open"); err != nil {
				return err
			}
		}
		existing = describeStore(dir)
	}
	var header strings.Builder
	if page != nil {
		printHeader(cfg, io.MultiWriter(out, &header), dir, policy, existing)
	} else {
		printHeader(cfg, out, dir, policy, existing)
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if cfg.tracePath != "" {
		f, err := os.Create(cfg.tracePath)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	results, err := b.runAll(steps)
	if cfg.memProfile != "" && err == nil {
		err = writeHeapProfile(cfg.memProfile)
	}
	if cerr := b.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	rep := &report{Config: cfg.jsonConfig(dir, policy), ExistingStore: existing, Results: results}

	i := comparisonEnd(steps)
	if cfg.compare && i >= 0 && cfg.reads == 0 {
		fmt.Fprintf(errOut, "no comparison with and without the filter: --reads=0 leaves readmissing nothing to time\n")
	} else if cfg.compare && i >= 0 && !filter.IsNone(policy) && !cfg.useExisting {
		fe, err := compareNoFilter(cfg, policy, steps, i, out, errOut)
		if err != nil {
			return fmt.Errorf("no-filter comparison: %w", err)
		}
		rep.FilterEffect = fe
	}
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, rep); err != nil {
			return err
		}
	}
	if page != nil {
		pg := &reportPage{rep: rep, header: header.String(), flags: flagValues(cfg)}
		for _, r := range results {
			pg.hists = append(pg.hists, r.hist)
		}
		var buf bytes.Buffer
		if err := writeHTMLReport(&buf, pg); err != nil {
			return err
		}
		if err := page.write(buf.Bytes()); err != nil {
			return err
		}
		fmt.Fprintf(errOut, "kvbench: wrote the report to %s\n", page.path)
	}
	return nil
}

// comparisonRounds is how many times the comparison runs readmissing on
// each of its two stores, alternating, so that both see the same noise.
const comparisonRounds = 5

// compareNoFilter builds two stores as steps[start..end-1] build them, one
// with the run's filter and one with none, then runs readmissing (steps[end])
// on each in comparisonRounds alternating rounds, and prints the medians and
// the spread of the ratio: a figure from one pair of runs on a noisy
// machine is not a result (two identical small runs once gave 0.57x and
// 1.82x).
func compareNoFilter(cfg *config, policy filter.Policy, steps []step, end int, out, errOut io.Writer) (*filterEffect, error) {
	start := comparisonStart(steps, end)
	fmt.Fprintf(errOut, "comparing readmissing with and without the filter: building two stores with %s, then %d alternating rounds...\n",
		joinSteps(steps[start:end]), comparisonRounds)
	tmp, err := os.MkdirTemp("", "kvbench-compare-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	with := &bench{cfg: cfg, keys: cfg.layout(), dir: filepath.Join(tmp, "filter"), policy: policy, out: io.Discard, errOut: errOut, quiet: true}
	none := &bench{cfg: cfg, keys: cfg.layout(), dir: filepath.Join(tmp, "none"), policy: filter.None, out: io.Discard, errOut: errOut, quiet: true}
	defer with.close()
	defer none.close()
	for _, b := range []*bench{with, none} {
		if _, err := b.runAll(steps[start:end]); err != nil {
			return nil, err
		}
	}
	var withRes, noneRes []*result
	for r := 0; r < comparisonRounds; r++ {
		for _, b := range []*bench{with, none} {
			res, err := b.runOne(steps[end])
			if err != nil {
				return nil, err
			}
			if b == with {
				withRes = append(withRes, res)
			} else {
				noneRes = append(noneRes, res)
			}
		}
	}
	return printFilterEffect(out, policy, withRes, noneRes), nil
}

// comparisonEnd is the index of the first readmissing step, or -1.
func comparisonEnd(steps []step) int {
	for i, s := range steps {
		if s.name == "readmissing" {
			return i
		}
	}
	return -1
}

// comparisonStart is where the no-filter repeat of steps[:end+1] may
// start: the last benchmark before end that begins from an empty store
// (what came before it left nothing behind), or 0.
func comparisonStart(steps []step, end int) int {
	for i := end; i >= 0; i-- {
		if benchmarks[steps[i].name].fresh {
			return i
		}
	}
	return 0
}

func joinSteps(steps []step) string {
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.name
	}
	return strings.Join(names, ",")
}

// writeHeapProfile writes the live heap (after a collection) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
