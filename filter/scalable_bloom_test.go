package filter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestScalableBloomGrowth: after 100 times the initial capacity the filter
// has seven stages, has lost no key, and its rate is below fpp and within
// 10% of the rate its stages' fill predicts, at three sizes.
func TestScalableBloomGrowth(t *testing.T) {
	for _, tc := range []struct {
		initial uint64
		fpp     float64
	}{
		{100, 0.05},
		{1_000, 0.01},
		{10_000, 0.01},
	} {
		s := NewScalableBloomFilter(tc.initial, tc.fpp)
		n := int(100 * tc.initial)
		var kb keyBuf
		added := 0
		for i := 0; i < n; i++ {
			if s.Add(kb.present(i)) {
				added++
			}
		}
		// Keys the filter already (falsely) matches are not added again.
		if s.Count() != uint64(added) || float64(added) < float64(n)*(1-tc.fpp) {
			t.Fatalf("initial=%d: Count %d, %d of %d added", tc.initial, s.Count(), added, n)
		}
		if s.Stages() != 7 {
			t.Errorf("initial=%d: %d stages after 100x, want 7", tc.initial, s.Stages())
		}
		for i := 0; i < n; i++ {
			if !s.MayContain(kb.present(i)) {
				t.Fatalf("initial=%d: false negative for %q", tc.initial, kb)
			}
		}
		probes := 1_000_000
		hits := 0
		for i := 0; i < probes; i++ {
			if s.MayContain(kb.absent(i)) {
				hits++
			}
		}
		what := fmt.Sprintf("initial=%d fpp=%v", tc.initial, tc.fpp)
		checkRate(t, what, hits, probes, s.ExpectedFPP())
		if rate := float64(hits) / float64(probes); rate >= tc.fpp || s.ExpectedFPP() >= tc.fpp {
			t.Errorf("%s: rate %.4f%% (expected %.4f%%) not below fpp", what, 100*rate, 100*s.ExpectedFPP())
		}
	}
}

// TestScalableBloomStages: each stage doubles the capacity and halves the
// rate, and a full stage meets its rate exactly.
func TestScalableBloomStages(t *testing.T) {
	s := NewScalableBloomFilter(1000, 0.01)
	sum := 0.0
	for i := 0; i < 10; i++ {
		if got := s.stageCapacity(i); got != 1000<<i {
			t.Errorf("stage %d capacity %d", i, got)
		}
		p := s.stageFPP(i)
		if want := 0.0045 / math.Pow(2, float64(i)); math.Abs(p-want) > 1e-15 {
			t.Errorf("stage %d fpp %v, want %v", i, p, want)
		}
		m, k := s.stageSizing(i)
		full := EstimateFPR(float64(m)/float64(s.stageCapacity(i)), k)
		if full > p || full < p*0.999 {
			t.Errorf("stage %d: m=%d k=%d gives %v at capacity, want %v", i, m, k, full, p)
		}
		sum += p
	}
	if sum >= 0.009 {
		t.Errorf("stage rates sum to %v", sum)
	}
	if NewScalableBloomFilter(0, 0).Stages() != 1 {
		t.Error("clamped arguments")
	}
	// Repeats do not use up capacity.
	s = NewScalableBloomFilter(10, 0.01)
	for i := 0; i < 1000; i++ {
		s.Add([]byte("same"))
	}
	if s.Count() != 1 || s.Stages() != 1 {
		t.Errorf("repeats: count %d, %d stages", s.Count(), s.Stages())
	}
}

// TestScalableBloomMarshal: round trips keep stages, counts and answers;
// bad encodings are errors that leave the target unchanged.
func TestScalableBloomMarshal(t *testing.T) {
	s := NewScalableBloomFilter(50, 0.02)
	var kb keyBuf
	for i := 0; i < 400; i++ {
		s.Add(kb.present(i))
	}
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var d ScalableBloomFilter
	if err := d.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if d.Stages() != s.Stages() || d.Count() != s.Count() || d.SizeInBytes() != s.SizeInBytes() {
		t.Fatal("round trip changed the shape")
	}
	for i := 0; i < 1000; i++ {
		if d.MayContain(kb.present(i)) != s.MayContain(kb.present(i)) {
			t.Fatalf("round trip changed the answer for %q", kb)
		}
	}
	// Both keep growing the same way.
	for i := 400; i < 1000; i++ {
		if d.Add(kb.present(i)) != s.Add(kb.present(i)) {
			t.Fatal("the decoded filter grows differently")
		}
	}
	x, _ := s.MarshalBinary()
	y, _ := d.MarshalBinary()
	if !bytes.Equal(x, y) {
		t.Fatal("re-encodings differ")
	}
	for i := 0; i < len(x); i++ {
		if err := d.UnmarshalBinary(x[:i]); !errors.Is(err, ErrInvalidEncoding) {
			t.Fatalf("%d bytes: %v", i, err)
		}
	}
	set := func(f func(d []byte)) []byte { d := bytes.Clone(x); f(d); return d }
	for name, b := range map[string][]byte{
		"tag":         set(func(d []byte) { d[0] = 'B' }),
		"version":     set(func(d []byte) { d[1] = 3 }),
		"fpp 0":       set(func(d []byte) { binary.LittleEndian.PutUint64(d[2:], 0) }),
		"fpp NaN":     set(func(d []byte) { binary.LittleEndian.PutUint64(d[2:], math.Float64bits(math.NaN())) }),
		"fpp other":   set(func(d []byte) { binary.LittleEndian.PutUint64(d[2:], math.Float64bits(0.03)) }),
		"initial 0":   set(func(d []byte) { binary.LittleEndian.PutUint64(d[10:], 0) }),
		"initial + 1": set(func(d []byte) { d[10]++ }),
		"stages 0":    set(func(d []byte) { d[18] = 0 }),
		"stages 49":   set(func(d []byte) { d[18] = 49 }),
		"stages + 1":  set(func(d []byte) { d[18]++ }),
		"stages - 1":  set(func(d []byte) { d[18]-- }),
		"count big":   set(func(d []byte) { binary.LittleEndian.PutUint64(d[19:], 51) }),
		"extra":       append(bytes.Clone(x), 0),
	} {
		if err := d.UnmarshalBinary(b); !errors.Is(err, ErrInvalidEncoding) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if again, _ := d.MarshalBinary(); !bytes.Equal(again, y) {
		t.Fatal("a failed UnmarshalBinary changed the filter")
	}
}

// TestScalableOptions: RedisBloom's options. A non-scaling filter takes its
// capacity and then refuses with ErrFull; other expansions and ratios keep
// the compound rate under fpp as the filter grows; bad options are
// ErrInvalidArgument; options survive an encoding round trip.
func TestScalableOptions(t *testing.T) {
	if o := NewScalableBloomFilter(10, 0.01).Options(); o.Expansion != 2 || o.Tightening != 0.5 || o.NonScaling {
		t.Fatalf("default options %+v, want RedisBloom's (2, 0.5, scaling)", o)
	}
	for _, bad := range []ScalableOptions{{Expansion: -1}, {Expansion: MaxScalableExpansion + 1}, {Tightening: 1}, {Tightening: -0.5}, {Tightening: math.NaN()}} {
		if _, err := NewScalableBloomFilterWithOptions(10, 0.01, bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("options %+v: %v, want ErrInvalidArgument", bad, err)
		}
	}

	ns, err := NewScalableBloomFilterWithOptions(1000, 0.01, ScalableOptions{NonScaling: true})
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	var full error
	for i := 0; full == nil; i++ {
		var ok bool
		ok, full = ns.Insert([]byte(fmt.Sprintf("key-%d", i)))
		if ok {
			added++
		}
	}
	if !errors.Is(full, ErrFull) || added != 1000 || ns.Stages() != 1 || ns.Count() != 1000 {
		t.Fatalf("non-scaling: %d added, %d stages, err %v", added, ns.Stages(), full)
	}
	if ns.Add([]byte("one more")) {
		t.Fatal("Add into a full non-scaling filter returned true")
	}
	more := []byte("one more")
	if _, err := ns.Insert(more); !errors.Is(err, ErrFull) {
		t.Fatalf("Insert into a full non-scaling filter: %v", err)
	}
	if a := testing.AllocsPerRun(100, func() { ns.Add(more) }); a != 0 {
		t.Errorf("a refused Add allocates %v times", a)
	}
	// A scaling filter with Expansion 1 fills after MaxScalableStages
	// stages instead of overfilling its last one.
	lin, _ := NewScalableBloomFilterWithOptions(10, 0.01, ScalableOptions{Expansion: 1})
	var linErr error
	for i := 0; linErr == nil && i < 10000; i++ {
		_, linErr = lin.Insert([]byte(fmt.Sprintf("key-%d", i)))
	}
	if !errors.Is(linErr, ErrFull) || lin.Stages() != MaxScalableStages || lin.Count() > 10*MaxScalableStages {
		t.Fatalf("expansion 1: %v after %d keys in %d stages", linErr, lin.Count(), lin.Stages())
	}
	data, _ := ns.MarshalBinary()
	var back ScalableBloomFilter
	if err := back.UnmarshalBinary(data); err != nil || !back.Options().NonScaling {
		t.Fatalf("non-scaling round trip: %v, %+v", err, back.Options())
	}
	if _, err := back.Insert([]byte("one more")); !errors.Is(err, ErrFull) {
		t.Fatalf("decoded full non-scaling filter: %v", err)
	}

	// NonScaling ignores Expansion and Tightening (RedisBloom refuses
	// EXPANSION with NONSCALING): one stage at 0.9·fpp either way.
	a, _ := NewScalableBloomFilterWithOptions(1000, 0.01, ScalableOptions{NonScaling: true, Expansion: 4, Tightening: 0.8})
	b, _ := NewScalableBloomFilterWithOptions(1000, 0.01, ScalableOptions{NonScaling: true})
	if a.SizeInBytes() != b.SizeInBytes() || a.stages[0].k != b.stages[0].k || math.Abs(a.stageFPP(0)-0.009) > 1e-15 {
		t.Errorf("non-scaling stages differ with Expansion and Tightening: %d/%d bytes, k %d/%d", a.SizeInBytes(), b.SizeInBytes(), a.stages[0].k, b.stages[0].k)
	}
}

// TestScalableCompoundRate measures the overall rate of scalable filters
// under RedisBloom's options against theory. The stages are independent
// Bloom filters, so a filter's rate is 1 - Π(1 - p_i), p_i the exact rate
// of stage i at the keys it holds (exactBloomFPP), and it varies from
// filter to filter with variance about Σ Var(p_i) (bloomMoment). Each case
// averages four filters. Accepted: the measured rate within 4 standard
// deviations (that spread plus the binomial noise of the probes) and
// 4/trials of theory; each filter's ExpectedFPP within 4 deviations of its
// theory; theory below fpp, and the stages' designed shares summing below
// 0.9·fpp.
func TestScalableCompoundRate(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	var probe []byte
	const fpp, filters, keys, probes = 0.01, 4, 10_000, 50_000
	for _, c := range []struct {
		initial uint64
		o       ScalableOptions
	}{
		{50, ScalableOptions{}},
		{500, ScalableOptions{Expansion: 1}}, // 20 stages of 500
		{50, ScalableOptions{Expansion: 4}},
		{50, ScalableOptions{Tightening: 0.8}},
		{50, ScalableOptions{Expansion: 3, Tightening: 0.3}},
		{keys, ScalableOptions{NonScaling: true}},
	} {
		var theory, spread, got float64
		var s *ScalableBloomFilter
		for f := 0; f < filters; f++ {
			var err error
			s, err = NewScalableBloomFilterWithOptions(c.initial, fpp, c.o)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < keys; i++ {
				if _, err := s.Insert(randomHexKey(rng, nil)); err != nil {
					t.Fatalf("%+v: key %d: %v", c.o, i, err)
				}
			}
			// The stages are the fewest whose capacities hold the keys.
			held, want := uint64(0), 0
			for held < s.Count() {
				held += s.stageCapacity(want)
				want++
			}
			if s.Stages() != want {
				t.Errorf("%+v: %d stages for %d keys, want %d", c.o, s.Stages(), s.Count(), want)
			}
			none, designed, v := 1.0, 1.0, 0.0
			for i, b := range s.stages {
				p := exactBloomFPP(int(s.counts[i]), int(b.m), b.k)
				none *= 1 - p
				designed *= 1 - s.stageFPP(i)
				v += max(bloomMoment(int(s.counts[i]), int(b.m), b.k, 2*b.k)-p*p, 0)
			}
			th := 1 - none
			if e := s.ExpectedFPP(); math.Abs(e-th) > 4*math.Sqrt(v) {
				t.Errorf("%+v: ExpectedFPP %.5f, theory %.5f ± %.5f", c.o, e, th, 4*math.Sqrt(v))
			}
			if th >= fpp || 1-designed > scalableMargin*fpp*(1+1e-12) {
				t.Errorf("%+v: theory %.5f, stage shares %.5f; want under %v and %v", c.o, th, 1-designed, fpp, scalableMargin*fpp)
			}
			hits := 0
			for i := 0; i < probes; i++ {
				probe = randomHexKey(rng, probe)
				if s.MayContain(probe) {
					hits++
				}
			}
			theory += th / filters
			spread += v / (filters * filters)
			got += float64(hits) / probes / filters
		}
		const trials = filters * probes
		d := 4*math.Sqrt(spread+theory*(1-theory)/trials) + 4.0/trials
		t.Logf("%+v: %d stages, measured %.5f, theory %.5f ± %.5f", s.Options(), s.Stages(), got, theory, d)
		if math.Abs(got-theory) > d {
			t.Errorf("%+v: measured %.5f, theory %.5f ± %.5f", c.o, got, theory, d)
		}
	}
}
