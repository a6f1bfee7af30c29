package main

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
	"time"
)

// histSubBits is log2 of the number of linear sub-buckets per power of
// two: 64 sub-buckets bound a percentile's error by 1/64 (1.6%).
const histSubBits = 6

// histBuckets covers every int64 nanosecond count.
const histBuckets = (64 - histSubBits + 1) << histSubBits

// histogram records latencies in nanoseconds in log-linear buckets: fixed
// memory whatever the number of operations, cheap to merge across threads,
// and percentiles within 1.6% of the exact value. Count, sum, min and max
// are exact.
type histogram struct {
	counts [histBuckets]uint32
	n      int64
	sum    float64
	sumSq  float64
	min    int64
	max    int64
}

func newHistogram() *histogram { return &histogram{min: math.MaxInt64} }

func bucketOf(v int64) int {
	if v < 1<<histSubBits {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - histSubBits // >= 1
	return e<<histSubBits | int(uint64(v)>>(e-1))&(1<<histSubBits-1)
}

// bucketBounds returns the smallest and largest values of bucket b.
func bucketBounds(b int) (lo, hi int64) {
	e, m := b>>histSubBits, int64(b&(1<<histSubBits-1))
	if e == 0 {
		return m, m
	}
	lo = (1<<histSubBits | m) << (e - 1)
	return lo, lo + 1<<(e-1) - 1
}

func (h *histogram) add(d time.Duration) {
	v := int64(d)
	h.counts[bucketOf(v)]++
	h.n++
	f := float64(v)
	h.sum += f
	h.sumSq += f * f
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

func (h *histogram) merge(o *histogram) {
	if o == nil {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.sumSq += o.sumSq
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// percentile returns the latency below which a fraction p of the
// operations fall (the middle of the bucket holding that rank, clamped to
// the observed min and max).
func (h *histogram) percentile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(p * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen int64
	for b, c := range h.counts {
		seen += int64(c)
		if seen >= rank {
			lo, hi := bucketBounds(b)
			return time.Duration(min(max((lo+hi)/2, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}

func (h *histogram) mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

func (h *histogram) stddev() float64 {
	if h.n == 0 {
		return 0
	}
	m := h.mean()
	return math.Sqrt(max(h.sumSq/float64(h.n)-m*m, 0))
}

// dbBenchLimits are the upper limits, in microseconds, of the rows of
// db_bench's histogram table: 1 to 10, then 12, 14, 16, 18, 20, 25, 30, 35,
// 40, 45, 50, 60, 70, 80, 90 times each power of ten, up to 1e10 µs.
var dbBenchLimits = func() []float64 {
	var l []float64
	for i := 1; i <= 10; i++ {
		l = append(l, float64(i))
	}
	for p := 10.0; p < 1e10; p *= 10 {
		for _, m := range []float64{1.2, 1.4, 1.6, 1.8, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10} {
			l = append(l, m*p)
		}
	}
	return l
}()

// dbBenchString renders the histogram as db_bench's --histogram does: the
// summary (count, average, standard deviation, min, median, max and
// percentiles, in microseconds) and the table of rows [lo, hi) with the
// count, its share, the cumulative share and a bar of '#'. Rows follow
// db_bench's limits; each of the histogram's own (finer) buckets goes to
// the row holding its midpoint, and empty rows are left out.
func (h *histogram) dbBenchString() string {
	if h == nil || h.n == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Microseconds per op:\n")
	fmt.Fprintf(&b, "Count: %d  Average: %.4f  StdDev: %.2f\n", h.n, h.mean()/1e3, h.stddev()/1e3)
	fmt.Fprintf(&b, "Min: %.4f  Median: %.4f  Max: %.4f\n", us(time.Duration(h.min)), us(h.percentile(0.5)), us(time.Duration(h.max)))
	fmt.Fprintf(&b, "Percentiles: P50: %.2f P75: %.2f P99: %.2f P99.9: %.2f P99.99: %.2f\n",
		us(h.percentile(0.5)), us(h.percentile(0.75)), us(h.percentile(0.99)), us(h.percentile(0.999)), us(h.percentile(0.9999)))
	fmt.Fprintf(&b, "------------------------------------------------------\n")
	rows := make([]int64, len(dbBenchLimits)+1)
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		lo, hi := bucketBounds(i)
		mid := float64(lo+hi) / 2 / 1e3
		rows[sort.SearchFloat64s(dbBenchLimits, math.Nextafter(mid, math.Inf(1)))] += int64(c)
	}
	var cum int64
	for r, c := range rows {
		if c == 0 {
			continue
		}
		lo := 0.0
		if r > 0 {
			lo = dbBenchLimits[r-1]
		}
		hi := math.Inf(1)
		if r < len(dbBenchLimits) {
			hi = dbBenchLimits[r]
		}
		cum += c
		share := 100 * float64(c) / float64(h.n)
		fmt.Fprintf(&b, "[ %7.0f, %7.0f ) %7d %7.3f%% %7.3f%% %s\n", lo, hi, c, share, 100*float64(cum)/float64(h.n),
			strings.Repeat("#", int(math.Round(share/5))))
	}
	return b.String()
}

// latencySummary is the percentiles kvbench reports, in microseconds.
type latencySummary struct {
	Count  int64   `json:"count"`
	Mean   float64 `json:"mean_us"`
	StdDev float64 `json:"stddev_us"`
	Min    float64 `json:"min_us"`
	P50    float64 `json:"p50_us"`
	P95    float64 `json:"p95_us"`
	P99    float64 `json:"p99_us"`
	P999   float64 `json:"p99_9_us"`
	Max    float64 `json:"max_us"`
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

func (h *histogram) summary() *latencySummary {
	if h == nil || h.n == 0 {
		return nil
	}
	return &latencySummary{
		Count:  h.n,
		Mean:   h.mean() / 1e3,
		StdDev: h.stddev() / 1e3,
		Min:    us(time.Duration(h.min)),
		P50:    us(h.percentile(0.50)),
		P95:    us(h.percentile(0.95)),
		P99:    us(h.percentile(0.99)),
		P999:   us(h.percentile(0.999)),
		Max:    us(time.Duration(h.max)),
	}
}

// String is the line --histogram prints under a result.
func (s *latencySummary) String() string {
	return fmt.Sprintf("latency µs: p50 %.3f  p95 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  (count %d, avg %.3f, stddev %.3f, min %.3f)",
		s.P50, s.P95, s.P99, s.P999, s.Max, s.Count, s.Mean, s.StdDev, s.Min)
}
