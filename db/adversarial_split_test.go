package db

// Adversarial tests of three changes: compaction outputs cut inside range
// tombstones (compaction/merge.go, rangedel.BoundEnd), MultiGet's batched
// filter probes (db/multiget.go) and, through the engine, the Grafite range
// filter's mixed-radix mapping (filter/range.go).

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/vfs"
)

// The model is adversarial16_test.go's a16model.

// advAlphabet holds the bytes keys are made of: zero bytes (so that keys
// end in 0x00 and t+"\x00" is itself a key), 0xff and two ordinary bytes.
var advAlphabet = []byte{0x00, 0x01, 'a', 0xff}

// advKey returns a random key of 0 to 4 bytes of advAlphabet.
func advKey(rng *rand.Rand) string {
	n := rng.Intn(5)
	b := make([]byte, n)
	for i := range b {
		b[i] = advAlphabet[rng.Intn(len(advAlphabet))]
	}
	return string(b)
}

// advAllKeys returns every key advKey can return, sorted, plus a few
// longer probes.
func advAllKeys() []string {
	var all []string
	var gen func(p []byte)
	gen = func(p []byte) {
		all = append(all, string(p))
		if len(p) == 4 {
			return
		}
		for _, c := range advAlphabet {
			gen(append(append([]byte{}, p...), c))
		}
	}
	gen(nil)
	all = append(all, "\x00\x00\x00\x00\x00", "aaaaa", "\xff\xff\xff\xff\xff", "\xff\xff\xff\xff\xff\xff\xff")
	sort.Strings(all)
	return all
}

// advPoints checks Get and MultiGet of every probe (MultiGet in one
// shuffled batch with duplicates, and in slices of odd sizes) against m.
func advPoints(t testing.TB, d *DB, snap *Snapshot, m a16model, probes []string, rng *rand.Rand, what string) {
	t.Helper()
	ro := &ReadOptions{Snapshot: snap}
	check := func(how, k string, v []byte, err error) {
		t.Helper()
		want, ok := m[k]
		switch {
		case ok && (err != nil || string(v) != want):
			t.Fatalf("%s: %s(%q) = %q, %v; want %q", what, how, k, v, err, want)
		case !ok && !errors.Is(err, ErrNotFound):
			t.Fatalf("%s: %s(%q) = %q, %v; want not found", what, how, k, v, err)
		}
	}
	for _, k := range probes {
		v, err := d.Get([]byte(k), ro)
		check("Get", k, v, err)
	}
	keys := make([][]byte, 0, 2*len(probes))
	for _, k := range probes {
		keys = append(keys, []byte(k))
	}
	for i := 0; i < len(probes)/3; i++ {
		keys = append(keys, []byte(probes[rng.Intn(len(probes))]))
	}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for start := 0; start < len(keys); {
		n := []int{1, 2, 63, 64, 65, 129, len(keys)}[rng.Intn(7)]
		end := min(len(keys), start+n)
		vals, errs := d.MultiGet(keys[start:end], ro)
		for i := start; i < end; i++ {
			check("MultiGet", string(keys[i]), vals[i-start], errs[i-start])
		}
		start = end
	}
}

// advScan checks forward and backward scans within [lo, hi) (nil: open)
// and Seek at some probes against m.
func advScan(t testing.TB, d *DB, snap *Snapshot, lo, hi *string, m a16model, probes []string, what string) {
	t.Helper()
	ro := &ReadOptions{Snapshot: snap}
	if lo != nil {
		ro.LowerBound = []byte(*lo)
	}
	if hi != nil {
		ro.UpperBound = []byte(*hi)
	}
	want := m.keysIn(lo, hi)
	it := d.NewIterator(ro)
	defer it.Close()
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
		if v := string(it.Value()); v != m[string(it.Key())] {
			t.Fatalf("%s [%s, %s): forward value of %q = %q, want %q", what, advQ(lo), advQ(hi), it.Key(), v, m[string(it.Key())])
		}
	}
	if err := it.Error(); err != nil {
		t.Fatalf("%s: forward scan: %v", what, err)
	}
	if !equalStrings(got, want) {
		t.Fatalf("%s [%s, %s): forward scan\n got %q\nwant %q", what, advQ(lo), advQ(hi), got, want)
	}
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
	}
	if err := it.Error(); err != nil {
		t.Fatalf("%s: backward scan: %v", what, err)
	}
	for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
		got[i], got[j] = got[j], got[i]
	}
	if !equalStrings(got, want) {
		t.Fatalf("%s [%s, %s): backward scan\n got %q\nwant %q", what, advQ(lo), advQ(hi), got, want)
	}
	for _, p := range probes {
		// The first wanted key at or after max(p, lo).
		i := sort.SearchStrings(want, p)
		ok := it.Seek([]byte(p))
		if i == len(want) {
			if ok {
				t.Fatalf("%s [%s, %s): Seek(%q) = %q, want none", what, advQ(lo), advQ(hi), p, it.Key())
			}
			continue
		}
		if !ok || string(it.Key()) != want[i] {
			t.Fatalf("%s [%s, %s): Seek(%q) = %v %q, want %q", what, advQ(lo), advQ(hi), p, ok, it.Key(), want[i])
		}
		if ok := it.Prev(); i == 0 && ok || i > 0 && (!ok || string(it.Key()) != want[i-1]) {
			t.Fatalf("%s [%s, %s): Seek(%q).Prev() = %v %q", what, advQ(lo), advQ(hi), p, ok, it.Key())
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func advQ(s *string) string {
	if s == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", *s)
}

// advCheckTables checks the invariants the split relies on: the tables of
// every level >= 1 are disjoint in user keys and sorted, every table's
// bounds are those kvtool check recomputes (its first and last entry,
// widened by each tombstone's start and BoundEnd(end)), every tombstone
// lies within its table's user-key bounds, and the MANIFEST's tombstone
// count is the table's.
func advCheckTables(t testing.TB, d *DB) {
	t.Helper()
	ref := d.loadReadState()
	defer ref.unref()
	v := ref.rs.v
	for level, files := range v.Files {
		for i, f := range files {
			r, err := d.tables.get(f)
			if err != nil {
				t.Fatalf("L%d table %06d: %v", level, f.FileNum, err)
			}
			ts := r.RangeDels()
			if uint64(len(ts)) != f.RangeDels {
				t.Fatalf("L%d table %06d holds %d tombstones, the MANIFEST says %d", level, f.FileNum, len(ts), f.RangeDels)
			}
			p := r.Properties()
			lo, hi := p.Smallest, p.Largest
			for _, tb := range ts {
				s := base.MakeInternalKey(tb.Start, tb.Seq, base.KindRangeDelete)
				e := base.MakeInternalKey(rangedel.BoundEnd(tb.End), tb.Seq, base.KindRangeDelete)
				if lo == nil || base.CompareInternal(s, lo) < 0 {
					lo = s
				}
				if hi == nil || base.CompareInternal(e, hi) > 0 {
					hi = e
				}
				if bytes.Compare(tb.Start, base.UserKey(f.Smallest)) < 0 || bytes.Compare(rangedel.BoundEnd(tb.End), base.UserKey(f.Largest)) > 0 {
					t.Fatalf("L%d table %06d [%q .. %q]: tombstone %s outside its bounds", level, f.FileNum, base.UserKey(f.Smallest), base.UserKey(f.Largest), tb)
				}
			}
			if !bytes.Equal(lo, f.Smallest) || !bytes.Equal(hi, f.Largest) {
				t.Fatalf("L%d table %06d: bounds [%s .. %s] recomputed as [%s .. %s]", level, f.FileNum,
					base.FormatInternalKey(f.Smallest), base.FormatInternalKey(f.Largest), base.FormatInternalKey(lo), base.FormatInternalKey(hi))
			}
			if level > 0 && i > 0 {
				prev := files[i-1]
				if bytes.Compare(base.UserKey(prev.Largest), base.UserKey(f.Smallest)) >= 0 {
					t.Fatalf("L%d tables %06d [.. %q] and %06d [%q ..] overlap in user keys", level, prev.FileNum, base.UserKey(prev.Largest), f.FileNum, base.UserKey(f.Smallest))
				}
			}
		}
	}
}

// advRun drives a random workload of puts, deletes and range deletions
// over keys of zero bytes, 0xff and the empty key, with snapshots held
// across flushes, compactions (TargetFileSize 1 cuts an output after every
// user key, so inside every tombstone) and CompactRange, and reopens; every
// read path is checked against a map model.
func advRun(t *testing.T, seed int64, ops int, o *Options, dir string, reopen bool) {
	rng := rand.New(rand.NewSource(seed))
	d := mustOpen(t, dir, o)
	defer func() { d.Close() }()
	m := a16model{}
	type snapM struct {
		s *Snapshot
		m a16model
	}
	var snaps []snapM
	probes := advAllKeys()
	val := func(op int) string { return fmt.Sprintf("v%d-%s", op, strings.Repeat("x", rng.Intn(60))) }
	verify := func(op int) {
		t.Helper()
		what := fmt.Sprintf("seed %d op %d", seed, op)
		sample := make([]string, 0, 120)
		for i := 0; i < 120; i++ {
			sample = append(sample, probes[rng.Intn(len(probes))])
		}
		advPoints(t, d, nil, m, sample, rng, what)
		lo, hi := probes[rng.Intn(len(probes))], probes[rng.Intn(len(probes))]
		advScan(t, d, nil, nil, nil, m, sample[:20], what)
		advScan(t, d, nil, &lo, &hi, m, sample[:20], what)
		advScan(t, d, nil, &lo, nil, m, sample[:10], what)
		advScan(t, d, nil, nil, &hi, m, sample[:10], what)
		for i, s := range snaps {
			w := fmt.Sprintf("%s snapshot %d", what, i)
			advPoints(t, d, s.s, s.m, sample[:60], rng, w)
			advScan(t, d, s.s, nil, nil, s.m, sample[:10], w)
			advScan(t, d, s.s, &lo, &hi, s.m, sample[:10], w)
		}
		advCheckTables(t, d)
	}
	for op := 0; op < ops; op++ {
		switch x := rng.Intn(100); {
		case x < 50:
			k, v := advKey(rng), val(op)
			if err := d.Put([]byte(k), []byte(v), nil); err != nil {
				t.Fatal(err)
			}
			m[k] = v
		case x < 60:
			k := advKey(rng)
			if err := d.Delete([]byte(k), nil); err != nil {
				t.Fatal(err)
			}
			delete(m, k)
		case x < 72:
			lo, hi := advKey(rng), advKey(rng)
			switch rng.Intn(4) {
			case 0:
				hi = lo + "\x00" // a tombstone of exactly one key
			case 1:
				hi += "\x00" // an end that BoundEnd shortens
			}
			if lo > hi {
				lo, hi = hi, lo
			}
			if lo == hi {
				continue
			}
			if err := d.DeleteRange([]byte(lo), []byte(hi), nil); err != nil {
				t.Fatal(err)
			}
			m.delRange(lo, hi)
		case x < 76:
			if len(snaps) < 4 {
				snaps = append(snaps, snapM{d.NewSnapshot(), m.clone()})
			} else {
				i := rng.Intn(len(snaps))
				snaps[i].s.Release()
				snaps = append(snaps[:i], snaps[i+1:]...)
			}
		case x < 80:
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		case x < 83:
			var lo, hi []byte
			if rng.Intn(2) == 0 {
				a, b := advKey(rng), advKey(rng)
				if a > b {
					a, b = b, a
				}
				lo, hi = []byte(a), []byte(b)
			}
			if err := d.CompactRange(lo, hi); err != nil {
				t.Fatal(err)
			}
		case x < 85:
			waitCompactions(t, d)
			verify(op)
		case x < 86 && reopen:
			for _, s := range snaps {
				s.s.Release()
			}
			snaps = nil
			if err := d.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			d = mustOpen(t, dir, o)
			verify(op)
		}
	}
	waitCompactions(t, d)
	verify(ops)
	for _, s := range snaps {
		s.s.Release()
	}
	snaps = nil
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	verify(ops + 1)
}

// TestAdvSplitEveryKeyCut: TargetFileSize 1 makes compaction cut after
// every user key, so every tombstone is split at every key it spans.
func TestAdvSplitEveryKeyCut(t *testing.T) {
	seeds := int64(6)
	if testing.Short() || raceEnabled {
		seeds = 1 // the race run's budget; the plain run takes six
	}
	if n, err := fmt.Sscan(os.Getenv("ADV_SEEDS"), &seeds); n == 1 && err == nil {
		// ADV_SEEDS=60 for a longer run.
	}
	for seed := int64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			o := &Options{FS: vfs.NewMem(), WriteBufferSize: 2 << 10, TargetFileSize: 1, BlockSize: 64,
				LBaseMaxBytes: 2 << 10, L0CompactionTrigger: 2}
			advRun(t, seed, 1500, o, "/db", true)
		})
	}
}

// TestAdvSplitSmallTablesFilters: small tables with a different filter at
// each level (MultiGet's per-key path) and a Grafite range filter (bounded
// scans skip tables by it).
func TestAdvSplitSmallTablesFilters(t *testing.T) {
	last := int64(13)
	if testing.Short() || raceEnabled {
		last = 10
	}
	for seed := int64(10); seed <= last; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			o := &Options{FS: vfs.NewMem(), WriteBufferSize: 4 << 10, TargetFileSize: 300, BlockSize: 128,
				LBaseMaxBytes: 4 << 10, L0CompactionTrigger: 2,
				LevelFilterPolicies: []filter.Policy{filter.NewBloomPolicy(10), filter.None, filter.NewLevelDBBloomPolicy(10), filter.NewBloomPolicy(3)},
				RangeFilter:         filter.NewGrafiteRangePolicy(6)}
			advRun(t, seed, 1500, o, "/db", true)
		})
	}
}

// TestAdvSplitKvtoolCheck runs the workload on disk and then 'kvtool
// check' (through go run) on the closed store: the bounds it recomputes
// with BoundEnd must match the MANIFEST's.
func TestAdvSplitKvtoolCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go run")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go binary")
	}
	dir := t.TempDir()
	o := &Options{WriteBufferSize: 2 << 10, TargetFileSize: 1, BlockSize: 64, LBaseMaxBytes: 2 << 10, L0CompactionTrigger: 2}
	// Keep a snapshot through the whole run, so tombstones stay in the
	// tables and are split there.
	rng := rand.New(rand.NewSource(99))
	d := mustOpen(t, dir, o)
	m := a16model{}
	for i := 0; i < 300; i++ {
		k := advKey(rng)
		d.Put([]byte(k), []byte("v"+k), nil)
		m[k] = "v" + k
	}
	snap := d.NewSnapshot()
	for _, r := range [][2]string{{"", "\xff\xff"}, {"\x00", "a\x00"}, {"\x01", "\x01\x00"}, {"a", "a\xff\x00"}} {
		d.DeleteRange([]byte(r[0]), []byte(r[1]), nil)
	}
	for i := 0; i < 600; i++ {
		k := advKey(rng)
		d.Put([]byte(k), []byte("w"+k), nil)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	waitCompactions(t, d)
	advCheckTables(t, d)
	if n := d.Metrics().RangeTombstones; n < 10 {
		t.Logf("only %d tombstones in tables", n)
	}
	snap.Release()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	_, thisFile, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(thisFile))
	cmd := exec.Command(goBin, "run", "./cmd/kvtool", "check", dir)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kvtool check: %v\n%s", err, out)
	}
	t.Logf("kvtool check:\n%s", out)
	d = mustOpen(t, dir, o)
	defer d.Close()
	advCheckTables(t, d)
}

// TestAdvSplitTombstoneStartsBetweenKeys: a tombstone that starts after
// the last key of an output and before the next key, one that ends exactly
// at a key, and one that is exactly t+"\x00" wide, all under a snapshot.
func TestAdvSplitTombstoneStartsBetweenKeys(t *testing.T) {
	o := &Options{FS: vfs.NewMem(), WriteBufferSize: 1 << 10, TargetFileSize: 1, BlockSize: 64, LBaseMaxBytes: 1 << 10, L0CompactionTrigger: 2}
	d := mustOpen(t, "/db", o)
	defer func() { d.Close() }()
	m := a16model{}
	put := func(k string) {
		if err := d.Put([]byte(k), []byte("v"+k), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = "v" + k
	}
	for _, k := range []string{"", "\x00", "\x00\x00", "a", "a\x00", "a\x00\x00", "a\x01", "b", "c", "c\x00", "d", "\xff", "\xff\x00"} {
		put(k)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	snap := d.NewSnapshot()
	old := m.clone()
	for _, r := range [][2]string{
		{"a\x00\x00\x00", "a\x01"}, // starts between a\x00\x00 and a\x01, ends at a key
		{"\x00", "\x00\x00"},       // exactly one key
		{"b\x00", "c\x00"},         // from right after b to right after c
		{"c\x00\x00", "\xff"},      // d, up to a key
		{"", "\x00"},               // the empty key alone
	} {
		if err := d.DeleteRange([]byte(r[0]), []byte(r[1]), nil); err != nil {
			t.Fatal(err)
		}
		m.delRange(r[0], r[1])
	}
	for _, k := range []string{"a\x00\x00\x00", "b\x00", "c\x00\x00\x01"} {
		put(k)
	}
	probes := advAllKeys()
	probes = append(probes, "a\x00\x00\x00", "b\x00", "c\x00\x00", "c\x00\x00\x01", "\xff\x00")
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 3; round++ {
		if err := d.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
		waitCompactions(t, d)
		advCheckTables(t, d)
		advPoints(t, d, nil, m, probes, rng, fmt.Sprint("round ", round))
		advPoints(t, d, snap, old, probes, rng, fmt.Sprint("snapshot round ", round))
		advScan(t, d, nil, nil, nil, m, probes, "now")
		advScan(t, d, snap, nil, nil, old, probes, "snapshot")
		for _, b := range [][2]string{{"a\x00", "a\x01"}, {"b\x00", "c\x00\x00"}, {"", "\x00\x00"}} {
			lo, hi := b[0], b[1]
			advScan(t, d, nil, &lo, &hi, m, probes[:20], "now bounded")
			advScan(t, d, snap, &lo, &hi, old, probes[:20], "snapshot bounded")
		}
		// Reopen keeps the split tombstones (the snapshot does not survive,
		// so take it again over the same state on the first round only).
		if round == 0 {
			snap.Release()
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = mustOpen(t, "/db", o)
			snap = d.NewSnapshot()
			old = m.clone()
		}
	}
	snap.Release()
}

// TestAdvSplitCrashReopen writes with a snapshot held and a wide
// tombstone split by compactions, then 'crashes' (the MemFS is cloned
// without closing the DB) at several points, and reopens each clone: each
// must open, pass the table checks, and read the model of what was synced.
func TestAdvSplitCrashReopen(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, WriteBufferSize: 2 << 10, TargetFileSize: 200, BlockSize: 64, LBaseMaxBytes: 2 << 10, L0CompactionTrigger: 2}
	d := mustOpen(t, "/db", o)
	defer d.Close()
	rng := rand.New(rand.NewSource(5))
	m := a16model{}
	for i := 0; i < 400; i++ {
		k := advKey(rng)
		d.Put([]byte(k), []byte("a"+k), nil)
		m[k] = "a" + k
	}
	snap := d.NewSnapshot()
	defer snap.Release()
	d.DeleteRange(nil, []byte("\xff\xff\xff"), &WriteOptions{Sync: true})
	m.delRange("", "\xff\xff\xff")
	for round := 0; round < 5; round++ {
		for i := 0; i < 150; i++ {
			k := advKey(rng)
			v := fmt.Sprintf("r%d%s", round, k)
			if err := d.Put([]byte(k), []byte(v), &WriteOptions{Sync: true}); err != nil {
				t.Fatal(err)
			}
			m[k] = v
		}
		waitCompactions(t, d)
		cfs := fs.CrashCloneWith(vfs.CrashOptions{RNG: rng, UnsyncedData: vfs.SurviveRandom, UnsyncedDirOps: vfs.SurviveRandom})
		c := mustOpen(t, "/db", &Options{FS: cfs, WriteBufferSize: o.WriteBufferSize, TargetFileSize: o.TargetFileSize, BlockSize: 64, LBaseMaxBytes: o.LBaseMaxBytes, L0CompactionTrigger: 2})
		advCheckTables(t, c)
		advPoints(t, c, nil, m, advAllKeys(), rng, fmt.Sprint("crash clone ", round))
		advScan(t, c, nil, nil, nil, m, nil, fmt.Sprint("crash clone ", round))
		if err := c.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
		advCheckTables(t, c)
		advScan(t, c, nil, nil, nil, m, nil, fmt.Sprint("crash clone compacted ", round))
		c.Close()
	}
}

// ---- MultiGet ----

// TestAdvMultiGetBigBatches compares MultiGet with Get at one snapshot
// for batches of every size around the 64-key queue, with duplicates and
// keys in no table, on stores whose levels use different filter policies.
func TestAdvMultiGetBigBatches(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"bloom", Options{}},
		{"levels", Options{LevelFilterPolicies: []filter.Policy{filter.NewBloomPolicy(2), filter.NewLevelDBBloomPolicy(10), filter.None, filter.NewBloomPolicy(20), filter.NewBinaryFusePolicy(8)}}},
		{"budget", Options{FilterBudgetBitsPerKey: 3}},
		{"none", Options{FilterPolicy: filter.None}},
		{"blocked", Options{FilterPolicy: filter.NewBlockedBloomPolicy(10)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.FS = vfs.NewMem()
			o.WriteBufferSize = 4 << 10
			o.TargetFileSize = 2 << 10
			o.LBaseMaxBytes = 8 << 10
			o.L0CompactionTrigger = 3
			o.BlockSize = 256
			d := mustOpen(t, "/db", &o)
			defer d.Close()
			rng := rand.New(rand.NewSource(3))
			m := a16model{}
			key := func() string { return fmt.Sprintf("k%04d", rng.Intn(3000)) }
			var snaps []*Snapshot
			var models []a16model
			for round := 0; round < 10; round++ {
				for i := 0; i < 500; i++ {
					k := key()
					if rng.Intn(5) == 0 {
						d.Delete([]byte(k), nil)
						delete(m, k)
					} else {
						v := fmt.Sprintf("%s-%d", k, round)
						d.Put([]byte(k), []byte(v), nil)
						m[k] = v
					}
				}
				if round%3 == 1 {
					snaps = append(snaps, d.NewSnapshot())
					models = append(models, m.clone())
				}
				if round%4 == 3 {
					waitCompactions(t, d)
				}
				for _, n := range []int{2, 63, 64, 65, 127, 128, 129, 300} {
					keys := make([][]byte, n)
					for i := range keys {
						switch rng.Intn(6) {
						case 0:
							keys[i] = []byte(fmt.Sprintf("z%d", rng.Intn(100))) // after every table
						case 1:
							keys[i] = []byte(fmt.Sprintf("a%d", rng.Intn(100))) // before every table
						case 2:
							keys[i] = []byte(key() + "\x00") // between keys
						default:
							keys[i] = []byte(key())
						}
					}
					if n > 3 {
						keys[n-1] = keys[0] // a duplicate
					}
					s := rng.Intn(len(snaps) + 1)
					ro, want := &ReadOptions{}, m
					if s < len(snaps) {
						ro, want = &ReadOptions{Snapshot: snaps[s]}, models[s]
					}
					vals, errs := d.MultiGet(keys, ro)
					for i, k := range keys {
						wv, ok := want[string(k)]
						gv, gerr := d.Get(k, ro)
						if ok && (errs[i] != nil || string(vals[i]) != wv) || !ok && !errors.Is(errs[i], ErrNotFound) {
							t.Fatalf("round %d n %d: MultiGet(%q) = %q, %v; want %q (%v); Get = %q, %v", round, n, k, vals[i], errs[i], wv, ok, gv, gerr)
						}
					}
				}
			}
			for _, s := range snaps {
				s.Release()
			}
		})
	}
}

// TestAdvMultiGetMissingTable removes a table file under a store that has
// no range tombstones (MultiGet's batched path) and evicts it from the
// table cache: every key the missing table would answer must get an
// error, never a value from an older level or ErrNotFound, and the keys
// of other tables their values.
func TestAdvMultiGetMissingTable(t *testing.T) {
	for _, level := range []int{0, 1} {
		t.Run(fmt.Sprint("L", level), func(t *testing.T) {
			fs := vfs.NewMem()
			o := &Options{FS: fs, WriteBufferSize: 64 << 10, TargetFileSize: 2 << 10, BlockSize: 256, DisableAutomaticCompactions: true}
			d := mustOpen(t, "/db", o)
			defer d.Close()
			// Old values at the bottom, new values above.
			for i := 0; i < 400; i++ {
				d.Put([]byte(fmt.Sprintf("k%04d", i)), []byte("old"), nil)
			}
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			// The old values one level down, to L2.
			d.mu.Lock()
			err := d.runCompactionLocked(compactionPickRange(d, 1))
			d.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 400; i++ {
				d.Put([]byte(fmt.Sprintf("k%04d", i)), []byte("new"), nil)
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			if level == 1 {
				// Move the new values to L1 with the old ones pushed below:
				// compact L0 into L1 only.
				d.mu.Lock()
				c := compactionPickRange(d, 0)
				err := d.runCompactionLocked(c)
				d.mu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
			}
			ref := d.loadReadState()
			files := ref.rs.v.Files[level]
			var victim = files[len(files)/2]
			var deeper int
			for l := level + 1; l < NumLevels; l++ {
				deeper += len(ref.rs.v.Files[l])
			}
			ref.unref()
			if deeper == 0 {
				t.Fatalf("no level below L%d", level)
			}
			d.tables.evict(victim.FileNum)
			if err := fs.Remove(tableFileName(d.dirname, victim.FileNum)); err != nil {
				t.Fatal(err)
			}
			lo, hi := base.UserKey(victim.Smallest), base.UserKey(victim.Largest)
			var keys [][]byte
			for i := 0; i < 400; i++ {
				keys = append(keys, []byte(fmt.Sprintf("k%04d", i)))
			}
			for _, n := range []int{2, 64, 65, 400} {
				vals, errs := d.MultiGet(keys[:n], nil)
				for i := 0; i < n; i++ {
					k := keys[i]
					in := bytes.Compare(k, lo) >= 0 && bytes.Compare(k, hi) <= 0
					gv, gerr := d.Get(k, nil)
					switch {
					case in && errs[i] == nil:
						t.Fatalf("n %d: MultiGet(%q) in the missing table = %q, nil; Get = %q, %v", n, k, vals[i], gv, gerr)
					case in && errors.Is(errs[i], ErrNotFound):
						t.Fatalf("n %d: MultiGet(%q) in the missing table = ErrNotFound", n, k)
					case !in && (errs[i] != nil || string(vals[i]) != "new"):
						t.Fatalf("n %d: MultiGet(%q) = %q, %v; want new", n, k, vals[i], errs[i])
					}
					if in && gerr == nil {
						t.Fatalf("Get(%q) in the missing table = %q, nil", k, gv)
					}
				}
			}
		})
	}
}

// TestAdvMultiGetRaces runs MultiGets against Gets at one snapshot while
// writers, flushes and compactions run, then Close in the middle: every
// answer must match Get's at the snapshot (or be ErrClosed after Close).
// Run it with -race.
func TestAdvMultiGetRaces(t *testing.T) {
	o := &Options{FS: vfs.NewMem(), WriteBufferSize: 4 << 10, TargetFileSize: 2 << 10, LBaseMaxBytes: 8 << 10, L0CompactionTrigger: 2, BlockSize: 256,
		LevelFilterPolicies: []filter.Policy{filter.NewBloomPolicy(10), filter.NewBloomPolicy(4), filter.NewLevelDBBloomPolicy(8)}}
	d := mustOpen(t, "/db", o)
	for i := 0; i < 2000; i++ {
		d.Put([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprintf("v%05d-0", i)), nil)
	}
	snap := d.NewSnapshot()
	want := map[string]string{}
	for i := 0; i < 2000; i++ {
		want[fmt.Sprintf("k%05d", i)] = fmt.Sprintf("v%05d-0", i)
	}
	var stop atomic.Bool
	var closed atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(1))
		for g := 1; !stop.Load(); g++ {
			for i := 0; i < 200 && !stop.Load(); i++ {
				k := fmt.Sprintf("k%05d", rng.Intn(2500))
				if rng.Intn(4) == 0 {
					d.Delete([]byte(k), nil)
				} else {
					d.Put([]byte(k), []byte(fmt.Sprintf("v-%d", g)), nil)
				}
			}
			d.Flush()
		}
	}()
	errc := make(chan error, 8)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(r) + 10))
			for !stop.Load() {
				n := []int{2, 64, 65, 200}[rng.Intn(4)]
				keys := make([][]byte, n)
				for i := range keys {
					keys[i] = []byte(fmt.Sprintf("k%05d", rng.Intn(2600)))
				}
				ro := &ReadOptions{Snapshot: snap}
				vals, errs := d.MultiGet(keys, ro)
				for i, k := range keys {
					wv, ok := want[string(k)]
					if closed.Load() && errs[i] != nil && !errors.Is(errs[i], ErrNotFound) {
						continue
					}
					if ok && (errs[i] != nil || string(vals[i]) != wv) || !ok && !errors.Is(errs[i], ErrNotFound) {
						errc <- fmt.Errorf("MultiGet(%q) at the snapshot = %q, %v; want %q (%v)", k, vals[i], errs[i], wv, ok)
						return
					}
				}
				// Without a snapshot: MultiGet is one consistent view, and
				// the values only come from the writer's formats.
				vals, errs = d.MultiGet(keys, nil)
				for i := range keys {
					if errs[i] == nil && !bytes.HasPrefix(vals[i], []byte("v")) {
						errc <- fmt.Errorf("MultiGet(%q) = %q", keys[i], vals[i])
						return
					}
					if errs[i] != nil && !errors.Is(errs[i], ErrNotFound) && !closed.Load() {
						errc <- fmt.Errorf("MultiGet(%q): %v", keys[i], errs[i])
						return
					}
				}
			}
		}(r)
	}
	time.Sleep(3 * time.Second)
	stop.Store(true)
	wg.Wait()
	snap.Release()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	// Close racing MultiGets.
	stop.Store(false)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys := make([][]byte, 100)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("k%05d", i*7))
			}
			for !stop.Load() {
				vals, errs := d.MultiGet(keys, nil)
				for i := range keys {
					if errs[i] == nil && !bytes.HasPrefix(vals[i], []byte("v")) {
						errc <- fmt.Errorf("MultiGet(%q) = %q during Close", keys[i], vals[i])
						return
					}
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	closed.Store(true)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}

// ---- Grafite through the engine ----

// TestAdvGrafiteScansAgainstModel fills a store whose tables carry Grafite
// range filters with keys of zero bytes, 0xff, prefixes of each other and
// 9-byte random binary keys, and checks bounded scans of every kind
// against the model: a false negative would skip a table that holds a key.
func TestAdvGrafiteScansAgainstModel(t *testing.T) {
	bits := []int{4, 16}
	if testing.Short() || raceEnabled {
		bits = bits[:1]
	}
	for _, bpk := range bits {
		t.Run(fmt.Sprint(bpk), func(t *testing.T) {
			o := &Options{FS: vfs.NewMem(), WriteBufferSize: 4 << 10, TargetFileSize: 1 << 10, BlockSize: 128, LBaseMaxBytes: 4 << 10,
				L0CompactionTrigger: 3, RangeFilter: filter.NewGrafiteRangePolicy(bpk)}
			d := mustOpen(t, "/db", o)
			defer d.Close()
			rng := rand.New(rand.NewSource(int64(bpk)))
			m := a16model{}
			var keys []string
			for i := 0; i < 3000; i++ {
				var k string
				switch rng.Intn(4) {
				case 0:
					k = advKey(rng)
				case 1:
					b := make([]byte, 9)
					rng.Read(b)
					k = string(b)
				case 2:
					k = fmt.Sprintf("%016d", rng.Intn(1e6))
				default:
					b := make([]byte, 1+rng.Intn(10))
					for j := range b {
						b[j] = []byte{0, 0xff, 0x7f, 0x80}[rng.Intn(4)]
					}
					k = string(b)
				}
				keys = append(keys, k)
				d.Put([]byte(k), []byte("v"), nil)
				m[k] = "v"
			}
			waitCompactions(t, d)
			probes := append([]string{}, keys[:300]...)
			for _, k := range keys[:300] {
				probes = append(probes, k+"\x00", k[:len(k)/2])
				if len(k) > 0 {
					b := []byte(k)
					b[len(b)-1]++
					probes = append(probes, string(b))
				}
			}
			probes = append(probes, advAllKeys()...)
			for i := 0; i < 3000; i++ {
				lo, hi := probes[rng.Intn(len(probes))], probes[rng.Intn(len(probes))]
				want := m.keysIn(&lo, &hi)
				it := d.NewIterator(&ReadOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)})
				var got []string
				for ok := it.First(); ok; ok = it.Next() {
					got = append(got, string(it.Key()))
				}
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
				if !equalStrings(got, want) {
					t.Fatalf("scan [%q, %q): got %q, want %q", lo, hi, got, want)
				}
			}
		})
	}
}

var _ = os.Getenv

// compactionPickRange returns a compaction of every table of level into
// the next. d.mu must be held.
func compactionPickRange(d *DB, level int) *compaction.Compaction {
	return compaction.PickRange(d.vs.current, d.copts, level, nil, nil)
}

// FAILS: on a97eb4d (and HEAD): 100 DeleteRanges held by one snapshot
// become ~14,600 range tombstones in ~600 tables after 80,000 puts (the
// commit before, f07390b, keeps 100), growing with every round of
// compactions; the first read of each new read state (after every flush
// or compaction) rebuilds the tombstone set from all of them: ~25-55 ms
// instead of ~0.1 ms. (The snapshot reads themselves stayed fast.) This is
// the price of the fix for write amplification (14 s -> 3-6 s here), but
// it contradicts outputRangeDels' doc ("so n overlapping ones stay n on
// disk") and is unbounded in the number of tables.
//
// Fixed: Build joins the pieces of one sequence number (a DeleteRange), so
// compaction writes one piece a tombstone a table (5,250 pieces in 604
// tables here) and the read state's set holds the 100 tombstones again
// (first Get of a read state ~6 ms, most of it not the tombstones).
//
// TestAdvSplitTombstonesMultiply: n wide tombstones kept by one old
// snapshot. Before the change they stayed n on disk (outputRangeDels:
// "The tombstones are kept whole, not fragmented, so n overlapping ones
// stay n on disk"); cutting inside them writes a piece of each into every
// output, so the store holds about n x tables of them, and every read
// state rebuilds its tombstone set from all of them.
func TestAdvSplitTombstonesMultiply(t *testing.T) {
	if raceEnabled {
		t.Skip("one goroutine's structure test; 20 s under the race detector")
	}
	o := smallTree(vfs.NewMem())
	d := mustOpen(t, "/db", o)
	defer d.Close()
	rng := rand.New(rand.NewSource(1))
	val := make([]byte, 100)
	for i := 0; i < 2000; i++ {
		rng.Read(val)
		d.Put(a16key(i), val, nil)
	}
	snap := d.NewSnapshot()
	defer snap.Release()
	const n = 100
	for j := 0; j < n; j++ {
		if err := d.DeleteRange([]byte(fmt.Sprintf("k%02d", j%10)), []byte("\xff"), nil); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round < 4; round++ {
		for i := 0; i < 20000; i++ {
			rng.Read(val)
			d.Put(a16key(rng.Intn(40000)), val, nil)
		}
		waitCompactions(t, d)
		t.Logf("round %d: %d tombstones in tables", round, d.Metrics().RangeTombstones)
	}
	tables := 0
	ref := d.loadReadState()
	for _, files := range ref.rs.v.Files {
		tables += len(files)
		for _, f := range files {
			// Compaction joins the pieces of its inputs before it cuts
			// again: one piece a tombstone in each table at most.
			if f.RangeDels > n {
				t.Errorf("table %06d holds %d range tombstones, more than the %d DeleteRanges", f.FileNum, f.RangeDels, n)
			}
		}
	}
	// The read state's set joins the pieces of all tables: it costs what
	// the DeleteRanges do, not what they times the tables do.
	set, err := ref.rs.rangeDels()
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() > n {
		t.Errorf("the read state's tombstone set holds %d tombstones for %d DeleteRanges", set.Len(), n)
	}
	ref.unref()
	got := d.Metrics().RangeTombstones
	start := time.Now()
	if _, err := d.Get([]byte("k0000001"), nil); err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	// Reads at the snapshot, older than every tombstone: the fragments keep
	// only the newest MaxFragmentSeqs sequence numbers, so each such read
	// scans the tombstones that start at or before its key.
	start = time.Now()
	for i := 0; i < 1000; i++ {
		if _, err := d.Get(a16key(i), &ReadOptions{Snapshot: snap}); err != nil {
			t.Fatal(err)
		}
	}
	// The pieces on disk are at most one a tombstone a table: cutting
	// outputs inside wide tombstones (which keeps a level from being
	// glued into one table) makes them n x tables at worst, tens of bytes
	// each.
	t.Logf("%d DeleteRanges, %d tables: %d tombstone pieces in tables; first Get of a read state %v; 1000 snapshot Gets %v", n, tables, got, first, time.Since(start))
}

// TestAdvSplitPiecesReclaimed: once the snapshot that kept a wide
// tombstone is released, CompactRange(nil, nil) must drop every piece of
// it (and the keys it deletes), across reopen; and kvtool-style table
// checks must hold at each step.
func TestAdvSplitPiecesReclaimed(t *testing.T) {
	o := smallTree(vfs.NewMem())
	d := mustOpen(t, "/db", o)
	defer func() { d.Close() }()
	rng := rand.New(rand.NewSource(2))
	val := make([]byte, 100)
	m := a16model{}
	for i := 0; i < 3000; i++ {
		rng.Read(val)
		d.Put(a16key(i), val, nil)
	}
	snap := d.NewSnapshot()
	for j := 0; j < 5; j++ {
		lo, hi := fmt.Sprintf("k%07d", j*500), fmt.Sprintf("k%07d\x00", 6000-j*100)
		if err := d.DeleteRange([]byte(lo), []byte(hi), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 8000; i += 2 {
		rng.Read(val)
		d.Put(a16key(i), val, nil)
		m[string(a16key(i))] = string(val)
	}
	waitCompactions(t, d)
	advCheckTables(t, d)
	before := d.Metrics().RangeTombstones
	snap.Release()
	if err := d.CompactRange([]byte("k0001000"), []byte("k0002000")); err != nil {
		t.Fatal(err)
	}
	advCheckTables(t, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "/db", o)
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	waitCompactions(t, d)
	advCheckTables(t, d)
	after := d.Metrics().RangeTombstones
	t.Logf("tombstones in tables: %d with the snapshot, %d after reopen and CompactRange(nil, nil)", before, after)
	if after != 0 {
		t.Errorf("%d tombstone pieces survive a full compaction with no snapshot", after)
	}
	for i := 0; i < 8000; i++ {
		v, err := d.Get(a16key(i), nil)
		want := i%2 == 0
		if want != (err == nil) {
			t.Fatalf("Get(%q) = %d bytes, %v; want present %v", a16key(i), len(v), err, want)
		}
		if want && string(v) != m[string(a16key(i))] {
			t.Fatalf("Get(%q): wrong value", a16key(i))
		}
	}
}
