package filter

import (
	"fmt"
	"testing"
)

func benchPolicies() []Policy {
	return []Policy{NewBloomPolicy(10), NewLegacyBloomPolicy(10), NewLevelDBBloomPolicy(10), NewBlockedBloomPolicy(10), NewBinaryFusePolicy(8)}
}

// BenchmarkBuild measures AddKey plus the key's share of Finish: one op is
// one key of a 100k-key filter.
func BenchmarkBuild(b *testing.B) {
	const n = 100_000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = presentKey(nil, i)
	}
	for _, p := range benchPolicies() {
		b.Run(p.Name(), func(b *testing.B) {
			b.ReportAllocs()
			bld := p.NewBuilder()
			var dst []byte
			for i := 0; i < b.N; i++ {
				bld.AddKey(keys[i%n])
				if i%n == n-1 || i == b.N-1 {
					dst = bld.Finish(dst[:0])
				}
			}
		})
	}
}

// BenchmarkMayContain probes a 1M-key filter (1.25 MB at 10 bits per key,
// larger than L2) with absent and present keys.
func BenchmarkMayContain(b *testing.B) {
	const n, nprobe = 1_000_000, 1 << 16
	absent := make([][]byte, nprobe)
	present := make([][]byte, nprobe)
	for i := range absent {
		absent[i] = absentKey(nil, i*15)
		present[i] = presentKey(nil, i*15)
	}
	for _, p := range benchPolicies() {
		bld := p.NewBuilder()
		buf := make([]byte, 0, 16)
		for i := 0; i < n; i++ {
			bld.AddKey(presentKey(buf, i))
		}
		f := bld.Finish(nil)
		for _, set := range []struct {
			name string
			keys [][]byte
		}{{"absent", absent}, {"present", present}} {
			b.Run(fmt.Sprintf("%s/%s", p.Name(), set.name), func(b *testing.B) {
				b.ReportAllocs()
				hits := 0
				for i := 0; i < b.N; i++ {
					if p.MayContain(f, set.keys[i&(nprobe-1)]) {
						hits++
					}
				}
				b.ReportMetric(float64(hits)/float64(b.N), "hit-rate")
			})
		}
	}
}

// BenchmarkMayContainBatch probes filters of 100,000 keys (125 KB, in L2)
// and 4,000,000 keys (5 MB, past L2) with batches of 64 absent keys,
// through MayContainBatch and through a loop of MayContain. One op is
// one key.
func BenchmarkMayContainBatch(b *testing.B) {
	const nprobe = 1 << 16
	absent := make([][]byte, nprobe)
	for i := range absent {
		absent[i] = absentKey(nil, i*61)
	}
	for _, n := range []int{100_000, 4_000_000} {
		for _, p := range []Policy{NewBloomPolicy(10), NewBlockedBloomPolicy(10)} {
			bld := p.NewBuilder()
			buf := make([]byte, 0, 16)
			for i := 0; i < n; i++ {
				bld.AddKey(presentKey(buf, i))
			}
			f := bld.Finish(nil)
			var maybe [64]bool
			var filters [64][]byte
			for i := range filters {
				filters[i] = f
			}
			for _, how := range []string{"loop", "batch"} {
				b.Run(fmt.Sprintf("keys=%d/%s/%s", n, p.Name(), how), func(b *testing.B) {
					b.ReportAllocs()
					for i := 0; i < b.N; i += 64 {
						keys := absent[i&(nprobe-1):][:64]
						if how == "batch" {
							MayContainBatch(p, filters[:], keys, maybe[:])
							continue
						}
						for j, k := range keys {
							maybe[j] = p.MayContain(f, k)
						}
					}
				})
			}
		}
	}
}
