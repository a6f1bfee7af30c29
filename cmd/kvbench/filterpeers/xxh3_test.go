package filterpeers

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/zeebo/xxh3"
)

// bloomkv's blocked Bloom filter hashes keys with XXH3-64 (seed 0), which
// package filter computes itself so that the engine needs no hash library.
// The tests here hold it to github.com/zeebo/xxh3, which only this module
// requires.

var updateVectors = flag.Bool("update", false, "rewrite ../../filter/testdata/xxh3_vectors.txt from github.com/zeebo/xxh3")

const vectorsFile = "../../filter/testdata/xxh3_vectors.txt"

// vectorLengths are the input lengths of the vectors file: every length
// from 0 to 1100 bytes (the paths for 0, 1-3, 4-8, 9-16, 17-128 and
// 129-240 bytes, and one block of the long path and a bit), then longer
// inputs around block boundaries, xxHash's own sanity-test lengths, and a
// few large ones.
func vectorLengths() []int {
	var ls []int
	for n := 0; n <= 1100; n++ {
		ls = append(ls, n)
	}
	return append(ls, 1500, 2047, 2048, 2049, 2099, 2240, 2367, 3071, 3072, 3073, 4096, 4097, 10000, 65536, 100000)
}

// sanityPattern returns the first n bytes of xxHash's own sanity-test
// input: the top byte of a sequence that starts at 2654435761 and is
// multiplied by 11400714785074694797 each step, mod 2^64 (its PRIME32 and
// PRIME64). (Package filter's tests make the same.)
func sanityPattern(n int) []byte {
	b := make([]byte, n)
	gen := uint64(2654435761)
	for i := range b {
		b[i] = byte(gen >> 56)
		gen *= 11400714785074694797
	}
	return b
}

// splitmixPattern returns the first n bytes of the little-endian outputs
// of splitmix64 started from state 0.
func splitmixPattern(n int) []byte {
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

func makeVectors() []byte {
	ls := vectorLengths()
	maxLen := ls[len(ls)-1]
	sanity, mix := sanityPattern(maxLen), splitmixPattern(maxLen)
	var buf bytes.Buffer
	buf.WriteString(`# XXH3-64, seed 0, default secret, by github.com/zeebo/xxh3 v1.1.0.
# A line: n, the hash of the first n bytes of xxHash's sanity-test input
# (byte i is the top byte of 2654435761 * 11400714785074694797^i mod 2^64),
# the hash of the first n bytes of the little-endian outputs of splitmix64
# from state 0. Package filter's TestKeyHashIsXXH3 checks keyHash against it.
# Made by: cd cmd/kvbench/filterpeers && go test -run TestXXH3Vectors -update
`)
	for _, n := range ls {
		fmt.Fprintf(&buf, "%d %016x %016x\n", n, xxh3.Hash(sanity[:n]), xxh3.Hash(mix[:n]))
	}
	return buf.Bytes()
}

// TestXXH3Vectors checks that package filter's vectors file is what
// github.com/zeebo/xxh3 gives for its inputs (and rewrites it with
// -update).
func TestXXH3Vectors(t *testing.T) {
	want := makeVectors()
	if *updateVectors {
		if err := os.WriteFile(vectorsFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what github.com/zeebo/xxh3 gives; rerun with -update if the inputs changed", vectorsFile)
	}
}

// blockedFilter builds, from the keys' hashes, the filter that
// filter.BlockedBloomPolicyName's documented encoding prescribes: L lines
// of 64 bytes, L = ceil(max(n·bitsPerKey, 512)/512) for n keys (a key equal
// to the one before it not counted), then a byte k; a key with hash h sets,
// in line (h·L)>>64, bits g>>23 for g = uint32(h), g·0x9e3779b9, ... (k of
// them, mod 2^32).
func blockedFilter(hashes []uint64, bitsPerKey, k int) []byte {
	var hs []uint64
	for i, h := range hashes {
		if i == 0 || h != hashes[i-1] {
			hs = append(hs, h)
		}
	}
	nlines := (max(len(hs)*bitsPerKey, 512) + 511) / 512
	f := make([]byte, 64*nlines+1)
	for _, h := range hs {
		line, _ := bits.Mul64(h, uint64(nlines))
		g := uint32(h)
		for range k {
			bit := g >> 23
			f[64*int(line)+int(bit>>3)] |= 1 << (bit & 7)
			g *= 0x9e3779b9
		}
	}
	f[64*nlines] = byte(k)
	return f
}

// blockedProbe is the lookup of the documented encoding: whether every one
// of the k bits of the key with hash h is set.
func blockedProbe(f []byte, h uint64) bool {
	nlines := (len(f) - 1) / 64
	line, _ := bits.Mul64(h, uint64(nlines))
	g := uint32(h)
	for range int(f[len(f)-1]) {
		bit := g >> 23
		if f[64*int(line)+int(bit>>3)]&(1<<(bit&7)) == 0 {
			return false
		}
		g *= 0x9e3779b9
	}
	return true
}

// randomKey returns a key of a random length: mostly up to 300 bytes (the
// short and medium paths), some up to 2100 (the long path, up to three
// blocks), a few up to 20,000.
func randomKey(rng *rand.Rand) []byte {
	var n int
	switch r := rng.IntN(100); {
	case r < 70:
		n = rng.IntN(301)
	case r < 95:
		n = rng.IntN(2101)
	default:
		n = rng.IntN(20001)
	}
	k := make([]byte, n)
	for i := range k {
		k[i] = byte(rng.Uint32())
	}
	return k
}

// TestBlockedBloomHashIsXXH3 compares the hash of bloomkv's blocked Bloom
// filter with github.com/zeebo/xxh3 on random keys of random lengths,
// through the filter's encoding (the package exports no hash): each round
// builds a filter over random keys with the policy and, from
// github.com/zeebo/xxh3's hashes of the same keys, the filter the encoding
// prescribes, and requires the two to be byte for byte the same; then it
// probes random absent keys in both ways. A key's hash decides its line
// (the top bits, as many as the filter has lines in powers of two) and
// its probe bits (from the low 32 bits), so a key hashed differently sets
// different bits, except with about the filter's false-positive rate.
func TestBlockedBloomHashIsXXH3(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	rounds := 60
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		bitsPerKey := []int{10, 20, 64}[round%3]
		p := filter.NewBlockedBloomPolicy(bitsPerKey)
		k := p.(filter.BitsPerKeyer).NumProbes()
		nkeys := 1 + rng.IntN(3000)
		keys := make([][]byte, nkeys)
		hashes := make([]uint64, nkeys)
		b := p.NewBuilder()
		for i := range keys {
			keys[i] = randomKey(rng)
			hashes[i] = xxh3.Hash(keys[i])
			b.AddKey(keys[i])
		}
		got := b.Finish(nil)
		want := blockedFilter(hashes, bitsPerKey, k)
		if !bytes.Equal(got, want) {
			for i, key := range keys {
				if !blockedProbe(got, hashes[i]) {
					t.Fatalf("round %d: the filter lacks the bits of the %d-byte key %s, XXH3-64 %#016x", round, len(key), showKey(key), hashes[i])
				}
			}
			t.Fatalf("round %d: %d keys, %d bits per key: the filter (%d bytes) differs from the one the encoding gives with github.com/zeebo/xxh3's hashes", round, nkeys, bitsPerKey, len(got))
		}
		for range 2000 {
			key := randomKey(rng)
			if g, w := p.MayContain(want, key), blockedProbe(want, xxh3.Hash(key)); g != w {
				t.Fatalf("round %d: MayContain of the %d-byte key %s = %v, the encoding with XXH3-64 %#016x gives %v", round, len(key), showKey(key), g, xxh3.Hash(key), w)
			}
		}
	}
}

// showKey formats a key for a failure message, up to its first 48 bytes.
func showKey(k []byte) string {
	if len(k) <= 48 {
		return fmt.Sprintf("%x", k)
	}
	return fmt.Sprintf("%x...", k[:48])
}
