package filter

import (
	"encoding/binary"
	"math"

	"github.com/cespare/xxhash/v2"
)

const (
	// scalableGrowth is the factor by which each stage's capacity exceeds
	// the one before it.
	scalableGrowth = 2
	// scalableTightening is the factor by which each stage's false-positive
	// probability is below the one before it.
	scalableTightening = 0.5
	// scalableFirstShare is the share of fpp given to the first stage. The
	// stages' rates form a geometric series with ratio scalableTightening,
	// so they sum to less than scalableFirstShare/(1-scalableTightening) =
	// 0.9 of fpp: the 10% left over absorbs the random spread of real
	// filters around their expected rate (a stage of a thousand keys
	// measures a few percent off), so the overall rate stays below fpp
	// instead of creeping up to it.
	scalableFirstShare = 0.45
	// MaxScalableStages is the most stages a ScalableBloomFilter adds; once
	// it has them, the last keeps taking keys (and its rate rises past its
	// share).
	MaxScalableStages = 48
)

// ScalableBloomFilter is a Bloom filter that grows as keys arrive (Almeida,
// Baquero, Preguiça and Hutchison, "Scalable Bloom Filters", 2007), as Redis's
// BF.RESERVE with EXPANSION 2 does: it starts with one stage for
// initialCapacity keys, and when a stage has taken its capacity it adds a new
// stage with twice the capacity (growth factor 2) and half the
// false-positive probability (tightening ratio 0.5). Stage i holds
// initialCapacity·2^i keys at probability 0.45·fpp·0.5^i, so the rates of
// all stages sum to less than 0.9·fpp however many there are: the overall
// rate stays below fpp as the filter grows (about 0.89·fpp after 100 times
// the initial capacity). The 0.45 is a little under the 1-0.5 of the
// paper's bound, which only approaches fpp; the difference keeps a real
// filter, whose stages scatter a few percent around their expected rates,
// below fpp too.
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
	stages  []*BloomFilter
	counts  []uint64 // keys added to each stage
	count   uint64
}

// NewScalableBloomFilter returns an empty scalable Bloom filter whose first
// stage holds initialCapacity keys and whose overall false-positive
// probability stays below fpp.
//
// It never fails: initialCapacity 0 counts as 1 and fpp is clamped to
// [MinFPP, MaxFPP], as CheckSizing describes.
func NewScalableBloomFilter(initialCapacity uint64, fpp float64) *ScalableBloomFilter {
	s := &ScalableBloomFilter{initial: max(initialCapacity, 1), fpp: clampFPP(fpp)}
	s.grow()
	return s
}

// stageCapacity returns the number of keys stage i is made for.
func (s *ScalableBloomFilter) stageCapacity(i int) uint64 {
	if i >= 64 || s.initial > MaxFilterBits>>i {
		return MaxFilterBits
	}
	return s.initial << i
}

// stageFPP returns the false-positive probability of stage i at capacity:
// scalableFirstShare·fpp for the first, then tightened by
// scalableTightening for each stage after it.
func (s *ScalableBloomFilter) stageFPP(i int) float64 {
	return max(s.fpp*scalableFirstShare*math.Pow(scalableTightening, float64(i)), MinFPP)
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
// filter keeps answering true for them either way.
func (s *ScalableBloomFilter) Add(key []byte) bool {
	h := xxhash.Sum64(key)
	if s.containsHash(h) {
		return false
	}
	last := len(s.stages) - 1
	if s.counts[last] >= s.stageCapacity(last) && len(s.stages) < MaxScalableStages {
		s.grow()
		last++
	}
	s.stages[last].addHash(h)
	s.counts[last]++
	s.count++
	return true
}

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

// Encoding of a ScalableBloomFilter (version 1), integers little-endian:
//
//	tag      byte 'S'
//	version  byte 1
//	fpp      float64 (IEEE 754 bits as a uint64), MinFPP..MaxFPP
//	initial  uint64, at least 1
//	stages   byte, 1..MaxScalableStages
//	then per stage:
//	  count  uint64, keys added to it, at most its capacity (any, for
//	         the last of MaxScalableStages stages)
//	  filter the stage's BloomFilter encoding; its m and k must be those
//	         the stage's number, initial and fpp give
const (
	scalableTag     = 'S'
	scalableVersion = 1
	scalableHeader  = 2 + 8 + 8 + 1
)

// MarshalBinary encodes the filter (version 1, see AppendBinary).
func (s *ScalableBloomFilter) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, scalableHeader+len(s.stages)*(8+bloomFilterHeader)+int(s.SizeInBytes())))
}

// AppendBinary appends the encoding of the filter to dst: a tag byte 'S',
// the version 1, fpp, the initial capacity, the number of stages, and each
// stage's key count and BloomFilter encoding.
func (s *ScalableBloomFilter) AppendBinary(dst []byte) ([]byte, error) {
	dst = append(dst, scalableTag, scalableVersion)
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s.fpp))
	dst = binary.LittleEndian.AppendUint64(dst, s.initial)
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
	if data[0] != scalableTag || data[1] != scalableVersion {
		return errorf(ErrInvalidEncoding, "scalable bloom filter: tag %#x version %d", data[0], data[1])
	}
	fpp := math.Float64frombits(binary.LittleEndian.Uint64(data[2:]))
	initial := binary.LittleEndian.Uint64(data[10:])
	nstages := int(data[18])
	if !(fpp >= MinFPP && fpp <= MaxFPP) || initial < 1 || nstages < 1 || nstages > MaxScalableStages {
		return errorf(ErrInvalidEncoding, "scalable bloom filter: fpp=%v initial=%d stages=%d out of range", fpp, initial, nstages)
	}
	d := &ScalableBloomFilter{initial: initial, fpp: fpp}
	rest := data[scalableHeader:]
	for i := 0; i < nstages; i++ {
		if len(rest) < 8 {
			return errorf(ErrInvalidEncoding, "scalable bloom filter: stage %d truncated", i)
		}
		count := binary.LittleEndian.Uint64(rest)
		if count > d.stageCapacity(i) && (i != nstages-1 || nstages < MaxScalableStages) {
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
