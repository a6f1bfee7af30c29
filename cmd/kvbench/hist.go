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
// are exact, and so are the counts of db_bench's rows (dbBenchLimits),
// which are kept beside the buckets.
type histogram struct {
	counts [histBuckets]uint64
	rows   [len(dbBenchLimits) + 1]uint64 // rows[r]: values in [dbBenchLimits[r-1], dbBenchLimits[r]) ns
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
	b := bucketOf(v)
	h.counts[b]++
	h.rows[rowOf(b, v)]++
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
	for i, c := range o.rows {
		h.rows[i] += c
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

// dbBenchLimits are the upper limits, in nanoseconds, of the rows of
// db_bench's histogram table, which it gives in microseconds: 1 to 10, then
// 12, 14, 16, 18, 20, 25, 30, 35, 40, 45, 50, 60, 70, 80, 90 and 100 times
// each power of ten from 1 to 1e9, up to 1e10 µs (2.8 hours). A last row
// holds what lies beyond.
var dbBenchLimits = [154]int64(func() []int64 {
	var l []int64
	for i := int64(1); i <= 10; i++ {
		l = append(l, i*1000)
	}
	for p := int64(1000); p <= 1e11; p *= 10 {
		for _, m := range []int64{12, 14, 16, 18, 20, 25, 30, 35, 40, 45, 50, 60, 70, 80, 90, 100} {
			l = append(l, m*p)
		}
	}
	return l
}())

// bucketRow[b] is the row of dbBenchLimits that holds the smallest value of
// bucket b. A bucket spans less than 1/64 of its values and two limits
// are at least 1/9 apart, so a value of bucket b lies in that row or the
// next: rowOf needs one comparison.
var bucketRow = func() (rows [histBuckets]uint8) {
	for b := range rows {
		lo, _ := bucketBounds(b)
		rows[b] = uint8(sort.Search(len(dbBenchLimits), func(r int) bool { return lo < dbBenchLimits[r] }))
	}
	return rows
}()

// rowOf is the row of dbBenchLimits holding v, which is in bucket b.
func rowOf(b int, v int64) int {
	r := int(bucketRow[b])
	if r < len(dbBenchLimits) && v >= dbBenchLimits[r] {
		r++
	}
	return r
}

// rowBounds returns row r's limits in microseconds, hi = +Inf for the last.
func rowBounds(r int) (lo, hi float64) {
	if r > 0 {
		lo = float64(dbBenchLimits[r-1]) / 1e3
	}
	hi = math.Inf(1)
	if r < len(dbBenchLimits) {
		hi = float64(dbBenchLimits[r]) / 1e3
	}
	return lo, hi
}

// dbBenchString renders the histogram as db_bench's --histogram does,
// under the title "Microseconds per <unit>:" (op, or call for the
// benchmarks that time a call of many ops): the summary (count, average,
// standard deviation, min, median, max and RocksDB's percentile line, in
// microseconds) and the table of rows [lo, hi) with the count, its share,
// the cumulative share and a bar of '#' (20 for 100%), empty rows left
// out, then a blank line.
func (h *histogram) dbBenchString(unit string) string {
	if h == nil || h.n == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Microseconds per %s:\n", unit)
	fmt.Fprintf(&b, "Count: %d  Average: %.4f  StdDev: %.2f\n", h.n, h.mean()/1e3, h.stddev()/1e3)
	fmt.Fprintf(&b, "Min: %.4f  Median: %.4f  Max: %.4f\n", us(time.Duration(h.min)), us(h.percentile(0.5)), us(time.Duration(h.max)))
	fmt.Fprintf(&b, "Percentiles: P50: %.2f P75: %.2f P99: %.2f P99.9: %.2f P99.99: %.2f\n",
		us(h.percentile(0.5)), us(h.percentile(0.75)), us(h.percentile(0.99)), us(h.percentile(0.999)), us(h.percentile(0.9999)))
	fmt.Fprintf(&b, "------------------------------------------------------\n")
	var cum uint64
	for r, c := range h.rows {
		if c == 0 {
			continue
		}
		lo, hi := rowBounds(r)
		cum += c
		share := float64(c) / float64(h.n)
		fmt.Fprintf(&b, "[ %7.0f, %7.0f ) %7d %7.3f%% %7.3f%% %s\n", lo, hi, c, 100*share, 100*float64(cum)/float64(h.n),
			strings.Repeat("#", int(20*share+0.5)))
	}
	b.WriteString("\n")
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
