package filter

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// Review 16: the Bloom policy's batch probe (mayContainHashed and
// probeRounds) against per-key MayContain, on every filter shape.

// r16Filter draws a filter: real ones of either probe sequence and many
// bits per key, and hostile ones (empty, one or two bytes, k of 0, 1, 2,
// 30, 31 and 255, random bytes, all zeros and all ones).
func r16Filter(rng *rand.Rand) []byte {
	switch rng.Intn(12) {
	case 0:
		return nil
	case 1:
		return []byte{byte(rng.Intn(256))}
	case 2:
		return []byte{byte(rng.Intn(256)), byte([]int{0, 1, 2, 3, 4, 30, 31, 255}[rng.Intn(8)])}
	case 3, 4, 5:
		var p Policy
		if rng.Intn(2) == 0 {
			p = NewLegacyBloomPolicy(1 + rng.Intn(30))
		} else {
			p = NewBloomPolicy(1 + rng.Intn(30))
		}
		b := p.NewBuilder()
		n := rng.Intn(200)
		for i := 0; i < n; i++ {
			b.AddKey(r16Key(rng.Intn(400)))
		}
		return b.Finish(nil)
	case 6:
		f := make([]byte, 1+rng.Intn(40))
		for i := range f {
			f[i] = 0xff
		}
		f[len(f)-1] = byte(1 + rng.Intn(35))
		return f
	case 7:
		f := make([]byte, 2+rng.Intn(40))
		f[len(f)-1] = byte(rng.Intn(35))
		return f
	default:
		f := make([]byte, rng.Intn(300))
		rng.Read(f)
		if len(f) > 0 && rng.Intn(3) > 0 {
			f[len(f)-1] = byte(rng.Intn(34))
		}
		// Dense random bits, so that many keys reach the later rounds.
		for i := 0; i+1 < len(f) && rng.Intn(2) == 0; i++ {
			f[i] |= byte(rng.Intn(256))
		}
		return f
	}
}

func r16Key(i int) []byte { return []byte(fmt.Sprintf("key-%05d", i)) }

// TestR16BatchOfAgainstMayContain: MayContainHashBatchOf (the rounds with
// which), MayContainHashBatch and MayContainBatch of both Bloom policies
// must equal MayContain key by key, for 1 to 70 filters (the [8] and [64]
// arrays, and the gathered path past 64), which with repeats, batches of
// 1 to 200 keys, and maybe filled with garbage beforehand.
func TestR16BatchOfAgainstMayContain(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	for iter := 0; iter < 4000; iter++ {
		nf := 1 + rng.Intn(10)
		switch rng.Intn(4) {
		case 0:
			nf = 1
		case 1:
			nf = []int{7, 8, 9, 63, 64, 65, 70}[rng.Intn(7)]
		}
		fs := make([][]byte, nf)
		for i := range fs {
			fs[i] = r16Filter(rng)
		}
		nk := 1 + rng.Intn(70)
		if rng.Intn(10) == 0 {
			nk = 64 + rng.Intn(140)
		}
		keys := make([][]byte, nk)
		hs := make([]uint64, nk)
		which := make([]uint8, nk)
		oneOf := rng.Intn(nf) // some batches ask one filter only
		for i := range keys {
			keys[i] = r16Key(rng.Intn(500))
			hs[i] = xxhash.Sum64(keys[i])
			if rng.Intn(3) == 0 {
				which[i] = uint8(oneOf)
			} else {
				which[i] = uint8(rng.Intn(nf))
			}
		}
		for _, legacy := range []bool{false, true} {
			var p Policy = NewBloomPolicy(10)
			if legacy {
				p = NewLegacyBloomPolicy(10)
			}
			hp := p.(HashBatchPolicy)
			maybe := make([]bool, nk)
			for i := range maybe {
				maybe[i] = rng.Intn(2) == 0
			}
			MayContainHashBatchOf(hp, fs, which, hs, maybe)
			for i := range keys {
				if want := p.MayContain(fs[which[i]], keys[i]); maybe[i] != want {
					t.Fatalf("iter %d legacy=%v: MayContainHashBatchOf(%d filters, %d keys)[%d] (filter %d, %d bytes, trailer %v) = %v, MayContain = %v",
						iter, legacy, nf, nk, i, which[i], len(fs[which[i]]), r16Trailer(fs[which[i]]), maybe[i], want)
				}
			}
			// One filter a key.
			per := make([][]byte, nk)
			for i := range per {
				per[i] = fs[which[i]]
			}
			for i := range maybe {
				maybe[i] = rng.Intn(2) == 0
			}
			hp.MayContainHashBatch(per, hs, maybe)
			for i := range keys {
				if want := p.MayContain(per[i], keys[i]); maybe[i] != want {
					t.Fatalf("iter %d legacy=%v: MayContainHashBatch[%d] = %v, MayContain = %v", iter, legacy, i, maybe[i], want)
				}
			}
			for i := range maybe {
				maybe[i] = rng.Intn(2) == 0
			}
			MayContainBatch(p, per, keys, maybe)
			for i := range keys {
				if want := p.MayContain(per[i], keys[i]); maybe[i] != want {
					t.Fatalf("iter %d legacy=%v: MayContainBatch[%d] = %v, MayContain = %v", iter, legacy, i, maybe[i], want)
				}
			}
		}
	}
}

func r16Trailer(f []byte) any {
	if len(f) == 0 {
		return "none"
	}
	return f[len(f)-1]
}

// TestR16BatchMixedPolicyFilters: filters written by the legacy policy
// probed by the v2 policy (and the other way), in one batch with the
// other policy's filters: a reader takes the layout as is, so the batch
// must answer as the reader's MayContain does.
func TestR16BatchMixedPolicyFilters(t *testing.T) {
	rng := rand.New(rand.NewSource(161))
	mk := func(p Policy, n int) []byte {
		b := p.NewBuilder()
		for i := 0; i < n; i++ {
			b.AddKey(r16Key(i * 3))
		}
		return b.Finish(nil)
	}
	fs := [][]byte{
		mk(NewBloomPolicy(10), 100), mk(NewLegacyBloomPolicy(10), 100),
		mk(NewBloomPolicy(2), 50), mk(NewLegacyBloomPolicy(40), 10), mk(NewBloomPolicy(1), 300),
	}
	for iter := 0; iter < 300; iter++ {
		nk := 1 + rng.Intn(64)
		keys, hs, which := make([][]byte, nk), make([]uint64, nk), make([]uint8, nk)
		for i := range keys {
			keys[i] = r16Key(rng.Intn(400))
			hs[i] = xxhash.Sum64(keys[i])
			which[i] = uint8(rng.Intn(len(fs)))
		}
		for _, p := range []Policy{NewBloomPolicy(10), NewLegacyBloomPolicy(10)} {
			maybe := make([]bool, nk)
			MayContainHashBatchOf(p.(HashBatchPolicy), fs, which, hs, maybe)
			for i := range keys {
				if want := p.MayContain(fs[which[i]], keys[i]); maybe[i] != want {
					t.Fatalf("%s: batch[%d] = %v, MayContain = %v", p.Name(), i, maybe[i], want)
				}
			}
		}
	}
}

// TestR16BatchOfPresentKeysNoFalseNegative: every key added to a filter
// passes the batch probe, whatever the batch's other filters are.
func TestR16BatchOfPresentKeysNoFalseNegative(t *testing.T) {
	rng := rand.New(rand.NewSource(162))
	for iter := 0; iter < 500; iter++ {
		p := NewBloomPolicy(1 + rng.Intn(30))
		b := p.NewBuilder()
		for i := 0; i < 64; i++ {
			b.AddKey(r16Key(i))
		}
		good := b.Finish(nil)
		nf := 1 + rng.Intn(12)
		fs := make([][]byte, nf)
		for i := range fs {
			fs[i] = r16Filter(rng)
		}
		g := rng.Intn(nf)
		fs[g] = good
		hs, which := make([]uint64, 64), make([]uint8, 64)
		for i := range hs {
			hs[i] = xxhash.Sum64(r16Key(i))
			which[i] = uint8(g)
		}
		maybe := make([]bool, 64)
		MayContainHashBatchOf(p.(HashBatchPolicy), fs, which, hs, maybe)
		for i, m := range maybe {
			if !m {
				t.Fatalf("iter %d: key %d added to filter %d of %d: batch says absent", iter, i, g, nf)
			}
		}
	}
}

// TestR16BatchNoAllocs: the batch probe allocates nothing, with 1, 8, 9
// and 64 filters.
func TestR16BatchNoAllocs(t *testing.T) {
	p := NewBloomPolicy(10).(HashBatchPolicy)
	rng := rand.New(rand.NewSource(163))
	for _, nf := range []int{1, 8, 9, 64} {
		fs := make([][]byte, nf)
		for i := range fs {
			fs[i] = r16Filter(rng)
		}
		hs, which, maybe := make([]uint64, 64), make([]uint8, 64), make([]bool, 64)
		for i := range hs {
			hs[i] = rng.Uint64()
			which[i] = uint8(rng.Intn(nf))
		}
		if a := testing.AllocsPerRun(50, func() { MayContainHashBatchOf(p, fs, which, hs, maybe) }); a != 0 {
			t.Fatalf("%d filters: %v allocations", nf, a)
		}
	}
}

// TestR16BatchOfWhichOutsideFiltersPanics: MayContainHashBatchOf's
// documented contract is that it "panics if ... an index of which is
// outside filters". Was a bug in 926e918 (fixed since): with exactly one filter, probeRounds'
// round one ignores which (the len(arr) == 1 loop reads arr[0] for every
// key), and only keys that pass round one reach arr[which[i]] in round
// two. A key whose which is out of range and whose first probe misses
// filter 0 is silently answered "absent" from a filter that does not
// exist, instead of panicking (the code before 926e918 indexed
// arr[which[i]] for every key in round one and always panicked). The
// fault is filter/bloom.go probeRounds, the `if len(arr) == 1` branch of
// round one. With two filters the same call panics, as documented.
func TestR16BatchOfWhichOutsideFiltersPanics(t *testing.T) {
	p := NewBloomPolicy(10).(HashBatchPolicy)
	// A readable v2 filter with every bit clear: any key fails its first
	// probe.
	zero := make([]byte, 65)
	zero[64] = 6
	h := uint64(0x123456789abcdef)
	if bloomMayContain(zero, h, false) {
		t.Fatal("an all-zero filter lets a key through")
	}
	for _, fs := range [][][]byte{{zero, zero}, {zero}} {
		panicked := func() (p2 bool) {
			defer func() { p2 = recover() != nil }()
			maybe := []bool{true}
			MayContainHashBatchOf(p, fs, []uint8{uint8(len(fs))}, []uint64{h}, maybe)
			return false
		}()
		if !panicked {
			t.Errorf("%d filter(s), which = [%d] (outside filters): MayContainHashBatchOf returned instead of panicking", len(fs), len(fs))
		}
	}
}

// FuzzR16BatchProbe: the batch probe of both policies against
// bloomMayContain, for filters cut from the fuzzer's bytes.
func FuzzR16BatchProbe(f *testing.F) {
	f.Add([]byte{0, 3, 1, 0xff, 0xff, 0xff, 3}, uint64(1), uint8(3))
	f.Add([]byte{}, uint64(0), uint8(1))
	f.Add(make([]byte, 80), uint64(12345), uint8(9))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, nf uint8) {
		rng := rand.New(rand.NewSource(int64(seed)))
		n := 1 + int(nf)%70
		fs := make([][]byte, n)
		for i := range fs {
			if len(data) == 0 {
				break
			}
			a := rng.Intn(len(data) + 1)
			b := a + rng.Intn(len(data)-a+1)
			fs[i] = data[a:b]
		}
		nk := 1 + rng.Intn(130)
		hs, which := make([]uint64, nk), make([]uint8, nk)
		for i := range hs {
			hs[i] = rng.Uint64()
			which[i] = uint8(rng.Intn(n))
		}
		for _, legacy := range []bool{false, true} {
			p := &bloomPolicy{k: 6, bitsPerKey: 10, legacy: legacy}
			maybe := make([]bool, nk)
			MayContainHashBatchOf(p, fs, which, hs, maybe)
			for i := range hs {
				if want := bloomMayContain(fs[which[i]], hs[i], legacy); maybe[i] != want {
					t.Fatalf("legacy=%v: batch[%d] = %v, bloomMayContain = %v", legacy, i, maybe[i], want)
				}
			}
			per := make([][]byte, nk)
			for i := range per {
				per[i] = fs[which[i]]
			}
			p.MayContainHashBatch(per, hs, maybe)
			for i := range hs {
				if want := bloomMayContain(per[i], hs[i], legacy); maybe[i] != want {
					t.Fatalf("legacy=%v: MayContainHashBatch[%d] = %v, bloomMayContain = %v", legacy, i, maybe[i], want)
				}
			}
		}
	})
}

// TestR16ProbeRoundsOver64KeysPanics: the rounds' lists hold 64 keys, and
// every caller splits its batch; a call with more panics rather than
// wrap around the lists and answer wrongly.
func TestR16ProbeRoundsOver64KeysPanics(t *testing.T) {
	p := NewBloomPolicy(10).(*bloomPolicy)
	b := p.NewBuilder()
	b.AddKey([]byte("k"))
	f := b.Finish(nil)
	for _, n := range []int{64, 65} {
		hs, which, ms := make([]uint64, n), make([]uint8, n), make([]bool, n)
		panicked := func() (r bool) {
			defer func() { r = recover() != nil }()
			p.mayContainHashed([][]byte{f}, which, hs, ms)
			return false
		}()
		if panicked != (n > 64) {
			t.Fatalf("%d keys: panicked %v", n, panicked)
		}
	}
}
