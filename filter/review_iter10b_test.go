package filter

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// Adversarial review of 7c1ebf7: HashBatchPolicy (KeyHash and
// MayContainHashBatch) on the Bloom policies, and MayContainBatch through
// the shared mayContainHashed.

// r10bHashPolicies are the policies that must be HashBatchPolicies.
func r10bHashPolicies() []Policy {
	return []Policy{
		NewBloomPolicy(10), NewLegacyBloomPolicy(10),
		NewBloomPolicy(1), NewLegacyBloomPolicy(1),
		NewBloomPolicy(4), NewLegacyBloomPolicy(4), // k = 2: left to the last round
		NewBloomPolicy(MaxBitsPerKey), NewLegacyBloomPolicy(MaxBitsPerKey),
	}
}

// r10bFilter returns a filter of random shape: real ones of several
// sizes and probe counts, and arbitrary bytes, with the k byte at and past
// its limits.
func r10bFilter(rng *rand.Rand, real []Policy) []byte {
	switch r := rng.IntN(10); {
	case r < 5:
		p := real[rng.IntN(len(real))]
		b := p.NewBuilder()
		n := rng.IntN(40)
		for i := 0; i < n; i++ {
			b.AddKey([]byte(fmt.Sprintf("key%d", rng.IntN(60))))
		}
		return b.Finish(nil)
	case r == 5:
		return nil
	case r == 6:
		return []byte{byte(rng.IntN(40))}
	default:
		f := make([]byte, rng.IntN(100)+1)
		for i := range f {
			f[i] = byte(rng.Uint32())
		}
		// The k byte: 0, 1, 2, 3, MaxProbes, MaxProbes+1, 0xff, random.
		ks := []byte{0, 1, 2, 3, 6, MaxProbes, MaxProbes + 1, 0xff, byte(rng.Uint32())}
		f[len(f)-1] = ks[rng.IntN(len(ks))]
		return f
	}
}

// TestReview10bHashBatchAgainstMayContain checks, on random filters (real
// and arbitrary bytes) and keys, at batch sizes around the 64-key rounds,
// that MayContainHashBatch with KeyHash's hashes and MayContainBatch both
// answer MayContain key by key, write nothing past the batch, and that
// KeyHash is xxhash64 for every Bloom policy (a table written at any bits
// per key, standard or legacy, is probed with one hash).
func TestReview10bHashBatchAgainstMayContain(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	pols := r10bHashPolicies()
	for _, p := range pols {
		hp, ok := p.(HashBatchPolicy)
		if !ok {
			t.Fatalf("%s is not a HashBatchPolicy", p.Name())
		}
		for _, k := range [][]byte{nil, {}, []byte("a"), []byte("hello world, a longer key of more than 32 bytes")} {
			if got, want := hp.KeyHash(k), xxhash.Sum64(k); got != want {
				t.Fatalf("%s: KeyHash(%q) = %x, want xxhash64 %x", p.Name(), k, got, want)
			}
		}
	}
	sizes := []int{0, 1, 2, 3, 4, 5, 31, 63, 64, 65, 100, 127, 128, 129, 191, 192, 193, 300}
	for iter := 0; iter < 60; iter++ {
		for _, p := range pols {
			hp := p.(HashBatchPolicy)
			n := sizes[rng.IntN(len(sizes))]
			filters := make([][]byte, n+1)
			keys := make([][]byte, n)
			hashes := make([]uint64, n)
			want := make([]bool, n)
			for i := range keys {
				// Filters repeat: one table asked about many keys.
				if i > 0 && rng.IntN(3) == 0 {
					filters[i] = filters[rng.IntN(i)]
				} else {
					filters[i] = r10bFilter(rng, pols)
				}
				keys[i] = []byte(fmt.Sprintf("key%d", rng.IntN(80)))
				if rng.IntN(10) == 0 {
					keys[i] = nil
				}
				hashes[i] = hp.KeyHash(keys[i])
				want[i] = p.MayContain(filters[i], keys[i])
			}
			for _, fill := range []bool{false, true} {
				got := make([]bool, n+1)
				for i := range got {
					got[i] = fill
				}
				got[n] = !fill
				hp.MayContainHashBatch(filters, hashes, got)
				for i := 0; i < n; i++ {
					if got[i] != want[i] {
						t.Fatalf("%s, batch of %d (maybe filled %v): key %d %q, filter %x: MayContainHashBatch %v, MayContain %v",
							p.Name(), n, fill, i, keys[i], filters[i], got[i], want[i])
					}
				}
				if got[n] != !fill {
					t.Fatalf("%s: MayContainHashBatch of %d keys wrote maybe[%d]", p.Name(), n, n)
				}
				bgot := make([]bool, n+1)
				bgot[n] = !fill
				for i := 0; i < n; i++ {
					bgot[i] = fill
				}
				p.(BatchPolicy).MayContainBatch(filters, keys, bgot)
				for i := 0; i < n; i++ {
					if bgot[i] != want[i] {
						t.Fatalf("%s, batch of %d: key %d %q, filter %x: MayContainBatch %v, MayContain %v",
							p.Name(), n, i, keys[i], filters[i], bgot[i], want[i])
					}
				}
				if bgot[n] != !fill {
					t.Fatalf("%s: MayContainBatch of %d keys wrote maybe[%d]", p.Name(), n, n)
				}
			}
		}
	}
}

// TestReview10bHashBatchArbitraryHashes probes random filters with random
// 64-bit hashes: a batch must answer for each hash what a batch of that
// hash alone answers, at every position (the rounds of 64 keys), and a
// filter built from hashes' keys must let every one of them through.
func TestReview10bHashBatchArbitraryHashes(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	pols := r10bHashPolicies()
	for iter := 0; iter < 40; iter++ {
		for _, p := range pols {
			hp := p.(HashBatchPolicy)
			n := 1 + rng.IntN(260)
			filters := make([][]byte, n)
			hashes := make([]uint64, n)
			for i := range hashes {
				filters[i] = r10bFilter(rng, pols)
				hashes[i] = rng.Uint64()
				if rng.IntN(8) == 0 {
					hashes[i] = []uint64{0, ^uint64(0), 1 << 63, 1}[rng.IntN(4)]
				}
			}
			got := make([]bool, n)
			hp.MayContainHashBatch(filters, hashes, got)
			for i := range hashes {
				var one [1]bool
				hp.MayContainHashBatch(filters[i:i+1], hashes[i:i+1], one[:])
				if one[0] != got[i] {
					t.Fatalf("%s: hash %x in filter %x: alone %v, at %d of a batch of %d %v", p.Name(), hashes[i], filters[i], one[0], i, n, got[i])
				}
			}
		}
	}
	// No false negative: filters holding the keys, through their hashes.
	for _, p := range pols {
		hp := p.(HashBatchPolicy)
		for _, nk := range []int{1, 2, 3, 10, 64, 65, 200, 1000} {
			b := p.NewBuilder()
			keys := make([][]byte, nk)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("present-%d-%d", nk, i))
				b.AddKey(keys[i])
			}
			f := b.Finish(nil)
			filters := make([][]byte, nk)
			hashes := make([]uint64, nk)
			for i, k := range keys {
				filters[i], hashes[i] = f, hp.KeyHash(k)
			}
			maybe := make([]bool, nk)
			hp.MayContainHashBatch(filters, hashes, maybe)
			for i, m := range maybe {
				if !m {
					t.Fatalf("%s: %d keys: MayContainHashBatch false negative for %q", p.Name(), nk, keys[i])
				}
			}
		}
	}
}

// TestReview10bHashBatchNoAllocs: MayContainHashBatch must not allocate
// (HashBatchPolicy's contract), at any batch size.
func TestReview10bHashBatchNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 15))
	pols := r10bHashPolicies()
	for _, p := range pols[:2] {
		hp := p.(HashBatchPolicy)
		for _, n := range []int{1, 64, 65, 300} {
			filters := make([][]byte, n)
			hashes := make([]uint64, n)
			maybe := make([]bool, n)
			for i := range hashes {
				filters[i], hashes[i] = r10bFilter(rng, pols), rng.Uint64()
			}
			if a := testing.AllocsPerRun(20, func() { hp.MayContainHashBatch(filters, hashes, maybe) }); a != 0 {
				t.Fatalf("%s: MayContainHashBatch of %d keys: %v allocations", p.Name(), n, a)
			}
		}
	}
}

// TestReview10bHashBatchShortArgs: filters and maybe longer than hashes
// are fine, and an empty batch touches nothing (the contract asks only
// that they be at least as long as hashes).
func TestReview10bHashBatchShortArgs(t *testing.T) {
	for _, p := range r10bHashPolicies()[:2] {
		hp := p.(HashBatchPolicy)
		hp.MayContainHashBatch(nil, nil, nil)
		maybe := []bool{false, true, false}
		hp.MayContainHashBatch([][]byte{nil, nil, nil}, []uint64{1}, maybe)
		if !maybe[0] || !maybe[1] || maybe[2] {
			t.Fatalf("%s: maybe %v after a batch of one unreadable filter; want [true true false]", p.Name(), maybe)
		}
	}
}
