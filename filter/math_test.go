package filter

import (
	"math"
	"testing"
)

func TestEstimateFPR(t *testing.T) {
	tests := []struct {
		bpk  float64
		k    int
		want float64
	}{
		{10, 6, 0.008430},
		{10, 7, 0.008194},
		{16, 11, 0.0004587},
		{5, 3, 0.09185},
		{1, 1, 0.63212},
		{0, 6, 1},
		{-1, 6, 1},
		{math.NaN(), 6, 1},
		{10, 0, 1},
	}
	for _, tc := range tests {
		got := EstimateFPR(tc.bpk, tc.k)
		if math.Abs(got-tc.want) > 1e-3*tc.want {
			t.Errorf("EstimateFPR(%v, %d) = %.6g, want %.6g", tc.bpk, tc.k, got, tc.want)
		}
	}
}

func TestOptimalK(t *testing.T) {
	for _, tc := range []struct {
		bpk  float64
		want int
	}{
		{0, 1}, {-3, 1}, {math.NaN(), 1}, {0.5, 1}, {1, 1}, {2, 1}, {3, 2}, {10, 7}, {16, 11}, {20, 14}, {100, 30},
	} {
		if got := OptimalK(tc.bpk); got != tc.want {
			t.Errorf("OptimalK(%v) = %d, want %d", tc.bpk, got, tc.want)
		}
	}
	// It really is the minimum over every k.
	for bpk := 0.5; bpk <= 50; bpk += 0.25 {
		best := OptimalK(bpk)
		for k := 1; k <= MaxProbes; k++ {
			if EstimateFPR(bpk, k) < EstimateFPR(bpk, best)*(1-1e-12) {
				t.Errorf("bpk=%v: k=%d beats OptimalK=%d", bpk, k, best)
			}
		}
	}
}
