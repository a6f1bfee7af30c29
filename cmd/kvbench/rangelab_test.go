package main

import (
	"bytes"
	"encoding/csv"
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

// TestFiltersRange runs kvbench filters --range small and checks its
// CSV, table and chart: a row for every key set, bits per key and width,
// each kind of query within the bound plus 4 standard errors, and a mark
// for each on the chart.
func TestFiltersRange(t *testing.T) {
	dir := t.TempDir()
	csvPath, svgPath := filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.svg")
	const keys, probes = 5000, 2000
	bitsList, widths, sets := []int{8, 16}, []uint64{1, 16, 256}, []string{"random", "sequential"}
	var out bytes.Buffer
	args := []string{"--range", fmt.Sprintf("--keys=%d", keys), fmt.Sprintf("--probes=%d", probes), "--range_widths=1,16,256",
		"--range-bits=8,16", "--repeat=1", "--csv=" + csvPath, "--svg=" + svgPath}
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
	if len(recs) == 0 || !slices.Equal(recs[0], rangeCSVHeader) {
		t.Fatalf("CSV header = %v", recs[0])
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	num := func(rec []string, name string) float64 {
		v, err := strconv.ParseFloat(rec[col[name]], 64)
		if err != nil {
			t.Fatalf("%v: %s = %q: %v", rec, name, rec[col[name]], err)
		}
		return v
	}
	seen := map[string]bool{}
	for _, rec := range recs[1:] {
		set := rec[col["key_set"]]
		bits, width := int(num(rec, "bits_per_key")), uint64(num(rec, "width"))
		bound := num(rec, "bound_fpr")
		if want := filter.GrafiteFPR(bits, width); math.Abs(bound-want) > 1e-5*want {
			t.Errorf("%v: bound %g, want GrafiteFPR = %g", rec, bound, want)
		}
		if num(rec, "keys") != keys {
			t.Errorf("%v: %g keys, want %d", rec, num(rec, "keys"), keys)
		}
		if a := num(rec, "actual_bits_per_key"); a < float64(bits) || a > float64(bits)+0.5 ||
			math.Abs(a-8*num(rec, "filter_bytes")/keys) > 1e-3 {
			t.Errorf("%v: actual bits per key %g", rec, a)
		}
		for _, kind := range []string{"uniform", "correlated"} {
			q, fp := int(num(rec, kind+"_queries")), int(num(rec, kind+"_false_positives"))
			switch {
			case kind == "uniform" && q != probes:
				t.Errorf("%v: %d uniform queries, want %d", rec, q, probes)
			case q < probes/2 || q > probes:
				t.Errorf("%v: %d %s queries, want up to %d (at least half, with these keys)", rec, q, kind, probes)
			}
			if rate := num(rec, kind+"_fpr"); math.Abs(rate-float64(fp)/float64(q)) > 1e-5 {
				t.Errorf("%v: %s rate %g, but %d of %d", rec, kind, rate, fp, q)
			}
			if limit := rangeFPLimit(q, bound); fp > limit {
				t.Errorf("%s %d bits/key L=%d %s: %d false positives in %d ranges, over the bound %g + 4 standard errors (%d)",
					set, bits, width, kind, fp, q, bound, limit)
			}
			if num(rec, kind+"_ns") <= 0 {
				t.Errorf("%v: %s ns per query %q", rec, kind, rec[col[kind+"_ns"]])
			}
			key := fmt.Sprintf("%s/%d/%d/%s", set, bits, width, kind)
			if seen[key] {
				t.Errorf("%s: two rows", key)
			}
			seen[key] = true
		}
	}
	for _, set := range sets {
		for _, b := range bitsList {
			for _, w := range widths {
				for _, kind := range []string{"uniform", "correlated"} {
					if key := fmt.Sprintf("%s/%d/%d/%s", set, b, w, kind); !seen[key] {
						t.Errorf("no row for %s", key)
					}
				}
			}
		}
	}
	rowsN := len(sets) * len(bitsList) * len(widths)
	if len(recs)-1 != rowsN {
		t.Errorf("CSV has %d rows, want %d", len(recs)-1, rowsN)
	}

	// The table: the same rows, and the verdict.
	tableRows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) == 12 && slices.Contains(sets, f[0]) {
			tableRows++
		}
	}
	if tableRows != rowsN {
		t.Errorf("the table has %d rows, want %d:\n%s", tableRows, rowsN, out.String())
	}
	if !strings.Contains(out.String(), "Every measured rate is within its bound plus 4 standard errors.") {
		t.Errorf("the footer does not give the verdict:\n%s", out.String())
	}

	// The chart: a panel per key set, a bound per key set and bits per
	// key, a mark per row and kind.
	data, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	c := parseSVG(t, data)
	for _, want := range []string{"range width L", "false-positive rate", "uniform", "correlated", "8 bits/key", "16 bits/key", "1%", "256"} {
		if !strings.Contains(c.texts, want) {
			t.Errorf("SVG has no text %q", want)
		}
	}
	for _, set := range sets {
		if c.panels[set] != 1 {
			t.Errorf("key set %s: %d panels, want 1", set, c.panels[set])
		}
		for class, want := range map[string]int{"measured": 2 * rowsN / len(sets), "uniform": rowsN / len(sets),
			"correlated": rowsN / len(sets), "bound": len(bitsList)} {
			if got := c.byFam[set][class]; got != want {
				t.Errorf("key set %s: %d marks of class %q, want %d", set, got, class, want)
			}
		}
	}
	for class, want := range map[string]int{"measured": 2 * rowsN, "bound": len(sets) * len(bitsList)} {
		if got := c.classes[class]; got != want {
			t.Errorf("SVG has %d marks of class %q, want %d", got, class, want)
		}
	}
}

// TestFiltersRangeBadFlags: bad lists, widths, bits per key and key
// counts, and flags of the other laboratory, are errors that name the
// flag.
func TestFiltersRangeBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--range_bits=3"}, "--range_bits: 3 is outside 4..40"},
		{[]string{"--range_bits=8,41"}, "--range_bits: 41 is outside 4..40"},
		{[]string{"--range_bits=8,x"}, `--range_bits: "x" is not a whole number`},
		{[]string{"--range_bits=8,,12"}, "empty item"},
		{[]string{"--range_bits=8,8"}, "names 8 twice"},
		{[]string{"--range_bits="}, "--range_bits is empty"},
		{[]string{"--range_widths=0"}, "--range_widths: 0: a range holds at least 1 integer"},
		{[]string{"--range_widths=4,-1"}, "--range_widths: -1"},
		{[]string{"--range_widths=1.5"}, `--range_widths: "1.5" is not a whole number`},
		{[]string{"--range_widths=1,2,1"}, "names 1 twice"},
		{[]string{"--range_sets=random,nonesuch"}, `unknown key set "nonesuch"`},
		{[]string{"--keys=1"}, "--keys=1"},
		{[]string{"--probes=0"}, "--probes=0"},
		{[]string{"--policies=bloom"}, "--policies does not apply with --range"},
		{[]string{"--min-bits=3"}, "--min_bits does not apply with --range"},
		{[]string{"--keys_pattern=seq"}, "--keys_pattern does not apply with --range"},
		// Sequential keys leave no gap of 2^22 integers.
		{[]string{"--range_sets=sequential", "--range_widths=4194304"}, "width 4194304: only 0 of"},
	} {
		args := append([]string{"--range", "--keys=100", "--probes=10", "--svg="}, c.args...)
		err := runFiltersCmd(args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("filters %v: error %v, want one with %q", args, err, c.want)
		}
	}
	for _, a := range []string{"--range_bits=8", "--range_widths=4", "--range-sets=random"} {
		err := runFiltersCmd([]string{"--keys=10", "--probes=10", "--svg=", a}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "needs --range") {
			t.Errorf("filters %s without --range: %v", a, err)
		}
	}
}

// TestFiltersRangeDefaultChart: --range draws its chart to
// kvbench-range-filters.svg, not over the point laboratory's.
func TestFiltersRangeDefaultChart(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var out bytes.Buffer
	if err := runFiltersCmd([]string{"--range", "--keys=500", "--probes=200", "--repeat=1", "--range_bits=10", "--range_widths=4",
		"--range_sets=random"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, defaultRangeSVG)
	m := regexp.MustCompile(`(?m)^wrote (.*)$`).FindStringSubmatch(out.String())
	if m == nil || !sameFile(m[1], want) {
		t.Errorf("output does not give the chart's path %s:\n%s", want, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, defaultLabSVG)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--range drew %s: %v", defaultLabSVG, err)
	}
	data, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if c := parseSVG(t, data); c.classes["measured"] != 2 || c.classes["bound"] != 1 {
		t.Errorf("chart: %d measured marks, %d bounds; want 2, 1", c.classes["measured"], c.classes["bound"])
	}
}

// TestFiltersRangeHelp: -h describes the range laboratory and its flags.
func TestFiltersRangeHelp(t *testing.T) {
	var errOut bytes.Buffer
	if err := runFiltersCmd([]string{"-h"}, io.Discard, &errOut); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	h := errOut.String()
	for _, want := range append(rangeKeySetNames(), "-range", "-range_bits", "-range_widths", "-range_sets", defaultRangeSVG,
		"filter.GrafiteFPR", "correlated", defaultRangeBits, defaultRangeWidths) {
		if !strings.Contains(h, want) {
			t.Errorf("the help does not mention %q", want)
		}
	}
}

// TestRangeFPLimit: the bound plus 4 standard errors, or the Poisson tail
// where few false positives are expected.
func TestRangeFPLimit(t *testing.T) {
	for _, c := range []struct {
		q     int
		bound float64
		want  int
	}{
		{1_000_000, 0.01, 10397}, // 10,000 + 4·sqrt(10,000·0.99) = 10,397.99
		{1000, 0.001, 7},         // Poisson(1): P(X > 6) = 8.3e-5, P(X > 7) = 1.0e-5
		{1000, 0, 0},
		{0, 0.5, 0},
		{2000, 1.0 / 16384, 3}, // Poisson(0.122): P(X > 2) = 2.9e-4, P(X > 3) = 8.9e-6
	} {
		if got := rangeFPLimit(c.q, c.bound); got != c.want {
			t.Errorf("rangeFPLimit(%d, %g) = %d, want %d", c.q, c.bound, got, c.want)
		}
	}
}

// TestRangeStarts: uniform starts lie in the keys' span and begin empty
// ranges; correlated ones are distinct keys plus one, empty, all of them
// when fewer than asked.
func TestRangeStarts(t *testing.T) {
	for _, s := range rangeKeySets {
		ks := newRangeKeys(s, 3000)
		if !slices.IsSorted(ks.ints) || len(ks.ints) != 3000 {
			t.Fatalf("%s: %d keys, sorted %v", s.name, len(ks.ints), slices.IsSorted(ks.ints))
		}
		rng := rand.New(rand.NewPCG(3, 4))
		const l = 8
		holds := func(x uint64) bool {
			i, _ := slices.BinarySearch(ks.ints, x)
			return i < len(ks.ints) && ks.ints[i] < x+l
		}
		uni, err := ks.uniformStarts(rng, 5000, l)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range uni {
			if x < ks.ints[0] || x >= ks.ints[len(ks.ints)-1] || holds(x) {
				t.Fatalf("%s: uniform start %d outside the span or not empty", s.name, x)
			}
		}
		var eligible int
		for _, k := range ks.ints {
			if !holds(k + 1) {
				eligible++
			}
		}
		for _, n := range []int{100, 1_000_000} {
			cor := ks.correlatedStarts(rng, n, l)
			if len(cor) != min(n, eligible) {
				t.Errorf("%s: %d correlated starts, want min(%d, %d)", s.name, len(cor), n, eligible)
			}
			seen := map[uint64]bool{}
			for _, x := range cor {
				if _, found := slices.BinarySearch(ks.ints, x-1); !found || holds(x) || seen[x] {
					t.Fatalf("%s: correlated start %d not after a key, not empty or repeated", s.name, x)
				}
				seen[x] = true
			}
		}
	}
}
