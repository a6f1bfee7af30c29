package main

// The range filter laboratory: kvbench filters --range.
//
//	kvbench filters --range [--range_bits LIST] [--range_widths LIST] [--range_sets LIST]
//	                [--keys N] [--probes N] [--repeat N] [--csv FILE] [--svg FILE]
//
// measures the Grafite range filter (filter.NewGrafiteRangePolicy) against
// its bound, filter.GrafiteFPR: a range of L integers that holds no key
// passes with probability at most L/2^(bits-2), whatever the keys and
// however the ranges are chosen, as long as the choice does not depend on
// the filter's hash. For each key set of --range_sets (random: --keys
// uniform random 64-bit integers; sequential: runs of consecutive integers
// with gaps of up to 2^20 between them, as filter's TestGrafiteRangeFPR
// makes them), stored as 8-byte big-endian keys, it builds one filter per
// bits per key of --range_bits (8,12,16,20), then for each width L of
// --range_widths (1,2,4,...,1024) queries it with --probes empty ranges
// [x, x+L) of two kinds:
//
//   - uniform: x uniform in the keys' span [smallest key, largest key),
//     drawn again while the range holds a key;
//   - correlated: x right after a key (key+1), each key at most once, in a
//     random order: all of them when fewer than --probes ranges after a
//     key are empty. These are the queries that defeat prefix-based range
//     filters (a scan that starts just past the last key it read); Grafite
//     promises the same bound for them.
//
// The ranges of a key set and width are the same for every bits per key.
// Each row gives the key set, bits per key, L, the bound, the measured rate
// of both kinds and each over the bound (meas/bd), the filter's actual bits
// per key (8·bytes/keys) and the nanoseconds per query of each kind (best
// of --repeat passes). The footer names any rate above the bound by more
// than 4 standard errors of its queries (rangeFPLimit). --csv writes the
// rows; the chart (kvbench-range-filters.svg unless --svg says otherwise)
// plots the rate against L, both on log scales, one panel per key set: the
// bound a thin line per bits per key, the uniform rates dots and the
// correlated ones diamonds.

import (
	"encoding/binary"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/filter"
)

// defaultRangeSVG is the chart kvbench filters --range draws unless --svg
// says otherwise (not the point laboratory's, which it would overwrite).
const defaultRangeSVG = "kvbench-range-filters.svg"

// Defaults of the range laboratory's flags.
const (
	defaultRangeBits   = "8,12,16,20"
	defaultRangeWidths = "1,2,4,8,16,32,64,128,256,512,1024"
	defaultRangeSets   = "random,sequential"
)

// rangeKeySet is a named generator of integer keys, not necessarily
// sorted or distinct.
type rangeKeySet struct {
	name, about string
	seed        uint64
	gen         func(rng *rand.Rand, n int) []uint64
}

// rangeKeySets are the key sets of --range_sets, in the order the help
// lists them (filter's TestGrafiteRangeFPR's two).
var rangeKeySets = []rangeKeySet{
	{"random", "uniform random 64-bit integers", 1, func(rng *rand.Rand, n int) []uint64 {
		ints := make([]uint64, n)
		for i := range ints {
			ints[i] = rng.Uint64()
		}
		return ints
	}},
	{"sequential", "runs from 0x0123456700000000 (a 3-byte common prefix): each integer 1 after the last or, half the time, 2 to 2^20+1 after it", 2,
		func(rng *rand.Rand, n int) []uint64 {
			ints := make([]uint64, n)
			x := uint64(0x0123456700000000)
			for i := range ints {
				if rng.IntN(2) == 0 {
					x++
				} else {
					x += 2 + rng.Uint64N(1<<20)
				}
				ints[i] = x
			}
			return ints
		}},
}

func rangeKeySetNames() []string {
	var names []string
	for _, s := range rangeKeySets {
		names = append(names, s.name)
	}
	return names
}

// rangeQueries is one kind of query (uniform or correlated) of a row.
type rangeQueries struct {
	Queries        int     // empty ranges queried (0: none could be made)
	FalsePositives int     // of them, those the filter let through
	Ns             float64 // per query, best of the passes
}

// Rate is FalsePositives/Queries, NaN without queries.
func (q rangeQueries) Rate() float64 {
	if q.Queries == 0 {
		return math.NaN()
	}
	return float64(q.FalsePositives) / float64(q.Queries)
}

// rangeRow is one key set, bits per key and range width.
type rangeRow struct {
	Set         string
	Bits        int
	Width       uint64
	Keys        int // distinct keys in the filter
	FilterBytes int
	ActualBits  float64 // 8*FilterBytes/Keys
	BuildNs     float64 // per key, best of the builds
	Bound       float64 // filter.GrafiteFPR(Bits, Width)

	Uniform, Correlated rangeQueries
}

// Ratio is q's rate over the bound.
func (r rangeRow) Ratio(q rangeQueries) float64 { return q.Rate() / r.Bound }

// Within reports whether q's false positives are within the bound plus 4
// standard errors (rangeFPLimit).
func (r rangeRow) Within(q rangeQueries) bool {
	return q.FalsePositives <= rangeFPLimit(q.Queries, r.Bound)
}

// rangeFPLimit returns the most false positives q ranges may give at rate
// bound: q·bound plus 4 standard errors of the binomial count,
// 4·sqrt(q·bound·(1-bound)). Where few are expected, and the normal
// approximation is too narrow, it is the count with the same one-sided
// tail probability (3.17e-5, P(Z > 4)) under the Poisson distribution of
// mean q·bound, if that is larger.
func rangeFPLimit(q int, bound float64) int {
	mean := float64(q) * bound
	limit := int(math.Floor(mean + 4*math.Sqrt(mean*(1-bound))))
	if mean > 200 {
		return limit // the normal approximation is good, and exp(-mean) would underflow soon
	}
	const tail = 3.17e-5
	pmf, cdf := math.Exp(-mean), 0.0
	for k := 0; ; k++ {
		cdf += pmf
		if 1-cdf <= tail {
			return max(limit, k)
		}
		pmf *= mean / float64(k+1)
	}
}

// rangeLabConfig is labConfig's range laboratory, its lists parsed.
type rangeLabConfig struct {
	keys, probes, repeat int
	bits                 []int
	widths               []uint64
	sets                 []rangeKeySet
	csvPath, svgPath     string
}

// parseList splits a comma-separated flag value into its items, refusing
// empty ones and repeats.
func parseList(flagName, s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--%s is empty", flagName)
	}
	var items []string
	for _, it := range strings.Split(s, ",") {
		it = strings.TrimSpace(it)
		if it == "" {
			return nil, fmt.Errorf("--%s=%q has an empty item", flagName, s)
		}
		if slices.Contains(items, it) {
			return nil, fmt.Errorf("--%s=%q names %s twice", flagName, s, it)
		}
		items = append(items, it)
	}
	return items, nil
}

// rangeConfig checks and parses c's flags for the range laboratory.
func (c *labConfig) rangeConfig() (*rangeLabConfig, error) {
	rc := &rangeLabConfig{keys: c.keys, probes: c.probes, repeat: max(c.repeat, 1), csvPath: c.csvPath, svgPath: c.svgPath}
	switch {
	case c.keys < 2:
		return nil, fmt.Errorf("--keys=%d: the range laboratory needs at least 2 keys (a span to draw ranges from)", c.keys)
	case c.probes < 1:
		return nil, fmt.Errorf("--probes=%d: must be positive", c.probes)
	}
	items, err := parseList("range_bits", c.rangeBits)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		b, err := strconv.Atoi(it)
		if err != nil {
			return nil, fmt.Errorf("--range_bits: %q is not a whole number", it)
		}
		if b < filter.GrafiteMinBitsPerKey || b > filter.GrafiteMaxBitsPerKey {
			return nil, fmt.Errorf("--range_bits: %d is outside %d..%d, the bits per key a Grafite filter takes",
				b, filter.GrafiteMinBitsPerKey, filter.GrafiteMaxBitsPerKey)
		}
		rc.bits = append(rc.bits, b)
	}
	if items, err = parseList("range_widths", c.rangeWidths); err != nil {
		return nil, err
	}
	for _, it := range items {
		w, err := strconv.ParseInt(it, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--range_widths: %q is not a whole number", it)
		}
		if w < 1 {
			return nil, fmt.Errorf("--range_widths: %d: a range holds at least 1 integer", w)
		}
		rc.widths = append(rc.widths, uint64(w))
	}
	if items, err = parseList("range_sets", c.rangeSets); err != nil {
		return nil, err
	}
	for _, it := range items {
		i := slices.IndexFunc(rangeKeySets, func(s rangeKeySet) bool { return s.name == it })
		if i < 0 {
			return nil, fmt.Errorf("--range_sets: unknown key set %q (have %s)", it, strings.Join(rangeKeySetNames(), ", "))
		}
		rc.sets = append(rc.sets, rangeKeySets[i])
	}
	slices.Sort(rc.bits)
	slices.Sort(rc.widths)
	return rc, nil
}

// rangeKeys are a key set's distinct integers, sorted, and the same as
// 8-byte big-endian keys.
type rangeKeys struct {
	ints []uint64
	keys [][]byte
}

func newRangeKeys(s rangeKeySet, n int) rangeKeys {
	ints := s.gen(rand.New(rand.NewPCG(s.seed, 0x72616e6765)), n)
	slices.Sort(ints)
	ints = slices.Compact(ints)
	arena := make([]byte, 8*len(ints))
	keys := make([][]byte, len(ints))
	for i, x := range ints {
		keys[i] = arena[8*i : 8*i+8]
		binary.BigEndian.PutUint64(keys[i], x)
	}
	return rangeKeys{ints, keys}
}

// empty reports whether no key lies in [x, x+l), and x+l does not wrap.
func (k *rangeKeys) empty(x, l uint64) bool {
	if x+l < x {
		return false
	}
	i, _ := slices.BinarySearch(k.ints, x)
	return i == len(k.ints) || k.ints[i]-x >= l
}

// uniformStarts returns n starts of empty ranges of l integers, uniform in
// the keys' span; an error if empty ranges are too rare there to find.
func (k *rangeKeys) uniformStarts(rng *rand.Rand, n int, l uint64) ([]uint64, error) {
	lo, hi := k.ints[0], k.ints[len(k.ints)-1]
	if hi == lo {
		return nil, fmt.Errorf("width %d: the keys are one integer, and span no range", l)
	}
	starts := make([]uint64, 0, n)
	tries, maxTries := 0, 64*n+10_000
	for len(starts) < n {
		if tries++; tries > maxTries {
			return nil, fmt.Errorf("width %d: only %d of %d ranges drawn in the keys' span were empty; use smaller --range_widths or fewer --keys",
				l, len(starts), tries-1)
		}
		if x := lo + rng.Uint64N(hi-lo); k.empty(x, l) {
			starts = append(starts, x)
		}
	}
	return starts, nil
}

// correlatedStarts returns the starts right after a key of empty ranges of
// l integers, at most n of them, each key at most once, in a random order.
func (k *rangeKeys) correlatedStarts(rng *rand.Rand, n int, l uint64) []uint64 {
	var starts []uint64
	for _, x := range k.ints {
		if x+1 > x && k.empty(x+1, l) {
			starts = append(starts, x+1)
		}
	}
	// A partial Fisher-Yates shuffle: a uniform sample without repeats.
	n = min(n, len(starts))
	for i := range n {
		j := i + rng.IntN(len(starts)-i)
		starts[i], starts[j] = starts[j], starts[i]
	}
	return starts[:n]
}

// rangeFilter is a filter built for one key set and bits per key.
type rangeFilter struct {
	bits    int
	data    []byte
	buildNs float64
}

// buildRangeFilter builds the filter of keys at bits per key, the best of
// repeat builds timed, and checks that every key's range [k, k+1) passes.
func buildRangeFilter(p filter.RangePolicy, bits int, keys [][]byte, repeat int) (rangeFilter, error) {
	f := rangeFilter{bits: bits}
	var best time.Duration
	for i := range repeat {
		runtime.GC()
		t0 := time.Now()
		b := filter.NewGrafiteRangePolicy(bits).NewBuilder()
		for _, k := range keys {
			b.AddKey(k)
		}
		data := b.Finish(nil)
		if d := time.Since(t0); i == 0 || d < best {
			best = d
		}
		f.data = data
	}
	f.buildNs = float64(best.Nanoseconds()) / float64(len(keys))
	var hi [8]byte
	for _, k := range keys {
		x := binary.BigEndian.Uint64(k)
		if x == math.MaxUint64 {
			continue // [k, k+1) has no 8-byte upper bound
		}
		binary.BigEndian.PutUint64(hi[:], x+1)
		if !p.MayContainRange(f.data, k, hi[:]) {
			return f, fmt.Errorf("%d bits/key: false negative for the range [%x, %x)", bits, k, hi)
		}
	}
	return f, nil
}

// queryRanges queries f with the ranges [x, x+l) of starts, repeat
// passes; it returns the false positives and the best pass's time per
// query.
func queryRanges(p filter.RangePolicy, f []byte, starts []uint64, l uint64, repeat int) rangeQueries {
	q := rangeQueries{Queries: len(starts)}
	if len(starts) == 0 {
		return q
	}
	var best time.Duration
	var a, z [8]byte
	for i := range repeat {
		fp := 0
		t0 := time.Now()
		for _, x := range starts {
			binary.BigEndian.PutUint64(a[:], x)
			binary.BigEndian.PutUint64(z[:], x+l)
			if p.MayContainRange(f, a[:], z[:]) {
				fp++
			}
		}
		if d := time.Since(t0); i == 0 || d < best {
			best = d
		}
		q.FalsePositives = fp
	}
	q.Ns = float64(best.Nanoseconds()) / float64(len(starts))
	return q
}

// runRangeLab is kvbench filters --range.
func runRangeLab(c *labConfig, out, errOut io.Writer) ([]rangeRow, error) {
	rc, err := c.rangeConfig()
	if err != nil {
		return nil, err
	}
	p := filter.NewGrafiteRangePolicy(16) // any bits per key reads any Grafite filter
	var rows []rangeRow
	cells, cell := len(rc.sets)*len(rc.widths), 0
	for _, s := range rc.sets {
		ks := newRangeKeys(s, rc.keys)
		var filters []rangeFilter
		for _, b := range rc.bits {
			fmt.Fprintf(errOut, "%-70s\r", fmt.Sprintf("range filters ... %s keys: building %d bits/key", s.name, b))
			f, err := buildRangeFilter(p, b, ks.keys, rc.repeat)
			if err != nil {
				return rows, fmt.Errorf("%s keys: %w", s.name, err)
			}
			filters = append(filters, f)
		}
		for _, l := range rc.widths {
			cell++
			fmt.Fprintf(errOut, "%-70s\r", fmt.Sprintf("range filters ... %d of %d: %s keys, L=%d", cell, cells, s.name, l))
			// The same ranges for every bits per key, whatever the other
			// widths and key sets of the run.
			rng := rand.New(rand.NewPCG(s.seed<<32|0x5eed, l))
			uniform, err := ks.uniformStarts(rng, rc.probes, l)
			if err != nil {
				return rows, fmt.Errorf("%s keys: %w", s.name, err)
			}
			correlated := ks.correlatedStarts(rng, rc.probes, l)
			for _, f := range filters {
				rows = append(rows, rangeRow{Set: s.name, Bits: f.bits, Width: l, Keys: len(ks.keys),
					FilterBytes: len(f.data), ActualBits: 8 * float64(len(f.data)) / float64(len(ks.keys)), BuildNs: f.buildNs,
					Bound:      filter.GrafiteFPR(f.bits, l),
					Uniform:    queryRanges(p, f.data, uniform, l, rc.repeat),
					Correlated: queryRanges(p, f.data, correlated, l, rc.repeat)})
			}
		}
	}
	fmt.Fprintf(errOut, "%70s\r", "")
	// The table runs by key set, then bits per key, then width.
	setOrder := func(name string) int {
		return slices.IndexFunc(rc.sets, func(s rangeKeySet) bool { return s.name == name })
	}
	slices.SortStableFunc(rows, func(a, b rangeRow) int {
		if d := setOrder(a.Set) - setOrder(b.Set); d != 0 {
			return d
		}
		if a.Bits != b.Bits {
			return a.Bits - b.Bits
		}
		switch {
		case a.Width < b.Width:
			return -1
		case a.Width > b.Width:
			return 1
		}
		return 0
	})

	fmt.Fprintf(out, "bloomkv range filter laboratory: Grafite (filter.NewGrafiteRangePolicy), %s keys per filter, 8-byte big-endian integers (%s) (%s, %d CPUs)\n",
		thousands(rc.keys), strings.Join(rangeSetNames(rc.sets), ", "), runtime.Version(), runtime.NumCPU())
	fmt.Fprintf(out, "%s empty ranges of L integers per row: uniform in the keys' span; correlated: right after a key, each key once (corr n: fewer when fewer are empty)\n\n",
		thousands(rc.probes))
	printRangeTable(out, rows)
	writeRangeFooter(out, rows)
	if rc.csvPath != "" {
		if err := writeFile(rc.csvPath, func(w io.Writer) error { return writeRangeCSV(w, rows) }); err != nil {
			return rows, err
		}
		fmt.Fprintf(out, "wrote %s\n", absPath(rc.csvPath))
	}
	if rc.svgPath != "" {
		times := "one pass"
		if rc.repeat > 1 {
			times = fmt.Sprintf("best of %d passes", rc.repeat)
		}
		sub := fmt.Sprintf("Grafite, %s 8-byte integer keys per filter; %s empty ranges per point (correlated: up to %s, right after a key); times: %s",
			thousands(rc.keys), thousands(rc.probes), thousands(rc.probes), times)
		if err := writeFile(rc.svgPath, func(w io.Writer) error { return writeRangeSVG(w, rows, sub) }); err != nil {
			return rows, err
		}
		fmt.Fprintf(out, "wrote %s\n", absPath(rc.svgPath))
	}
	return rows, nil
}

func rangeSetNames(sets []rangeKeySet) []string {
	var names []string
	for _, s := range sets {
		names = append(names, s.name)
	}
	return names
}

const rangeRuleWidth = 10 + 5 + 7 + 7 + 12 + 12 + 8 + 12 + 8 + 10 + 8 + 8

func printRangeTable(w io.Writer, rows []rangeRow) {
	fmt.Fprintf(w, "%-10s %4s %6s %6s %11s %11s %7s %11s %7s %9s %7s %7s\n",
		"key set", "bits", "actual", "L", "bound", "uniform", "meas/bd", "correlated", "meas/bd", "corr n", "unif ns", "corr ns")
	fmt.Fprintf(w, "%s\n", strings.Repeat("-", rangeRuleWidth))
	for i, r := range rows {
		if i > 0 && (r.Set != rows[i-1].Set || r.Bits != rows[i-1].Bits) {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%-10s %4d %6.2f %6d %11s %11s %7s %11s %7s %9s %7s %7s\n",
			r.Set, r.Bits, r.ActualBits, r.Width, pct(r.Bound),
			rateText(r.Uniform), ratioCell(r, r.Uniform), rateText(r.Correlated), ratioCell(r, r.Correlated),
			thousands(r.Correlated.Queries), nsCell(r.Uniform), nsCell(r.Correlated))
	}
}

func rateText(q rangeQueries) string {
	if q.Queries == 0 {
		return "-"
	}
	return pct(q.Rate())
}

func ratioCell(r rangeRow, q rangeQueries) string {
	if q.Queries == 0 {
		return "-"
	}
	s := fmt.Sprintf("%.3f", r.Ratio(q))
	if !r.Within(q) {
		s += "!"
	}
	return s
}

func nsCell(q rangeQueries) string {
	if q.Queries == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", q.Ns)
}

// writeRangeFooter explains the table and names the rates above the bound
// by more than chance allows.
func writeRangeFooter(w io.Writer, rows []rangeRow) {
	fmt.Fprintf(w, "\nbound is filter.GrafiteFPR, L/2^(bits-2) up to 1: the most an empty range of L integers passes, whatever the keys and\n"+
		"however the ranges are chosen (if not from the filter's hash). meas/bd is measured/bound; it may be well under 1 (the\n"+
		"bound is an upper bound), but not above 1 by more than chance: a row's false positives must not exceed the bound plus 4\n"+
		"standard errors of its queries (the Poisson tail where few are expected), marked ! if they do.\n")
	var over []string
	for _, r := range rows {
		for _, k := range []struct {
			name string
			q    rangeQueries
		}{{"uniform", r.Uniform}, {"correlated", r.Correlated}} {
			if k.q.Queries > 0 && !r.Within(k.q) {
				over = append(over, fmt.Sprintf("%s %d bits/key L=%d %s (%d of %d, limit %d)",
					r.Set, r.Bits, r.Width, k.name, k.q.FalsePositives, k.q.Queries, rangeFPLimit(k.q.Queries, r.Bound)))
			}
		}
	}
	if len(over) == 0 {
		fmt.Fprintf(w, "Every measured rate is within its bound plus 4 standard errors.\n")
	} else {
		fmt.Fprintf(w, "Above the bound plus 4 standard errors: %s.\n", strings.Join(over, "; "))
	}
}

var rangeCSVHeader = []string{"key_set", "bits_per_key", "width", "keys", "filter_bytes", "actual_bits_per_key", "build_ns_per_key",
	"bound_fpr", "uniform_queries", "uniform_false_positives", "uniform_fpr", "uniform_ratio", "uniform_ns",
	"correlated_queries", "correlated_false_positives", "correlated_fpr", "correlated_ratio", "correlated_ns"}

func writeRangeCSV(w io.Writer, rows []rangeRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(rangeCSVHeader); err != nil {
		return err
	}
	f := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	for _, r := range rows {
		rec := []string{r.Set, strconv.Itoa(r.Bits), strconv.FormatUint(r.Width, 10), strconv.Itoa(r.Keys),
			strconv.Itoa(r.FilterBytes), f(r.ActualBits), f(r.BuildNs), f(r.Bound)}
		for _, q := range []rangeQueries{r.Uniform, r.Correlated} {
			ns := math.NaN()
			if q.Queries > 0 {
				ns = q.Ns
			}
			rec = append(rec, strconv.Itoa(q.Queries), strconv.Itoa(q.FalsePositives), f(q.Rate()), f(r.Ratio(q)), f(ns))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// checkLabFlags refuses, with --range, the point laboratory's own flags,
// and without it the range laboratory's.
func checkLabFlags(rangeLab bool, set map[string]bool) error {
	pointOnly := []string{"min_bits", "max_bits", "policies", "keys_pattern", "probes_pattern"}
	rangeOnly := []string{"range_bits", "range_widths", "range_sets"}
	for _, n := range pointOnly {
		if rangeLab && set[n] {
			return fmt.Errorf("--%s does not apply with --range (the range laboratory takes --range_bits, --range_widths, --range_sets)", n)
		}
	}
	for _, n := range rangeOnly {
		if !rangeLab && set[n] {
			return fmt.Errorf("--%s needs --range", n)
		}
	}
	return nil
}

// rangeSetsHelp describes the key sets for --range_sets' help.
func rangeSetsHelp() string {
	var parts []string
	for _, s := range rangeKeySets {
		parts = append(parts, s.name+" ("+s.about+")")
	}
	return strings.Join(parts, "; ")
}
