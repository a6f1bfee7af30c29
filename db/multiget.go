package db

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// MultiGet looks up many keys at once. Entry i of the results is what
// Get(keys[i], ro) would return: a copy of the value and a nil error, or
// nil and an error (wrapping ErrNotFound for an absent key). Every key is
// read at one sequence number, so the answers are one consistent view of
// the store, as through a snapshot. Keys may come in any order and may
// repeat; keys is not modified.
//
// It shares what a loop of Get would repeat: one read state, one sequence
// number and one registration with Close for the whole batch; the tables
// are visited level by level for every key still unanswered, with the
// filter counts added once per level. The filter counters of Metrics count
// its probes as they count Get's, and Metrics.Gets counts each key.
func (d *DB) MultiGet(keys [][]byte, ro *ReadOptions) ([][]byte, []error) {
	if len(keys) == 1 {
		// A batch of one is a Get, with one allocation for both results.
		one := new(struct {
			v [1][]byte
			e [1]error
		})
		one.v[0], one.e[0] = d.Get(keys[0], ro)
		return one.v[:], one.e[:]
	}
	values, errs := make([][]byte, len(keys)), make([]error, len(keys))
	fail := func(err error) ([][]byte, []error) {
		for i := range errs {
			errs[i] = err
		}
		return values, errs
	}
	readCell := d.reads.Inc()
	defer d.reads.DecAt(readCell)
	if d.closed.Load() {
		return fail(ErrClosed)
	}
	if len(keys) == 0 {
		return values, errs
	}
	// The read state first, the sequence number second (see Get).
	ref := d.loadReadState()
	defer ref.unref()
	seq, err := d.readSeq(ro)
	if err != nil {
		return fail(err)
	}
	rs := ref.rs
	if rs.hasRangeDels() {
		// Each key against the tombstones, as Get does.
		d.m.gets.Add(int64(len(keys)))
		for i, k := range keys {
			values[i], errs[i] = d.getRangeDels(rs, k, seq)
		}
		return values, errs
	}
	d.m.gets.Add(int64(len(keys)))

	var pbuf [64]int
	pending := pbuf[:0]
	if len(keys) > len(pbuf) {
		pending = make([]int, 0, len(keys))
	}
	memEmpty := rs.mem.Empty() && (rs.imm == nil || rs.imm.Empty())
	for i, k := range keys {
		if memEmpty {
			pending = append(pending, i)
			continue
		}
		if v, kind, ok := rs.mem.Get(k, seq); ok {
			values[i], errs[i] = found(v, kind)
			continue
		}
		if rs.imm != nil {
			if v, kind, ok := rs.imm.Get(k, seq); ok {
				values[i], errs[i] = found(v, kind)
				continue
			}
		}
		pending = append(pending, i)
	}

	// In key order, the keys meet each level's tables in order: one walk
	// over a level replaces a binary search per key, and the keys one
	// table holds come together, so it is fetched from the table cache
	// once for all of them.
	sortByKey(pending, keys)

	mg := multiGet{d: d, keys: keys, values: values, errs: errs, seq: seq}
	for level := 0; level < manifest.NumLevels && len(pending) > 0; level++ {
		files := rs.v.Files[level]
		if len(files) == 0 {
			continue
		}
		mg.level = level
		if level == 0 {
			// Newest first; a key one table answers is not asked of the
			// older ones.
			for _, f := range files {
				lo, hi := base.UserKey(f.Smallest), base.UserKey(f.Largest)
				mg.f, mg.r, mg.rerr = f, nil, nil
				out := pending[:0]
				for _, i := range pending {
					k := keys[i]
					if bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) > 0 || !mg.lookup(i) {
						out = append(out, i)
					}
				}
				pending = out
			}
		} else {
			mg.f = nil
			out := pending[:0]
			j := 0 // the first table of the level not wholly before the key
			for _, i := range pending {
				k := keys[i]
				for j < len(files) && bytes.Compare(base.UserKey(files[j].Largest), k) < 0 {
					j++
				}
				if j == len(files) || bytes.Compare(k, base.UserKey(files[j].Smallest)) < 0 {
					out = append(out, i)
					continue
				}
				if f := files[j]; f != mg.f {
					mg.f, mg.r, mg.rerr = f, nil, nil
				}
				if !mg.lookup(i) {
					out = append(out, i)
				}
			}
			pending = out
		}
		mg.flushCounters()
	}
	for _, i := range pending {
		errs[i] = ErrNotFound
	}
	return values, errs
}

// sortByKey sorts the indexes idx by their keys. A sort that compares
// keys through a function costs more than the binary searches it saves,
// so it sorts plain integers: the 8 bytes after the keys' common prefix,
// with the index in the low bits, and then settles any run of keys those
// bytes do not tell apart with bytes.Compare.
func sortByKey(idx []int, keys [][]byte) {
	if len(idx) < 2 {
		return
	}
	first := keys[idx[0]]
	cp := len(first)
	for _, i := range idx[1:] {
		k := keys[i]
		n := min(cp, len(k))
		j := 0
		for j < n && k[j] == first[j] {
			j++
		}
		cp = j
	}
	ibits := uint(bits.Len(uint(len(idx) - 1))) // bits for a position in idx
	var buf [64]uint64
	packed := buf[:0]
	if len(idx) > len(buf) {
		packed = make([]uint64, 0, len(idx))
	}
	for pos, i := range idx {
		var b [8]byte
		if k := keys[i]; cp < len(k) {
			copy(b[:], k[cp:])
		}
		packed = append(packed, binary.BigEndian.Uint64(b[:])>>ibits<<ibits|uint64(pos))
	}
	slices.Sort(packed)
	var obuf [64]int
	orig := obuf[:0]
	if len(idx) > len(obuf) {
		orig = make([]int, 0, len(idx))
	}
	orig = append(orig, idx...)
	mask := uint64(1)<<ibits - 1
	for j, p := range packed {
		idx[j] = orig[p&mask]
	}
	// Keys whose packed prefixes are equal may be in any order among
	// themselves: order each such run by the keys.
	for lo := 0; lo < len(packed); {
		hi := lo + 1
		for hi < len(packed) && packed[hi]&^mask == packed[lo]&^mask {
			hi++
		}
		if hi-lo > 1 {
			slices.SortFunc(idx[lo:hi], func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
		}
		lo = hi
	}
}

// multiGet is the state of one MultiGet: the table being read and the
// filter counts not yet added to the DB's counters.
type multiGet struct {
	d      *DB
	keys   [][]byte
	values [][]byte
	errs   []error
	seq    uint64

	level int
	f     *manifest.FileMetadata
	r     *sstable.Reader // nil until a key of f needs it
	rerr  error

	checks, positives, truePositives int64
	seek                             [64]byte
}

// lookup looks key i up in table mg.f and reports whether the table
// answered it (a value, a deletion or an error).
func (mg *multiGet) lookup(i int) bool {
	if mg.r == nil && mg.rerr == nil {
		mg.r, mg.rerr = mg.d.tables.get(mg.f)
	}
	if mg.rerr != nil {
		mg.errs[i] = mg.rerr
		return true
	}
	r, key := mg.r, mg.keys[i]
	filtered := r.HasFilter()
	if filtered {
		mg.checks++
		if !r.MayContain(key) {
			return false
		}
		mg.positives++
	}
	seek := base.AppendInternalKey(mg.seek[:0], key, mg.seq, base.KindSeek)
	v, kind, ok, err := r.Get(seek, key)
	switch {
	case err != nil:
		mg.errs[i] = wrapf(err, "table %06d", mg.f.FileNum)
		return true
	case !ok:
		return false
	}
	if filtered {
		mg.truePositives++
	}
	if kind == base.KindDelete {
		mg.errs[i] = ErrNotFound
	} else {
		mg.values[i] = v // already the caller's copy
	}
	return true
}

// flushCounters adds the level's filter counts to the DB's counters.
func (mg *multiGet) flushCounters() {
	lm := &mg.d.m.levels[mg.level]
	if mg.checks > 0 {
		lm.filterChecks.Add(mg.checks)
	}
	if mg.positives > 0 {
		lm.filterPositives.Add(mg.positives)
	}
	if mg.truePositives > 0 {
		lm.filterTruePositives.Add(mg.truePositives)
	}
	mg.checks, mg.positives, mg.truePositives = 0, 0, 0
}
