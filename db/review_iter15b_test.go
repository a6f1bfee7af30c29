package db

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// Review 15b: processorsBusy (cpubusy.go, b73453c), the process-wide
// sampler of the machine's runnable threads that makes MultiGet read alone
// while every processor is taken.

// r15bSource makes processorsBusy's samples come from src (nil: the real
// /proc/loadavg) with the average started at avg16 (×16) and the sample
// stale, and restores source, average and deadline when the test ends.
func r15bSource(t *testing.T, src func() (int64, bool), avg16 int64) {
	t.Helper()
	processorsBusy() // the once
	oldSrc, oldAvg, oldNext := cpuLoad.source.Load(), cpuLoad.avg.Load(), cpuLoad.next.Load()
	if src == nil {
		cpuLoad.source.Store(nil)
	} else {
		cpuLoad.source.Store(&src)
	}
	cpuLoad.avg.Store(avg16)
	cpuLoad.next.Store(0)
	t.Cleanup(func() {
		cpuLoad.source.Store(oldSrc)
		cpuLoad.avg.Store(oldAvg)
		cpuLoad.next.Store(oldNext)
	})
}

// r15bSamples takes k samples in a row (each made stale first) and
// returns the last answer.
func r15bSamples(k int) bool {
	var busy bool
	for range k {
		cpuLoad.next.Store(0)
		busy = processorsBusy()
	}
	return busy
}

// TestReview15bBusyWithExactlyNCPURunnable: the change documents that
// processorsBusy is busy "once the runnable threads other than the
// helpers reach the processors' count" (cpubusy_test.go) and that spread
// reads alone "while they reach the processors' count" (commit message,
// Options.MultiGetParallelism: "at least as many as its processors").
// With exactly NumCPU runnable threads sampled again and again, every
// processor is taken, and the average (3a + 16n)/4 should settle at 16n.
// It does not: the integer division rounds down each step, and from below
// the average stops 1-3 short of 16n (for n = 2: 0, 8, 14, 18, 21, 23, 25,
// 26, 27, 28, 29, 29, ...), so processorsBusy never says busy. From above
// the same samples settle at exactly 16n, busy: the same steady load gets
// two answers depending on what came before.
func TestReview15bBusyWithExactlyNCPURunnable(t *testing.T) {
	ncpu := int64(runtime.NumCPU())
	fromBelow := func() (bool, int64) {
		r15bSource(t, func() (int64, bool) { return ncpu, true }, 0)
		busy := r15bSamples(200)
		return busy, cpuLoad.avg.Load()
	}
	fromAbove := func() (bool, int64) {
		r15bSource(t, func() (int64, bool) { return ncpu, true }, 16*(ncpu+8))
		busy := r15bSamples(200)
		return busy, cpuLoad.avg.Load()
	}
	ba, aa := fromAbove()
	bb, ab := fromBelow()
	if !ba || !bb {
		t.Fatalf("%d runnable threads (none a helper) on %d processors, 200 samples: busy %v (average %d/16) coming from idle, %v (average %d/16) coming from busy; want busy both ways (threshold %d/16)",
			ncpu, ncpu, bb, ab, ba, aa, 16*ncpu)
	}
}

// TestReview15bAverageConverges: for any steady count n the average must
// end within rounding of 16n, from any start, and so say busy exactly when
// n >= NumCPU; it never goes negative.
func TestReview15bAverageConverges(t *testing.T) {
	ncpu := int64(runtime.NumCPU())
	for _, n := range []int64{0, 1, ncpu - 1, ncpu, ncpu + 1, 2 * ncpu, 1000, 999999999} {
		for _, start := range []int64{0, 16 * n, 16 * (n + 100), 16 * 999999999} {
			r15bSource(t, func() (int64, bool) { return n, true }, start)
			busy := r15bSamples(300)
			avg := cpuLoad.avg.Load()
			if avg < 0 || avg < 16*n-3 || avg > 16*n+3 {
				t.Errorf("n=%d from %d: average %d/16 after 300 samples", n, start, avg)
			}
			// n == ncpu from below is TestReview15bBusyWithExactlyNCPURunnable.
			if want := n >= ncpu; busy != want && !(n == ncpu && start < 16*n) {
				t.Errorf("n=%d (ncpu %d) from average %d/16: busy %v, want %v (average %d/16)", n, ncpu, start, busy, want, avg)
			}
		}
	}
}

// TestReview15bUnreadableSampleKeepsAverage: a sample that cannot be read
// leaves the average as it was (and the deadline moves on, so a failing
// source is not asked on every MultiGet); negative counts and counts below
// the awake helpers count as zero; the average never goes negative.
func TestReview15bUnreadableSampleKeepsAverage(t *testing.T) {
	ncpu := int64(runtime.NumCPU())
	var calls atomic.Int64
	for _, start := range []int64{0, 16*ncpu - 1, 16 * ncpu, 16 * (ncpu + 3), 16 * 999999999} {
		r15bSource(t, func() (int64, bool) { calls.Add(1); return 1 << 40, false }, start)
		for range 50 {
			cpuLoad.next.Store(0)
			if got, want := processorsBusy(), start >= 16*ncpu; got != want {
				t.Fatalf("average %d/16 with unreadable samples: busy %v, want %v", start, got, want)
			}
			if a := cpuLoad.avg.Load(); a != start {
				t.Fatalf("an unreadable sample moved the average from %d to %d", start, a)
			}
		}
		// A fresh deadline: the next 100 calls take no sample.
		c := calls.Load()
		for range 100 {
			processorsBusy()
		}
		if d := calls.Load() - c; d > 1 {
			t.Fatalf("%d unreadable samples in 100 calls within %v", d, busySampleEvery)
		}
	}
	for _, n := range []int64{-1, math.MinInt64 / 32, -999999999} {
		r15bSource(t, func() (int64, bool) { return n, true }, 16*ncpu)
		r15bSamples(100)
		if a := cpuLoad.avg.Load(); a < 0 || a > 3 {
			t.Fatalf("sampling %d runnable: average %d/16, want 0 (within rounding)", n, a)
		}
	}
	// More helpers awake than runnable threads: not negative, and at most
	// the runnable count.
	cpuLoad.awake.Add(50)
	func() {
		defer cpuLoad.awake.Add(-50)
		r15bSource(t, func() (int64, bool) { return 3, true }, 0)
		r15bSamples(100)
		if a := cpuLoad.avg.Load(); a < 0 || a > 16*3+3 {
			t.Fatalf("3 runnable, 50 helpers awake: average %d/16", a)
		}
	}()
}

// refParseRunnable is the reference reading of /proc/loadavg: the fourth
// field (fields split at single spaces) is digits, a slash and anything;
// the digits, 1 to 9 of them, are the count.
func refParseRunnable(b []byte) (int64, bool) {
	fields := bytes.Split(b, []byte(" "))
	if len(fields) < 4 {
		return 0, false
	}
	f := fields[3]
	slash := bytes.IndexByte(f, '/')
	if slash < 1 || slash > 9 {
		return 0, false
	}
	var n int64
	for _, c := range f[:slash] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = 10*n + int64(c-'0')
	}
	return n, true
}

// FuzzParseRunnable: parseRunnable never panics and agrees with the
// reference parser.
func FuzzParseRunnable(f *testing.F) {
	for _, s := range []string{
		"0.52 0.69 0.37 2/75 7749\n",
		"12.00 9.10 8.42 130/2048 99999\n",
		"0.00 0.00 0.00 0/1 1",
		"0.52 0.69 0.37 2",
		"0.52 0.69 0.37 /75 7749",
		"0.52 0.69 0.37 x/75 7749",
		"0.52 0.69",
		"",
		" ",
		"   ",
		"    ",
		"   1/",
		"   /",
		"0.52 0.69 0.37 1234567890123/75 1",
		"0.52 0.69 0.37 123456789/75 1",
		"0.52 0.69 0.37 1234567890/75 1",
		"0.52  0.69 0.37 2/75 7749",
		"0.52 0.69 0.37  2/75 7749",
		"0.52\t0.69 0.37 2/75 7749",
		"a b c 1/ d",
		"a b c 0001/2",
		"a b c 1//",
		"a b c 1 /",
		"a b c 12a/3",
		"a b c 9/",
		"a b c 999999999/1",
		"a b c -1/2",
		"a b c +1/2",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseRunnable(b)
		want, wok := refParseRunnable(b)
		if got != want || ok != wok {
			t.Fatalf("parseRunnable(%q) = %d, %v; reference %d, %v", b, got, ok, want, wok)
		}
		if ok && (got < 0 || got > 999999999) {
			t.Fatalf("parseRunnable(%q) = %d", b, got)
		}
	})
}

// TestReview15bParseRunnableBuffer: the sampler reads at most 128 bytes
// of /proc/loadavg; what parseRunnable is given is a prefix of the file,
// and a prefix cut inside the fourth field must not read as a count.
func TestReview15bParseRunnableBuffer(t *testing.T) {
	line := []byte("12.00 9.10 8.42 130/2048 99999\n")
	for i := 0; i <= len(line); i++ {
		n, ok := parseRunnable(line[:i])
		wantOK := i > len("12.00 9.10 8.42 130")
		if ok != wantOK || ok && n != 130 {
			t.Errorf("parseRunnable(%q) = %d, %v", line[:i], n, ok)
		}
	}
}

// r15bHelpersTotal is the most helpers that can be awake across dbs.
func r15bHelpersTotal(dbs []*DB) int64 {
	var n int64
	for _, d := range dbs {
		if d.helpers != nil {
			n += int64(d.helpers.n)
		}
	}
	return n
}

// TestReview15bAwakeBalanced: DBs of every MultiGetParallelism from 1 to 8
// (and GOMAXPROCS changing under them) serve MultiGets from several
// goroutines while the source flips between busy and idle, and are closed
// while MultiGets run. cpuLoad.awake stays within [0, helpers started]
// throughout, and is back at its starting value once every DB is closed.
// Every answer is Get's.
func TestReview15bAwakeBalanced(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	ncpu := int64(runtime.NumCPU())
	var busy atomic.Bool
	r15bSource(t, func() (int64, bool) {
		if busy.Load() {
			return ncpu + 4 + cpuLoad.awake.Load(), true
		}
		return 0, true
	}, 0)
	start := cpuLoad.awake.Load()
	before := runtime.NumGoroutine()
	fs := vfs.NewMem()
	r13Build(t, fs, "/db")
	// Each DB opens its own copy of the store.
	rounds := 3
	if raceEnabled {
		rounds = 2
	}
	for round := 0; round < rounds; round++ {
		var dbs []*DB
		for p := 1; p <= 8; p++ {
			dir := fmt.Sprintf("/db%d-%d", round, p)
			r15bCopy(t, fs, "/db", dir)
			dbs = append(dbs, mustOpen(t, dir, &Options{FS: fs, MultiGetParallelism: p, BlockCacheSize: 256 << 10}))
		}
		total := r15bHelpersTotal(dbs)
		stop := make(chan struct{})
		errc := make(chan error, 64)
		var wg sync.WaitGroup
		for i, d := range dbs {
			for c := 0; c < 2; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					keys := make([][]byte, r13Sizes[(i+c)%len(r13Sizes)])
					for b := 0; ; b++ {
						r13Batch(keys, i*100000+c*10000+b)
						vals, errs := d.MultiGet(keys, nil)
						if errors.Is(errs[0], ErrClosed) {
							return
						}
						if err := r13Check(keys, vals, errs); err != nil {
							errc <- fmt.Errorf("db %d: %v", i, err)
							return
						}
					}
				}()
			}
		}
		var bad atomic.Value
		var sawBusy, sawIdle atomic.Bool
		wg.Add(1)
		go func() { // flips, GOMAXPROCS, and awake's bounds
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				busy.Store(k%3 == 0)
				if k%7 == 0 {
					runtime.GOMAXPROCS(1 + k%4)
				}
				if cpuLoad.avg.Load() >= 16*ncpu {
					sawBusy.Store(true)
				} else {
					sawIdle.Store(true)
				}
				if a := cpuLoad.awake.Load() - start; a < 0 || a > total {
					bad.Store(fmt.Sprintf("awake %d (helpers %d)", a, total))
				}
				time.Sleep(time.Millisecond)
			}
		}()
		time.Sleep(400 * time.Millisecond)
		// Close half the DBs while their MultiGets run, then the rest.
		for i := 0; i < len(dbs); i += 2 {
			if err := dbs[i].Close(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond)
		for i := 1; i < len(dbs); i += 2 {
			if err := dbs[i].Close(); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		r13Deadline(t, &wg, 10*time.Second, "MultiGets after Close")
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		if s := bad.Load(); s != nil {
			t.Fatal(s)
		}
		var helped int64
		for _, d := range dbs {
			if d.helpers != nil {
				helped += d.helpers.helped.Load()
			}
		}
		if helped == 0 || !sawBusy.Load() || !sawIdle.Load() {
			t.Errorf("round %d: helpers took %d lookups, busy seen %v, idle seen %v", round, helped, sawBusy.Load(), sawIdle.Load())
		}
		if a := cpuLoad.awake.Load(); a != start {
			t.Fatalf("round %d: cpuLoad.awake %d after every DB closed, %d before", round, a, start)
		}
	}
	requireGoroutinesSettle(t, before)
}

// r15bCopy copies every file of the store at from into to, in fs.
func r15bCopy(t *testing.T, fs vfs.FS, from, to string) {
	t.Helper()
	if err := fs.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := fs.List(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if name == "LOCK" {
			continue
		}
		src, err := fs.Open(from + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		dst, err := fs.Create(to + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.Write(buf.Bytes()); err != nil {
			t.Fatal(err)
		}
		if err := dst.Sync(); err != nil {
			t.Fatal(err)
		}
		dst.Close()
	}
}

// r15bLoadavg is a source for processorsBusy modelling a machine on which
// others threads of other processes are runnable: it returns others plus
// this process's threads that are running (state R, counted by the
// kernel), what /proc/loadavg's fourth field would count of them. It
// records each sample with the helpers awake at it.
type r15bLoadavg struct {
	others  int64
	mu      sync.Mutex
	samples [][4]int64 // runnable, awake, this process's running threads, µs
}

// r15bOwnRunning counts this process's threads in state R.
func r15bOwnRunning() int64 {
	tasks, _ := os.ReadDir("/proc/self/task")
	var n int64
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'R' {
			n++
		}
	}
	return n
}

func (l *r15bLoadavg) read() (int64, bool) {
	awake, own := cpuLoad.awake.Load(), r15bOwnRunning()
	n := l.others + own
	l.mu.Lock()
	l.samples = append(l.samples, [4]int64{n, awake, own, helperNow() / 1000})
	l.mu.Unlock()
	return n, true
}

func (l *r15bLoadavg) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.samples
	if len(s) > 12 {
		s = s[len(s)-12:]
	}
	return fmt.Sprint(s)
}

// r15bUnderLoad runs MultiGets of 64 keys from one goroutine per DB. They
// start on an idle machine (a source of 0 runnable threads), helpers in
// use; then the load of l arrives, and processorsBusy samples it from
// where its average was. After a
// second to settle, it returns the share of the MultiGets of the next
// second after which the average said busy, and the lookups the helpers
// took meanwhile.
func r15bUnderLoad(t *testing.T, dbs []*DB, l *r15bLoadavg) (float64, int64) {
	ncpu := int64(runtime.NumCPU())
	r15bSource(t, func() (int64, bool) { return 0, true }, 0)
	var measuring, stop atomic.Bool
	var busy, all, helped atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, len(dbs))
	for i, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys := make([][]byte, 64)
			for b := 0; !stop.Load(); b++ {
				r13Batch(keys, i*100000+b)
				before := db.helpers.helped.Load()
				vals, errs := db.MultiGet(keys, nil)
				if err := r13Check(keys, vals, errs); err != nil {
					errc <- err
					return
				}
				if measuring.Load() {
					all.Add(1)
					helped.Add(db.helpers.helped.Load() - before)
					if cpuLoad.avg.Load() >= 16*ncpu {
						busy.Add(1)
					}
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	src := l.read
	cpuLoad.source.Store(&src)
	time.Sleep(time.Second)
	measuring.Store(true)
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	return float64(busy.Load()) / float64(max(1, all.Load())), helped.Load()
}

// TestReview15bAwakeHelpersHideABusyMachine: processorsBusy takes every
// helper counted in cpuLoad.awake out of the machine's runnable threads,
// "so that a helper that runs does not count against itself". But awake
// counts helper goroutines that are not parked, and a process runs at most
// GOMAXPROCS of its goroutines at once: helpers polling for jobs, or
// waiting in the run queue for a processor to poll on, beyond that are no
// runnable thread of /proc/loadavg, yet each is subtracted. With more
// helpers than GOMAXPROCS (MultiGetParallelism above it, or several DBs
// in one process), processorsBusy says idle on a machine whose every
// processor is taken by other processes, and MultiGets keep waking
// helpers, the case the change was made to stop. It is bistable: once a
// sample says busy the helpers park and it stays busy, but load that
// arrives while the helpers are in use is not seen.
//
// The machine is modelled (r15bLoadavg): NumCPU+1 threads of other
// processes runnable, plus this process's running threads as the kernel
// counts them. GOMAXPROCS is 1. One DB of MultiGetParallelism 2 (one
// helper) is found busy; two DBs of MultiGetParallelism 8 (fourteen
// helpers, at most one of them running) are not.
//
// (Seen too with real load: NumCPU+1 spinning processes, /proc/loadavg
// read, GOMAXPROCS 2, four DBs of MultiGetParallelism 4: samples of
// runnable 7, awake 12, this process running 2, busy after 4% of the
// MultiGets; the same setup went busy in other runs, being bistable.)
func TestReview15bAwakeHelpersHideABusyMachine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts the process's running threads in /proc/self/task")
	}
	ncpu := runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	fs := vfs.NewMem()
	r13Build(t, fs, "/db")
	open := func(n, par int) []*DB {
		var dbs []*DB
		for i := range n {
			dir := fmt.Sprintf("/h%d-%d-%d", n, par, i)
			r15bCopy(t, fs, "/db", dir)
			d := mustOpen(t, dir, &Options{FS: fs, MultiGetParallelism: par})
			t.Cleanup(func() { d.Close() })
			dbs = append(dbs, d)
		}
		return dbs
	}
	control := r15bLoadavg{others: int64(ncpu) + 1}
	share1, helped1 := r15bUnderLoad(t, open(1, 2), &control)
	t.Logf("one DB, MultiGetParallelism 2: busy after %.0f%% of MultiGets, helpers took %d lookups; last samples [runnable awake running µs]: %v", 100*share1, helped1, &control)
	if share1 < 0.5 {
		t.Fatalf("%d other threads runnable on %d processors: one DB's MultiGets saw the machine busy after %.0f%% of them; last samples [runnable awake running µs]: %v", ncpu+1, ncpu, 100*share1, &control)
	}
	l := r15bLoadavg{others: int64(ncpu) + 1}
	share2, helped2 := r15bUnderLoad(t, open(2, 8), &l)
	if share2 < 0.5 {
		t.Fatalf("%d other threads runnable on %d processors, GOMAXPROCS 1: two DBs of MultiGetParallelism 8 saw the machine busy after %.0f%% of their MultiGets (one DB of 2: %.0f%%), and their helpers took %d lookups; last samples [runnable awake running µs]: %v",
			ncpu+1, ncpu, 100*share2, 100*share1, helped2, &l)
	}
}

// TestReview15bAnswersWhileBusyFlips: MultiGets from four goroutines on
// a store with three helpers, with the source flipping between busy and
// idle every millisecond and samples taken every call (so that rounds of
// one MultiGet go some with helpers and some without): every answer is
// Get's, and both ways were taken.
func TestReview15bAnswersWhileBusyFlips(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	ncpu := int64(runtime.NumCPU())
	var busy atomic.Bool
	var busyN, idleN atomic.Int64
	r15bSource(t, func() (int64, bool) {
		cpuLoad.next.Store(0) // the next call samples again
		if busy.Load() {
			busyN.Add(1)
			// Just busy: the average crosses the threshold within a few
			// samples either way (a count of 1000·ncpu took 19 idle
			// samples in a row to decay, fewer than -race runs in 1 ms).
			return ncpu + 1, true
		}
		idleN.Add(1)
		return 0, true
	}, 0)
	d := helperStore(t, &Options{MultiGetParallelism: 4, BlockCacheSize: 64 << 10})
	defer d.Close()
	stop := make(chan struct{})
	var flips sync.WaitGroup
	flips.Add(1)
	go func() {
		defer flips.Done()
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			busy.Store(k%2 == 0)
		}
	}()
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; b < 400; b++ {
				keys := make([][]byte, r13Sizes[(b+c)%len(r13Sizes)])
				r13Batch(keys, c*1000+b)
				vals, errs := d.MultiGet(keys, nil)
				if err := r13Check(keys, vals, errs); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	flips.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if busyN.Load() == 0 || idleN.Load() == 0 || d.helpers.helped.Load() == 0 {
		t.Fatalf("busy samples %d, idle %d, helped %d: not both ways", busyN.Load(), idleN.Load(), d.helpers.helped.Load())
	}
}

// TestReview15bFilterMetricsBusyOrNot: MultiGet's filter counters equal a
// loop of Get's whether processors are busy (no helper) or idle.
func TestReview15bFilterMetricsBusyOrNot(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	ncpu := int64(runtime.NumCPU())
	open := func() *DB {
		d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), BlockSize: 512, DisableAutomaticCompactions: true, MultiGetParallelism: 4})
		for round := 0; round < 3; round++ {
			for i := 0; i < 3000; i++ {
				if (i+round)%3 != 0 {
					d.Put([]byte(fmt.Sprintf("key%05d", i)), []byte(fmt.Sprint(round)), nil)
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			if round == 0 {
				if err := d.CompactRange(nil, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := 0; i < 300; i += 3 {
			d.Put([]byte(fmt.Sprintf("key%05d", i*7)), []byte("newer"), nil)
		}
		return d
	}
	var keys [][]byte
	for i := 0; i < 3000; i += 5 {
		keys = append(keys, []byte(fmt.Sprintf("key%05d", i)), []byte(fmt.Sprintf("key%05dx", i)))
	}
	for _, n := range []int64{0, 1000 * ncpu} {
		r15bSource(t, func() (int64, bool) { return n, true }, 16*n)
		a, b := open(), open()
		for range 10 {
			for _, k := range keys {
				a.Get(k, nil)
			}
			for start := 0; start < len(keys); start += 64 {
				b.MultiGet(keys[start:min(start+64, len(keys))], nil)
			}
		}
		ma, mb := a.Metrics(), b.Metrics()
		helped := b.helpers.helped.Load()
		a.Close()
		b.Close()
		if (n == 0) != (helped > 0) {
			t.Fatalf("runnable %d: the helpers took %d lookups", n, helped)
		}
		if ma.Filter != mb.Filter || ma.Gets != mb.Gets || ma.MemTableFilter != mb.MemTableFilter {
			t.Fatalf("runnable %d: Get loop %+v %+v, %d gets; MultiGet %+v %+v, %d gets", n, ma.Filter, ma.MemTableFilter, ma.Gets, mb.Filter, mb.MemTableFilter, mb.Gets)
		}
		for l := range ma.Levels {
			if ma.Levels[l].Filter != mb.Levels[l].Filter {
				t.Fatalf("runnable %d, level %d: Get loop %+v, MultiGet %+v", n, l, ma.Levels[l].Filter, mb.Levels[l].Filter)
			}
		}
		if ma.Filter.Checks == 0 || ma.Levels[0].Filter.Checks == 0 || ma.Levels[0].Filter.Checks == ma.Filter.Checks {
			t.Fatalf("no filter work on level 0 and below: %+v, level 0 %+v", ma.Filter, ma.Levels[0].Filter)
		}
		if n == 0 && mb.Gets == 0 {
			t.Fatal("no MultiGet counted")
		}
	}
}

// TestReview15bRealLoadavgConcurrent: the real /proc/loadavg path, read by
// whichever of many goroutines finds the sample stale (under -race: the
// shared buffer and the file), while MultiGets run with helpers on two
// DBs: samples are taken (the count includes the running sampler), the
// average stays within sane bounds, and a sample is taken at most about
// every busySampleEvery.
func TestReview15bRealLoadavgConcurrent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/loadavg is Linux's")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	r15bSource(t, nil, 0)
	// The file is opened at the first sample: this test may be the first
	// to take one (go test -run of it alone).
	r15bSamples(1)
	if cpuLoad.f == nil {
		t.Fatal("/proc/loadavg not opened")
	}
	fs := vfs.NewMem()
	r13Build(t, fs, "/db")
	var dbs []*DB
	for i := range 2 {
		dir := fmt.Sprintf("/r%d", i)
		r15bCopy(t, fs, "/db", dir)
		d := mustOpen(t, dir, &Options{FS: fs, MultiGetParallelism: 4})
		defer d.Close()
		dbs = append(dbs, d)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	var maxAvg atomic.Int64
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys := make([][]byte, 64)
			for b := 0; ; b++ {
				select {
				case <-stop:
					return
				default:
				}
				if c%2 == 0 {
					processorsBusy()
				} else {
					r13Batch(keys, c*100000+b)
					vals, errs := dbs[c%2].MultiGet(keys, nil)
					if err := r13Check(keys, vals, errs); err != nil {
						errc <- err
						return
					}
				}
				if a := cpuLoad.avg.Load(); a > maxAvg.Load() {
					maxAvg.Store(a)
				}
				if a := cpuLoad.avg.Load(); a < 0 {
					errc <- fmt.Errorf("average %d", a)
					return
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if maxAvg.Load() == 0 {
		t.Fatal("no real sample counted a running thread")
	}
	if m := maxAvg.Load(); m > 16*100000 {
		t.Fatalf("average %d/16", m)
	}
	if cpuLoad.sampling.Load() {
		t.Fatal("sampling left taken")
	}
}

// TestReview15bSampleRate: many goroutines call processorsBusy for a
// while; the source is asked at most about once per busySampleEvery.
func TestReview15bSampleRate(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(8, runtime.GOMAXPROCS(0))))
	var calls atomic.Int64
	var inside atomic.Int32
	var overlap atomic.Bool
	r15bSource(t, func() (int64, bool) {
		if inside.Add(1) > 1 {
			overlap.Store(true)
		}
		calls.Add(1)
		inside.Add(-1)
		return 1, true
	}, 0)
	const d = 500 * time.Millisecond
	var wg sync.WaitGroup
	start := time.Now()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < d {
				processorsBusy()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if overlap.Load() {
		t.Fatal("two goroutines sampled at once")
	}
	if max := int64(el/busySampleEvery) + 2; calls.Load() > max+max/10 {
		t.Fatalf("%d samples in %v, at most every %v: %d", calls.Load(), el, busySampleEvery, max)
	}
	// Sampling is opportunistic (the first caller after the sample goes
	// stale takes it): under -race on a busy 2-processor CI machine, 16
	// spinning callers took 24 samples in 500 ms. What must hold is that
	// samples go on being taken.
	if calls.Load() < 2 {
		t.Fatalf("only %d samples in %v", calls.Load(), el)
	}
}

// TestReview15bLoadavgOpenFailureIsForever: /proc/loadavg is opened once,
// by the process's first processorsBusy (the first MultiGet to want
// helpers). If that one open fails for a passing reason, say the process
// is out of file descriptors at that moment (EMFILE, which the store
// otherwise survives: fd_limit_test.go), the file is never opened again,
// and for the rest of the process processorsBusy is always false: the
// machine's load is never read, though /proc/loadavg is there and
// descriptors are free again.
func TestReview15bLoadavgOpenFailureIsForever(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/loadavg is Linux's")
	}
	r15bSource(t, nil, 0)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	oldF := cpuLoad.f
	t.Cleanup(func() {
		cpuLoad.once = sync.Once{}
		cpuLoad.once.Do(func() {})
		cpuLoad.f = oldF
	})
	// Out of descriptors: a soft limit of 64, every free one below taken.
	low := lim
	low.Cur = 64
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	var fill []*os.File
	for len(fill) < 64 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		fill = append(fill, f)
	}
	// The process's first processorsBusy, out of descriptors.
	cpuLoad.once = sync.Once{}
	cpuLoad.f = nil
	processorsBusy()
	failed := cpuLoad.f == nil
	for _, f := range fill {
		f.Close()
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Skip("/proc/loadavg opened with every descriptor taken")
	}
	// Descriptors are free again; the machine is sampled again?
	for range 20 {
		cpuLoad.next.Store(0)
		processorsBusy()
	}
	cpuLoad.sampling.Store(true)
	n, ok := sampleRunnable()
	cpuLoad.sampling.Store(false)
	if !ok {
		t.Fatalf("after one EMFILE at the first MultiGet, descriptors free again: sampleRunnable() = %d, %v, average %d/16: processorsBusy is false for the rest of the process", n, ok, cpuLoad.avg.Load())
	}
}
