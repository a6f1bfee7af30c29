package filter

import "math/bits"

// The probe sequence of bloomkv's standard Bloom filters (the table policy
// of NewBloomPolicy, BloomFilter, CountingBloomFilter and the stages of
// ScalableBloomFilter). A key whose xxhash64 is h probes the positions
// fastrange(x_i, m) = (x_i·m) >> 64 for i in [0, k), where x_0 = h and
// x_{i+1} = x_i·probeMul + (rotl64(h, 32) | 1) mod 2^64: a linear
// congruential sequence whose high bits, which fastrange uses, are close
// to independent from probe to probe.
//
// The sequence before it, double hashing x_i = h + i·(rotl64(h,32)|1),
// steps by the same fraction of the range at every probe; for the keys
// whose step is near a fraction with a small denominator (a share of about
// 1.2·k/m of them) the probes cycle over a few positions. Small filters
// with many probes then missed their rate by orders of magnitude (10 keys,
// m = 287, k = 20: 5.4e-4 against 1.3e-6, averaged over 2,000 filters);
// the legacy encodings keep it, so filters written with it still read back
// the same.
//
// Lookups walk the sequence as three interleaved chains, x_i, x_{i+1} and
// x_{i+2} each stepping three places at once, x_{i+3} = x_i·probeMul3 +
// c·probeSum3 (mod 2^64), and test the three bits of a step together: the
// same positions, but three loads in flight instead of one and one
// branch per three probes (the multiply of a single chain would otherwise
// sit between every two loads).
const (
	probeMul  = 0xd1342543de82ef95 // Steele and Vigna's 64-bit LCG multiplier
	probeMul2 = probeMul * probeMul % (1 << 64)
	probeMul3 = probeMul2 * probeMul % (1 << 64)
	// probeSum3 = probeMul² + probeMul + 1, the increment of three steps
	// per unit of c.
	probeSum3 = (probeMul2 + probeMul + 1) % (1 << 64)
)

// probeInc is the increment of the probe sequence of a key hashed to h.
func probeInc(h uint64) uint64 { return bits.RotateLeft64(h, 32) | 1 }

// nextProbe advances a probe state: the LCG step, or the double-hashing
// step of the legacy encodings.
func nextProbe(x, inc uint64, legacy bool) uint64 {
	if legacy {
		return x + inc
	}
	return x*probeMul + inc
}
