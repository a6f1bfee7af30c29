package main

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
)

func TestFiltersSubcommand(t *testing.T) {
	dir := t.TempDir()
	csvPath, svgPath := filepath.Join(dir, "f.csv"), filepath.Join(dir, "f.svg")
	var out bytes.Buffer
	args := []string{"--keys=3000", "--probes=30000", "--repeat=1", "--csv=" + csvPath, "--svg=" + svgPath}
	if err := runFiltersCmd(args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())

	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v", err)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(labCSVHeader, ",") {
		t.Fatalf("CSV header = %v", recs[0])
	}
	subs, err := (&labConfig{keys: 3000, minBits: 1, maxBits: 20, policies: "all"}).subjects()
	if err != nil {
		t.Fatal(err)
	}
	wantRows := len(subs)
	if len(recs)-1 != wantRows {
		t.Errorf("CSV has %d rows, want %d", len(recs)-1, wantRows)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	num := func(rec []string, name string) float64 {
		v, err := strconv.ParseFloat(rec[col[name]], 64)
		if err != nil {
			t.Fatalf("%s = %q: %v", name, rec[col[name]], err)
		}
		return v
	}
	seen := map[string]int{}
	var fams []string
	withTheory := 0
	for _, rec := range recs[1:] {
		fam := rec[col["filter"]]
		if seen[fam] == 0 {
			fams = append(fams, fam)
		}
		seen[fam]++
		bits := num(rec, "bits_per_key")
		measured := num(rec, "measured_fpr")
		if num(rec, "absent_probes") != 30000 || num(rec, "keys") != 3000 || num(rec, "distinct_probes") != 30000 {
			t.Errorf("%v: wrong key counts", rec)
		}
		if measured < 0 || measured > 1 || num(rec, "build_ns_per_key") <= 0 || num(rec, "probe_ns") <= 0 {
			t.Errorf("%v: implausible figures", rec)
		}
		if rec[col["theory_fpr"]] != "" {
			withTheory++
		}
		// The 64-bit Bloom policy keeps its promise at every budget:
		// within the run's own ±2σ, widened by half for the one row in
		// twenty that chance puts outside it.
		if fam == "bloom" {
			theory := num(rec, "theory_fpr")
			if math.Abs(measured/theory-1) > 1.5*num(rec, "ratio_2sd")+1e-4/theory {
				t.Errorf("bloom %g bits/key: measured %.5f, theory %.5f ± %.3f", bits, measured, theory, num(rec, "ratio_2sd"))
			}
			if actual := num(rec, "actual_bits_per_key"); actual < bits || actual > bits+0.5 {
				t.Errorf("bloom %g bits/key: actual %.3f bits/key", bits, actual)
			}
			if s := num(rec, "set_bits"); s <= 0 || s >= 1 {
				t.Errorf("bloom %g bits/key: set bits %v", bits, s)
			}
		}
	}
	for name, pk := range policies {
		if want := 20; seen[name] != want && (pk.budgets == nil || seen[name] != len(pk.budgets)) {
			t.Errorf("policy %s: %d rows, want %d", name, seen[name], want)
		}
	}

	data, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, data, fams, wantRows, withTheory)
}

// svgChart is what parseSVG read from a chart.
type svgChart struct {
	classes map[string]int            // marks by class token
	byFam   map[string]map[string]int // marks by panel family and class token
	panels  map[string]int            // panels per family
	texts   string
}

// parseSVG parses data as XML, checks that it is an SVG document and
// counts its marks by class, overall and per panel family.
func parseSVG(t *testing.T, data []byte) svgChart {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	c := svgChart{classes: map[string]int{}, byFam: map[string]map[string]int{}, panels: map[string]int{}}
	var root string
	var texts []string
	var famStack []string // the family of each open element's panel, "" outside
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
				if el.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace %q", el.Name.Space)
				}
			}
			fam := ""
			if len(famStack) > 0 {
				fam = famStack[len(famStack)-1]
			}
			var class string
			for _, a := range el.Attr {
				switch a.Name.Local {
				case "class":
					class = a.Value
				case "data-family":
					fam = a.Value
				}
			}
			if class == "panel" {
				c.panels[fam]++
			}
			for _, cl := range strings.Fields(class) {
				c.classes[cl]++
				if fam != "" {
					if c.byFam[fam] == nil {
						c.byFam[fam] = map[string]int{}
					}
					c.byFam[fam][cl]++
				}
			}
			famStack = append(famStack, fam)
		case xml.EndElement:
			famStack = famStack[:len(famStack)-1]
		case xml.CharData:
			texts = append(texts, string(el))
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	c.texts = strings.Join(texts, " ")
	return c
}

// checkSVG checks a chart of points filters (withTheory of them with a
// theory) in fams: one rate panel and one probe-time panel per family,
// each with a theory line; one rate mark and one probe-time mark per
// filter and, with a theory, one measured/theory mark and band; the other
// families' filters in grey behind each probe-time panel.
func checkSVG(t *testing.T, data []byte, fams []string, points, withTheory int) {
	t.Helper()
	c := parseSVG(t, data)
	for _, want := range []string{"bits per key", "false-positive rate", "meas/th", "theory", "measured",
		"Probe time", "1%", "0.01%"} {
		if !strings.Contains(c.texts, want) {
			t.Errorf("SVG has no text %q", want)
		}
	}
	for _, f := range fams {
		if c.panels[f] != 2 {
			t.Errorf("family %s has %d panels, want 2 (rate, probe time)", f, c.panels[f])
		}
		if c.byFam[f]["theory"] < 2 {
			t.Errorf("family %s: %d theory marks, want its rates' and the strip's line at 1", f, c.byFam[f]["theory"])
		}
		if c.byFam[f]["measured"] == 0 || c.byFam[f]["probe-ns"] != c.byFam[f]["measured"] {
			t.Errorf("family %s: %d rate marks, %d probe-time marks", f, c.byFam[f]["measured"], c.byFam[f]["probe-ns"])
		}
	}
	for class, want := range map[string]int{
		"measured": points, "probe-ns": points, "ratio": withTheory, "band": withTheory,
		"bound": len(fams), "context": points * (len(fams) - 1),
	} {
		if got := c.classes[class]; got != want {
			t.Errorf("SVG has %d marks of class %q, want %d", got, class, want)
		}
	}
}

func TestFiltersBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--keys=0"},
		{"--min_bits=5", "--max_bits=4"},
		{"--policies=nonesuch"},
		{"--keys_pattern=nonesuch"},
		{"--probes_pattern=nonesuch"},
		{"--keys_pattern=seq", "--probes_pattern=between"},
		{"--bloom_bits=10"},
		{"extra"},
	} {
		if err := runFiltersCmd(append([]string{"--keys=10", "--probes=10", "--svg="}, args...), io.Discard, io.Discard); err == nil {
			t.Errorf("filters %v succeeded", args)
		}
	}
}

func TestDecadeLabel(t *testing.T) {
	for d, want := range map[float64]string{1: "100%", 0.1: "10%", 0.01: "1%", 0.001: "0.1%", 1e-6: "0.0001%", 1e-7: "1e-5%"} {
		if got := decadeLabel(d); got != want {
			t.Errorf("decadeLabel(%g) = %q, want %q", d, got, want)
		}
	}
}

// TestFiltersDefaultChart: with no --svg the chart is drawn to
// kvbench-filters.svg in the working directory and the output gives its
// path; --svg=NAME draws it there; --svg= draws none.
func TestFiltersDefaultChart(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var out bytes.Buffer
	args := []string{"--keys=500", "--probes=2000", "--repeat=1", "--policies=bloom", "--max_bits=4"}
	if err := runFiltersCmd(args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, defaultLabSVG)
	m := regexp.MustCompile(`(?m)^wrote (.*)$`).FindStringSubmatch(out.String())
	if m == nil || !filepath.IsAbs(m[1]) || !sameFile(m[1], want) {
		t.Errorf("output does not give the chart's path %s:\n%s", want, out.String())
	}
	data, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, data, []string{"bloom"}, 4, 4)
	os.Remove(want)

	if err := runFiltersCmd(append(args, "--svg=other.svg"), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "other.svg")); err != nil {
		t.Errorf("--svg=other.svg: %v", err)
	}
	out.Reset()
	if err := runFiltersCmd(append(args, "--svg="), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(want); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--svg= still drew the chart: %v", err)
	}
	if strings.Contains(out.String(), "wrote") {
		t.Errorf("--svg= still reports a file:\n%s", out.String())
	}
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// TestLabKeyPatterns: each pattern makes the stream its help describes,
// and no probe is a key.
func TestLabKeyPatterns(t *testing.T) {
	const n, probes = 1000, 3000
	key := func(i int) string { return fmt.Sprintf("%016d", i) }
	digits := regexp.MustCompile(`^[0-9]{16}$`)
	num := func(k []byte) int {
		v, err := strconv.Atoi(string(k))
		if err != nil {
			t.Fatalf("key %q: %v", k, err)
		}
		return v
	}
	for _, kp := range keysPatterns {
		for _, pp := range probesPatterns {
			present, absent, err := labKeys(n, probes, kp.name, pp.name)
			if pp.name == "between" && kp.name != "spaced" {
				if err == nil {
					t.Errorf("%s keys, between probes: accepted", kp.name)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s/%s: %v", kp.name, pp.name, err)
			}
			if len(present) != n || len(absent) != probes {
				t.Fatalf("%s/%s: %d keys, %d probes", kp.name, pp.name, len(present), len(absent))
			}
			set := map[string]bool{}
			maxKey := 0
			for i, k := range present {
				set[string(k)] = true
				maxKey = max(maxKey, num(k))
				switch kp.name {
				case "seq":
					if string(k) != key(i) {
						t.Fatalf("seq key %d = %s", i, k)
					}
				case "spaced":
					if string(k) != key(2*i) {
						t.Fatalf("spaced key %d = %s", i, k)
					}
				case "random":
					if !digits.Match(k) || num(k)%2 != 1 {
						t.Fatalf("random key %d = %s, want 16 digits, odd", i, k)
					}
				}
			}
			if len(set) != n {
				t.Errorf("%s: %d distinct keys of %d", kp.name, len(set), n)
			}
			for i, k := range absent {
				if set[string(k)] {
					t.Fatalf("%s/%s: probe %d, %s, was added", kp.name, pp.name, i, k)
				}
				switch pp.name {
				case "after":
					if num(k) <= maxKey || (i > 0 && num(k) != num(absent[i-1])+1) {
						t.Fatalf("after probe %d = %s, largest key %d", i, k, maxKey)
					}
				case "between":
					// The first n probes are the keys' neighbours:
					// probe i sorts between keys i and i+1.
					if i < n-1 && !(string(present[i]) < string(k) && string(k) < string(present[i+1]) && num(k) == num(present[i])+1) {
						t.Fatalf("between probe %d = %s, not between %s and %s", i, k, present[i], present[i+1])
					}
					if i >= n && num(k) <= maxKey {
						t.Fatalf("between probe %d = %s: past the keys' neighbours, want above %d", i, k, maxKey)
					}
				case "random":
					if !digits.Match(k) || num(k)%2 != 0 || (kp.name != "random" && num(k) <= maxKey) {
						t.Fatalf("random probe %d = %s (largest key %d)", i, k, maxKey)
					}
				case "missing":
					if want := present[i%n][:keyLen-1]; string(k) != string(want) {
						t.Fatalf("missing probe %d = %s, want %s", i, k, want)
					}
				}
			}
			if pp.name == "random" && distinctKeys(absent) < probes-1 {
				t.Errorf("%s/random: random probes repeat", kp.name)
			}
		}
	}
	// db_bench's readmissing keys for seq keys: keys/10 distinct ones.
	_, absent, err := labKeys(n, probes, "seq", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if d := distinctKeys(absent); d != n/10 {
		t.Errorf("seq keys' missing probes: %d distinct, want %d", d, n/10)
	}
}

// TestFiltersHyphenFlags: the subcommand's multi-word flags take hyphens
// as well as db_bench's underscores.
func TestFiltersHyphenFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--keys-pattern=spaced", "--probes-pattern", "between", "--min-bits=3", "-max-bits=4"},
		{"--keys_pattern=spaced", "--probes_pattern", "between", "--min_bits=3", "-max_bits=4"},
	} {
		var out bytes.Buffer
		args = append(args, "--keys=200", "--probes=1000", "--repeat=1", "--policies=leveldb", "--svg=")
		if err := runFiltersCmd(args, &out, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		s := out.String()
		if !strings.Contains(s, "keys per filter (spaced)") || !strings.Contains(s, "(between)") {
			t.Errorf("%v: patterns not applied:\n%s", args, s)
		}
		rows := regexp.MustCompile(`(?m)^leveldb +(\d+) `).FindAllStringSubmatch(s, -1)
		if len(rows) != 2 || rows[0][1] != "3" || rows[1][1] != "4" {
			t.Errorf("%v: budgets %v, want 3 and 4", args, rows)
		}
	}
}

// TestFiltersHelp: the help describes this subcommand's flags and
// patterns, not kvbench's --bloom_bits.
func TestFiltersHelp(t *testing.T) {
	var errOut bytes.Buffer
	if err := runFiltersCmd([]string{"-h"}, io.Discard, &errOut); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	h := errOut.String()
	if strings.Contains(h, "bloom_bits") {
		t.Errorf("the help mentions --bloom_bits, which kvbench filters does not have:\n%s", h)
	}
	for _, want := range append(labNames(), "-keys_pattern", "-probes_pattern", "--keys-pattern", defaultLabSVG) {
		if !strings.Contains(h, want) {
			t.Errorf("the help does not mention %q", want)
		}
	}
	for _, p := range append(slices.Clone(keysPatterns), probesPatterns...) {
		if !strings.Contains(h, p.name+" (") {
			t.Errorf("the help does not describe pattern %q", p.name)
		}
	}
}

// TestPct: one number format, plain decimals, four significant digits.
func TestPct(t *testing.T) {
	for v, want := range map[float64]string{0: "0%", 1: "100.0%", 0.5: "50.00%", 0.00847: "0.8470%", 7.44e-4: "0.07440%",
		1.53e-6: "0.0001530%", 0.099996: "10.00%", 0.0099996: "1.000%"} {
		if got := pct(v); got != want {
			t.Errorf("pct(%g) = %q, want %q", v, got, want)
		}
	}
}

// TestFiltersTableFormat: every rate in the table is a plain decimal
// percentage with four significant digits, and meas/th comes with ±2σ.
func TestFiltersTableFormat(t *testing.T) {
	var out bytes.Buffer
	args := []string{"--keys=2000", "--probes=20000", "--repeat=1", "--policies=bloom,binaryfuse,cuckoo", "--svg="}
	if err := runFiltersCmd(args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	rate := regexp.MustCompile(`^(0|\d+\.?\d*)%$`)
	rows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) != 11 || !slices.Contains([]string{"bloom", "binaryfuse", "cuckoo"}, f[0]) {
			continue
		}
		rows++
		for _, cell := range f[4:6] {
			sig := strings.TrimLeft(strings.NewReplacer(".", "", "%", "").Replace(cell), "0")
			if !rate.MatchString(cell) || strings.ContainsAny(cell, "eE") || (cell != "0%" && len(sig) != 4) {
				t.Errorf("rate %q in %q: want a plain percentage with four significant digits", cell, line)
			}
		}
		if !regexp.MustCompile(`^\d+\.\d{3}$`).MatchString(f[6]) || !regexp.MustCompile(`^±\d+\.\d{3}$`).MatchString(f[7]) {
			t.Errorf("meas/th %q ±2σ %q in %q", f[6], f[7], line)
		}
	}
	// bloom: budgets 1..20; binaryfuse: 2; cuckoo: fingerprints 4, 8, 12, 16, 20.
	if rows != 20+2+5 {
		t.Errorf("%d table rows, want 27:\n%s", rows, out.String())
	}
	// The cuckoo rows follow --min_bits and --max_bits like the others.
	out.Reset()
	args = []string{"--keys=2000", "--probes=2000", "--repeat=1", "--policies=cuckoo", "--min_bits=9", "--max_bits=13", "--svg="}
	if err := runFiltersCmd(args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var budgets []string
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) == 11 && f[0] == "cuckoo" {
			budgets = append(budgets, f[1])
		}
	}
	if !slices.Equal(budgets, []string{"12"}) {
		t.Errorf("cuckoo with --min_bits=9 --max_bits=13: budgets %v, want [12]", budgets)
	}
}

// TestBloomTheoryIsTheFiltersOwn: Bloom theory uses the m and k of the
// filter built (m rounded up to 64 bits for bloom), so rounding cannot
// move meas/th; the bits set are counted from the filter.
func TestBloomTheoryIsTheFiltersOwn(t *testing.T) {
	c := &labConfig{keys: 1000, probes: 10000, minBits: 10, maxBits: 10, policies: "bloom,leveldb", repeat: 1,
		keysPattern: "seq", probesPattern: "after"}
	rows, err := runLab(c, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		m := 8 * (r.FilterBytes - 1)
		want, set := bloomTheoryExact(m, r.Probes, r.Keys)
		if r.Theory != want || r.SetBitsTheory != set {
			t.Errorf("%s: theory %g, set bits %g; want %g, %g for m=%d k=%d", r.Family, r.Theory, r.SetBitsTheory, want, set, m, r.Probes)
		}
		if math.IsNaN(r.SetBits) || r.SetBits <= 0 || r.SetBits >= 1 {
			t.Errorf("%s: set bits %v", r.Family, r.SetBits)
		}
		if r.Family == "bloom" && (m != 10048 || r.Theory == filter.EstimateFPR(10, r.Probes)) {
			t.Errorf("bloom: m = %d (want 10,048, a multiple of 64), theory %g", m, r.Theory)
		}
	}
}

// TestBloomSpread: bloomSpread matches the spread of the rate ρ^k over
// simulated Bloom filters with independent uniform positions.
func TestBloomSpread(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const m, k, n, filters = 1000, 3, 200, 4000
	var s, s2 float64
	bitsSet := make([]bool, m)
	for range filters {
		clear(bitsSet)
		set := 0
		for range k * n {
			if p := rng.IntN(m); !bitsSet[p] {
				bitsSet[p] = true
				set++
			}
		}
		r := math.Pow(float64(set)/m, k)
		s += r
		s2 += r * r
	}
	mean := s / filters
	sim := math.Sqrt(s2/filters-mean*mean) / mean
	if got := bloomSpread(m, k, n); math.Abs(got/sim-1) > 0.06 {
		t.Errorf("bloomSpread(%d, %d, %d) = %.4f, simulated %.4f", m, k, n, got, sim)
	}
	// Sampling alone, at 1% over a million probes: ±0.0199.
	if e := (labRow{Theory: 0.01, Distinct: 1_000_000}).RatioErr(); math.Abs(e-0.0199) > 0.0001 {
		t.Errorf("RatioErr at 1%% over 1M probes = %.4f, want 0.0199", e)
	}
}

// TestFiltersFooter: the footer gives this run's sampling error, names
// the families outside it and explains leveldb. Over 100,000 of
// db_bench's sequential keys its filter has fewer bits set than theory and
// lets fewer of the numbers after them through; over 20,000, some of
// those numbers share a key's 32-bit hash and pass at every budget.
func TestFiltersFooter(t *testing.T) {
	run := func(keys, probes, lo, hi int) ([]labRow, string) {
		var out bytes.Buffer
		c := &labConfig{keys: keys, probes: probes, minBits: lo, maxBits: hi, policies: "bloom,leveldb", repeat: 1,
			keysPattern: "seq", probesPattern: "after"}
		rows, err := runLab(c, &out, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return rows, out.String()
	}
	leveldb10 := func(rows []labRow) labRow {
		for _, r := range rows {
			if r.Family == "leveldb" && r.Budget == 10 {
				return r
			}
		}
		t.Fatal("no leveldb row at 10 bits/key")
		return labRow{}
	}

	rows, s := run(100_000, 1_000_000, 10, 10)
	for _, want := range []string{"sampling over 1,000,000 distinct probes", "(±0.020 at 1%", "Outside 1 ± 2σ: leveldb 1 of 1",
		"leveldb departs from theory", "  leveldb 10 bits/key 40.83% (theory 45.12%)"} {
		if !strings.Contains(s, want) {
			t.Errorf("100,000 keys: footer lacks %q:\n%s", want, s)
		}
	}
	if r := leveldb10(rows); !(r.Ratio() < 1-r.RatioErr()) {
		t.Errorf("100,000 keys: leveldb meas/th %.3f ±%.3f, want below 1", r.Ratio(), r.RatioErr())
	}
	for _, r := range rows {
		if r.Family == "bloom" && math.Abs(r.SetBits-r.SetBitsTheory) > 0.002 {
			t.Errorf("bloom: bits set %.4f, theory %.4f", r.SetBits, r.SetBitsTheory)
		}
	}

	rows, s = run(20_000, 200_000, 8, 12)
	if r := leveldb10(rows); !(r.Ratio() > 1+r.RatioErr()) {
		t.Errorf("20,000 keys: leveldb meas/th %.3f ±%.3f, want above 1", r.Ratio(), r.RatioErr())
	}
	if !strings.Contains(s, "leveldb: 3,500 absent keys (1.750%) passed every filter of it, 8 to 12 bits/key") {
		t.Errorf("20,000 keys: footer lacks leveldb's floor:\n%s", s)
	}
	if strings.Contains(s, "bloom: ") {
		t.Errorf("20,000 keys: footer gives bloom a floor:\n%s", s)
	}
}

// TestFiltersNoBudgetInRange: a policy with fixed budgets (fuse: 8, 16)
// asked for a range holding none of them is an error, not an empty table.
func TestFiltersNoBudgetInRange(t *testing.T) {
	err := runFiltersCmd([]string{"--policies=binaryfuse", "--min_bits=9", "--max_bits=15", "--svg="}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "none within") {
		t.Errorf("fuse at 9..15 bits: %v", err)
	}
}
