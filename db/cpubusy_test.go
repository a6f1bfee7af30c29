package db

import (
	"runtime"
	"testing"
)

// TestParseRunnable reads the runnable count from /proc/loadavg's text,
// and refuses text that does not have it.
func TestParseRunnable(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0.52 0.69 0.37 2/75 7749\n", 2, true},
		{"12.00 9.10 8.42 130/2048 99999\n", 130, true},
		{"0.00 0.00 0.00 0/1 1", 0, true},
		{"0.52 0.69 0.37 2", 0, false},        // no slash
		{"0.52 0.69 0.37 /75 7749", 0, false}, // no number
		{"0.52 0.69 0.37 x/75 7749", 0, false},
		{"0.52 0.69", 0, false},
		{"", 0, false},
		{"0.52 0.69 0.37 1234567890123/75 1", 0, false}, // too long a number
	} {
		got, ok := parseRunnable([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("parseRunnable(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// withRunnable makes processorsBusy see n runnable threads (the helpers
// included) from now on, its average started at n, until the test ends.
func withRunnable(t *testing.T, n int64) {
	t.Helper()
	old := cpuLoad.source.Load()
	src := func() (int64, bool) { return n, true }
	cpuLoad.source.Store(&src)
	processorsBusy() // the once
	cpuLoad.avg.Store(16 * max(0, n-cpuLoad.awake.Load()))
	cpuLoad.next.Store(0)
	t.Cleanup(func() {
		cpuLoad.source.Store(old)
		cpuLoad.avg.Store(0)
		cpuLoad.next.Store(0)
	})
}

// TestProcessorsBusyAverage checks the sampled average: busy once the
// runnable threads other than the helpers reach the processors' count,
// reached in a few samples, the awake helpers taken out, and a sample
// taken at most every busySampleEvery.
func TestProcessorsBusyAverage(t *testing.T) {
	ncpu := int64(runtime.NumCPU())
	withRunnable(t, 0)
	if processorsBusy() {
		t.Fatal("busy with no runnable thread")
	}
	var calls int
	src := func() (int64, bool) { calls++; return ncpu + 1, true }
	cpuLoad.source.Store(&src)
	busyAfter := 0
	for i := 1; i <= 20 && busyAfter == 0; i++ {
		cpuLoad.next.Store(0) // the sample is stale
		if processorsBusy() {
			busyAfter = i
		}
	}
	// (3a + 16(ncpu+1))/4 from 0 reaches 16 ncpu after a few samples.
	if busyAfter == 0 || busyAfter > 12 {
		t.Fatalf("busy after %d samples of %d runnable threads on %d processors", busyAfter, ncpu+1, ncpu)
	}
	// A fresh sample is not taken again before busySampleEvery.
	calls = 0
	for range 100 {
		processorsBusy()
	}
	if calls > 1 {
		t.Fatalf("%d samples in 100 calls within %v", calls, busySampleEvery)
	}
	// The helpers that may run do not count: with GOMAXPROCS 4 and 2
	// helpers awake, ncpu+1 runnable is ncpu-1 others, and the average
	// falls below ncpu.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	cpuLoad.awake.Add(2)
	defer cpuLoad.awake.Add(-2)
	idleAfter := 0
	for i := 1; i <= 40 && idleAfter == 0; i++ {
		cpuLoad.next.Store(0)
		if !processorsBusy() {
			idleAfter = i
		}
	}
	if idleAfter == 0 {
		t.Fatalf("still busy with %d runnable threads, 2 of them helpers, on %d processors (average %d/16)", ncpu+1, ncpu, cpuLoad.avg.Load())
	}
}

// TestProcessorsBusyReadsLoadavg takes a real sample on Linux: the
// thread taking it is running, so it counts at least one.
func TestProcessorsBusyReadsLoadavg(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/loadavg is Linux's")
	}
	old := cpuLoad.source.Load()
	cpuLoad.source.Store(nil)
	defer cpuLoad.source.Store(old)
	processorsBusy() // the once opens the file
	cpuLoad.sampling.Store(true)
	n, ok := sampleRunnable()
	cpuLoad.sampling.Store(false)
	if !ok || n < 1 {
		t.Fatalf("sampleRunnable() = %d, %v on Linux", n, ok)
	}
}

// TestMultiGetNoHelpersWhenBusy runs MultiGets of present keys on a store
// with three helpers: while every processor is taken, no helper takes a
// lookup and the answers are Get's; once processors are idle again, the
// helpers take lookups.
func TestMultiGetNoHelpersWhenBusy(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	d := helperStore(t, &Options{MultiGetParallelism: 4})
	defer d.Close()
	keys := make([][]byte, 64)
	run := func() {
		t.Helper()
		for b := 0; b < 200; b++ {
			r13Batch(keys, b)
			vals, errs := d.MultiGet(keys, nil)
			if err := r13Check(keys, vals, errs); err != nil {
				t.Fatal(err)
			}
		}
	}
	withRunnable(t, int64(runtime.NumCPU())+4)
	before := d.helpers.helped.Load()
	run()
	if got := d.helpers.helped.Load() - before; got != 0 {
		t.Fatalf("the helpers took %d lookups with every processor busy", got)
	}
	withRunnable(t, 0)
	run()
	if d.helpers.helped.Load() == before {
		t.Fatal("the helpers took no lookup with idle processors")
	}
}
