package filter

import (
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// BloomPolicyName is the Name of the policies made by NewBloomPolicy.
//
// Encoding: a bit array of m bits (m a multiple of 64, at least 64, stored as
// m/8 bytes, bit i in byte i/8 at position i%8) followed by one byte k, the
// number of probes. A key with h = xxhash64(key) sets the bits
// fastrange(x_i, m) for i in [0,k), where x_0 = h, x_{i+1} = x_i·M + c with
// M = 0xd1342543de82ef95 and c = rotl64(h,32)|1 (mod 2^64), and
// fastrange(x, m) = (x*m) >> 64 in 128-bit arithmetic. A reader takes m from
// the filter's length (any length works) and k from its last byte.
const BloomPolicyName = "bloomkv.BloomFilter64v2"

// LegacyBloomPolicyName is the Name of the policies made by
// NewLegacyBloomPolicy: BloomPolicyName's layout with the probe sequence
// bloomkv used until November 2026, x_i = h + i·(rotl64(h,32)|1). Tables
// written with it stay readable (package db knows both names).
const LegacyBloomPolicyName = "bloomkv.BloomFilter64"

// NewBloomPolicy returns the bloomkv Bloom filter policy with a budget of
// bitsPerKey bits per key (clamped to [MinBitsPerKey, MaxBitsPerKey]).
//
// Its filters use k = floor(0.69*bitsPerKey) probes clamped to [1,
// MaxProbes], and max(n*bitsPerKey, 64) bits rounded up to a multiple of 64,
// where n counts the added keys except those equal to the key added just
// before (the versions of one user key that a table holds side by side count
// once). At 10 bits per key the false-positive rate is about 0.84%; it
// follows (1-e^(-kn/m))^k at every size, one key or millions.
//
// The returned Policy also implements BitsPerKeyer.
func NewBloomPolicy(bitsPerKey int) Policy {
	b := clampBitsPerKey(bitsPerKey)
	// Integer arithmetic: exactly floor(0.69*b), free of float rounding.
	return &bloomPolicy{bitsPerKey: b, k: clampProbes(b * 69 / 100), requested: bitsPerKey}
}

// NewLegacyBloomPolicy returns the policy of LegacyBloomPolicyName, sized
// as NewBloomPolicy's. Use it to read tables written before the v2
// encoding (package db does so by itself) or to write tables that older
// versions of bloomkv must filter. Its probe sequence cycles on small
// filters with many probes: averaged over 2,000 filters, 10 keys at 20
// bits per key measure 5.1e-4 instead of 7.2e-6, 100 keys at 20 bits per
// key 1.6e-4 instead of 5.5e-5 (at 10 bits per key, where k is 6, the
// difference is within a few percent).
func NewLegacyBloomPolicy(bitsPerKey int) Policy {
	p := NewBloomPolicy(bitsPerKey).(*bloomPolicy)
	p.legacy = true
	return p
}

type bloomPolicy struct {
	bitsPerKey int
	k          int
	requested  int  // the argument before clamping, for Validate
	legacy     bool // LegacyBloomPolicyName's probe sequence
}

func (p *bloomPolicy) Name() string {
	if p.legacy {
		return LegacyBloomPolicyName
	}
	return BloomPolicyName
}
func (p *bloomPolicy) BitsPerKey() int { return p.bitsPerKey }
func (p *bloomPolicy) NumProbes() int  { return p.k }
func (p *bloomPolicy) validate() error { return checkRequested(p.requested) }

func (p *bloomPolicy) NewBuilder() Builder {
	return &bloomBuilder{bitsPerKey: p.bitsPerKey, k: p.k, legacy: p.legacy}
}

// MayContain implements Policy.
func (p *bloomPolicy) MayContain(filter, key []byte) bool {
	return bloomMayContain(filter, xxhash.Sum64(key), p.legacy)
}

// MayContainBatch implements BatchPolicy.
//
// A loop of MayContain decides each key on its first three probes before
// it starts the next key's, and that branch is hard to predict (a key the
// filter does not hold passes the first step about one time in five at 10
// bits per key): every misprediction throws away the loads begun for the
// keys after it. Here every key is hashed first, then the probes go in
// rounds over the keys still standing, each round a loop of arithmetic
// and loads without a data-dependent branch, so the cache misses of many
// keys overlap: the first probe of every key, then the second and third
// of the keys that passed it (about half of the absent ones, as half a
// filter's bits are set), then the rest of the keys that passed those.
// A round of one probe first touches about a third fewer cache lines
// than three probes of every key.
func (p *bloomPolicy) MayContainBatch(filters, keys [][]byte, maybe []bool) {
	filters, maybe = filters[:len(keys)], maybe[:len(keys)]
	var hbuf [64]uint64
	for len(keys) > 0 {
		hs := hbuf[:min(len(keys), len(hbuf))]
		for i, key := range keys[:len(hs)] {
			hs[i] = xxhash.Sum64(key)
		}
		p.mayContainHashed(filters[:len(hs)], eachOwn[:len(hs)], hs, maybe[:len(hs)])
		keys, filters, maybe = keys[len(hs):], filters[len(hs):], maybe[len(hs):]
	}
}

// KeyHash returns xxhash64(key), the hash the probes of every filter of
// the policy use (HashBatchPolicy).
func (p *bloomPolicy) KeyHash(key []byte) uint64 { return xxhash.Sum64(key) }

// keyHashes is KeyHash of each of keys, for KeyHashes.
func (p *bloomPolicy) keyHashes(keys [][]byte, hashes []uint64) {
	hashes = hashes[:len(keys)]
	for i, k := range keys {
		hashes[i] = xxhash.Sum64(k)
	}
}

// MayContainHashBatch is MayContainBatch for keys already hashed with
// KeyHash (HashBatchPolicy).
func (p *bloomPolicy) MayContainHashBatch(filters [][]byte, hashes []uint64, maybe []bool) {
	filters, maybe = filters[:len(hashes)], maybe[:len(hashes)]
	for len(hashes) > 0 {
		m := min(len(hashes), 64)
		p.mayContainHashed(filters[:m], eachOwn[:m], hashes[:m], maybe[:m])
		hashes, filters, maybe = hashes[m:], filters[m:], maybe[m:]
	}
}

// eachOwn gives each of up to 64 keys the filter of its own index.
var eachOwn = func() (w [64]uint8) {
	for i := range w {
		w[i] = uint8(i)
	}
	return w
}()

// mayContainHashBatchOf is MayContainHashBatchOf for up to 64 keys and
// up to 64 filters.
func (p *bloomPolicy) mayContainHashBatchOf(filters [][]byte, which []uint8, hashes []uint64, maybe []bool) {
	p.mayContainHashed(filters, which, hashes, maybe)
}

// mayContainHashed probes up to 64 keys of hashes hs in the rounds
// MayContainBatch describes, key i in filter fs[which[i]]. which and ms
// are as long as hs, and fs holds at most 64 filters.
func (p *bloomPolicy) mayContainHashed(fs [][]byte, which []uint8, hs []uint64, ms []bool) {
	// The bit arrays the first two rounds read, one a filter: a batch
	// rarely asks more than 8 filters, and an array of 8 costs less to
	// zero than one of 64 (a batch's call zeroes 192 bytes, not 1,536).
	if len(fs) <= 8 {
		var arrays [8][]byte
		p.probeRounds(fs, arrays[:len(fs)], which, hs, ms)
		return
	}
	var arrays [64][]byte
	p.probeRounds(fs, arrays[:len(fs)], which, hs, ms)
}

// allOnes stands in for a filter the first two rounds cannot read: every
// probe of it hits, so its keys are left to the last round.
var allOnes = [1]byte{0xff}

// probeRounds is mayContainHashed with arr, as long as fs, to hold the
// filters' bit arrays.
func (p *bloomPolicy) probeRounds(fs, arr [][]byte, which []uint8, hs []uint64, ms []bool) {
	which, ms = which[:len(hs)], ms[:len(hs)]
	if len(hs) > 64 {
		// The lists below hold 64 keys (every caller splits its batch).
		panic("filter: a probe round of more than 64 keys")
	}
	// Each filter's trailer is checked once (keys of one table share it):
	// a filter the rounds do not read (legacy, fewer than three probes,
	// unknown) gets allOnes.
	for t, f := range fs {
		if n := len(f) - 1; !p.legacy && n >= 1 && f[n] >= 3 && f[n] <= MaxProbes {
			arr[t] = f[:n]
		} else {
			arr[t] = allOnes[:]
		}
	}
	// Round one: the first probe, of every key; passed lists the keys
	// whose bit is set, without a branch on it.
	var passed [64]uint8
	np := 0
	if len(arr) == 1 {
		// One filter (a level-0 table, or a level's only one): no
		// filter to look up a key. An index of which past it still
		// panics (other), as with more filters, whatever the key's
		// first probe says.
		a := arr[0]
		nbits := uint64(len(a)) * 8
		var other uint8
		for i, h := range hs {
			p0, _ := bits.Mul64(h, nbits)
			passed[np&63] = uint8(i)
			np += int(a[p0>>3] >> (p0 & 7) & 1)
			other |= which[i]
		}
		_ = arr[other]
	} else {
		for i, h := range hs {
			a := arr[which[i]]
			p0, _ := bits.Mul64(h, uint64(len(a))*8)
			passed[np&63] = uint8(i)
			np += int(a[p0>>3] >> (p0 & 7) & 1)
		}
	}
	clear(ms)
	// Round two: the second and third probes of the keys that passed,
	// listing again those that pass both.
	n2 := 0
	for _, i := range passed[:np] {
		a, h := arr[which[i]], hs[i]
		nbits := uint64(len(a)) * 8
		inc := probeInc(h)
		x1 := h*probeMul + inc
		x2 := x1*probeMul + inc
		p1, _ := bits.Mul64(x1, nbits)
		p2, _ := bits.Mul64(x2, nbits)
		passed[n2&63] = i
		n2 += int(a[p1>>3] >> (p1 & 7) & (a[p2>>3] >> (p2 & 7)) & 1)
	}
	// The rest, key by key (their first lines are in cache now).
	for _, i := range passed[:n2] {
		ms[i] = bloomMayContain(fs[which[i]], hs[i], p.legacy)
	}
}

// bloomMayContain probes filter for a key whose xxhash64 is h.
func bloomMayContain(filter []byte, h uint64, legacy bool) bool {
	n := len(filter) - 1
	if n < 1 {
		return true // empty or no bit array: not a filter we can read
	}
	k := int(filter[n])
	if k < 1 || k > MaxProbes {
		return true // unknown encoding
	}
	array := filter[:n]
	nbits := uint64(n) * 8
	inc := probeInc(h)
	if legacy {
		for ; k > 0; k-- {
			pos, _ := bits.Mul64(h, nbits)
			if array[pos>>3]&(1<<(pos&7)) == 0 {
				return false
			}
			h += inc
		}
		return true
	}
	// Three chains of the sequence (see probeMul3), three probes a step.
	// Every pos is below nbits, so pos>>3 < len(array); the compiler cannot
	// prove it and keeps the bounds checks.
	x0 := h
	x1 := x0*probeMul + inc
	x2 := x1*probeMul + inc
	inc3 := inc * probeSum3
	for ; k >= 3; k -= 3 {
		p0, _ := bits.Mul64(x0, nbits)
		p1, _ := bits.Mul64(x1, nbits)
		p2, _ := bits.Mul64(x2, nbits)
		if array[p0>>3]>>(p0&7)&(array[p1>>3]>>(p1&7))&(array[p2>>3]>>(p2&7))&1 == 0 {
			return false
		}
		x0 = x0*probeMul3 + inc3
		x1 = x1*probeMul3 + inc3
		x2 = x2*probeMul3 + inc3
	}
	// One or two probes left: x0, then x1.
	if k > 0 {
		p0, _ := bits.Mul64(x0, nbits)
		if array[p0>>3]&(1<<(p0&7)) == 0 {
			return false
		}
		if k > 1 {
			p1, _ := bits.Mul64(x1, nbits)
			return array[p1>>3]&(1<<(p1&7)) != 0
		}
	}
	return true
}

// bloomBuilder collects 64-bit key hashes; the filter is sized and written in
// Finish, when the key count is known.
type bloomBuilder struct {
	bitsPerKey int
	k          int
	legacy     bool
	hashes     []uint64
}

// AddKey implements Builder.
func (b *bloomBuilder) AddKey(key []byte) {
	h := xxhash.Sum64(key)
	if n := len(b.hashes); n > 0 && b.hashes[n-1] == h {
		return // same key again (or a full 64-bit collision): same bits
	}
	b.hashes = append(b.hashes, h)
}

// Finish implements Builder.
func (b *bloomBuilder) Finish(dst []byte) []byte {
	nbits := max(len(b.hashes)*b.bitsPerKey, 64)
	nbits = (nbits + 63) &^ 63
	nbytes := nbits / 8

	start := len(dst)
	dst = appendZeros(dst, nbytes+1)
	array := dst[start : start+nbytes]
	for _, h := range b.hashes {
		bloomAdd(array, h, b.k, b.legacy)
	}
	dst[start+nbytes] = byte(b.k)
	b.hashes = b.hashes[:0]
	return dst
}

// bloomAdd sets the k bits of a key whose xxhash64 is h in array, by the
// probe sequence bloomMayContain tests.
func bloomAdd(array []byte, h uint64, k int, legacy bool) {
	nbits := uint64(len(array)) * 8
	inc := probeInc(h)
	for ; k > 0; k-- {
		pos, _ := bits.Mul64(h, nbits)
		array[pos>>3] |= 1 << (pos & 7)
		h = nextProbe(h, inc, legacy)
	}
}

// appendZeros appends n zero bytes to dst.
func appendZeros(dst []byte, n int) []byte {
	dst = slices.Grow(dst, n)
	start := len(dst)
	dst = dst[:start+n]
	clear(dst[start:])
	return dst
}
