package filter

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// BinaryFusePolicyName is the Name of the policies made by
// NewBinaryFusePolicy, for both fingerprint sizes: the size is stored in the
// filter.
//
// Encoding: an array of A fingerprints (one byte each, or two bytes
// little-endian for 16-bit fingerprints) followed by a 15-byte trailer:
//
//	seed         uint64, little-endian
//	segmentCount uint32, little-endian (S)
//	segmentLog   uint8: segments are L = 1<<segmentLog slots long, 1..18
//	fpBits       uint8: 8 or 16; 0 means "may contain every key"
//	version      uint8: 1
//
// with A = (S+2)·L, or A = 0 and S = 0 for the filter of no keys. A key with
// xxhash64 h has the mixed hash x = mix64(h + seed), where mix64 is the
// 64-bit finaliser of MurmurHash3; its three slots are p0 = (x·S·L) >> 64
// (128-bit product), p1 = (p0 + L) xor ((x >> 18) & (L-1)) and
// p2 = (p0 + 2L) xor (x & (L-1)), one in each of three consecutive segments;
// its fingerprint is the low fpBits bits of x xor (x >> 32). The key may be
// in the filter when the xor of the three slots equals its fingerprint.
const BinaryFusePolicyName = "bloomkv.BinaryFuse"

const (
	fuseTrailerLen  = 15
	fuseVersion     = 1
	fuseMaxSegLog   = 18 // segments of at most 262,144 slots
	fuseMaxAttempts = 64 // seeds tried before giving up on a key set
)

// NewBinaryFusePolicy returns a binary fuse filter policy (Graf and Lemire,
// "Binary Fuse Filters: Fast and Smaller Than Xor Filters", 2022) with
// fingerprints of fingerprintBits bits, 8 or 16. Other values are rounded:
// up to 8 when below 8 (including zero and negative values), else to 16;
// Validate reports them.
//
// A binary fuse filter stores one fingerprint per slot in an array slightly
// larger than the key count and answers with three slot reads (in nearby
// segments) and an xor; its false-positive rate is 2^-fingerprintBits
// whatever the number of keys. With 8-bit fingerprints it takes about 9.04
// bits per key for a million keys (a Bloom filter of the same 0.39% rate
// needs 11.5) and with 16 bits about 18.1 (0.0015%). Small sets cost more per
// key: the array is at least 1.125 times the key count, more below a million
// keys (about 11 bits per key at 8 bits for a thousand keys).
//
// Building needs every key at once (a Builder keeps 8 bytes per key until
// Finish) and about 27 bytes per key of temporary memory in Finish, which
// orders the hashes by their first slot and peels the three-way hypergraph
// they form. Repeated keys count once (the Builder skips a key equal to the
// one before it; Finish finds other repeats when a first peeling fails).
// Peeling can fail for a set of hashes; Finish then retries with another
// seed, growing the array a little every eight attempts. Should all 64
// attempts fail (it does not happen in practice), Finish writes a filter that
// may contain every key, so a key is never lost.
func NewBinaryFusePolicy(fingerprintBits int) Policy {
	fp := 8
	if fingerprintBits > 8 {
		fp = 16
	}
	return &binaryFusePolicy{fpBits: fp, requested: fingerprintBits}
}

type binaryFusePolicy struct {
	fpBits    int // 8 or 16
	requested int // the argument before rounding, for Validate
}

func (p *binaryFusePolicy) Name() string { return BinaryFusePolicyName }

// FingerprintBits returns the fingerprint size of new filters, 8 or 16.
func (p *binaryFusePolicy) FingerprintBits() int { return p.fpBits }

func (p *binaryFusePolicy) validate() error {
	if p.requested != 8 && p.requested != 16 {
		return errorf(ErrInvalidArgument, "binary fuse fingerprint bits %d is not 8 or 16", p.requested)
	}
	return nil
}

func (p *binaryFusePolicy) NewBuilder() Builder { return &binaryFuseBuilder{fpBits: p.fpBits} }

// MayContain implements Policy.
func (p *binaryFusePolicy) MayContain(filter, key []byte) bool {
	return fuseMayContain(filter, xxhash.Sum64(key))
}

// fuseShape is the geometry of one binary fuse array.
type fuseShape struct {
	segLog   uint
	segCount uint64 // S >= 1
}

func (s fuseShape) segLen() uint64   { return 1 << s.segLog }
func (s fuseShape) arrayLen() uint64 { return (s.segCount + 2) << s.segLog }

// slots returns the three slots of a key whose mixed hash is x.
func (s fuseShape) slots(x uint64) (p0, p1, p2 uint64) {
	l := s.segLen()
	p0, _ = bits.Mul64(x, s.segCount<<s.segLog)
	p1 = (p0 + l) ^ ((x >> 18) & (l - 1))
	p2 = (p0 + 2*l) ^ (x & (l - 1))
	return p0, p1, p2
}

// newFuseShape sizes the array for n distinct keys (n >= 1) by the paper's
// rules for three-wise binary fuse filters: segments of
// 2^floor(ln n / ln 3.33 + 2.25) slots, at most 2^18, and room for
// n·max(1.125, 0.875 + 0.25·ln 10^6 / ln n) slots in whole segments, the
// first and last two segments counted in.
func newFuseShape(n int) fuseShape {
	nf := float64(max(n, 2))
	segLog := min(uint(math.Floor(math.Log(nf)/math.Log(3.33)+2.25)), fuseMaxSegLog)
	factor := max(1.125, 0.875+0.25*math.Log(1e6)/math.Log(nf))
	capacity := uint64(math.Ceil(nf * factor))
	segs := (capacity + (1 << segLog) - 1) >> segLog
	return fuseShape{segLog: segLog, segCount: max(segs, 3) - 2}
}

func fuseMix(h, seed uint64) uint64 {
	x := h + seed
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func fuseFingerprint(x uint64) uint64 { return x ^ x>>32 }

// fuseMayContain probes filter for a key whose xxhash64 is h.
func fuseMayContain(filter []byte, h uint64) bool {
	n := len(filter) - fuseTrailerLen
	if n < 0 {
		return true
	}
	t := filter[n:]
	seed := binary.LittleEndian.Uint64(t)
	segCount := uint64(binary.LittleEndian.Uint32(t[8:]))
	segLog, fpBits, version := uint(t[12]), t[13], t[14]
	if version != fuseVersion || segLog < 1 || segLog > fuseMaxSegLog || (fpBits != 8 && fpBits != 16) {
		return true // unknown encoding, or "may contain every key"
	}
	if segCount == 0 {
		return n != 0 // the filter of no keys holds nothing
	}
	s := fuseShape{segLog: segLog, segCount: segCount}
	if uint64(n) != s.arrayLen()*uint64(fpBits/8) {
		return true
	}
	array := filter[:n]
	x := fuseMix(h, seed)
	p0, p1, p2 := s.slots(x)
	if fpBits == 8 {
		return array[p0]^array[p1]^array[p2] == uint8(fuseFingerprint(x))
	}
	v := binary.LittleEndian.Uint16(array[2*p0:]) ^
		binary.LittleEndian.Uint16(array[2*p1:]) ^
		binary.LittleEndian.Uint16(array[2*p2:])
	return v == uint16(fuseFingerprint(x))
}

// binaryFuseBuilder collects 64-bit key hashes for Finish.
type binaryFuseBuilder struct {
	fpBits int
	hashes []uint64
	work   fuseWork
}

// AddKey implements Builder.
func (b *binaryFuseBuilder) AddKey(key []byte) {
	h := xxhash.Sum64(key)
	if n := len(b.hashes); n > 0 && b.hashes[n-1] == h {
		return
	}
	b.hashes = append(b.hashes, h)
}

// Finish implements Builder.
func (b *binaryFuseBuilder) Finish(dst []byte) []byte {
	dst = appendFuse(dst, b.hashes, b.fpBits, fuseMaxAttempts, &b.work)
	b.hashes = b.hashes[:0]
	b.work = fuseWork{} // do not pin a big table's scratch memory
	return dst
}

// fuseWork is the scratch memory of one construction, about 27 bytes per
// key.
type fuseWork struct {
	keys   []uint64 // mixed hashes, in buckets by their top bits
	starts []int    // end of each bucket of keys
	count  []uint8  // per slot: number of keys << 2 | xor of their slot indexes (0, 1, 2)
	xors   []uint64 // per slot: xor of the mixed hashes of its keys
	queue  []uint32 // slots that held exactly one key
	order  []uint32 // slots in the order they were peeled; xors holds each one's key
}

// appendFuse appends the binary fuse filter of the keys whose xxhash64
// values are hashes (in any order, repeats allowed) to dst, trying at most
// maxAttempts seeds.
func appendFuse(dst []byte, hashes []uint64, fpBits, maxAttempts int, w *fuseWork) []byte {
	if len(hashes) == 0 {
		return appendFuseTrailer(dst, 0, 0, 1, fpBits)
	}
	seed := uint64(0x243f6a8885a308d3) // the digits of pi: any fixed start works
	shape := newFuseShape(len(hashes))
	checked, repeats := false, false
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if attempt > 0 {
			seed = fuseMix(seed, 0x9e3779b97f4a7c15)
			if attempt%8 == 0 {
				// Several seeds in a row failed: a larger array peels
				// more easily.
				shape.segCount += max(shape.segCount/8, 1)
			}
		}
		if shape.arrayLen() > math.MaxUint32 {
			break // slot numbers would not fit the queue
		}
		w.mixBucket(hashes, seed, shape)
		if repeats {
			w.dedupe()
		}
		if w.peel(shape) {
			return appendFuseArray(dst, w, seed, shape, fpBits)
		}
		if !checked {
			// Two equal keys share their three slots and never peel. The
			// builder drops adjacent repeats; look for the others only
			// now, when peeling failed. Mixing is a bijection, so whether
			// there are repeats does not depend on the seed.
			checked = true
			if w.dedupe() {
				repeats = true
				shape = newFuseShape(len(w.keys))
				attempt--
				continue
			}
		}
	}
	// No seed worked: a filter that may contain every key loses none.
	return appendFuseTrailer(dst, 0, 0, 1, 0)
}

// mixBucket sets w.keys to fuseMix(h, seed) for h in hashes, ordered by
// their top bits: the first slot of a key grows with its mixed hash, so the
// counting pass of peel then walks the array in order, which keeps a large
// array's cache misses few. It is one bucket pass on the top bits (mixing
// twice rather than keeping a copy) into about as many buckets as the
// shape has segments: few enough that the scattered writes stream, enough
// that the keys of one bucket touch a cache-sized part of the array. w.starts
// keeps the end of each bucket for dedupe.
func (w *fuseWork) mixBucket(hashes []uint64, seed uint64, shape fuseShape) {
	n := len(hashes)
	w.keys = resize(w.keys, n)
	bucketBits := uint(min(bits.Len64(shape.segCount), 16))
	nb := 1 << bucketBits
	bucket := func(x uint64) uint64 { return x >> (63 - bucketBits) >> 1 } // x>>64 would not be 0
	w.starts = resize(w.starts, nb+1)
	starts := w.starts
	for _, h := range hashes {
		starts[bucket(fuseMix(h, seed))+1]++
	}
	for b := 1; b <= nb; b++ {
		starts[b] += starts[b-1]
	}
	keys := w.keys
	for _, h := range hashes {
		x := fuseMix(h, seed)
		b := bucket(x)
		keys[starts[b]] = x
		starts[b]++
	}
	// Now starts[b] is the end of bucket b.
}

// dedupe removes repeated keys from w.keys, as laid out by mixBucket (equal
// keys are in the same bucket), and reports whether there were any.
func (w *fuseWork) dedupe() bool {
	out, lo := 0, 0
	for _, hi := range w.starts[:len(w.starts)-1] {
		b := w.keys[lo:hi]
		slices.Sort(b)
		out += copy(w.keys[out:], slices.Compact(b))
		lo = hi
	}
	had := out < len(w.keys)
	w.keys = w.keys[:out]
	return had
}

// peel peels the hypergraph of w.keys on shape: it repeatedly takes a slot
// that holds one key and removes that key from its other two slots. It
// succeeds when every key was peeled; w.order then lists the slots in
// peeling order, and xors[slot] is the key peeled there (a peeled slot is
// never touched again: it held only that key).
func (w *fuseWork) peel(shape fuseShape) bool {
	keys := w.keys
	size := int(shape.arrayLen())
	w.count = resize(w.count, size)
	w.xors = resize(w.xors, size)
	count, xors := w.count, w.xors

	var overflow uint8
	for _, x := range keys {
		p0, p1, p2 := shape.slots(x)
		overflow |= count[p0] | count[p1] | count[p2]
		count[p0] += 4
		count[p1] += 4
		count[p1] ^= 1
		count[p2] += 4
		count[p2] ^= 2
		xors[p0] ^= x
		xors[p1] ^= x
		xors[p2] ^= x
	}
	if overflow&0x80 != 0 {
		// Some slot reached 32 keys, so its 6-bit count may have wrapped.
		return false
	}

	if cap(w.order) < len(keys) {
		w.order = make([]uint32, 0, len(keys))
	}
	if cap(w.queue) < size/4 {
		w.queue = make([]uint32, 0, size/4)
	}
	queue := w.queue[:0]
	for i, c := range count {
		if c>>2 == 1 {
			queue = append(queue, uint32(i))
		}
	}
	order := w.order[:0]
	var p [3]uint64
	for len(queue) > 0 {
		i := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		c := count[i]
		if c>>2 != 1 {
			continue // emptied since it was queued
		}
		x, idx := xors[i], c&3
		order = append(order, i)
		count[i] = 0
		p[0], p[1], p[2] = shape.slots(x)
		for j := uint8(0); j < 3; j++ {
			if j == idx {
				continue
			}
			q := p[j]
			count[q] -= 4
			count[q] ^= j
			xors[q] ^= x
			if count[q]>>2 == 1 {
				queue = append(queue, uint32(q))
			}
		}
	}
	w.queue, w.order = queue, order
	return len(order) == len(keys)
}

// appendFuseArray assigns the fingerprints of a successful peel, last peeled
// first, so that each key's own slot makes the xor of its three slots equal
// its fingerprint, and appends array and trailer to dst. A key's own slot is
// still zero when it is assigned (no key peeled after it touches that slot),
// so xoring all three slots into the fingerprint xors in the other two.
func appendFuseArray(dst []byte, w *fuseWork, seed uint64, shape fuseShape, fpBits int) []byte {
	size := int(shape.arrayLen())
	start := len(dst)
	var p [3]uint64
	if fpBits == 8 {
		dst = appendZeros(dst, size)
		a := dst[start:]
		for i := len(w.order) - 1; i >= 0; i-- {
			slot := uint64(w.order[i])
			x := w.xors[slot]
			p[0], p[1], p[2] = shape.slots(x)
			a[slot] = uint8(fuseFingerprint(x)) ^ a[p[0]] ^ a[p[1]] ^ a[p[2]]
		}
	} else {
		dst = appendZeros(dst, 2*size)
		a := dst[start:]
		get := func(q uint64) uint16 { return binary.LittleEndian.Uint16(a[2*q:]) }
		for i := len(w.order) - 1; i >= 0; i-- {
			slot := uint64(w.order[i])
			x := w.xors[slot]
			p[0], p[1], p[2] = shape.slots(x)
			v := uint16(fuseFingerprint(x)) ^ get(p[0]) ^ get(p[1]) ^ get(p[2])
			binary.LittleEndian.PutUint16(a[2*slot:], v)
		}
	}
	return appendFuseTrailer(dst, seed, uint32(shape.segCount), shape.segLog, fpBits)
}

func appendFuseTrailer(dst []byte, seed uint64, segCount uint32, segLog uint, fpBits int) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, seed)
	dst = binary.LittleEndian.AppendUint32(dst, segCount)
	return append(dst, uint8(segLog), uint8(fpBits), fuseVersion)
}

// resize returns s with length n and every element zero, reusing its memory
// when it is large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
