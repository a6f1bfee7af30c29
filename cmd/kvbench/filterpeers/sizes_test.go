package filterpeers

import "testing"

// TestSizes logs the size in bits per key of every filter of BenchmarkPeers
// over the same million keys (run with -v).
func TestSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every filter over a million keys")
	}
	const n = 1_000_000
	ks := getKeys(n)
	for _, pf := range peerFilters {
		if pf.size == nil {
			continue
		}
		s := pf.make(n)
		for i := 0; i < n; i++ {
			s.add(ks.key(i))
		}
		s.finish()
		for i := 0; i < n; i++ {
			if !s.contains(ks.key(i)) {
				t.Fatalf("%s: false negative", pf.name)
			}
		}
		t.Logf("%-24s %6.2f bits/key", pf.name, 8*float64(pf.size(s))/n)
	}
}
