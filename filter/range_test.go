package filter

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var rangeFPRLong = flag.Bool("range_fpr_long", false, "TestGrafiteRangeFPR measures 1,000,000 ranges per cell instead of 20,000")

// buildGrafite builds a filter of keys (sorted, possibly repeated) at bits
// per key.
func buildGrafite(bitsPerKey int, keys [][]byte) []byte {
	b := NewGrafiteRangePolicy(bitsPerKey).NewBuilder()
	for _, k := range keys {
		b.AddKey(k)
	}
	return b.Finish(nil)
}

// rangeHolds reports whether sorted keys hold a key in [lo, hi).
func rangeHolds(keys [][]byte, lo, hi []byte) bool {
	i, _ := slices.BinarySearchFunc(keys, lo, bytes.Compare)
	return i < len(keys) && bytes.Compare(keys[i], hi) < 0
}

// rangeKeySet is a named generator of sorted key sets.
type rangeKeySet struct {
	name string
	gen  func(rng *rand.Rand, n int) [][]byte
}

var rangeKeySets = []rangeKeySet{
	{"random", func(rng *rand.Rand, n int) [][]byte {
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = randBytes(rng, rng.IntN(20))
		}
		return keys
	}},
	{"sequential", func(rng *rand.Rand, n int) [][]byte {
		keys := make([][]byte, n)
		start := rng.IntN(1_000_000)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "%016d", start+i*(1+rng.IntN(3)))
		}
		return keys
	}},
	{"longprefix", func(rng *rand.Rand, n int) [][]byte {
		prefix := strings.Repeat("tenant/0042/table/", 3)
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = append([]byte(prefix), randBytes(rng, rng.IntN(12))...)
		}
		return keys
	}},
	{"lengths", func(rng *rand.Rand, n int) [][]byte {
		// Keys that are prefixes of each other, with zero bytes at the
		// end: the zero padding of the integer mapping's worst case.
		keys := make([][]byte, n)
		for i := range keys {
			k := make([]byte, rng.IntN(14))
			for j := range k {
				k[j] = []byte{0, 0, 1, 'a', 0xff}[rng.IntN(5)]
			}
			keys[i] = k
		}
		return keys
	}},
	{"withempty", func(rng *rand.Rand, n int) [][]byte {
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = randBytes(rng, rng.IntN(4))
		}
		if n > 0 {
			keys[0] = []byte{}
		}
		return keys
	}},
	{"decimal", func(rng *rand.Rand, n int) [][]byte {
		// kvbench's keys with --prefix_size 8: 16 decimal digits, more
		// than 8 bytes after the common prefix.
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "%08d%08d", rng.IntN(100_000), rng.IntN(100))
		}
		return keys
	}},
	{"uint64", func(rng *rand.Rand, n int) [][]byte {
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = binary.BigEndian.AppendUint64(nil, rng.Uint64())
		}
		return keys
	}},
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// rangeProbes returns bounds near keys and away from them: each key, the
// key with a zero byte appended, the key with its last byte moved by one,
// its prefixes, and random strings.
func rangeProbes(rng *rand.Rand, keys [][]byte, n int) [][]byte {
	probes := [][]byte{{}, {0}, {0xff}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	for len(probes) < n {
		if len(keys) == 0 || rng.IntN(5) == 0 {
			probes = append(probes, randBytes(rng, rng.IntN(20)))
			continue
		}
		k := keys[rng.IntN(len(keys))]
		switch rng.IntN(6) {
		case 0:
			probes = append(probes, k)
		case 1:
			probes = append(probes, append(slices.Clip(k), 0))
		case 2, 3:
			p := slices.Clone(k)
			if len(p) > 0 {
				p[len(p)-1] += byte(1 - 2*rng.IntN(2))
			}
			probes = append(probes, p)
		case 4:
			probes = append(probes, k[:rng.IntN(len(k)+1)])
		case 5:
			probes = append(probes, append(slices.Clone(k), randBytes(rng, 1+rng.IntN(9))...))
		}
	}
	return probes
}

// TestGrafiteRangeNoFalseNegatives: for key sets of every kind and size, every
// range that holds a key says true, at every bits per key.
func TestGrafiteRangeNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ks := range rangeKeySets {
		for _, n := range []int{0, 1, 2, 100, 10_000} {
			keys := ks.gen(rng, n)
			slices.SortFunc(keys, bytes.Compare)
			if n == 100 {
				// Repeats, as a table's entries repeat user keys.
				keys = append(keys, keys[:30]...)
				slices.SortFunc(keys, bytes.Compare)
			}
			for _, bpk := range []int{1, 4, 10, 16, 40} {
				p := NewGrafiteRangePolicy(bpk)
				f := buildGrafite(bpk, keys)
				if _, st := grafiteDecode(f); st == grafiteBad {
					t.Fatalf("%s n=%d bits=%d: the builder's filter does not decode", ks.name, n, bpk)
				}
				probes := rangeProbes(rng, keys, 300)
				var holds, fp, empty int
				for _, lo := range probes {
					for j := 0; j < 20; j++ {
						hi := probes[rng.IntN(len(probes))]
						if bytes.Compare(lo, hi) >= 0 {
							continue
						}
						got := p.MayContainRange(f, lo, hi)
						if rangeHolds(keys, lo, hi) {
							holds++
							if !got {
								t.Fatalf("%s n=%d bits=%d: false negative for [%q, %q)", ks.name, n, bpk, lo, hi)
							}
						} else {
							empty++
							if got {
								fp++
							}
						}
					}
				}
				// Every key in its own smallest range.
				for _, k := range keys {
					if !p.MayContainRange(f, k, append(slices.Clip(k), 0)) {
						t.Fatalf("%s n=%d bits=%d: false negative for key %q", ks.name, n, bpk, k)
					}
				}
				if n == 0 && fp > 0 {
					t.Errorf("%s: the empty filter said true to %d ranges", ks.name, fp)
				}
				if bpk == 16 && n == 10_000 {
					t.Logf("%-10s n=%5d bits=%2d: %5d ranges holding keys, %5d empty, %4d false positives, %.2f bits/key",
						ks.name, n, bpk, holds, empty, fp, float64(8*len(f))/float64(n))
				}
			}
		}
	}
}

// TestGrafiteRangeExhaustive checks every range over a small alphabet of short
// strings against random subsets of them: the edges of the integer
// mapping (zero bytes, the empty key, keys that are prefixes of others).
func TestGrafiteRangeExhaustive(t *testing.T) {
	var all [][]byte
	var gen func(prefix []byte)
	gen = func(prefix []byte) {
		all = append(all, prefix)
		if len(prefix) == 3 {
			return
		}
		for _, c := range []byte{0, 1, 0xff} {
			gen(append(slices.Clip(prefix), c))
		}
	}
	gen([]byte{})
	slices.SortFunc(all, bytes.Compare)
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 300; trial++ {
		var keys [][]byte
		for _, s := range all {
			if rng.IntN(8) == 0 {
				keys = append(keys, s)
			}
		}
		bpk := []int{4, 8, 16}[trial%3]
		p := NewGrafiteRangePolicy(bpk)
		f := buildGrafite(bpk, keys)
		for _, lo := range all {
			for _, hi := range all {
				got := p.MayContainRange(f, lo, hi)
				if rangeHolds(keys, lo, hi) && !got {
					t.Fatalf("keys %q bits %d: false negative for [%q, %q)", keys, bpk, lo, hi)
				}
				if bytes.Compare(lo, hi) >= 0 && got {
					t.Fatalf("keys %q: true for the empty range [%q, %q)", keys, lo, hi)
				}
			}
		}
	}
}

// TestGrafiteRangeBuilderReuse: Finish resets the builder, and a builder's
// second filter equals a fresh builder's.
func TestGrafiteRangeBuilderReuse(t *testing.T) {
	p := NewGrafiteRangePolicy(12)
	b := p.NewBuilder()
	for _, k := range []string{"apple", "apricot", "banana"} {
		b.AddKey([]byte(k))
	}
	first := b.Finish(nil)
	keys := [][]byte{[]byte("k1"), []byte("k2"), []byte("k3")}
	for _, k := range keys {
		b.AddKey(k)
	}
	second := b.Finish([]byte("dst"))
	if want := append([]byte("dst"), buildGrafite(12, keys)...); !bytes.Equal(second, want) {
		t.Fatalf("reused builder wrote %x, want %x", second, want)
	}
	if !p.MayContainRange(first, []byte("apple"), []byte("apple\x00")) {
		t.Fatal("false negative in the first filter")
	}
	if p.MayContainRange(second[3:], []byte("apple"), []byte("apple\x00")) {
		t.Fatal("the second filter kept the first's keys")
	}
	empty := b.Finish(nil)
	if p.MayContainRange(empty, []byte("a"), []byte("z")) {
		t.Fatal("a filter of no keys said true")
	}
}

// TestGrafiteRangeMalformed: truncations and corruptions of a valid filter say
// true or at least do not panic; the arrays' lengths must be exact.
func TestGrafiteRangeMalformed(t *testing.T) {
	p := NewGrafiteRangePolicy(16)
	rng := rand.New(rand.NewPCG(5, 6))
	keys := rangeKeySets[0].gen(rng, 1000)
	slices.SortFunc(keys, bytes.Compare)
	f := buildGrafite(16, keys)
	lo, hi := []byte("a"), []byte("b")
	for n := 0; n < len(f); n++ {
		if !p.MayContainRange(f[:n], lo, hi) {
			t.Fatalf("filter truncated to %d of %d bytes said false", n, len(f))
		}
	}
	if !p.MayContainRange(append(slices.Clone(f), 0), lo, hi) {
		t.Fatal("filter with a byte appended said false")
	}
	for i := 0; i < 2000; i++ {
		g := slices.Clone(f)
		g[rng.IntN(len(g))] ^= byte(1 + rng.IntN(255))
		p.MayContainRange(g, lo, hi)
		p.MayContainRange(g, keys[rng.IntN(len(keys))], []byte{0xff})
	}
	if !p.MayContainRange([]byte{grafiteMatchAll}, lo, hi) {
		t.Fatal("the match-all filter said false")
	}
}

func TestGrafiteRangeNoAllocs(t *testing.T) {
	p := NewGrafiteRangePolicy(16)
	rng := rand.New(rand.NewPCG(7, 8))
	keys := rangeKeySets[2].gen(rng, 1000)
	slices.SortFunc(keys, bytes.Compare)
	f := buildGrafite(16, keys)
	lo, hi := keys[10], keys[11]
	if a := testing.AllocsPerRun(100, func() { p.MayContainRange(f, lo, hi) }); a != 0 {
		t.Fatalf("MayContainRange allocates %v times", a)
	}
}

// TestGrafiteMapMonotone checks the key mapping's contract on key sets of
// every kind: for every table key k and probe q, k < q gives f(k) <= f(q)
// and k > q gives f(k) >= f(q), and a tight f(q) is shared by no table key
// below q.
func TestGrafiteMapMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, set := range rangeKeySets {
		for _, n := range []int{1, 2, 10, 300} {
			keys := set.gen(rng, n)
			slices.SortFunc(keys, bytes.Compare)
			f := buildGrafite(12, keys)
			v, status := grafiteDecode(f)
			if status != grafiteOK {
				t.Fatalf("%s, %d keys: status %d", set.name, n, status)
			}
			fk := make([]uint64, len(keys))
			for i, k := range keys {
				fk[i], _ = v.mapKey(k)
			}
			for _, q := range rangeProbes(rng, keys, 200) {
				fq, tight := v.mapKey(q)
				for i, k := range keys {
					switch c := bytes.Compare(k, q); {
					case c < 0 && fk[i] > fq, c > 0 && fk[i] < fq:
						t.Fatalf("%s: key %q -> %d, probe %q -> %d: not monotone", set.name, k, fk[i], q, fq)
					case c < 0 && tight && fk[i] == fq:
						t.Fatalf("%s: probe %q -> %d tight, but key %q below it maps there too", set.name, q, fq, k)
					}
				}
			}
		}
	}
}

// TestGrafiteDecimalKeys measures the rate on 16-byte decimal keys whose
// common prefix leaves 12 bytes to tell apart, the layout the first
// encoding (8 bytes after the prefix) could not: empty ranges that differ
// from a key only in its last byte must meet the bound. "sparse" keys all
// end in '0', so its ranges [..1, ..9) fall outside the last position's
// digits; "dense" keys use every digit, and its one-integer ranges go
// through the hashed codes.
func TestGrafiteDecimalKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	const bitsPerKey = 16
	p := NewGrafiteRangePolicy(bitsPerKey)
	for _, dense := range []bool{false, true} {
		var keys [][]byte
		for pre := 0; pre < 2000; pre++ {
			for i := 0; i < 10; i++ {
				if dense {
					keys = append(keys, fmt.Appendf(nil, "%08d%08d", 2*pre, rng.IntN(100_000_000)))
				} else {
					keys = append(keys, fmt.Appendf(nil, "%08d%08d", 2*pre, 10*i))
				}
			}
		}
		slices.SortFunc(keys, bytes.Compare)
		keys = slices.CompactFunc(keys, bytes.Equal)
		f := buildGrafite(bitsPerKey, keys)
		fp, q := 0, 0
		for q < 20_000 {
			k := keys[rng.IntN(len(keys))]
			lo, hi := slices.Clone(k), slices.Clone(k)
			if dense {
				if k[15] == '9' {
					continue
				}
				lo[15]++
				hi[15] += 2
			} else {
				lo[15], hi[15] = '1', '9'
			}
			if rangeHolds(keys, lo, hi) {
				continue
			}
			q++
			if p.MayContainRange(f, lo, hi) {
				fp++
			}
		}
		bound := GrafiteFPR(bitsPerKey, 1)
		if limit := fprLimit(q, bound); fp > limit {
			t.Errorf("dense %v: %d false positives in %d empty ranges (%.4f%%), bound %.4f%% (limit %d)", dense, fp, q, 100*float64(fp)/float64(q), 100*bound, limit)
		}
		t.Logf("dense %v: %d false positives in %d empty ranges (%.4f%%), bound %.4f%%", dense, fp, q, 100*float64(fp)/float64(q), 100*bound)
	}
}

func TestGrafiteRangeFPRBound(t *testing.T) {
	for _, c := range []struct {
		bits int
		l    uint64
		want float64
	}{{16, 1, 1.0 / 16384}, {16, 32, 1.0 / 512}, {2, 1, 0.25}, {8, 1 << 20, 1}, {99, 1, 1.0 / (1 << 38)}} {
		if got := GrafiteFPR(c.bits, c.l); got != c.want {
			t.Errorf("GrafiteFPR(%d, %d) = %g, want %g", c.bits, c.l, got, c.want)
		}
	}
}

// fprKeys are integer keys as 8-byte big-endian strings, sorted distinct.
type fprKeys struct {
	name string
	ints []uint64
	keys [][]byte
}

func newFPRKeys(name string, ints []uint64) fprKeys {
	slices.Sort(ints)
	ints = slices.Compact(ints)
	keys := make([][]byte, len(ints))
	for i, x := range ints {
		keys[i] = binary.BigEndian.AppendUint64(nil, x)
	}
	return fprKeys{name, ints, keys}
}

// empty reports whether no key lies in [x, x+l).
func (k *fprKeys) empty(x, l uint64) bool {
	i, _ := slices.BinarySearch(k.ints, x)
	return i == len(k.ints) || k.ints[i]-x >= l
}

// TestGrafiteRangeFPR measures the false positive rate on empty ranges of L
// integers, uniform among the keys or starting right after a key (the
// correlated queries that Grafite is built for), against the bound
// L/2^(B-2): measured must not exceed it by 4 standard errors.
//
//	go test -run TestGrafiteRangeFPR -v ./filter/ [-range_fpr_long]
func TestGrafiteRangeFPR(t *testing.T) {
	queries := 20_000
	if *rangeFPRLong {
		queries = 1_000_000
	}
	rng := rand.New(rand.NewPCG(9, 10))
	const n = 100_000
	uniform := make([]uint64, n)
	for i := range uniform {
		uniform[i] = rng.Uint64()
	}
	// Sequential-ish: runs of consecutive integers and gaps up to 2^20,
	// after a base that gives the keys a common prefix of 3 bytes.
	seq := make([]uint64, n)
	x := uint64(0x0123456700000000)
	for i := range seq {
		if rng.IntN(2) == 0 {
			x++
		} else {
			x += 2 + rng.Uint64N(1<<20)
		}
		seq[i] = x
	}
	sets := []fprKeys{newFPRKeys("uniform", uniform), newFPRKeys("sequential", seq)}
	bitsList := []int{8, 12, 16, 20}
	filters := make([][][]byte, len(sets))
	for si := range sets {
		for _, b := range bitsList {
			f := buildGrafite(b, sets[si].keys)
			filters[si] = append(filters[si], f)
			t.Logf("%-10s bits/key %2d: %d bytes, %.3f bits/key", sets[si].name, b, len(f), float64(8*len(f))/float64(len(sets[si].keys)))
		}
	}
	var tab strings.Builder
	fmt.Fprintf(&tab, "%d empty ranges per cell (correlated: all ranges right after a key, if fewer); false positive rate in %%\n", queries)
	fmt.Fprintf(&tab, "%4s %5s %10s | %10s %10s | %10s %10s\n", "bits", "L", "bound", "unif.rand", "unif.corr", "seq.rand", "seq.corr")
	p := NewGrafiteRangePolicy(16) // any bits per key reads any filter
	for bi, b := range bitsList {
		for l := uint64(1); l <= 1024; l *= 2 {
			bound := GrafiteFPR(b, l)
			fmt.Fprintf(&tab, "%4d %5d %10.5f |", b, l, 100*bound)
			for si := range sets {
				ks := &sets[si]
				f := filters[si][bi]
				lo, hi := ks.ints[0], ks.ints[len(ks.ints)-1]
				for _, correlated := range []bool{false, true} {
					var starts []uint64
					if correlated {
						// Every range starting right after a key, in a
						// random order, taken without replacement.
						for _, k := range ks.ints {
							if k+1+l > k && ks.empty(k+1, l) {
								starts = append(starts, k+1)
							}
						}
						rng.Shuffle(len(starts), func(i, j int) { starts[i], starts[j] = starts[j], starts[i] })
						starts = starts[:min(len(starts), queries)]
					} else {
						for len(starts) < queries {
							if x := lo + rng.Uint64N(hi-lo); x+l > x && ks.empty(x, l) {
								starts = append(starts, x)
							}
						}
					}
					fp := 0
					for _, x := range starts {
						var a, z [8]byte
						binary.BigEndian.PutUint64(a[:], x)
						binary.BigEndian.PutUint64(z[:], x+l)
						if p.MayContainRange(f, a[:], z[:]) {
							fp++
						}
					}
					q := len(starts)
					fmt.Fprintf(&tab, " %10.5f", 100*float64(fp)/float64(q))
					if limit := fprLimit(q, bound); fp > limit {
						t.Errorf("%s bits %d L %d correlated %v: %d false positives in %d ranges (%.5f%%), over the bound %.5f%% + 4 standard errors (%d)",
							ks.name, b, l, correlated, fp, q, 100*float64(fp)/float64(q), 100*bound, limit)
					}
				}
				tab.WriteString(" |")
			}
			tab.WriteString("\n")
		}
	}
	t.Log("\n" + tab.String())
}

// fprLimit returns the most false positives q ranges may give at rate
// bound: bound plus 4 standard errors of q, in ranges. For few expected
// false positives, where the normal approximation is too narrow, it is the
// count with the same one-sided tail probability (3.2e-5) under the
// Poisson distribution of mean q*bound.
func fprLimit(q int, bound float64) int {
	mean := float64(q) * bound
	limit := int(math.Floor(mean + 4*math.Sqrt(mean*(1-bound))))
	if mean > 200 {
		return limit // and exp(-mean) would underflow soon
	}
	const tail = 3.17e-5 // P(Z > 4), Z standard normal
	pmf, cdf := math.Exp(-mean), 0.0
	for k := 0; ; k++ {
		cdf += pmf
		if 1-cdf <= tail {
			return max(limit, k)
		}
		pmf *= mean / float64(k+1)
	}
}

// BenchmarkGrafiteMayContainRange: one op is one query of 16 integers on a
// filter of 100,000 uniform 8-byte keys at 16 bits per key; "empty" ranges
// hold no key, "correlated" start right after a key, "present" hold one.
func BenchmarkGrafiteMayContainRange(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	ints := make([]uint64, 100_000)
	for i := range ints {
		ints[i] = rng.Uint64()
	}
	ks := newFPRKeys("uniform", ints)
	p := NewGrafiteRangePolicy(16)
	f := buildGrafite(16, ks.keys)
	const l = 16
	for _, kind := range []string{"empty", "correlated", "present"} {
		qs := make([][2][8]byte, 1<<14)
		for i := range qs {
			var x uint64
			switch kind {
			case "empty":
				x = rng.Uint64()
			case "correlated":
				x = ks.ints[rng.IntN(len(ks.ints))] + 1
			case "present":
				x = ks.ints[rng.IntN(len(ks.ints))] - l/2
			}
			binary.BigEndian.PutUint64(qs[i][0][:], x)
			binary.BigEndian.PutUint64(qs[i][1][:], x+l)
		}
		b.Run(kind, func(b *testing.B) {
			hits := 0
			for i := 0; b.Loop(); i++ {
				q := &qs[i&(len(qs)-1)]
				if p.MayContainRange(f, q[0][:], q[1][:]) {
					hits++
				}
			}
			b.ReportMetric(float64(hits)/float64(b.N), "true/op")
		})
	}
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			buildGrafite(16, ks.keys)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ks.keys)), "ns/key")
	})
}
