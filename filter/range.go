package filter

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

// GrafiteRangePolicyName is the Name of the policy NewGrafiteRangePolicy
// returns. Its filters carry their own parameters (bits per key among
// them), so filters built at any bits per key are read by any policy of
// this name.
const GrafiteRangePolicyName = "bloomkv.GrafiteRange"

// Bits per key NewGrafiteRangePolicy accepts; others are clamped to them.
const (
	GrafiteMinBitsPerKey = 4
	GrafiteMaxBitsPerKey = 40
)

// NewGrafiteRangePolicy returns a range filter policy after Grafite (Costa,
// Ferragina and Vinciguerra, "Grafite: Taming Adversarial Queries with
// Optimal Range Filters", SIGMOD 2024), using about bitsPerKey bits per
// distinct key, plus an eighth of a bit for the select sample, about 50
// bytes of header and padding, and the keys' common prefix.
//
// For a range of L integers in the filter's key space (below), the false
// positive probability is at most L/2^(bitsPerKey-2) (GrafiteFPR), whatever
// the keys and whatever the queries, as long as the queries do not depend
// on the filter's hash: ranges that start right after a table key, the
// correlated queries that defeat prefix-based range filters, do no worse
// than random ones. bitsPerKey is clamped to [GrafiteMinBitsPerKey,
// GrafiteMaxBitsPerKey]; 16 is a good default (a false positive rate of
// 1/16384 for point-sized ranges, 1/512 for ranges of 32 integers).
//
// Keys are mapped to integers monotonically: the filter stores the common
// prefix c of the table's keys, and a key with that prefix maps to the
// big-endian integer of the (at most 8) bytes after c, zero padded to the
// longest such suffix of the table's keys (up to 8 bytes); keys sorting
// before every key with prefix c map to 0, keys after to the largest value.
// A query [lo, hi) becomes the integer range [f(lo), f(hi)] (f(hi)-1 when
// no table key can share hi's integer while sorting before it), clipped to
// the table's smallest and largest integer. So the filter is exact for
// ranges outside the table's key range, and precise when keys differ within
// the 8 bytes after their common prefix; keys differing only later share an
// integer, and a range that reaches into one's span answers true.
//
// Each distinct integer x is hashed to the code h(x) = (q(x / r) + x) mod r,
// with r = n * 2^(bitsPerKey-2) for n distinct integers and q a 64-bit
// mixing hash of the block number x / r reduced to [0, r). Within a block,
// h is a rotation and preserves adjacency, so a query range of fewer than
// r integers covers at most two blocks and so at most four intervals of
// codes; keys of other blocks land in them with probability L/r each. The
// sorted distinct codes are stored in an Elias-Fano sequence (lower bits of
// bitsPerKey-2 bits, upper bits in unary, 2 bits per key) with a sample of
// the position of every 256th zero of the upper bits, which finds a code's
// successor in a few word operations.
func NewGrafiteRangePolicy(bitsPerKey int) RangePolicy {
	return &grafiteRangePolicy{bits: clampGrafiteBits(bitsPerKey)}
}

// GrafiteFPR returns the bound on the false positive probability of a
// filter of NewGrafiteRangePolicy(bitsPerKey) for a range of rangeLen
// integers of its key space: rangeLen/2^(bitsPerKey-2), at most 1, with
// bitsPerKey clamped as NewGrafiteRangePolicy clamps it. (For a table of
// more than 2^(66-bitsPerKey) distinct keys the filter's 64-bit universe
// caps r, and its rate is rangeLen*n/2^64 instead.)
func GrafiteFPR(bitsPerKey int, rangeLen uint64) float64 {
	b := clampGrafiteBits(bitsPerKey)
	return math.Min(1, float64(rangeLen)/math.Ldexp(1, b-2))
}

func clampGrafiteBits(b int) int {
	return min(max(b, GrafiteMinBitsPerKey), GrafiteMaxBitsPerKey)
}

type grafiteRangePolicy struct{ bits int }

func (p *grafiteRangePolicy) Name() string { return GrafiteRangePolicyName }

// BitsPerKey returns the bits per key the policy's builders use.
func (p *grafiteRangePolicy) BitsPerKey() int { return p.bits }

func (p *grafiteRangePolicy) NewBuilder() RangeBuilder {
	return &grafiteBuilder{bits: p.bits, seed: grafiteSeed}
}

func (p *grafiteRangePolicy) MayContainRange(filter, lo, hi []byte) bool {
	return grafiteMayContainRange(filter, lo, hi)
}

// The encoding of a filter:
//
//	version      1 byte, grafiteVersion (grafiteMatchAll: a filter that
//	             answers true to every range, written for tables too large
//	             for the format)
//	prefix       uvarint length, bytes: the keys' common prefix
//	m            uvarint: the number of codes; 0 for a filter without keys,
//	             which ends here
//	w            1 byte: bytes of suffix in a key's integer, 0 to 8
//	minSuffix    1 byte: the shortest suffix of a key after the prefix,
//	             capped at w
//	l            1 byte: lower bits of each code in the Elias-Fano sequence
//	minV, maxV   8 bytes each, little-endian: the smallest and largest
//	             integer of a key
//	r            8 bytes: the codes' universe [0, r)
//	seed         8 bytes: the seed of q
//	samples      4 bytes each: the position in the upper bits of every
//	             256th zero, ceil(nb/256) of them, where nb = (r-1)>>l + 1
//	upper        8-byte little-endian words: m+nb bits, code i setting bit
//	             (code>>l) + i
//	lower        (m*l+7)/8 + 8 bytes: code i's low l bits at bit i*l (the
//	             8 zero bytes at the end let a read of 8 bytes start at any
//	             code's first byte)
const (
	grafiteVersion  = 1
	grafiteMatchAll = 0

	grafiteFixed     = 3 + 4*8 // w, minSuffix, l, minV, maxV, r, seed
	grafiteSampleLog = 8
	grafiteSeed      = 0x6a09e667f3bcc909

	// grafiteMaxCodes bounds m so that positions in the upper bits
	// (at most 3m) fit the samples' 32 bits.
	grafiteMaxCodes = 1 << 30
)

// grafiteView is a decoded filter, its arrays slices of the encoding.
type grafiteView struct {
	prefix     []byte
	w, minSuf  int
	l          uint
	m          uint64
	minV, maxV uint64
	r, seed    uint64
	upperBits  uint64
	samples    []byte
	upper      []byte
	lower      []byte
}

// Results of grafiteDecode.
const (
	grafiteBad = iota
	grafiteEmpty
	grafiteOK
)

// grafiteDecode checks the encoding's lengths and parameters and returns
// the filter's view; grafiteBad for anything it cannot read.
func grafiteDecode(f []byte) (v grafiteView, status int) {
	if len(f) == 0 || f[0] != grafiteVersion {
		return v, grafiteBad
	}
	f = f[1:]
	plen, k := binary.Uvarint(f)
	if k <= 0 || plen > uint64(len(f)-k) {
		return v, grafiteBad
	}
	v.prefix = f[k : k+int(plen)]
	f = f[k+int(plen):]
	m, k := binary.Uvarint(f)
	if k <= 0 {
		return v, grafiteBad
	}
	f = f[k:]
	if m == 0 {
		if len(f) != 0 {
			return v, grafiteBad
		}
		return v, grafiteEmpty
	}
	if len(f) < grafiteFixed || m > grafiteMaxCodes {
		return v, grafiteBad
	}
	v.m = m
	v.w, v.minSuf, v.l = int(f[0]), int(f[1]), uint(f[2])
	le := binary.LittleEndian
	v.minV, v.maxV = le.Uint64(f[3:]), le.Uint64(f[11:])
	v.r, v.seed = le.Uint64(f[19:]), le.Uint64(f[27:])
	f = f[grafiteFixed:]
	if v.w > 8 || v.minSuf > v.w || v.l > 56 || v.r == 0 || m > v.r ||
		v.minV > v.maxV || v.maxV > grafiteUniverseMax(v.w) {
		return v, grafiteBad
	}
	if v.w < 8 && v.r > 1<<(8*v.w) {
		return v, grafiteBad
	}
	nb := (v.r-1)>>v.l + 1
	if nb >= 1<<32 || m+nb >= 1<<32 {
		return v, grafiteBad
	}
	v.upperBits = m + nb
	ns := (nb + 1<<grafiteSampleLog - 1) >> grafiteSampleLog
	nu := (v.upperBits + 63) / 64 * 8
	nl := (m*uint64(v.l)+7)/8 + 8
	if uint64(len(f)) != 4*ns+nu+nl {
		return v, grafiteBad
	}
	v.samples = f[:4*ns]
	v.upper = f[4*ns : 4*ns+nu]
	v.lower = f[4*ns+nu:]
	return v, grafiteOK
}

// grafiteUniverseMax returns the largest integer of a key with w bytes of
// suffix.
func grafiteUniverseMax(w int) uint64 {
	if w >= 8 {
		return math.MaxUint64
	}
	return 1<<(8*w) - 1
}

func grafiteMayContainRange(filter, lo, hi []byte) bool {
	v, status := grafiteDecode(filter)
	switch status {
	case grafiteBad:
		return true
	case grafiteEmpty:
		return false
	}
	if bytes.Compare(lo, hi) >= 0 {
		return false // an empty range holds no key
	}
	a, _, _ := v.mapKey(lo)
	b, s, in := v.mapKey(hi)
	// No table key below hi shares hi's integer when hi's suffix fits the
	// integer whole and does not end in zero bytes that a shorter table
	// key's padding could match: then a table key k < hi has f(k) < f(hi).
	if in && len(s) <= v.w && (len(s) == 0 || s[len(s)-1] != 0 || v.minSuf >= len(s)) {
		if b == 0 {
			return false
		}
		b--
	}
	a, b = max(a, v.minV), min(b, v.maxV)
	if a > b {
		return false
	}
	if b-a >= v.r {
		return true
	}
	return v.anyCode(a, b)
}

// mapKey returns key's integer, and whether key has the prefix and its
// suffix after it.
func (v *grafiteView) mapKey(key []byte) (x uint64, suffix []byte, in bool) {
	c := v.prefix
	if len(key) >= len(c) && bytes.Equal(key[:len(c)], c) {
		s := key[len(c):]
		return grafiteWindow(s) >> (64 - 8*v.w), s, true
	}
	if bytes.Compare(key, c) < 0 {
		return 0, nil, false
	}
	return grafiteUniverseMax(v.w), nil, false
}

// grafiteWindow returns the first 8 bytes of s, zero padded, as a
// big-endian integer.
func grafiteWindow(s []byte) uint64 {
	if len(s) >= 8 {
		return binary.BigEndian.Uint64(s)
	}
	var x uint64
	for i, c := range s {
		x |= uint64(c) << (56 - 8*i)
	}
	return x
}

// grafiteQ returns q(block) in [0, r).
func grafiteQ(block, seed, r uint64) uint64 {
	x := block*0x9e3779b97f4a7c15 + seed
	x ^= x >> 32
	x *= 0xd6e8feb86659fd93
	x ^= x >> 32
	x *= 0xd6e8feb86659fd93
	x ^= x >> 32
	hi, _ := bits.Mul64(x, r)
	return hi
}

// grafiteAddMod returns (a + b) mod r for a, b < r.
func grafiteAddMod(a, b, r uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 || s >= r {
		s -= r
	}
	return s
}

// grafiteCode returns h(x).
func grafiteCode(x, seed, r uint64) uint64 {
	return grafiteAddMod(grafiteQ(x/r, seed, r), x%r, r)
}

// anyCode reports whether the code of some integer of [a, b] is stored,
// for b-a < r.
func (v *grafiteView) anyCode(a, b uint64) bool {
	r := v.r
	ba, oa := a/r, a%r
	bb, ob := b/r, b%r
	qa := grafiteQ(ba, v.seed, r)
	ha := grafiteAddMod(qa, oa, r)
	if ba == bb {
		return v.cyclic(ha, grafiteAddMod(qa, ob, r))
	}
	// b-a < r: [a, b] spans blocks ba and ba+1.
	qb := grafiteQ(bb, v.seed, r)
	return v.cyclic(ha, grafiteAddMod(qa, r-1, r)) || v.cyclic(qb, grafiteAddMod(qb, ob, r))
}

// cyclic reports whether a code lies in the cyclic interval from s to e.
func (v *grafiteView) cyclic(s, e uint64) bool {
	if s <= e {
		return v.inRange(s, e)
	}
	return v.inRange(s, v.r-1) || v.inRange(0, e)
}

// inRange reports whether a code lies in [s, e], for s <= e < r: it finds
// the successor of s in the Elias-Fano sequence. Malformed arrays give true.
func (v *grafiteView) inRange(s, e uint64) bool {
	hv := s >> v.l
	pos := uint64(0)
	if hv > 0 {
		p, ok := v.select0(hv - 1)
		if !ok {
			return true
		}
		pos = p + 1
	}
	if pos < hv {
		return true
	}
	mask := uint64(1)<<v.l - 1
	nw := uint64(len(v.upper) / 8)
	for idx := pos - hv; idx < v.m; idx++ {
		// The next one bit at or after pos is code idx.
		wi := pos >> 6
		if wi >= nw {
			return true
		}
		x := binary.LittleEndian.Uint64(v.upper[wi*8:]) & (^uint64(0) << (pos & 63))
		for x == 0 {
			wi++
			if wi >= nw {
				return true
			}
			x = binary.LittleEndian.Uint64(v.upper[wi*8:])
		}
		q := wi*64 + uint64(bits.TrailingZeros64(x))
		o := idx * uint64(v.l)
		if o>>3 >= uint64(len(v.lower)) || uint64(len(v.lower))-o>>3 < 8 {
			return true
		}
		low := binary.LittleEndian.Uint64(v.lower[o>>3:]) >> (o & 7) & mask
		code := (q-idx)<<v.l | low
		if code > e {
			return false
		}
		if code >= s {
			return true
		}
		pos = q + 1
	}
	return false
}

// select0 returns the position of the zero of rank k (from 0) in the upper
// bits; false when the arrays do not hold it.
func (v *grafiteView) select0(k uint64) (uint64, bool) {
	j := k >> grafiteSampleLog
	if j >= uint64(len(v.samples)/4) {
		return 0, false
	}
	p := uint64(binary.LittleEndian.Uint32(v.samples[j*4:]))
	rem := int(k & (1<<grafiteSampleLog - 1))
	nw := uint64(len(v.upper) / 8)
	wi := p >> 6
	if wi >= nw {
		return 0, false
	}
	x := ^binary.LittleEndian.Uint64(v.upper[wi*8:]) & (^uint64(0) << (p & 63))
	for {
		if c := bits.OnesCount64(x); rem < c {
			return wi*64 + uint64(select64(x, rem)), true
		} else {
			rem -= c
		}
		wi++
		if wi >= nw {
			return 0, false
		}
		x = ^binary.LittleEndian.Uint64(v.upper[wi*8:])
	}
}

// select64 returns the position of the set bit of rank k (from 0) of x,
// which has more than k set bits.
func select64(x uint64, k int) int {
	pos := 0
	if c := bits.OnesCount32(uint32(x)); k >= c {
		k -= c
		x >>= 32
		pos += 32
	}
	if c := bits.OnesCount16(uint16(x)); k >= c {
		k -= c
		x >>= 16
		pos += 16
	}
	if c := bits.OnesCount8(uint8(x)); k >= c {
		k -= c
		x >>= 8
		pos += 8
	}
	for ; k > 0; k-- {
		x &= x - 1
	}
	return pos + bits.TrailingZeros64(x)
}

// grafiteBuilder collects the keys' integers as the keys come. Their
// common prefix can only shrink as keys are added (it is the common prefix
// of the first key and the latest); the builder keeps, for each distinct
// key, the 8 bytes after the current common prefix, and when the prefix
// shrinks by d bytes shifts the first key's d bytes in front of each: a
// value is shifted at most 8 times before all such values are equal to the
// first key's bytes and merge, so adding n keys costs O(n) however the
// prefix shrinks.
type grafiteBuilder struct {
	bits           int
	seed           uint64 // grafiteSeed; tests vary it
	count          int
	first          []byte // the first key; the prefix is first[:p]
	p              int
	minLen, maxLen int
	vals           []uint64 // distinct 8-byte windows after first[:p], in key order
	codes          []uint64
}

func (b *grafiteBuilder) AddKey(key []byte) {
	if b.count == 0 {
		b.first = append(b.first[:0], key...)
		b.p = len(key)
		b.minLen, b.maxLen = len(key), len(key)
		b.vals = append(b.vals[:0], 0)
		b.count = 1
		return
	}
	b.count++
	b.minLen, b.maxLen = min(b.minLen, len(key)), max(b.maxLen, len(key))
	if p := b.p; len(key) < p || !bytes.Equal(key[:p], b.first[:p]) {
		q := 0
		for q < p && q < len(key) && key[q] == b.first[q] {
			q++
		}
		b.shrink(q)
	}
	if x := grafiteWindow(key[b.p:]); x != b.vals[len(b.vals)-1] {
		b.vals = append(b.vals, x)
	}
}

// shrink makes first[:q] the prefix, for q < p.
func (b *grafiteBuilder) shrink(q int) {
	d := b.p - q
	if d >= 8 {
		b.vals = append(b.vals[:0], grafiteWindow(b.first[q:]))
	} else {
		front := grafiteWindow(b.first[q:b.p])
		out := b.vals[:0]
		for _, x := range b.vals {
			x = front | x>>(8*d)
			if len(out) == 0 || out[len(out)-1] != x {
				out = append(out, x)
			}
		}
		b.vals = out
	}
	b.p = q
}

func (b *grafiteBuilder) Finish(dst []byte) []byte {
	defer b.reset()
	if b.count == 0 {
		return append(dst, grafiteVersion, 0, 0)
	}
	prefix := b.first[:b.p]
	w := min(b.maxLen-b.p, 8)
	minSuf := min(b.minLen-b.p, w)
	vals := b.vals
	if w < 8 {
		// Suffixes of at most w bytes: the low 8-w bytes are padding.
		for i := range vals {
			vals[i] >>= 64 - 8*w
		}
	}
	// Keys come ascending, so vals are too; sort anyway, so that keys out
	// of order cost precision, never a false negative.
	if !slices.IsSorted(vals) {
		slices.Sort(vals)
	}
	vals = slices.Compact(vals)
	n := uint64(len(vals))
	if n > grafiteMaxCodes {
		return append(dst, grafiteMatchAll)
	}
	r := grafiteUniverseMax(w)
	if w < 8 {
		r++ // 2^(8w)
	}
	if hi, lo := bits.Mul64(n, 1<<(b.bits-2)); hi == 0 && lo < r {
		r = lo
	}
	seed := b.seed
	codes := b.codes[:0]
	for _, x := range vals {
		codes = append(codes, grafiteCode(x, seed, r))
	}
	slices.Sort(codes)
	codes = slices.Compact(codes)
	b.codes = codes
	m := uint64(len(codes))
	l := uint(bits.Len64(r/m) - 1)
	nb := (r-1)>>l + 1
	upperBits := m + nb
	ns := (nb + 1<<grafiteSampleLog - 1) >> grafiteSampleLog
	nu := (upperBits + 63) / 64 * 8
	nl := (m*uint64(l)+7)/8 + 8

	dst = append(dst, grafiteVersion)
	dst = binary.AppendUvarint(dst, uint64(len(prefix)))
	dst = append(dst, prefix...)
	dst = binary.AppendUvarint(dst, m)
	dst = append(dst, byte(w), byte(minSuf), byte(l))
	le := binary.LittleEndian
	dst = le.AppendUint64(dst, vals[0])
	dst = le.AppendUint64(dst, vals[len(vals)-1])
	dst = le.AppendUint64(dst, r)
	dst = le.AppendUint64(dst, seed)
	start := len(dst)
	dst = append(dst, make([]byte, 4*ns+nu+nl)...)
	samples := dst[start : start+int(4*ns)]
	upper := dst[start+int(4*ns) : start+int(4*ns+nu)]
	lower := dst[start+int(4*ns+nu):]

	mask := uint64(1)<<l - 1
	for i, c := range codes {
		pos := c>>l + uint64(i)
		upper[pos>>3] |= 1 << (pos & 7)
		o := uint64(i) * uint64(l)
		le.PutUint64(lower[o>>3:], le.Uint64(lower[o>>3:])|(c&mask)<<(o&7))
	}
	// The zero of rank z ends bucket z: it follows every code of high
	// part at most z, so it is at z plus their number.
	i := 0
	for j := uint64(0); j < ns; j++ {
		z := j << grafiteSampleLog
		for i < len(codes) && codes[i]>>l <= z {
			i++
		}
		le.PutUint32(samples[4*j:], uint32(z+uint64(i)))
	}
	return dst
}

func (b *grafiteBuilder) reset() {
	b.count = 0
	b.first = b.first[:0]
	b.p = 0
	b.vals = b.vals[:0]
	b.codes = b.codes[:0]
}
