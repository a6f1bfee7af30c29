package db

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

var faultSeeds = flag.Int("fault_seeds", 100, "random-fault runs in TestFaultInjectionRandom (-long: 2000)")

// faultOpts are the options of the fault-injection stores: small buffers
// and tables, automatic compactions off so the operation sequence of the
// workload is the same from run to run.
func faultOpts(fsys vfs.FS) *Options {
	return &Options{FS: fsys, WriteBufferSize: 2 << 10, BlockSize: 256, TargetFileSize: 2 << 10, DisableAutomaticCompactions: true}
}

func fkey(i int) string { return fmt.Sprintf("f%03d", i) }

// faultBaseStore builds the store every fault run starts from: tables in
// two levels and a log to replay, so Open has recovery work to fail in.
// Range tombstones are in each: a level-0 table's over the compacted
// level's keys, and the log's over both (with a key put again after it).
func faultBaseStore(t *testing.T) (*vfs.MemFS, map[string]string) {
	t.Helper()
	mem := vfs.NewMem()
	d := mustOpen(t, "/db", faultOpts(mem))
	m := map[string]string{}
	put := func(i int, v string) {
		if err := d.Put([]byte(fkey(i)), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		m[fkey(i)] = v
	}
	for i := 0; i < 60; i++ {
		put(i, fmt.Sprintf("base%d-%s", i, strings.Repeat("x", i)))
	}
	if ok, err := compactRange(d, nil, nil); err != nil {
		t.Fatal(err)
	} else if !ok {
		t.Log("no CompactRange: the base store has level-0 tables only")
	}
	delRange := func(a, b int) {
		if err := d.DeleteRange([]byte(fkey(a)), []byte(fkey(b)), nil); err != nil {
			t.Fatal(err)
		}
		deleteRangeFromModel(m, 0, fkey(a), fkey(b))
	}
	delRange(22, 31) // into the level-0 table below, over the compacted keys
	for i := 40; i < 80; i += 3 {
		put(i, fmt.Sprintf("second%d", i))
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if storeRangeDels(d) == 0 {
		t.Fatal("the base store's flush wrote no range tombstone")
	}
	for i := 0; i < 20; i += 4 {
		if err := d.Delete([]byte(fkey(i)), nil); err != nil {
			t.Fatal(err)
		}
		delete(m, fkey(i))
	}
	put(90, "in the log")
	delRange(44, 53) // in the log too, over both levels
	put(47, "in the log, after its range deletion")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return mem, m
}

// faultRun runs the fault workload against one store and checks the
// promises that hold whatever fails.
type faultRun struct {
	t      *testing.T
	name   string
	fs     *vfs.FaultFS
	acked  map[string]string // the model after every acknowledged write
	maybe  map[string]string // acked plus the failed write, if one failed; else nil
	errs   int               // calls that returned an error
	wfail  bool              // a write has failed on this DB
	bgSeen bool              // Metrics reported a background error
}

func (r *faultRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s: %s", r.name, fmt.Sprintf(format, args...))
}

// check requires err, if any, to be an injected fault.
func (r *faultRun) check(what string, err error) bool {
	r.t.Helper()
	if err == nil {
		return false
	}
	if !errors.Is(err, vfs.ErrInjected) {
		r.fatalf("%s: error does not wrap the injected fault: %v", what, err)
	}
	r.errs++
	return true
}

func (r *faultRun) write(d *DB, b *Batch, sync bool, apply func(map[string]string)) {
	r.t.Helper()
	r.written(d, d.Write(b, &WriteOptions{Sync: sync}), apply)
}

// written updates the models after a write that returned err.
func (r *faultRun) written(d *DB, err error, apply func(map[string]string)) {
	r.t.Helper()
	if r.wfail && err == nil {
		r.fatalf("a write succeeded after an earlier write failed")
	}
	if r.bgSeen && err == nil {
		r.fatalf("a write succeeded after Metrics reported a background error")
	}
	if r.check("Write", err) {
		if !r.wfail && r.maybe == nil {
			r.maybe = cloneMap(r.acked)
			apply(r.maybe)
		}
		r.wfail = true
		if bg := d.Metrics().BackgroundError; bg == nil || !errors.Is(bg, vfs.ErrInjected) {
			r.fatalf("a write failed with %v but Metrics().BackgroundError is %v", err, bg)
		}
		return
	}
	apply(r.acked)
	if r.maybe != nil {
		apply(r.maybe)
	}
}

func (r *faultRun) put(d *DB, i int, v string, sync bool) {
	r.t.Helper()
	var b Batch
	b.Put([]byte(fkey(i)), []byte(v))
	r.write(d, &b, sync, func(m map[string]string) { m[fkey(i)] = v })
}

// delRange deletes [fkey(a), fkey(b)) with DB.DeleteRange.
func (r *faultRun) delRange(d *DB, a, b int, sync bool) {
	r.t.Helper()
	err := d.DeleteRange([]byte(fkey(a)), []byte(fkey(b)), &WriteOptions{Sync: sync})
	r.written(d, err, func(m map[string]string) { deleteRangeFromModel(m, 0, fkey(a), fkey(b)) })
}

func (r *faultRun) del(d *DB, i int, sync bool) {
	r.t.Helper()
	var b Batch
	b.Delete([]byte(fkey(i)))
	r.write(d, &b, sync, func(m map[string]string) { delete(m, fkey(i)) })
}

// get checks one key against the model(s): the right value or an injected
// error, never a wrong value.
func (r *faultRun) get(d *DB, i int) {
	r.t.Helper()
	k := fkey(i)
	v, err := d.Get([]byte(k), nil)
	if err != nil && !isNotFound(err) {
		r.check("Get", err)
		return
	}
	ok := err == nil
	match := func(m map[string]string) bool {
		w, present := m[k]
		return present == ok && w == string(v)
	}
	if !match(r.acked) && (r.maybe == nil || !match(r.maybe)) {
		r.fatalf("Get(%s) = %.20q, %v; want %.20q", k, v, err, r.acked[k])
	}
}

// scan checks a full iteration against the model(s).
func (r *faultRun) scan(d *DB, what string) {
	r.t.Helper()
	got, err := scanState(d, nil)
	if r.check(what, err) {
		return
	}
	if diffStates(got, r.acked) != "  (identical)" && (r.maybe == nil || diffStates(got, r.maybe) != "  (identical)") {
		r.fatalf("%s: the store differs from the acknowledged writes:\n%s", what, diffStates(got, r.acked))
	}
}

func (r *faultRun) noteBackground(d *DB) {
	if bg := d.Metrics().BackgroundError; bg != nil {
		if !errors.Is(bg, vfs.ErrInjected) {
			r.fatalf("background error %v does not wrap the injected fault", bg)
		}
		r.bgSeen = true
	}
}

// workload is the fault workload: Open (with recovery), reads, writes with
// and without Sync, batches, an iterator, Flush, CompactRange, Close.
func (r *faultRun) workload() {
	d, err := Open("/db", faultOpts(r.fs))
	if r.check("Open", err) {
		return
	}
	for i := 0; i < 100; i += 9 {
		r.get(d, i)
	}
	for i := 0; i < 6; i++ {
		r.put(d, 100+i, fmt.Sprintf("w%d-%s", i, strings.Repeat("y", 200)), i == 3)
	}
	r.del(d, 41, false)
	r.del(d, 99, true)
	r.delRange(d, 102, 104, false) // over two keys of the memtable
	var b Batch
	b.Put([]byte(fkey(5)), []byte("batched"))
	b.Put([]byte(fkey(62)), []byte("batched, then range-deleted"))
	b.DeleteRange([]byte(fkey(58)), []byte(fkey(70))) // over both levels and the batch's own put
	b.Put([]byte(fkey(64)), []byte("batched after the range deletion"))
	b.Delete([]byte(fkey(43)))
	b.Put([]byte(fkey(110)), []byte("batched too"))
	r.write(d, &b, true, func(m map[string]string) {
		m[fkey(5)] = "batched"
		m[fkey(62)] = "batched, then range-deleted"
		deleteRangeFromModel(m, 0, fkey(58), fkey(70))
		m[fkey(64)] = "batched after the range deletion"
		delete(m, fkey(43))
		m[fkey(110)] = "batched too"
	})
	r.scan(d, "scan")
	r.check("Flush", d.Flush()) // a table with range tombstones
	r.noteBackground(d)
	if r.name == "no faults" && storeRangeDels(d) == 0 {
		r.fatalf("after the flush no table holds a range tombstone")
	}
	for i := 0; i < 12; i++ {
		r.put(d, 120+i, fmt.Sprintf("after flush %d %s", i, strings.Repeat("z", 300)), i%5 == 0)
	}
	r.delRange(d, 0, 12, false) // over the compacted level, to compact with it
	for i := 100; i < 132; i += 5 {
		r.get(d, i)
	}
	for i := 55; i < 72; i += 2 {
		r.get(d, i)
	}
	_, err = compactRange(d, nil, nil)
	r.check("CompactRange", err)
	r.noteBackground(d)
	r.put(d, 1, "last", true)
	r.get(d, 1)
	r.scan(d, "final scan")
	r.noteBackground(d)
	r.check("Close", d.Close())
}

// reopenClean opens the store without faults and checks it holds the
// acknowledged writes (and at most the one that failed).
func (r *faultRun) reopenClean() {
	r.t.Helper()
	d, err := Open("/db", faultOpts(r.fs.Unwrap()))
	if err != nil {
		r.fatalf("reopening without faults: %v", err)
	}
	defer d.Close()
	r.scan(d, "scan after reopening without faults")
	for i := 0; i < 180; i++ {
		r.get(d, i)
	}
	// Every read path agrees with the forward scan (each applies the
	// range tombstones its own way).
	got, err := scanState(d, nil)
	if err != nil {
		r.fatalf("scan after reopening without faults: %v", err)
	}
	if diff := readsDiffer(d, nil, got, faultKeys, faultSeeks); diff != "" {
		r.fatalf("after reopening without faults the reads disagree with the forward scan: %s", diff)
	}
}

// faultKeys are the keys the fault workloads may write; faultSeeks the
// Seek targets of readsDiffer.
var faultKeys, faultSeeks = func() (keys, seeks []string) {
	for i := 0; i < 180; i++ {
		keys = append(keys, fkey(i))
	}
	for i := 0; i < 180; i += 4 {
		seeks = append(seeks, fkey(i), fkey(i)+"\x00")
	}
	return keys, append(seeks, "", "f", "f1", "g")
}()

// TestFaultInjectionEveryOp runs the fault workload once without faults to
// count its file-system operations, then once per operation index i with
// an I/O error injected at operation i, and checks: every error a call
// returns wraps the injected one; a failed write makes later writes fail
// and shows in Metrics().BackgroundError; a background failure (flush,
// compaction) makes the next write fail; a fault that loses a write of a
// log, table, MANIFEST or CURRENT is reported by some call; reads never
// return a wrong value; and reopened without faults, the store holds every
// acknowledged write.
func TestFaultInjectionEveryOp(t *testing.T) {
	base, model := faultBaseStore(t)
	probe := &faultRun{t: t, name: "no faults", fs: vfs.NewFaultFS(base.Clone(), nil), acked: cloneMap(model)}
	probe.workload()
	if probe.errs != 0 {
		t.Fatalf("the workload failed without faults")
	}
	probe.reopenClean()
	total := probe.fs.Count(vfs.OpAll)
	kinds := map[vfs.Op]int{}
	unreported := 0
	passes, stride := int64(2), int64(1)
	if testing.Short() {
		passes, stride = 1, 2
	}
	for i := int64(0); i < passes*total; i += stride {
		// First pass: an I/O error. Second pass: ENOSPC, with the failing
		// write torn half-way.
		fault := vfs.Fault{After: i}
		if i >= total {
			fault = vfs.Fault{After: i - total, Err: syscall.ENOSPC, Torn: true}
		}
		inj := fault.Injector()
		r := &faultRun{t: t, fs: vfs.NewFaultFS(base.Clone(), inj), acked: cloneMap(model)}
		r.name = fmt.Sprintf("fault at op %d", i)
		r.workload()
		got := inj.Injected()
		if len(got) == 0 {
			continue // this run made fewer operations
		}
		f := got[0]
		r.name = fmt.Sprintf("fault at op %d (%v %s: %v)", fault.After, f.Op, f.Path, f.Unwrap())
		kinds[f.Op]++
		mustReport := f.Op&(vfs.OpWrite|vfs.OpSync|vfs.OpCreate|vfs.OpRename|vfs.OpSyncDir) != 0 && !strings.Contains(f.Path, "/LOG")
		if r.errs == 0 && !r.bgSeen {
			if mustReport {
				r.fatalf("the fault was not reported by any call")
			}
			unreported++
		}
		r.reopenClean()
	}
	n := 0
	for _, c := range kinds {
		n += c
	}
	t.Logf("%d operations; %d faults injected (every %s operation with EIO%s): %v; %d needed no report (reads retried, removals, LOG writes)",
		total, n, map[bool]string{true: "other", false: "single"}[stride == 2], map[bool]string{true: ", then with a torn ENOSPC", false: ""}[passes == 2], kinds, unreported)
}

// TestFaultInjectionRandom fails operations at random (0.2-2% of them,
// with a seed; half the runs tear failed writes) and checks the same
// promises.
func TestFaultInjectionRandom(t *testing.T) {
	seeds := *faultSeeds
	if *relLong && seeds == 100 {
		seeds = 2000
	}
	if testing.Short() && seeds == 100 {
		seeds = 25
	}
	base, model := faultBaseStore(t)
	injected := 0
	for seed := int64(1); seed <= int64(seeds); seed++ {
		inj := vfs.Fault{Count: -1, Probability: 0.002 * float64(1+seed%10), Seed: seed, Torn: seed%2 == 0}.Injector()
		r := &faultRun{t: t, name: fmt.Sprintf("seed %d", seed), fs: vfs.NewFaultFS(base.Clone(), inj), acked: cloneMap(model)}
		r.workload()
		injected += len(inj.Injected())
		r.reopenClean()
	}
	t.Logf("%d runs, %d faults injected", seeds, injected)
}

// TestNoSpaceDuringFlushAndCompaction runs out of disk space (ENOSPC,
// writes torn half-way) at every table write of a flush and of a
// compaction in turn: the call fails with an error wrapping ENOSPC, later
// writes fail, reads still see every acknowledged write, and once space is
// back a reopened store has lost nothing and keeps no half-written table.
func TestNoSpaceDuringFlushAndCompaction(t *testing.T) {
	base, model := faultBaseStore(t)
	for _, phase := range []string{"flush", "compaction"} {
		for k := int64(0); ; k++ {
			inj := vfs.Fault{Ops: vfs.OpWrite | vfs.OpSync | vfs.OpCreate, PathContains: ".sst", After: k, Count: -1, Err: syscall.ENOSPC, Torn: true}.Injector()
			ffs := vfs.NewFaultFS(base.Clone(), nil)
			r := &faultRun{t: t, name: fmt.Sprintf("%s, disk full after %d table ops", phase, k), fs: ffs, acked: cloneMap(model)}
			d, err := Open("/db", faultOpts(ffs))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10; i++ {
				r.put(d, 150+i, strings.Repeat("n", 100), false)
			}
			// Range tombstones for the flush to write, over the memtable
			// and the tables, and a key put again after one.
			r.delRange(d, 152, 157, false)
			r.delRange(d, 20, 50, false)
			r.put(d, 154, "after the range deletion", false)
			if phase == "compaction" {
				if err := d.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			ffs.SetInjector(inj)
			if phase == "flush" {
				err = d.Flush()
			} else {
				var ok bool
				if ok, err = compactRange(d, nil, nil); !ok {
					t.Skip("no CompactRange")
				}
			}
			if len(inj.Injected()) == 0 {
				if err != nil {
					r.fatalf("failed without a fault: %v", err)
				}
				d.Close()
				if k == 0 {
					r.fatalf("the %s wrote no table", phase)
				}
				t.Logf("%s: ENOSPC tried at each of its %d table operations", phase, k)
				break
			}
			if !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, vfs.ErrInjected) {
				r.fatalf("%s returned %v, want an error wrapping ENOSPC", phase, err)
			}
			r.errs++
			r.noteBackground(d)
			if phase == "flush" && !r.bgSeen {
				r.fatalf("a failed flush left no background error")
			}
			r.put(d, 170, "after the disk filled", true)
			r.scan(d, "scan with a full disk")
			for i := 0; i < 175; i += 7 {
				r.get(d, i)
			}
			d.Close()
			inj.Disable()
			r.reopenClean()
			r.checkNoOrphanTables()
		}
	}
}

// checkNoOrphanTables requires every .sst file to belong to the store.
func (r *faultRun) checkNoOrphanTables() {
	r.t.Helper()
	d, err := Open("/db", faultOpts(r.fs.Unwrap()))
	if err != nil {
		r.fatalf("reopen: %v", err)
	}
	defer d.Close()
	names, _ := r.fs.Unwrap().List("/db")
	files := 0
	for _, n := range names {
		if strings.HasSuffix(n, ".sst") {
			files++
		}
	}
	live := 0
	for _, l := range d.Metrics().Levels {
		live += l.Files
	}
	if files != live {
		r.fatalf("%d table files on disk, %d in the store: %v", files, live, names)
	}
}

// TestBackgroundErrorSurfaces fails the table writes of an automatic flush
// (a full memtable, no Flush call) and of an automatic compaction: the
// error shows in Metrics().BackgroundError, the next write fails with it,
// and reopened without faults the store has every acknowledged write.
func TestBackgroundErrorSurfaces(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tables int // tables to write before the fault (the compaction's inputs)
	}{
		{"flush", 0},
		{"compaction", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			ffs := vfs.NewFaultFS(mem, nil)
			o := &Options{FS: ffs, WriteBufferSize: 2 << 10, L0CompactionTrigger: 4, TargetFileSize: 2 << 10}
			d := mustOpen(t, "/db", o)
			r := &faultRun{t: t, name: tc.name, fs: ffs, acked: map[string]string{}}
			for i := 0; i < tc.tables; i++ {
				// Overlapping tables, so the compaction merges them; each
				// with a range tombstone over the last one's key.
				r.put(d, 0, fmt.Sprintf("table %d", i), false)
				r.delRange(d, 49+i, 50+i, false)
				r.put(d, 50+i, strings.Repeat("t", 100), false)
				// The last Flush may already report the compaction's failure.
				r.check("Flush", d.Flush())
				if i == tc.tables-2 {
					// The next flush makes the compaction start: fail its
					// table writes, not the flush's.
					ffs.SetInjector(vfs.Fault{Ops: vfs.OpCreate, PathContains: ".sst", After: 1, Count: -1}.Injector())
				}
			}
			if tc.tables == 0 {
				ffs.SetInjector(vfs.Fault{Ops: vfs.OpWrite, PathContains: ".sst", Count: -1}.Injector())
			}
			deadline := time.Now().Add(10 * time.Second)
			i := 10
			for d.Metrics().BackgroundError == nil {
				if time.Now().After(deadline) {
					t.Fatal("no background error after 10s")
				}
				r.put(d, i, strings.Repeat("w", 200), i%3 == 0) // fills the memtable: automatic flushes
				if r.wfail {
					break
				}
				i++
				time.Sleep(time.Millisecond)
			}
			r.noteBackground(d)
			if !r.bgSeen {
				t.Fatalf("Metrics().BackgroundError = %v", d.Metrics().BackgroundError)
			}
			if bg := d.Metrics().BackgroundError.Error(); !strings.Contains(bg, tc.name) {
				t.Fatalf("the background error is not from a %s: %s", tc.name, bg)
			}
			r.put(d, 999, "refused", true) // must fail: write() checks
			if !r.wfail {
				t.Fatal("the write after a background error succeeded")
			}
			r.scan(d, "scan with a background error")
			d.Close()
			ffs.SetInjector(nil)
			r.reopenClean()
		})
	}
}
