package db

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestHelperJobsExactlyOnce drives the helper pool alone: callers in
// several goroutines post jobs of 16–200 lookups; every lookup must run
// exactly once, and none after its caller's do returned (the caller's
// multiGet may serve another call by then).
func TestHelperJobsExactlyOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	before := runtime.NumGoroutine()
	h := newMGHelpers(3)
	var late atomic.Int64
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mg := &multiGet{}
			for job := range 300 {
				n := 16 + (job*7+c*13)%185
				counts := make([]atomic.Int32, n)
				var returned atomic.Bool
				h.do(mg, n, 3, func(_ *multiGet, i int, seek []byte) {
					if returned.Load() {
						late.Add(1)
					}
					counts[i].Add(1)
					if len(seek) != 0 {
						t.Errorf("seek buffer of length %d, want 0", len(seek))
					}
					if i%5 == 0 {
						time.Sleep(time.Microsecond) // a block read, roughly
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
	wg.Wait()
	if n := late.Load(); n != 0 {
		t.Errorf("%d lookups ran after their job returned", n)
	}
	if h.helped.Load() == 0 {
		t.Error("helpers never ran a lookup in 1,200 jobs")
	}
	// Idle helpers go to sleep once their polling time is spent.
	deadline := time.Now().Add(5 * time.Second)
	for h.parked.Load() != int32(h.n) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if p := h.parked.Load(); p != int32(h.n) {
		t.Errorf("%d of %d helpers asleep 5 s after the last job", p, h.n)
	}
	if s := time.Duration(h.spin.Load()); s < minHelperSpin || s > maxHelperSpin {
		t.Errorf("polling time %v outside [%v, %v]", s, minHelperSpin, maxHelperSpin)
	}
	// A job after they slept wakes them (or runs in the caller alone).
	h.do(&multiGet{}, 64, 3, func(*multiGet, int, []byte) {})
	h.stop()
	h.stop() // twice is harmless
	requireGoroutinesSettle(t, before)
	// After stop, a job runs in its caller alone and starts nothing.
	ran := 0
	h.do(&multiGet{}, 40, 3, func(*multiGet, int, []byte) { ran++ })
	if ran != 40 {
		t.Errorf("after stop: %d of 40 lookups ran", ran)
	}
	requireGoroutinesSettle(t, before)
}

// helperStore opens r13Build's store (built afresh in memory) with o.
func helperStore(t *testing.T, o *Options) *DB {
	t.Helper()
	fs := vfs.NewMem()
	r13Build(t, fs, "/db")
	o.FS = fs
	return mustOpen(t, "/db", o)
}

// TestMultiGetHelpersAnswerLikeGet runs MultiGets of mixed present and
// absent keys from four goroutines on a store with three helpers, while
// a writer adds other keys and flushes: every answer must be the key's
// value or ErrNotFound as written, and the helpers must have done some
// of the lookups. Then the DB closes with MultiGets running, and no
// goroutine is left.
func TestMultiGetHelpersAnswerLikeGet(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	before := runtime.NumGoroutine()
	d := helperStore(t, &Options{MultiGetParallelism: 4, BlockCacheSize: 64 << 10})
	if d.helpers == nil || d.helpers.n != 3 {
		t.Fatalf("helpers %+v, want a pool of 3", d.helpers)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	wg.Add(1)
	go func() { // other keys, flushed: read states change under the MultiGets
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := d.Put([]byte(fmt.Sprintf("w%07d", i)), []byte("x"), nil); err != nil {
				errc <- err
				return
			}
			if i%500 == 499 {
				if err := d.Flush(); err != nil {
					errc <- err
					return
				}
			}
		}
	}()
	var readers sync.WaitGroup
	for c := range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			keys := make([][]byte, 64)
			for b := 0; b < 300; b++ {
				r13Batch(keys, c*1000+b)
				vals, errs := d.MultiGet(keys, nil)
				if err := r13Check(keys, vals, errs); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	readers.Wait()
	close(stop)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if d.helpers.helped.Load() == 0 {
		t.Error("the helpers ran no lookup in 1,200 MultiGets")
	}
	// Close while MultiGets run: each answers in full or fails ErrClosed.
	for c := range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			keys := make([][]byte, 64)
			for b := 0; ; b++ {
				r13Batch(keys, c*7+b)
				vals, errs := d.MultiGet(keys, nil)
				if errors.Is(errs[0], ErrClosed) {
					return
				}
				if err := r13Check(keys, vals, errs); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	readers.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	requireGoroutinesSettle(t, before)
}

// TestMultiGetParallelismOneStartsNoHelper: with MultiGetParallelism 1 a
// DB has no pool, and MultiGets start no goroutine.
func TestMultiGetParallelismOneStartsNoHelper(t *testing.T) {
	d := helperStore(t, &Options{MultiGetParallelism: 1})
	defer d.Close()
	if d.helpers != nil {
		t.Fatal("a helper pool with MultiGetParallelism 1")
	}
	before := runtime.NumGoroutine()
	keys := make([][]byte, 64)
	for b := 0; b < 50; b++ {
		r13Batch(keys, b)
		if vals, errs := d.MultiGet(keys, nil); r13Check(keys, vals, errs) != nil {
			t.Fatal(r13Check(keys, vals, errs))
		}
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after 50 MultiGets, %d before", n, before)
	}
}

// TestMultiGetParallelismLimit: 256 opens a store whose MultiGets answer
// and whose 255 helpers end at Close; 257 is refused with
// ErrInvalidOptions, as math.MaxInt is (it panicked in Open, making the
// helpers' wake channel, before the limit).
func TestMultiGetParallelismLimit(t *testing.T) {
	before := runtime.NumGoroutine()
	d := helperStore(t, &Options{MultiGetParallelism: 256})
	keys := make([][]byte, 64)
	r13Batch(keys, 0)
	if vals, errs := d.MultiGet(keys, nil); r13Check(keys, vals, errs) != nil {
		t.Fatal(r13Check(keys, vals, errs))
	}
	r13CloseSettle(t, d, before)
	for _, p := range []int{257, 1 << 18, math.MaxInt} {
		if _, err := Open(t.TempDir(), &Options{MultiGetParallelism: p}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("MultiGetParallelism %d: Open gave %v, want ErrInvalidOptions", p, err)
		}
	}
}
