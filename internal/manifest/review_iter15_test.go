package manifest

import (
	"bytes"
	"math/rand"
	"slices"
	"testing"
)

// r15Key draws a key of a shared prefix of 0 to 24 'q' bytes (so bounds
// share prefixes of every length around 8), then up to 11 bytes of an
// alphabet of edge bytes: keys shorter than 8 bytes, keys that are
// prefixes of each other, zero bytes (padding ties), all-0xff windows.
func r15Key(rng *rand.Rand) []byte {
	lens := []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 24}
	k := bytes.Repeat([]byte{'q'}, lens[rng.Intn(len(lens))])
	alpha := []byte{0x00, 0x01, 'q', 'r', 0x80, 0xfe, 0xff}
	for n := rng.Intn(12); n > 0; n-- {
		k = append(k, alpha[rng.Intn(len(alpha))])
	}
	return k
}

// TestR15InRangeLevel0Edges checks InRangeLevel0 against whole-key
// comparisons for bounds whose shared prefix is shorter than, exactly,
// and longer than 8 bytes, bounds shorter than 8 bytes, the empty key,
// equal bounds, and probes derived from the bounds (each, its neighbours,
// its prefixes, its extensions by 0x00 and 0xff), in batches of every
// size up to 64 and past it.
func TestR15InRangeLevel0Edges(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	for iter := 0; iter < 20000; iter++ {
		a, b := r15Key(rng), r15Key(rng)
		switch iter % 7 {
		case 0:
			b = slices.Clone(a)
		case 1:
			b = append(slices.Clone(a), 0)
		case 2:
			b = append(slices.Clone(a), bytes.Repeat([]byte{0xff}, rng.Intn(12))...)
		}
		if bytes.Compare(a, b) > 0 {
			a, b = b, a
		}
		// One table, or with others of r15Key bounds (level 0's range
		// checks are made for all its tables at once).
		bounds := [][2][]byte{{a, b}}
		for n := rng.Intn(4); n > 0; n-- {
			c, d := r15Key(rng), r15Key(rng)
			if bytes.Compare(c, d) > 0 {
				c, d = d, c
			}
			bounds = append(bounds, [2][]byte{c, d})
		}
		v := level0Version(t, bounds)
		var keys [][]byte
		for _, x := range [][]byte{a, b} {
			for n := 0; n <= len(x); n++ {
				keys = append(keys, x[:n])
			}
			keys = append(keys, append(slices.Clone(x), 0), append(slices.Clone(x), 0xff), append(slices.Clone(x), 0, 0, 0, 0, 0, 0, 0, 0, 0))
			if len(x) > 0 {
				y := slices.Clone(x)
				y[len(y)-1]++
				keys = append(keys, y)
				z := slices.Clone(x)
				z[len(z)-1]--
				keys = append(keys, z)
			}
		}
		for len(keys) < 40+rng.Intn(60) {
			keys = append(keys, r15Key(rng))
		}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		checkInRangeLevel0(t, v, keys)
		// Sub-slices of the batch (the chunks deeper passes).
		for _, n := range []int{1, 2, 7, 8, 9} {
			if n <= len(keys) {
				checkInRangeLevel0(t, v, keys[len(keys)-n:])
			}
		}
	}
}

// TestR15InRangeLevel0EmptyAndNilKeys: the empty key and a nil key as
// bounds and probes.
func TestR15InRangeLevel0EmptyAndNilKeys(t *testing.T) {
	for _, bounds := range [][2]string{{"", ""}, {"", "\x00"}, {"", "\xff\xff\xff\xff\xff\xff\xff\xff\xff"}, {"\x00", "\x00\x00\x00\x00\x00\x00\x00\x00"}, {"\x00\x00\x00\x00\x00\x00\x00\x00", "\x00\x00\x00\x00\x00\x00\x00\x00\x00"}} {
		v := level0Version(t, [][2][]byte{{[]byte(bounds[0]), []byte(bounds[1])}})
		keys := [][]byte{nil, {}, {0}, {0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {0xff}, bytes.Repeat([]byte{0xff}, 9), bytes.Repeat([]byte{0xff}, 10)}
		checkInRangeLevel0(t, v, keys)
	}
}
