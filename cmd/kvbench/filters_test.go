package main

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
	for _, rec := range recs[1:] {
		fam := rec[col["filter"]]
		seen[fam]++
		bits := num(rec, "bits_per_key")
		measured := num(rec, "measured_fpr")
		if num(rec, "absent_probes") != 30000 || num(rec, "keys") != 3000 {
			t.Errorf("%v: wrong key counts", rec)
		}
		if measured < 0 || measured > 1 || num(rec, "build_ns_per_key") <= 0 || num(rec, "probe_ns") <= 0 {
			t.Errorf("%v: implausible figures", rec)
		}
		// The 64-bit Bloom policy keeps its promise at every budget: the
		// measured rate is within a few standard deviations of the probes'
		// sampling error, plus 10% for the filter's own variation (a
		// small filter's share of set bits varies too).
		if fam == "bloom" && rec[col["theory_fpr"]] != "" {
			theory := num(rec, "theory_fpr")
			sd := math.Sqrt(theory * (1 - theory) / 30000)
			if math.Abs(measured-theory) > 5*sd+0.1*theory+1e-4 {
				t.Errorf("bloom %g bits/key: measured %.5f, theory %.5f", bits, measured, theory)
			}
			if actual := num(rec, "actual_bits_per_key"); actual < bits || actual > bits+0.5 {
				t.Errorf("bloom %g bits/key: actual %.3f bits/key", bits, actual)
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
	checkSVG(t, data, wantRows)
}

// checkSVG parses the chart as XML and checks its parts are there.
func checkSVG(t *testing.T, data []byte, points int) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	var root string
	counts := map[string]int{}
	var texts []string
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
			counts[el.Name.Local]++
		case xml.CharData:
			texts = append(texts, string(el))
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	all := strings.Join(texts, " ")
	for _, want := range []string{"bits per key", "false-positive rate (log scale)", "theory", "measured", "1%", "0.01%", "Probe time against bits per key"} {
		if !strings.Contains(all, want) {
			t.Errorf("SVG has no text %q", want)
		}
	}
	if counts["polyline"] < 3 {
		t.Errorf("SVG has %d polylines, want theory lines and the lower bound", counts["polyline"])
	}
	if counts["title"] != points {
		t.Errorf("SVG has %d points with titles, want %d", counts["title"], points)
	}
}

func TestFiltersBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--keys=0"},
		{"--min_bits=5", "--max_bits=4"},
		{"--policies=nonesuch"},
		{"extra"},
	} {
		if err := runFiltersCmd(args, io.Discard, io.Discard); err == nil {
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
// kvbench-filters.svg in the working directory, and the output says so;
// --svg= draws none.
func TestFiltersDefaultChart(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var out bytes.Buffer
	args := []string{"--keys=500", "--probes=2000", "--repeat=1", "--policies=bloom", "--max_bits=4"}
	if err := runFiltersCmd(args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "wrote "+defaultLabSVG) {
		t.Errorf("output does not name the chart:\n%s", out.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, defaultLabSVG))
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, data, 4)
	os.Remove(filepath.Join(dir, defaultLabSVG))
	if err := runFiltersCmd(append(args, "--svg="), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, defaultLabSVG)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--svg= still drew the chart: %v", err)
	}
}

// TestLabKeyPatterns: every pattern gives distinct present keys and
// probes that are never present; between probes are neighbours of spaced
// keys; bad patterns are errors.
func TestLabKeyPatterns(t *testing.T) {
	for _, c := range [][2]string{{"seq", "after"}, {"seq", "random"}, {"spaced", "after"}, {"spaced", "between"}, {"spaced", "random"}, {"random", "after"}, {"random", "random"}} {
		present, absent, err := labKeys(1000, 3000, c[0], c[1])
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		set := map[string]bool{}
		for _, k := range present {
			set[string(k)] = true
		}
		if len(set) != 1000 {
			t.Errorf("%v: %d distinct keys of 1000", c, len(set))
		}
		for _, k := range absent {
			if set[string(k)] {
				t.Fatalf("%v: probe %s was added", c, k)
			}
		}
		if c == [2]string{"spaced", "between"} {
			if string(absent[5]) != fmt.Sprintf("%016d", 11) || string(present[5]) != fmt.Sprintf("%016d", 10) {
				t.Errorf("between: key 5 %s, probe 5 %s", present[5], absent[5])
			}
		}
	}
	for _, c := range [][2]string{{"seq", "between"}, {"nonesuch", "after"}, {"seq", "nonesuch"}} {
		if _, _, err := labKeys(10, 10, c[0], c[1]); err == nil {
			t.Errorf("%v accepted", c)
		}
	}
}

// TestPct: one number format, plain decimals, four significant digits.
func TestPct(t *testing.T) {
	for v, want := range map[float64]string{0: "0%", 0.5: "50.00%", 0.00847: "0.8470%", 7.44e-4: "0.07440%", 1.53e-6: "0.0001530%"} {
		if got := pct(v); got != want {
			t.Errorf("pct(%g) = %q, want %q", v, got, want)
		}
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
