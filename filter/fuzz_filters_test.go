package filter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// policyFuzzSeeds adds real filters of p (0, 1, 2 and 50 keys), their
// truncations and edge cases.
func policyFuzzSeeds(f *testing.F, p Policy) {
	for _, n := range []int{0, 1, 2, 50} {
		b := p.NewBuilder()
		for i := 0; i < n; i++ {
			b.AddKey([]byte{byte(i), 'k'})
		}
		real := b.Finish(nil)
		f.Add(real, []byte{0, 'k'})
		f.Add(real, []byte("absent"))
		f.Add(real[:len(real)-1], []byte{1, 'k'})
		f.Add(real[1:], []byte{1, 'k'})
	}
	f.Add([]byte{}, []byte("k"))
	f.Add([]byte{6}, []byte(""))
}

// checkPolicyFuzz: MayContain never panics, answers true for a filter that
// readable says it cannot read, and a filter built from the two inputs has
// no false negative.
func checkPolicyFuzz(t *testing.T, p Policy, readable func([]byte) bool, filter, key []byte) {
	if got := p.MayContain(filter, key); !got && !readable(filter) {
		t.Fatalf("unreadable filter %x: MayContain = false", filter)
	}
	b := p.NewBuilder()
	b.AddKey(filter)
	b.AddKey(key)
	b.AddKey(filter)
	built := b.Finish(nil)
	if !p.MayContain(built, key) || !p.MayContain(built, filter) {
		t.Fatalf("false negative in filter %x built from %q and %q", built, filter, key)
	}
}

func blockedReadable(f []byte) bool {
	n := len(f) - 1
	return n >= 64 && n%64 == 0 && f[n] >= 1 && f[n] <= MaxProbes
}

func FuzzBlockedBloomMayContain(f *testing.F) {
	p := NewBlockedBloomPolicy(10)
	policyFuzzSeeds(f, p)
	f.Add(append(make([]byte, 64), 31), []byte("k"))
	f.Add(append(make([]byte, 64), 0), []byte("k"))
	f.Fuzz(func(t *testing.T, filter, key []byte) { checkPolicyFuzz(t, p, blockedReadable, filter, key) })
}

func fuseReadable(f []byte) bool {
	n := len(f) - fuseTrailerLen
	if n < 0 {
		return false
	}
	t := f[n:]
	segCount := uint64(binary.LittleEndian.Uint32(t[8:]))
	segLog, fpBits := uint(t[12]), uint64(t[13])
	if t[14] != fuseVersion || segLog < 1 || segLog > fuseMaxSegLog || (fpBits != 8 && fpBits != 16) {
		return false
	}
	if segCount == 0 {
		return n == 0
	}
	return uint64(n) == (segCount+2)<<segLog*(fpBits/8)
}

func FuzzBinaryFuseMayContain(f *testing.F) {
	p8, p16 := NewBinaryFusePolicy(8), NewBinaryFusePolicy(16)
	policyFuzzSeeds(f, p8)
	policyFuzzSeeds(f, p16)
	f.Fuzz(func(t *testing.T, filter, key []byte) {
		checkPolicyFuzz(t, p8, fuseReadable, filter, key)
		checkPolicyFuzz(t, p16, fuseReadable, filter, key)
	})
}

// marshalFuzzSeeds adds the encodings of filters in several states, their
// truncations, and a few corrupted headers.
func marshalFuzzSeeds(f *testing.F, encodings ...[]byte) {
	for _, e := range encodings {
		f.Add(e, []byte("k1"))
		f.Add(e[:len(e)/2], []byte("k2"))
		bad := bytes.Clone(e)
		bad[len(bad)/3] ^= 0x80
		f.Add(bad, []byte("k3"))
	}
	f.Add([]byte{}, []byte("k"))
}

func mustMarshal(b interface{ MarshalBinary() ([]byte, error) }) []byte {
	data, err := b.MarshalBinary()
	if err != nil {
		panic(err)
	}
	return data
}

// checkCanonical: a decoded filter encodes back to exactly the bytes it
// came from.
func checkCanonical(t *testing.T, data []byte, b interface{ MarshalBinary() ([]byte, error) }) {
	again, err := b.MarshalBinary()
	if err != nil || !bytes.Equal(again, data) {
		t.Fatalf("decoded %x, encodes back to %x (%v)", data, again, err)
	}
}

func FuzzBloomFilterUnmarshal(f *testing.F) {
	a, b := NewBloomFilter(10, 0.01), NewBloomFilter(100, 0.2)
	b.Add([]byte("k1"))
	marshalFuzzSeeds(f, mustMarshal(a), mustMarshal(b))
	f.Fuzz(func(t *testing.T, data, key []byte) {
		var d BloomFilter
		if d.UnmarshalBinary(data) != nil {
			return
		}
		checkCanonical(t, data, &d)
		d.MayContain(key)
		d.ApproximateCount()
		d.ExpectedFPP()
		d.Add(key)
		if !d.MayContain(key) {
			t.Fatal("false negative after Add")
		}
	})
}

func FuzzCountingBloomFilterUnmarshal(f *testing.F) {
	a, b := NewCountingBloomFilter(10, 0.01), NewCountingBloomFilter(30, 0.1)
	for i := 0; i < 20; i++ {
		b.Add([]byte("k1"))
	}
	marshalFuzzSeeds(f, mustMarshal(a), mustMarshal(b))
	f.Fuzz(func(t *testing.T, data, key []byte) {
		var d CountingBloomFilter
		if d.UnmarshalBinary(data) != nil {
			return
		}
		checkCanonical(t, data, &d)
		d.MayContain(key)
		d.ApproximateCount()
		d.Saturated()
		d.Add(key)
		d.Add(key)
		if !d.Remove(key) || !d.MayContain(key) {
			t.Fatal("false negative after Add, Add, Remove")
		}
	})
}

func FuzzCuckooFilterUnmarshal(f *testing.F) {
	a, b, c := NewCuckooFilter(8), NewCuckooFilterWithBits(16, 8), NewCuckooFilterWithBits(4, 20)
	b.Add([]byte("k1"))
	for i := 0; c.Add([]byte{byte(i)}); i++ {
	}
	// Eight copies of k1: its next Insert is ErrTooManyCopies.
	e := NewCuckooFilterWithBits(64, 12)
	for i := 0; i < 2*cuckooBucketSize; i++ {
		e.Add([]byte("k1"))
	}
	marshalFuzzSeeds(f, mustMarshal(a), mustMarshal(b), mustMarshal(c), mustMarshal(e))
	f.Fuzz(func(t *testing.T, data, key []byte) {
		var d CuckooFilter
		if d.UnmarshalBinary(data) != nil {
			return
		}
		checkCanonical(t, data, &d)
		d.Contains(key)
		count, victim := d.Count(), d.victim
		switch err := d.Insert(key); {
		case err == nil:
			if !d.Contains(key) || d.Count() != count+1 {
				t.Fatal("false negative or wrong count after Insert")
			}
			if !d.Delete(key) || d.Count() != count {
				t.Fatal("Delete after Insert failed")
			}
		case errors.Is(err, ErrFull), errors.Is(err, ErrTooManyCopies):
			if d.Count() != count || d.victim != victim {
				t.Fatalf("a refused Insert (%v) changed the filter", err)
			}
			checkCanonical(t, data, &d)
		default:
			t.Fatalf("Insert: %v", err)
		}
	})
}

func FuzzScalableBloomFilterUnmarshal(f *testing.F) {
	a, b := NewScalableBloomFilter(2, 0.1), NewScalableBloomFilter(1, 0.3)
	for i := 0; i < 10; i++ {
		b.Add([]byte{byte(i)})
	}
	// RedisBloom's options: a full non-scaling filter, and other growth.
	full, _ := NewScalableBloomFilterWithOptions(4, 0.1, ScalableOptions{NonScaling: true})
	for i := 0; full.Count() < 4; i++ {
		full.Add([]byte{byte(i)})
	}
	grown, _ := NewScalableBloomFilterWithOptions(1, 0.2, ScalableOptions{Expansion: 3, Tightening: 0.8})
	for i := 0; i < 20; i++ {
		grown.Add([]byte{byte(i)})
	}
	marshalFuzzSeeds(f, mustMarshal(a), mustMarshal(b), mustMarshal(full), mustMarshal(grown))
	f.Fuzz(func(t *testing.T, data, key []byte) {
		var d ScalableBloomFilter
		if d.UnmarshalBinary(data) != nil {
			return
		}
		checkCanonical(t, data, &d)
		d.MayContain(key)
		d.ExpectedFPP()
		count := d.Count()
		added, err := d.Insert(key)
		switch {
		case err == nil && added != (d.Count() == count+1):
			t.Fatalf("Insert reported %v, count %d -> %d", added, count, d.Count())
		case err == nil && !d.MayContain(key):
			t.Fatal("false negative after Insert")
		case err != nil && (!errors.Is(err, ErrFull) || added || d.Count() != count):
			t.Fatalf("Insert: %v, added %v, count %d -> %d", err, added, count, d.Count())
		case err != nil:
			checkCanonical(t, data, &d)
		}
	})
}
