package filter

import (
	"encoding/binary"
	"math/bits"
)

// XXH3-64 with seed 0 and the default secret, in portable Go, after the
// algorithm's specification (doc/xxhash_spec.md of
// github.com/Cyan4973/xxHash). keyHash and keyHashOther (hash.go) dispatch
// on the length; this file holds the paths for keys of up to 8 bytes and of
// more than 32. XXH3 has a path per length range:
//
//	0        avalanche_XXH64 of two secret words
//	1-3      the bytes and the length in one 32-bit word (hashUpTo8)
//	4-8      the first and last 4 bytes, rrmxmx (hashUpTo8)
//	9-16     the first and last 8 bytes, a 128-bit product (hashMid)
//	17-128   pairs of 16-byte chunks from both ends (keyHashOther, hash17To128)
//	129-240  16-byte chunks in order, an avalanche after the 8th (hash129To240)
//	241-     8 accumulators over 64-byte stripes, 1 KiB blocks (hashLong)
//
// TestKeyHashIsXXH3 checks every length from 0 to 1100 bytes, and longer
// ones, against vectors made by github.com/zeebo/xxh3 and against the
// values xxHash's own sanity test publishes.

// xxh3Secret is XXH3's default secret, 192 bytes. The words of it that the
// paths for short keys use are also constants (hash.go).
var xxh3Secret = [xxh3SecretSize]byte{
	0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
	0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
	0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
	0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
	0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
	0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
	0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
	0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
	0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
	0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
	0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
	0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
}

const (
	xxh3SecretSize = 192

	// Long inputs: 64-byte stripes of 8 lanes; a block is as many stripes
	// as the secret has 8-byte steps before its last 64 bytes (16), and
	// ends with a scramble keyed by those last 64 bytes.
	xxh3StripeLen       = 64
	xxh3StripesPerBlock = (xxh3SecretSize - xxh3StripeLen) / 8
	xxh3BlockLen        = xxh3StripeLen * xxh3StripesPerBlock
	xxh3ScrambleOffset  = xxh3SecretSize - xxh3StripeLen
	xxh3LastStripeOff   = xxh3SecretSize - xxh3StripeLen - 7 // 121
	xxh3MergeOffset     = 11

	// 129 to 240 bytes: secret offsets of the chunks after the 8th, and of
	// the last 16 bytes.
	xxh3MidStartOffset = 3
	xxh3MidLastOffset  = 136 - 17 // 119

	xxh3Prime32_1 = 0x9e3779b1
	xxh3Prime32_2 = 0x85ebca77
	xxh3Prime32_3 = 0xc2b2ae3d
	xxh3Prime64_2 = 0xc2b2ae3d27d4eb4f
	xxh3Prime64_3 = 0x165667b19e3779f9
	xxh3Prime64_4 = 0x85ebca77c2b2ae63
	xxh3Prime64_5 = 0x27d4eb2f165667c5
	xxh3RrmxmxMul = 0x9fb21c651e98df25 // PRIME_MX2
)

// hashUpTo8 returns XXH3-64 of key, whose length n is 0 to 8.
func hashUpTo8(key []byte) uint64 {
	n := len(key)
	if n >= 4 {
		x := uint64(binary.LittleEndian.Uint32(key[n-4:])) | uint64(binary.LittleEndian.Uint32(key))<<32
		x ^= xxh3Secret08 ^ xxh3Secret16
		// rrmxmx
		x ^= bits.RotateLeft64(x, 49) ^ bits.RotateLeft64(x, 24)
		x *= xxh3RrmxmxMul
		x ^= x>>35 + uint64(n)
		x *= xxh3RrmxmxMul
		return x ^ x>>28
	}
	if n > 0 {
		c := uint32(key[n-1]) | uint32(n)<<8 | uint32(key[0])<<16 | uint32(key[n>>1])<<24
		return xxh64Avalanche(uint64(c) ^ (xxh3Secret00^xxh3Secret00>>32)&0xffffffff)
	}
	return xxh64Avalanche(xxh3Secret56 ^ xxh3Secret64)
}

// xxh64Avalanche is XXH64's final mix, which XXH3 uses for inputs of 0 to 3
// bytes.
func xxh64Avalanche(x uint64) uint64 {
	x ^= x >> 33
	x *= xxh3Prime64_2
	x ^= x >> 29
	x *= xxh3Prime64_3
	return x ^ x>>32
}

// secretWord returns the little-endian word of the default secret at byte
// offset off.
func secretWord(off int) uint64 {
	return binary.LittleEndian.Uint64(xxh3Secret[off : off+8])
}

// mix16 mixes the 16 bytes at the start of b with the 16 bytes of the secret
// at off (XXH3's mixStep with seed 0).
func mix16(b []byte, off int) uint64 {
	return mulFold(binary.LittleEndian.Uint64(b)^secretWord(off), binary.LittleEndian.Uint64(b[8:16])^secretWord(off+8))
}

// hash17To128 returns XXH3-64 of b, whose length n is 17 to 128: chunks i
// from the start and from the end, with secret offsets 32i and 32i+16, as
// many as cover b.
func hash17To128(b []byte) uint64 {
	n := len(b)
	acc := uint64(n) * xxh3Prime1
	if n > 32 {
		if n > 64 {
			if n > 96 {
				acc += mix16(b[48:], 96)
				acc += mix16(b[n-64:], 112)
			}
			acc += mix16(b[32:], 64)
			acc += mix16(b[n-48:], 80)
		}
		acc += mix16(b[16:], 32)
		acc += mix16(b[n-32:], 48)
	}
	acc += mix16(b, 0)
	acc += mix16(b[n-16:], 16)
	return xxh3Avalanche(acc)
}

// hash129To240 returns XXH3-64 of b, whose length n is 129 to 240: the
// first 8 chunks, unrolled so that the compiler checks no bounds, an
// avalanche, then the other whole chunks and the last 16 bytes.
func hash129To240(b []byte) uint64 {
	n := len(b)
	_ = b[127]
	acc := uint64(n) * xxh3Prime1
	acc += mix16(b[0:], 0)
	acc += mix16(b[16:], 16)
	acc += mix16(b[32:], 32)
	acc += mix16(b[48:], 48)
	acc += mix16(b[64:], 64)
	acc += mix16(b[80:], 80)
	acc += mix16(b[96:], 96)
	acc += mix16(b[112:], 112)
	acc = xxh3Avalanche(acc)
	sec := xxh3Secret[xxh3MidStartOffset:]
	for rest := b[128:]; len(rest) >= 16 && len(sec) >= 16; rest, sec = rest[16:], sec[16:] {
		acc += mulFold(binary.LittleEndian.Uint64(rest)^binary.LittleEndian.Uint64(sec),
			binary.LittleEndian.Uint64(rest[8:])^binary.LittleEndian.Uint64(sec[8:]))
	}
	acc += mix16(b[n-16:], xxh3MidLastOffset)
	return xxh3Avalanche(acc)
}

// xxh3Accs holds the 8 accumulators of the long-input path.
type xxh3Accs [8]uint64

// accumulate folds the 64-byte stripes of data, stripe s keyed by the 64
// bytes of the secret at sec[8s:]: each lane's value goes into its
// neighbour (lane i^1), and the product of the two 32-bit halves of the
// value xored with its secret word into its own. The accumulators live in
// registers for the whole run.
func (a *xxh3Accs) accumulate(data, sec []byte) {
	le := binary.LittleEndian
	a0, a1, a2, a3, a4, a5, a6, a7 := a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
	for ; len(data) >= xxh3StripeLen && len(sec) >= xxh3StripeLen; data, sec = data[xxh3StripeLen:], sec[8:] {
		d, k := (*[xxh3StripeLen]byte)(data), (*[xxh3StripeLen]byte)(sec)
		v0, v1 := le.Uint64(d[0:]), le.Uint64(d[8:])
		k0, k1 := v0^le.Uint64(k[0:]), v1^le.Uint64(k[8:])
		a0 += v1 + (k0&0xffffffff)*(k0>>32)
		a1 += v0 + (k1&0xffffffff)*(k1>>32)
		v2, v3 := le.Uint64(d[16:]), le.Uint64(d[24:])
		k2, k3 := v2^le.Uint64(k[16:]), v3^le.Uint64(k[24:])
		a2 += v3 + (k2&0xffffffff)*(k2>>32)
		a3 += v2 + (k3&0xffffffff)*(k3>>32)
		v4, v5 := le.Uint64(d[32:]), le.Uint64(d[40:])
		k4, k5 := v4^le.Uint64(k[32:]), v5^le.Uint64(k[40:])
		a4 += v5 + (k4&0xffffffff)*(k4>>32)
		a5 += v4 + (k5&0xffffffff)*(k5>>32)
		v6, v7 := le.Uint64(d[48:]), le.Uint64(d[56:])
		k6, k7 := v6^le.Uint64(k[48:]), v7^le.Uint64(k[56:])
		a6 += v7 + (k6&0xffffffff)*(k6>>32)
		a7 += v6 + (k7&0xffffffff)*(k7>>32)
	}
	a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7] = a0, a1, a2, a3, a4, a5, a6, a7
}

// scramble ends a block: each accumulator is xor-shifted, keyed by the
// secret's last 64 bytes and multiplied by PRIME32_1.
func (a *xxh3Accs) scramble() {
	sec := xxh3Secret[xxh3ScrambleOffset:]
	for i := range a {
		x := a[i]
		x ^= x >> 47
		x ^= binary.LittleEndian.Uint64(sec[8*i:])
		a[i] = x * xxh3Prime32_1
	}
}

// hashLong returns XXH3-64 of b, longer than 240 bytes: every block but the
// last (which may be whole) is accumulated stripe by stripe and scrambled;
// the last block's whole stripes but its last are accumulated, then the
// input's final 64 bytes as a stripe, and the accumulators are merged.
func hashLong(b []byte) uint64 {
	n := len(b)
	a := xxh3Accs{
		xxh3Prime32_3, xxh3Prime1, xxh3Prime64_2, xxh3Prime64_3,
		xxh3Prime64_4, xxh3Prime32_2, xxh3Prime64_5, xxh3Prime32_1,
	}
	nblocks := (n - 1) / xxh3BlockLen
	for blk := 0; blk < nblocks; blk++ {
		a.accumulate(b[blk*xxh3BlockLen:(blk+1)*xxh3BlockLen], xxh3Secret[:])
		a.scramble()
	}
	last := b[nblocks*xxh3BlockLen:]
	nstripes := (len(last) - 1) / xxh3StripeLen
	a.accumulate(last[:nstripes*xxh3StripeLen], xxh3Secret[:])
	a.accumulate(b[n-xxh3StripeLen:], xxh3Secret[xxh3LastStripeOff:])

	acc := uint64(n) * xxh3Prime1
	for i := 0; i < 4; i++ {
		off := xxh3MergeOffset + 16*i
		acc += mulFold(a[2*i]^secretWord(off), a[2*i+1]^secretWord(off+8))
	}
	return xxh3Avalanche(acc)
}
