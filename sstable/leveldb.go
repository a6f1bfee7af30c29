package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
)

// This file holds what only LevelDB's table format has: its filter block,
// which keeps one filter for each 2 KiB range of data-block offsets, and
// its rules for shortening index keys.

// levelDBFilter is a checked LevelDB filter block:
//
//	filter 0 | ... | filter N-1 | fixed32 offset of filter 0 | ... |
//	fixed32 offset of filter N-1 | fixed32 offset of that array | base_lg
//
// Filter i holds the user keys of the data blocks whose offset o has
// o>>base_lg == i; it lies at [offset i, offset i+1), the last one ending
// where the offset array starts.
type levelDBFilter struct {
	block  []byte // the whole filter block
	array  int    // start of the offset array; the filters lie in block[:array]
	num    int    // number of filters
	baseLg uint8
}

// parseLevelDBFilter checks a LevelDB filter block: the offset array must
// fit, hold whole fixed32s, and give filters that are in order and end at
// or before the array. Any violation is corruption (LevelDB reads such a
// block leniently; no writer makes one).
func parseLevelDBFilter(b []byte) (levelDBFilter, error) {
	n := len(b)
	if n < 5 {
		return levelDBFilter{}, base.CorruptionErrorf("sstable: LevelDB filter block of %d bytes", n)
	}
	f := levelDBFilter{block: b, baseLg: b[n-1]}
	arr := uint64(binary.LittleEndian.Uint32(b[n-5:]))
	if arr > uint64(n-5) || (uint64(n-5)-arr)%4 != 0 {
		return levelDBFilter{}, base.CorruptionErrorf("sstable: LevelDB filter block of %d bytes puts its offset array at %d", n, arr)
	}
	if f.baseLg >= 64 {
		return levelDBFilter{}, base.CorruptionErrorf("sstable: LevelDB filter block with base_lg %d", f.baseLg)
	}
	f.array = int(arr)
	f.num = (n - 5 - f.array) / 4
	// Offsets i and i+1 bound filter i; the word after the last offset is
	// the array's own offset, which ends the last filter.
	prev := uint32(0)
	for i := 0; i <= f.num; i++ {
		off := binary.LittleEndian.Uint32(b[f.array+4*i:])
		if off < prev || uint64(off) > arr {
			return levelDBFilter{}, base.CorruptionErrorf("sstable: LevelDB filter %d at offset %d, after %d, array at %d", i, off, prev, arr)
		}
		prev = off
	}
	return f, nil
}

// forBlock returns the filter of the data block at offset off, and false
// when there is none to ask: no filter covers off, or the filter is empty
// (which LevelDB writes only for ranges where no block starts, so a block
// there means the table was not written as LevelDB writes).
func (f *levelDBFilter) forBlock(off uint64) ([]byte, bool) {
	i := off >> f.baseLg
	if i >= uint64(f.num) {
		return nil, false
	}
	start := binary.LittleEndian.Uint32(f.block[f.array+4*int(i):])
	limit := binary.LittleEndian.Uint32(f.block[f.array+4*int(i)+4:])
	if start >= limit {
		return nil, false
	}
	return f.block[start:limit:limit], true
}

// levelDBMayContain is MayContain for a LevelDB table with a usable
// filter. The entries of ukey begin in the block that a seek for its
// newest possible entry finds, and may continue in the following blocks
// only while the separators still have ukey as their user key; ukey is in
// the table only if one of those blocks' filters may contain it. An index
// it cannot read gives true: never a wrong "no".
func (r *Reader) levelDBMayContain(ukey []byte) bool {
	if s := &r.ldbSeps; s.ends != nil {
		// The same walk over the decoded index: a binary search over
		// whole user keys, with no block entry to decode.
		n := len(s.ends)
		lo, hi := 0, n
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if bytes.Compare(s.key(m), ukey) < 0 {
				lo = m + 1
			} else {
				hi = m
			}
		}
		for i := lo; i < n; i++ {
			f, ok := r.ldbFilter.forBlock(s.offs[i])
			if !ok || r.policy.MayContain(f, ukey) {
				return true
			}
			if bytes.Compare(s.key(i), ukey) > 0 {
				return false
			}
		}
		return false
	}
	its, _ := getItersPool.Get().(*getIters)
	if its == nil {
		its = new(getIters)
	}
	defer getItersPool.Put(its)
	its.seek = base.AppendInternalKey(its.seek[:0], ukey, base.MaxSeqNum, base.KindSeek)
	idx := &its.idx
	if idx.init(false, r.index) != nil {
		return true
	}
	for ok := idx.SeekGE(its.seek); ok; ok = idx.Next() {
		h, _, err := decodeHandle(idx.Value())
		if err != nil {
			return true
		}
		f, ok := r.ldbFilter.forBlock(h.offset)
		if !ok || r.policy.MayContain(f, ukey) {
			return true
		}
		if bytes.Compare(base.UserKey(idx.Key()), ukey) > 0 {
			return false // every later block holds only greater user keys
		}
	}
	// Past every separator: every key of the table sorts before ukey's.
	return idx.Error() != nil
}

// levelDBFilterWriter builds a LevelDB filter block: keys go into the
// filter of the 2 KiB offset range where their data block starts.
type levelDBFilterWriter struct {
	b       filter.Builder
	buf     []byte   // the filters written so far
	offsets []uint32 // where each filter starts in buf
	nkeys   int      // keys added since the last filter was made
}

// addKey adds the user key of an entry of the current data block.
func (f *levelDBFilterWriter) addKey(ukey []byte) {
	f.b.AddKey(ukey)
	f.nkeys++
}

// startBlock is called with the offset of the next data block: it
// finishes the filters of every range before that offset's, leaving the
// ranges where no block started with empty filters.
func (f *levelDBFilterWriter) startBlock(off uint64) {
	i := off >> levelDBFilterBaseLg
	for uint64(len(f.offsets)) < i {
		f.generate()
	}
}

// generate closes the current filter: empty when no key was added.
func (f *levelDBFilterWriter) generate() {
	f.offsets = append(f.offsets, uint32(len(f.buf)))
	if f.nkeys > 0 {
		f.buf = f.b.Finish(f.buf)
		f.nkeys = 0
	}
}

// finish returns the filter block, or an error when it would be too large
// for its 32-bit offsets.
func (f *levelDBFilterWriter) finish() ([]byte, error) {
	if f.nkeys > 0 {
		f.generate()
	}
	if uint64(len(f.buf))+4*uint64(len(f.offsets)) > math.MaxUint32 {
		return nil, fmt.Errorf("sstable: LevelDB filter block of %d bytes would overflow its 32-bit offsets", len(f.buf))
	}
	array := uint32(len(f.buf))
	out := f.buf
	for _, o := range f.offsets {
		out = binary.LittleEndian.AppendUint32(out, o)
	}
	out = binary.LittleEndian.AppendUint32(out, array)
	return append(out, levelDBFilterBaseLg), nil
}

// appendLevelDBSeparator is appendSeparator by LevelDB's rule, so that a
// LevelDB-format table's index is byte for byte LevelDB's: the user key of
// a is shortened (cut after the first byte where it differs from b's, that
// byte incremented) only when that makes it physically shorter, and is
// left whole otherwise.
func appendLevelDBSeparator(dst, a, b []byte) []byte {
	ua, ub := base.UserKey(a), base.UserKey(b)
	n := 0
	for n < len(ua) && n < len(ub) && ua[n] == ub[n] {
		n++
	}
	if n+1 < len(ua) && n < len(ub) && ua[n] < 0xff && ua[n]+1 < ub[n] {
		dst = append(dst, ua[:n+1]...)
		dst[len(dst)-1]++
		return base.AppendInternalKey(dst, nil, base.MaxSeqNum, base.KindSeek)
	}
	return append(dst, a...)
}

// appendLevelDBSuccessor is appendSuccessor by LevelDB's rule: a's user key
// is cut after its first byte below 0xff, that byte incremented, only when
// that makes it physically shorter.
func appendLevelDBSuccessor(dst, a []byte) []byte {
	ua := base.UserKey(a)
	for i, c := range ua {
		if c != 0xff {
			if i+1 == len(ua) {
				break
			}
			dst = append(dst, ua[:i+1]...)
			dst[len(dst)-1]++
			return base.AppendInternalKey(dst, nil, base.MaxSeqNum, base.KindSeek)
		}
	}
	return append(dst, a...)
}

// ScanProperties returns the table's properties with the counts a LevelDB
// table does not record computed by reading every data block once (from
// the file, not through the cache): NumEntries, NumDeletions, RawKeySize,
// RawValueSize, Smallest, Largest, FilterBitsPerKey and Compression
// ("snappy" when any data block is snappy-compressed, else "none"). For a
// bloomkv table, which records them all, it reads nothing and returns a
// copy of Properties.
func (r *Reader) ScanProperties() (*Properties, error) {
	if r.closed {
		return nil, errClosed
	}
	p := *r.props
	if r.format == FormatBloomKV {
		return &p, nil
	}
	var idx, data blockIter
	if err := idx.init(false, r.index); err != nil {
		return nil, err
	}
	var last []byte
	snappyBlocks := 0
	for ok := idx.First(); ok; ok = idx.Next() {
		h, _, err := decodeHandle(idx.Value())
		if err != nil {
			return nil, err
		}
		if err := checkRegion(h, 0, r.dataEnd, "data"); err != nil {
			return nil, err
		}
		buf := make([]byte, h.size+BlockTrailerLen)
		if err := r.readAt(buf, h.offset); err != nil {
			return nil, err
		}
		b, err := decodeStoredBlock(r.format, buf, h, r.opts.skipChecksums)
		if err != nil {
			return nil, err
		}
		if Compression(buf[h.size]) == SnappyCompression {
			snappyBlocks++
		}
		if err := data.init(false, b); err != nil {
			return nil, err
		}
		for ok := data.First(); ok; ok = data.Next() {
			_, _, kind, ok := base.ParseInternalKey(data.Key())
			if !ok {
				return nil, base.CorruptionErrorf("sstable: block at offset %d holds malformed key %q", h.offset, data.Key())
			}
			if p.Smallest == nil {
				p.Smallest = bytes.Clone(data.Key())
			}
			last = append(last[:0], data.Key()...)
			p.NumEntries++
			if kind == base.KindDelete {
				p.NumDeletions++
			}
			p.RawKeySize += uint64(len(data.Key()))
			p.RawValueSize += uint64(len(data.Value()))
		}
		if err := data.Error(); err != nil {
			return nil, err
		}
	}
	if err := idx.Error(); err != nil {
		return nil, err
	}
	if p.Smallest != nil {
		p.Largest = bytes.Clone(last)
	}
	p.Compression = NoCompression.String()
	if snappyBlocks > 0 {
		p.Compression = SnappyCompression.String()
	}
	if p.FilterSize > 0 && p.NumEntries > 0 {
		p.FilterBitsPerKey = math.Round(float64(p.FilterSize)*8/float64(p.NumEntries)*1e4) / 1e4
	}
	return &p, nil
}

// levelDBSeps is a LevelDB table's index decoded once, for MayContain: the
// user key of each separator, in order, and the offset of the data block
// it bounds. A LevelDB filter is found through the index on every probe,
// and walking the index block's prefix-compressed entries cost about three
// times the probe itself; the decoded index costs its keys' bytes plus 12
// bytes an entry, next to the index block it copies.
type levelDBSeps struct {
	keys []byte   // the separators' user keys, one after another
	ends []uint32 // separator i is keys[ends[i-1]:ends[i]] (ends[-1] = 0)
	offs []uint64 // separator i's data block starts at offs[i]
}

func (s *levelDBSeps) key(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.keys[start:s.ends[i]:s.ends[i]]
}

// decodeLevelDBSeps decodes a checked index block (Reader.checkIndex), or
// returns the zero levelDBSeps, which MayContain reads as "walk the index
// block", if the block does not decode (it did once, so it will not).
func decodeLevelDBSeps(index []byte) levelDBSeps {
	var it blockIter
	if it.init(false, index) != nil {
		return levelDBSeps{}
	}
	var s levelDBSeps
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		h, _, err := decodeHandle(it.Value())
		if err != nil || len(k) < base.TrailerLen || uint64(len(s.keys))+uint64(len(k)) > math.MaxUint32 {
			return levelDBSeps{}
		}
		s.keys = append(s.keys, base.UserKey(k)...)
		s.ends = append(s.ends, uint32(len(s.keys)))
		s.offs = append(s.offs, h.offset)
	}
	if it.Error() != nil || s.ends == nil {
		return levelDBSeps{}
	}
	s.keys = slices.Clip(s.keys)
	return s
}
