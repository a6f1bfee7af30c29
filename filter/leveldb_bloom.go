package filter

import "math"

// LevelDBBloomPolicyName is the Name of the policies made by
// NewLevelDBBloomPolicy; it is LevelDB's name for the same encoding.
const LevelDBBloomPolicyName = "leveldb.BuiltinBloomFilter2"

// levelDBBloomSeed is the seed LevelDB hashes filter keys with.
const levelDBBloomSeed = 0xbc9f1d34

// NewLevelDBBloomPolicy returns a policy whose filters are byte for byte those
// of LevelDB's NewBloomFilterPolicy(bitsPerKey), for bitsPerKey in
// [MinBitsPerKey, MaxBitsPerKey] (other values are clamped to that range).
//
// Encoding (LevelDB's): k = bitsPerKey*0.69 (a float64 product, truncated)
// clamped to [1,30]; a bit array of max(n*bitsPerKey, 64) bits rounded up to
// whole bytes, n counting every added key including repeats; then one byte k.
// A key with h = LevelDB's 32-bit Hash(key, 0xbc9f1d34) sets bit h%bits, then
// adds delta = rotr32(h,17) to h (mod 2^32), k times.
//
// Reading differs from LevelDB in one case only: a filter shorter than two
// bytes (which LevelDB never writes) may contain any key here, where LevelDB
// says it contains none.
//
// LevelDB builds one such filter per 2 KiB of data blocks. Over a whole
// table its weak 32-bit hash shows: at 10 bits per key, with db_bench keys
// (16 digits) probed by keys differing only in the last digit, the
// false-positive rate is 0.77% at 1k keys, 2.2% at 100k and 14% at 1M, the
// same counts LevelDB itself gives. Prefer NewBloomPolicy unless LevelDB
// compatibility is the point. The returned Policy also implements
// BitsPerKeyer.
func NewLevelDBBloomPolicy(bitsPerKey int) Policy {
	b := clampBitsPerKey(bitsPerKey)
	// LevelDB computes static_cast<size_t>(bits_per_key * 0.69) in double
	// precision; the same float64 product keeps k identical for every b.
	k := int(float64(b) * 0.69)
	return &levelDBBloomPolicy{bitsPerKey: b, k: clampProbes(k), requested: bitsPerKey}
}

// GoLevelDBBloomPolicyName is goleveldb's name for LevelDB's Bloom filter
// encoding (LevelDB's own name before it added the "2").
const GoLevelDBBloomPolicyName = "leveldb.BuiltinBloomFilter"

// NewGoLevelDBBloomPolicy returns NewLevelDBBloomPolicy(bitsPerKey) under
// goleveldb's name, GoLevelDBBloomPolicyName: goleveldb's filter.NewBloomFilter
// writes the same bits (the same hash, seed, probes and trailing k) but
// names them so, and a reader finds a table's filter by its name.
//
// LevelDB's releases before the "2" hashed the last one to three bytes of
// a key as signed chars, so for keys whose length is not a multiple of
// four and whose tail has a byte >= 0x80 their filters set other bits.
// Tables of that name may come from either, so MayContain answers "may"
// when either hash finds the key: never a false negative, and the same
// answer as NewLevelDBBloomPolicy for every other key.
func NewGoLevelDBBloomPolicy(bitsPerKey int) Policy {
	p := NewLevelDBBloomPolicy(bitsPerKey).(*levelDBBloomPolicy)
	p.name = GoLevelDBBloomPolicyName
	return p
}

type levelDBBloomPolicy struct {
	bitsPerKey int
	k          int
	requested  int    // the argument before clamping, for Validate
	name       string // "" for LevelDBBloomPolicyName
}

func (p *levelDBBloomPolicy) Name() string {
	if p.name != "" {
		return p.name
	}
	return LevelDBBloomPolicyName
}
func (p *levelDBBloomPolicy) BitsPerKey() int { return p.bitsPerKey }
func (p *levelDBBloomPolicy) NumProbes() int  { return p.k }
func (p *levelDBBloomPolicy) validate() error { return checkRequested(p.requested) }

func (p *levelDBBloomPolicy) NewBuilder() Builder {
	return &levelDBBloomBuilder{bitsPerKey: p.bitsPerKey, k: p.k}
}

// MayContain implements Policy.
func (p *levelDBBloomPolicy) MayContain(filter, key []byte) bool {
	n := len(filter) - 1
	if n < 1 {
		return true
	}
	k := int(filter[n])
	if k > MaxProbes {
		return true // reserved by LevelDB for other encodings
	}
	if levelDBProbe(filter[:n], levelDBHash(key, levelDBBloomSeed), k) {
		return true
	}
	if p.name == GoLevelDBBloomPolicyName && highTail(key) {
		return levelDBProbe(filter[:n], levelDBHashSignedTail(key, levelDBBloomSeed), k)
	}
	return false
}

// highTail reports whether a byte of key's last len%4 bytes is >= 0x80,
// where LevelDB's old signed-char hash differs from its current one.
func highTail(key []byte) bool {
	for _, b := range key[len(key)&^3:] {
		if b >= 0x80 {
			return true
		}
	}
	return false
}

// levelDBHashSignedTail is levelDBHash as LevelDB computed it before its
// filter name gained the "2": the last len%4 bytes added as signed chars
// (sign-extended, then shifted).
func levelDBHashSignedTail(data []byte, seed uint32) uint32 {
	const (
		mul   = 0xc6a4a793
		shift = 24
	)
	n := len(data) &^ 3
	h := levelDBHashBody(data[:n], seed^uint32(len(data))*mul)
	tail := data[n:]
	if len(tail) == 0 {
		return h
	}
	s := func(b byte) uint32 { return uint32(int32(int8(b))) }
	switch len(tail) {
	case 3:
		h += s(tail[2])<<16 + s(tail[1])<<8 + s(tail[0])
	case 2:
		h += s(tail[1])<<8 + s(tail[0])
	case 1:
		h += s(tail[0])
	}
	h *= mul
	h ^= h >> shift
	return h
}

// levelDBHashBody mixes the whole 4-byte words of data into h, as
// levelDBHash does after seeding h.
func levelDBHashBody(data []byte, h uint32) uint32 {
	const mul = 0xc6a4a793
	for len(data) >= 4 {
		h += uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24
		h *= mul
		h ^= h >> 16
		data = data[4:]
	}
	return h
}

// levelDBProbe tests the k bits of a key whose LevelDB hash is h in array.
func levelDBProbe(array []byte, h uint32, k int) bool {
	delta := h>>17 | h<<15
	if nbits := uint64(len(array)) * 8; nbits > math.MaxUint32 {
		// Filters over 512 MiB: LevelDB's modulo is size_t, so keep it.
		for ; k > 0; k-- {
			pos := uint64(h) % nbits
			if array[pos>>3]&(1<<(pos&7)) == 0 {
				return false
			}
			h += delta
		}
		return true
	}
	// Same result as the 64-bit modulo, with a much cheaper division.
	nbits := uint32(len(array)) * 8
	for ; k > 0; k-- {
		pos := h % nbits
		if array[pos>>3]&(1<<(pos&7)) == 0 {
			return false
		}
		h += delta
	}
	return true
}

// levelDBAdd sets the k bits of a key whose LevelDB hash is h in array, by
// the probe sequence levelDBProbe tests.
func levelDBAdd(array []byte, h uint32, k int) {
	delta := h>>17 | h<<15
	if nbits := uint64(len(array)) * 8; nbits > math.MaxUint32 {
		for ; k > 0; k-- {
			pos := uint64(h) % nbits
			array[pos>>3] |= 1 << (pos & 7)
			h += delta
		}
		return
	}
	nbits := uint32(len(array)) * 8
	for ; k > 0; k-- {
		pos := h % nbits
		array[pos>>3] |= 1 << (pos & 7)
		h += delta
	}
}

// levelDBBloomBuilder collects LevelDB's 32-bit key hashes (which do not
// depend on the filter's size) for Finish.
type levelDBBloomBuilder struct {
	bitsPerKey int
	k          int
	hashes     []uint32
}

// AddKey implements Builder.
func (b *levelDBBloomBuilder) AddKey(key []byte) {
	b.hashes = append(b.hashes, levelDBHash(key, levelDBBloomSeed))
}

// Finish implements Builder.
func (b *levelDBBloomBuilder) Finish(dst []byte) []byte {
	nbits := max(len(b.hashes)*b.bitsPerKey, 64)
	nbytes := (nbits + 7) / 8

	start := len(dst)
	dst = appendZeros(dst, nbytes+1)
	array := dst[start : start+nbytes]
	for _, h := range b.hashes {
		levelDBAdd(array, h, b.k)
	}
	dst[start+nbytes] = byte(b.k)
	b.hashes = b.hashes[:0]
	return dst
}

// levelDBHash is LevelDB's 32-bit hash (util/hash.cc), a Murmur-like
// function: little-endian 32-bit words are mixed in with a multiply and a
// shift, then the one to three tail bytes, read as unsigned, with a final
// mix.
func levelDBHash(data []byte, seed uint32) uint32 {
	const (
		mul   = 0xc6a4a793
		shift = 24
	)
	h := seed ^ uint32(len(data))*mul
	for len(data) >= 4 {
		w := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24
		h += w
		h *= mul
		h ^= h >> 16
		data = data[4:]
	}
	switch len(data) {
	case 3:
		h += uint32(data[2])<<16 | uint32(data[1])<<8 | uint32(data[0])
	case 2:
		h += uint32(data[1])<<8 | uint32(data[0])
	case 1:
		h += uint32(data[0])
	default:
		return h
	}
	h *= mul
	h ^= h >> shift
	return h
}
