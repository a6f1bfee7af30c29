package filter

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// advGrafiteKeySet draws a sorted key set of one adversarial shape.
func advGrafiteKeySet(rng *rand.Rand, shape, n int) [][]byte {
	keys := make([][]byte, 0, n)
	alpha := [][]byte{
		{0x00, 0xff},
		{0x00, 0x01, 0xfe, 0xff},
		{'a'},
		{0x00},
		{0xff},
	}[rng.IntN(5)]
	prefix := randBytes(rng, rng.IntN(4))
	for i := 0; i < n; i++ {
		var k []byte
		switch shape {
		case 0: // small alphabet, mixed lengths, prefixes of each other
			k = make([]byte, rng.IntN(12))
			for j := range k {
				k[j] = alpha[rng.IntN(len(alpha))]
			}
		case 1: // exactly 8 bytes of the full range: a 2^64 universe
			k = randBytes(rng, 8)
		case 2: // 8 full bytes then more: positions past the 64 bits
			k = randBytes(rng, 8+rng.IntN(4))
		case 3: // a common prefix and positions of radix 1 (one byte used, no key ending)
			k = append(slices.Clone(prefix), 'x', 'x', 'x')
			k = append(k, randBytes(rng, rng.IntN(3))...)
			k = append(k, 'y', 'y')
		case 4: // long keys (more than 64 positions) differing late
			k = bytes.Repeat([]byte{'q'}, 70+rng.IntN(5))
			k[60+rng.IntN(10)] = byte(rng.IntN(3))
		case 5: // keys that are prefixes of each other: the empty key, 0x00 runs
			k = bytes.Repeat([]byte{alpha[rng.IntN(len(alpha))]}, rng.IntN(10))
		case 6: // one byte per position spanning 0..255 at positions 0..7 only for some keys
			k = make([]byte, 1+rng.IntN(9))
			for j := range k {
				if rng.IntN(2) == 0 {
					k[j] = byte(rng.Uint32())
				} else {
					k[j] = []byte{0, 0xff}[rng.IntN(2)]
				}
			}
		case 7: // decimal keys with a prefix, as kvbench writes them
			k = append([]byte("user"), []byte(string(rune('0'+rng.IntN(10))))...)
			for j := 0; j < 15; j++ {
				k = append(k, byte('0'+rng.IntN(10)))
			}
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys
}

// advGrafiteBounds returns bounds near and away from keys: keys, key+0x00,
// key+0xff, prefixes, last byte +-1 (wrapping), key with trailing bytes,
// shorter and longer than the keys, and random.
func advGrafiteBounds(rng *rand.Rand, keys [][]byte, n int) [][]byte {
	b := [][]byte{{}, {0}, {0, 0}, {0xff}, bytes.Repeat([]byte{0xff}, 80)}
	for len(b) < n {
		if len(keys) == 0 || rng.IntN(8) == 0 {
			b = append(b, randBytes(rng, rng.IntN(12)))
			continue
		}
		k := keys[rng.IntN(len(keys))]
		switch rng.IntN(8) {
		case 0:
			b = append(b, k)
		case 1:
			b = append(b, append(slices.Clone(k), 0))
		case 2:
			b = append(b, append(slices.Clone(k), 0xff))
		case 3:
			b = append(b, k[:rng.IntN(len(k)+1)])
		case 4, 5:
			p := slices.Clone(k)
			if len(p) > 0 {
				j := rng.IntN(len(p))
				p[j] += byte(1 - 2*rng.IntN(2))
				if rng.IntN(2) == 0 {
					p = p[:j+1]
				}
			}
			b = append(b, p)
		case 6:
			b = append(b, append(slices.Clone(k), randBytes(rng, 1+rng.IntN(10))...))
		case 7:
			p := slices.Clone(k)
			for j := rng.IntN(len(p) + 1); j < len(p); j++ {
				p[j] = []byte{0, 0xff}[rng.IntN(2)]
			}
			b = append(b, p)
		}
	}
	return b
}

// TestAdvGrafiteNoFalseNegatives: no range that holds a key says false,
// for adversarial key shapes at every bits per key; empty and inverted
// ranges say false.
func TestAdvGrafiteNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	trials := 2000
	if testing.Short() {
		trials = 300
	}
	for trial := 0; trial < trials; trial++ {
		shape := trial % 8
		n := []int{1, 2, 3, 10, 100, 2000}[rng.IntN(6)]
		keys := advGrafiteKeySet(rng, shape, n)
		bpk := []int{0, 4, 5, 9, 16, 33, 40, 64}[rng.IntN(8)]
		p := NewGrafiteRangePolicy(bpk)
		f := buildGrafite(bpk, keys)
		if _, st := grafiteDecode(f); st == grafiteBad {
			t.Fatalf("shape %d n %d bits %d: built filter does not decode", shape, n, bpk)
		}
		bounds := advGrafiteBounds(rng, keys, 120)
		for _, lo := range bounds {
			for _, hi := range bounds {
				got := p.MayContainRange(f, lo, hi)
				if rangeHolds(keys, lo, hi) && !got {
					t.Fatalf("shape %d bits %d keys %q: false negative for [%q, %q)", shape, bpk, keys, lo, hi)
				}
				if bytes.Compare(lo, hi) >= 0 && got {
					t.Fatalf("shape %d: true for the empty range [%q, %q)", shape, lo, hi)
				}
			}
		}
		for _, k := range keys {
			if !p.MayContainRange(f, k, append(slices.Clone(k), 0)) {
				t.Fatalf("shape %d bits %d: false negative for key %q alone", shape, bpk, k)
			}
		}
	}
}

// TestAdvGrafiteFullUniverse: 8-byte keys over the whole 0..255 range at
// every position (a universe of exactly 2^64), including the smallest
// and largest 8-byte keys.
func TestAdvGrafiteFullUniverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := 0; trial < 200; trial++ {
		keys := [][]byte{make([]byte, 8), bytes.Repeat([]byte{0xff}, 8)}
		for i := 0; i < rng.IntN(50); i++ {
			keys = append(keys, randBytes(rng, 8))
		}
		// A ninth byte on some: positions past 64 bits.
		if trial%2 == 1 {
			keys = append(keys, append(bytes.Repeat([]byte{0xff}, 8), 0), append(make([]byte, 8), 7))
		}
		slices.SortFunc(keys, bytes.Compare)
		for _, bpk := range []int{4, 16, 40} {
			p := NewGrafiteRangePolicy(bpk)
			f := buildGrafite(bpk, keys)
			bounds := advGrafiteBounds(rng, keys, 60)
			for i := range keys {
				var b [8]byte
				x := binary.BigEndian.Uint64(keys[i][:8])
				binary.BigEndian.PutUint64(b[:], x+1)
				bounds = append(bounds, slices.Clone(b[:]))
				binary.BigEndian.PutUint64(b[:], x-1)
				bounds = append(bounds, slices.Clone(b[:]))
			}
			for _, lo := range bounds {
				for _, hi := range bounds {
					if rangeHolds(keys, lo, hi) && !p.MayContainRange(f, lo, hi) {
						t.Fatalf("bits %d keys %x: false negative for [%x, %x)", bpk, keys, lo, hi)
					}
				}
			}
		}
	}
}

// TestAdvGrafiteDecodeNoPanic mutates valid filters of every shape (one
// to four bytes changed, bytes inserted or removed, digits and header
// fields set to edge values) and asks ranges: no panic, and anything the
// decoder rejects says true.
func TestAdvGrafiteDecodeNoPanic(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	var filters [][]byte
	for shape := 0; shape < 8; shape++ {
		for _, n := range []int{1, 5, 300} {
			keys := advGrafiteKeySet(rng, shape, n)
			filters = append(filters, buildGrafite([]int{4, 16, 40}[shape%3], keys))
		}
	}
	p := NewGrafiteRangePolicy(16)
	edge := []byte{0, 1, 2, 7, 8, 0x3f, 0x40, 0x41, 0x7f, 0x80, 0xfe, 0xff}
	for i := 0; i < 1_000_000; i++ {
		g := slices.Clone(filters[rng.IntN(len(filters))])
		for j := rng.IntN(4); j >= 0; j-- {
			if len(g) == 0 {
				break
			}
			at := rng.IntN(len(g))
			switch rng.IntN(4) {
			case 0:
				g[at] = edge[rng.IntN(len(edge))]
			case 1:
				g[at] ^= byte(1 << rng.IntN(8))
			case 2:
				g = slices.Insert(g, at, edge[rng.IntN(len(edge))])
			case 3:
				g = slices.Delete(g, at, at+1)
			}
		}
		lo, hi := randBytes(rng, rng.IntN(12)), randBytes(rng, rng.IntN(12))
		got := p.MayContainRange(g, lo, hi)
		if _, st := grafiteDecode(g); st == grafiteBad && !got && bytes.Compare(lo, hi) < 0 {
			t.Fatalf("rejected filter %x said false for [%x, %x)", g, lo, hi)
		}
	}
}

// TestAdvGrafiteHugeKeys: a few keys of a MiB and many small keys build
// quickly and answer right.
func TestAdvGrafiteHugeKeys(t *testing.T) {
	big := bytes.Repeat([]byte{'z'}, 1<<20)
	keys := [][]byte{[]byte("a"), slices.Concat(big, []byte{0}), slices.Concat(big, []byte{1}), slices.Concat(big, []byte{1, 0})}
	slices.SortFunc(keys, bytes.Compare)
	p := NewGrafiteRangePolicy(16)
	f := buildGrafite(16, keys)
	for _, k := range keys {
		if !p.MayContainRange(f, k, append(slices.Clone(k), 0)) {
			t.Fatalf("false negative for a key of %d bytes", len(k))
		}
	}
	if !p.MayContainRange(f, big, slices.Concat(big, []byte{0, 0})) {
		t.Fatal("false negative for [big, big+00 00)")
	}
	rng := rand.New(rand.NewPCG(17, 18))
	many := make([][]byte, 300_000)
	for i := range many {
		many[i] = randBytes(rng, 1+rng.IntN(16))
	}
	slices.SortFunc(many, bytes.Compare)
	start := time.Now()
	f = buildGrafite(40, many)
	t.Logf("300,000 keys at 40 bits: %d bytes in %v", len(f), time.Since(start))
	p = NewGrafiteRangePolicy(40)
	for i := 0; i < 2000; i++ {
		k := many[rng.IntN(len(many))]
		if !p.MayContainRange(f, k, append(slices.Clone(k), 0)) {
			t.Fatalf("false negative for %x", k)
		}
	}
}
