package filter

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// MaxFilterBits is the largest bit array (or counter array, for
// CountingBloomFilter) a standalone Bloom filter uses: 2^36 bits, 8 GiB.
// Larger requests are lowered to it, which keeps every size computation far
// from overflow; the filter is then fuller than asked for, never wrong.
const MaxFilterBits = 1 << 36

// maxFilterProbes is the largest probe count of a standalone Bloom filter:
// MinFPP needs 40.
const maxFilterProbes = 64

// BloomFilter is a standalone Bloom filter over byte-string keys, sized like
// Guava's BloomFilter.create: for n expected insertions and a false-positive
// probability p it has m = floor(-n·ln p / (ln 2)²) bits (OptimalBits) and
// k = max(1, round(m/n · ln 2)) probes, so 9,585,058 bits and 7 probes for a
// million keys at 1%. Keys are hashed with 64-bit xxhash and probed along a
// 64-bit linear congruential sequence with fastrange reduction (see
// BloomPolicyName), so the measured rate stays at (1-e^(-kn/m))^k at any
// size, from one key and 64 bits up. (Filters encoded by version 1, before
// November 2026, keep their double-hashing probes when decoded; those
// cycle on small filters with many probes.)
//
// The zero value is not usable; create filters with NewBloomFilter or
// UnmarshalBinary. A BloomFilter is not safe for concurrent use when one of
// the goroutines adds; concurrent MayContain calls are safe.
type BloomFilter struct {
	words []uint64 // ceil(m/64) words; bits past m stay zero
	m     uint64   // number of bits, the range of the probes
	k     int      // probes per key
	ones  uint64   // number of set bits
	// legacy: version 1's double-hashing probes (a decoded old filter).
	legacy bool
}

// NewBloomFilter returns an empty Bloom filter for expectedInsertions keys
// at false-positive probability fpp, sized as described on BloomFilter.
//
// It never fails: expectedInsertions 0 counts as 1, fpp is clamped to
// [MinFPP, MaxFPP] (NaN becomes MaxFPP), and the bit count to [64,
// MaxFilterBits]. CheckSizing reports arguments that would be adjusted.
func NewBloomFilter(expectedInsertions uint64, fpp float64) *BloomFilter {
	m, k := bloomSizing(expectedInsertions, fpp)
	return &BloomFilter{words: make([]uint64, (m+63)/64), m: m, k: k}
}

// bloomSizing returns Guava's bit and probe counts for n keys at rate p,
// after clamping.
func bloomSizing(n uint64, p float64) (m uint64, k int) {
	n = max(n, 1)
	m = min(max(OptimalBits(n, p), 64), MaxFilterBits)
	kf := math.Round(float64(m) / float64(n) * math.Ln2)
	return m, int(min(max(kf, 1), maxFilterProbes))
}

// Add adds key to the filter. It reports whether the filter changed: false
// means key was already added, or is a false positive (Guava's put).
func (b *BloomFilter) Add(key []byte) bool { return b.addHash(xxhash.Sum64(key)) }

// addHash adds the key whose xxhash64 is h.
func (b *BloomFilter) addHash(h uint64) bool {
	inc := probeInc(h)
	set := uint64(0)
	for k := b.k; k > 0; k-- {
		pos, _ := bits.Mul64(h, b.m)
		w, bit := &b.words[pos>>6], uint64(1)<<(pos&63)
		set += (^*w & bit) >> (pos & 63) // 1 when the bit was clear
		*w |= bit
		h = nextProbe(h, inc, b.legacy)
	}
	b.ones += set
	return set != 0
}

// MayContain reports whether key may have been added. It is true for every
// key that was added, and false for other keys except for a share of about
// ExpectedFPP. It does not allocate.
func (b *BloomFilter) MayContain(key []byte) bool { return b.containsHash(xxhash.Sum64(key)) }

// containsHash is MayContain for the key whose xxhash64 is h.
func (b *BloomFilter) containsHash(h uint64) bool {
	k := b.k
	inc := probeInc(h)
	if b.legacy {
		for ; k > 0; k-- {
			pos, _ := bits.Mul64(h, b.m)
			if b.words[pos>>6]&(1<<(pos&63)) == 0 {
				return false
			}
			h += inc
		}
		return true
	}
	// Three chains of the sequence, as in bloomMayContain.
	x0 := h
	x1 := x0*probeMul + inc
	x2 := x1*probeMul + inc
	inc3 := inc * probeSum3
	for ; k >= 3; k -= 3 {
		p0, _ := bits.Mul64(x0, b.m)
		p1, _ := bits.Mul64(x1, b.m)
		p2, _ := bits.Mul64(x2, b.m)
		if b.words[p0>>6]>>(p0&63)&(b.words[p1>>6]>>(p1&63))&(b.words[p2>>6]>>(p2&63))&1 == 0 {
			return false
		}
		x0 = x0*probeMul3 + inc3
		x1 = x1*probeMul3 + inc3
		x2 = x2*probeMul3 + inc3
	}
	if k > 0 {
		p0, _ := bits.Mul64(x0, b.m)
		if b.words[p0>>6]&(1<<(p0&63)) == 0 {
			return false
		}
		if k > 1 {
			p1, _ := bits.Mul64(x1, b.m)
			return b.words[p1>>6]&(1<<(p1&63)) != 0
		}
	}
	return true
}

// K returns the number of probes (hash functions) per key.
func (b *BloomFilter) K() int { return b.k }

// Bits returns the size of the bit array, m.
func (b *BloomFilter) Bits() uint64 { return b.m }

// SizeInBytes returns the memory the bit array takes.
func (b *BloomFilter) SizeInBytes() uint64 { return uint64(len(b.words)) * 8 }

// ApproximateCount estimates the number of distinct keys added from the
// share of bits set, -m/k · ln(1 - ones/m) (Swamidass and Baldi), rounded.
// It is exact for few keys and within a few percent up to the expected
// insertions; a filter with every bit set gives math.MaxUint64.
func (b *BloomFilter) ApproximateCount() uint64 {
	return approxCount(b.ones, b.m, b.k)
}

func approxCount(ones, m uint64, k int) uint64 {
	if ones >= m {
		return math.MaxUint64
	}
	est := -math.Log1p(-float64(ones)/float64(m)) * float64(m) / float64(k)
	if est >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(math.Round(est))
}

// ExpectedFPP returns the probability that MayContain is true for a key that
// was not added, from the share of bits now set: (ones/m)^k. It grows as keys
// are added, passing the fpp the filter was made for at about the expected
// number of insertions.
func (b *BloomFilter) ExpectedFPP() float64 {
	return math.Pow(float64(b.ones)/float64(b.m), float64(b.k))
}

// Union adds every key of other to b, so that b may contain any key either
// filter may contain. The filters must have the same number of bits, of
// probes and the same probe sequence (as filters made by NewBloomFilter
// with the same arguments do; a filter decoded from version 1 has the old
// one); otherwise Union returns an error wrapping ErrIncompatible and
// leaves b unchanged. other is not modified.
func (b *BloomFilter) Union(other *BloomFilter) error {
	if other == nil || b.m != other.m || b.k != other.k || b.legacy != other.legacy {
		return errorf(ErrIncompatible, "bloom filter union needs equal sizes, probe counts and encoding versions")
	}
	ones := uint64(0)
	for i, w := range other.words {
		b.words[i] |= w
		ones += uint64(bits.OnesCount64(b.words[i]))
	}
	b.ones = ones
	return nil
}

// Encoding of a BloomFilter (version 2), all integers little-endian:
//
//	tag     byte 'B'
//	version byte 2 (1: the same layout with the legacy double-hashing probes)
//	k       byte, 1..64
//	m       uint64, 64..MaxFilterBits
//	words   ceil(m/64) uint64, the bit array; bits past m are zero
const (
	bloomFilterTag     = 'B'
	bloomFilterVersion = 2
	bloomFilterLegacy  = 1
	bloomFilterHeader  = 3 + 8
)

// MarshalBinary encodes the filter (see AppendBinary).
func (b *BloomFilter) MarshalBinary() ([]byte, error) {
	return b.AppendBinary(make([]byte, 0, bloomFilterHeader+8*len(b.words)))
}

// AppendBinary appends the encoding of the filter to dst: a tag byte 'B',
// the version (2; 1 for a filter decoded from version 1, which keeps its
// probe sequence), k, m as a little-endian uint64, then the ceil(m/64)
// words of the bit array, little-endian.
func (b *BloomFilter) AppendBinary(dst []byte) ([]byte, error) {
	version := byte(bloomFilterVersion)
	if b.legacy {
		version = bloomFilterLegacy
	}
	dst = append(dst, bloomFilterTag, version, byte(b.k))
	dst = binary.LittleEndian.AppendUint64(dst, b.m)
	for _, w := range b.words {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return dst, nil
}

// UnmarshalBinary sets b to the filter data encodes. It checks the tag, the
// version, k, m, and that the length is exactly what m needs before it
// allocates anything, and that the bits past m are zero; any failure is an
// error wrapping ErrInvalidEncoding, and b is left unchanged.
func (b *BloomFilter) UnmarshalBinary(data []byte) error {
	d, n, err := decodeBloomFilter(data)
	if err != nil {
		return err
	}
	if n != len(data) {
		return errorf(ErrInvalidEncoding, "bloom filter: %d trailing bytes", len(data)-n)
	}
	*b = *d
	return nil
}

// decodeBloomFilter decodes the filter at the start of data and returns it
// with the number of bytes it took.
func decodeBloomFilter(data []byte) (*BloomFilter, int, error) {
	if len(data) < bloomFilterHeader {
		return nil, 0, errorf(ErrInvalidEncoding, "bloom filter: %d bytes is too short", len(data))
	}
	if data[0] != bloomFilterTag || (data[1] != bloomFilterVersion && data[1] != bloomFilterLegacy) {
		return nil, 0, errorf(ErrInvalidEncoding, "bloom filter: tag %#x version %d", data[0], data[1])
	}
	k := int(data[2])
	m := binary.LittleEndian.Uint64(data[3:])
	if k < 1 || k > maxFilterProbes || m < 64 || m > MaxFilterBits {
		return nil, 0, errorf(ErrInvalidEncoding, "bloom filter: k=%d m=%d out of range", k, m)
	}
	nwords := (m + 63) / 64
	body := data[bloomFilterHeader:]
	if uint64(len(body))/8 < nwords {
		return nil, 0, errorf(ErrInvalidEncoding, "bloom filter: %d bytes for %d bits", len(body), m)
	}
	words := make([]uint64, nwords)
	ones := uint64(0)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(body[8*i:])
		ones += uint64(bits.OnesCount64(words[i]))
	}
	if tail := m % 64; tail != 0 && words[nwords-1]>>tail != 0 {
		return nil, 0, errorf(ErrInvalidEncoding, "bloom filter: bits set past m")
	}
	return &BloomFilter{words: words, m: m, k: k, ones: ones, legacy: data[1] == bloomFilterLegacy}, bloomFilterHeader + 8*int(nwords), nil
}
