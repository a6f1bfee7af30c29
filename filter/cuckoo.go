package filter

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

const (
	cuckooBucketSize = 4   // slots per bucket
	cuckooMaxKicks   = 500 // relocations one Add tries before using the victim slot
	// MaxCuckooBuckets is the largest number of buckets a CuckooFilter has:
	// 2^32 (16 GiB of 8-bit fingerprints). Larger capacities are lowered to
	// it.
	MaxCuckooBuckets = 1 << 32

	// DefaultCuckooFingerprintBits is the fingerprint size of NewCuckooFilter.
	DefaultCuckooFingerprintBits = 16
	// MinCuckooFingerprintBits and MaxCuckooFingerprintBits bound the
	// fingerprint sizes of NewCuckooFilterWithBits.
	MinCuckooFingerprintBits = 4
	MaxCuckooFingerprintBits = 32
)

// CuckooFilter is a cuckoo filter (Fan, Andersen, Kaminsky and Mitzenmacher,
// "Cuckoo Filter: Practically Better Than Bloom", CoNEXT 2014): a table of
// buckets of four f-bit fingerprints in which each key may sit in one of two
// buckets, so keys can be deleted and lookups read at most two buckets.
//
// A key with xxhash64 h has the fingerprint 1 + ((h>>32)·(2^f-1))>>32
// (never 0, which marks an empty slot) and the buckets i1 = h mod B (B, the
// bucket count, is a power of two) and i2 = i1 xor hash(fingerprint) mod B:
// partial-key cuckoo hashing, in which either bucket is found from the other
// and the fingerprint alone, so a fingerprint can be moved without its key.
// When both buckets are full, Add moves a random fingerprint of one of them
// to its other bucket, and so on, up to 500 times; a fingerprint still
// homeless after that goes to a one-entry victim slot, as in the reference
// implementation, and the filter reports itself full (Add returns false)
// until a Delete makes room.
//
// With f-bit fingerprints at load α (the share of slots in use) the
// false-positive rate is about 1-(1-1/(2^f-1))^(8α) ≈ 8α/2^f: 0.012% for 16
// bits and 3.0% for 8 bits at 95% load. Tables fill to about 95% before Add
// fails.
//
// Add does not check for an existing copy: adding a key twice stores two
// fingerprints, and Delete removes one. A key can be stored at most eight
// times, the slots of its two buckets (four when its two buckets are one,
// as for a share 1/B of the fingerprints): once they all hold its
// fingerprint (its own copies, or keys sharing its fingerprint and
// buckets), Add of it returns false (Insert, an error wrapping
// ErrTooManyCopies) and changes nothing, and the filter is not full for
// other keys. A further copy could only go to the victim slot, after which
// every Add would fail. Deleting a key that was never added may remove the
// fingerprint of another key that shares it, a false negative: only delete
// keys you added.
//
// The zero value is not usable; create filters with NewCuckooFilter,
// NewCuckooFilterWithBits or UnmarshalBinary. Not safe for concurrent use
// when one goroutine modifies it.
type CuckooFilter struct {
	fpBits  int    // f
	fpRange uint64 // 2^f - 1, the number of fingerprint values
	width   int    // bytes per slot: 1, 2 or 4
	mask    uint64 // buckets - 1
	s8      cuckooSlots[uint8]
	s16     cuckooSlots[uint16]
	s32     cuckooSlots[uint32] // exactly one of s8, s16, s32 is used
	count   uint64
	victim  cuckooVictim
	rng     uint64 // xorshift state for choosing what to relocate
}

type cuckooVictim struct {
	used   bool
	bucket uint64
	fp     uint32
}

// NewCuckooFilter returns an empty cuckoo filter with 16-bit fingerprints
// and room for capacity keys (see NewCuckooFilterWithBits).
func NewCuckooFilter(capacity uint64) *CuckooFilter {
	return NewCuckooFilterWithBits(capacity, DefaultCuckooFingerprintBits)
}

// NewCuckooFilterWithBits returns an empty cuckoo filter with
// fingerprintBits-bit fingerprints and room for capacity keys.
//
// The table has B buckets of four slots, B the power of two at or above
// capacity/4, doubled when capacity would fill it past 96% (as the reference
// implementation sizes it); Capacity returns the slots, 4·B. Slots take one,
// two or four bytes (fingerprints of up to 8, 16 or 32 bits).
//
// It never fails: a capacity of 0 counts as 1 and B is at most
// MaxCuckooBuckets; fingerprintBits is clamped to
// [MinCuckooFingerprintBits, MaxCuckooFingerprintBits].
func NewCuckooFilterWithBits(capacity uint64, fingerprintBits int) *CuckooFilter {
	capacity = max(capacity, 1)
	need := capacity / cuckooBucketSize // buckets needed, rounded up
	if capacity%cuckooBucketSize != 0 {
		need++
	}
	nb := uint64(1) << min(bits.Len64(need-1), 32)
	if nb < MaxCuckooBuckets && float64(capacity)/float64(nb*cuckooBucketSize) > 0.96 {
		nb <<= 1
	}
	c := newCuckoo(nb, min(max(fingerprintBits, MinCuckooFingerprintBits), MaxCuckooFingerprintBits))
	switch c.width {
	case 1:
		c.s8 = make(cuckooSlots[uint8], nb*cuckooBucketSize)
	case 2:
		c.s16 = make(cuckooSlots[uint16], nb*cuckooBucketSize)
	default:
		c.s32 = make(cuckooSlots[uint32], nb*cuckooBucketSize)
	}
	return c
}

// newCuckoo returns a filter of nb buckets (a power of two) and f-bit
// fingerprints, without its table.
func newCuckoo(nb uint64, f int) *CuckooFilter {
	return &CuckooFilter{
		fpBits:  f,
		fpRange: 1<<f - 1,
		width:   slotWidth(f),
		mask:    nb - 1,
		rng:     0x9e3779b97f4a7c15,
	}
}

// hash returns the first bucket and the fingerprint of a key with xxhash64 h.
func (c *CuckooFilter) hash(h uint64) (uint64, uint32) {
	return h & c.mask, uint32(((h>>32)*c.fpRange)>>32) + 1
}

// alt returns the other bucket of fingerprint fp in bucket i.
func (c *CuckooFilter) alt(i uint64, fp uint32) uint64 {
	return (i ^ (uint64(fp)*0xc2b2ae3d27d4eb4f)>>32) & c.mask
}

func (c *CuckooFilter) has(i uint64, fp uint32) bool {
	switch c.width {
	case 1:
		return c.s8.has(i, uint8(fp))
	case 2:
		return c.s16.has(i, uint16(fp))
	}
	return c.s32.has(i, fp)
}

func (c *CuckooFilter) put(i uint64, fp uint32) bool {
	switch c.width {
	case 1:
		return c.s8.put(i, uint8(fp))
	case 2:
		return c.s16.put(i, uint16(fp))
	}
	return c.s32.put(i, fp)
}

func (c *CuckooFilter) remove(i uint64, fp uint32) bool {
	switch c.width {
	case 1:
		return c.s8.remove(i, uint8(fp))
	case 2:
		return c.s16.remove(i, uint16(fp))
	}
	return c.s32.remove(i, fp)
}

func (c *CuckooFilter) swap(i, slot uint64, fp uint32) uint32 {
	switch c.width {
	case 1:
		return uint32(c.s8.swap(i, slot, uint8(fp)))
	case 2:
		return uint32(c.s16.swap(i, slot, uint16(fp)))
	}
	return c.s32.swap(i, slot, fp)
}

// Add adds key and reports whether it did; Insert tells why it did not.
// It returns false, and changes nothing, when the filter is full (a
// previous Add left a fingerprint in the victim slot) or when the slots of
// key's two buckets all hold its fingerprint already (see CuckooFilter).
// It returns true when key was stored, possibly after relocating other
// fingerprints; the Add that fills the victim slot also returns true, since
// its key is stored (every key stays findable), and the next Add returns
// false.
func (c *CuckooFilter) Add(key []byte) bool { return c.Insert(key) == nil }

// Insert is Add with the reason for a refusal: nil when key was stored, an
// error wrapping ErrFull when the victim slot is in use, and one wrapping
// ErrTooManyCopies when key's two buckets hold nothing but its fingerprint.
// A refused Insert changes nothing.
func (c *CuckooFilter) Insert(key []byte) error {
	if c.victim.used {
		return errCuckooFull
	}
	i, fp := c.hash(xxhash.Sum64(key))
	n, slots := c.copies(i, fp), cuckooBucketSize
	if i2 := c.alt(i, fp); i2 != i {
		n, slots = n+c.copies(i2, fp), 2*cuckooBucketSize
	}
	if n >= slots {
		return errCuckooCopies
	}
	c.insert(i, fp)
	return nil
}

// The errors of Insert, made once so that a refused Add does not allocate.
var (
	errCuckooFull   = fmt.Errorf("%w: cuckoo filter: a fingerprint waits in the victim slot", ErrFull)
	errCuckooCopies = fmt.Errorf("%w: cuckoo filter: the key's buckets hold its fingerprint in every slot", ErrTooManyCopies)
)

// copies counts the slots of bucket i that hold fp.
func (c *CuckooFilter) copies(i uint64, fp uint32) int {
	switch c.width {
	case 1:
		return c.s8.copies(i, uint8(fp))
	case 2:
		return c.s16.copies(i, uint16(fp))
	}
	return c.s32.copies(i, fp)
}

// insert stores fp in bucket i or its other bucket, relocating fingerprints
// as needed and, when that fails, leaving the last one homeless in the
// victim slot. The victim slot must be free.
func (c *CuckooFilter) insert(i uint64, fp uint32) {
	c.count++
	if c.put(i, fp) {
		return
	}
	i2 := c.alt(i, fp)
	if c.put(i2, fp) {
		return
	}
	r := c.next()
	if r&(1<<62) != 0 {
		i = i2
	}
	for n := 0; n < cuckooMaxKicks; n++ {
		fp = c.swap(i, r&(cuckooBucketSize-1), fp)
		i = c.alt(i, fp)
		if c.put(i, fp) {
			return
		}
		r = c.next()
	}
	c.victim = cuckooVictim{used: true, bucket: i, fp: fp}
}

// next steps the xorshift generator that picks what to relocate.
func (c *CuckooFilter) next() uint64 {
	x := c.rng
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	c.rng = x
	return x
}

// Contains reports whether key may be in the filter: true for every key
// added and not deleted since, and for a small share of other keys (see
// CuckooFilter). It reads at most two buckets and does not allocate.
func (c *CuckooFilter) Contains(key []byte) bool {
	i1, fp := c.hash(xxhash.Sum64(key))
	if c.has(i1, fp) {
		return true
	}
	i2 := c.alt(i1, fp)
	return c.has(i2, fp) || c.victim.used && c.victim.fp == fp && (c.victim.bucket == i1 || c.victim.bucket == i2)
}

// Delete removes one copy of key's fingerprint and reports whether it found
// one. After a successful Delete the fingerprint in the victim slot, if any,
// is moved into the table when it fits, so the filter can take new keys
// again. Only delete keys that were added (see CuckooFilter).
func (c *CuckooFilter) Delete(key []byte) bool {
	i1, fp := c.hash(xxhash.Sum64(key))
	i2 := c.alt(i1, fp)
	switch {
	case c.remove(i1, fp) || c.remove(i2, fp):
		c.count--
		if c.victim.used {
			v := c.victim
			c.victim = cuckooVictim{}
			c.count--
			c.insert(v.bucket, v.fp)
		}
		return true
	case c.victim.used && c.victim.fp == fp && (c.victim.bucket == i1 || c.victim.bucket == i2):
		c.victim = cuckooVictim{}
		c.count--
		return true
	}
	return false
}

// Count returns the number of fingerprints in the filter: the keys added
// (copies counted) and not deleted.
func (c *CuckooFilter) Count() uint64 { return c.count }

// Capacity returns the number of slots, four per bucket.
func (c *CuckooFilter) Capacity() uint64 { return (c.mask + 1) * cuckooBucketSize }

// LoadFactor returns Count divided by Capacity.
func (c *CuckooFilter) LoadFactor() float64 { return float64(c.count) / float64(c.Capacity()) }

// FingerprintBits returns the fingerprint size f.
func (c *CuckooFilter) FingerprintBits() int { return c.fpBits }

// SizeInBytes returns the memory the table takes.
func (c *CuckooFilter) SizeInBytes() uint64 { return c.Capacity() * uint64(c.width) }

// Encoding of a CuckooFilter (version 1), integers little-endian:
//
//	tag        byte 'K'
//	version    byte 1
//	fpBits     byte, 4..32
//	logBuckets byte, 0..32
//	victim     byte, 0 (none) or 1
//	vBucket    uint64, the victim's bucket (0 when none)
//	vFP        uint32, the victim's fingerprint (0 when none)
//	slots      4·2^logBuckets slots of 1, 2 or 4 bytes (f up to 8, 16, 32),
//	           bucket by bucket; 0 is an empty slot
const (
	cuckooTag     = 'K'
	cuckooVersion = 1
	cuckooHeader  = 5 + 8 + 4
)

// MarshalBinary encodes the filter (version 1, see AppendBinary).
func (c *CuckooFilter) MarshalBinary() ([]byte, error) {
	return c.AppendBinary(make([]byte, 0, cuckooHeader+int(c.SizeInBytes())))
}

// AppendBinary appends the encoding of the filter to dst: a tag byte 'K',
// the version 1, the fingerprint bits, log2 of the bucket count, the victim
// slot (a used flag byte, its bucket as a uint64 and its fingerprint as a
// uint32), then every slot, little-endian.
func (c *CuckooFilter) AppendBinary(dst []byte) ([]byte, error) {
	used := byte(0)
	if c.victim.used {
		used = 1
	}
	dst = append(dst, cuckooTag, cuckooVersion, byte(c.fpBits), byte(bits.Len64(c.mask)), used)
	dst = binary.LittleEndian.AppendUint64(dst, c.victim.bucket)
	dst = binary.LittleEndian.AppendUint32(dst, c.victim.fp)
	switch c.width {
	case 1:
		dst = append(dst, c.s8...)
	case 2:
		for _, v := range c.s16 {
			dst = binary.LittleEndian.AppendUint16(dst, v)
		}
	default:
		for _, v := range c.s32 {
			dst = binary.LittleEndian.AppendUint32(dst, v)
		}
	}
	return dst, nil
}

// UnmarshalBinary sets c to the filter data encodes. It checks the tag,
// version, parameters and exact length before allocating, and that every
// fingerprint is in range for f and the victim's bucket exists; it counts the
// keys from the slots. Any failure is an error wrapping ErrInvalidEncoding,
// and c is left unchanged.
func (c *CuckooFilter) UnmarshalBinary(data []byte) error {
	if len(data) < cuckooHeader {
		return errorf(ErrInvalidEncoding, "cuckoo filter: %d bytes is too short", len(data))
	}
	if data[0] != cuckooTag || data[1] != cuckooVersion {
		return errorf(ErrInvalidEncoding, "cuckoo filter: tag %#x version %d", data[0], data[1])
	}
	f, logB, used := int(data[2]), uint(data[3]), data[4]
	vBucket := binary.LittleEndian.Uint64(data[5:])
	vFP := binary.LittleEndian.Uint32(data[13:])
	if f < MinCuckooFingerprintBits || f > MaxCuckooFingerprintBits || logB > 32 || used > 1 {
		return errorf(ErrInvalidEncoding, "cuckoo filter: f=%d log2 buckets=%d victim=%d out of range", f, logB, used)
	}
	d := newCuckoo(1<<logB, f)
	nslots := uint64(cuckooBucketSize) << logB
	body := data[cuckooHeader:]
	if uint64(len(body))%uint64(d.width) != 0 || uint64(len(body))/uint64(d.width) != nslots {
		return errorf(ErrInvalidEncoding, "cuckoo filter: %d bytes for %d slots of %d bytes", len(body), nslots, d.width)
	}
	if used == 1 {
		if vBucket > d.mask || vFP == 0 || uint64(vFP) > d.fpRange {
			return errorf(ErrInvalidEncoding, "cuckoo filter: bad victim")
		}
		d.victim = cuckooVictim{used: true, bucket: vBucket, fp: vFP}
		d.count++
	} else if vBucket != 0 || vFP != 0 {
		return errorf(ErrInvalidEncoding, "cuckoo filter: unused victim slot is not zero")
	}
	var bad bool
	switch d.width {
	case 1:
		d.s8 = make(cuckooSlots[uint8], nslots)
		copy(d.s8, body)
		for _, v := range d.s8 {
			bad = bad || uint64(v) > d.fpRange
			d.count += uint64(min(v, 1))
		}
	case 2:
		d.s16 = make(cuckooSlots[uint16], nslots)
		for i := range d.s16 {
			v := binary.LittleEndian.Uint16(body[2*i:])
			bad = bad || uint64(v) > d.fpRange
			d.count += uint64(min(v, 1))
			d.s16[i] = v
		}
	default:
		d.s32 = make(cuckooSlots[uint32], nslots)
		for i := range d.s32 {
			v := binary.LittleEndian.Uint32(body[4*i:])
			bad = bad || uint64(v) > d.fpRange
			d.count += uint64(min(v, 1))
			d.s32[i] = v
		}
	}
	if bad {
		return errorf(ErrInvalidEncoding, "cuckoo filter: fingerprint wider than %d bits", f)
	}
	*c = *d
	return nil
}

// cuckooSlots is a table of buckets of four fingerprints; 0 is an empty
// slot.
type cuckooSlots[T uint8 | uint16 | uint32] []T

func (s cuckooSlots[T]) bucket(i uint64) *[cuckooBucketSize]T {
	return (*[cuckooBucketSize]T)(s[i*cuckooBucketSize:])
}

func (s cuckooSlots[T]) has(i uint64, fp T) bool {
	b := s.bucket(i)
	return b[0] == fp || b[1] == fp || b[2] == fp || b[3] == fp
}

func (s cuckooSlots[T]) copies(i uint64, fp T) int {
	n := 0
	for _, v := range s.bucket(i) {
		if v == fp {
			n++
		}
	}
	return n
}

func (s cuckooSlots[T]) put(i uint64, fp T) bool {
	b := s.bucket(i)
	for j := range b {
		if b[j] == 0 {
			b[j] = fp
			return true
		}
	}
	return false
}

func (s cuckooSlots[T]) remove(i uint64, fp T) bool {
	b := s.bucket(i)
	for j := range b {
		if b[j] == fp {
			b[j] = 0
			return true
		}
	}
	return false
}

func (s cuckooSlots[T]) swap(i, slot uint64, fp T) T {
	b := s.bucket(i)
	old := b[slot]
	b[slot] = fp
	return old
}

// slotWidth returns the bytes a slot of f-bit fingerprints takes.
func slotWidth(f int) int {
	switch {
	case f <= 8:
		return 1
	case f <= 16:
		return 2
	}
	return 4
}
