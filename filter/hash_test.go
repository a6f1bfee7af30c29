package filter

import (
	"math"
	"math/rand/v2"
	"testing"
)

// FuzzKeyHash checks keyHash against xxh3Spec, the specification's
// pseudo-code in Go, on arbitrary keys. (TestKeyHashIsXXH3 holds both to
// vectors made by github.com/zeebo/xxh3 and cmd/kvbench/filterpeers compares with
// that library on random keys.)
func FuzzKeyHash(f *testing.F) {
	for _, s := range []string{"", "a", "abc", "abcdefgh", "abcdefghi", "0000000000001234", "abcdefghijklmnopq", "user0000000000000000000000000042", "abcdefghijklmnopqrstuvwxyz0123456"} {
		f.Add([]byte(s))
	}
	for _, n := range []int{100, 129, 240, 241, 1024, 1025, 2049} {
		f.Add(xxh3SplitmixPattern(n))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		if got, want := keyHash(key), xxh3Spec(key); got != want {
			t.Fatalf("keyHash(%x) = %#x, xxh3Spec = %#x", key, got, want)
		}
	})
}

// TestBlockedBloomKeyLengths builds blocked filters over keys of every length
// from 0 to 70 bytes (the hash takes a different path below 9, from 9 to 16,
// from 17 to 32 and above 32 bytes) and checks that every added key is found
// and that the false-positive rate stays within its bound.
func TestBlockedBloomKeyLengths(t *testing.T) {
	p := NewBlockedBloomPolicy(10)
	rng := rand.New(rand.NewPCG(7, 8))
	const perLength = 2000
	var added [][]byte
	seen := map[string]bool{}
	b := p.NewBuilder()
	for n := 0; n <= 70; n++ {
		for range perLength {
			k := make([]byte, n)
			for i := range k {
				k[i] = byte(rng.Uint32())
			}
			if n == 0 && len(added) > 0 {
				continue // one empty key is enough
			}
			added = append(added, k)
			seen[string(k)] = true
			b.AddKey(k)
		}
	}
	f := b.Finish(nil)
	for _, k := range added {
		if !p.MayContain(f, k) {
			t.Fatalf("false negative for a %d-byte key", len(k))
		}
	}
	// Absent keys: fresh random keys of the same lengths (from 4 bytes, as
	// the shorter lengths hold few distinct keys), skipping any added one.
	hits, probes := 0, 0
	for n := 4; n <= 70; n++ {
		for range perLength {
			k := make([]byte, n)
			for i := range k {
				k[i] = byte(rng.Uint32())
			}
			if seen[string(k)] {
				continue
			}
			probes++
			if p.MayContain(f, k) {
				hits++
			}
		}
	}
	rate := float64(hits) / float64(probes)
	// With ~140k keys, 10 bits per key: the estimate is 0.96%; allow 10%
	// relative on top of it plus 3 standard deviations of the sample.
	want := EstimateBlockedFPR(10, p.(BitsPerKeyer).NumProbes())
	if bound := want*1.1 + 3*math.Sqrt(want/float64(probes)); rate > bound {
		t.Fatalf("false-positive rate %.4f%% over %d probes, want <= %.4f%%", 100*rate, probes, 100*bound)
	}
	t.Logf("false-positive rate %.4f%% (estimate %.4f%%)", 100*rate, 100*want)
}
