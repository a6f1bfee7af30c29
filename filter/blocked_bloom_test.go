package filter

import (
	"fmt"
	"math"
	"testing"
)

// TestBlockedBloomFPR measures the rate at 10 bits per key against
// EstimateBlockedFPR for the filter's real size, at three sizes; at a
// million keys it must be at most 1.0%.
func TestBlockedBloomFPR(t *testing.T) {
	p := NewBlockedBloomPolicy(10)
	k := p.(BitsPerKeyer).NumProbes()
	for _, tc := range []struct{ n, probes int }{
		{10_000, 1_000_000},
		{100_000, 1_000_000},
		{1_000_000, 2_000_000},
	} {
		hits, size := measure(t, p, tc.n, tc.probes)
		bpk := float64(8*(size-1)) / float64(tc.n)
		checkRate(t, fmt.Sprintf("n=%d", tc.n), hits, tc.probes, EstimateBlockedFPR(bpk, k))
		if tc.n == 1_000_000 && float64(hits)/float64(tc.probes) > 0.010 {
			t.Errorf("n=%d: rate %.4f%% > 1.0%%", tc.n, 100*float64(hits)/float64(tc.probes))
		}
	}
}

// TestBlockedBloomFPRAcrossBudgets checks the model at other budgets, where
// the probe count departs from 0.69·bits.
func TestBlockedBloomFPRAcrossBudgets(t *testing.T) {
	const n, probes = 20_000, 400_000
	for _, bpk := range []int{4, 6, 8, 12, 16} {
		p := NewBlockedBloomPolicy(bpk)
		k := p.(BitsPerKeyer).NumProbes()
		hits, size := measure(t, p, n, probes)
		checkRate(t, fmt.Sprintf("bpk=%d k=%d", bpk, k), hits, probes, EstimateBlockedFPR(float64(8*(size-1))/n, k))
	}
}

// TestBlockedBloomProbes: the probe count is the best for the model, up to
// near-ties that go to fewer probes, and a few values written out.
func TestBlockedBloomProbes(t *testing.T) {
	want := map[int]int{1: 1, 2: 1, 5: 3, 8: 5, 10: 6, 12: 8, 16: 9, 20: 11, 24: 12, 32: 15}
	for bpk, k := range want {
		if got := NewBlockedBloomPolicy(bpk).(BitsPerKeyer).NumProbes(); got != k {
			t.Errorf("bpk=%d: k=%d, want %d", bpk, got, k)
		}
	}
	for bpk := 1; bpk <= 40; bpk++ {
		k := NewBlockedBloomPolicy(bpk).(BitsPerKeyer).NumProbes()
		fpr := EstimateBlockedFPR(float64(bpk), k)
		for other := 1; other <= MaxProbes; other++ {
			if o := EstimateBlockedFPR(float64(bpk), other); o < fpr/1.005 {
				t.Errorf("bpk=%d: k=%d (%.5g) but k=%d gives %.5g", bpk, k, fpr, other, o)
			}
		}
		if k > 1 && EstimateBlockedFPR(float64(bpk), k-1) <= fpr*1.005 {
			t.Errorf("bpk=%d: k=%d, but k-1 is within 0.5%%", bpk, k)
		}
	}
}

// TestEstimateBlockedFPR: the model matches the published 10-bit figure and,
// for probe counts up to the standard filter's best, is never below the
// standard Bloom rate.
func TestEstimateBlockedFPR(t *testing.T) {
	if got := EstimateBlockedFPR(10, 6); math.Abs(got-0.009576) > 0.00002 {
		t.Errorf("EstimateBlockedFPR(10, 6) = %.6f, want 0.00958", got)
	}
	for bpk := 2.0; bpk <= 24; bpk += 2 {
		for k := 2; k <= OptimalK(bpk); k++ {
			if b, s := EstimateBlockedFPR(bpk, k), EstimateFPR(bpk, k); b < s {
				t.Errorf("bpk=%v k=%d: blocked %.6g below standard %.6g", bpk, k, b, s)
			}
		}
	}
	for _, tc := range []struct {
		bpk float64
		k   int
	}{{0, 6}, {-1, 6}, {math.NaN(), 6}, {10, 0}} {
		if got := EstimateBlockedFPR(tc.bpk, tc.k); got != 1 {
			t.Errorf("EstimateBlockedFPR(%v, %d) = %v, want 1", tc.bpk, tc.k, got)
		}
	}
}

// TestBlockedBloomLayout: whole 64-byte lines, at least one, n·bits rounded
// up, k in the last byte.
func TestBlockedBloomLayout(t *testing.T) {
	for _, bpk := range []int{1, 10, 33} {
		p := NewBlockedBloomPolicy(bpk)
		for _, n := range []int{0, 1, 51, 52, 1000} {
			b := p.NewBuilder()
			for i := 0; i < n; i++ {
				b.AddKey([]byte(fmt.Sprint(i)))
			}
			f := b.Finish(nil)
			lines := max((n*bpk+511)/512, 1)
			if len(f) != 64*lines+1 {
				t.Errorf("bpk=%d n=%d: %d bytes, want %d", bpk, n, len(f), 64*lines+1)
			}
			if int(f[len(f)-1]) != p.(BitsPerKeyer).NumProbes() {
				t.Errorf("bpk=%d n=%d: k byte %d", bpk, n, f[len(f)-1])
			}
		}
	}
}

// TestBlockedBloomOneLinePerKey: every probe of a key is in one line, so a
// filter whose other lines are zeroed still finds it.
func TestBlockedBloomOneLinePerKey(t *testing.T) {
	p := NewBlockedBloomPolicy(10)
	for i := 0; i < 200; i++ {
		key := []byte(fmt.Sprint("key", i))
		b := p.NewBuilder()
		b.AddKey(key)
		for j := 0; j < 500; j++ {
			b.AddKey([]byte(fmt.Sprint("other", j)))
		}
		f := b.Finish(nil)
		lines := (len(f) - 1) / 64
		kept := 0
		for l := 0; l < lines; l++ {
			g := append([]byte(nil), f...)
			for x := 0; x < lines; x++ {
				if x != l {
					clear(g[64*x : 64*x+64])
				}
			}
			if p.MayContain(g, key) {
				kept++
			}
		}
		if kept != 1 {
			t.Fatalf("key %d is found with %d single lines, want exactly 1", i, kept)
		}
	}
}

// TestBlockedBloomUnreadable: lengths that are not whole lines and k bytes
// out of range answer true; garbage never panics.
func TestBlockedBloomUnreadable(t *testing.T) {
	p := NewBlockedBloomPolicy(10)
	zeroLine := make([]byte, 64)
	for name, f := range map[string][]byte{
		"nil":      nil,
		"k only":   {6},
		"63+1":     append(make([]byte, 63), 6),
		"65+1":     append(make([]byte, 65), 6),
		"k=0":      append(zeroLine[:64:64], 0),
		"k=31":     append(zeroLine[:64:64], 31),
		"two,k=31": append(make([]byte, 128), 31),
	} {
		if !p.MayContain(f, []byte("x")) {
			t.Errorf("%s: MayContain = false", name)
		}
	}
	if p.MayContain(append(zeroLine[:64:64], 6), []byte("x")) {
		t.Error("all-zero line matches")
	}
}
