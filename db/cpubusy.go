package db

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Whether the machine's processors are all taken, for MultiGet's helpers.
//
// A helper saves its caller time only on a processor that would otherwise
// be idle. With every processor busy (other processes, or this one's own
// goroutines), a woken helper takes a processor from a thread that was
// running, often its caller's (Linux wakes a thread near its waker), and
// the batch goes no faster for it: with three processes spinning on two
// processors, present keys took 0.64x–1.03x the time of a loop of Get
// with a helper and 1.11x without (BENCHMARKS.md). So a MultiGet asks
// processorsBusy first, and reads alone when it says so.
//
// The count is Linux's: the fourth field of /proc/loadavg is the number
// of threads runnable at that instant, machine-wide. It is read at most
// every busySampleEvery, by whichever MultiGet first finds the sample
// stale, and averaged over the last samples (a quarter weight each). The
// DBs' own helpers that may be running are taken out of it, so that a
// helper that runs does not count against itself. Elsewhere, or when the
// file cannot be read, processorsBusy is always false.

// busySampleEvery is how often processorsBusy samples the runnable count:
// a read of /proc/loadavg costs a few microseconds, and a MultiGet of 64
// present keys about a hundred.
const busySampleEvery = 10 * time.Millisecond

// cpuLoad is the process's view of the machine's runnable threads.
var cpuLoad struct {
	once sync.Once // sets ncpu
	ncpu int64

	f *os.File // /proc/loadavg once opened; owned by the sampler

	sampling atomic.Bool  // a goroutine is taking a sample (it owns buf)
	next     atomic.Int64 // helperNow() at which the sample goes stale
	avg      atomic.Int64 // runnable threads other than helpers, ×16, averaged
	buf      [128]byte

	// awake counts the helpers of every DB that are not asleep.
	awake atomic.Int64
	// source, when set (tests), replaces /proc/loadavg: it returns the
	// runnable count and whether it has one.
	source atomic.Pointer[func() (int64, bool)]
}

// processorsBusy reports whether every processor of the machine seems
// taken by a runnable thread other than MultiGet's helpers.
func processorsBusy() bool {
	c := &cpuLoad
	c.once.Do(func() { c.ncpu = int64(runtime.NumCPU()) })
	if now := helperNow(); now >= c.next.Load() && c.sampling.CompareAndSwap(false, true) {
		c.next.Store(now + int64(busySampleEvery))
		if n, ok := sampleRunnable(); ok {
			// The helpers running now are threads of the count; there are
			// at most as many as the process's processors less the one
			// this goroutine holds, however many are awake (polling, or
			// queued for a processor, which the kernel does not see).
			helpers := min(c.awake.Load(), int64(runtime.GOMAXPROCS(0)-1))
			n = max(0, n-max(0, helpers))
			// Rounded up, so that a steady count settles at 16n (or one
			// above) from below as from above: busy exactly when n
			// reaches the processors' count.
			c.avg.Store((3*c.avg.Load() + 16*n + 3) / 4)
		}
		c.sampling.Store(false)
	}
	return c.avg.Load() >= 16*c.ncpu
}

// sampleRunnable returns the number of runnable threads on the machine;
// the caller holds cpuLoad.sampling.
func sampleRunnable() (int64, bool) {
	c := &cpuLoad
	if src := c.source.Load(); src != nil {
		return (*src)()
	}
	if c.f == nil {
		// Opened at the first sample, and again at the next ones after a
		// failure (a process out of descriptors for a moment).
		if runtime.GOOS != "linux" {
			return 0, false
		}
		f, err := os.Open("/proc/loadavg")
		if err != nil {
			return 0, false
		}
		c.f = f
	}
	n, _ := c.f.ReadAt(c.buf[:], 0)
	return parseRunnable(c.buf[:n])
}

// parseRunnable reads the runnable count from /proc/loadavg's text:
// "0.52 0.69 0.37 2/75 7749", the 2 before the slash of the fourth field.
func parseRunnable(b []byte) (int64, bool) {
	field := 0
	for i := 0; i < len(b); i++ {
		if b[i] == ' ' {
			field++
			continue
		}
		if field != 3 {
			continue
		}
		var n int64
		j := i
		for ; j < len(b) && b[j] >= '0' && b[j] <= '9' && j-i < 9; j++ {
			n = 10*n + int64(b[j]-'0')
		}
		if j == i || j == len(b) || b[j] != '/' {
			return 0, false
		}
		return n, true
	}
	return 0, false
}
