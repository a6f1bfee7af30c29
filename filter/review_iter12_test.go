package filter

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Adversarial review of 4e29c58: KeyHashes and MayContainHashBatchOf
// (keys naming shared filters by index), their fallbacks for
// HashBatchPolicies outside the package, and mayContainHashed's which.

// r12Plain is a HashBatchPolicy with only the interface's methods: the
// package's functions take their fallbacks for it.
type r12Plain struct{ HashBatchPolicy }

// r12Paths returns p, and p seen through r12Plain.
func r12Paths(p Policy) []HashBatchPolicy {
	hp := p.(HashBatchPolicy)
	return []HashBatchPolicy{hp, r12Plain{hp}}
}

// TestReview12HashBatchOfAgainstMayContain checks MayContainHashBatchOf
// against MayContain key by key: random filters (real ones of several
// sizes and arbitrary bytes, the k byte at and past its limits), 1 to 256
// of them shared by batches of 0 to 300 keys (several 64-key rounds),
// which and maybe longer than the batch, both paths.
func TestReview12HashBatchOfAgainstMayContain(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	pols := r10bHashPolicies()
	sizes := []int{0, 1, 2, 3, 63, 64, 65, 127, 128, 129, 200, 300}
	for iter := 0; iter < 40; iter++ {
		for _, p := range pols {
			n := sizes[rng.IntN(len(sizes))]
			nf := 1 + rng.IntN(256)
			if rng.IntN(3) == 0 {
				nf = 1 + rng.IntN(3)
			}
			filters := make([][]byte, nf)
			for i := range filters {
				filters[i] = r10bFilter(rng, pols)
			}
			keys := make([][]byte, n)
			which := make([]uint8, n+3)
			want := make([]bool, n)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("key%d", rng.IntN(80)))
				which[i] = uint8(rng.IntN(nf))
				want[i] = p.MayContain(filters[which[i]], keys[i])
			}
			which[n], which[n+1], which[n+2] = 255, 255, 255 // past the batch: never read
			for _, hp := range r12Paths(p) {
				hashes := make([]uint64, n+1)
				hashes[n] = 0xdead
				KeyHashes(hp, keys, hashes)
				if hashes[n] != 0xdead {
					t.Fatalf("%s (%T): KeyHashes wrote past the keys", p.Name(), hp)
				}
				for i, k := range keys {
					if hashes[i] != hp.KeyHash(k) {
						t.Fatalf("%s (%T): KeyHashes[%d] = %x, KeyHash %x", p.Name(), hp, i, hashes[i], hp.KeyHash(k))
					}
				}
				for _, fill := range []bool{false, true} {
					got := make([]bool, n+2)
					for i := range got {
						got[i] = fill
					}
					got[n], got[n+1] = !fill, !fill
					MayContainHashBatchOf(hp, filters, which, hashes[:n], got)
					for i := 0; i < n; i++ {
						if got[i] != want[i] {
							t.Fatalf("%s (%T), %d keys over %d filters (maybe filled %v): key %d %q in filter %d %x: MayContainHashBatchOf %v, MayContain %v",
								p.Name(), hp, n, nf, fill, i, keys[i], which[i], filters[which[i]], got[i], want[i])
						}
					}
					if got[n] != !fill || got[n+1] != !fill {
						t.Fatalf("%s (%T): MayContainHashBatchOf of %d keys wrote past them", p.Name(), hp, n)
					}
				}
			}
		}
	}
}

// TestReview12HashBatchOfOneFilter: every key of a long batch in one
// filter holding the present keys: no false negative at any position of
// the 64-key rounds, for filters of every probe count.
func TestReview12HashBatchOfOneFilter(t *testing.T) {
	for _, p := range r10bHashPolicies() {
		for _, nk := range []int{1, 5, 64, 65, 130, 1000} {
			b := p.NewBuilder()
			keys := make([][]byte, nk)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("present-%d-%d", nk, i))
				b.AddKey(keys[i])
			}
			f := b.Finish(nil)
			for _, hp := range r12Paths(p) {
				hashes := make([]uint64, nk)
				KeyHashes(hp, keys, hashes)
				which := make([]uint8, nk)
				for i := range which {
					which[i] = uint8(i % 3)
				}
				maybe := make([]bool, nk)
				MayContainHashBatchOf(hp, [][]byte{f, f, f}, which, hashes, maybe)
				for i, m := range maybe {
					if !m {
						t.Fatalf("%s (%T): %d keys: false negative for %q", p.Name(), hp, nk, keys[i])
					}
				}
			}
		}
	}
}

// r12Panics reports whether f panics.
func r12Panics(f func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	f()
	return false
}

// TestReview12HashBatchOfPanics checks the documented panics (which or
// maybe shorter than hashes, an index of which outside filters; KeyHashes'
// hashes shorter than keys), in the first 64-key round and in a later
// one, on both paths, and that empty batches and longer slices do not
// panic.
func TestReview12HashBatchOfPanics(t *testing.T) {
	f := NewBloomPolicy(10).NewBuilder().Finish(nil)
	for _, p := range r10bHashPolicies()[:2] {
		for _, hp := range r12Paths(p) {
			what := fmt.Sprintf("%s (%T)", p.Name(), hp)
			for _, n := range []int{1, 64, 65, 200} {
				hashes := make([]uint64, n)
				filters := [][]byte{f, f}
				if !r12Panics(func() { MayContainHashBatchOf(hp, filters, make([]uint8, n-1), hashes, make([]bool, n)) }) {
					t.Fatalf("%s: which of %d for %d hashes: no panic", what, n-1, n)
				}
				if !r12Panics(func() { MayContainHashBatchOf(hp, filters, make([]uint8, n), hashes, make([]bool, n-1)) }) {
					t.Fatalf("%s: maybe of %d for %d hashes: no panic", what, n-1, n)
				}
				for _, at := range []int{0, n - 1} {
					which := make([]uint8, n)
					which[at] = 2
					if !r12Panics(func() { MayContainHashBatchOf(hp, filters, which, hashes, make([]bool, n)) }) {
						t.Fatalf("%s: which[%d] = 2 of 2 filters, %d hashes: no panic", what, at, n)
					}
				}
				if !r12Panics(func() { MayContainHashBatchOf(hp, nil, make([]uint8, n), hashes, make([]bool, n)) }) {
					t.Fatalf("%s: no filters for %d hashes: no panic", what, n)
				}
				if !r12Panics(func() { KeyHashes(hp, make([][]byte, n), make([]uint64, n-1)) }) {
					t.Fatalf("%s: KeyHashes of %d keys into %d hashes: no panic", what, n, n-1)
				}
				if r12Panics(func() {
					MayContainHashBatchOf(hp, filters, make([]uint8, n+5), hashes, make([]bool, n+5))
					KeyHashes(hp, make([][]byte, n), make([]uint64, n+5))
				}) {
					t.Fatalf("%s: longer slices than the %d keys: panic", what, n)
				}
			}
			if r12Panics(func() {
				MayContainHashBatchOf(hp, nil, nil, nil, nil)
				KeyHashes(hp, nil, nil)
			}) {
				t.Fatalf("%s: empty batch: panic", what)
			}
		}
	}
}

// TestReview12HashBatchOfNoAllocs: MayContainHashBatchOf and KeyHashes
// allocate nothing, on either path (db's MultiGetInto promises no
// allocation for absent keys, and probes every hashed table's keys
// through MayContainHashBatchOf; a HashBatchPolicy's own
// MayContainHashBatch must not allocate).
func TestReview12HashBatchOfNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 2))
	pols := r10bHashPolicies()
	for _, nf := range []int{1, 64, 65, 256} {
		filters := make([][]byte, nf)
		for i := range filters {
			filters[i] = r10bFilter(rng, pols)
		}
		for _, hp := range r12Paths(NewBloomPolicy(10)) {
			for _, n := range []int{1, 64, 65} {
				which := make([]uint8, n)
				hashes := make([]uint64, n)
				keys := make([][]byte, n)
				maybe := make([]bool, n)
				for i := range which {
					which[i], keys[i] = uint8(rng.IntN(nf)), []byte(fmt.Sprint(i))
				}
				if a := testing.AllocsPerRun(20, func() { KeyHashes(hp, keys, hashes) }); a != 0 {
					t.Errorf("%T: KeyHashes of %d keys: %v allocations a call", hp, n, a)
				}
				if a := testing.AllocsPerRun(20, func() { MayContainHashBatchOf(hp, filters, which, hashes, maybe) }); a != 0 {
					t.Errorf("%T: MayContainHashBatchOf of %d keys over %d filters: %v allocations a call", hp, n, nf, a)
				}
			}
		}
	}
}
