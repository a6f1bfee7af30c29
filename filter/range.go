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
// Keys are mapped to integers monotonically, in mixed radix: the filter
// stores the common prefix c of the table's keys and, for each byte
// position after it, the smallest and largest byte the table's keys have
// there and whether some key ends there. A position whose keys use the
// bytes lo..hi (and end there, or not) is a digit of radix hi-lo+1 (+1 for
// the end, the smallest digit), and a key with prefix c maps to the number
// its digits spell; as many positions are used as the radices' product
// fits in 64 bits. So 16-byte decimal keys (radix 10 a position) map whole,
// where 8 bytes taken as they are would cover only half of them. A query
// key's byte below a position's range takes its smallest digit and zeros
// after; above the range, the integer after those of every key with its
// digits so far; keys
// sorting before every key with prefix c map to 0, keys after to the
// largest value. A query [lo, hi) becomes the integer range [f(lo), f(hi)]
// (f(hi)-1 when no table key below hi can share hi's integer), clipped to
// the table's smallest and largest integer. The filter is exact for ranges
// outside the table's key range; keys that differ only past the positions
// used share an integer, and a range that reaches into one's span answers
// true.
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
//	             for the format; other values, such as version 1's mapping
//	             of the first 8 bytes after the prefix, answer true too)
//	prefix       uvarint length, bytes: the keys' common prefix
//	m            uvarint: the number of codes; 0 for a filter without keys,
//	             which ends here
//	p            1 byte: the byte positions after the prefix that make the
//	             integer, 0 to 64
//	digits       3 bytes for each position: the smallest byte, the largest
//	             byte, and 1 if some key ends there (else 0)
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
	grafiteVersion  = 2
	grafiteMatchAll = 0

	grafiteFixed     = 1 + 4*8 // l, minV, maxV, r, seed
	grafiteSampleLog = 8
	grafiteSeed      = 0x6a09e667f3bcc909

	// grafiteMaxCodes bounds m so that positions in the upper bits
	// (at most 3m) fit the samples' 32 bits.
	grafiteMaxCodes = 1 << 30

	// grafiteMaxDigits is the most byte positions an integer spans (every
	// position at least radix 2 past the first 64 would overflow it).
	grafiteMaxDigits = 64
)

// grafiteView is a decoded filter, its arrays slices of the encoding.
type grafiteView struct {
	prefix     []byte
	digits     []byte // 3 bytes a position: smallest byte, largest, ends
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
	if len(f) < 1 || m > grafiteMaxCodes {
		return v, grafiteBad
	}
	np := int(f[0])
	if np > grafiteMaxDigits || len(f) < 1+3*np+grafiteFixed {
		return v, grafiteBad
	}
	v.digits = f[1 : 1+3*np]
	umax, ok := grafiteDigitsMax(v.digits)
	if !ok {
		return v, grafiteBad
	}
	f = f[1+3*np:]
	v.m = m
	v.l = uint(f[0])
	le := binary.LittleEndian
	v.minV, v.maxV = le.Uint64(f[1:]), le.Uint64(f[9:])
	v.r, v.seed = le.Uint64(f[17:]), le.Uint64(f[25:])
	f = f[grafiteFixed:]
	if v.l > 56 || v.r == 0 || m > v.r || v.minV > v.maxV || v.maxV > umax {
		return v, grafiteBad
	}
	if umax < math.MaxUint64 && v.r > umax+1 {
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

// grafiteRadix returns the radix of a position's 3 bytes of digits, and
// whether they are valid (smallest byte at most the largest, end 0 or 1).
func grafiteRadix(d []byte) (uint64, bool) {
	if d[0] > d[1] || d[2] > 1 {
		return 0, false
	}
	return uint64(d[1]-d[0]) + 1 + uint64(d[2]), true
}

// grafiteDigitsMax returns the largest integer the digits spell, and
// whether the digits are valid and their radices' product is at most 2^64.
func grafiteDigitsMax(digits []byte) (uint64, bool) {
	hi, lo := uint64(0), uint64(1) // the product, below 2^128
	for i := 0; i+3 <= len(digits); i += 3 {
		r, ok := grafiteRadix(digits[i : i+3])
		if !ok {
			return 0, false
		}
		if hi != 0 {
			if r != 1 {
				return 0, false
			}
			continue
		}
		hi, lo = bits.Mul64(lo, r)
		if hi > 1 || hi == 1 && lo != 0 {
			return 0, false
		}
	}
	return lo - 1, true // 2^64 wraps to 0, and 0-1 to the largest value
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
	a, _ := v.mapKey(lo)
	b, tight := v.mapKey(hi)
	if tight {
		// No table key below hi has hi's integer.
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

// mapKey returns key's integer, and whether it is tight: no table key
// smaller than key has the same integer. Every table key k has f(k) <=
// f(key) if k < key, and f(k) >= f(key) if k > key.
func (v *grafiteView) mapKey(key []byte) (x uint64, tight bool) {
	c := v.prefix
	if len(key) < len(c) || !bytes.Equal(key[:len(c)], c) {
		if bytes.Compare(key, c) < 0 {
			return 0, true // before every table key
		}
		return math.MaxUint64, false // after every table key
	}
	return grafiteMap(v.digits, key[len(c):])
}

// grafiteMap returns the integer of a key whose suffix after the prefix
// is s, and whether it is tight (see mapKey).
func grafiteMap(digits, s []byte) (x uint64, tight bool) {
	for i := 0; i+3 <= len(digits); i += 3 {
		d := digits[i : i+3]
		r := uint64(d[1]-d[0]) + 1 + uint64(d[2])
		j := i / 3
		if j >= len(s) {
			// s ends here: before every table key that goes on, and equal
			// to one that ends here. The smallest digit, zeros after.
			return grafiteFill(x*r, digits[i+3:], false), true
		}
		switch c := s[j]; {
		case c < d[0]:
			// Before every table key with these digits so far that goes
			// on, after those that end here: the smallest byte's digit.
			return grafiteFill(x*r+uint64(d[2]), digits[i+3:], false), true
		case c > d[1]:
			// After every table key with these digits so far: the
			// integer after theirs, which only larger keys can have.
			y := grafiteFill(x*r+r-1, digits[i+3:], true)
			if y == math.MaxUint64 {
				return y, false
			}
			return y + 1, true
		default:
			x = x*r + uint64(d[2]) + uint64(c-d[0])
		}
	}
	// Every position used: a key longer than them shares its integer with
	// the table keys that differ from it only later, some maybe smaller.
	return x, len(s) <= len(digits)/3
}

// grafiteFill appends to x the smallest digit (0) or the largest of each
// position of digits.
func grafiteFill(x uint64, digits []byte, largest bool) uint64 {
	for i := 0; i+3 <= len(digits); i += 3 {
		d := digits[i : i+3]
		r := uint64(d[1]-d[0]) + 1 + uint64(d[2])
		x *= r
		if largest {
			x += r - 1
		}
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

// grafiteBuilder keeps the keys until Finish, which needs the bytes every
// key has at each position after their common prefix to choose the
// digits.
type grafiteBuilder struct {
	bits  int
	seed  uint64 // grafiteSeed; tests vary it
	buf   []byte // the keys, one after another
	ends  []int  // the end of each key in buf
	vals  []uint64
	codes []uint64
}

func (b *grafiteBuilder) AddKey(key []byte) {
	b.buf = append(b.buf, key...)
	b.ends = append(b.ends, len(b.buf))
}

// key returns key i.
func (b *grafiteBuilder) key(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.buf[start:b.ends[i]]
}

func (b *grafiteBuilder) Finish(dst []byte) []byte {
	defer b.reset()
	n := len(b.ends)
	if n == 0 {
		return append(dst, grafiteVersion, 0, 0)
	}
	// The common prefix, and the longest suffix after it.
	first := b.key(0)
	p, maxLen := len(first), len(first)
	for i := 1; i < n; i++ {
		k := b.key(i)
		maxLen = max(maxLen, len(k))
		q := 0
		for q < p && q < len(k) && k[q] == first[q] {
			q++
		}
		p = q
	}
	prefix := first[:p]
	// Each position's smallest and largest byte, and whether a key ends
	// there, for as many positions as their radices' product fits 64 bits.
	np := min(maxLen-p, grafiteMaxDigits)
	digits := make([]byte, 3*np)
	for j := 0; j < np; j++ {
		digits[3*j] = 0xff
	}
	for i := 0; i < n; i++ {
		s := b.key(i)[p:]
		for j, c := range s[:min(len(s), np)] {
			digits[3*j] = min(digits[3*j], c)
			digits[3*j+1] = max(digits[3*j+1], c)
		}
		if len(s) < np {
			digits[3*len(s)+2] = 1
		}
	}
	used := 0
	for used < np {
		if _, ok := grafiteDigitsMax(digits[:3*(used+1)]); !ok {
			break
		}
		used++
	}
	digits = digits[:3*used]
	umax, _ := grafiteDigitsMax(digits)

	vals := b.vals[:0]
	for i := 0; i < n; i++ {
		x, _ := grafiteMap(digits, b.key(i)[p:])
		vals = append(vals, x)
	}
	// Keys come ascending, so vals are too; sort anyway, so that keys out
	// of order cost precision, never a false negative.
	if !slices.IsSorted(vals) {
		slices.Sort(vals)
	}
	vals = slices.Compact(vals)
	b.vals = vals
	nv := uint64(len(vals))
	if nv > grafiteMaxCodes {
		return append(dst, grafiteMatchAll)
	}
	r := umax // the universe has umax+1 integers; 2^64 is capped
	if umax < math.MaxUint64 {
		r = umax + 1
	}
	if hi, lo := bits.Mul64(nv, 1<<(b.bits-2)); hi == 0 && lo < r {
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
	dst = append(dst, byte(used))
	dst = append(dst, digits...)
	dst = append(dst, byte(l))
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
	b.buf = b.buf[:0]
	b.ends = b.ends[:0]
	b.vals = b.vals[:0]
	b.codes = b.codes[:0]
}
