package main

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"errors"
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
	for _, want := range []string{"bits per key", "false-positive rate (log scale)", "theory", "measured", "1%", "0.1%"} {
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
