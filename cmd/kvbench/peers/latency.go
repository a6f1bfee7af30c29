package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// latencies are the Get latencies of one readwhilewriting run, every one
// of them, sorted: the percentiles are exact (a run of --reads Gets per
// reader keeps 8 bytes a Get).
type latencies struct {
	ns []int64
}

func newLatencies(ns []int64) *latencies {
	slices.Sort(ns)
	return &latencies{ns: ns}
}

func (l *latencies) count() int { return len(l.ns) }

// percentile returns the latency at fraction p of the sorted Gets (the
// nearest rank: the smallest latency that at least p of the Gets do not
// exceed).
func (l *latencies) percentile(p float64) time.Duration {
	if len(l.ns) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(l.ns)))) - 1
	return time.Duration(l.ns[min(max(i, 0), len(l.ns)-1)])
}

func (l *latencies) max() time.Duration { return l.percentile(1) }

// over returns how many Gets took longer than d.
func (l *latencies) over(d time.Duration) int {
	return len(l.ns) - sort.Search(len(l.ns), func(i int) bool { return l.ns[i] > int64(d) })
}

// latencyBucket is one bucket of the histogram: Gets that took at least
// lo and less than hi.
type latencyBucket struct {
	lo, hi time.Duration
	count  int
}

// between returns how many Gets took at least lo and less than hi.
func (l *latencies) between(lo, hi time.Duration) int {
	i := sort.Search(len(l.ns), func(k int) bool { return l.ns[k] >= int64(lo) })
	j := sort.Search(len(l.ns), func(k int) bool { return l.ns[k] >= int64(hi) })
	return j - i
}

// bucketEdges returns the edges of the log2 buckets that hold every
// latency up to slowest: 0, 1 µs, 2 µs, 4 µs, ...
func bucketEdges(slowest time.Duration) []time.Duration {
	edges := []time.Duration{0}
	for e := time.Microsecond; ; e *= 2 {
		edges = append(edges, e)
		if e > slowest {
			return edges
		}
	}
}

// buckets returns the histogram in log2 buckets, [0, 1 µs), [1, 2 µs),
// [2, 4 µs), ..., from the first non-empty one to the slowest Get's.
func (l *latencies) buckets() []latencyBucket {
	edges := bucketEdges(l.max())
	var bs []latencyBucket
	for i := 1; i < len(edges); i++ {
		c := l.between(edges[i-1], edges[i])
		if c > 0 || len(bs) > 0 {
			bs = append(bs, latencyBucket{edges[i-1], edges[i], c})
		}
	}
	return bs
}

// latencySummary is what the report gives of a run's Get latencies, in
// microseconds.
type latencySummary struct {
	Count     int     `json:"count"`
	P50       float64 `json:"p50_us"`
	P99       float64 `json:"p99_us"`
	P999      float64 `json:"p99_9_us"`
	Max       float64 `json:"max_us"`
	SlowUs    float64 `json:"slow_threshold_us"`
	Slow      int     `json:"slow"`
	Histogram []struct {
		Lo    float64 `json:"lo_us"`
		Hi    float64 `json:"hi_us"`
		Count int     `json:"count"`
	} `json:"histogram"`
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func (l *latencies) summary(slow time.Duration) *latencySummary {
	s := &latencySummary{
		Count: l.count(),
		P50:   us(l.percentile(0.5)), P99: us(l.percentile(0.99)), P999: us(l.percentile(0.999)), Max: us(l.max()),
		SlowUs: us(slow), Slow: l.over(slow),
	}
	for _, b := range l.buckets() {
		s.Histogram = append(s.Histogram, struct {
			Lo    float64 `json:"lo_us"`
			Hi    float64 `json:"hi_us"`
			Count int     `json:"count"`
		}{us(b.lo), us(b.hi), b.count})
	}
	return s
}

// printHistograms prints the Get latency histograms of the engines side
// by side: a row per log2 bucket, from the first that any engine uses to
// the slowest Get's, and per engine the Gets in it and their share.
func printHistograms(out io.Writer, names []string, lats map[string]*latencies) {
	var slowest time.Duration
	for _, n := range names {
		slowest = max(slowest, lats[n].max())
	}
	edges := bucketEdges(slowest)
	rows := [][]string{append([]string{"Get latency"}, names...)}
	for i := 1; i < len(edges); i++ {
		row := []string{fmt.Sprintf("[%s, %s)", fmtDur(edges[i-1]), fmtDur(edges[i]))}
		any := false
		for _, n := range names {
			l := lats[n]
			cell := ""
			if c := l.between(edges[i-1], edges[i]); c > 0 {
				cell = fmt.Sprintf("%s (%s)", thousands(float64(c)), share(c, l.count()))
				any = true
			}
			row = append(row, cell)
		}
		if any || len(rows) > 1 {
			rows = append(rows, row)
		}
	}
	writeMarkdownTable(out, rows)
}

// share formats c/n as a percentage with the digits a tail needs.
func share(c, n int) string {
	p := 100 * float64(c) / float64(n)
	switch {
	case p >= 1:
		return fmt.Sprintf("%.1f%%", p)
	case p >= 0.01:
		return fmt.Sprintf("%.2f%%", p)
	}
	return fmt.Sprintf("%.4f%%", p)
}

// fmtDur formats a bucket bound: 0, 1µs ... 512µs, 1.0ms, 2.0ms ... 1.0s.
func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d/time.Microsecond)
	case d < time.Second:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(d)/1e6), ".0") + "ms"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(d)/1e9), ".0") + "s"
}
