package filter

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// TestBinaryFuseFPR: the rate is 2^-f at every size, and at a million keys
// the 8-bit filter takes at most 9.3 bits per key at a rate of at most
// 0.42%, measured with absent db_bench keys. The other rates are measured
// with random 64-bit hashes in place of absent keys' hashes, which is
// faster and, for a 64-bit hash, the same thing.
func TestBinaryFuseFPR(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		fp, n, probes int
		maxBitsPerKey float64
	}{
		{8, 1_000, 1_000_000, 11.3},
		{8, 30_000, 1_000_000, 9.9},
		{8, 1_000_000, 1_000_000, 9.3},
		{16, 1_000, 4_000_000, 22.6},
		{16, 30_000, 4_000_000, 19.8},
		{16, 300_000, 4_000_000, 18.6},
	} {
		p := NewBinaryFusePolicy(tc.fp)
		var f []byte
		hits := 0
		if tc.n == 1_000_000 {
			hits, f = measureFilter(t, p, tc.n, tc.probes)
		} else {
			_, f = measureFilter(t, p, tc.n, 0)
			hits = randomHits(rng, tc.probes, func(h uint64) bool { return fuseMayContain(f, h) })
		}
		bpk := float64(8*(len(f)-fuseTrailerLen)) / float64(tc.n)
		what := fmt.Sprintf("f=%d n=%d (%.3f bits/key)", tc.fp, tc.n, bpk)
		checkRate(t, what, hits, tc.probes, 1/float64(uint64(1)<<tc.fp))
		if bpk > tc.maxBitsPerKey {
			t.Errorf("%s: more than %.1f bits per key", what, tc.maxBitsPerKey)
		}
		if tc.fp == 8 && tc.n == 1_000_000 && float64(hits)/float64(tc.probes) > 0.0042 {
			t.Errorf("%s: rate above 0.42%%", what)
		}
	}
}

// TestBinaryFuseSmallSets: 0, 1, 2, 3 and other small sets build, find
// every key, and an empty filter holds nothing.
func TestBinaryFuseSmallSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, fp := range []int{8, 16} {
		p := NewBinaryFusePolicy(fp)
		for n := 0; n <= 40; n++ {
			for trial := 0; trial < 25; trial++ {
				b := p.NewBuilder()
				keys := make([][]byte, n)
				for i := range keys {
					keys[i] = randKey(rng)
					b.AddKey(keys[i])
				}
				f := b.Finish(nil)
				if f[len(f)-2] == 0 {
					t.Fatalf("f=%d n=%d: construction fell back to match-all", fp, n)
				}
				for _, k := range keys {
					if !p.MayContain(f, k) {
						t.Fatalf("f=%d n=%d: false negative for %x", fp, n, k)
					}
				}
				if n == 0 {
					if len(f) != fuseTrailerLen || p.MayContain(f, []byte("x")) {
						t.Fatalf("f=%d: empty filter is %x and matches", fp, f)
					}
				}
			}
		}
	}
}

// TestBinaryFuseDuplicates: repeated keys, adjacent or not, count once: the
// filter is as large as the filter of the distinct keys and finds them all.
func TestBinaryFuseDuplicates(t *testing.T) {
	p := NewBinaryFusePolicy(8)
	build := func(keys ...string) []byte {
		b := p.NewBuilder()
		for _, k := range keys {
			b.AddKey([]byte(k))
		}
		return b.Finish(nil)
	}
	a := build("a", "b", "c")
	for _, keys := range [][]string{
		{"c", "b", "a"},
		{"a", "a", "b", "b", "c", "c"},
		{"a", "b", "a", "c", "a", "b"},
	} {
		got := build(keys...)
		if len(got) != len(a) || got[len(got)-2] != 8 {
			t.Errorf("%q: filter %x, want the size of %x", keys, got, a)
		}
		for _, k := range keys {
			if !p.MayContain(got, []byte(k)) {
				t.Errorf("%q: false negative for %q", keys, k)
			}
		}
	}
	if got := build("a", "a", "b", "b", "c", "c"); !bytes.Equal(got, a) {
		t.Error("adjacent repeats changed the filter")
	}
	// Many repeats of few keys: without dedupe the peeling would never end.
	var many []string
	for i := 0; i < 5000; i++ {
		many = append(many, fmt.Sprint(i%7))
	}
	f := build(many...)
	if f[len(f)-2] != 8 {
		t.Fatalf("7 distinct keys among 5000: construction failed")
	}
	for i := 0; i < 7; i++ {
		if !p.MayContain(f, []byte(fmt.Sprint(i))) {
			t.Errorf("false negative for %d", i)
		}
	}
	if want := len(build("0", "1", "2", "3", "4", "5", "6")); len(f) != want {
		t.Errorf("repeats grew the filter: %d bytes, want %d", len(f), want)
	}
}

// TestBinaryFuseFallback: when no seed peels, the filter says "may contain"
// for every key, so nothing is lost.
func TestBinaryFuseFallback(t *testing.T) {
	hashes := []uint64{xxhash.Sum64String("a"), xxhash.Sum64String("b")}
	var w fuseWork
	f := appendFuse([]byte("pre"), hashes, 8, 0, &w)
	if string(f[:3]) != "pre" {
		t.Fatal("prefix clobbered")
	}
	f = f[3:]
	if len(f) != fuseTrailerLen || f[len(f)-2] != 0 {
		t.Fatalf("fallback filter %x", f)
	}
	for _, k := range []string{"a", "b", "c", ""} {
		if !fuseMayContain(f, xxhash.Sum64String(k)) {
			t.Errorf("fallback filter rejects %q", k)
		}
	}
}

// TestBinaryFusePeelFailsAndGrows: a shape too small for the keys does not
// peel, a larger one does, and appendFuse gets there by growing.
func TestBinaryFusePeelFailsAndGrows(t *testing.T) {
	var hashes []uint64
	for i := 0; i < 10_000; i++ {
		hashes = append(hashes, xxhash.Sum64String(fmt.Sprint(i)))
	}
	var w fuseWork
	tight := fuseShape{segLog: 10, segCount: 8} // 10,240 slots for 10,000 keys
	w.mixBucket(hashes, 1, tight)
	if w.peel(tight) {
		t.Fatal("10,000 keys peeled in 10,240 slots")
	}
	if !w.peel(newFuseShape(len(w.keys))) {
		t.Fatal("10,000 keys did not peel in the paper's shape")
	}
}

// TestBinaryFuseShape: the paper's sizes.
func TestBinaryFuseShape(t *testing.T) {
	for _, tc := range []struct {
		n        int
		segLog   uint
		segCount uint64
	}{
		{1, 2, 1},
		{2, 2, 1},
		{1000, 7, 9},
		{1_000_000, 13, 136},
		{10_000_000, 15, 342},
		{1 << 40, 18, 4718590},
	} {
		s := newFuseShape(tc.n)
		if s.segLog != tc.segLog || s.segCount != tc.segCount {
			t.Errorf("n=%d: shape %+v, want log %d count %d", tc.n, s, tc.segLog, tc.segCount)
		}
	}
}

// TestBinaryFuseUnreadable: short filters, unknown versions, out-of-range
// parameters, and lengths that do not match the trailer answer true.
func TestBinaryFuseUnreadable(t *testing.T) {
	p := NewBinaryFusePolicy(8)
	b := p.NewBuilder()
	for i := 0; i < 1000; i++ {
		b.AddKey([]byte(fmt.Sprint(i)))
	}
	good := b.Finish(nil)
	n := len(good) - fuseTrailerLen
	mod := func(f func(t []byte)) []byte {
		g := bytes.Clone(good)
		f(g[n:])
		return g
	}
	cases := map[string][]byte{
		"nil":          nil,
		"short":        good[n+1:],
		"version 2":    mod(func(t []byte) { t[14] = 2 }),
		"segLog 0":     mod(func(t []byte) { t[12] = 0 }),
		"segLog 19":    mod(func(t []byte) { t[12] = 19 }),
		"fpBits 0":     mod(func(t []byte) { t[13] = 0 }),
		"fpBits 12":    mod(func(t []byte) { t[13] = 12 }),
		"fpBits 16":    mod(func(t []byte) { t[13] = 16 }),
		"segCount + 1": mod(func(t []byte) { binary.LittleEndian.PutUint32(t[8:], binary.LittleEndian.Uint32(t[8:])+1) }),
		"one byte cut": append(bytes.Clone(good[:n-1]), good[n:]...),
		"count 0, data": mod(func(t []byte) {
			binary.LittleEndian.PutUint32(t[8:], 0)
		}),
	}
	for name, f := range cases {
		for i := 0; i < 100; i++ {
			if !p.MayContain(f, []byte(fmt.Sprint("absent", i))) {
				t.Errorf("%s: MayContain = false", name)
				break
			}
		}
	}
}

// TestBinaryFuseValidate: only 8 and 16 are valid; others are rounded.
func TestBinaryFuseValidate(t *testing.T) {
	for _, tc := range []struct{ arg, bits int }{{8, 8}, {16, 16}, {0, 8}, {-1, 8}, {7, 8}, {9, 16}, {32, 16}} {
		p := NewBinaryFusePolicy(tc.arg)
		if got := p.(interface{ FingerprintBits() int }).FingerprintBits(); got != tc.bits {
			t.Errorf("NewBinaryFusePolicy(%d): %d bits, want %d", tc.arg, got, tc.bits)
		}
		if err := Validate(p); (err == nil) != (tc.arg == 8 || tc.arg == 16) {
			t.Errorf("Validate(NewBinaryFusePolicy(%d)) = %v", tc.arg, err)
		}
	}
}
