package db

import (
	"errors"
	"flag"
	"fmt"
	"math/rand"
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
	values []string // "" with del
	dels   []bool
	sync   bool
}

func (w crashWrite) apply(m map[string]string, h uint64) uint64 {
	for i, k := range w.keys {
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
}

type crashStats struct {
	crashes, openCrashes, epochsToEnd int
	writes, syncWrites, lostUnsynced  int
	failedWrites, failedPresent       int
	compactions, flushes, reopens     int
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
	stats := &crashStats{maxOps: 400, at: map[string]int{}}
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
	for i := 0; i < crashKeySpace; i++ {
		k := fmt.Sprintf("k%03d", i)
		v, err := d.Get([]byte(k), nil)
		want, ok := got[k]
		switch {
		case err != nil && !isNotFound(err):
			r.fatalf(inj.where(), "Get(%s) after recovery: %v", k, err)
		case ok != (err == nil) || string(v) != want:
			r.fatalf(inj.where(), "Get(%s) = %.20q, %v; the iterator says %.20q, %v", k, v, err, want, ok)
		}
	}
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
			what = fmt.Sprintf("the recovered state is the one after %d writes, but %d were acknowledged with Sync", match, r.minJ)
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
	ops := 60 + r.rng.Intn(120)
	for op := 0; op < ops; op++ {
		var w crashWrite
		switch x := r.rng.Intn(100); {
		case x < 40:
			w = crashWrite{keys: []string{key()}, values: []string{value()}, dels: []bool{false}}
		case x < 52:
			w = crashWrite{keys: []string{key()}, values: []string{""}, dels: []bool{true}}
		case x < 66:
			for i := 1 + r.rng.Intn(8); i > 0; i-- {
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
			if r.rng.Intn(2) == 0 {
				start, limit = []byte(key()), []byte(key())
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
			got, err := scanState(d, ro)
			if err != nil {
				r.fatalf(inj.where(), "scan: %v", err)
			}
			if diff := diffStates(got, want); diff != "  (identical)" {
				r.fatalf(inj.where(), "scan differs from the model:\n%s", diff)
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
		default:
			k := key()
			w = crashWrite{keys: []string{k}, values: []string{value()}, dels: []bool{false}}
			w.keys = append(w.keys, k) // the same key twice in one batch
			w.values = append(w.values, value())
			w.dels = append(w.dels, r.rng.Intn(2) == 0)
		}
		w.sync = r.rng.Intn(5) == 0
		var b Batch
		for i, k := range w.keys {
			if w.dels[i] {
				b.Delete([]byte(k))
			} else {
				b.Put([]byte(k), []byte(w.values[i]))
			}
		}
		err := d.Write(&b, &WriteOptions{Sync: w.sync})
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
		if w.sync {
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
