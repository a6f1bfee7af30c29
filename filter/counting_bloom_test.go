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

// TestCountingBloomModel runs random adds and removes against a multiset:
// every key the model holds is always found, and Remove refuses keys the
// filter rules out.
func TestCountingBloomModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for round := 0; round < 10; round++ {
		c := NewCountingBloomFilter(2000, 0.01)
		model := map[string]int{}
		var keys []string
		for op := 0; op < 20_000; op++ {
			switch {
			case len(keys) == 0 || rng.IntN(3) > 0:
				k := string(randKey(rng))
				if rng.IntN(4) == 0 && len(keys) > 0 {
					k = keys[rng.IntN(len(keys))] // a repeat
				}
				c.Add([]byte(k))
				if model[k] == 0 {
					keys = append(keys, k)
				}
				model[k]++
			default:
				i := rng.IntN(len(keys))
				k := keys[i]
				if !c.Remove([]byte(k)) {
					t.Fatalf("Remove(%x) of a present key refused", k)
				}
				if model[k]--; model[k] == 0 {
					keys[i] = keys[len(keys)-1]
					keys = keys[:len(keys)-1]
					delete(model, k)
				}
			}
			if op%1000 == 0 {
				for k := range model {
					if !c.MayContain([]byte(k)) {
						t.Fatalf("op %d: false negative for %x", op, k)
					}
				}
			}
		}
		for k := range model {
			if !c.MayContain([]byte(k)) {
				t.Fatalf("false negative for %x", k)
			}
		}
	}
	c := NewCountingBloomFilter(100, 0.01)
	if c.Remove([]byte("never added")) {
		t.Error("Remove of a key the empty filter rules out succeeded")
	}
}

// TestCountingBloomSaturation: a key added past 15 times saturates its
// counters; removing it as often leaves them saturated, so neither it nor
// any other key becomes a false negative, and counters never wrap.
func TestCountingBloomSaturation(t *testing.T) {
	c := NewCountingBloomFilter(100, 0.01)
	hot := []byte("hot")
	for i := 0; i < 40; i++ {
		c.Add(hot)
	}
	if c.Saturated() != uint64(c.K()) {
		t.Fatalf("%d saturated counters, want %d", c.Saturated(), c.K())
	}
	var kb keyBuf
	for i := 0; i < 100; i++ {
		c.Add(kb.present(i))
	}
	for i := 0; i < 40; i++ {
		c.Remove(hot)
	}
	for i := 0; i < 100; i++ {
		if !c.MayContain(kb.present(i)) {
			t.Fatalf("false negative for %q after removing a saturating key", kb)
		}
	}
	if !c.MayContain(hot) {
		t.Error("saturated counters were counted down")
	}
}

// TestCountingBloomFPR: after adding 2n keys and removing n, the filter
// answers like a Bloom filter of the n that remain (counters are exact
// below saturation), within 10% of theory, at three sizes.
func TestCountingBloomFPR(t *testing.T) {
	for _, n := range []int{1_000, 30_000, 300_000} {
		c := NewCountingBloomFilter(uint64(n), 0.01)
		var kb keyBuf
		for i := 0; i < 2*n; i++ {
			c.Add(kb.present(i))
		}
		for i := 0; i < 2*n; i += 2 {
			if !c.Remove(kb.present(i)) {
				t.Fatalf("n=%d: Remove(%q) refused", n, kb)
			}
		}
		for i := 1; i < 2*n; i += 2 {
			if !c.MayContain(kb.present(i)) {
				t.Fatalf("n=%d: remaining key %q lost", n, kb)
			}
		}
		const probes = 500_000
		hits := 0
		for i := 0; i < probes; i++ {
			if c.MayContain(kb.absent(i)) {
				hits++
			}
		}
		k := float64(c.K())
		theory := math.Pow(-math.Expm1(-k*float64(n)/float64(c.Counters())), k)
		checkRate(t, fmt.Sprintf("n=%d", n), hits, probes, theory)
		if got := c.ApproximateCount(); math.Abs(float64(got)-float64(n)) > 0.03*float64(n) {
			t.Errorf("n=%d: ApproximateCount = %d", n, got)
		}
	}
}

// TestCountingBloomMarshal: round trips keep the counters; bad encodings are
// errors that leave the target unchanged.
func TestCountingBloomMarshal(t *testing.T) {
	c := NewCountingBloomFilter(300, 0.02)
	var kb keyBuf
	for i := 0; i < 300; i++ {
		c.Add(kb.present(i % 200))
	}
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var d CountingBloomFilter
	if err := d.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if !d.Remove(kb.present(i)) || !c.Remove(kb.present(i)) {
			t.Fatal("Remove after round trip")
		}
	}
	x, _ := c.MarshalBinary()
	y, _ := d.MarshalBinary()
	if !bytes.Equal(x, y) {
		t.Fatal("the decoded filter evolves differently")
	}
	if d.K() != c.K() || d.Counters() != c.Counters() || d.SizeInBytes() != c.SizeInBytes() {
		t.Fatal("parameters changed")
	}
	for i := 0; i < len(data); i++ {
		if err := d.UnmarshalBinary(data[:i]); !errors.Is(err, ErrInvalidEncoding) {
			t.Fatalf("%d bytes: %v", i, err)
		}
	}
	set := func(f func(d []byte)) []byte { d := bytes.Clone(data); f(d); return d }
	for name, b := range map[string][]byte{
		"tag":     set(func(d []byte) { d[0] = 'B' }),
		"version": set(func(d []byte) { d[1] = 0 }),
		"k=0":     set(func(d []byte) { d[2] = 0 }),
		"m=0":     set(func(d []byte) { binary.LittleEndian.PutUint64(d[3:], 0) }),
		"m huge":  set(func(d []byte) { binary.LittleEndian.PutUint64(d[3:], math.MaxUint64) }),
		"extra":   append(bytes.Clone(data), 0, 0, 0, 0, 0, 0, 0, 0),
	} {
		if err := d.UnmarshalBinary(b); !errors.Is(err, ErrInvalidEncoding) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if m := c.Counters(); m%16 != 0 {
		past := set(func(d []byte) { d[len(d)-1] |= 0xf0 })
		if err := d.UnmarshalBinary(past); !errors.Is(err, ErrInvalidEncoding) {
			t.Errorf("counter past m: %v", err)
		}
	}
	if again, _ := d.MarshalBinary(); !bytes.Equal(again, y) {
		t.Fatal("a failed UnmarshalBinary changed the filter")
	}
}
