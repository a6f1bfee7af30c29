package db

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/cespare/xxhash/v2"
)

// The concurrent checker, in the spirit of RocksDB's db_stress with its
// expected state and of Pebble's metamorphic test: writers, readers,
// snapshots, iterators, flushes and compactions run at once on a store
// whose tree changes every few writes, and every answer is checked
// against what was possibly visible when it was given.
//
// How an answer is judged. Each writer goroutine owns its keys, so the
// history of a key is a total order: the writer's batches 1, 2, 3, ...
// A writer records batch i in its history and publishes started = i
// before it calls Write, and publishes acked = i when Write returns. A
// read notes lo = acked before it begins and hi = started after it
// returns. An answer is acceptable exactly when it is the key's state
// after some batch j in [lo, hi]: written before the read returned, and
// not overwritten before it began. A consistent view (an iterator, or
// every read through one snapshot) must be explained by one j per writer
// for all the keys it shows and all the keys it shows to be absent; a
// snapshot's candidates narrow with each read through it. Values are
// rebuilt from (seed, writer, batch, key), so a stale, mixed-up or
// damaged value is caught byte for byte.
//
// Batches hold puts, deletes and now and then a range deletion
// (DeleteRange, or Batch.DeleteRange among other writes) over keys of the
// writer's own: a writer's keys share a prefix, so the range covers no
// other writer's key, and the history records it as a delete of each key
// it covers, at its batch, unless a later write of the same batch
// rewrites the key. A MultiGet reads at one sequence number, so its
// answers are judged as a view, as are the contents of a Checkpoint taken
// under load and then opened.
//
// The run ends with Close while every goroutine is still busy: Close
// must return in bounded time, leave no descriptor or memory map of the
// store's files, and every later call must fail with ErrClosed. The store
// is then reopened and must hold, for each writer, its state after one
// batch between its last acknowledged and its last started one.
var (
	checkerDuration = flag.Duration("checker_duration", 0, "how long each run of TestConcurrentChecker lasts (default 2s for the mixed profile and 4s for hot; -short a quarter; -long 60s and 120s)")
	checkerSeeds    = flag.Int("checker_seeds", 0, "how many seeds TestConcurrentChecker runs, each with every profile, one after another (default 3; -long 10)")
	checkerSeed     = flag.Int64("checker_seed", 0, "the first seed of TestConcurrentChecker; 0 picks one from the clock (it is logged)")
	checkerProfile  = flag.String("checker_profile", "", "run every seed of TestConcurrentChecker with this profile (mixed, hot) instead of the seed's")
)

const (
	chkWriters = 3
	chkSlots   = 48 // keys per writer
)

// chkKeys[w][s] names slot s of writer w: "w<w>.<s>", the writer first,
// so each writer's keys form one contiguous run of the key space and a
// range deletion between two of its bounds (chkBound) covers its own keys
// only. A full scan still crosses every writer.
var chkKeys = func() (k [chkWriters][chkSlots][]byte) {
	for w := range k {
		for s := range k[w] {
			k[w][s] = []byte(fmt.Sprintf("w%d.%03d", w, s))
		}
	}
	return k
}()

func chkKey(w, s int) []byte { return chkKeys[w][s] }

func parseChkKey(k []byte) (w, s int, ok bool) {
	if len(k) != 6 || k[0] != 'w' || k[2] != '.' {
		return 0, 0, false
	}
	for _, c := range [...]byte{k[1], k[3], k[4], k[5]} {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
	}
	w, s = int(k[1]-'0'), int(k[3]-'0')*100+int(k[4]-'0')*10+int(k[5]-'0')
	if s >= chkSlots || w >= chkWriters {
		return 0, 0, false
	}
	return w, s, true
}

// chkBound returns a key that lies just before slot s of writer w (0 <= s
// <= chkSlots) and after every slot below s, spelled one of three ways by
// spell: the slot's own key (or, for chkSlots, the key slot chkSlots would
// have), the key of slot s-1 followed by a zero byte, or the writer's
// prefix "w<w>." (s == 0) or "w<w>/" (s == chkSlots), which sort before and
// after all its keys. A range [chkBound(w, a, _), chkBound(w, b, _)) holds
// exactly the slots a..b-1 of writer w: TestCheckerJudge checks this by
// comparing the keys themselves.
func chkBound(w, s, spell int) []byte {
	switch {
	case spell%3 == 1 && s > 0:
		return append(append([]byte(nil), chkKey(w, s-1)...), 0)
	case spell%3 == 2 && s == 0:
		return []byte(fmt.Sprintf("w%d.", w))
	case spell%3 == 2 && s == chkSlots:
		return []byte(fmt.Sprintf("w%d/", w))
	}
	return []byte(fmt.Sprintf("w%d.%03d", w, s))
}

// chkValue is the value batch b of writer w puts in slot s: "w.b.s:"
// then filler whose length and bytes follow from (seed, w, b, s). Most
// values are short; a few are kilobytes, so memtables fill every few
// dozen writes. A value a later write of the same batch overwrites is
// marked "x", so a reader that sees it is caught.
func chkValue(seed int64, w int, b int64, s int, superseded bool) []byte {
	h, n := chkFiller(seed, w, b, s)
	prefix := fmt.Sprintf("%d.%d.%d", w, b, s)
	if superseded {
		prefix += "x"
	}
	prefix += ":"
	v := make([]byte, len(prefix), len(prefix)+n)
	copy(v, prefix)
	for i := 0; i < n; i++ {
		v = append(v, chkFillerByte(h, i))
	}
	return v
}

// chkFiller returns the hash the filler of (seed, w, b, s) is made from,
// and its length.
func chkFiller(seed int64, w int, b int64, s int) (h uint64, n int) {
	var in [32]byte
	binary.LittleEndian.PutUint64(in[0:], uint64(seed))
	binary.LittleEndian.PutUint64(in[8:], uint64(w))
	binary.LittleEndian.PutUint64(in[16:], uint64(b))
	binary.LittleEndian.PutUint64(in[24:], uint64(s))
	h = xxhash.Sum64(in[:])
	n = 8 + int(h>>8%48) // at least 8 bytes, so a damaged batch number is caught
	switch h % 64 {
	case 0:
		n = 4<<10 + int(h>>8%(12<<10))
	case 1, 2, 3:
		n = 256 + int(h>>8%1024)
	}
	return h, n
}

// chkFillerByte is byte i of the filler made from h: one of 16 letters,
// cheap to compute (readers check every byte of every value they get).
func chkFillerByte(h uint64, i int) byte { return 'a' + byte(h>>(uint(i&7)*8))&15 }

// chkBatchOf returns the batch a value of slot (w, s) names, or an error
// when the value is not exactly what that batch wrote. It allocates
// nothing when the value is right.
func chkBatchOf(seed int64, w, s int, v []byte) (int64, error) {
	// "w.b.s:" with w and s known: parse b, then check the rest.
	bad := func(why string) (int64, error) {
		return 0, fmt.Errorf("value %.40q of key %s: %s", v, chkKey(w, s), why)
	}
	p := v
	num := func() (int64, bool) {
		var n int64
		i := 0
		for ; i < len(p) && i < 19 && p[i] >= '0' && p[i] <= '9'; i++ {
			n = n*10 + int64(p[i]-'0')
		}
		ok := i > 0
		p = p[i:]
		return n, ok
	}
	sep := func(c byte) bool {
		if len(p) == 0 || p[0] != c {
			return false
		}
		p = p[1:]
		return true
	}
	vw, ok1 := num()
	if !ok1 || !sep('.') {
		return bad("not a value the checker wrote")
	}
	b, ok2 := num()
	if !ok2 || b <= 0 || !sep('.') {
		return bad("not a value the checker wrote")
	}
	vs, ok3 := num()
	if !ok3 || int(vw) != w || int(vs) != s {
		return bad("it belongs to another key")
	}
	if !sep(':') {
		return bad("not a value the checker wrote, or one a later write of its batch overwrote")
	}
	h, n := chkFiller(seed, w, b, s)
	if len(p) != n {
		return bad(fmt.Sprintf("batch %d wrote %d bytes of filler, the value has %d", b, n, len(p)))
	}
	var word [8]byte
	for i := range word {
		word[i] = chkFillerByte(h, i)
	}
	pattern := binary.LittleEndian.Uint64(word[:])
	i := 0
	for ; i+8 <= len(p); i += 8 {
		if binary.LittleEndian.Uint64(p[i:]) != pattern {
			break
		}
	}
	for ; i < len(p); i++ {
		if p[i] != chkFillerByte(h, i) {
			return bad(fmt.Sprintf("byte %d of the filler differs from what batch %d wrote", i, b))
		}
	}
	return b, nil
}

// chkVersion is one write of a slot: the batch, and whether it put a value
// (false: it deleted the key, with a Delete or, ranged, with a range
// deletion covering it; the two are judged alike).
type chkVersion struct {
	batch  int64
	put    bool
	ranged bool
}

// chkHistory is one writer's history: every batch that began, slot by
// slot, and the counters reads are judged by. Only the writer appends to
// a slot's versions; it publishes each longer slice through an atomic
// pointer, so readers take no lock (a lock shared by dozens of readers
// would cost more than the Get it checks). A reader never looks past the
// length it loaded, and append writes only past the lengths published.
type chkHistory struct {
	slots   [chkSlots]atomic.Pointer[[]chkVersion]
	started atomic.Int64 // the last batch whose Write began (recorded first)
	acked   atomic.Int64 // the last batch whose Write returned nil
}

// versions returns slot s's versions as published so far.
func (h *chkHistory) versions(s int) []chkVersion {
	if p := h.slots[s].Load(); p != nil {
		return *p
	}
	return nil
}

// record appends a version to slot s (the writer only).
func (h *chkHistory) record(s int, v chkVersion) {
	vs := append(h.versions(s), v)
	h.slots[s].Store(&vs)
}

// span is a closed range of batch numbers.
type span struct{ lo, hi int64 }

func (s span) String() string { return fmt.Sprintf("[%d,%d]", s.lo, s.hi) }

// spans returns the batches j in [lo, hi] after which slot s reads obs (a
// batch number, or 0 for absent), as disjoint ascending spans.
func (h *chkHistory) spans(s int, obs, lo, hi int64) []span {
	vs := h.versions(s)
	state := func(i int) int64 { // the slot after version i (-1: before any)
		if i < 0 || !vs[i].put {
			return 0
		}
		return vs[i].batch
	}
	i := sort.Search(len(vs), func(i int) bool { return vs[i].batch > lo })
	var out []span
	cur, st := lo, state(i-1)
	for {
		end := hi
		if i < len(vs) && vs[i].batch-1 < end {
			end = vs[i].batch - 1
		}
		if st == obs && cur <= end {
			if n := len(out); n > 0 && out[n-1].hi+1 == cur {
				out[n-1].hi = end
			} else {
				out = append(out, span{cur, end})
			}
		}
		if i >= len(vs) || vs[i].batch > hi {
			return out
		}
		cur, st = vs[i].batch, state(i)
		i++
	}
}

// admits reports whether slot s reads obs after some batch in [lo, hi]
// (spans without allocating: the Get path of the checker runs millions
// of times).
func (h *chkHistory) admits(s int, obs, lo, hi int64) bool {
	vs := h.versions(s)
	i := sort.Search(len(vs), func(i int) bool { return vs[i].batch > lo })
	st := int64(0)
	if i > 0 && vs[i-1].put {
		st = vs[i-1].batch
	}
	for {
		if st == obs {
			return true
		}
		if i >= len(vs) || vs[i].batch > hi {
			return false
		}
		st = 0
		if vs[i].put {
			st = vs[i].batch
		}
		i++
	}
}

// describe lists slot s's versions around [lo, hi], for failure messages.
func (h *chkHistory) describe(s int, lo, hi int64) string {
	vs := h.versions(s)
	var parts []string
	for i, v := range vs {
		last := i == len(vs)-1
		if v.batch < lo-2 && !last && vs[i+1].batch < lo {
			continue
		}
		if v.batch > hi+2 {
			break
		}
		kind := "put"
		switch {
		case v.ranged:
			kind = "rangedel"
		case !v.put:
			kind = "delete"
		}
		parts = append(parts, fmt.Sprintf("%s@%d", kind, v.batch))
	}
	return strings.Join(parts, " ")
}

func intersectSpans(a, b []span) []span {
	var out []span
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].lo, b[j].lo), min(a[i].hi, b[j].hi)
		if lo <= hi {
			out = append(out, span{lo, hi})
		}
		if a[i].hi < b[j].hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// chkView is what a consistent view may be: for each writer, the batches
// after which the view may have been taken.
type chkView struct {
	cand [chkWriters][]span
}

func newChkView(lo, hi [chkWriters]int64) *chkView {
	v := &chkView{}
	for w := range v.cand {
		v.cand[w] = []span{{lo[w], hi[w]}}
	}
	return v
}

// chkProfile is how a run spreads its writes and reads over the keys.
type chkProfile struct {
	name string
	// hot slots of each writer take hotShare of the writes and Gets (in
	// 64ths); readers look at writer 0, the one that compacts after each
	// batch, with probability focus (in 64ths) besides their share.
	hot, hotShare, focus int
	// snapGapMicros bounds the pause of a snapshot holder between two
	// snapshots.
	snapGapMicros int
	// noAutoCompactions turns automatic compactions off: the writers and
	// the maintainer compact explicitly.
	noAutoCompactions bool
	// timeShare scales the run's duration: a rare interleaving needs
	// more time than the mixed profile's checks.
	timeShare float64
	// How many goroutines of each kind run, and how many of the
	// getters' reads take a snapshot of their own (in 64ths).
	getters, scanners, snapshotters int
	snapGets                        int
	// multiGets is how many of the getters' reads are a MultiGet (in
	// 64ths); checkpointer runs a goroutine of Checkpoints.
	multiGets    int
	checkpointer bool
	// writers is how many writers run (the others' keys stay absent);
	// maintainer runs the goroutine of Flushes and CompactRanges.
	writers    int
	maintainer bool
}

var chkProfiles = []chkProfile{
	// Every key in play, a few of them hot; three writers, snapshots
	// held across flushes and compactions, a maintainer flushing and
	// compacting, automatic compactions as the seed's options say.
	{name: "mixed", hot: 4, hotShare: 32, focus: 0, snapGapMicros: 1000,
		timeShare: 1, writers: chkWriters, maintainer: true, getters: 8, scanners: 2, snapshotters: 2, snapGets: 4,
		multiGets: 2, checkpointer: true},
	// One key rewritten and compacted under its readers: writer 0 alone
	// writes, nearly always the same key, and compacts after each batch;
	// a few readers (more than the cores, so they are preempted anywhere
	// in a read) and a scanner read it. Nothing else runs: every extra
	// wake-up shortens the time a preempted reader waits, and a live
	// snapshot keeps the shadowed versions this profile is about.
	{name: "hot", hot: 1, hotShare: 60, focus: 64, noAutoCompactions: true,
		timeShare: 2, writers: 1, getters: 3, scanners: 1, multiGets: 1},
}

// slot picks a slot by the profile.
func (p *chkProfile) slot(rng *rand.Rand) int {
	if rng.Intn(64) < p.hotShare {
		return rng.Intn(p.hot)
	}
	return rng.Intn(chkSlots)
}

// reader picks the writer and slot a read looks at.
func (p *chkProfile) reader(rng *rand.Rand) (w, s int) {
	w = rng.Intn(chkWriters)
	if rng.Intn(64) < p.focus {
		w = 0
	}
	return w, p.slot(rng)
}

// checker holds one run's store, histories and verdict.
type checker struct {
	t       *testing.T
	seed    int64
	d       *DB
	dir     string   // the store's directory
	opts    *Options // the store's options
	prof    chkProfile
	hist    [chkWriters]chkHistory
	stop    atomic.Bool // the run is over (deadline or failure)
	closing atomic.Bool // Close has been called: ErrClosed is an answer
	failed  atomic.Bool // some answer failed: see failure
	failMu  sync.Mutex
	failure string
	counts  struct {
		batches, rangeDels, gets, snapGets, multiGets, multiGetKeys, scans, seeks, snapshots, releasedReads, flushes, compactions, checkpoints, closedAnswers atomic.Int64
	}
}

func (c *checker) fail(format string, args ...any) {
	c.failMu.Lock()
	if c.failure == "" {
		c.failure = fmt.Sprintf(format, args...)
	}
	c.failMu.Unlock()
	c.failed.Store(true)
	c.stop.Store(true)
}

// closedOK reports whether err is an acceptable end of a call: ErrClosed
// once Close was called. Any other error fails the run.
func (c *checker) closedOK(who string, err error) bool {
	if errors.Is(err, ErrClosed) && c.closing.Load() {
		c.counts.closedAnswers.Add(1)
		return true
	}
	c.fail("%s: %v", who, err)
	return false
}

func (c *checker) bounds() (lo [chkWriters]int64) {
	for w := range c.hist {
		lo[w] = c.hist[w].acked.Load()
	}
	return lo
}

func (c *checker) tops() (hi [chkWriters]int64) {
	for w := range c.hist {
		hi[w] = c.hist[w].started.Load()
	}
	return hi
}

// observed turns a read's answer for slot (w, s) into a batch number (0:
// absent), or fails the run.
func (c *checker) observed(who string, w, s int, v []byte, err error) (int64, bool) {
	if isNotFound(err) {
		return 0, true
	}
	if err != nil {
		c.closedOK(fmt.Sprintf("%s of %s", who, chkKey(w, s)), err)
		return 0, false
	}
	b, berr := chkBatchOf(c.seed, w, s, v)
	if berr != nil {
		c.fail("%s of %s: %v", who, chkKey(w, s), berr)
		return 0, false
	}
	return b, true
}

func chkObsString(obs int64) string {
	if obs == 0 {
		return "not found"
	}
	return fmt.Sprintf("batch %d's value", obs)
}

// checkRead judges one Get without a snapshot.
func (c *checker) checkRead(who string, w, s int, obs, lo, hi int64) {
	if c.hist[w].admits(s, obs, lo, hi) {
		return
	}
	c.fail("%s of %s = %s, but between the read's start and end writer %d's batches %d..%d leave it at none of that: history %s",
		who, chkKey(w, s), chkObsString(obs), w, lo, hi, c.hist[w].describe(s, lo, hi))
}

// see narrows the view by one observation; false (after failing the run)
// when no moment explains everything the view has shown.
func (c *checker) see(v *chkView, who string, w, s int, obs int64) bool {
	before := v.cand[w]
	lo, hi := before[0].lo, before[len(before)-1].hi
	v.cand[w] = intersectSpans(before, c.hist[w].spans(s, obs, lo, hi))
	if len(v.cand[w]) > 0 {
		return true
	}
	c.fail("%s: %s = %s, but the view's earlier reads put writer %d at batches %v, after none of which it reads so: history %s",
		who, chkKey(w, s), chkObsString(obs), w, before, c.hist[w].describe(s, lo, hi))
	return false
}

// chkOp is one write of a batch: a put or delete of slot s, or a range
// deletion of [start, limit), which covers slots s..end-1 of its writer.
type chkOp struct {
	kind         chkOpKind
	s, end       int
	start, limit []byte
}

type chkOpKind uint8

const (
	chkPut chkOpKind = iota
	chkDel
	chkRangeDel
)

// covers returns the slots o writes: [lo, hi).
func (o chkOp) covers() (lo, hi int) {
	if o.kind == chkRangeDel {
		return o.s, o.end
	}
	return o.s, o.s + 1
}

// batchOps picks the writes of one batch of writer w: a single write, or
// up to 8 (the same key possibly twice). About one write in 24 is a range
// deletion over the writer's own keys: mostly a few slots from one the
// profile picks (so hot keys are range-deleted too), now and then a wide
// range, all the writer's keys, or an empty range (no write at all).
func (p *chkProfile) batchOps(rng *rand.Rand, w int) []chkOp {
	n := 1
	if rng.Intn(3) == 0 {
		n = 2 + rng.Intn(7)
	}
	ops := make([]chkOp, n)
	for i := range ops {
		if rng.Intn(24) != 0 {
			kind := chkPut
			if rng.Intn(6) == 0 {
				kind = chkDel
			}
			ops[i] = chkOp{kind: kind, s: p.slot(rng)}
			continue
		}
		var lo, hi int
		switch r := rng.Intn(16); {
		case r == 0: // everything the writer owns
			lo, hi = 0, chkSlots
		case r == 1: // empty
			lo = p.slot(rng)
			hi = lo
		case r < 5: // wide
			lo, hi = rng.Intn(chkSlots+1), rng.Intn(chkSlots+1)
			if lo > hi {
				lo, hi = hi, lo
			}
		default: // a few slots
			lo = p.slot(rng)
			hi = min(chkSlots, lo+1+rng.Intn(4))
		}
		o := chkOp{kind: chkRangeDel, s: lo, end: hi,
			start: chkBound(w, lo, rng.Intn(3)), limit: chkBound(w, hi, rng.Intn(3))}
		if lo == hi {
			o.limit = o.start // DeleteRange(k, k) deletes nothing
		}
		ops[i] = o
	}
	return ops
}

// chkEffects works out what a batch does: superseded[i] tells whether put
// i is overwritten (or deleted, by a key or a range) later in the batch,
// and last[s] is the index of the batch's last write of slot s (-1: none).
func chkEffects(ops []chkOp) (superseded []bool, last [chkSlots]int) {
	for s := range last {
		last[s] = -1
	}
	for i, o := range ops {
		lo, hi := o.covers()
		for s := lo; s < hi; s++ {
			last[s] = i
		}
	}
	superseded = make([]bool, len(ops))
	for i, o := range ops {
		superseded[i] = o.kind == chkPut && last[o.s] != i
	}
	return superseded, last
}

// recordBatch records batch b's writes in the history, slot by slot.
func (h *chkHistory) recordBatch(b int64, ops []chkOp) {
	_, last := chkEffects(ops)
	for s, i := range last {
		if i >= 0 {
			h.record(s, chkVersion{batch: b, put: ops[i].kind == chkPut, ranged: ops[i].kind == chkRangeDel})
		}
	}
}

// writer runs writer w's batches (see batchOps), a few synced.
func (c *checker) writer(w int) {
	h := &c.hist[w]
	rng := rand.New(rand.NewSource(c.seed*31 + int64(w)))
	for b := int64(1); !c.stop.Load(); b++ {
		ops := c.prof.batchOps(rng, w)
		superseded, _ := chkEffects(ops)
		// Record the batch before it can become visible.
		h.recordBatch(b, ops)
		h.started.Store(b)
		wo := &WriteOptions{Sync: rng.Intn(25) == 0}
		var err error
		ranges := 0
		switch o := ops[0]; {
		case len(ops) == 1 && o.kind == chkPut:
			err = c.d.Put(chkKey(w, o.s), chkValue(c.seed, w, b, o.s, false), wo)
		case len(ops) == 1 && o.kind == chkDel:
			err = c.d.Delete(chkKey(w, o.s), wo)
		case len(ops) == 1:
			err = c.d.DeleteRange(o.start, o.limit, wo)
			ranges++
		default:
			var batch Batch
			for i, o := range ops {
				switch o.kind {
				case chkPut:
					batch.Put(chkKey(w, o.s), chkValue(c.seed, w, b, o.s, superseded[i]))
				case chkDel:
					batch.Delete(chkKey(w, o.s))
				default:
					batch.DeleteRange(o.start, o.limit)
					ranges++
				}
			}
			err = c.d.Write(&batch, wo)
		}
		if err != nil {
			c.closedOK(fmt.Sprintf("writer %d, batch %d", w, b), err)
			return // the batch may or may not be in: it stays started, not acked
		}
		h.acked.Store(b)
		c.counts.batches.Add(1)
		c.counts.rangeDels.Add(int64(ranges))
		if w == 0 {
			// Writer 0 compacts what it just wrote (and now and then
			// everything), so the versions its batch shadowed, and the
			// tombstones, are dropped while readers may still be looking
			// for them.
			lo, hi := ops[0].s, ops[0].s
			for _, o := range ops {
				l, h := o.covers()
				lo, hi = min(lo, l), max(hi, h-1, l)
			}
			start, limit := chkKey(w, min(lo, chkSlots-1)), chkKey(w, min(hi, chkSlots-1))
			if rng.Intn(4) == 0 {
				start, limit = nil, nil
			}
			if err := c.d.CompactRange(start, limit); err != nil {
				c.closedOK(fmt.Sprintf("writer %d, CompactRange after batch %d", w, b), err)
				return
			}
			c.counts.compactions.Add(1)
		}
	}
}

// getter runs Gets, half of them on hot keys, a few through a snapshot
// of their own, and a few MultiGets.
func (c *checker) getter(g int) {
	rng := rand.New(rand.NewSource(c.seed*37 + int64(g)))
	var gets int64 // counted here: a counter shared by all getters would cost more than a Get
	defer func() { c.counts.gets.Add(gets) }()
	for !c.stop.Load() {
		if rng.Intn(64) < c.prof.multiGets {
			if !c.multiGet(rng, nil, nil) {
				return
			}
			continue
		}
		w, s := c.prof.reader(rng)
		if rng.Intn(64) < c.prof.snapGets {
			lo := c.bounds()
			snap := c.d.NewSnapshot()
			view := newChkView(lo, c.tops())
			v, err := c.d.Get(chkKey(w, s), &ReadOptions{Snapshot: snap})
			snap.Release()
			c.counts.snapGets.Add(1)
			obs, ok := c.observed("Get at a snapshot", w, s, v, err)
			if !ok {
				return
			}
			c.see(view, "Get at a fresh snapshot", w, s, obs)
			continue
		}
		lo := c.hist[w].acked.Load()
		v, err := c.d.Get(chkKey(w, s), nil)
		hi := c.hist[w].started.Load()
		gets++
		obs, ok := c.observed("Get", w, s, v, err)
		if !ok {
			return // closed (or failed)
		}
		c.checkRead("Get", w, s, obs, lo, hi)
	}
}

// multiGet runs one MultiGet through d: of a few keys the profile picks
// (repeats allowed), or of every key of one writer in a random order. It
// reads at one sequence number, so all its answers must be explained by
// one state per writer: view's, when ro reads at a held snapshot, else
// one between the batches acknowledged before the call and those started
// before it returned. It returns false once the run has failed or d is
// closed.
func (c *checker) multiGet(rng *rand.Rand, ro *ReadOptions, view *chkView) bool {
	var ws, ss []int
	if rng.Intn(8) == 0 {
		w := rng.Intn(chkWriters)
		for _, s := range rng.Perm(chkSlots) {
			ws, ss = append(ws, w), append(ss, s)
		}
	} else {
		for n := 2 + rng.Intn(15); n > 0; n-- {
			w, s := c.prof.reader(rng)
			ws, ss = append(ws, w), append(ss, s)
		}
	}
	keys := make([][]byte, len(ws))
	for i := range keys {
		keys[i] = chkKey(ws[i], ss[i])
	}
	who := "MultiGet"
	if ro != nil {
		who = "MultiGet at a held snapshot"
	}
	lo := c.bounds()
	values, errs := c.d.MultiGet(keys, ro)
	if view == nil {
		view = newChkView(lo, c.tops())
	}
	c.counts.multiGets.Add(1)
	c.counts.multiGetKeys.Add(int64(len(keys)))
	if len(values) != len(keys) || len(errs) != len(keys) {
		c.fail("%s of %d keys returned %d values and %d errors", who, len(keys), len(values), len(errs))
		return false
	}
	for i := range keys {
		obs, ok := c.observed(who, ws[i], ss[i], values[i], errs[i])
		if !ok || !c.see(view, fmt.Sprintf("%s of %d keys, answer %d", who, len(keys), i), ws[i], ss[i], obs) {
			return false
		}
	}
	return true
}

// scanRead walks it in one of four ways and feeds the view every key it
// shows and every key it shows to be absent. It returns false when the
// walk ended on an error (judged already) or the view broke.
func (c *checker) scanRead(who string, it *Iterator, view *chkView, rng *rand.Rand) bool {
	seen := map[string]int64{}
	var prev []byte
	// from and to bound the keys the walk covered (inclusive; nil: no end).
	var from, to []byte
	step := func(ok, forward bool) bool {
		if !ok {
			return false
		}
		k := it.Key()
		if prev != nil && (bytes.Compare(k, prev) > 0) != forward {
			c.fail("%s: the iterator went from %q to %q moving forward=%v", who, prev, k, forward)
			return false
		}
		prev = append(prev[:0], k...)
		w, s, okk := parseChkKey(k)
		if !okk {
			c.fail("%s: the iterator showed key %q, which nobody wrote", who, k)
			return false
		}
		b, err := chkBatchOf(c.seed, w, s, it.Value())
		if err != nil {
			c.fail("%s: %v", who, err)
			return false
		}
		seen[string(k)] = b
		return true
	}
	ended := func() bool { // the walk stopped: at the end of the keys, or an error
		if err := it.Error(); err != nil {
			c.closedOK(who, err)
			return false
		}
		return true
	}
	switch mode := rng.Intn(4); mode {
	case 0: // everything, forward
		ok := it.First()
		for ; step(ok, true); ok = it.Next() {
		}
		if !ended() {
			return false
		}
	case 1: // everything, backward
		ok := it.Last()
		for ; step(ok, false); ok = it.Prev() {
		}
		if !ended() {
			return false
		}
	case 2, 3: // Seek, then a few steps forward (2) or backward (3)
		target := chkKey(rng.Intn(chkWriters), rng.Intn(chkSlots))
		if rng.Intn(4) == 0 {
			target = chkBound(rng.Intn(chkWriters), rng.Intn(chkSlots+1), rng.Intn(3))
		}
		c.counts.seeks.Add(1)
		ok := it.Seek(target)
		if ok && bytes.Compare(it.Key(), target) < 0 {
			c.fail("%s: Seek(%q) landed on %q", who, target, it.Key())
			return false
		}
		if !ok {
			if !ended() {
				return false
			}
			from = target // nothing at or after target
			break
		}
		from, to = target, append([]byte(nil), it.Key()...) // nothing in [target, key)
		if !step(true, true) {
			return false
		}
		forward := mode == 2
		n := 1 + rng.Intn(12)
		for i := 0; i < n; i++ {
			if forward {
				ok = it.Next()
			} else {
				ok = it.Prev()
			}
			if !step(ok, forward) {
				if c.failed.Load() || !ended() {
					return false
				}
				if forward {
					to = nil
				} else {
					from = nil
				}
				break
			}
			if forward {
				to = append(to[:0], it.Key()...)
			} else if bytes.Compare(it.Key(), from) < 0 {
				from = append([]byte(nil), it.Key()...)
			}
		}
	}
	if c.failed.Load() {
		return false
	}
	for w := 0; w < chkWriters; w++ {
		for s := 0; s < chkSlots; s++ {
			k := chkKey(w, s)
			if (from != nil && bytes.Compare(k, from) < 0) || (to != nil && bytes.Compare(k, to) > 0) {
				continue // outside what the walk covered
			}
			if !c.see(view, who, w, s, seen[string(k)]) {
				return false
			}
		}
	}
	return true
}

// scanner makes iterators, without a snapshot (the view is the moment
// NewIterator ran) and walks them.
func (c *checker) scanner(i int) {
	rng := rand.New(rand.NewSource(c.seed*41 + int64(i)))
	for !c.stop.Load() {
		lo := c.bounds()
		it := c.d.NewIterator(nil)
		view := newChkView(lo, c.tops())
		ok := c.scanRead("iterator", it, view, rng)
		if err := it.Close(); err != nil && !errors.Is(err, ErrClosed) {
			c.fail("iterator Close: %v", err)
		}
		c.counts.scans.Add(1)
		if !ok {
			return
		}
	}
}

// snapshotter holds snapshots across flushes and compactions and reads
// through them many times; every read must fit one moment. After the
// release, an iterator made before it still reads that moment, and a
// new read fails with ErrSnapshotReleased.
func (c *checker) snapshotter(i int) {
	rng := rand.New(rand.NewSource(c.seed*43 + int64(i)))
	for !c.stop.Load() {
		lo := c.bounds()
		snap := c.d.NewSnapshot()
		view := newChkView(lo, c.tops())
		ro := &ReadOptions{Snapshot: snap}
		c.counts.snapshots.Add(1)
		rounds := 1 + rng.Intn(20)
		for r := 0; r < rounds && !c.stop.Load(); r++ {
			if rng.Intn(3) == 0 {
				it := c.d.NewIterator(ro)
				ok := c.scanRead("iterator at a held snapshot", it, view, rng)
				it.Close()
				if !ok {
					break
				}
			} else if rng.Intn(4) == 0 {
				if !c.multiGet(rng, ro, view) {
					break
				}
			} else {
				w, s := c.prof.reader(rng)
				v, err := c.d.Get(chkKey(w, s), ro)
				c.counts.snapGets.Add(1)
				obs, ok := c.observed("Get at a held snapshot", w, s, v, err)
				if !ok || !c.see(view, "Get at a held snapshot", w, s, obs) {
					break
				}
			}
			time.Sleep(time.Duration(rng.Intn(1500)) * time.Microsecond)
		}
		pinned := c.d.NewIterator(ro)
		snap.Release()
		if _, err := c.d.Get(chkKey(0, 0), ro); !errors.Is(err, ErrSnapshotReleased) && !(errors.Is(err, ErrClosed) && c.closing.Load()) {
			c.fail("Get through a released snapshot: %v, want ErrSnapshotReleased", err)
		}
		c.counts.releasedReads.Add(1)
		// A while with no snapshot of ours: compactions drop what this
		// one pinned (and what the iterator below still reads), and
		// shadowed versions are not kept for a snapshot in between.
		time.Sleep(time.Duration(rng.Intn(c.prof.snapGapMicros+1)) * time.Microsecond)
		c.scanRead("iterator made before its snapshot's release", pinned, view, rng)
		pinned.Close()
	}
}

// maintainer flushes, compacts ranges and everything, and reads Metrics,
// so the tree changes under the readers all the time.
func (c *checker) maintainer() {
	rng := rand.New(rand.NewSource(c.seed * 47))
	for !c.stop.Load() {
		var err error
		switch r := rng.Intn(10); {
		case r < 3:
			err = c.d.Flush()
			c.counts.flushes.Add(1)
		case r < 6:
			err = c.d.CompactRange(nil, nil)
			c.counts.compactions.Add(1)
		case r < 9:
			a, b := chkKey(rng.Intn(chkWriters), rng.Intn(chkSlots)), chkKey(rng.Intn(chkWriters), rng.Intn(chkSlots))
			if bytes.Compare(a, b) > 0 {
				a, b = b, a
			}
			err = c.d.CompactRange(a, b)
			c.counts.compactions.Add(1)
		default:
			if m := c.d.Metrics(); m.BackgroundError != nil && !c.closing.Load() {
				c.fail("background error: %v", m.BackgroundError)
			}
		}
		if err != nil {
			c.closedOK("maintenance", err)
			if c.closing.Load() {
				return
			}
		}
	}
}

// checkpointer takes checkpoints under load, every few dozen
// milliseconds, opens each and reads all of it: every key with Get, then
// an iterator over everything. The copy must be explained by one state per
// writer, between the batches acknowledged before Checkpoint was called
// and those started before it returned. It then closes and removes the
// copy.
func (c *checker) checkpointer() {
	rng := rand.New(rand.NewSource(c.seed * 53))
	fs := c.opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	for n := 1; !c.stop.Load(); n++ {
		time.Sleep(time.Duration(rng.Intn(100)) * time.Millisecond)
		dir := filepath.Join(filepath.Dir(c.dir), fmt.Sprintf("checkpoint-%d", n))
		lo := c.bounds()
		err := c.d.Checkpoint(dir)
		view := newChkView(lo, c.tops())
		if err != nil {
			c.closedOK("Checkpoint", err)
			return
		}
		c.counts.checkpoints.Add(1)
		opts := *c.opts
		cp, err := Open(dir, &opts)
		if err != nil {
			c.fail("opening checkpoint %s: %v", dir, err)
			return
		}
		who := fmt.Sprintf("Get from checkpoint %d", n)
		for w := 0; w < chkWriters && !c.failed.Load(); w++ {
			for s := 0; s < chkSlots; s++ {
				v, err := cp.Get(chkKey(w, s), nil)
				if obs, ok := c.observed(who, w, s, v, err); !ok || !c.see(view, who, w, s, obs) {
					break
				}
			}
		}
		if !c.failed.Load() {
			it := cp.NewIterator(nil)
			c.scanRead(fmt.Sprintf("iterator over checkpoint %d", n), it, view, rng)
			it.Close()
		}
		if err := cp.Close(); err != nil {
			c.fail("closing checkpoint %s: %v", dir, err)
		}
		if names, err := fs.List(dir); err == nil {
			for _, name := range names {
				fs.Remove(vfs.Join(dir, name))
			}
		}
		fs.Remove(dir)
	}
}

// chkOptions picks the store's options from the seed: the file system,
// tiny buffers and level targets (so flushes and compactions are
// constant), and a filter policy, block cache and read path.
func chkOptions(t *testing.T, seed int64) (string, *Options, string) {
	rng := rand.New(rand.NewSource(seed))
	o := &Options{
		WriteBufferSize:     (8 + rng.Intn(56)) << 10,
		BlockSize:           256 << rng.Intn(4),
		L0CompactionTrigger: 2 + rng.Intn(3),
		LBaseMaxBytes:       int64(32+rng.Intn(96)) << 10,
		TargetFileSize:      int64(8+rng.Intn(24)) << 10,
		BlockCacheSize:      int64(16+rng.Intn(240)) << 10,
		DisableMmapReads:    rng.Intn(2) == 0,
	}
	policies := []filter.Policy{nil, filter.NewLevelDBBloomPolicy(10), filter.NewBloomPolicy(4), filter.None}
	o.FilterPolicy = policies[rng.Intn(len(policies))]
	if rng.Intn(4) == 0 {
		o.DisableBlockCache = true
	}
	dir := filepath.Join(chkTempDir(t), "db")
	fsName := "os"
	if rng.Intn(2) == 0 {
		o.FS, dir, fsName = vfs.NewMem(), "/db", "mem"
	}
	name := "default"
	if o.FilterPolicy != nil {
		name = o.FilterPolicy.Name()
	}
	desc := fmt.Sprintf("fs=%s buffer=%dKiB block=%d L0trigger=%d L1=%dKiB file=%dKiB cache=%dKiB(off=%v) mmap=%v filter=%s",
		fsName, o.WriteBufferSize>>10, o.BlockSize, o.L0CompactionTrigger, o.LBaseMaxBytes>>10,
		o.TargetFileSize>>10, o.BlockCacheSize>>10, o.DisableBlockCache, !o.DisableMmapReads, name)
	return dir, o, desc
}

// chkTempDir returns a temporary directory on tmpfs (/dev/shm) where
// there is one, else t.TempDir(): the checker is about concurrency, not
// durability, and a disk's fsyncs would slow the flushes and compactions
// that change the tree under the readers. Files on tmpfs still have real
// descriptors and memory maps.
func chkTempDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "bloomkv-checker-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// TestConcurrentChecker runs the concurrent checker (see the comment
// above) with each profile for a few seeds. It fails with the seed, the
// profile, the options and the first answer no moment explains. Rerun one
// for minutes with
//
//	go test -run 'TestConcurrentChecker/seed=S/hot' ./db/ -args -checker_seed=S -checker_seeds=1 -checker_duration=5m
func TestConcurrentChecker(t *testing.T) {
	seeds := *checkerSeeds
	if seeds == 0 {
		seeds = 3
		if *relLong {
			seeds = 10
		}
	}
	seed := *checkerSeed
	if seed == 0 {
		seed = time.Now().UnixNano() % 1_000_000_000
	}
	for i := 0; i < seeds; i++ {
		s := seed + int64(i)
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
			for _, prof := range chkProfiles {
				if *checkerProfile != "" && prof.name != *checkerProfile {
					continue
				}
				t.Run(prof.name, func(t *testing.T) { runChecker(t, s, prof, chkDuration(prof)) })
			}
		})
	}
}

// chkDuration is how long a run of prof lasts: -checker_duration, or
// the profile's share of the package's test time.
func chkDuration(prof chkProfile) time.Duration {
	if *checkerDuration > 0 {
		return *checkerDuration
	}
	d := 2 * time.Second
	switch {
	case *relLong:
		d = time.Minute
	case testing.Short():
		d = 500 * time.Millisecond
	}
	return time.Duration(float64(d) * prof.timeShare)
}

func runChecker(t *testing.T, seed int64, prof chkProfile, dur time.Duration) {
	dir, opts, desc := chkOptions(t, seed)
	desc = "profile=" + prof.name + " " + desc
	opts.DisableAutomaticCompactions = prof.noAutoCompactions
	t.Logf("seed %d: %s, %v (rerun: -run 'TestConcurrentChecker/seed=%d/%s' -args -checker_seed=%d -checker_seeds=1)",
		seed, desc, dur, seed, prof.name, seed)
	c := &checker{t: t, seed: seed, prof: prof, dir: dir, opts: opts, d: mustOpen(t, dir, opts)}
	getters, scanners, snapshotters := prof.getters, prof.scanners, prof.snapshotters

	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	for w := 0; w < prof.writers; w++ {
		run(func() { c.writer(w) })
	}
	for g := 0; g < getters; g++ {
		run(func() { c.getter(g) })
	}
	for i := 0; i < scanners; i++ {
		run(func() { c.scanner(i) })
	}
	for i := 0; i < snapshotters; i++ {
		run(func() { c.snapshotter(i) })
	}
	if prof.maintainer {
		run(c.maintainer)
	}
	if prof.checkpointer {
		run(c.checkpointer)
	}

	deadline := time.Now().Add(dur)
	for time.Now().Before(deadline) && !c.stop.Load() {
		time.Sleep(5 * time.Millisecond)
	}
	// Close under load: everything above is still running.
	c.closing.Store(true)
	withWatchdog(t, time.Minute, "Close under load", func() {
		if err := c.d.Close(); err != nil {
			c.fail("Close: %v", err)
		}
	})
	if opts.FS == nil {
		requireNoOpenFiles(t, dir, "right after Close, with readers and writers still running")
	}
	c.stop.Store(true)
	withWatchdog(t, time.Minute, "the checker's goroutines to stop after Close", wg.Wait)
	if opts.FS == nil {
		requireNoOpenFiles(t, dir, "after Close, once every reader stopped")
	}
	if _, err := c.d.Get(chkKey(0, 0), nil); !errors.Is(err, ErrClosed) {
		c.fail("Get after Close: %v, want ErrClosed", err)
	}
	n := &c.counts
	t.Logf("%v: %d batches (%d range deletions), %d gets, %d gets at snapshots, %d MultiGets (%d keys), %d scans (%d seeks), %d held snapshots (%d reads after release), %d checkpoints checked, %d flushes and %d compactions asked (%d done), %d answers ErrClosed during Close",
		dur, n.batches.Load(), n.rangeDels.Load(), n.gets.Load(), n.snapGets.Load(), n.multiGets.Load(), n.multiGetKeys.Load(),
		n.scans.Load(), n.seeks.Load(), n.snapshots.Load(), n.releasedReads.Load(), n.checkpoints.Load(),
		n.flushes.Load(), n.compactions.Load(), c.d.Metrics().Compactions, n.closedAnswers.Load())
	m := c.d.Metrics()
	t.Logf("batches acknowledged per writer: %v; range tombstones at Close: %d in tables, %d in memtables; entries compactions dropped under them: %d",
		c.bounds(), m.RangeTombstones, m.MemTableRangeTombstones, m.CoveredEntriesDropped)
	if c.failure != "" {
		t.Fatalf("seed %d (%s): %s", seed, desc, c.failure)
	}

	// Reopen: each writer's keys are its state after one batch between
	// its last acknowledged and its last started.
	c.d = mustOpen(t, dir, opts)
	defer c.d.Close()
	lo, hi := c.bounds(), c.tops()
	view := newChkView(lo, hi)
	c.stop.Store(false)
	c.closing.Store(false)
	for w := 0; w < chkWriters; w++ {
		for s := 0; s < chkSlots; s++ {
			v, err := c.d.Get(chkKey(w, s), nil)
			if obs, ok := c.observed("Get after reopening", w, s, v, err); ok {
				c.see(view, "Get after reopening", w, s, obs)
			}
		}
	}
	var all [][]byte
	for w := 0; w < chkWriters; w++ {
		all = append(all, chkKeys[w][:]...)
	}
	values, errs := c.d.MultiGet(all, nil)
	for i := range all {
		w, s := i/chkSlots, i%chkSlots
		if obs, ok := c.observed("MultiGet after reopening", w, s, values[i], errs[i]); ok {
			c.see(view, "MultiGet after reopening", w, s, obs)
		}
	}
	it := c.d.NewIterator(nil)
	c.scanRead("iterator after reopening", it, view, rand.New(rand.NewSource(seed)))
	it.Close()
	if c.failure != "" {
		t.Fatalf("seed %d (%s), after reopening (acked %v, started %v): %s", seed, desc, lo, hi, c.failure)
	}
}

// TestCheckerJudge checks the checker's own judgement, so that it cannot
// pass a wrong answer: the histories the writers record (range deletions
// included) against a brute-force model of the store over the keys
// themselves, spans, admits and views against brute force over those
// histories, intersectSpans against sets, and value verification against
// stale, foreign, damaged and truncated values.
func TestCheckerJudge(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	in := func(ss []span, j int64) bool {
		for _, s := range ss {
			if s.lo <= j && j <= s.hi {
				return true
			}
		}
		return false
	}
	// Few hot slots, so each slot sees many writes of every kind.
	prof := chkProfile{hot: 3, hotShare: 40}
	for trial := 0; trial < 300; trial++ {
		c := &checker{}
		const batches = 40
		// state[w][s][j] is slot s of writer w after writer w's batch j
		// (0: absent), from the model.
		var state [chkWriters][chkSlots][]int64
		for w := range state {
			for s := range state[w] {
				state[w][s] = make([]int64, batches+1)
			}
		}
		model := map[string]int{} // key -> index of the op that put its value, in the batch applied last
		var numBatch [chkWriters]int64
		for step := 0; step < batches*chkWriters; step++ {
			w := rng.Intn(chkWriters)
			if numBatch[w] == batches {
				continue
			}
			numBatch[w]++
			b := numBatch[w]
			ops := prof.batchOps(rng, w)
			if rng.Intn(4) == 0 { // more range deletions than the writers make
				ops = append(ops, prof.batchOps(rand.New(rand.NewSource(rng.Int63())), w)...)
				for i := range ops {
					if rng.Intn(3) == 0 {
						lo, hi := rng.Intn(chkSlots+1), rng.Intn(chkSlots+1)
						if lo > hi {
							lo, hi = hi, lo
						}
						ops[i] = chkOp{kind: chkRangeDel, s: lo, end: hi,
							start: chkBound(w, lo, rng.Intn(3)), limit: chkBound(w, hi, rng.Intn(3))}
						if lo == hi {
							ops[i].limit = ops[i].start
						}
					}
				}
			}
			superseded, _ := chkEffects(ops)
			c.hist[w].recordBatch(b, ops)
			// The model applies the ops in order, a range deletion to
			// every key of every writer in [start, limit), compared as
			// bytes.
			for k, i := range model {
				if i >= 0 {
					model[k] = -1 // from an earlier batch
				}
			}
			for i, o := range ops {
				switch o.kind {
				case chkPut:
					model[string(chkKey(w, o.s))] = i
				case chkDel:
					delete(model, string(chkKey(w, o.s)))
				default:
					if bytes.Compare(o.start, o.limit) > 0 {
						t.Fatalf("range [%q, %q) is inverted", o.start, o.limit)
					}
					for ww := 0; ww < chkWriters; ww++ {
						for s := 0; s < chkSlots; s++ {
							if k := chkKey(ww, s); bytes.Compare(o.start, k) <= 0 && bytes.Compare(k, o.limit) < 0 {
								delete(model, string(k))
							}
						}
					}
				}
			}
			for i, o := range ops {
				if o.kind != chkPut {
					continue
				}
				if j, ok := model[string(chkKey(w, o.s))]; superseded[i] != !(ok && j == i) {
					t.Fatalf("batch %v: put %d marked superseded=%v, the model says otherwise", ops, i, superseded[i])
				}
			}
			// Writer w's batch b: its slots take the model's state; the
			// other writers' slots must not have changed.
			for ww := 0; ww < chkWriters; ww++ {
				for s := 0; s < chkSlots; s++ {
					i, ok := model[string(chkKey(ww, s))]
					if ww != w {
						if prev := state[ww][s][numBatch[ww]]; (prev != 0) != ok {
							t.Fatalf("writer %d's batch %v changed writer %d's slot %d", w, ops, ww, s)
						}
						continue
					}
					st := int64(0)
					if ok && i >= 0 {
						st = b
					} else if ok {
						st = state[w][s][b-1]
					}
					state[w][s][b] = st
				}
			}
		}
		for w := range state {
			for s := range state[w] {
				for j := numBatch[w] + 1; j <= batches; j++ {
					state[w][s][j] = state[w][s][j-1]
				}
			}
		}

		// spans and admits of single slots.
		for probe := 0; probe < 40; probe++ {
			w, s := rng.Intn(chkWriters), prof.slot(rng)
			h := &c.hist[w]
			lo := rng.Int63n(batches + 1)
			hi := lo + rng.Int63n(batches+1-lo)
			obs := state[w][s][rng.Intn(batches+1)]
			if rng.Intn(4) == 0 {
				obs = rng.Int63n(batches + 1) // possibly never written
			}
			var want []span
			for j := lo; j <= hi; j++ {
				if state[w][s][j] != obs {
					continue
				}
				if n := len(want); n > 0 && want[n-1].hi == j-1 {
					want[n-1].hi = j
				} else {
					want = append(want, span{j, j})
				}
			}
			got := h.spans(s, obs, lo, hi)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("history %s: spans(obs %d, [%d,%d]) = %v, want %v", h.describe(s, 0, batches), obs, lo, hi, got, want)
			}
			if h.admits(s, obs, lo, hi) != (len(want) > 0) {
				t.Fatalf("history %s: admits(obs %d, [%d,%d]) = %v, spans %v", h.describe(s, 0, batches), obs, lo, hi, !(len(want) > 0), want)
			}
			// intersectSpans against sets.
			other := h.spans(s, state[w][s][rng.Intn(batches+1)], 0, batches)
			inter := intersectSpans(got, other)
			for j := int64(0); j <= batches; j++ {
				if in(inter, j) != (in(got, j) && in(other, j)) {
					t.Fatalf("intersectSpans(%v, %v) = %v: wrong at %d", got, other, inter, j)
				}
			}
		}

		// Views (a MultiGet, a snapshot, an iterator, a checkpoint): the
		// observations of several slots are accepted exactly when one
		// batch per writer explains them all.
		for probe := 0; probe < 40; probe++ {
			var lo, hi [chkWriters]int64
			for w := range lo {
				lo[w] = rng.Int63n(batches + 1)
				hi[w] = lo[w] + rng.Int63n(min(8, batches+1-lo[w]))
			}
			type look struct {
				w, s int
				obs  int64
			}
			var looks []look
			var at [chkWriters]int64 // the moment most observations come from
			for w := range at {
				at[w] = lo[w] + rng.Int63n(hi[w]-lo[w]+1)
			}
			for n := 1 + rng.Intn(12); n > 0; n-- {
				w, s := rng.Intn(chkWriters), prof.slot(rng)
				j := at[w]
				if rng.Intn(6) == 0 {
					j = lo[w] + rng.Int63n(hi[w]-lo[w]+1) // maybe another moment
				}
				looks = append(looks, look{w, s, state[w][s][j]})
			}
			want := true
			for w := 0; w < chkWriters; w++ {
				some := false
				for j := lo[w]; j <= hi[w] && !some; j++ {
					all := true
					for _, l := range looks {
						if l.w == w && state[w][l.s][j] != l.obs {
							all = false
						}
					}
					some = all
				}
				want = want && some
			}
			c.failure, c.stop, c.failed = "", atomic.Bool{}, atomic.Bool{}
			view, got := newChkView(lo, hi), true
			for _, l := range looks {
				if !c.see(view, "probe", l.w, l.s, l.obs) {
					got = false
					break
				}
			}
			if got != want {
				t.Fatalf("view [%v, %v] of %v: accepted=%v, want %v (%s)", lo, hi, looks, got, want, c.failure)
			}
		}
	}

	// chkBound: [bound(a), bound(b)) holds slots a..b-1 of the writer, and
	// nothing of another writer, however each bound is spelled.
	for w := 0; w < chkWriters; w++ {
		for a := 0; a <= chkSlots; a++ {
			for spell := 0; spell < 3; spell++ {
				k := chkBound(w, a, spell)
				for ww := 0; ww < chkWriters; ww++ {
					for s := 0; s < chkSlots; s++ {
						below := bytes.Compare(chkKey(ww, s), k) < 0
						if want := ww < w || (ww == w && s < a); below != want {
							t.Fatalf("chkBound(%d, %d, %d) = %q: key %s below it = %v", w, a, spell, k, chkKey(ww, s), below)
						}
					}
				}
				if _, _, ok := parseChkKey(k); ok && a == chkSlots {
					t.Fatalf("chkBound(%d, %d, %d) = %q parses as a key", w, a, spell, k)
				}
			}
		}
	}

	const seed = 99
	v := chkValue(seed, 1, 42, 7, false)
	if b, err := chkBatchOf(seed, 1, 7, v); err != nil || b != 42 {
		t.Fatalf("the right value: batch %d, %v", b, err)
	}
	bad := map[string][]byte{
		"superseded in its batch": chkValue(seed, 1, 42, 7, true),
		"another key's":           chkValue(seed, 1, 42, 8, false),
		"another writer's":        chkValue(seed, 2, 42, 7, false),
		"another seed's":          chkValue(seed+1, 1, 42, 7, false),
		"truncated":               v[:len(v)-1],
		"extended":                append(append([]byte(nil), v...), 'a'),
		"empty":                   {},
	}
	for i := range v {
		flipped := append([]byte(nil), v...)
		flipped[i] ^= 0x01
		bad[fmt.Sprintf("byte %d flipped", i)] = flipped
	}
	for name, val := range bad {
		if b, err := chkBatchOf(seed, 1, 7, val); err == nil {
			t.Errorf("%s value %q accepted as batch %d", name, val, b)
		}
	}
}
