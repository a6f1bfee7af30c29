package db

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// smallTree makes flushes and compactions happen constantly.
func smallTree(fs vfs.FS) *Options {
	return &Options{
		FS:              fs,
		WriteBufferSize: 16 << 10,
		LBaseMaxBytes:   64 << 10,
		TargetFileSize:  16 << 10,
		BlockSize:       512,
	}
}

// waitCompactions waits until no compaction runs and none is needed.
func waitCompactions(t testing.TB, d *DB) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		d.mu.Lock()
		idle := !d.compacting && !d.flushing && d.imm == nil
		if idle {
			d.maybeScheduleCompactionLocked()
			idle = !d.compacting
		}
		err := d.bgErr
		d.mu.Unlock()
		if err != nil {
			t.Fatalf("background error: %v", err)
		}
		if idle {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("compactions did not settle")
}

// sstFiles returns the sizes of the store's table files, by name.
func dirBytes(t testing.TB, fs vfs.FS, dir string) (total int64, tables int) {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		fi, err := fs.Stat(vfs.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
		if strings.HasSuffix(n, ".sst") {
			tables++
		}
	}
	return total, tables
}

// checkLevelInvariants verifies, from the table files themselves, that
// tables of levels >= 1 do not overlap and that every table the version
// lists exists, and that no table file is left that the version does not
// list once deletions settle.
func checkLevelInvariants(t testing.TB, d *DB) {
	t.Helper()
	ref := d.loadReadState()
	rs := ref.rs
	defer ref.unref()
	for l := 1; l < NumLevels; l++ {
		files := rs.v.Files[l]
		for i := 1; i < len(files); i++ {
			if bytes.Compare(base.UserKey(files[i-1].Largest), base.UserKey(files[i].Smallest)) >= 0 {
				t.Fatalf("L%d tables %d and %d overlap", l, files[i-1].FileNum, files[i].FileNum)
			}
		}
	}
}

func TestCompactionModelSmallTree(t *testing.T) {
	for seed := int64(1); seed <= 2; seed++ {
		opts := smallTree(nil)
		runModel(t, seed+100, *opts, *modelOps)
	}
}

func TestCompactionKeepsLevelsDisjointAndL0Small(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", smallTree(fs))
	defer d.Close()
	rng := rand.New(rand.NewSource(3))
	m := model{}
	for i := 0; i < 30000; i++ {
		k := fmt.Sprintf("key%06d", rng.Intn(10000))
		v := fmt.Sprintf("v%d-%s", i, strings.Repeat("x", rng.Intn(50)))
		if rng.Intn(10) == 0 {
			d.Delete([]byte(k), nil)
			delete(m, k)
		} else {
			d.Put([]byte(k), []byte(v), nil)
			m[k] = v
		}
	}
	d.Flush()
	waitCompactions(t, d)
	checkLevelInvariants(t, d)
	met := d.Metrics()
	if met.Levels[0].Files > d.opts.L0CompactionTrigger {
		t.Fatalf("L0 holds %d tables after compactions settled (trigger %d)", met.Levels[0].Files, d.opts.L0CompactionTrigger)
	}
	deep := 0
	for l := 1; l < NumLevels; l++ {
		if met.Levels[l].Files > 0 {
			deep = l
		}
	}
	if deep < 2 || met.Compactions == 0 || met.TablesDeleted == 0 {
		t.Fatalf("expected a tree of >= 3 levels with compactions:\n%s", met)
	}
	checkIterator(t, rng, d, nil, m, func(f string, a ...any) { t.Fatalf(f, a...) })
	// Every table on disk is one the version lists.
	_, tables := dirBytes(t, fs, "/db")
	listed := 0
	for _, lm := range met.Levels {
		listed += lm.Files
	}
	if tables != listed {
		t.Fatalf("%d table files on disk, %d in the version", tables, listed)
	}
}

func TestDeleteEverythingReclaimsSpace(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", smallTree(fs))
	defer d.Close()
	rng := rand.New(rand.NewSource(1))
	val := make([]byte, 100)
	const n = 100000
	for i := 0; i < n; i++ {
		rng.Read(val)
		d.Put([]byte(fmt.Sprintf("k%08d", i)), val, nil)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	full, _ := dirBytes(t, fs, "/db")
	for i := 0; i < n; i++ {
		d.Delete([]byte(fmt.Sprintf("k%08d", i)), nil)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	// The log holding the deletions goes at the next flush; close and
	// reopen so only the store's real contents remain.
	d.Close()
	d = mustOpen(t, "/db", smallTree(fs))
	after, tables := dirBytes(t, fs, "/db")
	if float64(after) > 0.05*float64(full) {
		t.Fatalf("after deleting everything the store is %d bytes (%d tables), %.1f%% of the %d before",
			after, tables, 100*float64(after)/float64(full), full)
	}
	it := d.NewIterator(nil)
	if it.First() {
		t.Fatalf("key %q survived", it.Key())
	}
	it.Close()
}

func TestSpaceAmplificationAfterOverwrites(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 3 x 100,000 keys")
	}
	load := func(rounds int) int64 {
		fs := vfs.NewMem()
		o := &Options{FS: fs, WriteBufferSize: 256 << 10, LBaseMaxBytes: 1 << 20, TargetFileSize: 256 << 10}
		d := mustOpen(t, "/db", o)
		defer d.Close()
		rng := rand.New(rand.NewSource(5))
		for r := 0; r < rounds; r++ {
			for _, i := range rng.Perm(100000) {
				d.Put([]byte(fmt.Sprintf("%016d", i)), []byte(fmt.Sprintf("%0100d", r*1000000+i)), nil)
			}
		}
		if err := d.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, lm := range d.Metrics().Levels {
			n += int64(lm.Bytes)
		}
		return n
	}
	live := load(1)
	amp := float64(load(3)) / float64(live)
	t.Logf("space amplification after overwriting every key twice and compacting: %.3f", amp)
	if amp > 1.15 {
		t.Fatalf("space amplification %.3f > 1.15", amp)
	}
}

// TestL0BoundedUnderLoad loads 2,000,000 keys with a 1 MiB write buffer.
func TestL0BoundedUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 2,000,000 keys")
	}
	dir := t.TempDir()
	d := mustOpen(t, dir, &Options{WriteBufferSize: 1 << 20})
	defer d.Close()
	var b Batch
	val := bytes.Repeat([]byte("v"), 100)
	rng := rand.New(rand.NewSource(9))
	for i := 0; i < 2000000; i++ {
		b.Put([]byte(fmt.Sprintf("%016d", rng.Intn(2000000))), val)
		if b.Count() == 1000 {
			if err := d.Write(&b, nil); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	d.Flush()
	waitCompactions(t, d)
	m := d.Metrics()
	t.Logf("after 2M keys:\n%s", m)
	if m.Levels[0].Files > d.opts.L0CompactionTrigger {
		t.Fatalf("L0 holds %d tables (trigger %d)", m.Levels[0].Files, d.opts.L0CompactionTrigger)
	}
	checkLevelInvariants(t, d)
}

func TestSnapshotSurvivesCompaction(t *testing.T) {
	d := mustOpen(t, "/db", smallTree(vfs.NewMem()))
	defer d.Close()
	for i := 0; i < 2000; i++ {
		d.Put([]byte(fmt.Sprintf("k%05d", i)), []byte("old"), nil)
	}
	snap := d.NewSnapshot()
	defer snap.Release()
	for i := 0; i < 2000; i++ {
		if i%2 == 0 {
			d.Delete([]byte(fmt.Sprintf("k%05d", i)), nil)
		} else {
			d.Put([]byte(fmt.Sprintf("k%05d", i)), []byte("new"), nil)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		v, err := d.Get([]byte(fmt.Sprintf("k%05d", i)), &ReadOptions{Snapshot: snap})
		if err != nil || string(v) != "old" {
			t.Fatalf("snapshot read of k%05d after compaction: %q %v", i, v, err)
		}
		v, err = d.Get([]byte(fmt.Sprintf("k%05d", i)), nil)
		if i%2 == 0 && !errors.Is(err, ErrNotFound) || i%2 == 1 && string(v) != "new" {
			t.Fatalf("latest read of k%05d: %q %v", i, v, err)
		}
	}
}

func TestIteratorPinsTablesAcrossCompaction(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", smallTree(fs))
	defer d.Close()
	for i := 0; i < 5000; i++ {
		d.Put([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprint(i)), nil)
	}
	d.Flush()
	it := d.NewIterator(nil)
	for i := 0; i < 5000; i++ {
		d.Put([]byte(fmt.Sprintf("k%05d", i)), []byte("x"), nil)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if string(it.Value()) != fmt.Sprint(n) {
			t.Fatalf("iterator saw %q=%q", it.Key(), it.Value())
		}
		n++
	}
	if err := it.Close(); err != nil || n != 5000 {
		t.Fatalf("iterator over compacted-away tables: %d keys, %v", n, err)
	}
	// Now the old tables can go.
	d.Put([]byte("trigger"), nil, nil)
	d.CompactRange(nil, nil)
	_, tables := dirBytes(t, fs, "/db")
	listed := 0
	for _, lm := range d.Metrics().Levels {
		listed += lm.Files
	}
	if tables != listed {
		t.Fatalf("%d table files remain, version lists %d", tables, listed)
	}
}

func TestWritesStallAndResume(t *testing.T) {
	fs := vfs.NewMem()
	o := smallTree(fs)
	o.L0CompactionTrigger, o.L0SlowdownWritesTrigger, o.L0StopWritesTrigger = 2, 3, 4
	d := mustOpen(t, "/db", o)
	defer d.Close()
	val := bytes.Repeat([]byte("z"), 200)
	for i := 0; i < 20000; i++ {
		if err := d.Put([]byte(fmt.Sprintf("k%07d", i*7919%20000)), val, nil); err != nil {
			t.Fatal(err)
		}
		if l0 := d.Metrics().Levels[0].Files; l0 > o.L0StopWritesTrigger {
			t.Fatalf("L0 reached %d tables, past the stop trigger %d", l0, o.L0StopWritesTrigger)
		}
	}
	m := d.Metrics()
	if m.WriteSlowdowns == 0 && m.WriteStalls == 0 {
		t.Logf("no slowdown happened (compaction kept up):\n%s", m)
	}
	for i := 0; i < 20000; i += 97 {
		mustGet(t, d, fmt.Sprintf("k%07d", i), string(val))
	}
}

func TestMonkeyAllocation(t *testing.T) {
	sizes := [NumLevels]float64{1, 10, 100, 1000}
	bits := monkeyAllocation(sizes, 8)
	var used, total float64
	for l, s := range sizes {
		used += s * bits[l]
		total += s
	}
	if math.Abs(used/total-8) > 1e-9 {
		t.Fatalf("allocation spends %.4f bits/key, budget 8", used/total)
	}
	// Rates proportional to sizes.
	p := func(b float64) float64 { return math.Exp(-b * math.Ln2 * math.Ln2) }
	for l := 1; l < 4; l++ {
		if r := p(bits[l]) / p(bits[l-1]); math.Abs(r-10) > 1e-6 {
			t.Fatalf("rate ratio L%d/L%d = %.4f, want 10 (bits %v)", l, l-1, r, bits)
		}
	}
	// Its sum of rates beats uniform bits.
	var monkey, uniform float64
	for l := 0; l < 4; l++ {
		monkey += p(bits[l])
		uniform += p(8)
	}
	if monkey >= uniform {
		t.Fatalf("monkey %.5f >= uniform %.5f", monkey, uniform)
	}
	// A budget too small for every level turns the largest level's filter off.
	small := monkeyAllocation([NumLevels]float64{1, 1000}, 0.01)
	if small[1] != 0 || small[0] <= 0 {
		t.Fatalf("tiny budget: %v", small)
	}
}

// TestMonkeyReadsFewerBlocks builds the same tree twice, with uniform
// bits per key and with the Monkey allocation of the same budget, and
// counts data block reads of absent-key lookups at the file-system seam.
func TestMonkeyReadsFewerBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two trees")
	}
	const budget = 4
	build := func(o *Options) (reads int64, filterBytes int64, levels int) {
		cfs := &countingFS{FS: vfs.NewMem()}
		o.FS = cfs
		o.WriteBufferSize = 64 << 10
		o.LBaseMaxBytes = 128 << 10
		o.TargetFileSize = 64 << 10
		o.DisableBlockCache = true
		// Compactions run here, at fixed points, not in the background:
		// the tree's shape (and so the comparison) must not depend on
		// timing.
		o.DisableAutomaticCompactions = true
		d := mustOpen(t, "/db", o)
		rng := rand.New(rand.NewSource(11))
		val := make([]byte, 40)
		for n, i := range rng.Perm(150000) {
			rng.Read(val)
			d.Put([]byte(fmt.Sprintf("%016d", 2*i)), val, nil)
			if n%5000 == 4999 {
				if err := d.Flush(); err != nil {
					t.Fatal(err)
				}
				compactUntilSettled(t, d)
			}
		}
		d.Flush()
		compactUntilSettled(t, d)
		d.Close()
		d = mustOpen(t, "/db", o)
		defer d.Close()
		m := d.Metrics()
		for l := 1; l < NumLevels; l++ {
			if m.Levels[l].Files > 0 {
				levels++
			}
		}
		before := cfs.tableReads.Load()
		for i := 0; i < 50000; i++ {
			if _, err := d.Get([]byte(fmt.Sprintf("%016d", 2*rng.Intn(150000)+1)), nil); !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
		}
		return cfs.tableReads.Load() - before, d.Metrics().FilterBytes, levels
	}
	uReads, uBytes, uLevels := build(&Options{FilterPolicy: filter.NewBloomPolicy(budget)})
	mReads, mBytes, mLevels := build(&Options{FilterBudgetBitsPerKey: budget})
	t.Logf("uniform %d bits/key: %d levels, %d filter bytes, %d data block reads for 50,000 absent keys", budget, uLevels, uBytes, uReads)
	t.Logf("monkey budget %d:     %d levels, %d filter bytes, %d data block reads", budget, mLevels, mBytes, mReads)
	if uLevels < 3 || mLevels < 3 {
		t.Fatalf("trees too shallow: %d and %d levels below L0", uLevels, mLevels)
	}
	if float64(mBytes) > 1.05*float64(uBytes) {
		t.Fatalf("monkey used more filter memory: %d > %d", mBytes, uBytes)
	}
	if mReads >= uReads {
		t.Fatalf("monkey read %d blocks, uniform %d", mReads, uReads)
	}
}

// TestPolicyChangeKeepsOldFilters reopens a store with another filter
// policy: old tables keep using the filter they were written with.
func TestPolicyChangeKeepsOldFilters(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "/db", &Options{FS: fs, FilterPolicy: filter.NewLevelDBBloomPolicy(10), DisableAutomaticCompactions: true})
	for i := 0; i < 1000; i++ {
		d.Put([]byte(fmt.Sprintf("a%05d", i)), []byte("1"), nil)
	}
	d.Flush()
	d.Close()
	d = mustOpen(t, "/db", &Options{FS: fs, FilterPolicy: filter.NewBloomPolicy(12), DisableAutomaticCompactions: true})
	defer d.Close()
	for i := 0; i < 1000; i++ {
		d.Put([]byte(fmt.Sprintf("b%05d", i)), []byte("2"), nil)
	}
	d.Flush()
	names := map[string]bool{}
	tables, _ := fs.List("/db")
	for _, n := range tables {
		if !strings.HasSuffix(n, ".sst") {
			continue
		}
		f, _ := fs.Open("/db/" + n)
		size, _ := f.Size()
		r, err := sstable.NewReader(f, size, sstable.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		names[r.Properties().FilterPolicy] = true
		r.Close()
		f.Close()
	}
	if !names[filter.LevelDBBloomPolicyName] || !names[filter.BloomPolicyName] {
		t.Fatalf("tables' policies: %v", names)
	}
	for i := 0; i < 1000; i++ {
		mustGet(t, d, fmt.Sprintf("a%05d", i), "1")
		mustGet(t, d, fmt.Sprintf("b%05d", i), "2")
	}
	m := d.Metrics()
	if m.Filter.Checks < 2000 || m.Filter.TruePositives < 2000 {
		t.Fatalf("both tables' filters should be in use: %+v", m.Filter)
	}
}

// TestEveryTablePolicyReadable writes tables with every table filter
// policy into one store, then reads them all back through their filters.
func TestEveryTablePolicyReadable(t *testing.T) {
	fs := vfs.NewMem()
	policies := []filter.Policy{
		filter.NewBloomPolicy(10), filter.NewLevelDBBloomPolicy(10), filter.NewBlockedBloomPolicy(10),
		filter.NewBinaryFusePolicy(8), filter.NewBinaryFusePolicy(16), filter.None,
	}
	for i, p := range policies {
		d := mustOpen(t, "/db", &Options{FS: fs, FilterPolicy: p, DisableAutomaticCompactions: true})
		for j := 0; j < 500; j++ {
			d.Put([]byte(fmt.Sprintf("p%d-%04d", i, j)), []byte(p.Name()), nil)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
	// Reopen with the default policy: every table keeps its own filter.
	d := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true})
	defer d.Close()
	for i, p := range policies {
		for j := 0; j < 500; j++ {
			mustGet(t, d, fmt.Sprintf("p%d-%04d", i, j), p.Name())
		}
	}
	if m := d.Metrics(); m.Filter.TruePositives != 500*int64(len(policies)-1) {
		t.Fatalf("filters used for %d of %d lookups in filtered tables", m.Filter.TruePositives, 500*(len(policies)-1))
	}
}

// compactUntilSettled runs, in the caller's goroutine, every compaction the
// tree needs, as the background loop would.
func compactUntilSettled(t testing.TB, d *DB) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		c := compaction.Pick(d.vs.current, d.copts, &d.pointers)
		if c == nil {
			return
		}
		d.compacting = true
		err := d.runCompactionLocked(c)
		d.compacting = false
		d.bgCond.Broadcast()
		if err != nil {
			t.Fatalf("compaction: %v", err)
		}
	}
}
