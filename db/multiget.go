package db

import (
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
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
	d.multiGet(keys, values, errs, ro)
	return values, errs
}

// MultiGetInto is MultiGet with the results written into values and errs,
// which the caller owns and may reuse from call to call, as RocksDB's
// MultiGet writes into the caller's arrays: entry i of values and errs is
// set to what Get(keys[i], ro) would return (each found value is a new
// copy, as Get's is; an absent key's entry is nil and an error wrapping
// ErrNotFound). A loop of Get allocates nothing for an absent key, and
// neither does MultiGetInto; MultiGet allocates its two result slices
// (for a batch of 64 keys, 2.5 KiB).
//
// values and errs must both have len(keys) entries, and values must not
// share memory with keys (the batch reads keys[i] after writing values of
// other keys; a batch of one may, as Get reads its key before the value
// is written): otherwise it returns an error wrapping ErrInvalidArgument
// and reads nothing. It returns nil otherwise; the errors of the lookups
// are in errs.
func (d *DB) MultiGetInto(keys, values [][]byte, errs []error, ro *ReadOptions) error {
	if len(values) != len(keys) || len(errs) != len(keys) {
		return fmt.Errorf("%w: MultiGetInto of %d keys into %d values and %d errors",
			ErrInvalidArgument, len(keys), len(values), len(errs))
	}
	switch {
	case len(keys) == 0:
		return nil
	case len(keys) == 1:
		// Get reads the key before it returns the value.
		values[0], errs[0] = d.Get(keys[0], ro)
		return nil
	case overlaps(keys, values):
		return fmt.Errorf("%w: MultiGetInto's values share memory with its keys", ErrInvalidArgument)
	}
	clear(values)
	clear(errs)
	d.multiGet(keys, values, errs, ro)
	return nil
}

// overlaps reports whether two non-empty slices share any element of
// their backing arrays.
func overlaps(a, b [][]byte) bool {
	const size = unsafe.Sizeof([]byte(nil))
	a0, b0 := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(len(b))*size && b0 < a0+uintptr(len(a))*size
}

// multiGet is MultiGet with the results written into values and errs,
// which have len(keys) entries, all zero.
func (d *DB) multiGet(keys, values [][]byte, errs []error, ro *ReadOptions) {
	fail := func(err error) {
		for i := range errs {
			errs[i] = err
		}
	}
	readCell := d.reads.Inc()
	defer d.reads.DecAt(readCell)
	if d.closed.Load() {
		fail(ErrClosed)
		return
	}
	// The read state first, the sequence number second (see Get).
	ref := d.loadReadState()
	defer ref.unrefAsync()
	seq, err := d.readSeq(ro)
	if err != nil {
		fail(err)
		return
	}
	rs := ref.rs
	if rs.hasRangeDels() || rs.v.SharedBoundaries != ([manifest.NumLevels]bool{}) || len(rs.v.Files[0]) > maxL0Tables {
		// Each key on its own, as Get does: against the tombstones, or
		// through every table a LevelDB level split a key's versions
		// between (the walk below gives each key one table per level),
		// or through more level-0 tables than deeper asks at once
		// (maxL0Tables).
		for i, k := range keys {
			values[i], errs[i] = d.get(rs, k, seq)
		}
		return
	}
	d.m.gets.Add(int64(len(keys)))

	var pbuf [64]int
	pending := pbuf[:0]
	if len(keys) > len(pbuf) {
		pending = make([]int, 0, len(keys))
	}
	// The batch's state lives in the pooled scratch: the helpers of
	// lookupCands reach it through a closure, which would move a local one
	// to the heap on every call.
	sc := mgScratchPool.Get().(*mgScratch)
	mg := &sc.mg
	*mg = multiGet{d: d, keys: keys, values: values, errs: errs, seq: seq, sc: sc}
	if rs.mem.Empty() && (rs.imm == nil || rs.imm.Empty()) {
		pending = pending[:len(keys)]
		for i := range pending {
			pending[i] = i
		}
	} else {
		pending = mg.memTables(rs, pending)
	}

	// Then the tables, all at once.
	if len(pending) > 0 {
		mg.deeper(rs.v, pending, len(pending) == len(keys))
	}
	q := max(sc.queued, sc.n)
	clear(sc.keys[:q])
	clear(sc.filters[:q])
	clear(sc.files[:q])
	sc.queued = 0
	clear(sc.cands)
	sc.cands = sc.cands[:0]
	sc.mg = multiGet{} // the pool keeps no DB, keys or results
	mgScratchPool.Put(sc)
}

// memTables answers from the memtables the keys they hold, setting
// their values and errs, and returns pending extended by the indexes of
// the others, in increasing order. As Get does, it searches a memtable
// for a key only when the memtable's filter lets the key through. The
// keys are hashed once, in sc.keyHash[0], for both memtables and for the
// tables' filters when their policy hashes alike (memHashed); the filter
// counts are added once for the batch.
func (mg *multiGet) memTables(rs *readState, pending []int) []int {
	keys, sc := mg.keys, mg.sc
	mems := [2]*memtable.MemTable{rs.mem, rs.imm}
	if rs.mem.Empty() {
		mems[0] = nil
	}
	// With filters, the keys are hashed, then each memtable's filter is
	// asked about all of them, before any search: bit m of pass[i] is set
	// when memtable m may hold key i (or has no filter), so the checks'
	// loads overlap.
	var pass []uint8
	f0 := mems[0] != nil && mems[0].HasFilter()
	f1 := mems[1] != nil && mems[1].HasFilter()
	if f0 || f1 {
		kh := sc.keyHash[0]
		if cap(kh) < len(keys) {
			kh = make([]uint64, len(keys))
		}
		if cap(sc.memPass) < len(keys) {
			sc.memPass = make([]uint8, len(keys))
		}
		kh, pass = kh[:len(keys)], sc.memPass[:len(keys)]
		for i, k := range keys {
			kh[i] = memtable.KeyHash(k)
			pass[i] = 3
		}
		for m, mem := range mems {
			if mem != nil {
				mem.FilterHashes(kh, pass, 1<<m)
			}
		}
		sc.keyHash[0], mg.memHashed = kh, true
	}
	// A key to search for is one of a memtable in use (bit m of search)
	// whose filter lets it through or that has none (bit m of pass[i]).
	search := uint8(b2i(mems[0] != nil) | b2i(mems[1] != nil)<<1)
	nFiltered := int64(b2i(f0) + b2i(f1))
	var c struct{ positives, negatives, truePositives int64 }
	for i, k := range keys {
		look := search
		if pass != nil {
			look &= pass[i]
		}
		if look == 0 {
			// Every memtable's filter ruled the key out: the usual case.
			c.negatives += nFiltered
			pending = append(pending, i)
			continue
		}
		answered := false
		for m, mem := range mems {
			if mem == nil {
				continue
			}
			filtered := mem.HasFilter()
			if filtered {
				if pass[i]>>m&1 == 0 {
					c.negatives++
					continue
				}
				c.positives++
			}
			if v, kind, ok := mem.Get(k, mg.seq); ok {
				if filtered {
					c.truePositives++
				}
				mg.values[i], mg.errs[i] = found(v, kind)
				answered = true
				break
			}
		}
		if !answered {
			pending = append(pending, i)
		}
	}
	m := &mg.d.m
	addCount(&m.memFilterNegatives, c.negatives)
	addCount(&m.memFilterPositives, c.positives)
	addCount(&m.memFilterTruePositives, c.truePositives)
	return pending
}

// addCount adds n to c unless it is 0 (a batch's counts: most are 0, and
// an add is an atomic write to a shared line).
func addCount(c *base.Counter, n int64) {
	if n != 0 {
		c.Add(n)
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

	seek [64]byte
	sc   *mgScratch

	// l0 is the level-0 table (its index in the level) being probed,
	// while level is 0.
	l0 int
	// lv holds the filter counts of each level not yet added to the DB's
	// counters (flushCounters).
	lv [manifest.NumLevels]struct{ checks, positives, truePositives int64 }

	// hashPolicy is the first filter.HashBatchPolicy the batch met
	// (nil: none yet), whose hashes of the keys sc.keyHash[0] holds for
	// the rest of the batch; hashName[0] is its name. sc.keyHash[1] holds
	// the hashes under the policy named hashName[1], the latest of any
	// other ("": none).
	hashPolicy filter.HashBatchPolicy
	hashName   [2]string
	// memHashed is set when sc.keyHash[0] holds every key's
	// memtable.KeyHash (memTables), which is the KeyHash of the policies
	// filter.KeyHashIsXXHash64 names.
	memHashed bool
}

// mgCand is a table of a sorted level that may hold a key: its filter
// let the key through, or it has none, or it could not be opened (err).
type mgCand struct {
	i     int // the key's index in the batch
	level int
	l0    int // at level 0, the table's index in the level
	f     *manifest.FileMetadata
	r     *sstable.Reader
	err   error
	res   lookupResult
}

// mgScratch holds the keys of a MultiGet waiting for their filter
// probes: up to 64 at a time, each with its table. The probe goes through
// an interface, so the compiler must assume the slices escape: a pool
// keeps them off each MultiGet's allocations.
type mgScratch struct {
	mg multiGet
	n  int
	// queued is the most keys the queue held in this call: the entries
	// of keys, filters and files to clear at its end.
	queued  int
	idx     [64]int // the key's index in the batch
	keys    [64][]byte
	filters [64][]byte
	hashes  [64]uint64 // the queued keys' hashes, from keyHash
	maybe   [64]bool
	files   [64]*manifest.FileMetadata
	readers [64]*sstable.Reader

	// deeper's candidates, and per key of the batch: its first candidate
	// and the last one recorded, the sorted levels whose filters it was
	// checked against and let it through (bit per level); per candidate, the
	// key's next one; the candidates of a round. first, last and next
	// hold a candidate's index plus one (0: none), so that a clear
	// resets them.
	cands             []mgCand
	first, last, next []int32
	checked, passed   []uint8
	round             []int32
	// Per key of the batch, the level-0 tables (bit per table, by index
	// in the level: at most maxL0Tables) whose filters it was checked
	// against and let it through.
	l0Checked, l0Passed []uint8
	// l0In holds, per key of pending, the level-0 tables whose ranges
	// hold it (deeper; a bit per table).
	l0In []uint8

	// The keys deeper's sorted levels ask of filters of the batch's
	// hash policy (multiGet.hashPolicy), up to a chunk of 64: each one's
	// table (its index in tables), hash and index in the batch.
	hSlot   [64]uint8
	hHashes [64]uint64
	hMaybe  [64]bool
	hIdx    [64]int32

	// tables holds the tables deeper has opened for a chunk of keys of
	// a level, at most one a key, and tableFilter the filter of each one
	// that is hashed. memo finds them, direct-mapped by their index in
	// the level: a table the chunk's keys meet many times is fetched from
	// the table cache once (about 10 ns a key on a 10-table level, most
	// of it the loads of the cached entry); a table whose slot another
	// took is fetched again, and the keys gathered before keep theirs.
	// The bits of memoUsed are the slots filled. All are emptied at the
	// chunk's end.
	tables      [64]openedTable
	tableFilter [64][]byte
	nTables     int
	memo        [64]memoSlot
	memoUsed    uint64

	// deeper's keys of a chunk, when it gathers them, and their tables'
	// indexes in the level (FindFileBatch).
	kbuf [64][]byte
	at   [64]int

	// keyHash holds the hashes of the batch's keys under the policies
	// multiGet.hashName names (filter.HashBatchPolicy).
	keyHash [2][]uint64
	// memPass holds memTables' filter answers, a bit a memtable.
	memPass []uint8
}

// zeroSlots and identity are the which and idx of probeHashedOf for the
// keys 0 to 63 of one table (only read).
var (
	zeroSlots [64]uint8
	identity  = func() (a [64]int32) {
		for i := range a {
			a[i] = int32(i)
		}
		return a
	}()
)

var mgScratchPool = sync.Pool{New: func() any { return new(mgScratch) }}

// queue appends key i (whose bytes are k) and its table to the queue,
// which must not be full. It inlines, so deeper's loop over every key
// and level queues without a call.
func (sc *mgScratch) queue(i int, k []byte, f *manifest.FileMetadata, r *sstable.Reader) {
	n := sc.n
	sc.idx[n], sc.keys[n], sc.files[n], sc.readers[n] = i, k, f, r
	sc.n = n + 1
}

// probe asks the queued keys' filters, in one batch when their tables
// share a policy, and records the keys they let through as candidates
// (record).
func (mg *multiGet) probe() {
	sc := mg.sc
	n := sc.n
	sc.queued = max(sc.queued, n)
	if n == 0 {
		return
	}
	sc.n = 0
	// One batch when every queued table has a filter of one policy (the
	// usual case), else a probe per key.
	var policy filter.Policy
	var name string
	batch := true
	for j := 0; j < n; j++ {
		r := sc.readers[j]
		p, data := r.Filter()
		sc.filters[j] = data
		switch {
		case p == nil:
			batch = false
		case policy == nil:
			policy, name = p, r.FilterPolicyName()
		case r.FilterPolicyName() != name:
			// Policies of one name read each other's filters (filter.Policy),
			// so tables written with NewBloomPolicy at different bits per
			// key still share a batch. Compared by name only: == on two
			// policies of one type that Go cannot compare would panic.
			// The readers keep the name, so this calls no method.
			batch = false
		}
	}
	if hp, ok := policy.(filter.HashBatchPolicy); ok && batch {
		// Each key hashed once for all its probes, a table a level.
		kh := mg.keyHashes(hp)
		for j := 0; j < n; j++ {
			sc.hashes[j] = kh[sc.idx[j]]
		}
		hp.MayContainHashBatch(sc.filters[:n], sc.hashes[:n], sc.maybe[:n])
	} else if batch && policy != nil {
		filter.MayContainBatch(policy, sc.filters[:n], sc.keys[:n], sc.maybe[:n])
	} else {
		for j := 0; j < n; j++ {
			sc.maybe[j] = sc.readers[j].MayContain(sc.keys[j])
		}
	}
	mg.record(n)
	clear(sc.readers[:n])
}

// keyHashes returns the KeyHash of every key of the batch under hp,
// computed at the first probe that needs them. The first policy's stay
// for the whole batch (deeper gathers them as it goes); should a probe
// of another policy name come, its hashes take the second slot, each
// time another name comes.
func (mg *multiGet) keyHashes(hp filter.HashBatchPolicy) []uint64 {
	sc := mg.sc
	name := hp.Name()
	s := 1
	switch {
	case mg.hashPolicy == nil:
		s, mg.hashPolicy = 0, hp
		if mg.memHashed && filter.KeyHashIsXXHash64(hp) {
			mg.hashName[0] = name
			return sc.keyHash[0]
		}
	case name == mg.hashName[0]:
		return sc.keyHash[0]
	case name != "" && name == mg.hashName[1]:
		return sc.keyHash[1]
	}
	kh := sc.keyHash[s]
	if cap(kh) < len(mg.keys) {
		kh = make([]uint64, len(mg.keys))
	}
	kh = kh[:len(mg.keys)]
	filter.KeyHashes(hp, mg.keys, kh)
	sc.keyHash[s], mg.hashName[s] = kh, name
	return kh
}

// minLookupsPerWorker is the fewest lookups that make another helper
// worth waking: a lookup that misses the block cache costs a few
// microseconds (reading, checking and decompressing a block), waking a
// processor for a sleeping helper up to tens (a batch of 8 present keys
// measured slower with 2 goroutines than with 1).
const minLookupsPerWorker = 8

// spread calls do(mg, t, seek) for every t in [0, n), each a lookup of
// one key, with seek a buffer for the lookup's seek key. A key's lookup
// reads a data block, which is most of the cost of a present key: with
// Options.MultiGetParallelism above 1 and enough lookups, the DB's helper
// goroutines (mgHelpers) take them from a shared counter alongside the
// caller, so the block reads of a batch overlap (as RocksDB's MultiGet
// overlaps its reads with asynchronous I/O), unless every processor is
// taken (processorsBusy). Each lookup writes only its own key's result
// slots; the caller waits for every helper.
func (mg *multiGet) spread(n int, do func(mg *multiGet, t int, seek []byte)) {
	w := min(mg.d.opts.multiGetWorkers, n/minLookupsPerWorker)
	if w <= 1 || mg.d.helpers == nil || processorsBusy() {
		for t := 0; t < n; t++ {
			do(mg, t, mg.seek[:0])
		}
		return
	}
	mg.d.helpers.do(mg, n, w-1, do)
}

// lookupResult is what a key's lookup in one table found.
type lookupResult uint8

const (
	lookupMiss  lookupResult = iota // the table has no entry for the key
	lookupFound                     // a value or a deletion
	lookupError                     // the table could not be read
)

// lookupIn looks key i up in the index and a data block of table f, read
// through r, building the seek key in seek's array, and reports what it
// found; a found entry or an error answers the key.
func (mg *multiGet) lookupIn(i int, f *manifest.FileMetadata, r *sstable.Reader, seek []byte) lookupResult {
	key := mg.keys[i]
	seek = base.AppendInternalKey(seek, key, mg.seq, base.KindSeek)
	v, kind, ok, err := r.Get(seek, key)
	switch {
	case err != nil:
		mg.errs[i] = wrapf(err, "table %06d", f.FileNum)
		return lookupError
	case !ok:
		return lookupMiss
	}
	if kind == base.KindDelete {
		mg.errs[i] = ErrNotFound
	} else {
		mg.values[i] = v // already the caller's copy
	}
	return lookupFound
}

// flushCounters adds every level's filter counts to the DB's counters
// and clears them.
func (mg *multiGet) flushCounters() {
	for l := range mg.lv {
		c := &mg.lv[l]
		lm := &mg.d.m.levels[l]
		addCount(&lm.filterChecks, c.checks)
		addCount(&lm.filterPositives, c.positives)
		addCount(&lm.filterTruePositives, c.truePositives)
		*c = struct{ checks, positives, truePositives int64 }{}
	}
}

// maxL0Tables is the most level-0 tables MultiGet reads in its rounds;
// a store with more reads each key as Get does. deeper asks every level-0
// table's filter before any lookup, where Get stops at the first table
// that holds a key: with the tables' ranges overlapping, a key present in
// the newest of 36 costs 36 probes and up to 36 candidates (72 bytes
// each) instead of one. The review measured 2.9 µs a key against the
// Get loop's 1.18 on 36 such tables, and 29 MB for a batch of 2,000 keys.
// A store keeps about 4 level-0 tables between compactions (the default
// L0CompactionTrigger); more than 8 is a store behind on compaction.
const maxL0Tables = 8 // a bit each in mgScratch.l0Checked

// InRangeLevel0 answers for as many tables (a compile-time check).
const _ = uint(manifest.MaxInRangeLevel0 - maxL0Tables)

// tableFailure is a table of a level that failed to open in this call,
// and its error: it is tried once a call, not once a key (the keys it
// would fail may be answered higher up, where Get would never open it).
type tableFailure struct {
	f   *manifest.FileMetadata
	err error
}

// deeper answers the keys pending after the memtables from the tables.
// Every table's filter is asked for every key first, level 0's tables
// newest first then the sorted levels, so that the lookups of all tables
// can go in rounds: each round looks every key up in its first candidate
// table left, and spreads those lookups over helper goroutines
// (lookupCands). One round answers a present key in most stores; a key a
// filter let through by mistake takes a round more. Get's order is kept:
// a key is answered by the first table, in Get's order, that holds it (or
// fails to read), and the filter counts are those of Get, which stops
// there. all is set when pending is every key of the batch, in order.
func (mg *multiGet) deeper(v *manifest.Version, pending []int, all bool) {
	sc, keys := mg.sc, mg.keys
	n := len(keys)
	if cap(sc.first) < n {
		sc.first, sc.last = make([]int32, n), make([]int32, n)
		sc.checked, sc.passed = make([]uint8, n), make([]uint8, n)
		sc.l0Checked, sc.l0Passed = make([]uint8, n), make([]uint8, n)
	}
	sc.first, sc.last = sc.first[:n], sc.last[:n]
	sc.checked, sc.passed = sc.checked[:n], sc.passed[:n]
	sc.l0Checked, sc.l0Passed = sc.l0Checked[:n], sc.l0Passed[:n]
	clear(sc.first)
	clear(sc.last)
	clear(sc.checked)
	clear(sc.passed)
	sc.cands, sc.next = sc.cands[:0], sc.next[:0]
	at := &sc.at
	// When pending is every key in order (all: the usual case, where no
	// memtable answered any), the checks read keys itself; otherwise kbuf
	// gathers them, once for every table and level when pending holds at
	// most 64 keys (the usual case).
	kbuf := &sc.kbuf
	gathered := false // kbuf holds pending's first 64 keys
	chunkKeys := func(start int, chunk []int) [][]byte {
		switch {
		case all:
			return keys[start : start+len(chunk)]
		case start > 0 || !gathered:
			for j, i := range chunk {
				kbuf[j] = keys[i]
			}
			gathered = start == 0
		}
		return kbuf[:len(chunk)]
	}
	// Level 0, table by table: a key is asked of each table whose range
	// holds it. The ranges are checked first, for every table at once:
	// bit t of l0In[j] is set when table t's range holds key pending[j].
	if files := v.Files[0]; len(files) > 0 {
		clear(sc.l0Checked)
		clear(sc.l0Passed)
		mg.level = 0
		if cap(sc.l0In) < len(pending) {
			sc.l0In = make([]uint8, len(pending))
		}
		l0In := sc.l0In[:len(pending)]
		every := ^uint8(0) // the tables whose ranges hold every key
		for start := 0; start < len(pending); start += len(at) {
			chunk := pending[start:min(start+len(at), len(pending))]
			every &= v.InRangeLevel0(chunkKeys(start, chunk), l0In[start:start+len(chunk)])
		}
		var some uint8 // the tables whose ranges hold a key
		for _, b := range l0In {
			some |= b
		}
		for t := range files {
			if some>>uint(t)&1 == 0 {
				continue // not opened, as Get would not open it
			}
			mg.l0 = t
			mg.level0Table(files, t, pending, l0In, all && every>>uint(t)&1 != 0)
			mg.probe()
		}
	}
	for level := 1; level < manifest.NumLevels; level++ {
		files := v.Files[level]
		if len(files) == 0 {
			continue
		}
		mg.level = level
		var failed tableFailure
		for start := 0; start < len(pending); start += len(kbuf) {
			chunk := pending[start:min(start+len(kbuf), len(pending))]
			v.FindFileBatch(level, chunkKeys(start, chunk), at[:len(chunk)])
			mg.probeChunk(files, chunk, at[:len(chunk)], &failed)
		}
		mg.probe()
	}
	if !all {
		clear(kbuf[:min(len(pending), len(kbuf))])
	}

	// The rounds of lookups.
	cur := sc.round[:0]
	errs, first, notFound := mg.errs, sc.first, ErrNotFound
	for _, i := range pending {
		if c := first[i]; c > 0 {
			cur = append(cur, c-1)
		} else {
			errs[i] = notFound
		}
	}
	for len(cur) > 0 {
		mg.lookupCands(cur)
		next := cur[:0]
		for _, c := range cur {
			cd := &sc.cands[c]
			switch cd.res {
			case lookupMiss:
				if nc := sc.next[c]; nc > 0 {
					next = append(next, nc-1)
				} else {
					mg.errs[cd.i] = ErrNotFound
				}
				continue
			case lookupFound:
				if cd.r.HasFilter() {
					mg.lv[cd.level].truePositives++
				}
			}
			// Answered at cd.level: Get would not have asked the
			// deeper levels' filters, nor, at level 0, the older
			// tables' (those after cd.l0 in the level).
			if cd.level == 0 {
				older := ^(uint8(2)<<uint(cd.l0) - 1)
				mg.lv[0].checks -= int64(bits.OnesCount8(sc.l0Checked[cd.i] & older))
				mg.lv[0].positives -= int64(bits.OnesCount8(sc.l0Passed[cd.i] & older))
			}
			for l := cd.level + 1; l < manifest.NumLevels; l++ {
				bit := uint8(1) << l
				if sc.checked[cd.i]&bit != 0 {
					mg.lv[l].checks--
				}
				if sc.passed[cd.i]&bit != 0 {
					mg.lv[l].positives--
				}
			}
		}
		cur = next
	}
	sc.round = cur[:0]
	mg.flushCounters()
}

// probeChunk asks the filters of the tables a chunk of keys falls in
// (files[at[j]] for key chunk[j]; none for -1) about the keys, and records
// the keys they let through as candidates of mg.level: the keys whose
// tables have filters of the batch's hash policy are gathered, with their
// hashes, and probed at the end; the others go through the queue (probe).
// failed is the level's table that failed to open, if any.
func (mg *multiGet) probeChunk(files []*manifest.FileMetadata, chunk, at []int, failed *tableFailure) {
	d, sc, keys, level := mg.d, mg.sc, mg.keys, mg.level
	kh := sc.keyHash[0]
	nh, j := 0, 0
	for {
		j, nh = sc.gather(chunk, at, files, kh, j, nh)
		if j == len(chunk) {
			break
		}
		i, a := chunk[j], at[j]
		f, m := files[a], &sc.memo[uint(a)%uint(len(sc.memo))]
		if m.f != f {
			if f == failed.f {
				mg.candidate(mgCand{i: i, level: level, f: f, err: failed.err})
				j++
				continue
			}
			r, err := d.tables.get(f)
			if err != nil {
				*failed = tableFailure{f, err}
				mg.candidate(mgCand{i: i, level: level, f: f, err: err})
				j++
				continue
			}
			t := sc.nTables // below 64: one table at most a key
			sc.tables[t], sc.tableFilter[t] = mg.opened(f, r)
			sc.nTables++
			*m = memoSlot{f: f, t: uint8(t), hashed: sc.tables[t].hashed}
			sc.memoUsed |= 1 << (uint(a) % uint(len(sc.memo)))
			kh = sc.keyHash[0] // opened may have hashed the keys
			if m.hashed {
				continue // gather takes key j
			}
		}
		if sc.n == len(sc.idx) {
			mg.probe()
		}
		sc.queue(i, keys[i], f, sc.tables[m.t%64].r)
		j++
	}
	if nh > 0 {
		mg.probeHashed(nh)
	}
	clear(sc.tables[:sc.nTables])
	clear(sc.tableFilter[:sc.nTables])
	sc.nTables = 0
	for u := sc.memoUsed; u != 0; u &= u - 1 {
		sc.memo[bits.TrailingZeros64(u)] = memoSlot{}
	}
	sc.memoUsed = 0
}

// level0Table asks the filter of level 0's table t (files[t]) about the
// keys pending whose bit t is set in in (in[j] for pending[j]), and
// records the keys it lets through as candidates, as probeChunk does for
// a sorted level. A table whose filter is of the batch's hash policy (the
// usual case) is opened once and its keys gathered straight from in, or,
// with every set (pending is every key of the batch, in order, and the
// table's range holds them all), not gathered; others go through
// probeChunk.
func (mg *multiGet) level0Table(files []*manifest.FileMetadata, t int, pending []int, in []uint8, every bool) {
	sc := mg.sc
	f := files[t]
	var failed tableFailure
	r, err := mg.d.tables.get(f)
	if err != nil {
		failed = tableFailure{f, err} // probeChunk makes its keys' candidates
	} else if o, data := mg.opened(f, r); o.hashed {
		kh := sc.keyHash[0] // opened may have hashed the keys
		sc.tables[0], sc.tableFilter[0], sc.nTables = o, data, 1
		for start := 0; start < len(pending); start += len(sc.hIdx) {
			chunk := pending[start:min(start+len(sc.hIdx), len(pending))]
			if every {
				// pending is every key in order, each in the table's
				// range: the keys' own hashes, nothing to gather.
				mg.probeHashedOf(zeroSlots[:len(chunk)], kh[start:start+len(chunk)], identity[:len(chunk)], start)
				continue
			}
			cin := in[start : start+len(chunk)]
			// Every key is written, and kept (nh moves past it) when in
			// the table's range: no branch on a bit as unpredictable as
			// a search step.
			nh := 0
			for j, i := range chunk {
				h := nh % len(sc.hIdx) // nh <= j < 64
				sc.hSlot[h], sc.hHashes[h], sc.hIdx[h] = 0, kh[i], int32(i)
				nh += int(cin[j]>>uint(t)) & 1
			}
			if nh > 0 {
				mg.probeHashed(nh)
			}
		}
		sc.tables[0], sc.tableFilter[0], sc.nTables = openedTable{}, nil, 0
		return
	}
	at := &sc.at
	for start := 0; start < len(pending); start += len(at) {
		chunk := pending[start:min(start+len(at), len(pending))]
		for j := range chunk {
			at[j] = int(in[start+j]>>uint(t))&1 - 1 // 0, or -1: not in range
		}
		mg.probeChunk(files[t:t+1], chunk, at[:len(chunk)], &failed)
	}
}

// memoSlot is a table of a level (f), its index in mgScratch.tables and
// whether it is hashed (as the openedTable there is).
type memoSlot struct {
	f      *manifest.FileMetadata
	t      uint8
	hashed bool
}

// openedTable is a table of a level and its open Reader; hashed when
// its filter is of the batch's hash policy (multiGet.hashPolicy).
type openedTable struct {
	f      *manifest.FileMetadata
	r      *sstable.Reader
	hashed bool
}

// opened returns f's openedTable, read through r, and its filter when it
// is hashed: the batch's keys are hashed under its filter's policy
// should it be the first hash policy the batch meets. After that, a
// table is hashed when its policy has that one's name (policies of one
// name read each other's filters), which costs no type assertion (about
// 20 ns: once a table on a level of hundreds, once a key).
func (mg *multiGet) opened(f *manifest.FileMetadata, r *sstable.Reader) (openedTable, []byte) {
	t := openedTable{f: f, r: r}
	p, data := r.Filter()
	if p == nil {
		return t, nil
	}
	if mg.hashPolicy == nil {
		hp, ok := p.(filter.HashBatchPolicy)
		if !ok {
			return t, nil
		}
		mg.keyHashes(hp)
	}
	if t.hashed = r.FilterPolicyName() == mg.hashName[0]; t.hashed {
		return t, data
	}
	return t, nil
}

// gather adds to the h arrays, from position nh on, every key of chunk
// from position j on whose table (files[at[j]], none for -1) is in the
// memo with a filter of the batch's hash policy; kh holds the keys'
// hashes under it, and a key names its table by its index in tables.
// It stops at the first key whose table is not in the memo, or has
// another filter, and returns that key's position (or len(chunk)) and
// the new nh. It calls nothing, so its loop's state stays in registers
// (in deeper's loop, the calls of the rare cases would spill it on
// every key).
func (sc *mgScratch) gather(chunk, at []int, files []*manifest.FileMetadata, kh []uint64, j, nh int) (int, int) {
	at = at[:len(chunk)]
	for ; j < len(chunk); j++ {
		a := at[j]
		if a < 0 {
			continue
		}
		m := &sc.memo[uint(a)%uint(len(sc.memo))]
		if m.f != files[a] || !m.hashed {
			return j, nh
		}
		i := chunk[j]
		sc.hSlot[nh], sc.hHashes[nh], sc.hIdx[nh] = m.t, kh[i], int32(i)
		nh++
	}
	return j, nh
}

// probeHashed probes the keys gathered in the h arrays, the first n,
// all of the batch's hash policy, and makes candidates of the ones the
// filters let through, as record does for the queue.
func (mg *multiGet) probeHashed(n int) {
	sc := mg.sc
	mg.probeHashedOf(sc.hSlot[:n], sc.hHashes[:n], sc.hIdx[:n], 0)
}

// probeHashedOf is probeHashed for the keys whose hashes are hashes, and
// whose indexes in the batch are base+idx[t], of the tables which[t] in
// sc.tables.
func (mg *multiGet) probeHashedOf(which []uint8, hashes []uint64, idx []int32, base int) {
	sc := mg.sc
	n := len(hashes)
	maybe := sc.hMaybe[:n]
	filter.MayContainHashBatchOf(mg.hashPolicy, sc.tableFilter[:sc.nTables], which[:n], hashes, maybe)
	lv := &mg.lv[mg.level]
	lv.checks += int64(n)
	checked, passed, bit := mg.levelMarks()
	idx = idx[:n]
	for t, m := range maybe {
		i := base + int(idx[t])
		checked[i] |= bit
		if m {
			lv.positives++
			passed[i] |= bit
			o := &sc.tables[which[t]%64]
			mg.candidate(mgCand{i: i, level: mg.level, f: o.f, r: o.r})
		}
	}
}

// record makes candidates of the n queued keys a deferred probe's filters
// let through, counting the checks and positives of mg.level.
func (mg *multiGet) record(n int) {
	sc := mg.sc
	lv := &mg.lv[mg.level]
	checked, passed, bit := mg.levelMarks()
	for j := 0; j < n; j++ {
		i := sc.idx[j]
		if sc.readers[j].HasFilter() {
			lv.checks++
			checked[i] |= bit
			if !sc.maybe[j] {
				continue
			}
			lv.positives++
			passed[i] |= bit
		}
		mg.candidate(mgCand{i: i, level: mg.level, f: sc.files[j], r: sc.readers[j]})
	}
}

// levelMarks returns where a probe of mg.level marks the keys it
// checked and those it let through, and its bit there: on the sorted
// levels, the level's bit in mgScratch.checked and passed; at level 0,
// the probed table's bit in l0Checked and l0Passed (checked and passed
// keep no bit for level 0: the rounds read them only for the levels below
// the one that answered a key).
func (mg *multiGet) levelMarks() (checked, passed []uint8, bit uint8) {
	sc := mg.sc
	if mg.level == 0 {
		return sc.l0Checked, sc.l0Passed, 1 << uint(mg.l0)
	}
	return sc.checked, sc.passed, 1 << uint(mg.level)
}

// candidate appends c to the candidates, after its key's others (the
// levels are probed in order, so a key's list is shallowest first).
func (mg *multiGet) candidate(c mgCand) {
	sc := mg.sc
	c.l0 = mg.l0
	k := int32(len(sc.cands)) + 1
	sc.cands = append(sc.cands, c)
	sc.next = append(sc.next, 0)
	if l := sc.last[c.i]; l > 0 {
		sc.next[l-1] = k
	} else {
		sc.first[c.i] = k
	}
	sc.last[c.i] = k
}

// lookupCands looks up the candidates cur, setting their res, through
// spread; cur becomes sc.round, where the lookups find it.
func (mg *multiGet) lookupCands(cur []int32) {
	mg.sc.round = cur
	mg.spread(len(cur), func(mg *multiGet, t int, seek []byte) {
		cd := &mg.sc.cands[mg.sc.round[t]]
		if cd.err != nil { // the table could not be opened
			mg.errs[cd.i] = cd.err
			cd.res = lookupError
			return
		}
		cd.res = mg.lookupIn(cd.i, cd.f, cd.r, seek)
	})
}

// b2i is 1 for true and 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
