package filter

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"
)

const (
	// DefaultScalableExpansion and DefaultScalableTightening are RedisBloom's
	// defaults (BF.RESERVE's EXPANSION 2, and its tightening ratio 0.5).
	DefaultScalableExpansion  = 2
	DefaultScalableTightening = 0.5
	// MaxScalableExpansion is the largest ScalableOptions.Expansion.
	MaxScalableExpansion = 64
	// scalableMargin is the share of fpp the stages' rates may add up to.
	// The stages' rates form a geometric series with ratio r (the
	// tightening), so the first gets scalableMargin·(1-r) of fpp and they
	// sum to less than scalableMargin·fpp: the 10% left over absorbs the
	// random spread of real filters around their expected rate (a stage of
	// a thousand keys measures a few percent off), so the overall rate
	// stays below fpp instead of creeping up to it.
	scalableMargin = 0.9
	// MaxScalableStages is the most stages a ScalableBloomFilter adds; once
	// the last of them holds its capacity, the filter is full (Insert
	// returns ErrFull). With the default expansion that is 2^48 times the
	// initial capacity; with Expansion 1, only 48 times.
	MaxScalableStages = 48
)

// ScalableOptions are the growth options of a ScalableBloomFilter, named
// after RedisBloom's. The zero value means RedisBloom's defaults.
type ScalableOptions struct {
	// Expansion is the factor by which each stage's capacity exceeds the
	// one before it: 0 means DefaultScalableExpansion (2); 1 to
	// MaxScalableExpansion. Larger factors make fewer stages (faster
	// lookups) at more memory.
	Expansion int
	// Tightening is the ratio of each stage's false-positive probability
	// to the one before it: 0 means DefaultScalableTightening (0.5); else
	// in (0, 1). Smaller ratios give the first stages more of the budget
	// and later stages more bits per key.
	Tightening float64
	// NonScaling makes a filter of one stage that never grows: once it
	// holds its capacity, Insert fails with an error wrapping ErrFull (and
	// Add returns false), as RedisBloom's NONSCALING filters do. The stage
	// then gets 0.9 of fpp. Expansion and Tightening are still checked and
	// kept (Options reports them) but have no effect.
	NonScaling bool
}

// ScalableBloomFilter is a Bloom filter that grows as keys arrive (Almeida,
// Baquero, Preguiça and Hutchison, "Scalable Bloom Filters", 2007), as
// RedisBloom's BF.RESERVE does: it starts with one stage for
// initialCapacity keys, and when a stage has taken its capacity it adds a
// new stage with Expansion times the capacity (2 by default) and Tightening
// times the false-positive probability (0.5 by default); see
// ScalableOptions. Stage i holds initialCapacity·e^i keys at probability
// 0.9·(1-r)·fpp·r^i, so the rates of all stages sum to less than 0.9·fpp
// however many there are: the overall rate stays below fpp as the filter
// grows (about 0.89·fpp after 100 times the initial capacity with the
// defaults). The 0.9 keeps a real filter, whose stages scatter a few
// percent around their expected rates, below fpp too.
//
// Differences from RedisBloom (its sb.c and bloom.c; not its encoding,
// hash or probes):
//
//   - Budget. RedisBloom's ratio is fixed at 0.5; its first layer gets
//     0.5·fpp and each later one half the one before, so the layers' rates
//     add up towards the whole fpp, with nothing left for the spread of
//     real filters; a NONSCALING layer gets all of fpp. Here the first
//     stage gets 0.9·(1-r)·fpp (0.45·fpp with the defaults, 0.9 of
//     RedisBloom's), the sum stays below 0.9·fpp for any ratio, and a
//     non-scaling stage gets 0.9·fpp.
//   - Stage size. RedisBloom gives a layer of n keys at rate p
//     n·ln(1/p)/(ln 2)² bits (rounded up to whole 64-bit words) and
//     ceil(log2(1/p)) hashes; here k = round(log2(1/p)) and the fewest bits
//     that meet p at n keys.
//   - Options. RedisBloom refuses EXPANSION together with NONSCALING; here
//     NonScaling ignores Expansion and Tightening. Expansion 0 means the
//     default 2 here, and at most MaxScalableExpansion.
//   - Full. RedisBloom refuses a key once a NONSCALING filter holds its
//     capacity ("non scaling filter is full"), as here; a scaling chain
//     grows until memory runs out, where this one stops at
//     MaxScalableStages stages.
//
// Each stage is a BloomFilter with k = round(log2(1/p)) probes and the
// fewest bits for which (1-e^(-k·n/m))^k is at most its p at its capacity
// n, so a full stage meets its share exactly.
//
// The zero value is not usable; create filters with NewScalableBloomFilter
// or UnmarshalBinary. Not safe for concurrent use when one goroutine adds.
type ScalableBloomFilter struct {
	initial uint64
	fpp     float64
	opts    ScalableOptions // defaults filled in
	// v1 marks a filter decoded from version 1 (no options field), which
	// re-encodes as version 1.
	v1     bool
	stages []*BloomFilter
	counts []uint64 // keys added to each stage
	count  uint64
}

// NewScalableBloomFilter returns an empty scalable Bloom filter whose first
// stage holds initialCapacity keys and whose overall false-positive
// probability stays below fpp.
//
// It never fails: initialCapacity 0 counts as 1 and fpp is clamped to
// [MinFPP, MaxFPP], as CheckSizing describes.
func NewScalableBloomFilter(initialCapacity uint64, fpp float64) *ScalableBloomFilter {
	s, _ := NewScalableBloomFilterWithOptions(initialCapacity, fpp, ScalableOptions{})
	return s
}

// NewScalableBloomFilterWithOptions is NewScalableBloomFilter with growth
// options. Options out of range are an error wrapping ErrInvalidArgument;
// initialCapacity and fpp are adjusted as NewScalableBloomFilter does.
func NewScalableBloomFilterWithOptions(initialCapacity uint64, fpp float64, o ScalableOptions) (*ScalableBloomFilter, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	s := &ScalableBloomFilter{initial: max(initialCapacity, 1), fpp: clampFPP(fpp), opts: o}
	s.grow()
	return s, nil
}

// resolve fills in the defaults and checks the ranges.
func (o ScalableOptions) resolve() (ScalableOptions, error) {
	if o.Expansion == 0 {
		o.Expansion = DefaultScalableExpansion
	}
	if o.Tightening == 0 {
		o.Tightening = DefaultScalableTightening
	}
	switch {
	case o.Expansion < 1 || o.Expansion > MaxScalableExpansion:
		return o, errorf(ErrInvalidArgument, "scalable bloom filter: expansion %d outside [1, %d]", o.Expansion, MaxScalableExpansion)
	case !(o.Tightening > 0 && o.Tightening < 1):
		return o, errorf(ErrInvalidArgument, "scalable bloom filter: tightening ratio %v outside (0, 1)", o.Tightening)
	}
	return o, nil
}

// Options returns the filter's growth options, defaults filled in.
func (s *ScalableBloomFilter) Options() ScalableOptions { return s.opts }

// stageCapacity returns the number of keys stage i is made for.
func (s *ScalableBloomFilter) stageCapacity(i int) uint64 {
	c := s.initial
	for ; i > 0; i-- {
		if c > MaxFilterBits/uint64(s.opts.Expansion) {
			return MaxFilterBits
		}
		c *= uint64(s.opts.Expansion)
	}
	return min(c, MaxFilterBits)
}

// stageFPP returns the false-positive probability of stage i at capacity:
// 0.9·(1-r)·fpp for the first, then tightened by r for each stage after
// it; 0.9·fpp for the only stage of a non-scaling filter.
func (s *ScalableBloomFilter) stageFPP(i int) float64 {
	if s.opts.NonScaling {
		return max(s.fpp*scalableMargin, MinFPP)
	}
	r := s.opts.Tightening
	return max(s.fpp*scalableMargin*(1-r)*math.Pow(r, float64(i)), MinFPP)
}

// stageSizing returns the bits and probes of stage i.
func (s *ScalableBloomFilter) stageSizing(i int) (m uint64, k int) {
	n, p := float64(s.stageCapacity(i)), s.stageFPP(i)
	k = max(int(math.Round(-math.Log2(p))), 1)
	// (1-e^(-k·n/m))^k = p  <=>  m = -k·n / ln(1 - p^(1/k))
	mf := math.Ceil(-float64(k) * n / math.Log1p(-math.Pow(p, 1/float64(k))))
	return uint64(min(max(mf, 64), MaxFilterBits)), k
}

// grow adds a stage.
func (s *ScalableBloomFilter) grow() {
	m, k := s.stageSizing(len(s.stages))
	s.stages = append(s.stages, &BloomFilter{words: make([]uint64, (m+63)/64), m: m, k: k})
	s.counts = append(s.counts, 0)
}

// Add adds key unless the filter may already contain it, and reports
// whether it added it. Like Redis's BF.ADD it skips keys MayContain accepts
// (repeats, and false positives), so repeats do not use up capacity; the
// filter keeps answering true for them either way. A full non-scaling
// filter adds nothing and returns false: Insert tells that apart.
func (s *ScalableBloomFilter) Add(key []byte) bool {
	added, _ := s.Insert(key)
	return added
}

// Insert is Add that reports a full filter: it returns false and an error
// wrapping ErrFull for a key the filter does not contain when it can take
// no more (a non-scaling filter at its capacity, or the last of
// MaxScalableStages stages at its capacity), and (false, nil) for a key it
// may contain already.
func (s *ScalableBloomFilter) Insert(key []byte) (bool, error) {
	h := xxhash.Sum64(key)
	if s.containsHash(h) {
		return false, nil
	}
	last := len(s.stages) - 1
	if s.counts[last] >= s.stageCapacity(last) {
		if s.opts.NonScaling {
			return false, errNonScalingFull
		}
		if len(s.stages) >= MaxScalableStages {
			return false, errLastStageFull
		}
		s.grow()
		last++
	}
	s.stages[last].addHash(h)
	s.counts[last]++
	s.count++
	return true, nil
}

// The errors of Insert, made once so that a refused Add does not allocate.
var (
	errNonScalingFull = fmt.Errorf("%w: non-scaling bloom filter holds its capacity", ErrFull)
	errLastStageFull  = fmt.Errorf("%w: scalable bloom filter's last stage (%d) holds its capacity", ErrFull, MaxScalableStages)
)

// MayContain reports whether key may have been added: true for every key
// added, and for other keys with a probability below the fpp the filter was
// made with. It asks every stage, newest first.
func (s *ScalableBloomFilter) MayContain(key []byte) bool {
	return s.containsHash(xxhash.Sum64(key))
}

func (s *ScalableBloomFilter) containsHash(h uint64) bool {
	for i := len(s.stages) - 1; i >= 0; i-- {
		if s.stages[i].containsHash(h) {
			return true
		}
	}
	return false
}

// Count returns the number of keys added (those for which Add returned
// true).
func (s *ScalableBloomFilter) Count() uint64 { return s.count }

// Stages returns the number of stages (Bloom filters) the filter has.
func (s *ScalableBloomFilter) Stages() int { return len(s.stages) }

// SizeInBytes returns the memory the stages' bit arrays take.
func (s *ScalableBloomFilter) SizeInBytes() uint64 {
	n := uint64(0)
	for _, b := range s.stages {
		n += b.SizeInBytes()
	}
	return n
}

// ExpectedFPP returns the probability that MayContain is true for a key
// that was not added, from the bits now set in each stage:
// 1 - Π(1 - stage rate).
func (s *ScalableBloomFilter) ExpectedFPP() float64 {
	none := 1.0
	for _, b := range s.stages {
		none *= 1 - b.ExpectedFPP()
	}
	return 1 - none
}

// Encoding of a ScalableBloomFilter (version 2), integers little-endian:
//
//	tag      byte 'S'
//	version  byte 2 (1: no options field, RedisBloom's defaults)
//	fpp      float64 (IEEE 754 bits as a uint64), MinFPP..MaxFPP
//	initial  uint64, at least 1
//	options  (version 2 only) expansion byte 1..MaxScalableExpansion,
//	         tightening float64 in (0, 1), non-scaling byte 0 or 1
//	stages   byte, 1..MaxScalableStages (1 when non-scaling)
//	then per stage:
//	  count  uint64, keys added to it, at most its capacity (any, for
//	         the last of MaxScalableStages stages)
//	  filter the stage's BloomFilter encoding; its m and k must be those
//	         the stage's number, initial and fpp give
const (
	scalableTag     = 'S'
	scalableVersion = 2
	scalableHeader  = 2 + 8 + 8 + 1
	scalableOptLen  = 1 + 8 + 1
)

// MarshalBinary encodes the filter (version 2, see AppendBinary).
func (s *ScalableBloomFilter) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, scalableHeader+scalableOptLen+len(s.stages)*(8+bloomFilterHeader)+int(s.SizeInBytes())))
}

// AppendBinary appends the encoding of the filter to dst: a tag byte 'S',
// the version 2, fpp, the initial capacity, the options, the number of
// stages, and each stage's key count and BloomFilter encoding.
func (s *ScalableBloomFilter) AppendBinary(dst []byte) ([]byte, error) {
	version := byte(scalableVersion)
	if s.v1 {
		version = 1
	}
	dst = append(dst, scalableTag, version)
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s.fpp))
	dst = binary.LittleEndian.AppendUint64(dst, s.initial)
	if !s.v1 {
		nonScaling := byte(0)
		if s.opts.NonScaling {
			nonScaling = 1
		}
		dst = append(dst, byte(s.opts.Expansion))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s.opts.Tightening))
		dst = append(dst, nonScaling)
	}
	dst = append(dst, byte(len(s.stages)))
	for i, b := range s.stages {
		dst = binary.LittleEndian.AppendUint64(dst, s.counts[i])
		dst, _ = b.AppendBinary(dst)
	}
	return dst, nil
}

// UnmarshalBinary sets s to the filter data encodes. Every length is checked
// before anything is allocated (a stage's bit array against the bytes that
// remain), and each stage's size against the one its parameters give; any
// failure is an error wrapping ErrInvalidEncoding, and s is left unchanged.
func (s *ScalableBloomFilter) UnmarshalBinary(data []byte) error {
	if len(data) < scalableHeader {
		return errorf(ErrInvalidEncoding, "scalable bloom filter: %d bytes is too short", len(data))
	}
	if data[0] != scalableTag || (data[1] != scalableVersion && data[1] != 1) {
		return errorf(ErrInvalidEncoding, "scalable bloom filter: tag %#x version %d", data[0], data[1])
	}
	fpp := math.Float64frombits(binary.LittleEndian.Uint64(data[2:]))
	initial := binary.LittleEndian.Uint64(data[10:])
	rest := data[18:]
	var o ScalableOptions
	if data[1] == scalableVersion {
		if len(rest) < scalableOptLen+1 {
			return errorf(ErrInvalidEncoding, "scalable bloom filter: %d bytes is too short", len(data))
		}
		o.Expansion = int(rest[0])
		o.Tightening = math.Float64frombits(binary.LittleEndian.Uint64(rest[1:]))
		if rest[9] > 1 {
			return errorf(ErrInvalidEncoding, "scalable bloom filter: non-scaling byte %d", rest[9])
		}
		o.NonScaling = rest[9] == 1
		if o.Expansion == 0 || o.Tightening == 0 {
			return errorf(ErrInvalidEncoding, "scalable bloom filter: expansion %d, tightening %v", o.Expansion, o.Tightening)
		}
		rest = rest[scalableOptLen:]
	}
	o, err := o.resolve()
	if err != nil {
		return errorf(ErrInvalidEncoding, "scalable bloom filter: %v", err)
	}
	nstages := int(rest[0])
	rest = rest[1:]
	if !(fpp >= MinFPP && fpp <= MaxFPP) || initial < 1 || nstages < 1 || nstages > MaxScalableStages || (o.NonScaling && nstages != 1) {
		return errorf(ErrInvalidEncoding, "scalable bloom filter: fpp=%v initial=%d stages=%d out of range", fpp, initial, nstages)
	}
	d := &ScalableBloomFilter{initial: initial, fpp: fpp, opts: o, v1: data[1] == 1}
	for i := 0; i < nstages; i++ {
		if len(rest) < 8 {
			return errorf(ErrInvalidEncoding, "scalable bloom filter: stage %d truncated", i)
		}
		count := binary.LittleEndian.Uint64(rest)
		if count > d.stageCapacity(i) && (i != nstages-1 || nstages < MaxScalableStages || o.NonScaling) {
			return errorf(ErrInvalidEncoding, "scalable bloom filter: stage %d holds %d keys, over its capacity", i, count)
		}
		b, n, err := decodeBloomFilter(rest[8:])
		if err != nil {
			return errorf(ErrInvalidEncoding, "scalable bloom filter: stage %d: %v", i, err)
		}
		if m, k := d.stageSizing(i); b.m != m || b.k != k {
			return errorf(ErrInvalidEncoding, "scalable bloom filter: stage %d has m=%d k=%d, want %d %d", i, b.m, b.k, m, k)
		}
		d.stages = append(d.stages, b)
		d.counts = append(d.counts, count)
		if d.count+count < d.count {
			return errorf(ErrInvalidEncoding, "scalable bloom filter: key count overflows")
		}
		d.count += count
		rest = rest[8+n:]
	}
	if len(rest) != 0 {
		return errorf(ErrInvalidEncoding, "scalable bloom filter: %d trailing bytes", len(rest))
	}
	*s = *d
	return nil
}
