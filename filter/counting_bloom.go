package filter

import (
	"encoding/binary"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// counterMax is the value at which a 4-bit counter saturates.
const counterMax = 15

// CountingBloomFilter is a Bloom filter whose cells are 4-bit counters
// instead of bits (Fan, Cao, Almeida and Broder, 2000), so keys can be
// removed. It is sized and probed like BloomFilter (m counters, k probes)
// and takes four times its memory.
//
// Counters saturate: a counter that reaches 15 stays at 15 for good, neither
// wrapping on Add nor counting down on Remove, because once it has
// saturated the number of keys it stands for is unknown. Every other
// counter holds exactly the number of probes of the present keys that hit
// it. So removing a key that was added never causes a false negative for
// another key. Removing a key that was not added (a false positive) can: it
// takes away counts that belong to other keys. Remove only keys you added.
//
// The zero value is not usable; create filters with NewCountingBloomFilter
// or UnmarshalBinary. Not safe for concurrent use when one goroutine
// modifies it.
type CountingBloomFilter struct {
	cells []uint64 // 16 counters per word, counter i in bits 4*(i%16) of word i/16
	m     uint64   // number of counters
	k     int
	// legacy: version 1's double-hashing probes (a decoded old filter).
	legacy bool
}

// NewCountingBloomFilter returns an empty counting Bloom filter for
// expectedInsertions keys at false-positive probability fpp, with the m and
// k of NewBloomFilter and its clamping of the arguments.
func NewCountingBloomFilter(expectedInsertions uint64, fpp float64) *CountingBloomFilter {
	m, k := bloomSizing(expectedInsertions, fpp)
	return &CountingBloomFilter{cells: make([]uint64, (m+15)/16), m: m, k: k}
}

func (c *CountingBloomFilter) get(pos uint64) uint64 {
	return c.cells[pos>>4] >> (4 * (pos & 15)) & 0xf
}

// Add adds key, counting each of its k counters up by one unless saturated.
func (c *CountingBloomFilter) Add(key []byte) {
	h := xxhash.Sum64(key)
	inc := probeInc(h)
	for k := c.k; k > 0; k-- {
		pos, _ := bits.Mul64(h, c.m)
		if c.get(pos) < counterMax {
			c.cells[pos>>4] += 1 << (4 * (pos & 15))
		}
		h = nextProbe(h, inc, c.legacy)
	}
}

// Remove removes key, counting each of its counters down by one unless
// saturated. It reports whether it did: a key that MayContain rules out was
// certainly never added, and removing it is refused (false) since it would
// take counts from other keys. Only remove keys that were added.
func (c *CountingBloomFilter) Remove(key []byte) bool {
	if !c.MayContain(key) {
		return false
	}
	h := xxhash.Sum64(key)
	inc := probeInc(h)
	for k := c.k; k > 0; k-- {
		pos, _ := bits.Mul64(h, c.m)
		if v := c.get(pos); v != counterMax && v != 0 {
			c.cells[pos>>4] -= 1 << (4 * (pos & 15))
		}
		h = nextProbe(h, inc, c.legacy)
	}
	return true
}

// MayContain reports whether key may be in the filter: true for every key
// added and not removed since (and for a share of other keys, about the
// fpp the filter was made for when it holds the expected number of keys).
func (c *CountingBloomFilter) MayContain(key []byte) bool {
	h := xxhash.Sum64(key)
	inc := probeInc(h)
	for k := c.k; k > 0; k-- {
		pos, _ := bits.Mul64(h, c.m)
		if c.get(pos) == 0 {
			return false
		}
		h = nextProbe(h, inc, c.legacy)
	}
	return true
}

// K returns the number of probes (hash functions) per key.
func (c *CountingBloomFilter) K() int { return c.k }

// Counters returns the number of counters, m.
func (c *CountingBloomFilter) Counters() uint64 { return c.m }

// SizeInBytes returns the memory the counters take.
func (c *CountingBloomFilter) SizeInBytes() uint64 { return uint64(len(c.cells)) * 8 }

// Saturated returns the number of counters stuck at their maximum, 15. A
// filter far below its expected insertions has none; many mean it was
// overfilled.
func (c *CountingBloomFilter) Saturated() uint64 {
	n := uint64(0)
	for _, w := range c.cells {
		// A nibble is 15 when all four of its bits are set.
		all := w & (w >> 1) & (w >> 2) & (w >> 3) & 0x1111111111111111
		n += uint64(bits.OnesCount64(all))
	}
	return n
}

// ApproximateCount estimates the number of distinct keys in the filter from
// the share of non-zero counters, as BloomFilter.ApproximateCount does.
func (c *CountingBloomFilter) ApproximateCount() uint64 {
	nonzero := uint64(0)
	for _, w := range c.cells {
		nz := (w | w>>1 | w>>2 | w>>3) & 0x1111111111111111
		nonzero += uint64(bits.OnesCount64(nz))
	}
	return approxCount(nonzero, c.m, c.k)
}

// Encoding of a CountingBloomFilter (version 2), integers little-endian:
//
//	tag     byte 'C'
//	version byte 2 (1: the same layout with the legacy double-hashing
//	        probes, see BloomFilter)
//	k       byte, 1..64
//	m       uint64, 64..MaxFilterBits
//	cells   ceil(m/16) uint64, 16 counters each, counter i in bits
//	        4*(i%16) of word i/16; counters past m are zero
const (
	countingFilterTag     = 'C'
	countingFilterVersion = 2
	countingFilterLegacy  = 1
	countingFilterHeader  = 3 + 8
)

// MarshalBinary encodes the filter (see AppendBinary).
func (c *CountingBloomFilter) MarshalBinary() ([]byte, error) {
	return c.AppendBinary(make([]byte, 0, countingFilterHeader+8*len(c.cells)))
}

// AppendBinary appends the encoding of the filter to dst: a tag byte 'C',
// the version (2; 1 for a filter decoded from version 1), k, m as a
// little-endian uint64, then the counters, 16 to a little-endian uint64.
func (c *CountingBloomFilter) AppendBinary(dst []byte) ([]byte, error) {
	version := byte(countingFilterVersion)
	if c.legacy {
		version = countingFilterLegacy
	}
	dst = append(dst, countingFilterTag, version, byte(c.k))
	dst = binary.LittleEndian.AppendUint64(dst, c.m)
	for _, w := range c.cells {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return dst, nil
}

// UnmarshalBinary sets c to the filter data encodes. It checks the tag,
// version, k, m and the exact length before it allocates, and that the
// counters past m are zero; any failure is an error wrapping
// ErrInvalidEncoding, and c is left unchanged.
func (c *CountingBloomFilter) UnmarshalBinary(data []byte) error {
	if len(data) < countingFilterHeader {
		return errorf(ErrInvalidEncoding, "counting bloom filter: %d bytes is too short", len(data))
	}
	if data[0] != countingFilterTag || (data[1] != countingFilterVersion && data[1] != countingFilterLegacy) {
		return errorf(ErrInvalidEncoding, "counting bloom filter: tag %#x version %d", data[0], data[1])
	}
	k := int(data[2])
	m := binary.LittleEndian.Uint64(data[3:])
	if k < 1 || k > maxFilterProbes || m < 64 || m > MaxFilterBits {
		return errorf(ErrInvalidEncoding, "counting bloom filter: k=%d m=%d out of range", k, m)
	}
	nwords := (m + 15) / 16
	body := data[countingFilterHeader:]
	if uint64(len(body))%8 != 0 || uint64(len(body))/8 != nwords {
		return errorf(ErrInvalidEncoding, "counting bloom filter: %d bytes for %d counters", len(body), m)
	}
	cells := make([]uint64, nwords)
	for i := range cells {
		cells[i] = binary.LittleEndian.Uint64(body[8*i:])
	}
	if tail := m % 16; tail != 0 && cells[nwords-1]>>(4*tail) != 0 {
		return errorf(ErrInvalidEncoding, "counting bloom filter: counters set past m")
	}
	*c = CountingBloomFilter{cells: cells, m: m, k: k, legacy: data[1] == countingFilterLegacy}
	return nil
}
