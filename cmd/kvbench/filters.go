package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/filter"
)

// labConfig holds the flags of kvbench filters.
type labConfig struct {
	keys     int
	probes   int
	minBits  int
	maxBits  int
	policies string
	csvPath  string
	svgPath  string
	repeat   int
	// keysPattern and probesPattern pick the key streams (see labKeys).
	keysPattern   string
	probesPattern string
}

// defaultLabSVG is the chart kvbench filters draws unless --svg says
// otherwise.
const defaultLabSVG = "kvbench-filters.svg"

func defaultLabConfig() *labConfig {
	return &labConfig{keys: 100_000, probes: 1_000_000, minBits: 1, maxBits: 20, policies: "all", repeat: 2,
		svgPath: defaultLabSVG, keysPattern: "seq", probesPattern: "after"}
}

func (c *labConfig) registerFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.keys, "keys", c.keys, "keys added to each filter (about one table's worth; try 1000000 for large tables)")
	fs.IntVar(&c.probes, "probes", c.probes, "absent keys probed per filter (the measured rate's denominator)")
	fs.IntVar(&c.minBits, "min_bits", c.minBits, "smallest bits-per-key budget")
	fs.IntVar(&c.maxBits, "max_bits", c.maxBits, "largest bits-per-key budget")
	fs.StringVar(&c.policies, "policies", c.policies, "comma-separated policies and standalone filters, or all: "+strings.Join(labNames(), ", "))
	fs.IntVar(&c.repeat, "repeat", c.repeat, "build and probe each filter this many times and report the fastest (the rates are the same every time)")
	fs.StringVar(&c.csvPath, "csv", "", "also write the table as CSV to this file")
	fs.StringVar(&c.svgPath, "svg", c.svgPath, "draw the charts (false-positive rate and probe time against bits per key) as SVG in this file (\"\": draw none)")
	fs.StringVar(&c.keysPattern, "keys_pattern", c.keysPattern, "the keys added: seq (db_bench's %016d of 0..keys-1), spaced (%016d of 0, 2, 4, ...), random (%016d of random numbers)")
	fs.StringVar(&c.probesPattern, "probes_pattern", c.probesPattern, "the absent keys probed: after (%016d of the numbers after the keys), between (the odd numbers 1, 3, 5, ...: neighbours of spaced keys, then past them once the probes outnumber the keys), random (random numbers, never added)")
}

// labRow is one measured filter.
type labRow struct {
	Family         string  // policy or standalone filter name
	Budget         float64 // bits per key asked for (0: the filter has a fixed size)
	Probes         int     // hash probes per key, 0 when not applicable
	Keys           int     // keys in the filter
	Absent         int     // absent keys probed
	FilterBytes    int     // size of the filter
	ActualBits     float64 // 8*FilterBytes/Keys
	FalsePositives int     // absent keys the filter let through
	Measured       float64 // FalsePositives/Absent
	Theory         float64 // the expected rate; NaN when there is no formula
	BuildNs        float64 // build time per key
	ProbeNs        float64 // time per absent-key probe
}

// labSubject is one filter to build and measure.
type labSubject struct {
	family string
	budget float64 // the bits per key (or, for some filters, fingerprint bits) it is made with
	probes int
	theory float64 // NaN: no formula, or (for the standalone filters) known once built
	// build makes a filter of keys and returns its membership test, its
	// size in bytes and, when it depends on the filter built, its
	// theoretical rate (NaN: use theory).
	build func(keys [][]byte) (built, error)
}

// built is a filter ready for probing.
type built struct {
	contains func(key []byte) bool
	size     int
	theory   float64
	probes   int // hash probes per key, when the filter says
}

// standaloneKind is a family of set filters of package filter that are
// not Policies (sized by an expected key count and a target rate, or a
// fingerprint size, rather than a bits-per-key budget). subjects returns
// the filters to measure for n keys and the budgets of the run.
type standaloneKind struct {
	name     string
	about    string
	subjects func(n, minBits, maxBits int) []labSubject
}

// fppForBits is the target rate that makes a Bloom filter sized like
// Guava's (m = -n ln p / ln²2) spend bits bits per key: p = e^(-bits·ln²2).
func fppForBits(bits int) float64 { return math.Exp(-float64(bits) * math.Ln2 * math.Ln2) }

// standalones lists the standalone filters of package filter.
var standalones = []standaloneKind{
	{
		name:  "bloomfilter",
		about: "filter.BloomFilter (Guava sizing), target rate e^(-bits·ln²2) for each budget",
		subjects: func(n, lo, hi int) []labSubject {
			var subs []labSubject
			for b := lo; b <= hi; b++ {
				subs = append(subs, labSubject{family: "bloomfilter", budget: float64(b), theory: math.NaN(),
					build: func(keys [][]byte) (built, error) {
						f := filter.NewBloomFilter(uint64(len(keys)), fppForBits(b))
						for _, k := range keys {
							f.Add(k)
						}
						th := filter.EstimateFPR(float64(f.Bits())/float64(len(keys)), f.K())
						return built{f.MayContain, int(f.SizeInBytes()), th, f.K()}, nil
					}})
			}
			return subs
		},
	},
	{
		name:  "counting",
		about: "filter.CountingBloomFilter: 4-bit counters, so 4x the bits of the budget's Bloom filter (budgets up to max_bits/4)",
		subjects: func(n, lo, hi int) []labSubject {
			var subs []labSubject
			for b := lo; 4*b <= hi; b++ {
				subs = append(subs, labSubject{family: "counting", budget: float64(b), theory: math.NaN(),
					build: func(keys [][]byte) (built, error) {
						f := filter.NewCountingBloomFilter(uint64(len(keys)), fppForBits(b))
						for _, k := range keys {
							f.Add(k)
						}
						th := filter.EstimateFPR(float64(f.Counters())/float64(len(keys)), f.K())
						return built{f.MayContain, int(f.SizeInBytes()), th, f.K()}, nil
					}})
			}
			return subs
		},
	},
	{
		name:  "scalable",
		about: "filter.ScalableBloomFilter from 1/15 of the keys (four full stages), target rate e^(-bits·ln²2), even budgets",
		subjects: func(n, lo, hi int) []labSubject {
			var subs []labSubject
			for b := lo + lo%2; b <= hi; b += 2 {
				subs = append(subs, labSubject{family: "scalable", budget: float64(b), theory: math.NaN(),
					build: func(keys [][]byte) (built, error) {
						f := filter.NewScalableBloomFilter(uint64(max((len(keys)+14)/15, 1)), fppForBits(b))
						for _, k := range keys {
							f.Add(k)
						}
						return built{f.MayContain, int(f.SizeInBytes()), f.ExpectedFPP(), 0}, nil
					}})
			}
			return subs
		},
	},
	{
		name:  "cuckoo",
		about: "filter.CuckooFilter sized for the keys, fingerprints of 8, 12 and 16 bits (the budget column)",
		subjects: func(n, lo, hi int) []labSubject {
			var subs []labSubject
			for _, f := range []int{8, 12, 16} {
				subs = append(subs, labSubject{family: "cuckoo", budget: float64(f), theory: math.NaN(),
					build: func(keys [][]byte) (built, error) {
						c := filter.NewCuckooFilterWithBits(uint64(len(keys)), f)
						for _, k := range keys {
							if !c.Add(k) {
								return built{}, fmt.Errorf("cuckoo filter full after %d of %d keys", c.Count(), len(keys))
							}
						}
						th := -math.Expm1(8 * c.LoadFactor() * math.Log1p(-1/(math.Exp2(float64(f))-1)))
						return built{c.Contains, int(c.SizeInBytes()), th, 0}, nil
					}})
			}
			return subs
		},
	},
}

func labNames() []string {
	names := policyNames()
	for _, s := range standalones {
		names = append(names, s.name)
	}
	return names
}

func policySubject(pk policyKind, bits int) labSubject {
	p := pk.make(bits)
	s := labSubject{family: pk.name, budget: float64(bits), theory: math.NaN()}
	if bk, ok := p.(filter.BitsPerKeyer); ok {
		s.probes = bk.NumProbes()
	}
	if pk.theory != nil {
		s.theory = pk.theory(p, bits)
	}
	s.build = func(keys [][]byte) (built, error) {
		b := p.NewBuilder()
		for _, k := range keys {
			b.AddKey(k)
		}
		f := b.Finish(nil)
		return built{func(key []byte) bool { return p.MayContain(f, key) }, len(f), math.NaN(), 0}, nil
	}
	return s
}

// labSubjects lists what --policies selects, in a stable order.
func (c *labConfig) subjects() ([]labSubject, error) {
	want := map[string]bool{}
	all := c.policies == "" || c.policies == "all"
	for _, n := range strings.Split(c.policies, ",") {
		if n = strings.TrimSpace(n); n != "" && n != "all" {
			want[n] = true
		}
	}
	known := map[string]bool{}
	for _, n := range labNames() {
		known[n] = true
	}
	for n := range want {
		if !known[n] {
			return nil, fmt.Errorf("unknown filter %q (have %s)", n, strings.Join(labNames(), ", "))
		}
	}
	var subs []labSubject
	for _, n := range policyNames() {
		if !all && !want[n] {
			continue
		}
		pk := policies[n]
		before := len(subs)
		for bits := c.minBits; bits <= c.maxBits; bits++ {
			if pk.budgets == nil || slices.Contains(pk.budgets, bits) {
				subs = append(subs, policySubject(pk, bits))
			}
		}
		if len(subs) == before && !all {
			return nil, fmt.Errorf("filter %q makes filters only at %v bits per key, none within --min_bits=%d..--max_bits=%d", n, pk.budgets, c.minBits, c.maxBits)
		}
	}
	for _, s := range standalones {
		if all || want[s.name] {
			subs = append(subs, s.subjects(c.keys, c.minBits, c.maxBits)...)
		}
	}
	return subs, nil
}

// labKeys returns keys 0..n-1 and the absent keys n..n+probes-1, all in
// db_bench's %016d form, cut from two arenas.
func labKeys(n, probes int, keysPattern, probesPattern string) (present, absent [][]byte, err error) {
	mk := func(count int, num func(i int) int) [][]byte {
		arena := make([]byte, count*keyLen)
		keys := make([][]byte, count)
		for i := range keys {
			keys[i] = formatKey(arena[i*keyLen:], num(i))
		}
		return keys
	}
	// Random numbers are drawn by a fixed seed from [0, 10^15), odd for
	// the keys and even for the probes, so that no probe was added.
	rng := rand.New(rand.NewPCG(1, 2))
	switch keysPattern {
	case "seq":
		present = mk(n, func(i int) int { return i })
	case "spaced":
		present = mk(n, func(i int) int { return 2 * i })
	case "random":
		present = mk(n, func(int) int { return rng.IntN(5e14)*2 + 1 })
	default:
		return nil, nil, fmt.Errorf("unknown --keys_pattern %q (seq, spaced, random)", keysPattern)
	}
	switch probesPattern {
	case "after":
		from := n
		if keysPattern == "spaced" {
			from = 2 * n
		}
		if keysPattern == "random" {
			from = 1e15 // past every random key
		}
		absent = mk(probes, func(i int) int { return from + i })
	case "between":
		if keysPattern != "spaced" {
			return nil, nil, fmt.Errorf("--probes_pattern=between needs --keys_pattern=spaced (seq keys leave no number between them)")
		}
		absent = mk(probes, func(i int) int { return 2*(i%n) + 1 + 2*n*(i/n) })
	case "random":
		absent = mk(probes, func(int) int { return rng.IntN(5e14) * 2 })
		if keysPattern != "random" {
			// seq and spaced keys are small numbers: keep the probes above them.
			for i := range absent {
				formatKey(absent[i], 4*n+rng.IntN(5e14))
			}
		}
	default:
		return nil, nil, fmt.Errorf("unknown --probes_pattern %q (after, between, random)", probesPattern)
	}
	return present, absent, nil
}

// measure builds one filter and probes it; the times are the best of
// repeat builds and repeat probe passes (the machine may be busy).
func measure(s labSubject, present, absent [][]byte, repeat int) (labRow, error) {
	row := labRow{Family: s.family, Budget: s.budget, Probes: s.probes, Keys: len(present), Absent: len(absent), Theory: s.theory}
	var f built
	var bestBuild time.Duration
	for i := range max(repeat, 1) {
		runtime.GC()
		t0 := time.Now()
		b, err := s.build(present)
		d := time.Since(t0)
		if err != nil {
			return row, fmt.Errorf("%s %g: %w", s.family, s.budget, err)
		}
		if i == 0 || d < bestBuild {
			bestBuild = d
		}
		if i == 0 {
			f = b
		}
	}
	if !math.IsNaN(f.theory) {
		row.Theory = f.theory
	}
	if f.probes > 0 {
		row.Probes = f.probes
	}
	for _, k := range present {
		if !f.contains(k) {
			return row, fmt.Errorf("%s %g: false negative for key %q", s.family, s.budget, k)
		}
	}
	var bestProbe time.Duration
	for i := range max(repeat, 1) {
		fp := 0
		t0 := time.Now()
		for _, k := range absent {
			if f.contains(k) {
				fp++
			}
		}
		d := time.Since(t0)
		if i == 0 || d < bestProbe {
			bestProbe = d
		}
		row.FalsePositives = fp
	}
	row.FilterBytes = f.size
	row.ActualBits = 8 * float64(f.size) / float64(len(present))
	row.Measured = float64(row.FalsePositives) / float64(len(absent))
	row.BuildNs = float64(bestBuild.Nanoseconds()) / float64(len(present))
	row.ProbeNs = float64(bestProbe.Nanoseconds()) / float64(len(absent))
	return row, nil
}

// runFiltersCmd is kvbench filters.
func runFiltersCmd(args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("kvbench filters", flag.ContinueOnError)
	fs.SetOutput(errOut)
	c := defaultLabConfig()
	c.registerFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(errOut, "usage: kvbench filters [flags]\n\nMeasures every filter: false-positive rate over --probes absent keys against theory,\nactual bits per key, build ns per key, ns per absent-key probe; prints the table and\ndraws the charts to %s (--svg).\n\nfilter policies (one filter per budget of --min_bits..--max_bits bits per key):\n", defaultLabSVG)
		for _, n := range policyNames() {
			fmt.Fprintf(errOut, "  %-12s %s\n", n, policies[n].about)
		}
		fmt.Fprintf(errOut, "standalone filters:\n")
		for _, s := range standalones {
			fmt.Fprintf(errOut, "  %-12s %s\n", s.name, s.about)
		}
		fmt.Fprintf(errOut, "\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(canonicalArgs(fs, args)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	_, err := runLab(c, out, errOut)
	return err
}

func runLab(c *labConfig, out, errOut io.Writer) ([]labRow, error) {
	switch {
	case c.keys < 1 || c.probes < 1:
		return nil, errors.New("--keys and --probes must be positive")
	case c.keys+c.probes > maxKeyIndex:
		return nil, errors.New("--keys + --probes too large")
	case c.minBits < 1 || c.maxBits < c.minBits:
		return nil, errors.New("need 1 <= --min_bits <= --max_bits")
	}
	subs, err := c.subjects()
	if err != nil {
		return nil, err
	}
	present, absent, err := labKeys(c.keys, c.probes, c.keysPattern, c.probesPattern)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "bloomkv filter laboratory: %d keys per filter (%s), %d absent-key probes each (%s) (%s, %d CPUs)\n\n",
		c.keys, c.keysPattern, c.probes, c.probesPattern, runtime.Version(), runtime.NumCPU())
	printLabHeader(out)
	var rows []labRow
	for i, s := range subs {
		fmt.Fprintf(errOut, "filters ... %d of %d: %s %g bits/key      \r", i+1, len(subs), s.family, s.budget)
		row, err := measure(s, present, absent, c.repeat)
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
		printLabRow(out, row)
	}
	fmt.Fprintf(errOut, "%70s\r", "")
	fmt.Fprintf(out, "\nmeasured/theory near 1 means the filter keeps its promise; the lower bound for any filter is 2^-bits.\n"+
		"measured/theory below 1 is not a better filter: over %d probes a rate r is known to about ±2·sqrt(r/%d)\n"+
		"(±%.0f%% at 1%%, ±%.0f%% at 0.01%%), and theory is the mean over random keys and hashes, from which one filter's\n"+
		"bit pattern, and structured keys such as db_bench's, can sit either side.\n",
		c.probes, c.probes, 100*2/math.Sqrt(0.01*float64(c.probes)), 100*2/math.Sqrt(1e-4*float64(c.probes)))
	if c.csvPath != "" {
		if err := writeFile(c.csvPath, func(w io.Writer) error { return writeLabCSV(w, rows) }); err != nil {
			return rows, err
		}
		fmt.Fprintf(out, "wrote %s\n", c.csvPath)
	}
	if c.svgPath != "" {
		title := fmt.Sprintf("False-positive rate against bits per key (%s %s keys per filter, %s %s absent-key probes)",
			thousands(c.keys), c.keysPattern, thousands(c.probes), c.probesPattern)
		if err := writeFile(c.svgPath, func(w io.Writer) error { return writeLabSVG(w, rows, title, c.probes) }); err != nil {
			return rows, err
		}
		fmt.Fprintf(out, "wrote %s\n", c.svgPath)
	}
	return rows, nil
}

func printLabHeader(w io.Writer) {
	fmt.Fprintf(w, "%-12s %8s %8s %3s %12s %12s %8s %10s %9s %9s\n",
		"filter", "budget", "actual", "k", "theory FPR", "measured", "meas/th", "false pos", "build ns", "probe ns")
	fmt.Fprintf(w, "%s\n", strings.Repeat("-", 12+8+8+3+12+12+8+10+9+9+9))
}

func printLabRow(w io.Writer, r labRow) {
	budget := "-"
	if r.Budget > 0 {
		budget = strconv.FormatFloat(r.Budget, 'f', -1, 64)
	}
	k := "-"
	if r.Probes > 0 {
		k = strconv.Itoa(r.Probes)
	}
	theory, ratio := "-", "-"
	if !math.IsNaN(r.Theory) {
		theory = pct(r.Theory)
		if r.Theory > 0 {
			ratio = fmt.Sprintf("%.3f", r.Measured/r.Theory)
		}
	}
	fmt.Fprintf(w, "%-12s %8s %8.2f %3s %12s %12s %8s %10d %9.1f %9.1f\n",
		r.Family, budget, r.ActualBits, k, theory, pct(r.Measured), ratio, r.FalsePositives, r.BuildNs, r.ProbeNs)
}

// pct formats a rate as a percentage with four significant digits, in
// plain decimal notation at every size (0.8470%, 0.0001530%).
func pct(v float64) string {
	if v == 0 {
		return "0%"
	}
	digits := max(0, 3-int(math.Floor(math.Log10(100*v))))
	return strconv.FormatFloat(100*v, 'f', digits, 64) + "%"
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

var labCSVHeader = []string{"filter", "bits_per_key", "actual_bits_per_key", "probes", "keys", "absent_probes",
	"false_positives", "measured_fpr", "theory_fpr", "build_ns_per_key", "probe_ns"}

func writeLabCSV(w io.Writer, rows []labRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(labCSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range rows {
		theory := ""
		if !math.IsNaN(r.Theory) {
			theory = f(r.Theory)
		}
		rec := []string{r.Family, f(r.Budget), f(r.ActualBits), strconv.Itoa(r.Probes), strconv.Itoa(r.Keys), strconv.Itoa(r.Absent),
			strconv.Itoa(r.FalsePositives), f(r.Measured), theory, f(r.BuildNs), f(r.ProbeNs)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// families returns the distinct families of rows in order of appearance.
func families(rows []labRow) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		if !seen[r.Family] {
			seen[r.Family] = true
			out = append(out, r.Family)
		}
	}
	return out
}

// sortedByActual returns rows in order of actual bits per key.
func sortedByActual(rows []labRow) []labRow {
	out := slices.Clone(rows)
	sort.SliceStable(out, func(i, j int) bool { return out[i].ActualBits < out[j].ActualBits })
	return out
}

// sortedByBudget returns a family's rows in order of budget.
func sortedByBudget(rows []labRow, family string) []labRow {
	var out []labRow
	for _, r := range rows {
		if r.Family == family {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Budget < out[j].Budget })
	return out
}
