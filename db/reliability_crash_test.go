package db

import (
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

var (
	crashPoints = flag.Int("crash_points", 500, "simulated machine crashes in TestCrashRecovery (-long: 10000)")
	crashSeed   = flag.Int64("crash_seed", 0, "seed of TestCrashRecovery; 0 picks one from the clock (it is logged)")
)

// errMachineCrashed is the cause of every operation refused after a
// simulated crash.
var errMachineCrashed = errors.New("machine crashed")

// crashInjector simulates a machine crash at the Nth operation that
// changes the disk: from then on every such operation fails and changes
// nothing, so the disk stays as it was at the crash (reads still pass: they
// change nothing). Writes to the human-readable LOG are not counted, so
// crash points land on the files that matter.
type crashInjector struct {
	mu      sync.Mutex
	at      int64 // crash before the at-th counted operation
	n       int64 // counted operations so far
	crashed bool
	op      vfs.Op
	path    string
}

func (c *crashInjector) MaybeInject(op vfs.Op, path string) error {
	if op&vfs.OpMutating == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return errMachineCrashed
	}
	if strings.HasSuffix(path, "/LOG") || strings.HasSuffix(path, "/LOG.old") {
		return nil
	}
	if c.n == c.at {
		c.crashed, c.op, c.path = true, op, path
		return errMachineCrashed
	}
	c.n++
	return nil
}

// crashNow crashes the machine at once (when the workload ran out first).
func (c *crashInjector) crashNow() {
	c.mu.Lock()
	if !c.crashed {
		c.crashed, c.op, c.path = true, 0, "(between operations)"
	}
	c.mu.Unlock()
}

func (c *crashInjector) where() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.crashed {
		return fmt.Sprintf("no crash yet, %d ops", c.n)
	}
	return fmt.Sprintf("op #%d %v %s", c.n, c.op, c.path)
}

// crashWrite is one acknowledged (or, last, failed) write of the workload.
type crashWrite struct {
	keys   []string
	values []string // "" with del or a range deletion
	dels   []bool
	// ends[i], when set, makes entry i a range deletion of [keys[i],
	// ends[i]) (ends may be shorter than keys: the rest are no ranges).
	ends []string
	// rangeOnly: the write is one range deletion, made with DB.DeleteRange
	// rather than a Batch.
	rangeOnly bool
	sync      bool
}

// addRange appends a range deletion of [start, end) to the write.
func (w *crashWrite) addRange(start, end string) {
	for len(w.ends) < len(w.keys) {
		w.ends = append(w.ends, "")
	}
	w.keys, w.values, w.dels, w.ends = append(w.keys, start), append(w.values, ""), append(w.dels, true), append(w.ends, end)
}

// rangeEnd returns the end of entry i's range deletion, or "" when entry i
// is a put or a point deletion.
func (w crashWrite) rangeEnd(i int) string {
	if i < len(w.ends) {
		return w.ends[i]
	}
	return ""
}

// empty reports whether the write has no entry the store keeps: only
// empty range deletions (start == end), which Batch.DeleteRange drops.
func (w crashWrite) empty() bool {
	for i, k := range w.keys {
		if w.rangeEnd(i) != k {
			return false
		}
	}
	return true
}

// toBatch returns the write as a batch, in the order of its entries.
func (w crashWrite) toBatch() *Batch {
	b := new(Batch)
	for i, k := range w.keys {
		switch {
		case w.rangeEnd(i) != "":
			b.DeleteRange([]byte(k), []byte(w.rangeEnd(i)))
		case w.dels[i]:
			b.Delete([]byte(k))
		default:
			b.Put([]byte(k), []byte(w.values[i]))
		}
	}
	return b
}

// deleteRangeFromModel applies a range deletion to a model: every key in
// [start, end) goes. It returns the updated fingerprint.
func deleteRangeFromModel(m map[string]string, h uint64, start, end string) uint64 {
	for k, v := range m {
		if k >= start && k < end {
			h ^= entryHash(k, v)
			delete(m, k)
		}
	}
	return h
}

func (w crashWrite) apply(m map[string]string, h uint64) uint64 {
	for i, k := range w.keys {
		if end := w.rangeEnd(i); end != "" {
			h = deleteRangeFromModel(m, h, k, end)
			continue
		}
		if old, ok := m[k]; ok {
			h ^= entryHash(k, old)
			delete(m, k)
		}
		if !w.dels[i] {
			m[k] = w.values[i]
			h ^= entryHash(k, w.values[i])
		}
	}
	return h
}

// storeRangeDels counts the range tombstones of d's tables.
func storeRangeDels(d *DB) (n uint64) {
	ref := d.loadReadState()
	defer ref.unref()
	for _, files := range ref.rs.v.Files {
		for _, f := range files {
			n += f.RangeDels
		}
	}
	return n
}

// describeWrites describes hist[from:to], one line per write.
func describeWrites(hist []crashWrite, from, to int) string {
	var lines []string
	for j := from; j < to && j < len(hist); j++ {
		w := hist[j]
		var ops []string
		for i, k := range w.keys {
			switch {
			case w.rangeEnd(i) != "":
				ops = append(ops, fmt.Sprintf("DeleteRange(%q, %q)", k, w.rangeEnd(i)))
			case w.dels[i]:
				ops = append(ops, fmt.Sprintf("Delete(%s)", k))
			default:
				ops = append(ops, fmt.Sprintf("Put(%s, %.8q)", k, w.values[i]))
			}
		}
		lines = append(lines, fmt.Sprintf("  write %d (sync %v, DB.DeleteRange %v): %s", j+1, w.sync, w.rangeOnly, strings.Join(ops, " ")))
	}
	return strings.Join(lines, "\n")
}

// readsDiffer reads d (at ro) every way a range tombstone must be honoured
// and compares each with want: a forward and a backward scan, a Seek to
// each of seeks, a Get and one MultiGet of every key of keys. It returns
// "" when all agree with want, or what differs. Errors are reported as
// differences.
func readsDiffer(d *DB, ro *ReadOptions, want map[string]string, keys, seeks []string) string {
	sorted := make([]string, 0, len(want))
	for k := range want {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	got, err := scanState(d, ro)
	if err != nil {
		return fmt.Sprintf("forward scan: %v", err)
	}
	if diff := diffStates(got, want); diff != "  (identical)" {
		return "forward scan differs:\n" + diff
	}
	it := d.NewIterator(ro)
	defer it.Close()
	i := len(sorted) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		if i < 0 || string(it.Key()) != sorted[i] || string(it.Value()) != want[sorted[i]] {
			w := "(nothing)"
			if i >= 0 {
				w = sorted[i]
			}
			return fmt.Sprintf("backward scan: %q = %.20q where the model has %q", it.Key(), it.Value(), w)
		}
		i--
	}
	if err := it.Error(); err != nil {
		return fmt.Sprintf("backward scan: %v", err)
	}
	if i >= 0 {
		return fmt.Sprintf("backward scan ended early: %q missing", sorted[i])
	}
	for _, s := range seeks {
		j := sort.SearchStrings(sorted, s)
		ok := it.Seek([]byte(s))
		switch {
		case it.Error() != nil:
			return fmt.Sprintf("Seek(%q): %v", s, it.Error())
		case ok != (j < len(sorted)):
			return fmt.Sprintf("Seek(%q) valid = %v; the model has %d keys from there", s, ok, len(sorted)-j)
		case ok && (string(it.Key()) != sorted[j] || string(it.Value()) != want[sorted[j]]):
			return fmt.Sprintf("Seek(%q) = %q, %.20q; want %q", s, it.Key(), it.Value(), sorted[j])
		}
	}
	bkeys := make([][]byte, len(keys))
	for i, k := range keys {
		bkeys[i] = []byte(k)
	}
	mv, merrs := d.MultiGet(bkeys, ro)
	for i, k := range keys {
		v, err := d.Get([]byte(k), ro)
		wv, present := want[k]
		if (err != nil && !isNotFound(err)) || present != (err == nil) || string(v) != wv {
			return fmt.Sprintf("Get(%s) = %.20q, %v; want %.20q (present %v)", k, v, err, wv, present)
		}
		if (merrs[i] != nil && !isNotFound(merrs[i])) || present != (merrs[i] == nil) || string(mv[i]) != wv {
			return fmt.Sprintf("MultiGet: %s = %.20q, %v; want %.20q (present %v)", k, mv[i], merrs[i], wv, present)
		}
	}
	return ""
}

// crashRun is one store living through many crashes.
type crashRun struct {
	t    *testing.T
	rng  *rand.Rand
	seed int64
	opts Options
	mem  *vfs.MemFS

	// base is the exact state the last verification found; hist the writes
	// made since, in order (the last one may have failed); hashes[j] the
	// fingerprint of base after hist[:j]; minJ how many of hist must be
	// there (through the last one acknowledged with Sync).
	base   map[string]string
	hist   []crashWrite
	hashes []uint64
	minJ   int
	// lastFailed says the last write of hist returned an error (the crash):
	// it may or may not be there.
	lastFailed bool
	cur        map[string]string // base + every acknowledged write of hist
	curH       uint64
	nextID     int

	stats     *crashStats
	lastCrash string // where the last crash struck

	// ckpts are the checkpoints taken since the last verification, each
	// with the model at its moment; nextCkpt numbers their directories.
	ckpts    []crashCkpt
	nextCkpt int
	// lastRange is the range of the last range deletion written, for a
	// CompactRange over it.
	lastRange [2]string
}

// crashCkpt is a checkpoint taken by the workload: dir must open and hold
// exactly model if Checkpoint returned nil (done); if the crash struck
// inside Checkpoint, dir may also be absent or refused as incomplete.
type crashCkpt struct {
	dir   string
	model map[string]string
	done  bool
}

type crashStats struct {
	crashes, openCrashes, epochsToEnd int
	writes, syncWrites, lostUnsynced  int
	failedWrites, failedPresent       int
	compactions, flushes, reopens     int
	rangeDels, batchRangeDels         int
	recoveredTableRangeDels           uint64         // range tombstones in the tables of the recovered stores, summed
	checkpoints                       map[string]int // outcomes of the checkpoints checked after a crash
	maxOps                            int64
	at                                map[string]int // crash sites: operation and file kind
}

// crashSite names where a crash struck: the operation and the kind of file.
func crashSite(inj *crashInjector) string {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	if inj.op == 0 {
		return "idle"
	}
	kind := inj.path
	if i := strings.LastIndexByte(kind, '/'); i >= 0 {
		kind = kind[i+1:]
	}
	if i := strings.IndexByte(kind, '.'); i >= 0 {
		kind = kind[i+1:]
	} else if i := strings.IndexByte(kind, '-'); i >= 0 {
		kind = kind[:i]
	}
	return inj.op.String() + " " + kind
}

const crashKeySpace = 120

// crashKeys are the keys of the workload; crashSeeks the Seek targets of
// readsDiffer: keys, and bounds between keys and past them.
var crashKeys, crashSeeks = func() (keys, seeks []string) {
	for i := 0; i < crashKeySpace; i++ {
		keys = append(keys, fmt.Sprintf("k%03d", i))
	}
	seeks = []string{"", "k", "k119", "k12", "l"}
	for i := 0; i < crashKeySpace; i += 7 {
		seeks = append(seeks, fmt.Sprintf("k%03d", i), fmt.Sprintf("k%02d", i/10), fmt.Sprintf("k%03d\x00", i))
	}
	return keys, seeks
}()

func (r *crashRun) fatalf(where, format string, args ...any) {
	r.t.Helper()
	names, _ := r.mem.List("/db")
	r.t.Fatalf("seed %d, after crash %d (at %s; this epoch at %s): %s\nfiles: %v", r.seed, r.stats.crashes, r.lastCrash, where, fmt.Sprintf(format, args...), names)
}

// TestCrashRecovery runs a random workload (puts, deletes, batches, with
// and without Sync; flushes, compactions, snapshots, iterators, clean
// reopens) on a MemFS, simulates a machine crash at a random operation that
// changes the disk (also inside Open's recovery, flushes and compactions),
// reopens from the crash's image and checks that the store equals the
// model after some prefix of the writes, a prefix that includes every write
// acknowledged with Sync: no hole, no half batch, no resurrected delete.
// Each store lives through several crashes in a row.
func TestCrashRecovery(t *testing.T) {
	points := *crashPoints
	if *relLong && points == 500 {
		points = 10000
	}
	if testing.Short() {
		points = 50
	}
	seed := *crashSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	// The seed fixes the workload and the crash points; background flushes
	// and compactions may still interleave differently in a rerun.
	t.Logf("seed %d (rerun: -run=TestCrashRecovery -args -crash_seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	stats := &crashStats{maxOps: 400, at: map[string]int{}, checkpoints: map[string]int{}}
	for stats.crashes < points {
		r := &crashRun{
			t: t, rng: rng, seed: seed, mem: vfs.NewMem(), stats: stats,
			base: map[string]string{}, cur: map[string]string{}, hashes: []uint64{0},
			opts: Options{
				WriteBufferSize:     1 << 10,
				BlockSize:           256,
				L0CompactionTrigger: 2 + rng.Intn(3),
				LBaseMaxBytes:       8 << 10,
				TargetFileSize:      2 << 10,
				DisableCompression:  rng.Intn(2) == 0,
			},
		}
		for epoch := 0; epoch < 8 && stats.crashes < points; epoch++ {
			r.epoch()
		}
	}
	t.Logf("%d crash points (%d inside Open), %d epochs ran to their end; %d writes (%d with Sync), %d unsynced writes lost, "+
		"%d writes failed at the crash (%d of them survived); %d flushes, %d compactions, %d clean reopens",
		stats.crashes, stats.openCrashes, stats.epochsToEnd, stats.writes, stats.syncWrites, stats.lostUnsynced,
		stats.failedWrites, stats.failedPresent, stats.flushes, stats.compactions, stats.reopens)
	t.Logf("%d range deletions with DeleteRange, %d inside batches; %d range tombstones in the recovered stores' tables, summed; checkpoints after a crash: %v",
		stats.rangeDels, stats.batchRangeDels, stats.recoveredTableRangeDels, stats.checkpoints)
	t.Logf("crash sites: %v", stats.at)
}

// epoch opens the store with a crash armed, checks what the last crash
// left, runs the workload until the crash, and takes the crash's image.
func (r *crashRun) epoch() {
	at := r.rng.Int63n(r.stats.maxOps + r.stats.maxOps/8 + 1)
	if r.rng.Intn(6) == 0 {
		at = r.rng.Int63n(40) // inside Open's recovery, more often
	}
	inj := &crashInjector{at: at}
	o := r.opts
	o.FS = vfs.NewFaultFS(r.mem, inj)
	d, err := Open("/db", &o)
	if err != nil {
		if !errors.Is(err, vfs.ErrInjected) || !inj.crashed {
			r.fatalf(inj.where(), "Open failed without a crash: %v", err)
		}
		r.stats.openCrashes++
		r.crash(inj)
		return
	}
	r.verify(d, inj)
	d = r.workload(d, &o, inj)
	inj.crashNow()
	if d != nil {
		_ = d.Close()
	}
	r.crash(inj)
}

// crash replaces the store's files with what the crash left.
func (r *crashRun) crash(inj *crashInjector) {
	r.lastCrash = inj.where()
	r.stats.at[crashSite(inj)]++
	r.mem = r.mem.CrashClone(r.rng)
	r.stats.crashes++
}

// verify checks the reopened store against the history and makes what it
// found the new base.
func (r *crashRun) verify(d *DB, inj *crashInjector) {
	got, err := scanState(d, nil)
	if err != nil {
		r.fatalf(inj.where(), "scan after recovery: %v", err)
	}
	// Every read path agrees with the forward scan (Get, MultiGet, the
	// backward scan and Seek each apply the range tombstones their own
	// way).
	if diff := readsDiffer(d, nil, got, crashKeys, crashSeeks); diff != "" {
		r.fatalf(inj.where(), "after recovery the reads disagree with the forward scan: %s", diff)
	}
	r.stats.recoveredTableRangeDels += storeRangeDels(d)
	h := stateHash(got)
	match := -1
	for j := len(r.hist); j >= 0; j-- {
		if r.hashes[j] != h {
			continue
		}
		m := cloneMap(r.base)
		for _, w := range r.hist[:j] {
			w.apply(m, 0)
		}
		if diffStates(got, m) == "  (identical)" {
			match = j
			break
		}
	}
	if match < 0 || match < r.minJ {
		must := cloneMap(r.base)
		for _, w := range r.hist[:r.minJ] {
			w.apply(must, 0)
		}
		all := cloneMap(r.base)
		for _, w := range r.hist {
			w.apply(all, 0)
		}
		what := "the recovered state is not the result of any prefix of the writes"
		if match >= 0 {
			what = fmt.Sprintf("the recovered state is the one after %d writes, but %d were acknowledged with Sync; the writes after it:\n%s",
				match, r.minJ, describeWrites(r.hist, match, r.minJ+2))
		}
		r.fatalf(inj.where(), "%s (%d writes since the last check)\nagainst the state that must be there:\n%s\nagainst all writes:\n%s",
			what, len(r.hist), diffStates(got, must), diffStates(got, all))
	}
	lost := len(r.hist) - match
	if r.lastFailed {
		if lost == 0 {
			r.stats.failedPresent++
		} else {
			lost--
		}
	}
	r.stats.lostUnsynced += lost
	r.base = got
	r.cur = cloneMap(got)
	r.curH = h
	r.hist = r.hist[:0]
	r.hashes = append(r.hashes[:0], h)
	r.minJ = 0
	r.lastFailed = false
	r.verifyCheckpoints(inj)
}

// verifyCheckpoints checks, on the crash's image, every checkpoint taken
// since the last verification, then removes them.
func (r *crashRun) verifyCheckpoints(inj *crashInjector) {
	for _, c := range r.ckpts {
		outcome := r.checkCheckpoint(c, inj.where())
		r.stats.checkpoints[outcome]++
		names, _ := r.mem.List(c.dir)
		for _, n := range names {
			if err := r.mem.Remove(c.dir + "/" + n); err != nil {
				r.fatalf(inj.where(), "removing the checkpoint: %v", err)
			}
		}
		_ = r.mem.Remove(c.dir)
	}
	r.ckpts = r.ckpts[:0]
}

// checkCheckpoint opens checkpoint c read-only on r.mem and checks it
// holds exactly its model, through every read path. It returns the
// outcome: "complete", "absent" or "incomplete" (the last two only for a
// checkpoint the crash interrupted).
func (r *crashRun) checkCheckpoint(c crashCkpt, where string) string {
	r.t.Helper()
	cd, err := Open(c.dir, &Options{FS: r.mem, ReadOnly: true})
	switch {
	case err == nil:
	case !c.done && errors.Is(err, ErrDBMissing):
		return "absent"
	case !c.done && errors.Is(err, ErrIncompleteCheckpoint):
		return "incomplete"
	default:
		r.fatalf(where, "checkpoint %s (Checkpoint returned nil: %v) does not open: %v", c.dir, c.done, err)
	}
	defer cd.Close()
	if diff := readsDiffer(cd, nil, c.model, crashKeys, crashSeeks); diff != "" {
		r.fatalf(where, "checkpoint %s (Checkpoint returned nil: %v) differs from the model at its moment: %s", c.dir, c.done, diff)
	}
	if c.done {
		return "complete"
	}
	return "complete (interrupted)"
}

// workload runs random operations until one fails (the crash) or the
// epoch's operations run out. It returns the open DB, or nil.
func (r *crashRun) workload(d *DB, o *Options, inj *crashInjector) *DB {
	type snap struct {
		s *Snapshot
		m map[string]string
	}
	var snaps []snap
	defer func() {
		for _, s := range snaps {
			s.s.Release()
		}
	}()
	crashed := func(what string, err error) bool {
		r.t.Helper()
		if err == nil {
			return false
		}
		if !errors.Is(err, vfs.ErrInjected) || !errors.Is(err, errMachineCrashed) {
			r.fatalf(inj.where(), "%s failed with an error that is not the crash: %v", what, err)
		}
		return true
	}
	key := func() string { return fmt.Sprintf("k%03d", r.rng.Intn(crashKeySpace)) }
	value := func() string {
		r.nextID++
		return fmt.Sprintf("%d:%s", r.nextID, strings.Repeat("v", r.rng.Intn(120)))
	}
	// rangeBounds draws a range deletion's bounds: over a few keys, some
	// tens, or most of the key space; bounds on keys, between keys (a
	// prefix, a key's successor) or past the last; rarely empty.
	rangeBounds := func() (string, string) {
		s := r.rng.Intn(crashKeySpace)
		var n int
		switch r.rng.Intn(8) {
		case 0, 1, 2, 3:
			n = 1 + r.rng.Intn(4)
		case 4, 5, 6:
			n = 5 + r.rng.Intn(25)
		default:
			n = 30 + r.rng.Intn(crashKeySpace)
		}
		start, end := fmt.Sprintf("k%03d", s), fmt.Sprintf("k%03d", s+n)
		switch r.rng.Intn(8) {
		case 0:
			start = start[:3] // from the first key with this prefix
		case 1:
			start += "\x00" // after the key
		case 2:
			end = end[:3]
		case 3:
			end += "\x00" // the key itself too
		}
		if end <= start || r.rng.Intn(40) == 0 {
			end = start // DeleteRange(k, k): nothing
		}
		r.lastRange = [2]string{start, end}
		return start, end
	}
	ops := 60 + r.rng.Intn(120)
	for op := 0; op < ops; op++ {
		var w crashWrite
		switch x := r.rng.Intn(110); {
		case x < 40:
			w = crashWrite{keys: []string{key()}, values: []string{value()}, dels: []bool{false}}
		case x < 52:
			w = crashWrite{keys: []string{key()}, values: []string{""}, dels: []bool{true}}
		case x < 66:
			for i := 1 + r.rng.Intn(8); i > 0; i-- {
				if r.rng.Intn(6) == 0 {
					// A range deletion among the batch's puts and deletes:
					// the entries before it in the batch are covered, the
					// ones after it are not.
					w.addRange(rangeBounds())
					r.stats.batchRangeDels++
					continue
				}
				del := r.rng.Intn(4) == 0
				v := ""
				if !del {
					v = value()
				}
				w.keys, w.values, w.dels = append(w.keys, key()), append(w.values, v), append(w.dels, del)
			}
		case x < 71:
			r.stats.flushes++
			if crashed("Flush", d.Flush()) {
				return d
			}
			continue
		case x < 74:
			var start, limit []byte
			switch r.rng.Intn(3) {
			case 0:
				start, limit = []byte(key()), []byte(key())
			case 1:
				if r.lastRange[0] != "" {
					// Over the last range deletion.
					start, limit = []byte(r.lastRange[0]), []byte(r.lastRange[1])
				}
			}
			ok, err := compactRange(d, start, limit)
			if crashed("CompactRange", err) {
				return d
			}
			if ok {
				r.stats.compactions++
			}
			continue
		case x < 84:
			k := key()
			ro, want := (*ReadOptions)(nil), r.cur
			if len(snaps) > 0 && r.rng.Intn(2) == 0 {
				s := snaps[r.rng.Intn(len(snaps))]
				ro, want = &ReadOptions{Snapshot: s.s}, s.m
			}
			v, err := d.Get([]byte(k), ro)
			wv, ok := want[k]
			if (err != nil && !isNotFound(err)) || ok != (err == nil) || string(v) != wv {
				r.fatalf(inj.where(), "Get(%s) = %.20q, %v; want %.20q (present %v)", k, v, err, wv, ok)
			}
			continue
		case x < 88:
			ro, want := (*ReadOptions)(nil), r.cur
			if len(snaps) > 0 && r.rng.Intn(2) == 0 {
				s := snaps[r.rng.Intn(len(snaps))]
				ro, want = &ReadOptions{Snapshot: s.s}, s.m
			}
			if diff := readsDiffer(d, ro, want, crashKeys, crashSeeks); diff != "" {
				r.fatalf(inj.where(), "reads differ from the model (snapshot %v): %s", ro != nil, diff)
			}
			continue
		case x < 94:
			if len(snaps) < 3 {
				snaps = append(snaps, snap{d.NewSnapshot(), cloneMap(r.cur)})
			} else {
				i := r.rng.Intn(len(snaps))
				snaps[i].s.Release()
				snaps = append(snaps[:i], snaps[i+1:]...)
			}
			continue
		case x < 95:
			// A clean close and reopen in the middle of the epoch.
			for _, s := range snaps {
				s.s.Release()
			}
			snaps = nil
			if crashed("Close", d.Close()) {
				return nil
			}
			r.stats.reopens++
			nd, err := Open("/db", o)
			if crashed("Open", err) {
				return nil
			}
			d = nd
			continue
		case x >= 100 && x < 106:
			// One range deletion, with DB.DeleteRange.
			w = crashWrite{rangeOnly: true}
			w.addRange(rangeBounds())
			r.stats.rangeDels++
		case x >= 106 && x < 108:
			// A checkpoint, the crash possibly inside it. One that
			// returned nil must open now and, after the crash, hold
			// exactly the model at its moment.
			c := crashCkpt{dir: fmt.Sprintf("/ckpt%d", r.nextCkpt), model: cloneMap(r.cur)}
			r.nextCkpt++
			err := d.Checkpoint(c.dir)
			c.done = err == nil
			r.ckpts = append(r.ckpts, c)
			if crashed("Checkpoint", err) {
				return d
			}
			r.checkCheckpoint(c, inj.where())
			continue
		case x >= 108:
			// Puts inside a range deleted just before, in one batch or
			// two: keys written after a tombstone stay.
			s, e := rangeBounds()
			w.addRange(s, e)
			r.stats.batchRangeDels++
			for i := r.rng.Intn(4); i >= 0; i-- {
				k := key()
				if k < s || k >= e {
					k = s
				}
				w.keys, w.values, w.dels = append(w.keys, k), append(w.values, value()), append(w.dels, false)
			}
		default:
			k := key()
			w = crashWrite{keys: []string{k}, values: []string{value()}, dels: []bool{false}}
			w.keys = append(w.keys, k) // the same key twice in one batch
			w.values = append(w.values, value())
			w.dels = append(w.dels, r.rng.Intn(2) == 0)
		}
		w.sync = r.rng.Intn(5) == 0
		var err error
		if w.rangeOnly {
			err = d.DeleteRange([]byte(w.keys[0]), []byte(w.ends[0]), &WriteOptions{Sync: w.sync})
		} else {
			err = d.Write(w.toBatch(), &WriteOptions{Sync: w.sync})
		}
		r.hist = append(r.hist, w)
		r.hashes = append(r.hashes, 0) // set below
		r.stats.writes++
		if crashed("Write", err) {
			r.lastFailed = true
			r.stats.failedWrites++
			r.hashes[len(r.hashes)-1] = w.apply(cloneMap(r.cur), r.curH)
			return d
		}
		r.curH = w.apply(r.cur, r.curH)
		r.hashes[len(r.hashes)-1] = r.curH
		if w.sync && !w.empty() {
			// (An empty write, say DeleteRange(k, k), is a no-op: with
			// Sync it syncs nothing, not even the writes before it.)
			r.minJ = len(r.hist)
			r.stats.syncWrites++
		}
	}
	r.stats.epochsToEnd++
	inj.mu.Lock()
	if inj.n > r.stats.maxOps {
		r.stats.maxOps = inj.n
	}
	inj.mu.Unlock()
	return d
}
