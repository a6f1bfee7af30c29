package filter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// cuckooTheory is the false-positive rate of a cuckoo filter with f-bit
// fingerprints holding count keys in slots slots: an absent key is compared
// with the fingerprints in its two buckets, 8·load of them on average.
func cuckooTheory(f int, count, slots uint64) float64 {
	load := float64(count) / float64(slots)
	return -math.Expm1(8 * load * math.Log1p(-1/float64(uint64(1)<<f-1)))
}

// fillCuckoo adds present keys 0..n-1 and fails t if any Add fails.
func fillCuckoo(t *testing.T, c *CuckooFilter, n int) {
	t.Helper()
	var kb keyBuf
	for i := 0; i < n; i++ {
		if !c.Add(kb.present(i)) {
			t.Fatalf("Add %d of %d (load %.3f) failed", i, n, c.LoadFactor())
		}
	}
}

// TestCuckooFPR: filled to 95% of its slots, the rate is within 10% of
// theory at three sizes, at most 0.02% with 16-bit fingerprints and 3.2%
// with 8-bit ones, and no key is lost.
func TestCuckooFPR(t *testing.T) {
	for _, f := range []int{8, 16} {
		for _, capacity := range []uint64{1 << 12, 1 << 15, 1 << 18} {
			// A capacity of 2^m fills its 2^m slots at most 96%, so the
			// table gets twice as many; ask for 95% of the slots instead.
			c := NewCuckooFilterWithBits(capacity*95/100, f)
			if c.Capacity() != capacity {
				t.Fatalf("capacity %d: %d slots", capacity*95/100, c.Capacity())
			}
			n := int(capacity * 95 / 100)
			fillCuckoo(t, c, n)
			if c.Count() != uint64(n) {
				t.Fatalf("Count = %d, want %d", c.Count(), n)
			}
			var kb keyBuf
			for i := 0; i < n; i++ {
				if !c.Contains(kb.present(i)) {
					t.Fatalf("false negative for %q", kb)
				}
			}
			probes := 400_000
			if f == 16 {
				probes = 3_000_000
			}
			hits := 0
			rng := rand.New(rand.NewPCG(uint64(f), capacity))
			for i := 0; i < probes; i++ {
				if i < 200_000 {
					if c.Contains(kb.absent(i)) {
						hits++
					}
					continue
				}
				// Past 200,000 absent keys, probe random hashes: the same
				// thing for a 64-bit hash, and faster.
				i1, fp := c.hash(rng.Uint64())
				if c.has(i1, fp) || c.has(c.alt(i1, fp), fp) {
					hits++
				}
			}
			theory := cuckooTheory(f, c.Count(), c.Capacity())
			checkRate(t, fmt.Sprintf("f=%d slots=%d load=%.3f", f, c.Capacity(), c.LoadFactor()), hits, probes, theory)
			bound := map[int]float64{8: 0.032, 16: 0.0002}[f]
			if rate := float64(hits) / float64(probes); rate > bound {
				t.Errorf("f=%d: rate %.5f%% above %.3f%%", f, 100*rate, 100*bound)
			}
		}
	}
}

// TestCuckooFull: Add succeeds until the victim slot is used, then fails
// without changing anything; every stored key is found; a Delete makes room.
func TestCuckooFull(t *testing.T) {
	for _, f := range []int{4, 8, 12, 16, 32} {
		c := NewCuckooFilterWithBits(1024, f)
		var kb keyBuf
		n := 0
		for c.Add(kb.present(n)) {
			n++
		}
		load := float64(n) / float64(c.Capacity())
		if load < 0.9 || !c.victim.used || c.Count() != uint64(n) {
			t.Fatalf("f=%d: full at %d keys (load %.3f), victim %v, count %d", f, n, load, c.victim.used, c.Count())
		}
		t.Logf("f=%d: full at load %.4f", f, load)
		if c.Add(kb.present(n + 1)) {
			t.Fatal("Add to a full filter succeeded")
		}
		for i := 0; i < n; i++ {
			if !c.Contains(kb.present(i)) {
				t.Fatalf("f=%d: key %d lost", f, i)
			}
		}
		// Delete the key in the victim slot itself, or any other: either
		// way the filter takes keys again.
		if !c.Delete(kb.present(n / 2)) {
			t.Fatal("Delete of a stored key failed")
		}
		if c.Count() != uint64(n-1) {
			t.Fatalf("Count = %d after Delete, want %d", c.Count(), n-1)
		}
		for i := 0; i < n; i++ {
			if i != n/2 && !c.Contains(kb.present(i)) {
				t.Fatalf("f=%d: key %d lost after Delete", f, i)
			}
		}
		if !c.victim.used && !c.Add(kb.present(n/2)) {
			t.Fatal("Add after a Delete freed the victim slot failed")
		}
	}
}

// TestCuckooModel: random adds and deletes against a multiset; deletes
// leave every remaining key found, and the count matches.
func TestCuckooModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, f := range []int{8, 16} {
		c := NewCuckooFilterWithBits(4000, f)
		model := map[string]int{}
		var keys []string
		total := 0
		for op := 0; op < 30_000; op++ {
			if len(keys) == 0 || (rng.IntN(2) == 0 && total < 3500) {
				k := string(randKey(rng))
				if rng.IntN(5) == 0 && len(keys) > 0 {
					k = keys[rng.IntN(len(keys))]
				}
				if model[k] >= 8 {
					continue // a ninth copy would not fit in its two buckets
				}
				if !c.Add([]byte(k)) {
					t.Fatalf("f=%d: Add failed at %d keys", f, total)
				}
				if model[k] == 0 {
					keys = append(keys, k)
				}
				model[k]++
				total++
			} else {
				i := rng.IntN(len(keys))
				k := keys[i]
				if !c.Delete([]byte(k)) {
					t.Fatalf("f=%d: Delete(%x) of a present key failed", f, k)
				}
				total--
				if model[k]--; model[k] == 0 {
					keys[i] = keys[len(keys)-1]
					keys = keys[:len(keys)-1]
					delete(model, k)
				}
			}
			if c.Count() != uint64(total) {
				t.Fatalf("Count = %d, want %d", c.Count(), total)
			}
		}
		for k := range model {
			if !c.Contains([]byte(k)) {
				t.Fatalf("f=%d: false negative for %x", f, k)
			}
		}
		// Deleting everything empties the table.
		for k, n := range model {
			for ; n > 0; n-- {
				if !c.Delete([]byte(k)) {
					t.Fatalf("f=%d: final Delete(%x) failed", f, k)
				}
			}
		}
		if c.Count() != 0 {
			t.Fatalf("Count = %d after deleting all", c.Count())
		}
		if data, _ := c.MarshalBinary(); bytes.Count(data[17:], []byte{0}) != len(data)-17 {
			t.Fatal("slots not empty after deleting every key")
		}
	}
}

// TestCuckooSizing: buckets are a power of two, doubled past 96% load;
// fingerprint bits are clamped.
func TestCuckooSizing(t *testing.T) {
	for _, tc := range []struct {
		capacity, slots uint64
		f, bits, bytes  int
	}{
		{0, 4, 16, 16, 8},
		{1, 4, 0, 4, 4},
		{4, 8, 8, 8, 8}, // 4 keys in 4 slots is past 96%
		{5, 8, 8, 8, 8},
		{1000, 2048, 12, 12, 4096},
		{1 << 20, 1 << 21, 16, 16, 1 << 22},
		{1000000, 1 << 20, 40, 32, 1 << 22},
	} {
		c := NewCuckooFilterWithBits(tc.capacity, tc.f)
		if c.Capacity() != tc.slots || c.FingerprintBits() != tc.bits || c.SizeInBytes() != uint64(tc.bytes) {
			t.Errorf("(%d, %d): %d slots, %d bits, %d bytes; want %d %d %d", tc.capacity, tc.f,
				c.Capacity(), c.FingerprintBits(), c.SizeInBytes(), tc.slots, tc.bits, tc.bytes)
		}
	}
	if c := NewCuckooFilter(100); c.FingerprintBits() != 16 {
		t.Error("default fingerprint is not 16 bits")
	}
	// The two buckets of a fingerprint lead to each other.
	c := NewCuckooFilter(1 << 16)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 10000; i++ {
		i1, fp := c.hash(rng.Uint64())
		if fp == 0 || uint64(fp) > c.fpRange || c.alt(c.alt(i1, fp), fp) != i1 {
			t.Fatalf("hash %d %d", i1, fp)
		}
	}
}

// TestCuckooMarshal: round trips (with and without a victim) keep every
// answer and the count; bad encodings are errors that leave the target
// unchanged.
func TestCuckooMarshal(t *testing.T) {
	for _, f := range []int{6, 8, 16, 24} {
		c := NewCuckooFilterWithBits(200, f)
		var kb keyBuf
		n := 0
		for n < 150 && c.Add(kb.present(n)) {
			n++
		}
		for full := 0; full < 2; full++ {
			if full == 1 {
				for c.Add(kb.present(n)) {
					n++
				}
			}
			data, err := c.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var d CuckooFilter
			if err := d.UnmarshalBinary(data); err != nil {
				t.Fatalf("f=%d: %v", f, err)
			}
			if d.Count() != c.Count() || d.Capacity() != c.Capacity() || d.victim != c.victim {
				t.Fatalf("f=%d: round trip changed count, capacity or victim", f)
			}
			for i := 0; i < 2*n; i++ {
				if d.Contains(kb.present(i)) != c.Contains(kb.present(i)) {
					t.Fatalf("f=%d: round trip changed the answer for %q", f, kb)
				}
			}
			if again, _ := d.MarshalBinary(); !bytes.Equal(again, data) {
				t.Fatal("re-encoding differs")
			}
			for i := 0; i < len(data); i++ {
				if err := d.UnmarshalBinary(data[:i]); !errors.Is(err, ErrInvalidEncoding) {
					t.Fatalf("%d bytes: %v", i, err)
				}
			}
			set := func(g func(d []byte)) []byte { d := bytes.Clone(data); g(d); return d }
			cases := map[string][]byte{
				"tag":       set(func(d []byte) { d[0] = 'B' }),
				"version":   set(func(d []byte) { d[1] = 9 }),
				"f=3":       set(func(d []byte) { d[2] = 3 }),
				"f=33":      set(func(d []byte) { d[2] = 33 }),
				"log=33":    set(func(d []byte) { d[3] = 33 }),
				"log+1":     set(func(d []byte) { d[3]++ }),
				"victim=2":  set(func(d []byte) { d[4] = 2 }),
				"extra":     append(bytes.Clone(data), make([]byte, slotWidth(f))...),
				"vbucket":   set(func(d []byte) { binary.LittleEndian.PutUint64(d[5:], 1<<40) }),
				"vfp wide":  set(func(d []byte) { binary.LittleEndian.PutUint32(d[13:], 1<<f) }),
				"slot wide": set(func(d []byte) { d[len(d)-1] = 0xff }),
			}
			if f%8 == 0 {
				delete(cases, "slot wide") // every value of a full-width slot is valid
			}
			for name, b := range cases {
				if err := d.UnmarshalBinary(b); !errors.Is(err, ErrInvalidEncoding) {
					t.Errorf("f=%d full=%d %s: %v", f, full, name, err)
				}
			}
			if again, _ := d.MarshalBinary(); !bytes.Equal(again, data) {
				t.Fatal("a failed UnmarshalBinary changed the filter")
			}
		}
	}
}

// TestCuckooNinthCopy: a key can be stored eight times (the slots of its
// two buckets); the ninth Insert is refused with ErrTooManyCopies without
// filling the victim slot, so other keys can still be added; eight Deletes
// remove it. With one bucket (both of a key's buckets the same) the limit
// is four, and the filter fills only when another key needs the slots.
func TestCuckooNinthCopy(t *testing.T) {
	for _, bits := range []int{8, 16, 32} {
		c := NewCuckooFilterWithBits(1000, bits)
		key := []byte("again")
		for round := 0; round < 2; round++ {
			for i := 0; i < 8; i++ {
				if err := c.Insert(key); err != nil {
					t.Fatalf("f=%d: copy %d refused: %v", bits, i+1, err)
				}
			}
			if err := c.Insert(key); !errors.Is(err, ErrTooManyCopies) || c.victim.used || c.Count() != 8 {
				t.Fatalf("f=%d: a ninth copy: %v, victim slot used %v, count %d", bits, err, c.victim.used, c.Count())
			}
			if c.Add(key) {
				t.Fatalf("f=%d: Add of a ninth copy returned true", bits)
			}
			if round == 1 {
				break
			}
			for i := 0; i < 8; i++ {
				if !c.Delete(key) {
					t.Fatalf("f=%d: delete %d of the key failed", bits, i+1)
				}
			}
			if c.Delete(key) || c.Contains(key) || c.Count() != 0 {
				t.Fatalf("f=%d: copies left after eight deletes", bits)
			}
		}
		for i := 0; i < 500; i++ {
			if err := c.Insert([]byte(fmt.Sprintf("other-%d", i))); err != nil {
				t.Fatalf("f=%d: the filter refuses other keys after a refused ninth copy (key %d): %v", bits, i, err)
			}
		}
	}

	one := NewCuckooFilter(1) // one bucket of four slots
	if one.Capacity() != cuckooBucketSize {
		t.Fatalf("capacity %d, want one bucket", one.Capacity())
	}
	for i := 0; i < cuckooBucketSize; i++ {
		if err := one.Insert([]byte("k")); err != nil {
			t.Fatalf("one bucket: copy %d: %v", i+1, err)
		}
	}
	if err := one.Insert([]byte("k")); !errors.Is(err, ErrTooManyCopies) || one.victim.used {
		t.Fatalf("one bucket: a fifth copy: %v, victim used %v", err, one.victim.used)
	}
	// Another key is stored, in the victim slot if need be; then the
	// filter is full.
	other := []byte("other")
	if err := one.Insert(other); err != nil || !one.Contains(other) || !one.Contains([]byte("k")) {
		t.Fatalf("one bucket: another key: %v", err)
	}
	if err := one.Insert([]byte("third")); !errors.Is(err, ErrFull) {
		t.Fatalf("one bucket after five keys: %v, want ErrFull", err)
	}
	third := []byte("third")
	if a := testing.AllocsPerRun(100, func() { one.Add(third) }); a != 0 {
		t.Errorf("a refused Add allocates %v times", a)
	}
}
