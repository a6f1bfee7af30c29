package filter

import (
	"encoding/binary"
	"math/bits"
)

// XXH3-64 constants for inputs of up to 32 bytes with seed 0: words of the
// algorithm's default secret (xxh3Secret in xxh3.go), at the byte offsets
// their names give, and the multipliers of its final mixes.
const (
	xxh3Secret00 = 0xbe4ba423396cfeb8
	xxh3Secret08 = 0x1cad21f72c81017c
	xxh3Secret16 = 0xdb979083e96dd4de
	xxh3Secret24 = 0x1f67b3b7a4a44072
	xxh3Secret32 = 0x78e5c0cc4ee679cb
	xxh3Secret40 = 0x2172ffcc7dd05a82
	xxh3Secret48 = 0x8e2443f7744608b8
	xxh3Secret56 = 0x4c263a81e69035e0
	xxh3Secret64 = 0xcb00c391bb52283c
	xxh3Prime1   = 0x9e3779b185ebca87
	xxh3AvalMul  = 0x165667919e3779f9
)

// keyHash returns XXH3-64 of key with seed 0, the hash of the blocked Bloom
// filter's format.
//
// Keys of 9 to 16 bytes, the most common table keys, are hashed here, small
// enough for the compiler to inline into a filter probe: a call per probe
// costs more than the arithmetic, since it shrinks how many lookups the CPU
// keeps in flight at once (see BENCHMARKS.md). Other lengths go to
// keyHashOther. TestKeyHashIsXXH3 checks every length up to 1100 bytes, and
// longer ones, against reference vectors (testdata/xxh3_vectors.txt).
func keyHash(key []byte) uint64 {
	if n := len(key); n > 8 && n <= 16 {
		return hashMid(key, n)
	}
	return keyHashOther(key)
}

// hashMid returns XXH3-64 of key, whose length n is 9 to 16.
func hashMid(key []byte, n int) uint64 {
	lo := binary.LittleEndian.Uint64(key) ^ (xxh3Secret24 ^ xxh3Secret32)
	hi := binary.LittleEndian.Uint64(key[n-8:]) ^ (xxh3Secret40 ^ xxh3Secret48)
	mh, ml := bits.Mul64(lo, hi)
	return xxh3Avalanche(uint64(n) + bits.ReverseBytes64(lo) + hi + (mh ^ ml))
}

// keyHashOther returns XXH3-64 of a key that is not 9 to 16 bytes long (it
// takes those too): 17 to 32 bytes here, the other lengths by the paths of
// xxh3.go.
func keyHashOther(key []byte) uint64 {
	n := len(key)
	switch {
	case n <= 8:
		return hashUpTo8(key)
	case n <= 16:
		return hashMid(key, n)
	case n <= 32:
		le := binary.LittleEndian
		acc := uint64(n) * xxh3Prime1
		acc += mulFold(le.Uint64(key)^xxh3Secret00, le.Uint64(key[8:])^xxh3Secret08)
		acc += mulFold(le.Uint64(key[n-16:])^xxh3Secret16, le.Uint64(key[n-8:])^xxh3Secret24)
		return xxh3Avalanche(acc)
	case n <= 128:
		return hash17To128(key)
	case n <= 240:
		return hash129To240(key)
	}
	return hashLong(key)
}

func mulFold(x, y uint64) uint64 {
	hi, lo := bits.Mul64(x, y)
	return hi ^ lo
}

func xxh3Avalanche(x uint64) uint64 {
	x ^= x >> 37
	x *= xxh3AvalMul
	return x ^ x>>32
}
