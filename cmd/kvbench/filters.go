package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/workload"
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
	// rangeLab is --range: measure the Grafite range filter instead
	// (rangelab.go), at each bits per key of rangeBits and width of
	// rangeWidths over the key sets of rangeSets (comma-separated lists).
	rangeLab                          bool
	rangeBits, rangeWidths, rangeSets string
}

// defaultLabSVG is the chart kvbench filters draws unless --svg says
// otherwise.
const defaultLabSVG = "kvbench-filters.svg"

func defaultLabConfig() *labConfig {
	return &labConfig{keys: 100_000, probes: 1_000_000, minBits: 1, maxBits: 20, policies: "all", repeat: 2,
		svgPath: defaultLabSVG, keysPattern: "seq", probesPattern: "after",
		rangeBits: defaultRangeBits, rangeWidths: defaultRangeWidths, rangeSets: defaultRangeSets}
}

func (c *labConfig) registerFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.keys, "keys", c.keys, "keys added to each filter (about one table's worth; try 1000000 for large tables)")
	fs.IntVar(&c.probes, "probes", c.probes, "absent keys probed per filter (the measured rate's denominator); with --range, empty ranges of each kind per row")
	fs.IntVar(&c.minBits, "min_bits", c.minBits, "smallest bits-per-key budget")
	fs.IntVar(&c.maxBits, "max_bits", c.maxBits, "largest bits-per-key budget")
	fs.StringVar(&c.policies, "policies", c.policies, "comma-separated policies and standalone filters, or all: "+strings.Join(labNames(), ", "))
	fs.IntVar(&c.repeat, "repeat", c.repeat, "build and probe each filter this many times and report the fastest (the rates are the same every time)")
	fs.StringVar(&c.csvPath, "csv", "", "also write the table as CSV to this file")
	fs.StringVar(&c.svgPath, "svg", c.svgPath, "draw the charts (false-positive rate, measured/theory and probe time against bits per key) as SVG in this file (\"\": draw none)")
	fs.StringVar(&c.keysPattern, "keys_pattern", c.keysPattern, "the keys added: "+patternHelp(keysPatterns))
	fs.StringVar(&c.probesPattern, "probes_pattern", c.probesPattern, "the absent keys probed: "+patternHelp(probesPatterns))
	fs.BoolVar(&c.rangeLab, "range", false, "measure the Grafite range filter instead: false-positive rate on empty ranges of each --range_widths "+
		"integers against its bound L/2^(bits-2), per --range_bits and --range_sets key set, over --keys keys and --probes ranges of each kind "+
		"(uniform and correlated); chart to "+defaultRangeSVG+" unless --svg says otherwise")
	fs.StringVar(&c.rangeBits, "range_bits", c.rangeBits, fmt.Sprintf("with --range: comma-separated bits per key, each in %d..%d",
		filter.GrafiteMinBitsPerKey, filter.GrafiteMaxBitsPerKey))
	fs.StringVar(&c.rangeWidths, "range_widths", c.rangeWidths, "with --range: comma-separated range widths L, integers per range, each at least 1")
	fs.StringVar(&c.rangeSets, "range_sets", c.rangeSets, "with --range: comma-separated key sets of 8-byte big-endian integers: "+rangeSetsHelp())
}

// keyPattern is one value of --keys_pattern or --probes_pattern.
type keyPattern struct{ name, about string }

// keysPatterns and probesPatterns are the key streams labKeys makes, in
// the order the help lists them. Every key is db_bench's: 16 decimal
// digits, except the 15-byte missing probes.
var (
	keysPatterns = []keyPattern{
		{"seq", "db_bench's fillseq keys, %016d of 0..keys-1"},
		{"spaced", "%016d of 0, 2, 4, ...: db_bench's keys with a gap after each"},
		{"random", "%016d of random odd numbers below 10^15"},
	}
	probesPatterns = []keyPattern{
		{"after", "%016d of the numbers after the largest key"},
		{"between", "%016d of the odd numbers 1, 3, 5, ...: each a neighbour of two spaced keys, then past them once the probes outnumber the keys; needs --keys_pattern=spaced"},
		{"random", "%016d of random even numbers, above every seq and spaced key"},
		{"missing", "db_bench's readmissing keys: each added key in turn with its last digit dropped (15 bytes; the probes repeat, seq keys give keys/10 distinct ones)"},
	}
)

func patternHelp(ps []keyPattern) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, p.name+" ("+p.about+")")
	}
	return strings.Join(parts, "; ")
}

func patternNames(ps []keyPattern) string {
	var names []string
	for _, p := range ps {
		names = append(names, p.name)
	}
	return strings.Join(names, ", ")
}

// labRow is one measured filter.
type labRow struct {
	Family         string  // policy or standalone filter name
	Budget         float64 // bits per key asked for (0: the filter has a fixed size)
	Probes         int     // hash probes per key, 0 when not applicable
	Keys           int     // keys in the filter
	Absent         int     // absent keys probed
	Distinct       int     // distinct absent keys among them
	FilterBytes    int     // size of the filter
	ActualBits     float64 // 8*FilterBytes/Keys
	FalsePositives int     // absent keys the filter let through
	Measured       float64 // FalsePositives/Absent
	Theory         float64 // the expected rate; NaN when there is no formula
	BuildNs        float64 // build time per key
	ProbeNs        float64 // time per absent-key probe
	// Spread is the relative standard deviation of a Bloom filter's
	// rate from one filter to another over the same number of keys (the
	// bits set vary); 0 when not known.
	Spread float64
	// SetBits is the share of a Bloom filter's bits that are set and
	// SetBitsTheory the share k independent uniform positions per key
	// would set, 1-(1-1/m)^(kn); both NaN for other filters.
	SetBits, SetBitsTheory float64
}

// Ratio is Measured/Theory, NaN without a theory.
func (r labRow) Ratio() float64 {
	if math.IsNaN(r.Theory) || r.Theory <= 0 {
		return math.NaN()
	}
	return r.Measured / r.Theory
}

// RatioErr is two standard errors of Ratio from chance: the rate measured
// over Distinct independent probes, each a false positive with
// probability Theory, has relative variance (1-t)/(t·Distinct), and the
// filter itself, one of many that theory averages over, adds Spread². A
// filter that keeps its promise has Ratio within 1 ± RatioErr about 19
// times in 20.
func (r labRow) RatioErr() float64 {
	t := r.Theory
	if math.IsNaN(t) || t <= 0 || r.Distinct < 1 {
		return math.NaN()
	}
	return 2 * math.Sqrt((1-t)/(t*float64(r.Distinct))+r.Spread*r.Spread)
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
	probes   int     // hash probes per key, when the filter says
	spread   float64 // labRow.Spread
	// setBits and setBitsTheory are labRow's, when known (else NaN).
	setBits, setBitsTheory float64
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
						return built{contains: f.MayContain, size: int(f.SizeInBytes()), theory: th, probes: f.K(),
							spread: bloomSpread(int(f.Bits()), f.K(), len(keys)), setBits: math.NaN(), setBitsTheory: math.NaN()}, nil
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
						return built{contains: f.MayContain, size: int(f.SizeInBytes()), theory: th, probes: f.K(),
							spread: bloomSpread(int(f.Counters()), f.K(), len(keys)), setBits: math.NaN(), setBitsTheory: math.NaN()}, nil
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
						return built{contains: f.MayContain, size: int(f.SizeInBytes()), theory: f.ExpectedFPP(),
							setBits: math.NaN(), setBitsTheory: math.NaN()}, nil
					}})
			}
			return subs
		},
	},
	{
		name:  "cuckoo",
		about: "filter.CuckooFilter sized for the keys, fingerprints of each multiple of 4 bits in [min_bits, max_bits] (the budget column)",
		subjects: func(n, lo, hi int) []labSubject {
			var subs []labSubject
			for f := max((lo+3)/4*4, filter.MinCuckooFingerprintBits); f <= min(hi, filter.MaxCuckooFingerprintBits); f += 4 {
				subs = append(subs, labSubject{family: "cuckoo", budget: float64(f), theory: math.NaN(),
					build: func(keys [][]byte) (built, error) {
						c := filter.NewCuckooFilterWithBits(uint64(len(keys)), f)
						for _, k := range keys {
							if !c.Add(k) {
								return built{}, fmt.Errorf("cuckoo filter full after %d of %d keys", c.Count(), len(keys))
							}
						}
						th := -math.Expm1(8 * c.LoadFactor() * math.Log1p(-1/(math.Exp2(float64(f))-1)))
						return built{contains: c.Contains, size: int(c.SizeInBytes()), theory: th,
							setBits: math.NaN(), setBitsTheory: math.NaN()}, nil
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

// labAbout overrides a policy's about text (written for --filter_policy
// and --bloom_bits, which kvbench filters does not have) where the
// laboratory measures it differently.
var labAbout = map[string]string{
	"binaryfuse": "binary fuse, measured at budget 8 (8-bit fingerprints) and 16 (16-bit)",
}

func policyAbout(name string) string {
	if a, ok := labAbout[name]; ok {
		return a
	}
	return policies[name].about
}

// bitArrayFamilies are the policies whose filters are a bit array of m
// bits followed by one byte k, the number of probes (filter.BloomPolicyName's
// and LevelDB's encodings). For them the laboratory takes m and k from the
// filter built, for theory, and counts the bits set.
var bitArrayFamilies = []string{"bloom", "leveldb"}

// bitArrayStats returns the bit count, probe count and set bits of f in
// that encoding; ok is false when its last byte is not wantK.
func bitArrayStats(f []byte, wantK int) (m, k, set int, ok bool) {
	if len(f) < 2 || int(f[len(f)-1]) != wantK || wantK < 1 || wantK > filter.MaxProbes {
		return 0, 0, 0, false
	}
	for _, b := range f[:len(f)-1] {
		set += bits.OnesCount8(b)
	}
	return 8 * (len(f) - 1), wantK, set, true
}

// bloomTheoryExact is the rate of a Bloom filter of m bits holding n keys
// with k independent uniform probes each, (1-(1-1/m)^(kn))^k, and the
// share of bits set, 1-(1-1/m)^(kn).
func bloomTheoryExact(m, k, n int) (rate, setBits float64) {
	setBits = -math.Expm1(float64(k) * float64(n) * math.Log1p(-1/float64(m)))
	return math.Pow(setBits, float64(k)), setBits
}

// bloomSpread is the relative standard deviation of the rate of Bloom
// filters of m bits holding n keys with k independent uniform probes
// each, from the spread of the bits they set. With N = kn throws into m
// bins, a = (1-1/m)^N and b = (1-2/m)^N, the empty bins E have variance
// m(m-1)b + ma - m²a²; the rate is about ρ^k for the share ρ = 1-E/m of
// bits set, so its relative deviation is k·sd(ρ)/ρ.
func bloomSpread(m, k, n int) float64 {
	if m < 2 || k < 1 {
		return 0
	}
	fm, throws := float64(m), float64(k)*float64(n)
	a := math.Exp(throws * math.Log1p(-1/fm))
	b := math.Exp(throws * math.Log1p(-2/fm))
	v := fm*(fm-1)*b + fm*a - fm*fm*a*a
	rho := 1 - a
	if v <= 0 || rho <= 0 {
		return 0
	}
	return float64(k) * math.Sqrt(v) / fm / rho
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
	bitArray := slices.Contains(bitArrayFamilies, pk.name) && s.probes > 0
	s.build = func(keys [][]byte) (built, error) {
		b := p.NewBuilder()
		for _, k := range keys {
			b.AddKey(k)
		}
		f := b.Finish(nil)
		out := built{contains: func(key []byte) bool { return p.MayContain(f, key) }, size: len(f),
			theory: math.NaN(), setBits: math.NaN(), setBitsTheory: math.NaN()}
		if m, k, set, ok := bitArrayStats(f, s.probes); bitArray && ok {
			out.theory, out.setBitsTheory = bloomTheoryExact(m, k, len(keys))
			out.setBits = float64(set) / float64(m)
			out.spread = bloomSpread(m, k, len(keys))
		}
		return out, nil
	}
	return s
}

// subjects lists what --policies selects, in a stable order.
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

// labKeys returns the n keys to add and the probes absent keys to probe,
// as --keys_pattern and --probes_pattern describe them (keysPatterns,
// probesPatterns), cut from two arenas. No probe is a key: the random
// keys are odd and the random probes even, the after and random probes
// lie above every seq and spaced key, between probes are odd where spaced
// keys are even, and missing probes are 15 bytes long.
func labKeys(n, probes int, keysPattern, probesPattern string) (present, absent [][]byte, err error) {
	mk := func(count, size int, num func(i int) int) [][]byte {
		arena := make([]byte, count*keyLen)
		keys := make([][]byte, count)
		for i := range keys {
			keys[i] = workload.FormatKey(arena[i*keyLen:], num(i))[:size]
		}
		return keys
	}
	// Random numbers are drawn by a fixed seed from [0, 10^15), odd for
	// the keys and even for the probes, so that no probe was added.
	rng := rand.New(rand.NewPCG(1, 2))
	nums := make([]int, n)
	switch keysPattern {
	case "seq":
		for i := range nums {
			nums[i] = i
		}
	case "spaced":
		for i := range nums {
			nums[i] = 2 * i
		}
	case "random":
		for i := range nums {
			nums[i] = rng.IntN(5e14)*2 + 1
		}
	default:
		return nil, nil, fmt.Errorf("unknown --keys_pattern %q (have %s)", keysPattern, patternNames(keysPatterns))
	}
	present = mk(n, keyLen, func(i int) int { return nums[i] })
	switch probesPattern {
	case "after":
		from := n
		switch keysPattern {
		case "spaced":
			from = 2 * n
		case "random":
			from = 1e15 // past every random key
		}
		absent = mk(probes, keyLen, func(i int) int { return from + i })
	case "between":
		if keysPattern != "spaced" {
			return nil, nil, fmt.Errorf("--probes_pattern=between needs --keys_pattern=spaced (%s keys leave no number between them that is theirs)", keysPattern)
		}
		absent = mk(probes, keyLen, func(i int) int { return 2*(i%n) + 1 + 2*n*(i/n) })
	case "random":
		low := 0
		if keysPattern != "random" {
			low = 2*n + 2 // seq and spaced keys are small numbers: keep the probes above them
		}
		absent = mk(probes, keyLen, func(int) int { return low + rng.IntN(5e14)*2 })
	case "missing":
		absent = mk(probes, keyLen-1, func(i int) int { return nums[i%n] })
	default:
		return nil, nil, fmt.Errorf("unknown --probes_pattern %q (have %s)", probesPattern, patternNames(probesPatterns))
	}
	return present, absent, nil
}

// distinctKeys counts the distinct keys of keys.
func distinctKeys(keys [][]byte) int {
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		seen[string(k)] = struct{}{}
	}
	return len(seen)
}

// measure builds one filter and probes it; the times are the best of
// repeat builds and repeat probe passes (the machine may be busy). It
// returns the filter too.
func measure(s labSubject, present, absent [][]byte, repeat int) (labRow, built, error) {
	row := labRow{Family: s.family, Budget: s.budget, Probes: s.probes, Keys: len(present), Absent: len(absent),
		Distinct: len(absent), Theory: s.theory}
	var f built
	var bestBuild time.Duration
	for i := range max(repeat, 1) {
		runtime.GC()
		t0 := time.Now()
		b, err := s.build(present)
		d := time.Since(t0)
		if err != nil {
			return row, f, fmt.Errorf("%s %g: %w", s.family, s.budget, err)
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
	row.Spread, row.SetBits, row.SetBitsTheory = f.spread, f.setBits, f.setBitsTheory
	for _, k := range present {
		if !f.contains(k) {
			return row, f, fmt.Errorf("%s %g: false negative for key %q", s.family, s.budget, k)
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
	return row, f, nil
}

// runFiltersCmd is kvbench filters.
func runFiltersCmd(args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("kvbench filters", flag.ContinueOnError)
	fs.SetOutput(errOut)
	c := defaultLabConfig()
	c.registerFlags(fs)
	fs.Usage = func() { labUsage(fs, errOut) }
	if err := fs.Parse(canonicalArgs(fs, args)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := checkLabFlags(c.rangeLab, set); err != nil {
		return err
	}
	if c.rangeLab {
		if !set["svg"] {
			c.svgPath = defaultRangeSVG
		}
		_, err := runRangeLab(c, out, errOut)
		return err
	}
	_, err := runLab(c, out, errOut)
	return err
}

func labUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "usage: kvbench filters [flags]\n\n"+
		"Measures every filter: false-positive rate over --probes absent keys against theory,\n"+
		"actual bits per key, build ns per key, ns per absent-key probe; prints the table and\n"+
		"draws the charts to %s in the working directory (--svg names another file,\n"+
		"--svg= draws none).\n\n"+
		"Multi-word flags keep db_bench's underscores (--keys_pattern); hyphens work too (--keys-pattern).\n\n"+
		"filter policies (one filter per budget of --min_bits..--max_bits bits per key):\n", defaultLabSVG)
	for _, n := range policyNames() {
		fmt.Fprintf(w, "  %-12s %s\n", n, policyAbout(n))
	}
	fmt.Fprintf(w, "standalone filters:\n")
	for _, s := range standalones {
		fmt.Fprintf(w, "  %-12s %s\n", s.name, s.about)
	}
	fmt.Fprintf(w, "\n"+
		"kvbench filters --range [--range_bits LIST] [--range_widths LIST] [--range_sets LIST] [--keys N] [--probes N]\n"+
		"measures the Grafite range filter (filter.NewGrafiteRangePolicy) instead. For each key set it builds one filter\n"+
		"per bits per key of --range_bits (%s) over --keys 8-byte big-endian integer keys, and queries it for\n"+
		"each width L of --range_widths (%s)\n"+
		"with --probes empty ranges [x, x+L) of two kinds: uniform (x uniform in the keys' span, drawn again while the\n"+
		"range holds a key) and correlated (x right after a key, each key once: all such empty ranges when fewer).\n"+
		"Each row: key set, bits per key, L, the bound filter.GrafiteFPR = L/2^(bits-2), the measured rates and each over\n"+
		"the bound, the filter's actual bits per key and ns per query; a rate above the bound by more than 4 standard\n"+
		"errors is marked !. --csv writes the rows; the chart (rate against L, log scales) goes to\n"+
		"%s unless --svg says otherwise. --min_bits, --max_bits, --policies and the patterns\n"+
		"do not apply. Key sets (--range_sets):\n",
		defaultRangeBits, defaultRangeWidths, defaultRangeSVG)
	for _, s := range rangeKeySets {
		fmt.Fprintf(w, "  %-12s %s\n", s.name, s.about)
	}
	fmt.Fprintf(w, "\nflags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func runLab(c *labConfig, out, errOut io.Writer) ([]labRow, error) {
	switch {
	case c.keys < 1 || c.probes < 1:
		return nil, errors.New("--keys and --probes must be positive")
	case c.keys+c.probes > maxKeyIndex/4:
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
	distinct := len(absent)
	if c.probesPattern == "missing" {
		distinct = distinctKeys(absent)
	}
	distinctText := ""
	if distinct != len(absent) {
		distinctText = ", " + thousands(distinct) + " distinct"
	}
	fmt.Fprintf(out, "bloomkv filter laboratory: %s keys per filter (%s), %s absent-key probes each (%s%s) (%s, %d CPUs)\n\n",
		thousands(c.keys), c.keysPattern, thousands(c.probes), c.probesPattern, distinctText, runtime.Version(), runtime.NumCPU())
	printLabHeader(out)
	var rows []labRow
	floors := map[string]*labFloor{}
	for i, s := range subs {
		fmt.Fprintf(errOut, "filters ... %d of %d: %s %g bits/key      \r", i+1, len(subs), s.family, s.budget)
		row, f, err := measure(s, present, absent, c.repeat)
		if err != nil {
			return rows, err
		}
		row.Distinct = distinct
		rows = append(rows, row)
		printLabRow(out, row)
		if floors[s.family] == nil {
			floors[s.family] = &labFloor{}
		}
		floors[s.family].add(f.contains, absent)
	}
	fmt.Fprintf(errOut, "%70s\r", "")
	writeLabFooter(out, c, rows, floors)
	if c.csvPath != "" {
		if err := writeFile(c.csvPath, func(w io.Writer) error { return writeLabCSV(w, rows) }); err != nil {
			return rows, err
		}
		fmt.Fprintf(out, "wrote %s\n", absPath(c.csvPath))
	}
	if c.svgPath != "" {
		times := "one pass"
		if c.repeat > 1 {
			times = fmt.Sprintf("best of %d passes", c.repeat)
		}
		sub := fmt.Sprintf("%s %s keys per filter, %s %s absent-key probes%s; times: %s",
			thousands(c.keys), c.keysPattern, thousands(c.probes), c.probesPattern, distinctText, times)
		if err := writeFile(c.svgPath, func(w io.Writer) error { return writeLabSVG(w, rows, sub, distinct) }); err != nil {
			return rows, err
		}
		fmt.Fprintf(out, "wrote %s\n", absPath(c.svgPath))
	}
	return rows, nil
}

// absPath is path made absolute, or path itself if that fails.
func absPath(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}

const labRuleWidth = 12 + 8 + 8 + 3 + 12 + 12 + 8 + 7 + 10 + 9 + 9 + 10

func printLabHeader(w io.Writer) {
	fmt.Fprintf(w, "%-12s %8s %8s %3s %12s %12s %8s %6s %10s %9s %9s\n",
		"filter", "budget", "actual", "k", "theory FPR", "measured", "meas/th", "±2σ", "false pos", "build ns", "probe ns")
	fmt.Fprintf(w, "%s\n", strings.Repeat("-", labRuleWidth))
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
	theory, ratio, sd := "-", "-", "-"
	if !math.IsNaN(r.Theory) {
		theory = pct(r.Theory)
	}
	if v := r.Ratio(); !math.IsNaN(v) {
		ratio = fmt.Sprintf("%.3f", v)
		sd = fmt.Sprintf("±%.3f", r.RatioErr())
	}
	fmt.Fprintf(w, "%-12s %8s %8.2f %3s %12s %12s %8s %6s %10d %9.1f %9.1f\n",
		r.Family, budget, r.ActualBits, k, theory, pct(r.Measured), ratio, sd, r.FalsePositives, r.BuildNs, r.ProbeNs)
}

// labCaveats explain, under the table, a family whose ratios leave the
// band of chance for reasons measured outside this run (BENCHMARKS.md,
// Filters, has the figures).
var labCaveats = map[string]string{
	"leveldb": "leveldb departs from theory by the design of its 32-bit hash, not by chance. Some of db_bench's %016d keys hash\n" +
		"  to one value, so an absent key that shares a key's hash passes at every budget (a floor, above, when the run has one); and its\n" +
		"  probes h+i·rotr(h,17) are not independent (the third, ≈ h+rotr(h,16), takes only 196,606 of the 2^32 values), so its filter has\n" +
		"  fewer bits set than theory (above) and the other absent keys pass less often. Which wins depends on the numbers that meet:\n" +
		"  100,000 sequential keys share no hash with the numbers after them (meas/th below 1), 20,000 do; the neighbours of\n" +
		"  spaced keys share more as the keys grow (--keys_pattern=spaced --probes_pattern=between). BENCHMARKS.md has the figures.",
}

// labFloor follows the absent keys that every filter of a family let
// through so far. Where hashing is independent at each size, a probe
// that passes the largest filter is a matter of chance; a probe that
// passes all of them at a rate far above the largest one's theory shares
// something with a key that no budget separates (its whole hash).
type labFloor struct {
	filters int
	passed  []int32 // indexes into the probes
}

// add probes the keys that passed every earlier filter of the family with
// contains (all of them for the first).
func (fl *labFloor) add(contains func([]byte) bool, absent [][]byte) {
	var next []int32
	if fl.filters == 0 {
		for i, k := range absent {
			if contains(k) {
				next = append(next, int32(i))
			}
		}
	} else {
		next = fl.passed[:0]
		for _, i := range fl.passed {
			if contains(absent[i]) {
				next = append(next, i)
			}
		}
	}
	fl.passed = next
	fl.filters++
}

// writeLabFooter explains the table, with this run's figures: how far
// chance moves measured/theory, which filters are outside that, the
// absent keys no filter of a family stops, and the bits a Bloom filter
// has set against theory.
func writeLabFooter(w io.Writer, c *labConfig, rows []labRow, floors map[string]*labFloor) {
	distinct := c.probes
	if len(rows) > 0 {
		distinct = rows[0].Distinct
	}
	at := func(t float64) float64 { return labRow{Theory: t, Distinct: distinct}.RatioErr() }
	fmt.Fprintf(w, "\nmeas/th is measured/theory. ±2σ is how far chance moves it: sampling over %s distinct probes, 2·sqrt((1-t)/(t·probes))\n"+
		"for theory t (±%.3f at 1%%, ±%.2f at 0.01%%), and for the Bloom filters (bloom, leveldb, bloomfilter, counting) the spread of\n"+
		"one filter's set bits around theory's mean. A filter that keeps its promise is within 1 ± 2σ, but for about 1 row in 20;\n"+
		"for the others ±2σ is sampling alone, and at high rates their own spread can put a row just outside.\n"+
		"Bloom theory is (1-(1-1/m)^(kn))^k with each filter's own m and k, so no rounding of m or k moves a ratio.\n"+
		"The lower bound for any filter is 2^-bits.\n", thousands(distinct), at(0.01), at(1e-4))

	// Families with ratios outside the band of chance.
	var outside []string
	var caveats []string
	for _, fam := range families(rows) {
		var out, total int
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range rows {
			v, e := r.Ratio(), r.RatioErr()
			if r.Family != fam || math.IsNaN(v) {
				continue
			}
			total++
			if math.Abs(v-1) > e {
				out++
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		if out == 0 {
			continue
		}
		rng := fmt.Sprintf("%.3f", lo)
		if hi != lo {
			rng += "-" + fmt.Sprintf("%.3f", hi)
		}
		outside = append(outside, fmt.Sprintf("%s %d of %d (%s)", fam, out, total, rng))
		if cv, ok := labCaveats[fam]; ok {
			caveats = append(caveats, cv)
		}
	}
	if len(outside) == 0 {
		fmt.Fprintf(w, "Every ratio is within 1 ± 2σ.\n")
	} else {
		fmt.Fprintf(w, "Outside 1 ± 2σ: %s.\n", strings.Join(outside, ", "))
	}

	// Absent keys that no budget stops.
	for _, fam := range families(rows) {
		fl := floors[fam]
		fr := familyRows(rows, fam)
		if fl == nil || fl.filters < 3 {
			continue
		}
		top := fr[len(fr)-1]
		rate := float64(len(fl.passed)) / float64(max(top.Absent, 1))
		if len(fl.passed) < 10 || math.IsNaN(top.Theory) || rate < 2*top.Theory {
			continue
		}
		fmt.Fprintf(w, "%s: %s absent keys (%s) passed every filter of it, %g to %g bits/key: a floor no budget lowers (theory at %g: %s).\n",
			fam, thousands(len(fl.passed)), pct(rate), fr[0].Budget, top.Budget, top.Budget, pct(top.Theory))
	}

	// Bits set, at the budget nearest 10 bits per key.
	var set []string
	for _, fam := range families(rows) {
		var best *labRow
		for i, r := range rows {
			if r.Family == fam && !math.IsNaN(r.SetBits) && (best == nil || math.Abs(r.Budget-10) < math.Abs(best.Budget-10)) {
				best = &rows[i]
			}
		}
		if best != nil {
			set = append(set, fmt.Sprintf("%s %g bits/key %s (theory %s)", fam, best.Budget, pct(best.SetBits), pct(best.SetBitsTheory)))
		}
	}
	if len(set) > 0 {
		fmt.Fprintf(w, "Bits set, against theory's 1-(1-1/m)^(kn) for k independent uniform positions per key:\n")
		for _, s := range set {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	for _, cv := range caveats {
		fmt.Fprintf(w, "%s\n", cv)
	}
}

// pct formats a rate as a percentage with four significant digits, in
// plain decimal notation at every size (0.8470%, 0.0001530%).
func pct(v float64) string {
	if v == 0 {
		return "0%"
	}
	digits := max(0, 3-int(math.Floor(math.Log10(100*v))))
	s := strconv.FormatFloat(100*v, 'f', digits, 64)
	// Rounding can carry into a new digit (9.9996% -> 10.000%): keep four.
	if d := strings.TrimLeft(strings.Replace(s, ".", "", 1), "0"); len(d) > 4 && digits > 0 {
		s = strconv.FormatFloat(100*v, 'f', digits-1, 64)
	}
	return s + "%"
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
	"false_positives", "measured_fpr", "theory_fpr", "build_ns_per_key", "probe_ns",
	"distinct_probes", "ratio_2sd", "set_bits", "set_bits_theory"}

func writeLabCSV(w io.Writer, rows []labRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(labCSVHeader); err != nil {
		return err
	}
	f := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	for _, r := range rows {
		rec := []string{r.Family, f(r.Budget), f(r.ActualBits), strconv.Itoa(r.Probes), strconv.Itoa(r.Keys), strconv.Itoa(r.Absent),
			strconv.Itoa(r.FalsePositives), f(r.Measured), f(r.Theory), f(r.BuildNs), f(r.ProbeNs),
			strconv.Itoa(r.Distinct), f(r.RatioErr()), f(r.SetBits), f(r.SetBitsTheory)}
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

// familyRows returns a family's rows in order of actual bits per key,
// then budget.
func familyRows(rows []labRow, family string) []labRow {
	var out []labRow
	for _, r := range rows {
		if r.Family == family {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].ActualBits != out[j].ActualBits {
			return out[i].ActualBits < out[j].ActualBits
		}
		return out[i].Budget < out[j].Budget
	})
	return out
}
