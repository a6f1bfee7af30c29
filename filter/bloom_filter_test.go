package filter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestBloomFilterGuavaSizing: m and k are Guava's for the same arguments.
func TestBloomFilterGuavaSizing(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		p    float64
		bits uint64
		k    int
	}{
		{1_000_000, 0.01, 9_585_058, 7},
		{1000, 0.03, 7298, 5},
		{100, 0.001, 1437, 10},
		{10_000_000, 0.001, 143_775_875, 10},
		{1, 0.5, 64, 44}, // m = 1 bit is raised to 64, so k = round(64·ln 2)
	} {
		b := NewBloomFilter(tc.n, tc.p)
		if b.Bits() != tc.bits || b.K() != tc.k {
			t.Errorf("NewBloomFilter(%d, %v): m=%d k=%d, want %d %d", tc.n, tc.p, b.Bits(), b.K(), tc.bits, tc.k)
		}
		if got := OptimalBits(tc.n, tc.p); tc.n > 1 && got != tc.bits {
			t.Errorf("OptimalBits(%d, %v) = %d, want %d", tc.n, tc.p, got, tc.bits)
		}
		if want := (tc.bits + 63) / 64 * 8; b.SizeInBytes() != want {
			t.Errorf("SizeInBytes = %d, want %d", b.SizeInBytes(), want)
		}
	}
}

// TestBloomFilterClamps: bad arguments are adjusted, never a panic.
func TestBloomFilterClamps(t *testing.T) {
	for _, tc := range []struct {
		n uint64
		p float64
	}{{0, 0.01}, {10, 0}, {10, -1}, {10, 1}, {10, 2}, {10, math.NaN()}, {10, math.Inf(1)}, {1, 1e-300}} {
		b := NewBloomFilter(tc.n, tc.p)
		if b.Bits() < 64 || b.Bits() > MaxFilterBits || b.K() < 1 || b.K() > maxFilterProbes {
			t.Errorf("NewBloomFilter(%d, %v): m=%d k=%d", tc.n, tc.p, b.Bits(), b.K())
		}
		b.Add([]byte("x"))
		if !b.MayContain([]byte("x")) {
			t.Errorf("NewBloomFilter(%d, %v): false negative", tc.n, tc.p)
		}
	}
	if got := OptimalBits(math.MaxUint64, MinFPP); got != math.MaxUint64 {
		t.Errorf("OptimalBits(max, MinFPP) = %d, want it to saturate", got)
	}
	// The sizing of a huge request is capped (checked without allocating
	// the 8 GiB it would take).
	if m, k := bloomSizing(math.MaxUint64, 0.01); m != MaxFilterBits || k != 1 {
		t.Errorf("bloomSizing(max, 0.01) = %d, %d", m, k)
	}
}

// TestBloomFilterFPR: no false negatives and the rate within 10% of
// (1-e^(-kn/m))^k, at three sizes; ExpectedFPP and ApproximateCount agree.
func TestBloomFilterFPR(t *testing.T) {
	for _, tc := range []struct {
		n      int
		p      float64
		probes int
	}{
		{1_000, 0.05, 1_000_000},
		{50_000, 0.01, 1_000_000},
		{1_000_000, 0.01, 1_000_000},
	} {
		b := NewBloomFilter(uint64(tc.n), tc.p)
		var kb keyBuf
		for i := 0; i < tc.n; i++ {
			b.Add(kb.present(i))
		}
		for i := 0; i < tc.n; i++ {
			if !b.MayContain(kb.present(i)) {
				t.Fatalf("n=%d: false negative for %q", tc.n, kb)
			}
		}
		hits := 0
		for i := 0; i < tc.probes; i++ {
			if b.MayContain(kb.absent(i)) {
				hits++
			}
		}
		k := float64(b.K())
		theory := math.Pow(-math.Expm1(-k*float64(tc.n)/float64(b.Bits())), k)
		what := fmt.Sprintf("n=%d p=%v", tc.n, tc.p)
		checkRate(t, what, hits, tc.probes, theory)
		checkRate(t, what+" ExpectedFPP", hits, tc.probes, b.ExpectedFPP())
		if c := b.ApproximateCount(); math.Abs(float64(c)-float64(tc.n)) > 0.02*float64(tc.n) {
			t.Errorf("%s: ApproximateCount = %d", what, c)
		}
	}
}

// TestBloomFilterProperty: against a model set, with random keys, Add's
// result and MayContain never contradict the set.
func TestBloomFilterProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for round := 0; round < 20; round++ {
		b := NewBloomFilter(uint64(1+rng.IntN(500)), 0.001+rng.Float64()*0.2)
		model := map[string]bool{}
		for i := 0; i < 1000; i++ {
			k := randKey(rng)
			changed := b.Add(k)
			if model[string(k)] && changed {
				t.Fatalf("re-adding %x changed the filter", k)
			}
			model[string(k)] = true
		}
		for k := range model {
			if !b.MayContain([]byte(k)) {
				t.Fatalf("false negative for %x", k)
			}
		}
	}
	b := NewBloomFilter(100, 0.01)
	if b.ApproximateCount() != 0 || b.ExpectedFPP() != 0 || b.MayContain([]byte("a")) {
		t.Error("an empty filter is not empty")
	}
	if !b.Add([]byte("a")) || b.Add([]byte("a")) || b.ApproximateCount() != 1 {
		t.Error("Add of a new key, then the same key, or the count")
	}
}

// TestBloomFilterUnion: the union of filters of two halves is bit for bit
// the filter of the whole; mismatched filters are refused.
func TestBloomFilterUnion(t *testing.T) {
	a, b, all := NewBloomFilter(1000, 0.01), NewBloomFilter(1000, 0.01), NewBloomFilter(1000, 0.01)
	var kb keyBuf
	for i := 0; i < 1000; i++ {
		k := kb.present(i)
		all.Add(k)
		if i%2 == 0 {
			a.Add(k)
		} else {
			b.Add(k)
		}
	}
	if err := a.Union(b); err != nil {
		t.Fatal(err)
	}
	x, _ := a.MarshalBinary()
	y, _ := all.MarshalBinary()
	if !bytes.Equal(x, y) || a.ApproximateCount() != all.ApproximateCount() {
		t.Error("union differs from the filter of all keys")
	}
	before, _ := a.MarshalBinary()
	for _, other := range []*BloomFilter{nil, NewBloomFilter(1001, 0.01), NewBloomFilter(1000, 0.02)} {
		if err := a.Union(other); !errors.Is(err, ErrIncompatible) {
			t.Errorf("Union with a mismatched filter: %v", err)
		}
	}
	if after, _ := a.MarshalBinary(); !bytes.Equal(before, after) {
		t.Error("a refused Union changed the filter")
	}
}

// TestBloomFilterMarshal: round trips keep every answer and the count;
// truncations and bad headers are errors that leave the target unchanged.
func TestBloomFilterMarshal(t *testing.T) {
	b := NewBloomFilter(500, 0.01)
	var kb keyBuf
	for i := 0; i < 400; i++ {
		b.Add(kb.present(i))
	}
	data, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if data[0] != 'B' || data[1] != 2 || len(data) != 11+int(b.SizeInBytes()) {
		t.Fatalf("encoding header %x, %d bytes", data[:11], len(data))
	}
	var c BloomFilter
	if err := c.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if c.Bits() != b.Bits() || c.K() != b.K() || c.ApproximateCount() != b.ApproximateCount() {
		t.Fatal("round trip changed the parameters")
	}
	for i := 0; i < 2000; i++ {
		if c.MayContain(kb.present(i)) != b.MayContain(kb.present(i)) {
			t.Fatalf("round trip changed the answer for %q", kb)
		}
	}
	again, _ := c.MarshalBinary()
	if !bytes.Equal(again, data) {
		t.Fatal("re-encoding differs")
	}

	for i := 0; i < len(data); i++ {
		if err := c.UnmarshalBinary(data[:i]); !errors.Is(err, ErrInvalidEncoding) {
			t.Fatalf("%d of %d bytes: %v", i, len(data), err)
		}
	}
	set := func(f func(d []byte)) []byte { d := bytes.Clone(data); f(d); return d }
	for name, d := range map[string][]byte{
		"tag":       set(func(d []byte) { d[0] = 'X' }),
		"version":   set(func(d []byte) { d[1] = 3 }),
		"k=0":       set(func(d []byte) { d[2] = 0 }),
		"k=65":      set(func(d []byte) { d[2] = 65 }),
		"m=63":      set(func(d []byte) { binary.LittleEndian.PutUint64(d[3:], 63) }),
		"m huge":    set(func(d []byte) { binary.LittleEndian.PutUint64(d[3:], 1<<62) }),
		"m+64":      set(func(d []byte) { binary.LittleEndian.PutUint64(d[3:], b.Bits()+64) }),
		"extra":     append(bytes.Clone(data), 0),
		"past m":    set(func(d []byte) { d[len(d)-1] |= 0x80 }),
		"too short": data[:10],
	} {
		if err := c.UnmarshalBinary(d); !errors.Is(err, ErrInvalidEncoding) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if again, _ := c.MarshalBinary(); !bytes.Equal(again, data) {
		t.Fatal("a failed UnmarshalBinary changed the filter")
	}
	if b, err := b.AppendBinary([]byte("pre")); err != nil || !bytes.Equal(b[3:], data) || string(b[:3]) != "pre" {
		t.Error("AppendBinary")
	}
}

// TestSizingMath: OptimalBits, BitsPerKeyForFPR and CheckSizing.
func TestSizingMath(t *testing.T) {
	for _, tc := range []struct {
		p       float64
		bits, k int
	}{
		{0.5, 2, 1}, {0.1, 5, 3}, {0.01, 10, 7}, {0.0082, 10, 7}, {0.0081, 11, 8},
		{0.001, 15, 10}, {1e-6, 29, 20}, {0.7, 1, 1}, {1, 1, 1}, {0, MaxBitsPerKey, MaxProbes},
		{-1, MaxBitsPerKey, MaxProbes}, {math.NaN(), MaxBitsPerKey, MaxProbes}, {1e-300, MaxBitsPerKey, MaxProbes},
	} {
		bits, k := BitsPerKeyForFPR(tc.p)
		if bits != tc.bits || k != tc.k {
			t.Errorf("BitsPerKeyForFPR(%v) = %d, %d; want %d, %d", tc.p, bits, k, tc.bits, tc.k)
		}
		if tc.p > 0 && bits < MaxBitsPerKey && bits > 1 {
			if EstimateFPR(float64(bits), k) > tc.p || EstimateFPR(float64(bits-1), OptimalK(float64(bits-1))) <= tc.p {
				t.Errorf("BitsPerKeyForFPR(%v) = %d is not the smallest", tc.p, bits)
			}
		}
	}
	for _, tc := range []struct {
		n  uint64
		p  float64
		ok bool
	}{
		{1, 0.01, true}, {1 << 40, MinFPP, true}, {5, MaxFPP, true},
		{0, 0.01, false}, {1, 0, false}, {1, 0.9, false}, {1, 1e-13, false}, {1, math.NaN(), false},
	} {
		err := CheckSizing(tc.n, tc.p)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidArgument)) {
			t.Errorf("CheckSizing(%d, %v) = %v", tc.n, tc.p, err)
		}
	}
}
