package main

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPlaceMarkLabels: the latency chart's percentile labels stay inside
// the chart, off one another and off the other marks' lines, for marks in
// ascending order anywhere on the plot (the order percentiles come in),
// crowded together or not.
func TestPlaceMarkLabels(t *testing.T) {
	const width, rows = 880, 4
	check := func(xs, ws []float64) {
		t.Helper()
		pl := placeMarkLabels(xs, ws, rows, width)
		for i, a := range pl {
			l, r := a.left, a.left+ws[i]
			if l < 0 || r > width || a.row < 0 || a.row >= rows {
				t.Errorf("xs %v: label %d at [%.1f, %.1f] row %d", xs, i, l, r, a.row)
			}
			if (a.end && r > xs[i]) || (!a.end && l < xs[i]) {
				t.Errorf("xs %v: label %d [%.1f, %.1f] on the wrong side of its line %.1f", xs, i, l, r, xs[i])
			}
			for j, b := range pl {
				if j == i {
					continue
				}
				bl, br := b.left, b.left+ws[j]
				if b.row == a.row && l < br && bl < r {
					t.Errorf("xs %v: labels %d and %d overlap in row %d", xs, i, j, a.row)
				}
				if b.row < a.row && xs[j] > l && xs[j] < r {
					t.Errorf("xs %v: line %d (from row %d) crosses label %d (row %d)", xs, j, b.row, i, a.row)
				}
			}
		}
	}
	// kvbench once drew "p99.9 8.45 ms" across p99's line.
	check([]float64{297, 800, 848, 850}, []float64{68, 68, 80, 68})
	check([]float64{100, 100, 100, 100}, []float64{60, 60, 70, 60})
	check([]float64{850, 852, 854, 856}, []float64{60, 60, 70, 60})
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		xs := make([]float64, 4)
		ws := make([]float64, 4)
		for i := range xs {
			xs[i] = 78 + rng.Float64()*778
			ws[i] = 50 + rng.Float64()*35
		}
		slices.Sort(xs)
		check(xs, ws)
	}
}
