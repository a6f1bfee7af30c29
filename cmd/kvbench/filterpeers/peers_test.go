package filterpeers

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/FastFilter/xorfilter"
	bbloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/cespare/xxhash/v2"
	"github.com/greatroar/blobloom"
	cuckoo "github.com/seiflotfy/cuckoofilter"
)

// BenchmarkPeers runs the same three operations over bloomkv's filters and
// the peer libraries', at 1M and 10M keys, in one run:
//
//   - add: one op is one key added; for filters built from the whole key set
//     at once (bloomkv's table policies, xorfilter) it is the key's share of
//     the build, and a filter is started afresh every n keys;
//   - present: a lookup of a random key that was added;
//   - absent: a lookup of a key that never was (the filter-first Get of a
//     missing key).
//
// Keys are db_bench-style 16-digit numbers (present keys even, absent keys
// odd), precomputed. Libraries that take 64-bit hashes rather than keys
// (blobloom, xorfilter) get xxhash64 of the key, computed inside the
// measured op, as bloomkv's filters do internally. The Bloom filters are
// sized for 1% (bloomkv's table policies: 10 bits per key), the cuckoo
// filters for n keys, the fuse filters by their construction.
//
//	go test -run='^$' -bench=BenchmarkPeers -count=5 -timeout=2h . | tee peers.txt
//	go run golang.org/x/perf/cmd/benchstat@latest peers.txt
func BenchmarkPeers(b *testing.B) {
	sizes := []int{1_000_000, 10_000_000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, pf := range peerFilters {
		for _, n := range sizes {
			ks := getKeys(n)
			prefix := fmt.Sprintf("filter=%s/keys=%dM", pf.name, n/1_000_000)
			b.Run(prefix+"/add", func(b *testing.B) {
				b.ReportAllocs()
				s := pf.make(n)
				for i := 0; i < b.N; i++ {
					j := i % n
					if j == 0 && i > 0 {
						s = pf.make(n)
					}
					s.add(ks.key(j))
					if j == n-1 || i == b.N-1 {
						s.finish()
					}
				}
			})
			// Built on first use, so that a -bench pattern that skips the
			// queries skips the build too.
			var s set
			built := func() set {
				if s == nil {
					s = pf.make(n)
					for i := 0; i < n; i++ {
						s.add(ks.key(i))
					}
					s.finish()
				}
				return s
			}
			b.Run(prefix+"/present", func(b *testing.B) { query(b, built(), ks.present) })
			b.Run(prefix+"/absent", func(b *testing.B) { query(b, built(), ks.absent) })
		}
	}
}

func query(b *testing.B, s set, pool []byte) {
	b.ResetTimer()
	b.ReportAllocs()
	hits := 0
	for i := 0; i < b.N; i++ {
		j := i & (probes - 1)
		if s.contains(pool[16*j : 16*j+16 : 16*j+16]) {
			hits++
		}
	}
	b.ReportMetric(float64(hits)/float64(b.N), "hit-rate")
}

// set is one filter under benchmark.
type set interface {
	add(key []byte)
	finish() // whole-set builders build here; others do nothing
	contains(key []byte) bool
}

var peerFilters = []struct {
	name string
	make func(n int) set
	size func(set) int // bytes, when known (TestSizes)
}{
	// bloomkv
	{"bloomkv-bloom10", policy(filter.NewBloomPolicy(10)), policySize},
	{"bloomkv-blockedbloom10", policy(filter.NewBlockedBloomPolicy(10)), policySize},
	{"bloomkv-bloomfilter1pct", func(n int) set { return bkBloom{filter.NewBloomFilter(uint64(n), 0.01)} },
		func(s set) int { return int(s.(bkBloom).SizeInBytes()) }},
	{"bloomkv-binaryfuse8", policy(filter.NewBinaryFusePolicy(8)), policySize},
	{"bloomkv-binaryfuse16", policy(filter.NewBinaryFusePolicy(16)), policySize},
	{"bloomkv-cuckoo8", func(n int) set { return bkCuckoo{filter.NewCuckooFilterWithBits(uint64(n), 8)} },
		func(s set) int { return int(s.(bkCuckoo).SizeInBytes()) }},
	{"bloomkv-cuckoo16", func(n int) set { return bkCuckoo{filter.NewCuckooFilter(uint64(n))} },
		func(s set) int { return int(s.(bkCuckoo).SizeInBytes()) }},
	// peers
	{"bitsandblooms-1pct", func(n int) set { return bbSet{bbloom.NewWithEstimates(uint(n), 0.01)} },
		func(s set) int { return int(s.(bbSet).Cap()) / 8 }},
	{"blobloom-1pct", func(n int) set {
		return blobSet{blobloom.NewOptimized(blobloom.Config{Capacity: uint64(n), FPRate: 0.01})}
	}, func(s set) int { return int(s.(blobSet).NumBits()) / 8 }},
	{"xorfilter-binaryfuse8", func(int) set { return &xorSet[uint8]{} }, func(s set) int { return len(s.(*xorSet[uint8]).f.Fingerprints) }},
	{"xorfilter-binaryfuse16", func(int) set { return &xorSet[uint16]{} }, func(s set) int { return 2 * len(s.(*xorSet[uint16]).f.Fingerprints) }},
	// seiflotfy/cuckoofilter has no size accessor: 1 byte per slot, n
	// rounded up to a power of two slots.
	{"seiflotfy-cuckoo8", func(n int) set { return cuckooSet{cuckoo.NewFilter(uint(n))} }, nil},
}

type policySet struct {
	p filter.Policy
	b filter.Builder
	f []byte
}

func policy(p filter.Policy) func(int) set {
	return func(int) set { return &policySet{p: p, b: p.NewBuilder()} }
}
func policySize(s set) int { return len(s.(*policySet).f) }

func (s *policySet) add(key []byte)           { s.b.AddKey(key) }
func (s *policySet) finish()                  { s.f = s.b.Finish(s.f[:0]) }
func (s *policySet) contains(key []byte) bool { return s.p.MayContain(s.f, key) }

type bkBloom struct{ *filter.BloomFilter }

func (s bkBloom) add(key []byte)           { s.Add(key) }
func (s bkBloom) finish()                  {}
func (s bkBloom) contains(key []byte) bool { return s.MayContain(key) }

type bkCuckoo struct{ *filter.CuckooFilter }

func (s bkCuckoo) add(key []byte)           { s.Add(key) }
func (s bkCuckoo) finish()                  {}
func (s bkCuckoo) contains(key []byte) bool { return s.Contains(key) }

type bbSet struct{ *bbloom.BloomFilter }

func (s bbSet) add(key []byte)           { s.Add(key) }
func (s bbSet) finish()                  {}
func (s bbSet) contains(key []byte) bool { return s.Test(key) }

type blobSet struct{ *blobloom.Filter }

func (s blobSet) add(key []byte)           { s.Add(xxhash.Sum64(key)) }
func (s blobSet) finish()                  {}
func (s blobSet) contains(key []byte) bool { return s.Has(xxhash.Sum64(key)) }

// xorSet collects key hashes and builds a binary fuse filter from them in
// finish, as a table builder would.
type xorSet[T uint8 | uint16] struct {
	hashes []uint64
	f      *xorfilter.BinaryFuse[T]
}

func (s *xorSet[T]) add(key []byte) { s.hashes = append(s.hashes, xxhash.Sum64(key)) }
func (s *xorSet[T]) finish() {
	f, err := xorfilter.NewBinaryFuse[T](s.hashes)
	if err != nil {
		panic(err)
	}
	s.f, s.hashes = f, s.hashes[:0]
}
func (s *xorSet[T]) contains(key []byte) bool { return s.f.Contains(xxhash.Sum64(key)) }

type cuckooSet struct{ *cuckoo.Filter }

func (s cuckooSet) add(key []byte)           { s.Insert(key) }
func (s cuckooSet) finish()                  {}
func (s cuckooSet) contains(key []byte) bool { return s.Lookup(key) }

// keySet holds n present keys and pools of present and absent probe keys,
// 16 bytes each, in flat buffers.
type keySet struct {
	keys            []byte // present key i at [16i, 16i+16)
	present, absent []byte // probes keys each
}

const probes = 1 << 20

var (
	keysMu sync.Mutex
	keys   = map[int]*keySet{}
)

func getKeys(n int) *keySet {
	keysMu.Lock()
	defer keysMu.Unlock()
	if ks, ok := keys[n]; ok {
		return ks
	}
	clear(keys) // one size in memory at a time
	ks := &keySet{keys: make([]byte, 0, 16*n)}
	for i := 0; i < n; i++ {
		ks.keys = appendKey16(ks.keys, 2*uint64(i))
	}
	for i := 0; i < probes; i++ {
		j := uint64(i) * 0x9e3779b1 % uint64(n)
		ks.present = appendKey16(ks.present, 2*j)
		ks.absent = appendKey16(ks.absent, 2*j+1)
	}
	keys[n] = ks
	return ks
}

func (ks *keySet) key(i int) []byte { return ks.keys[16*i : 16*i+16 : 16*i+16] }

// appendKey16 appends v in decimal, zero-padded to 16 digits (db_bench's
// %016d).
func appendKey16(dst []byte, v uint64) []byte {
	var digits [20]byte
	s := strconv.AppendUint(digits[:0], v, 10)
	for i := len(s); i < 16; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}
