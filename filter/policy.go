package filter

import (
	"fmt"
	"sync"
)

// Policy builds and queries the filter stored in each SSTable.
//
// Implementations are safe for concurrent use by multiple goroutines; the
// Builders they return are not.
type Policy interface {
	// Name identifies the filter encoding. It is written into each table,
	// and a reader only uses a filter whose name it knows. Two policies with
	// the same name must read each other's filters correctly.
	Name() string

	// NewBuilder returns an empty Builder for one filter.
	NewBuilder() Builder

	// MayContain reports whether key may have been added to the filter
	// encoded in filter. It is never false for a key that was added. It must
	// not panic or allocate on any input; bytes it cannot interpret give true.
	MayContain(filter, key []byte) bool
}

// Builder accumulates the keys of one filter.
type Builder interface {
	// AddKey adds a user key. Keys may come in any order and may repeat.
	// The builder does not retain key after AddKey returns.
	AddKey(key []byte)

	// Finish appends the encoded filter of every key added since the last
	// Finish to dst, returns the extended slice, and resets the builder so it
	// can build the next filter. The bytes of dst before len(dst) are left
	// untouched.
	Finish(dst []byte) []byte
}

// BitsPerKeyer is implemented by the policies whose filters are sized by a
// bits-per-key budget: the three Bloom policies of this package (standard,
// LevelDB and blocked; not the binary fuse policy). Other packages use it to
// record a table's filter parameters (sstable properties) and to report them
// (kvbench, kvtool), via a type assertion on a Policy.
type BitsPerKeyer interface {
	// BitsPerKey is the budget after clamping to [MinBitsPerKey,
	// MaxBitsPerKey].
	BitsPerKey() int
	// NumProbes is the number of probes (k, hash functions) per key that
	// new filters use. Readers take k from the filter bytes, not from here.
	NumProbes() int
}

const (
	// MinBitsPerKey is the smallest bits-per-key budget a Bloom policy uses;
	// a smaller (zero or negative) argument to NewBloomPolicy,
	// NewLevelDBBloomPolicy or NewBlockedBloomPolicy is raised to it.
	// Callers that want to reject bad options (such as package db) validate
	// them before calling.
	MinBitsPerKey = 1

	// MaxBitsPerKey is the largest bits-per-key budget a Bloom policy uses;
	// a larger argument is lowered to it. With k capped at MaxProbes, more
	// bits per key would only make the filter larger, and the cap keeps
	// n*bitsPerKey far from overflow.
	MaxBitsPerKey = 1024

	// MaxProbes is the largest number of probes a Bloom policy uses, and the
	// largest k byte a Bloom filter reader accepts: a filter whose k byte is
	// larger (an encoding this package does not know) may contain any key.
	MaxProbes = 30
)

// Validate reports whether p was made with arguments in range. The
// constructors never panic: they clamp a bits-per-key budget below
// MinBitsPerKey or above MaxBitsPerKey. Validate lets an options check (such
// as db.Open's) refuse a negative budget instead of silently using 1.
func Validate(p Policy) error {
	if v, ok := p.(interface{ validate() error }); ok {
		return v.validate()
	}
	return nil
}

func checkRequested(bitsPerKey int) error {
	if bitsPerKey < 0 {
		return fmt.Errorf("filter: bits per key %d is negative", bitsPerKey)
	}
	return nil
}

// clampBitsPerKey limits a bits-per-key budget to [MinBitsPerKey,
// MaxBitsPerKey].
func clampBitsPerKey(bitsPerKey int) int {
	return min(max(bitsPerKey, MinBitsPerKey), MaxBitsPerKey)
}

// clampProbes limits a probe count to [1, MaxProbes].
func clampProbes(k int) int {
	return min(max(k, 1), MaxProbes)
}

// None is the policy under which tables get no filter. Package db compares
// Options.FilterPolicy with it (p == filter.None, or IsNone(p)) and then writes
// no filter block. Should it be used anyway, its builders produce empty
// filters and its MayContain is always true, so nothing is ever skipped.
var None Policy = nonePolicy{}

// IsNone reports whether p is None. A nil Policy is not None: package db
// reads nil as "the default filter".
func IsNone(p Policy) bool {
	_, ok := p.(nonePolicy)
	return ok
}

type nonePolicy struct{}

// noneName is the name of None; no table should record it, since None
// writes no filter.
const noneName = "bloomkv.NoFilter"

func (nonePolicy) Name() string                { return noneName }
func (nonePolicy) NewBuilder() Builder         { return noneBuilder{} }
func (nonePolicy) MayContain(_, _ []byte) bool { return true }

type noneBuilder struct{}

func (noneBuilder) AddKey([]byte)            {}
func (noneBuilder) Finish(dst []byte) []byte { return dst }

// BatchPolicy is implemented by policies that can answer many probes at
// once faster than a loop of MayContain, such as the standard Bloom policy
// of NewBloomPolicy. A lookup of many keys, such as package db's MultiGet,
// uses it through MayContainBatch, with the keys of one batch often bound
// for the filters of different tables.
type BatchPolicy interface {
	Policy
	// MayContainBatch sets maybe[i] to MayContain(filters[i], keys[i]) for
	// every i < len(keys). filters and maybe must be at least as long as
	// keys; a batch against one filter repeats it in filters. Like
	// MayContain, it must not panic or allocate on any input.
	MayContainBatch(filters, keys [][]byte, maybe []bool)
}

// HashBatchPolicy is a BatchPolicy whose probes see a key only through a
// 64-bit hash of it, the same for every filter of the policy's name. A
// caller that asks several filters about the same keys, as package db's
// MultiGet asks one filter a level, hashes each key once with KeyHash
// (the whole batch at once with KeyHashes) and probes with
// MayContainHashBatch.
type HashBatchPolicy interface {
	BatchPolicy
	// KeyHash returns the hash of key that the policy's probes use.
	KeyHash(key []byte) uint64
	// MayContainHashBatch sets maybe[i] to MayContain(filters[i], k) for
	// the key k whose KeyHash is hashes[i], for every i < len(hashes).
	// filters and maybe must be at least as long as hashes. It must not
	// panic or allocate on any input.
	MayContainHashBatch(filters [][]byte, hashes []uint64, maybe []bool)
}

// KeyHashIsXXHash64 reports whether p's KeyHash is the 64-bit xxhash of
// the key (seed 0), as the package's Bloom policies' is: a caller holding
// those hashes already (package db's reads compute them for the
// memtables' filters) may probe p's filters with them.
func KeyHashIsXXHash64(p HashBatchPolicy) bool {
	_, ok := p.(*bloomPolicy)
	return ok
}

// KeyHashes sets hashes[i] to p.KeyHash(keys[i]) for every i < len(keys),
// in one call for the package's Bloom policies (without a call through
// the interface per key). It panics if hashes is shorter than keys.
func KeyHashes(p HashBatchPolicy, keys [][]byte, hashes []uint64) {
	hashes = hashes[:len(keys)]
	if b, ok := p.(interface {
		keyHashes(keys [][]byte, hashes []uint64)
	}); ok {
		b.keyHashes(keys, hashes)
		return
	}
	for i, k := range keys {
		hashes[i] = p.KeyHash(k)
	}
}

// MayContainHashBatchOf is MayContainHashBatch for keys that share
// filters, as a MultiGet's keys share a level's few tables: it sets
// maybe[i] to whether filters[which[i]] may contain the key whose
// KeyHash is hashes[i], for every i < len(hashes). For the package's
// Bloom policies, with up to 64 filters, it probes in one batch without
// gathering a filter a key, and reads each filter's trailer once. It
// panics if which or maybe is shorter than hashes, or if an index of
// which is outside filters.
func MayContainHashBatchOf(p HashBatchPolicy, filters [][]byte, which []uint8, hashes []uint64, maybe []bool) {
	which, maybe = which[:len(hashes)], maybe[:len(hashes)]
	for len(hashes) > 0 {
		m := min(len(hashes), 64)
		if b, ok := p.(interface {
			mayContainHashBatchOf(filters [][]byte, which []uint8, hashes []uint64, maybe []bool)
		}); ok && len(filters) <= 64 {
			b.mayContainHashBatchOf(filters, which[:m], hashes[:m], maybe[:m])
		} else {
			// The filters gathered a key each, in a pooled array: one on
			// the stack would escape through the interface call, an
			// allocation a batch.
			fs := gatheredFilters.Get().(*[64][]byte)
			for i, w := range which[:m] {
				fs[i] = filters[w]
			}
			p.MayContainHashBatch(fs[:m], hashes[:m], maybe[:m])
			clear(fs[:m]) // the pool keeps no filter alive
			gatheredFilters.Put(fs)
		}
		which, hashes, maybe = which[m:], hashes[m:], maybe[m:]
	}
}

// gatheredFilters holds MayContainHashBatchOf's arrays of filters for
// the policies outside the package.
var gatheredFilters = sync.Pool{New: func() any { return new([64][]byte) }}

// MayContainBatch sets maybe[i] to p.MayContain(filters[i], keys[i]) for
// every i < len(keys), through p's MayContainBatch when p is a
// BatchPolicy. It panics if filters or maybe is shorter than keys.
func MayContainBatch(p Policy, filters, keys [][]byte, maybe []bool) {
	filters, maybe = filters[:len(keys)], maybe[:len(keys)]
	if bp, ok := p.(BatchPolicy); ok {
		bp.MayContainBatch(filters, keys, maybe)
		return
	}
	for i, k := range keys {
		maybe[i] = p.MayContain(filters[i], k)
	}
}
