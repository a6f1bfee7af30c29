package db

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// Review 13: MultiGet's persistent helper goroutines (mghelpers.go).
//
// The store of most tests: r13Keys keys "k%07d" (present for i < r13Keys,
// absent above), written to two levels in a memory file system with
// blocks of 512 bytes, then closed, so that each test reopens it with the
// options it attacks.

const r13Keys = 6000

func r13Key(i int) []byte { return []byte(fmt.Sprintf("k%07d", i)) }

func r13Value(i int) []byte {
	return []byte(fmt.Sprintf("v%07d-%s", i, "some padding so that keys spread over many blocks"))
}

// r13Build writes the store into fs at dir and closes it.
func r13Build(t testing.TB, fs vfs.FS, dir string) {
	t.Helper()
	d := mustOpen(t, dir, &Options{FS: fs, BlockSize: 512, WriteBufferSize: 64 << 10, MultiGetParallelism: 1})
	for i := 0; i < r13Keys; i++ {
		if err := d.Put(r13Key(i), r13Value(i), nil); err != nil {
			t.Fatal(err)
		}
		if i == r13Keys/2 {
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	waitCompactions(t, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// r13Batch fills keys with len(keys) keys drawn from seed: about half of
// them present, with a repeat now and then.
func r13Batch(keys [][]byte, seed int) {
	for j := range keys {
		i := (seed*7919 + j*131) % (2 * r13Keys)
		if j > 2 && j%11 == 0 {
			keys[j] = keys[j/2] // a repeated key
			continue
		}
		keys[j] = r13Key(i)
	}
}

// r13Check reports the first entry of a MultiGet's results that is not
// what Get would answer on the store r13Build wrote (other keys, written
// by a test's writer, are never asked).
func r13Check(keys, vals [][]byte, errs []error) error {
	for j, k := range keys {
		var i int
		if _, err := fmt.Sscanf(string(k), "k%d", &i); err != nil {
			return fmt.Errorf("unexpected key %q", k)
		}
		switch {
		case i < r13Keys && (errs[j] != nil || !bytes.Equal(vals[j], r13Value(i))):
			return fmt.Errorf("entry %d of %d, key %s: %q, %v; want %q", j, len(keys), k, vals[j], errs[j], r13Value(i))
		case i >= r13Keys && (vals[j] != nil || !errors.Is(errs[j], ErrNotFound)):
			return fmt.Errorf("entry %d of %d, absent key %s: %q, %v", j, len(keys), k, vals[j], errs[j])
		}
	}
	return nil
}

// r13Sizes are the batch sizes the tests cycle through: around the
// thresholds of spread (16 lookups for a helper, 8 a helper) and of the
// scratch's 64-key queue.
var r13Sizes = []int{2, 15, 16, 17, 23, 64, 65, 130, 300}

// r13Deadline fails the test (instead of letting it hang until the test
// binary's timeout) when wg is not done within d.
func r13Deadline(t *testing.T, wg *sync.WaitGroup, d time.Duration, what string) {
	t.Helper()
	withWatchdog(t, d, what, wg.Wait)
}

// r13CloseSettle closes d and waits for the goroutine count to come back
// to before.
func r13CloseSettle(t *testing.T, d *DB, before int) {
	t.Helper()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	requireGoroutinesSettle(t, before)
}

// TestReview13HugeParallelism: MultiGetParallelism is documented as a
// bound ("the most goroutines ... that one MultiGet reads data blocks
// with") and only a negative value is refused, so a caller meaning "no
// bound" may pass math.MaxInt. Before the helpers, spread used
// min(bound, lookups/8) goroutines a batch and such a store worked. Now
// Open makes the helpers' wake channel with capacity MultiGetParallelism-1,
// and make panics: "makechan: size out of range". Open must either refuse
// the option with an error or open a store that answers right.
func TestReview13HugeParallelism(t *testing.T) {
	fs := vfs.NewMem()
	r13Build(t, fs, "/db")
	before := runtime.NumGoroutine()
	var d *DB
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("Open with MultiGetParallelism math.MaxInt panicked: %v", p)
			}
		}()
		d, err = Open("/db", &Options{FS: fs, MultiGetParallelism: math.MaxInt})
	}()
	if err != nil {
		if !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("Open: %v, want nil or ErrInvalidOptions", err)
		}
		return
	}
	keys := make([][]byte, 64)
	for j := range keys { // present keys: their lookups go to helpers
		keys[j] = r13Key(j * 89)
	}
	vals, errs := d.MultiGet(keys, nil)
	if err := r13Check(keys, vals, errs); err != nil {
		t.Error(err)
	}
	// (MultiGetParallelism 1<<18 already starts 262,143 helpers, 687 MiB,
	// for one MultiGet of 32 keys; a bound of "no bound" must not try more.)
	if n := runtime.NumGoroutine(); n > before+10000 {
		t.Errorf("%d goroutines after one MultiGet of 64 keys, %d before", n, before)
	}
	r13CloseSettle(t, d, before)
}

// TestReview13ManyCallersManyPools: three read-only DBs on one store, with
// MultiGetParallelism 2, 3 and 8, and a read-write DB on another, each
// read by three goroutines with MultiGetInto into values and errs they
// reuse call after call (a fourth writes other keys and flushes into the
// read-write one). Every answer must be right, and must stay as it was
// between the call's return and the next call: a helper writing into the
// slices late would change them (or, under -race, be reported).
func TestReview13ManyCallersManyPools(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	before := runtime.NumGoroutine()
	calls := 400
	if testing.Short() || raceEnabled {
		calls = 80
	}
	roFS, rwFS := vfs.NewMem(), vfs.NewMem()
	r13Build(t, roFS, "/db")
	r13Build(t, rwFS, "/db")
	var dbs []*DB
	for _, par := range []int{2, 3, 8} {
		dbs = append(dbs, mustOpen(t, "/db", &Options{FS: roFS, ReadOnly: true, MultiGetParallelism: par, BlockCacheSize: 32 << 10}))
	}
	rw := mustOpen(t, "/db", &Options{FS: rwFS, MultiGetParallelism: 5, DisableBlockCache: true})
	dbs = append(dbs, rw)
	for _, d := range dbs {
		if d.helpers == nil {
			t.Fatal("no helper pool")
		}
	}
	stop := make(chan struct{})
	errc := make(chan error, 64)
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := rw.Put([]byte(fmt.Sprintf("w%07d", i)), []byte("x"), nil); err != nil {
				errc <- err
				return
			}
			if i%300 == 299 {
				if err := rw.Flush(); err != nil {
					errc <- err
					return
				}
			}
		}
	}()
	var readers sync.WaitGroup
	for di, d := range dbs {
		for c := range 3 {
			readers.Add(1)
			go func() {
				defer readers.Done()
				keys := make([][]byte, 300)
				vals := make([][]byte, 300)
				errs := make([]error, 300)
				var prevV [][]byte
				var prevE []error
				var prevN int
				for call := range calls {
					// What the previous call returned must not have changed.
					for j := 0; j < prevN; j++ {
						if !bytes.Equal(vals[j], prevV[j]) || errs[j] != prevE[j] {
							errc <- fmt.Errorf("db %d caller %d call %d: entry %d changed after the call returned: %q, %v; was %q, %v",
								di, c, call, j, vals[j], errs[j], prevV[j], prevE[j])
							return
						}
					}
					n := r13Sizes[(call+c)%len(r13Sizes)]
					k, v, e := keys[:n], vals[:n], errs[:n]
					r13Batch(k, call*3+c+di*1000)
					// Stale entries from the previous call must be overwritten.
					for j := range v {
						v[j], e[j] = []byte("stale"), errors.New("stale")
					}
					if err := d.MultiGetInto(k, v, e, nil); err != nil {
						errc <- err
						return
					}
					if err := r13Check(k, v, e); err != nil {
						errc <- fmt.Errorf("db %d caller %d call %d: %v", di, c, call, err)
						return
					}
					prevV, prevE, prevN = slices.Clone(v), slices.Clone(e), n
					if call%8 == 0 {
						runtime.Gosched()
					}
				}
			}()
		}
	}
	r13Deadline(t, &readers, 2*time.Minute, "readers")
	close(stop)
	writer.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	var helped int64
	for _, d := range dbs {
		helped += d.helpers.helped.Load()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if helped == 0 {
		t.Error("helpers ran no lookup")
	}
	requireGoroutinesSettle(t, before)
}

// TestReview13CloseRacesMultiGets: MultiGets (and MultiGetIntos) run in
// four goroutines while two goroutines Close the DB at once. Each batch
// must come back right in full or failed with ErrClosed in full; one
// Close returns nil, the other ErrClosed and only once the first is done
// (the store reopens right after); nothing hangs, and no goroutine is
// left.
func TestReview13CloseRacesMultiGets(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	rounds := 30
	if testing.Short() || raceEnabled {
		rounds = 8
	}
	fs := vfs.NewMem()
	r13Build(t, fs, "/db")
	before := runtime.NumGoroutine()
	for round := range rounds {
		par := []int{2, 4, 8}[round%3]
		d := mustOpen(t, "/db", &Options{FS: fs, MultiGetParallelism: par, DisableBlockCache: round%2 == 0})
		var readers sync.WaitGroup
		errc := make(chan error, 8)
		var started atomic.Int64
		for c := range 4 {
			readers.Add(1)
			go func() {
				defer readers.Done()
				keys := make([][]byte, 300)
				vals := make([][]byte, 300)
				errs := make([]error, 300)
				for call := 0; ; call++ {
					n := r13Sizes[(call+c)%len(r13Sizes)]
					k := keys[:n]
					r13Batch(k, call+c*100+round)
					var v [][]byte
					var e []error
					if c%2 == 0 {
						v, e = d.MultiGet(k, nil)
					} else {
						v, e = vals[:n], errs[:n]
						if err := d.MultiGetInto(k, v, e, nil); err != nil {
							errc <- err
							return
						}
					}
					started.Add(1)
					if errors.Is(e[0], ErrClosed) {
						for j := range e {
							if !errors.Is(e[j], ErrClosed) || v[j] != nil {
								errc <- fmt.Errorf("round %d: a closed batch's entry %d: %q, %v", round, j, v[j], e[j])
								return
							}
						}
						return
					}
					if err := r13Check(k, v, e); err != nil {
						errc <- fmt.Errorf("round %d: %v", round, err)
						return
					}
				}
			}()
		}
		for started.Load() < int64(4+round*3) {
			runtime.Gosched()
		}
		cerrs := make(chan error, 2)
		var closers sync.WaitGroup
		for range 2 {
			closers.Add(1)
			go func() { defer closers.Done(); cerrs <- d.Close() }()
		}
		r13Deadline(t, &closers, time.Minute, "Close")
		r13Deadline(t, &readers, time.Minute, "readers after Close")
		close(cerrs)
		var nils, closed int
		for err := range cerrs {
			switch {
			case err == nil:
				nils++
			case errors.Is(err, ErrClosed):
				closed++
			default:
				t.Fatalf("round %d: Close: %v", round, err)
			}
		}
		if nils != 1 || closed != 1 {
			t.Fatalf("round %d: %d Closes returned nil, %d ErrClosed", round, nils, closed)
		}
		select {
		case err := <-errc:
			t.Fatal(err)
		default:
		}
		// After Close: ErrClosed at once, and no helper starts.
		keys := make([][]byte, 64)
		r13Batch(keys, round)
		if _, errs := d.MultiGet(keys, nil); !errors.Is(errs[0], ErrClosed) || !errors.Is(errs[63], ErrClosed) {
			t.Fatalf("MultiGet after Close: %v, %v", errs[0], errs[63])
		}
		requireGoroutinesSettle(t, before)
	}
}

// TestReview13OpenCloseLoop opens and closes a DB with helpers many times,
// each time with MultiGets that start the helpers (and some that do not):
// no goroutine and no memory may be left behind.
func TestReview13OpenCloseLoop(t *testing.T) {
	cycles := 1500
	if testing.Short() || raceEnabled {
		cycles = 200
	}
	fs := vfs.NewMem()
	r13Build(t, fs, "/db")
	before := runtime.NumGoroutine()
	keys := make([][]byte, 64)
	var ms runtime.MemStats
	var heapAt []uint64
	for cycle := range cycles {
		d := mustOpen(t, "/db", &Options{FS: fs, MultiGetParallelism: 2 + cycle%7, ReadOnly: cycle%5 == 0})
		for b := range cycle % 4 {
			r13Batch(keys, cycle*4+b)
			vals, errs := d.MultiGet(keys, nil)
			if err := r13Check(keys, vals, errs); err != nil {
				t.Fatalf("cycle %d: %v", cycle, err)
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if cycle%(cycles/4) == cycles/4-1 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heapAt = append(heapAt, ms.HeapAlloc)
		}
	}
	requireGoroutinesSettle(t, before)
	t.Logf("heap after each quarter: %v", heapAt)
	// What the first quarter's DBs left behind, the others must not add
	// to: 16 MiB of slack covers the garbage collector's pacing.
	if len(heapAt) == 4 && heapAt[3] > heapAt[0]+16<<20 {
		t.Errorf("heap grew from %d to %d bytes over %d open-MultiGet-close cycles", heapAt[0], heapAt[3], cycles*3/4)
	}
}

// TestReview13GOMAXPROCSOneAtRunTime: a DB opened for eight helpers'
// worth of processors, then run with GOMAXPROCS 1 (a container's quota
// lowered, a test that calls runtime.GOMAXPROCS): seven helpers poll
// between MultiGets on the only processor. MultiGets from three
// goroutines must still answer right and finish, and a goroutine that
// only wants the processor now and then (a ticker) must get it.
func TestReview13GOMAXPROCSOneAtRunTime(t *testing.T) {
	batches := 400
	if testing.Short() || raceEnabled {
		batches = 80
	}
	fs := vfs.NewMem()
	r13Build(t, fs, "/db")
	before := runtime.NumGoroutine()
	prev := runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0)))
	d8 := mustOpen(t, "/db", &Options{FS: fs, ReadOnly: true, MultiGetParallelism: 8, DisableBlockCache: true})
	d1 := mustOpen(t, "/db", &Options{FS: fs, ReadOnly: true, MultiGetParallelism: 1, DisableBlockCache: true})
	if d8.helpers == nil || d8.helpers.n != 7 {
		t.Fatalf("helpers %+v, want 7", d8.helpers)
	}
	runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	run := func(d *DB) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		errc := make(chan error, 3)
		var ticks atomic.Int64
		stop := make(chan struct{})
		var ticker sync.WaitGroup
		ticker.Add(1)
		go func() {
			defer ticker.Done()
			tk := time.NewTicker(time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tk.C:
					ticks.Add(1)
				}
			}
		}()
		for c := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				keys := make([][]byte, 64)
				for b := range batches {
					r13Batch(keys, b*3+c)
					vals, errs := d.MultiGet(keys, nil)
					if err := r13Check(keys, vals, errs); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		r13Deadline(t, &wg, 2*time.Minute, "MultiGets at GOMAXPROCS 1")
		el := time.Since(start)
		// The ticker must have had the processor while they ran (or get
		// it now): it needs only a tick.
		deadline := time.Now().Add(30 * time.Second)
		for ticks.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		close(stop)
		ticker.Wait()
		if ticks.Load() == 0 {
			t.Error("a ticker goroutine never ran")
		}
		select {
		case err := <-errc:
			t.Fatal(err)
		default:
		}
		return el
	}
	t1 := run(d1)
	t8 := run(d8)
	t.Logf("GOMAXPROCS 1, %d batches of 64 keys from 3 goroutines: parallelism 1 %v, parallelism 8 %v (%.2fx)",
		3*batches, t1, t8, float64(t8)/float64(t1))
	// Idle, the helpers go to sleep.
	deadline := time.Now().Add(10 * time.Second)
	for d8.helpers.parked.Load() != 7 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if p := d8.helpers.parked.Load(); p != 7 {
		t.Errorf("%d of 7 helpers asleep 10 s after the last MultiGet", p)
	}
	for _, d := range []*DB{d8, d1} {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	requireGoroutinesSettle(t, before)
}

// r13CPU is the process's processor time so far.
func r13CPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Skip("getrusage:", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestReview13IdleHelpersSpendNoCPU: after a burst of MultiGets the
// helpers poll for at most 100 µs and then sleep: an idle DB with eight
// helpers must use (next to) no processor time, and a closed one none.
func TestReview13IdleHelpersSpendNoCPU(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	fs := vfs.NewMem()
	r13Build(t, fs, "/db")
	before := runtime.NumGoroutine()
	d := mustOpen(t, "/db", &Options{FS: fs, MultiGetParallelism: 9})
	keys := make([][]byte, 200)
	for b := range 200 {
		r13Batch(keys, b)
		vals, errs := d.MultiGet(keys, nil)
		if err := r13Check(keys, vals, errs); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for d.helpers.parked.Load() != 8 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if p := d.helpers.parked.Load(); p != 8 {
		t.Fatalf("%d of 8 helpers asleep 10 s after the last MultiGet", p)
	}
	if s := time.Duration(d.helpers.spin.Load()); s < minHelperSpin || s > maxHelperSpin {
		t.Errorf("polling time %v outside [%v, %v]", s, minHelperSpin, maxHelperSpin)
	}
	// Eight helpers polling would burn at least one processor's time.
	const idle = 300 * time.Millisecond
	c0 := r13CPU(t)
	time.Sleep(idle)
	used := r13CPU(t) - c0
	t.Logf("processor time over %v idle with 8 sleeping helpers: %v", idle, used)
	if used > idle*3/4 {
		t.Errorf("an idle DB used %v of processor time in %v", used, idle)
	}
	r13CloseSettle(t, d, before)
}

// TestReview13ReadFaultsAndSlowReads: MultiGets from three goroutines on
// a DB with four helpers, without a block cache, while table reads fail
// now and then and some take 300 µs (longer than the caller polls for its
// helpers: it must fall back on waiting for them). A key answered must be
// answered right, an absent key never found, a present key never
// ErrNotFound; errors are allowed. Once reads are healthy again every
// answer is right.
func TestReview13ReadFaultsAndSlowReads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	batches := 150
	if testing.Short() || raceEnabled {
		batches = 40
	}
	mem := vfs.NewMem()
	r13Build(t, mem, "/db")
	ffs := vfs.NewFaultFS(mem, nil)
	before := runtime.NumGoroutine()
	d := mustOpen(t, "/db", &Options{FS: ffs, MultiGetParallelism: 4, DisableBlockCache: true, DisableMmapReads: true})
	var op atomic.Uint64
	var failed, slowed atomic.Int64
	ffs.SetInjector(vfs.InjectorFunc(func(o vfs.Op, path string) error {
		if o != vfs.OpRead || !bytes.Contains([]byte(path), []byte(".sst")) {
			return nil
		}
		x := op.Add(1) * 0x9e3779b97f4a7c15
		switch x >> 58 { // 6 bits: 1 in 64 fails, 3 in 64 are slow
		case 0:
			failed.Add(1)
			return errors.New("review13: injected read fault")
		case 1, 2, 3:
			slowed.Add(1)
			time.Sleep(300 * time.Microsecond)
		}
		return nil
	}))
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	var sawErr atomic.Int64
	for c := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys := make([][]byte, 300)
			vals := make([][]byte, 300)
			errs := make([]error, 300)
			for b := range batches {
				n := r13Sizes[(b+c)%len(r13Sizes)]
				k, v, e := keys[:n], vals[:n], errs[:n]
				r13Batch(k, b*3+c)
				if err := d.MultiGetInto(k, v, e, nil); err != nil {
					errc <- err
					return
				}
				for j, key := range k {
					var i int
					fmt.Sscanf(string(key), "k%d", &i)
					switch {
					case e[j] == nil:
						if i >= r13Keys || !bytes.Equal(v[j], r13Value(i)) {
							errc <- fmt.Errorf("key %s: %q, want %v", key, v[j], i < r13Keys)
							return
						}
					case errors.Is(e[j], ErrNotFound):
						if i < r13Keys || v[j] != nil {
							errc <- fmt.Errorf("present key %s: ErrNotFound under read faults", key)
							return
						}
					default:
						if v[j] != nil {
							errc <- fmt.Errorf("key %s: a value %q with error %v", key, v[j], e[j])
							return
						}
						sawErr.Add(1)
					}
				}
			}
		}()
	}
	r13Deadline(t, &wg, 2*time.Minute, "MultiGets under read faults")
	ffs.SetInjector(nil)
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	t.Logf("%d reads failed, %d slowed, %d entries failed; helpers did %d lookups",
		failed.Load(), slowed.Load(), sawErr.Load(), d.helpers.helped.Load())
	if sawErr.Load() == 0 {
		t.Error("no read fault reached MultiGet")
	}
	keys := make([][]byte, 300)
	for b := range 20 {
		r13Batch(keys, b)
		vals, errs := d.MultiGet(keys, nil)
		if err := r13Check(keys, vals, errs); err != nil {
			t.Fatalf("after the faults: %v", err)
		}
	}
	r13CloseSettle(t, d, before)
}

// TestReview13LongKeysSnapshots: keys far longer than the 64-byte seek
// buffers (the helpers' own and the scratch's), read at a snapshot while
// the keys are overwritten, through helpers: each answer must be the
// snapshot's.
func TestReview13LongKeysSnapshots(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	const n = 3000
	long := func(i int) []byte {
		return append(bytes.Repeat([]byte{'p', byte(i % 7)}, 40+i%50), fmt.Sprintf("%06d", i)...)
	}
	d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), BlockSize: 512, WriteBufferSize: 64 << 10, MultiGetParallelism: 4})
	defer d.Close()
	for i := 0; i < n; i++ {
		if err := d.Put(long(i), []byte(fmt.Sprintf("old%d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	snap := d.NewSnapshot()
	defer snap.Release()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // overwrite every key, flushing: the snapshot must not see it
		defer wg.Done()
		for i := 0; i < n; i++ {
			if err := d.Put(long(i), []byte("new"), nil); err != nil {
				t.Error(err)
				return
			}
			if i%1000 == 999 {
				d.Flush()
			}
		}
	}()
	errc := make(chan error, 3)
	for c := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys := make([][]byte, 100)
			for b := range 60 {
				for j := range keys {
					keys[j] = long((b*100 + j*17 + c) % (2 * n))
				}
				vals, errs := d.MultiGet(keys, &ReadOptions{Snapshot: snap})
				for j := range keys {
					i := (b*100 + j*17 + c) % (2 * n)
					if i < n && (errs[j] != nil || string(vals[j]) != fmt.Sprintf("old%d", i)) ||
						i >= n && !errors.Is(errs[j], ErrNotFound) {
						errc <- fmt.Errorf("key %d at the snapshot: %q, %v", i, vals[j], errs[j])
						return
					}
				}
			}
		}()
	}
	r13Deadline(t, &wg, 2*time.Minute, "snapshot MultiGets")
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}

// TestReview13HelperJobsSlowLookups drives a pool alone with lookups
// much slower than the caller's 100 µs of polling (so it waits on the
// job's done channel) and mixed with instant ones, at GOMAXPROCS 1 and
// above: every lookup runs exactly once, none is still running or starts
// after do returns, and stop leaves no goroutine.
func TestReview13HelperJobsSlowLookups(t *testing.T) {
	for _, procs := range []int{1, 4} {
		t.Run(fmt.Sprint("procs", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			before := runtime.NumGoroutine()
			h := newMGHelpers(5)
			var inside, late atomic.Int64
			var wg sync.WaitGroup
			for c := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					mg := &multiGet{}
					for job := range 60 {
						n := 16 + (job*5+c)%50
						counts := make([]atomic.Int32, n)
						var returned atomic.Bool
						h.do(mg, n, 5, func(_ *multiGet, i int, _ []byte) {
							inside.Add(1)
							defer inside.Add(-1)
							if returned.Load() {
								late.Add(1)
							}
							counts[i].Add(1)
							if (i+job)%9 == 0 {
								time.Sleep(400 * time.Microsecond)
							}
							if returned.Load() {
								late.Add(1)
							}
						})
						returned.Store(true)
						for i := range counts {
							if got := counts[i].Load(); got != 1 {
								t.Errorf("caller %d job %d: lookup %d ran %d times", c, job, i, got)
								return
							}
						}
					}
				}()
			}
			r13Deadline(t, &wg, time.Minute, "jobs")
			if n := late.Load(); n != 0 {
				t.Errorf("%d lookups ran (or were still running) after their job returned", n)
			}
			if n := inside.Load(); n != 0 {
				t.Errorf("%d lookups running after every job returned", n)
			}
			h.stop()
			requireGoroutinesSettle(t, before)
		})
	}
}

// TestReview13MappedTablesTruncatedUnderHelpers: the store's tables are
// mapped (the default on Linux) and, while MultiGets from two goroutines
// run with helpers and no block cache, every table file is cut to a
// quarter. A helper's block read past the new end is a memory fault,
// which must come back as that key's error (runtime/debug.SetPanicOnFault
// is per goroutine: the helper's read must set it too), never a crash, a
// wrong value or a present key reported absent.
func TestReview13MappedTablesTruncatedUnderHelpers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("tables are mapped on Linux")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	dir := t.TempDir()
	r13Build(t, vfs.Default, dir)
	before := runtime.NumGoroutine()
	d := mustOpen(t, dir, &Options{MultiGetParallelism: 4, DisableBlockCache: true})
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	var sawErr, cut atomic.Int64
	for c := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys := make([][]byte, 130)
			for b := 0; b < 200; b++ {
				r13Batch(keys, b*2+c)
				vals, errs := d.MultiGet(keys, nil)
				for j, key := range keys {
					var i int
					fmt.Sscanf(string(key), "k%d", &i)
					switch {
					case errs[j] == nil:
						if i >= r13Keys || !bytes.Equal(vals[j], r13Value(i)) {
							errc <- fmt.Errorf("key %s: %q", key, vals[j])
							return
						}
					case errors.Is(errs[j], ErrNotFound):
						if i < r13Keys {
							errc <- fmt.Errorf("present key %s: ErrNotFound from a truncated table", key)
							return
						}
					default:
						sawErr.Add(1)
					}
				}
				if b == 20 && c == 0 {
					names, err := os.ReadDir(dir)
					if err != nil {
						errc <- err
						return
					}
					for _, e := range names {
						if n := e.Name(); len(n) > 4 && n[len(n)-4:] == ".sst" {
							fi, err := e.Info()
							if err != nil {
								errc <- err
								return
							}
							if err := os.Truncate(dir+"/"+n, fi.Size()/4); err != nil {
								errc <- err
								return
							}
							cut.Add(1)
						}
					}
				}
			}
		}()
	}
	r13Deadline(t, &wg, 2*time.Minute, "MultiGets over truncated tables")
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	t.Logf("%d tables cut, %d entries failed, helpers did %d lookups", cut.Load(), sawErr.Load(), d.helpers.helped.Load())
	if cut.Load() == 0 || sawErr.Load() == 0 {
		t.Errorf("%d tables cut, %d entries failed: the faults were not exercised", cut.Load(), sawErr.Load())
	}
	d.Close() // may report the damage; it must return
	requireGoroutinesSettle(t, before)
}
