package filter

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The inputs of testdata/xxh3_vectors.txt: the hash of length n is over the
// first n bytes of each pattern. cmd/kvbench/filterpeers makes the file with
// github.com/zeebo/xxh3 from the same two patterns (TestXXH3Vectors there).

// xxh3SanityPattern returns the first n bytes of xxHash's own sanity-test
// input: the top byte of a sequence that starts at 2654435761 and is
// multiplied by 11400714785074694797 each step, mod 2^64 (its PRIME32 and
// PRIME64).
func xxh3SanityPattern(n int) []byte {
	b := make([]byte, n)
	gen := uint64(2654435761)
	for i := range b {
		b[i] = byte(gen >> 56)
		gen *= 11400714785074694797
	}
	return b
}

// xxh3SplitmixPattern returns the first n bytes of the little-endian
// outputs of splitmix64 started from state 0.
func xxh3SplitmixPattern(n int) []byte {
	b := make([]byte, (n+7)/8*8)
	var x uint64
	for i := 0; i < len(b); i += 8 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		binary.LittleEndian.PutUint64(b[i:], z^z>>31)
	}
	return b[:n]
}

type xxh3Vector struct {
	n           int
	sanity, mix uint64 // hashes of the two patterns' first n bytes
	line        int
}

// readXXH3Vectors parses testdata/xxh3_vectors.txt: lines of a length and
// two hexadecimal hashes; '#' starts a comment line.
func readXXH3Vectors(t *testing.T) []xxh3Vector {
	t.Helper()
	f, err := os.Open("testdata/xxh3_vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []xxh3Vector
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		fs := strings.Fields(s)
		if len(fs) != 3 {
			t.Fatalf("xxh3_vectors.txt:%d: want 3 fields, got %q", line, s)
		}
		v := xxh3Vector{line: line}
		var e1, e2, e3 error
		v.n, e1 = strconv.Atoi(fs[0])
		v.sanity, e2 = strconv.ParseUint(fs[1], 16, 64)
		v.mix, e3 = strconv.ParseUint(fs[2], 16, 64)
		if e1 != nil || e2 != nil || e3 != nil {
			t.Fatalf("xxh3_vectors.txt:%d: bad line %q", line, s)
		}
		vs = append(vs, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestKeyHashIsXXH3 checks keyHash, and the hash paths MayContain calls
// directly, against testdata/xxh3_vectors.txt: XXH3-64 (seed 0) of every
// length from 0 to 1100 bytes and of longer inputs up to 100,000 bytes, made
// by github.com/zeebo/xxh3 while the package still used it.
func TestKeyHashIsXXH3(t *testing.T) {
	vs := readXXH3Vectors(t)
	maxLen := 0
	for i, v := range vs {
		if i <= 1100 && v.n != i {
			t.Fatalf("xxh3_vectors.txt:%d: length %d, want every length from 0 to 1100 in order", v.line, v.n)
		}
		maxLen = max(maxLen, v.n)
	}
	if len(vs) < 1101 || maxLen < 100_000 {
		t.Fatalf("xxh3_vectors.txt: %d vectors up to %d bytes, want 0..1100 and longer ones", len(vs), maxLen)
	}
	sanity, mix := xxh3SanityPattern(maxLen), xxh3SplitmixPattern(maxLen)
	for _, v := range vs {
		for _, c := range []struct {
			name string
			key  []byte
			want uint64
		}{{"sanity", sanity[:v.n:v.n], v.sanity}, {"splitmix", mix[:v.n:v.n], v.mix}} {
			if got := keyHash(c.key); got != c.want {
				t.Errorf("len %d (%s pattern): keyHash = %016x, want %016x", v.n, c.name, got, c.want)
			}
			if got := keyHashOther(c.key); got != c.want {
				t.Errorf("len %d (%s pattern): keyHashOther = %016x, want %016x", v.n, c.name, got, c.want)
			}
			if v.n > 8 && v.n <= 16 {
				if got := hashMid(c.key, v.n); got != c.want {
					t.Errorf("len %d (%s pattern): hashMid = %016x, want %016x", v.n, c.name, got, c.want)
				}
			}
		}
	}
}

// TestKeyHashUpstreamVectors checks keyHash against the XXH3-64 values, seed
// 0, that xxHash's own sanity test (cli/xsum_sanity_check.c) lists for its
// input, one or more per path: an independent source from the vectors file.
func TestKeyHashUpstreamVectors(t *testing.T) {
	buf := xxh3SanityPattern(2367)
	for _, v := range []struct {
		n    int
		want uint64
	}{
		{0, 0x2D06800538D394C2},
		{1, 0xC44BDFF4074EECDB},
		{6, 0x27B56A84CD2D7325},
		{12, 0xA713DAF0DFBB77E7},
		{24, 0xA3FE70BF9D3510EB},
		{48, 0x397DA259ECBA1F11},
		{80, 0xBCDEFBBB2C47C90A},
		{195, 0xCD94217EE362EC3A},
		{403, 0xCDEB804D65C6DEA4},
		{512, 0x617E49599013CB6B},
		{2048, 0xDD59E2C3A5F038E0},
		{2099, 0xC6B9D9B3FC9AC765},
		{2240, 0x6E73A90539CF2948},
		{2367, 0xCB37AEB9E5D361ED},
	} {
		if got := keyHash(buf[:v.n]); got != v.want {
			t.Errorf("len %d: keyHash = %#016x, xxHash's sanity test has %#016x", v.n, got, v.want)
		}
	}
}

// xxh3Spec is XXH3-64 with seed 0 written as literally as the
// specification's pseudo-code (doc/xxhash_spec.md of
// github.com/Cyan4973/xxHash) puts it: one function, the secret read from
// the byte array only, loops where the specification loops. It is the
// reference that TestKeyHashMatchesSpec and FuzzKeyHash hold keyHash's
// unrolled and inlined paths to.
func xxh3Spec(in []byte) uint64 {
	const (
		prime32_1 = 0x9E3779B1
		prime32_2 = 0x85EBCA77
		prime32_3 = 0xC2B2AE3D
		prime64_1 = 0x9E3779B185EBCA87
		prime64_2 = 0xC2B2AE3D27D4EB4F
		prime64_3 = 0x165667B19E3779F9
		prime64_4 = 0x85EBCA77C2B2AE63
		prime64_5 = 0x27D4EB2F165667C5
		primeMx1  = 0x165667919E3779F9
		primeMx2  = 0x9FB21C651E98DF25
	)
	secret := xxh3Secret[:]
	r64 := func(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	r32 := func(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	avalanche := func(x uint64) uint64 {
		x ^= x >> 37
		x *= primeMx1
		return x ^ x>>32
	}
	avalancheXXH64 := func(x uint64) uint64 {
		x ^= x >> 33
		x *= prime64_2
		x ^= x >> 29
		x *= prime64_3
		return x ^ x>>32
	}
	mul128Fold := func(a, b uint64) uint64 {
		hi, lo := bits.Mul64(a, b)
		return hi ^ lo
	}
	mixStep := func(data []byte, secretOffset int) uint64 {
		return mul128Fold(r64(data, 0)^r64(secret, secretOffset), r64(data, 8)^r64(secret, secretOffset+8))
	}
	n := len(in)
	switch {
	case n == 0:
		return avalancheXXH64(r64(secret, 56) ^ r64(secret, 64))
	case n <= 3:
		combined := uint32(in[n-1]) | uint32(n)<<8 | uint32(in[0])<<16 | uint32(in[n>>1])<<24
		return avalancheXXH64(uint64(r32(secret, 0)^r32(secret, 4)) ^ uint64(combined))
	case n <= 8:
		combined := uint64(r32(in, n-4)) | uint64(r32(in, 0))<<32
		value := (r64(secret, 8) ^ r64(secret, 16)) ^ combined
		value ^= bits.RotateLeft64(value, 49) ^ bits.RotateLeft64(value, 24)
		value *= primeMx2
		value ^= (value >> 35) + uint64(n)
		value *= primeMx2
		return value ^ value>>28
	case n <= 16:
		low := (r64(secret, 24) ^ r64(secret, 32)) ^ r64(in, 0)
		high := (r64(secret, 40) ^ r64(secret, 48)) ^ r64(in, n-8)
		return avalanche(uint64(n) + bits.ReverseBytes64(low) + high + mul128Fold(low, high))
	case n <= 128:
		acc := uint64(n) * prime64_1
		numRounds := (n-1)>>5 + 1
		for i := numRounds - 1; i >= 0; i-- {
			acc += mixStep(in[i*16:], i*32)
			acc += mixStep(in[n-i*16-16:], i*32+16)
		}
		return avalanche(acc)
	case n <= 240:
		acc := uint64(n) * prime64_1
		for i := 0; i < 8; i++ {
			acc += mixStep(in[i*16:], i*16)
		}
		acc = avalanche(acc)
		for i := 8; i < n>>4; i++ {
			acc += mixStep(in[i*16:], (i-8)*16+3)
		}
		acc += mixStep(in[n-16:], 119)
		return avalanche(acc)
	}
	acc := [8]uint64{prime32_3, prime64_1, prime64_2, prime64_3, prime64_4, prime32_2, prime64_5, prime32_1}
	accumulate := func(stripe []byte, secretOffset int) {
		for i := 0; i < 8; i++ {
			value := r64(stripe, 8*i) ^ r64(secret, secretOffset+8*i)
			acc[i^1] += r64(stripe, 8*i)
			acc[i] += (value & 0xFFFFFFFF) * (value >> 32)
		}
	}
	secretLength := len(secret)
	stripesPerBlock := (secretLength - 64) / 8
	blockSize := 64 * stripesPerBlock
	start := 0
	for n-start > blockSize { // every block but the last, even a whole one
		for s := 0; s < stripesPerBlock; s++ {
			accumulate(in[start+s*64:], s*8)
		}
		for i := 0; i < 8; i++ {
			acc[i] ^= acc[i] >> 47
			acc[i] ^= r64(secret, secretLength-64+8*i)
			acc[i] *= prime32_1
		}
		start += blockSize
	}
	for s := 0; s < (n-start-1)/64; s++ {
		accumulate(in[start+s*64:], s*8)
	}
	accumulate(in[n-64:], secretLength-71) // may overlap the previous block
	result := uint64(n) * prime64_1
	for i := 0; i < 4; i++ {
		result += mul128Fold(acc[2*i]^r64(secret, 11+16*i), acc[2*i+1]^r64(secret, 11+16*i+8))
	}
	return avalanche(result)
}

// TestKeyHashMatchesSpec checks keyHash and keyHashOther against xxh3Spec
// for every length up to 2100 bytes (past two blocks of the long path) and
// a few longer ones, with the all-zero key, the all-ones key and random
// keys of each length.
func TestKeyHashMatchesSpec(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var lengths []int
	for n := 0; n <= 2100; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 3071, 3072, 3073, 4096, 10000, 1<<16+17)
	for _, n := range lengths {
		keys := [][]byte{make([]byte, n), make([]byte, n)}
		for i := range keys[1] {
			keys[1][i] = 0xff
		}
		for range 4 {
			k := make([]byte, n)
			for i := range k {
				k[i] = byte(rng.Uint32())
			}
			keys = append(keys, k)
		}
		for _, k := range keys {
			want := xxh3Spec(k)
			if got := keyHash(k); got != want {
				t.Fatalf("len %d: keyHash(%x) = %#x, xxh3Spec = %#x", n, k, got, want)
			}
			if got := keyHashOther(k); got != want {
				t.Fatalf("len %d: keyHashOther(%x) = %#x, xxh3Spec = %#x", n, k, got, want)
			}
		}
	}
}

// TestXXH3SecretWords checks the secret words that hash.go keeps as
// constants against the default secret.
func TestXXH3SecretWords(t *testing.T) {
	for off, w := range map[int]uint64{
		0: xxh3Secret00, 8: xxh3Secret08, 16: xxh3Secret16, 24: xxh3Secret24, 32: xxh3Secret32,
		40: xxh3Secret40, 48: xxh3Secret48, 56: xxh3Secret56, 64: xxh3Secret64,
	} {
		if got := secretWord(off); got != w {
			t.Errorf("secret word at %d is %#016x, constant is %#016x", off, got, w)
		}
	}
}

// blockedGoldenDigest is the SHA-256 of the blocked Bloom filter that
// TestBlockedBloomGolden builds, as the package built it with
// github.com/zeebo/xxh3 (commit b994a39): filters written then must
// probe the same now, so this must never change.
const blockedGoldenDigest = "bb809f19a5785e741da1bfac6b48357b5a8a751ec8fd2592e65e8cb2cdd9476c"

// TestBlockedBloomGolden builds a blocked Bloom filter over keys of every
// length from 0 to 1100 bytes and some longer ones (the prefixes of the
// splitmix pattern and a second key of each length) and checks its bytes
// against those of the filter built before the package computed XXH3
// itself, and that every key is found.
func TestBlockedBloomGolden(t *testing.T) {
	mix := xxh3SplitmixPattern(1 << 16)
	var keys [][]byte
	for n := 0; n <= 1100; n++ {
		keys = append(keys, mix[:n:n], mix[1000:1000+n:1000+n])
	}
	for _, n := range []int{2048, 4096, 10000, 1 << 15} {
		keys = append(keys, mix[:n:n])
	}
	p := NewBlockedBloomPolicy(10)
	b := p.NewBuilder()
	for _, k := range keys {
		b.AddKey(k)
	}
	f := b.Finish(nil)
	sum := sha256.Sum256(f)
	if got := hex.EncodeToString(sum[:]); got != blockedGoldenDigest {
		t.Errorf("blocked filter of %d bytes has SHA-256 %s, want %s (the filter built with github.com/zeebo/xxh3)", len(f), got, blockedGoldenDigest)
	}
	for _, k := range keys {
		if !p.MayContain(f, k) {
			t.Fatalf("false negative for a %d-byte key", len(k))
		}
	}
}

// BenchmarkKeyHash measures keyHash at the lengths where XXH3-64 changes
// path: one op is one hash of a key of that many bytes.
func BenchmarkKeyHash(b *testing.B) {
	for _, n := range []int{0, 3, 8, 16, 24, 48, 100, 200, 256, 1024, 4096} {
		key := xxh3SplitmixPattern(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			var sink uint64
			for i := 0; i < b.N; i++ {
				sink += keyHash(key)
			}
			benchSink = sink
		})
	}
}

var benchSink uint64
