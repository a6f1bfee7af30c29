package filter

import "math/bits"

// BlockedBloomPolicyName is the Name of the policies made by
// NewBlockedBloomPolicy.
//
// Encoding: L lines of 64 bytes (512 bits; bit b of a line in byte b/8 at
// position b%8), L >= 1, followed by one byte k, the number of probes. A key
// with h = XXH3-64(key, seed 0) lives in line (h·L)>>64 (fastrange, in
// 128-bit arithmetic) and sets k bits of it: with g = uint32(h), bit g>>23,
// then g *= 0x9e3779b9 (mod 2^32), k times. A reader takes L from the
// filter's length, which must be 64·L+1, and k from its last byte.
//
// Tables written before this encoding have the filter name
// "bloomkv.BlockedBloom64" (xxhash64 and a 32-bit fastrange); the policy
// does not read them, so their lookups go to the index without a filter.
const BlockedBloomPolicyName = "bloomkv.BlockedBloom3"

const (
	blockBits  = 512 // bits per line: one 64-byte cache line
	blockBytes = blockBits / 8

	// blockProbeMul steps the in-line probe sequence: an odd 32-bit constant
	// (2^32 divided by the golden ratio), so g runs through a long cycle and
	// its top 9 bits look random.
	blockProbeMul = 0x9e3779b9

	// blockProbeMul2 and blockProbeMul3 are blockProbeMul squared and
	// cubed, mod 2^32: they step the sequence two and three probes at once.
	blockProbeMul2 = blockProbeMul * blockProbeMul % (1 << 32)
	blockProbeMul3 = blockProbeMul2 * blockProbeMul % (1 << 32)
)

// NewBlockedBloomPolicy returns a cache-line-blocked Bloom filter policy with
// a budget of bitsPerKey bits per key (clamped to [MinBitsPerKey,
// MaxBitsPerKey]).
//
// All k probes of a key fall in one 64-byte line, picked by fastrange from
// the key's 64-bit hash (XXH3), so a lookup costs one cache miss (the
// standard Bloom filter of NewBloomPolicy pays up to k, about two for an
// absent key in a filter larger than the CPU caches); the probes inside the
// line come from repeated 32-bit multiplication of the lower half of the
// hash. Filters have max(n·bitsPerKey, 512) bits rounded up to whole lines,
// n counting the added keys except repeats of the key added just before.
//
// The price is accuracy: keys spread unevenly over lines (the count per line
// is about Poisson), and the overloaded lines give more false positives than
// the underloaded ones save. At 10 bits per key the rate is 0.96% instead of
// the 0.84% of NewBloomPolicy (see EstimateBlockedFPR).
//
// Probe count: k is not the card's floor(0.69·bitsPerKey). It is the k that
// minimises EstimateBlockedFPR at this budget, with near-ties (less than
// 0.5% relative) going to fewer probes, since each probe costs time and the
// difference cannot be measured. The uneven load is why the best k is
// lower than bitsPerKey·ln 2: in an overloaded line each extra probe sets
// more bits than it tests, so the rate rises sooner as k grows. At 10 bits
// per key k = 6 (0.69·10 rounded down is 6 as well), but 9 instead of 11
// at 16 bits and 11 instead of 13 at 20 bits; more probes there would make
// the filter both slower and less accurate.
//
// The returned Policy also implements BitsPerKeyer. A filter's lines are
// cache lines when its bytes start 64-byte aligned; otherwise a probe may
// touch two cache lines.
func NewBlockedBloomPolicy(bitsPerKey int) Policy {
	b := clampBitsPerKey(bitsPerKey)
	return &blockedBloomPolicy{bitsPerKey: b, k: blockedProbes(b), requested: bitsPerKey}
}

// blockedProbes picks the probe count of a blocked filter of bitsPerKey bits
// per key: the fewest probes whose rate is within 0.5% of the best.
func blockedProbes(bitsPerKey int) int {
	best := EstimateBlockedFPR(float64(bitsPerKey), blockedOptimalK(bitsPerKey))
	for k := 1; ; k++ {
		if EstimateBlockedFPR(float64(bitsPerKey), k) <= best*1.005 {
			return k
		}
	}
}

type blockedBloomPolicy struct {
	bitsPerKey int
	k          int
	requested  int // the argument before clamping, for Validate
}

func (p *blockedBloomPolicy) Name() string    { return BlockedBloomPolicyName }
func (p *blockedBloomPolicy) BitsPerKey() int { return p.bitsPerKey }
func (p *blockedBloomPolicy) NumProbes() int  { return p.k }
func (p *blockedBloomPolicy) validate() error { return checkRequested(p.requested) }

func (p *blockedBloomPolicy) NewBuilder() Builder {
	return &blockedBloomBuilder{bitsPerKey: p.bitsPerKey, k: p.k}
}

// MayContain implements Policy.
//
// The hash of a key of 9 to 16 bytes is computed here rather than by a call,
// and the probe is in this function too: on a filter larger than the CPU
// caches a lookup is one cache miss, and what decides its cost is how many
// lookups the CPU overlaps, which every call on the way cuts down.
func (p *blockedBloomPolicy) MayContain(filter, key []byte) bool {
	var h uint64
	if n := len(key); n > 8 && n <= 16 {
		h = hashMid(key, n)
	} else {
		h = keyHashOther(key)
	}
	n := len(filter) - 1
	if n < blockBytes || n%blockBytes != 0 {
		return true // not a whole number of lines: not a filter we can read
	}
	k := filter[n]
	if k-1 >= MaxProbes {
		return true // unknown encoding: k outside [1, MaxProbes]
	}
	hi, _ := bits.Mul64(h, uint64(n/blockBytes))
	off := hi * blockBytes
	line := (*[blockBytes]byte)(filter[off : off+blockBytes])
	// Test every probe and combine the results instead of returning at the
	// first clear bit: a loop without data-dependent branches is short and
	// lets the CPU start the next lookups' cache misses while this one's
	// line is on its way. A byte or'ed with "every bit but the probed one"
	// is all ones exactly when the probed bit is set. Three probes per step
	// (g·m, g·m², g·m³ from one g) keep the loop's own work small.
	g := uint32(h)
	all := byte(0xff)
	for ; k >= 3; k -= 3 {
		g1, g2 := g*blockProbeMul, g*blockProbeMul2
		all &= (line[g>>26] | allBut[g>>23&7]) & (line[g1>>26] | allBut[g1>>23&7]) &
			(line[g2>>26] | allBut[g2>>23&7])
		g *= blockProbeMul3
	}
	for ; k > 0; k-- {
		all &= line[g>>26] | allBut[g>>23&7]
		g *= blockProbeMul
	}
	return all == 0xff
}

// allBut[i] is a byte with every bit set except bit i.
var allBut = [8]byte{0xfe, 0xfd, 0xfb, 0xf7, 0xef, 0xdf, 0xbf, 0x7f}

// blockedAdd sets the probes of a key whose hash (keyHash) is h in array, a whole
// number of lines, by the sequence MayContain tests.
func blockedAdd(array []byte, h uint64, k int) {
	hi, _ := bits.Mul64(h, uint64(len(array)/blockBytes))
	off := hi * blockBytes
	line := (*[blockBytes]byte)(array[off : off+blockBytes])
	g := uint32(h)
	for ; k > 0; k-- {
		bit := g >> 23
		line[bit>>3] |= 1 << (bit & 7)
		g *= blockProbeMul
	}
}

// blockedBloomBuilder collects 64-bit key hashes; the filter is sized and
// written in Finish.
type blockedBloomBuilder struct {
	bitsPerKey int
	k          int
	hashes     []uint64
}

// AddKey implements Builder.
func (b *blockedBloomBuilder) AddKey(key []byte) {
	h := keyHash(key)
	if n := len(b.hashes); n > 0 && b.hashes[n-1] == h {
		return // same key again: same bits
	}
	b.hashes = append(b.hashes, h)
}

// Finish implements Builder.
func (b *blockedBloomBuilder) Finish(dst []byte) []byte {
	nbits := uint64(max(len(b.hashes)*b.bitsPerKey, blockBits))
	nlines := (nbits + blockBits - 1) / blockBits
	nbytes := int(nlines * blockBytes)

	start := len(dst)
	dst = appendZeros(dst, nbytes+1)
	array := dst[start : start+nbytes]
	for _, h := range b.hashes {
		blockedAdd(array, h, b.k)
	}
	dst[start+nbytes] = byte(b.k)
	b.hashes = b.hashes[:0]
	return dst
}
