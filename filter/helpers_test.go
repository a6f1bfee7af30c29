package filter

import (
	"math"
	"math/rand/v2"
	"testing"
)

// checkRate fails t unless hits/probes is within 10% (relative) of theory,
// widened by three standard deviations of the binomial sampling noise so a
// rate measured from few hits is not judged on luck.
func checkRate(t *testing.T, what string, hits, probes int, theory float64) {
	t.Helper()
	got := float64(hits) / float64(probes)
	slack := 3 * math.Sqrt(theory*(1-theory)/float64(probes))
	t.Logf("%s: rate %.5f%% (%d of %d), theory %.5f%%", what, 100*got, hits, probes, 100*theory)
	if got > theory*1.10+slack || got < theory*0.90-slack {
		t.Errorf("%s: rate %.5f%% is not within 10%% of theory %.5f%%", what, 100*got, 100*theory)
	}
}

// keyBuf makes db_bench-style keys into one reused buffer.
type keyBuf []byte

func (b *keyBuf) present(i int) []byte { *b = presentKey(*b, i); return *b }
func (b *keyBuf) absent(i int) []byte  { *b = absentKey(*b, i); return *b }

// measureFilter is measure that also returns the filter.
func measureFilter(t *testing.T, p Policy, n, probes int) (hits int, filter []byte) {
	t.Helper()
	b := p.NewBuilder()
	var kb keyBuf
	for i := 0; i < n; i++ {
		b.AddKey(kb.present(i))
	}
	f := b.Finish(nil)
	for i := 0; i < n; i++ {
		if !p.MayContain(f, kb.present(i)) {
			t.Fatalf("%s n=%d: false negative for %q", p.Name(), n, kb)
		}
	}
	for i := 0; i < probes; i++ {
		if p.MayContain(f, kb.absent(i)) {
			hits++
		}
	}
	return hits, f
}

// randomHits counts the random 64-bit hashes, out of probes, that contains
// accepts.
func randomHits(rng *rand.Rand, probes int, contains func(h uint64) bool) int {
	hits := 0
	for i := 0; i < probes; i++ {
		if contains(rng.Uint64()) {
			hits++
		}
	}
	return hits
}
