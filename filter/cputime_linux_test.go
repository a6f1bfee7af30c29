package filter

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuClock measures the CPU time of the benchmark's own thread, which a
// busy shared machine disturbs much less than wall time: time the thread
// spends waiting for a CPU is not counted, while its cache and TLB misses
// are. Benchmarks report it as the cpu-ns/op metric next to ns/op.
type cpuClock struct{ start time.Duration }

func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startCPU locks the benchmark goroutine to its thread and starts the clock.
func startCPU(b *testing.B) *cpuClock {
	runtime.LockOSThread()
	b.ResetTimer()
	return &cpuClock{start: threadCPU()}
}

// stop reports cpu-ns/op and unlocks the thread.
func (c *cpuClock) stop(b *testing.B) {
	d := threadCPU() - c.start
	b.StopTimer()
	runtime.UnlockOSThread()
	if b.N > 0 && d > 0 {
		b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
