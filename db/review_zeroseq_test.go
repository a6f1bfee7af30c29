package db

// Adversarial review of commits 987fed9 (sequence number 0 at the bottom),
// 6b5cd08 (bottom-up picking, 10 MiB level 1, table bounds from the
// writer) and 94293b2 (compressed index blocks). The store tests check
// reads against a map model. TestReviewZeroSeqPickerNaNScore fails (a
// panic in Pick since 6b5cd08); the others pass.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/golang/snappy"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/ldbcompat"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// rzModel is what a reader should see: key -> value.
type rzModel map[string]string

func (m rzModel) clone() rzModel {
	c := make(rzModel, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (m rzModel) delRange(lo, hi string) {
	for k := range m {
		if k >= lo && k < hi {
			delete(m, k)
		}
	}
}

// rzSeqs returns, over the current version's tables, how many point
// entries have sequence number 0 and the largest sequence number of any
// point entry or tombstone.
func rzSeqs(t testing.TB, d *DB) (zero int, maxSeq uint64) {
	t.Helper()
	ref := d.loadReadState()
	defer ref.unref()
	for level, files := range ref.rs.v.Files {
		for _, f := range files {
			r, err := d.tables.get(f)
			if err != nil {
				t.Fatalf("L%d %06d: %v", level, f.FileNum, err)
			}
			it := r.NewIterator()
			for ok := it.First(); ok; ok = it.Next() {
				_, s, _, _ := base.ParseInternalKey(it.Key())
				if s == 0 {
					zero++
				}
				maxSeq = max(maxSeq, s)
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			for _, tb := range r.RangeDels() {
				maxSeq = max(maxSeq, tb.Seq)
			}
		}
	}
	return zero, maxSeq
}

// rzCheck checks every read path of d at ro against m, over probes (and
// a full scan in both directions).
func rzCheck(t testing.TB, d *DB, ro *ReadOptions, m rzModel, probes []string, what string) {
	t.Helper()
	for _, k := range probes {
		v, err := d.Get([]byte(k), ro)
		want, ok := m[k]
		if ok != (err == nil) || (ok && string(v) != want) || (!ok && !errors.Is(err, ErrNotFound)) {
			t.Fatalf("%s: Get(%q) = %q, %v; want %q, %v", what, k, v, err, want, ok)
		}
		ev, _, eerr := d.ExplainGet([]byte(k), ro)
		if ok != (eerr == nil) || (ok && string(ev) != want) {
			t.Fatalf("%s: ExplainGet(%q) = %q, %v; want %q, %v", what, k, ev, eerr, want, ok)
		}
	}
	keys := make([][]byte, len(probes))
	for i, k := range probes {
		keys[i] = []byte(k)
	}
	if len(keys) > 1 {
		vals, errs := d.MultiGet(keys, ro)
		for i, k := range probes {
			want, ok := m[k]
			if ok != (errs[i] == nil) || (ok && string(vals[i]) != want) {
				t.Fatalf("%s: MultiGet %q = %q, %v; want %q, %v", what, k, vals[i], errs[i], want, ok)
			}
		}
	}
	rzScan(t, d, ro, m, what)
}

func rzScan(t testing.TB, d *DB, ro *ReadOptions, m rzModel, what string) {
	t.Helper()
	want := make([]string, 0, len(m))
	for k := range m {
		want = append(want, k)
	}
	sort.Strings(want)
	it := d.NewIterator(ro)
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		k := string(it.Key())
		if m[k] != string(it.Value()) {
			t.Fatalf("%s: scan %q = %q, want %q", what, k, it.Value(), m[k])
		}
		got = append(got, k)
	}
	if err := it.Error(); err != nil {
		t.Fatalf("%s: scan: %v", what, err)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s: scan keys\n got %v\nwant %v", what, got, want)
	}
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		k := string(it.Key())
		if m[k] != string(it.Value()) {
			t.Fatalf("%s: reverse scan %q = %q, want %q", what, k, it.Value(), m[k])
		}
		got = append(got, k)
	}
	for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
		got[i], got[j] = got[j], got[i]
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s: reverse scan keys\n got %v\nwant %v", what, got, want)
	}
	// Seek to a few keys, then step back once.
	for i := 0; i < len(want)+1; i += 1 + len(want)/8 {
		var target string
		if i < len(want) {
			target = want[i] + "\x00"
		} else {
			target = "zzzz"
		}
		j := sort.SearchStrings(want, target)
		ok := it.Seek([]byte(target))
		if ok != (j < len(want)) || (ok && string(it.Key()) != want[j]) {
			t.Fatalf("%s: Seek(%q) = %v %q, want index %d of %d", what, target, ok, it.Key(), j, len(want))
		}
		if ok && m[want[j]] != string(it.Value()) {
			t.Fatalf("%s: Seek(%q) value %q, want %q", what, target, it.Value(), m[want[j]])
		}
		if ok {
			ok = it.Prev()
			if ok != (j > 0) || (ok && (string(it.Key()) != want[j-1] || string(it.Value()) != m[want[j-1]])) {
				t.Fatalf("%s: Prev after Seek(%q) = %v %q", what, target, ok, it.Key())
			}
		}
	}
	if err := it.Close(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func rzKey(i int) string { return fmt.Sprintf("key%04d", i) }

func rzProbes(n int) []string {
	p := make([]string, 0, n+2)
	for i := 0; i < n; i++ {
		p = append(p, rzKey(i))
	}
	return append(p, "", "zzz")
}

func rzPut(t testing.TB, d *DB, m rzModel, k, v string) {
	t.Helper()
	if err := d.Put([]byte(k), []byte(v), nil); err != nil {
		t.Fatal(err)
	}
	if m != nil {
		m[k] = v
	}
}

func rzDel(t testing.TB, d *DB, m rzModel, k string) {
	t.Helper()
	if err := d.Delete([]byte(k), nil); err != nil {
		t.Fatal(err)
	}
	delete(m, k)
}

func rzDelRange(t testing.TB, d *DB, m rzModel, lo, hi string) {
	t.Helper()
	if err := d.DeleteRange([]byte(lo), []byte(hi), nil); err != nil {
		t.Fatal(err)
	}
	m.delRange(lo, hi)
}

func rzCompact(t testing.TB, d *DB) {
	t.Helper()
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
}

// TestReviewZeroSeqReopenShadows: values zeroed by a full compaction, then
// a reopen (MANIFEST LastSequence, WAL replay of unflushed writes): new
// writes must get sequence numbers above every existing one and shadow
// the zeroed values, through another compaction and reopen; in both
// formats.
func TestReviewZeroSeqReopenShadows(t *testing.T) {
	for _, f := range []Format{FormatBloomKV, FormatLevelDB} {
		t.Run(f.String(), func(t *testing.T) {
			fs := vfs.NewMem()
			o := &Options{FS: fs, Format: f, WriteBufferSize: 32 << 10, TargetFileSize: 8 << 10}
			d := mustOpen(t, "/db", o)
			m := rzModel{}
			const n = 400
			for i := 0; i < n; i++ {
				rzPut(t, d, m, rzKey(i), fmt.Sprintf("v1-%d", i))
			}
			rzCompact(t, d)
			zero, _ := rzSeqs(t, d)
			if zero == 0 {
				t.Fatalf("setup: no entry was zeroed")
			}
			// Unflushed writes, left in the WAL.
			for i := 0; i < n; i += 7 {
				rzPut(t, d, m, rzKey(i), fmt.Sprintf("v2-%d", i))
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			for round := 0; round < 3; round++ {
				d = mustOpen(t, "/db", o)
				rzCheck(t, d, nil, m, rzProbes(n), fmt.Sprintf("round %d after reopen", round))
				snap := d.NewSnapshot()
				old := m.clone()
				for i := round; i < n; i += 5 {
					rzPut(t, d, m, rzKey(i), fmt.Sprintf("v3-%d-%d", round, i))
				}
				for i := round + 1; i < n; i += 11 {
					rzDel(t, d, m, rzKey(i))
				}
				rzCheck(t, d, nil, m, rzProbes(n), fmt.Sprintf("round %d after writes", round))
				rzCheck(t, d, &ReadOptions{Snapshot: snap}, old, rzProbes(n), fmt.Sprintf("round %d snapshot", round))
				rzCompact(t, d)
				rzCheck(t, d, nil, m, rzProbes(n), fmt.Sprintf("round %d after compaction", round))
				rzCheck(t, d, &ReadOptions{Snapshot: snap}, old, rzProbes(n), fmt.Sprintf("round %d snapshot after compaction", round))
				snap.Release()
				rzCompact(t, d)
				rzCheck(t, d, nil, m, rzProbes(n), fmt.Sprintf("round %d after second compaction", round))
				_, maxSeq := rzSeqs(t, d)
				if vis := d.visibleSeq.Load(); maxSeq > vis {
					t.Fatalf("round %d: a table holds sequence number %d, above the last visible %d", round, maxSeq, vis)
				}
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// rzSnap is a snapshot with the model it should see.
type rzSnap struct {
	s *Snapshot
	m rzModel
}

// rzIter is an iterator opened at some moment (without a snapshot), with
// the model it should see however long it stays open.
type rzIter struct {
	it *Iterator
	m  rzModel
}

func rzCheckIter(t testing.TB, ri rzIter, what string) {
	t.Helper()
	want := make([]string, 0, len(ri.m))
	for k := range ri.m {
		want = append(want, k)
	}
	sort.Strings(want)
	var got []string
	for ok := ri.it.First(); ok; ok = ri.it.Next() {
		k := string(ri.it.Key())
		if ri.m[k] != string(ri.it.Value()) {
			t.Fatalf("%s: held iterator %q = %q, want %q", what, k, ri.it.Value(), ri.m[k])
		}
		got = append(got, k)
	}
	if err := ri.it.Error(); err != nil {
		t.Fatalf("%s: held iterator: %v", what, err)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s: held iterator keys\n got %v\nwant %v", what, got, want)
	}
}

// rzRandom drives random puts, deletes, range deletions, snapshots, held
// iterators, flushes, CompactRange (whole and partial), checkpoints and
// reopens over a small tree, checking every read path against the model
// at the newest state and at every live snapshot and iterator.
func rzRandom(t *testing.T, seed int64, ops int, format Format) {
	rng := rand.New(rand.NewSource(seed))
	fs := vfs.NewMem()
	o := &Options{
		FS:                  fs,
		Format:              format,
		WriteBufferSize:     4 << 10,
		TargetFileSize:      1 << 10,
		LBaseMaxBytes:       8 << 10,
		L0CompactionTrigger: 2,
		BlockSize:           256,
		LevelMultiplier:     2,
	}
	if seed%3 == 2 {
		// An output cut after every user key: inside every tombstone.
		o.TargetFileSize = 1
		o.LBaseMaxBytes = 4 << 10
	}
	d := mustOpen(t, "/db", o)
	defer func() { d.Close() }()
	const nkeys = 200
	m := rzModel{}
	var snaps []rzSnap
	var iters []rzIter
	releaseAll := func() {
		for _, s := range snaps {
			s.s.Release()
		}
		snaps = nil
		for _, ri := range iters {
			ri.it.Close()
		}
		iters = nil
	}
	key := func() string { return rzKey(rng.Intn(nkeys)) }
	probes := func(n int) []string {
		p := make([]string, n)
		for i := range p {
			p[i] = key()
		}
		return p
	}
	checkAll := func(what string) {
		t.Helper()
		rzCheck(t, d, nil, m, probes(40), what+" (newest)")
		for i, s := range snaps {
			rzCheck(t, d, &ReadOptions{Snapshot: s.s}, s.m, probes(20), fmt.Sprintf("%s (snapshot %d)", what, i))
		}
		for i, ri := range iters {
			rzCheckIter(t, ri, fmt.Sprintf("%s (iterator %d)", what, i))
		}
	}
	cps := 0
	for op := 0; op < ops; op++ {
		what := fmt.Sprintf("seed %d op %d", seed, op)
		switch r := rng.Intn(1000); {
		case r < 550:
			rzPut(t, d, m, key(), fmt.Sprintf("v%d", op))
		case r < 680:
			rzDel(t, d, m, key())
		case r < 740 && format != FormatLevelDB:
			a, b := rng.Intn(nkeys), rng.Intn(nkeys)
			if a > b {
				a, b = b, a
			}
			if a == b {
				b++
			}
			rzDelRange(t, d, m, rzKey(a), rzKey(b))
		case r < 780:
			if len(snaps) < 4 {
				snaps = append(snaps, rzSnap{d.NewSnapshot(), m.clone()})
			}
		case r < 810:
			if len(snaps) > 0 {
				i := rng.Intn(len(snaps))
				snaps[i].s.Release()
				snaps = append(snaps[:i], snaps[i+1:]...)
			}
		case r < 830:
			if len(iters) < 2 {
				iters = append(iters, rzIter{d.NewIterator(nil), m.clone()})
			}
		case r < 850:
			if len(iters) > 0 {
				i := rng.Intn(len(iters))
				rzCheckIter(t, iters[i], what)
				iters[i].it.Close()
				iters = append(iters[:i], iters[i+1:]...)
			}
		case r < 880:
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		case r < 920:
			if rng.Intn(2) == 0 {
				rzCompact(t, d)
			} else {
				a, b := rng.Intn(nkeys), rng.Intn(nkeys)
				if a > b {
					a, b = b, a
				}
				if err := d.CompactRange([]byte(rzKey(a)), []byte(rzKey(b))); err != nil {
					t.Fatal(err)
				}
			}
			checkAll(what + " after CompactRange")
		case r < 940:
			checkAll(what)
		case r < 950:
			releaseAll()
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = mustOpen(t, "/db", o)
			checkAll(what + " after reopen")
		case r < 955:
			cps++
			dir := fmt.Sprintf("/cp%d", cps)
			if err := d.Checkpoint(dir); err != nil {
				t.Fatal(err)
			}
			c := mustOpen(t, dir, o)
			rzCheck(t, c, nil, m, probes(40), what+" checkpoint")
			// Writes to the checkpoint shadow what it holds.
			k := key()
			cm := m.clone()
			rzPut(t, c, cm, k, "cp-new")
			rzCompact(t, c)
			rzCheck(t, c, nil, cm, append(probes(20), k), what+" checkpoint after a write and compaction")
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c = mustOpen(t, dir, o)
			rzCheck(t, c, nil, cm, append(probes(20), k), what+" checkpoint reopened")
			c.Close()
		case r < 960:
			releaseAll()
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			ro := *o
			ro.ReadOnly = true
			r, err := Open("/db", &ro)
			if err != nil {
				t.Fatal(err)
			}
			rzCheck(t, r, nil, m, probes(40), what+" read-only")
			r.Close()
			d = mustOpen(t, "/db", o)
		}
	}
	checkAll(fmt.Sprintf("seed %d end", seed))
	releaseAll()
	if err := d.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	rzCompact(t, d)
	rzCheck(t, d, nil, m, rzProbes(nkeys), fmt.Sprintf("seed %d final", seed))
	rzCheckBounds(t, d)
	if zero, _ := rzSeqs(t, d); zero == 0 && len(m) > 0 {
		t.Fatalf("seed %d: no entry zeroed after a full compaction", seed)
	}
}

func TestReviewZeroSeqRandom(t *testing.T) {
	for _, seed := range []int64{1, 4} {
		rzRandom(t, seed, 2000, FormatBloomKV)
	}
}

// TestReviewZeroSeqRandomCutEveryKey is rzRandom with an output cut after
// every user key (seed%3 == 2), inside every tombstone.
func TestReviewZeroSeqRandomCutEveryKey(t *testing.T) {
	rzRandom(t, 2, 500, FormatBloomKV)
}

// TestReviewZeroSeqHunt runs many more seeds when RZ_SEEDS is set (not in
// normal runs).
func TestReviewZeroSeqHunt(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RZ_SEEDS"))
	if n == 0 {
		t.Skip("RZ_SEEDS not set")
	}
	start, _ := strconv.Atoi(os.Getenv("RZ_START"))
	for seed := int64(start); seed < int64(start+n); seed++ {
		f := FormatBloomKV
		if seed%4 == 3 {
			f = FormatLevelDB
		}
		rzRandom(t, seed, 4000, f)
	}
}

func TestReviewZeroSeqRandomLevelDB(t *testing.T) {
	rzRandom(t, 1, 2000, FormatLevelDB)
}

// rzCheckBounds recomputes every table's bounds from its entries (first
// and last point key, each tombstone's start and BoundEnd(end)) and
// requires the MANIFEST's to be exactly those, and the tables of each
// level >= 1 to be disjoint in user keys.
func rzCheckBounds(t testing.TB, d *DB) {
	t.Helper()
	ref := d.loadReadState()
	defer ref.unref()
	for level, files := range ref.rs.v.Files {
		for i, f := range files {
			r, err := d.tables.get(f)
			if err != nil {
				t.Fatalf("L%d %06d: %v", level, f.FileNum, err)
			}
			var lo, hi []byte
			widen := func(a, b []byte) {
				if lo == nil || base.CompareInternal(a, lo) < 0 {
					lo = append([]byte(nil), a...)
				}
				if hi == nil || base.CompareInternal(b, hi) > 0 {
					hi = append([]byte(nil), b...)
				}
			}
			it := r.NewIterator()
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				widen(it.Key(), it.Key())
				n++
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			for _, tb := range r.RangeDels() {
				widen(base.MakeInternalKey(tb.Start, tb.Seq, base.KindRangeDelete),
					base.MakeInternalKey(rangedel.BoundEnd(tb.End), tb.Seq, base.KindRangeDelete))
			}
			if !bytes.Equal(lo, f.Smallest) || !bytes.Equal(hi, f.Largest) {
				t.Fatalf("L%d table %06d (%d points, %d tombstones): MANIFEST bounds [%s .. %s], entries [%s .. %s]", level, f.FileNum, n, len(r.RangeDels()),
					base.FormatInternalKey(f.Smallest), base.FormatInternalKey(f.Largest), base.FormatInternalKey(lo), base.FormatInternalKey(hi))
			}
			if level > 0 && i > 0 && bytes.Compare(base.UserKey(files[i-1].Largest), base.UserKey(f.Smallest)) >= 0 {
				t.Fatalf("L%d tables %06d and %06d overlap", level, files[i-1].FileNum, f.FileNum)
			}
		}
	}
}

// TestReviewZeroSeqLevelDBFixtures: the stores LevelDB and goleveldb wrote
// (which never zero), fully compacted by bloomkv (which zeroes), then
// overwritten and deleted in part, reopened and compacted again: every
// read matches the model, and the newest writes win over zeroed values.
func TestReviewZeroSeqLevelDBFixtures(t *testing.T) {
	for _, fixture := range leveldbFixtures {
		t.Run(filepath.Base(fixture), func(t *testing.T) {
			dir := copyFixture(t, fixture)
			o := &Options{TargetFileSize: 16 << 10}
			d := mustOpen(t, dir, o)
			m := rzModel(ldbcompat.Model())
			var probes []string
			for k := range m {
				probes = append(probes, k)
			}
			sort.Strings(probes)
			if len(probes) > 400 {
				step := len(probes) / 400
				var p []string
				for i := 0; i < len(probes); i += step {
					p = append(p, probes[i])
				}
				probes = p
			}
			probes = append(probes, ldbcompat.Absent(20)...)
			rzCheck(t, d, nil, m, probes, "opened")
			snap := d.NewSnapshot()
			old := m.clone()
			rzCompact(t, d)
			if zero, _ := rzSeqs(t, d); zero == 0 {
				t.Fatal("setup: nothing zeroed")
			}
			rzCheck(t, d, &ReadOptions{Snapshot: snap}, old, probes, "snapshot after compaction")
			snap.Release()
			rzCompact(t, d)
			for i, k := range probes {
				switch i % 3 {
				case 0:
					rzPut(t, d, m, k, "new-"+k)
				case 1:
					rzDel(t, d, m, k)
				}
			}
			rzCheck(t, d, nil, m, probes, "after overwrites")
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = mustOpen(t, dir, o)
			rzCheck(t, d, nil, m, probes, "reopened")
			rzCompact(t, d)
			rzCheck(t, d, nil, m, probes, "compacted again")
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = mustOpen(t, dir, &Options{ReadOnly: true})
			rzCheck(t, d, nil, m, probes, "read-only")
			d.Close()
		})
	}
}

// rzTable writes a bloomkv table of n entries (zeroed sequence numbers on
// half of them, as compaction now writes) and returns its bytes.
func rzTable(t testing.TB, n int, o sstable.WriterOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := sstable.NewWriter(&buf, o)
	for i := 0; i < n; i++ {
		seq := uint64(i + 1)
		if i%2 == 0 {
			seq = 0
		}
		if err := w.Add(base.MakeInternalKey([]byte(fmt.Sprintf("user/%08d/suffix", i)), seq, base.KindSet),
			[]byte(fmt.Sprintf("value-%d-%s", i, strings.Repeat("v", i%40)))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func rzOpenTable(b []byte) (*sstable.Reader, error) {
	return sstable.NewReader(bytes.NewReader(b), int64(len(b)), sstable.ReaderOptions{})
}

// rzTableEntries reads every entry of the table.
func rzTableEntries(t testing.TB, r *sstable.Reader) []string {
	t.Helper()
	var out []string
	it := r.NewIterator()
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, base.FormatInternalKey(it.Key())+"="+string(it.Value()))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func rzIndexStored(t testing.TB, b []byte) (off, size uint64, typ byte) {
	t.Helper()
	r, err := rzOpenTable(b)
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return l.Index.Offset, l.Index.Size, b[l.Index.Offset+l.Index.Size]
}

// TestReviewZeroSeqIndexCompression: a large table's index is stored
// snappy-compressed and reads back; DisableCompression and a tiny table
// keep it raw; IndexSize is the decoded size in every case.
func TestReviewZeroSeqIndexCompression(t *testing.T) {
	for _, c := range []struct {
		name    string
		n       int
		o       sstable.WriterOptions
		wantTyp byte
	}{
		{"large", 5000, sstable.WriterOptions{BlockSize: 256}, byte(sstable.SnappyCompression)},
		{"large-raw", 5000, sstable.WriterOptions{BlockSize: 256, DisableCompression: true}, byte(sstable.NoCompression)},
		{"tiny", 1, sstable.WriterOptions{}, byte(sstable.NoCompression)},
		{"two-blocks", 2, sstable.WriterOptions{BlockSize: 1}, 255}, // either
	} {
		t.Run(c.name, func(t *testing.T) {
			b := rzTable(t, c.n, c.o)
			_, size, typ := rzIndexStored(t, b)
			if c.wantTyp != 255 && typ != c.wantTyp {
				t.Fatalf("index stored with type %d, want %d", typ, c.wantTyp)
			}
			r, err := rzOpenTable(b)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(rzTableEntries(t, r)); got != c.n {
				t.Fatalf("%d entries, want %d", got, c.n)
			}
			p := r.Properties()
			if typ == byte(sstable.NoCompression) && p.IndexSize != size {
				t.Fatalf("raw index: IndexSize %d, stored %d", p.IndexSize, size)
			}
			if typ == byte(sstable.SnappyCompression) && p.IndexSize <= size {
				t.Fatalf("compressed index: IndexSize %d, stored %d", p.IndexSize, size)
			}
			if err := r.VerifyChecksums(); err != nil {
				t.Fatal(err)
			}
			if err := r.CheckCompression(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReviewZeroSeqRawIndexStillOpens rewrites a table's compressed index
// raw, as tables written before 94293b2 store it, and reads it back the
// same.
func TestReviewZeroSeqRawIndexStillOpens(t *testing.T) {
	b := rzTable(t, 3000, sstable.WriterOptions{BlockSize: 256})
	off, size, typ := rzIndexStored(t, b)
	if typ != byte(sstable.SnappyCompression) {
		t.Fatalf("setup: index type %d", typ)
	}
	raw, err := snappy.Decode(nil, b[off:off+size])
	if err != nil {
		t.Fatal(err)
	}
	r0, err := rzOpenTable(b)
	if err != nil {
		t.Fatal(err)
	}
	want := rzTableEntries(t, r0)
	footer := b[len(b)-sstable.FooterLen:]
	// The footer: metaindex handle, index handle (uvarints), padding to
	// 40 bytes, version, magic.
	mo, n1 := binary.Uvarint(footer)
	ms, n2 := binary.Uvarint(footer[n1:])
	if n1 <= 0 || n2 <= 0 {
		t.Fatal("setup: bad footer")
	}
	var nb []byte
	nb = append(nb, b[:off]...)
	nb = append(nb, raw...)
	nb = append(nb, byte(sstable.NoCompression))
	nb = binary.LittleEndian.AppendUint32(nb, uint32(xxhash.Sum64(nb[off:])))
	nf := make([]byte, sstable.FooterLen)
	p := binary.AppendUvarint(nf[:0], mo)
	p = binary.AppendUvarint(p, ms)
	p = binary.AppendUvarint(p, off)
	binary.AppendUvarint(p, uint64(len(raw)))
	copy(nf[40:], footer[40:])
	nb = append(nb, nf...)
	r, err := rzOpenTable(nb)
	if err != nil {
		t.Fatalf("raw-index table: %v", err)
	}
	if got := rzTableEntries(t, r); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("raw-index table reads differently")
	}
	if r.Properties().IndexSize != uint64(len(raw)) {
		t.Fatalf("IndexSize %d, raw index %d", r.Properties().IndexSize, len(raw))
	}
	if err := r.VerifyChecksums(); err != nil {
		t.Fatal(err)
	}
}

// TestReviewZeroSeqIndexCorruption flips every bit of a compressed index
// block (and its trailer): opening the table must fail with an error
// wrapping ErrCorruption, never panic or open.
func TestReviewZeroSeqIndexCorruption(t *testing.T) {
	b := rzTable(t, 2000, sstable.WriterOptions{BlockSize: 256})
	off, size, typ := rzIndexStored(t, b)
	if typ != byte(sstable.SnappyCompression) {
		t.Fatalf("setup: index type %d", typ)
	}
	c := make([]byte, len(b))
	for i := off; i < off+size+sstable.BlockTrailerLen; i++ {
		for bit := 0; bit < 8; bit++ {
			copy(c, b)
			c[i] ^= 1 << bit
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("byte %d bit %d: panic %v", i, bit, p)
					}
				}()
				r, err := rzOpenTable(c)
				if err == nil {
					t.Fatalf("byte %d bit %d of the index: table opened (%d entries)", i, bit, len(rzTableEntries(t, r)))
				}
				if !errors.Is(err, ErrCorruption) {
					t.Fatalf("byte %d bit %d: %v does not wrap ErrCorruption", i, bit, err)
				}
			}()
		}
	}
}

// TestReviewZeroSeqIndexCorruptionDB: a store whose table has a damaged
// compressed index opens (the table is reported by reads), and Get, the
// iterator and a compaction answer with errors wrapping ErrCorruption.
func TestReviewZeroSeqIndexCorruptionDB(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, BlockSize: 256, DisableAutomaticCompactions: true}
	d := mustOpen(t, "/db", o)
	for i := 0; i < 3000; i++ {
		rzPut(t, d, nil, rzKey(i), fmt.Sprintf("value-%d", i))
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	ref := d.loadReadState()
	f := ref.rs.v.Files[0][0]
	ref.unref()
	name := d.tablePath(f.FileNum)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	rf, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := fs.Stat(name)
	b := make([]byte, st.Size())
	if _, err := rf.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	rf.Close()
	off, size, typ := rzIndexStored(t, b)
	if typ != byte(sstable.SnappyCompression) {
		t.Fatalf("setup: index type %d", typ)
	}
	b[off+size/2] ^= 0x10
	wf, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	wf.Write(b)
	wf.Close()
	d, err = Open("/db", o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer d.Close()
	if _, err := d.Get([]byte(rzKey(5)), nil); !errors.Is(err, ErrCorruption) {
		t.Fatalf("Get: %v, want ErrCorruption", err)
	}
	it := d.NewIterator(nil)
	it.First()
	if err := it.Error(); !errors.Is(err, ErrCorruption) {
		t.Fatalf("iterator: %v, want ErrCorruption", err)
	}
	it.Close()
	if err := d.CompactRange(nil, nil); !errors.Is(err, ErrCorruption) {
		t.Fatalf("CompactRange: %v, want ErrCorruption", err)
	}
}

// TestReviewZeroSeqPickerNoStarvation: random writes into a tiny tree with
// low level-0 triggers (writes stop at 4 level-0 tables) must finish, and
// WaitForCompactions must return with every level under its target, in
// bounded time; the store then reads as the model.
func TestReviewZeroSeqPickerNoStarvation(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{
		FS:                      fs,
		WriteBufferSize:         4 << 10,
		TargetFileSize:          2 << 10,
		LBaseMaxBytes:           16 << 10,
		LevelMultiplier:         3,
		L0CompactionTrigger:     2,
		L0SlowdownWritesTrigger: 3,
		L0StopWritesTrigger:     4,
		BlockSize:               512,
	}
	d := mustOpen(t, "/db", o)
	defer d.Close()
	m := rzModel{}
	rng := rand.New(rand.NewSource(7))
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 12000; i++ {
			k := rzKey(rng.Intn(5000))
			v := fmt.Sprintf("v%d-%s", i, strings.Repeat("x", rng.Intn(60)))
			if err := d.Put([]byte(k), []byte(v), nil); err != nil {
				done <- err
				return
			}
			m[k] = v
		}
		done <- d.WaitForCompactions()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		d.mu.Lock()
		v := d.vs.current
		var files [NumLevels]int
		for l := range files {
			files[l] = v.NumFiles(l)
		}
		d.mu.Unlock()
		t.Fatalf("writes and WaitForCompactions did not finish in 60 s; tables per level %v", files)
	}
	d.mu.Lock()
	scores := compaction.Scores(d.vs.current, d.copts)
	d.mu.Unlock()
	for l, s := range scores {
		if s >= 1 {
			t.Fatalf("after WaitForCompactions level %d has score %.2f (scores %v)", l, s, scores)
		}
	}
	rzCheck(t, d, nil, m, rzProbes(5000)[:300], "after the load")
	rzCheckBounds(t, d)
}

// TestReviewZeroSeqConcurrentSnapshots: while one goroutine writes (puts,
// deletes, range deletions) and another runs CompactRange over random
// ranges (background compactions run too), readers take snapshots and
// read them by a scan, then by Gets and MultiGet after compactions ran:
// a snapshot's answers must never change. A held iterator (no snapshot)
// must read the same as a snapshot taken right after it.
func TestReviewZeroSeqConcurrentSnapshots(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{
		FS:                  fs,
		WriteBufferSize:     8 << 10,
		TargetFileSize:      2 << 10,
		LBaseMaxBytes:       16 << 10,
		LevelMultiplier:     2,
		L0CompactionTrigger: 2,
		BlockSize:           256,
	}
	d := mustOpen(t, "/db", o)
	defer d.Close()
	const nkeys = 400
	stop := make(chan struct{})
	errc := make(chan error, 8)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // writer
		defer wg.Done()
		rng := rand.New(rand.NewSource(1))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := []byte(rzKey(rng.Intn(nkeys)))
			var err error
			switch r := rng.Intn(100); {
			case r < 80:
				err = d.Put(k, []byte(fmt.Sprintf("v%d", i)), nil)
			case r < 95:
				err = d.Delete(k, nil)
			default:
				a := rng.Intn(nkeys)
				err = d.DeleteRange([]byte(rzKey(a)), []byte(rzKey(a+1+rng.Intn(20))), nil)
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	go func() { // manual compactions
		defer wg.Done()
		rng := rand.New(rand.NewSource(2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			a, b := rng.Intn(nkeys), rng.Intn(nkeys)
			if a > b {
				a, b = b, a
			}
			var err error
			if rng.Intn(4) == 0 {
				err = d.CompactRange(nil, nil)
			} else {
				err = d.CompactRange([]byte(rzKey(a)), []byte(rzKey(b)))
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	readAll := func(ro *ReadOptions) (map[string]string, error) {
		out := map[string]string{}
		it := d.NewIterator(ro)
		for ok := it.First(); ok; ok = it.Next() {
			out[string(it.Key())] = string(it.Value())
		}
		return out, it.Close()
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	rounds := 0
	for time.Now().Before(deadline) {
		rounds++
		it := d.NewIterator(nil)
		snap := d.NewSnapshot()
		first, err := readAll(&ReadOptions{Snapshot: snap})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		// The held iterator, read now, after compactions ran: it may have
		// been made a few writes before the snapshot.
		held := map[string]string{}
		for ok := it.First(); ok; ok = it.Next() {
			held[string(it.Key())] = string(it.Value())
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < nkeys; i++ {
			k := rzKey(i)
			v, err := d.Get([]byte(k), &ReadOptions{Snapshot: snap})
			want, ok := first[k]
			if ok != (err == nil) || string(v) != want {
				t.Fatalf("round %d: snapshot Get(%q) = %q, %v; its first scan read %q, %v", rounds, k, v, err, want, ok)
			}
		}
		again, err := readAll(&ReadOptions{Snapshot: snap})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("round %d: a snapshot's scan changed", rounds)
		}
		snap.Release()
		// The held iterator was made before the snapshot: every key it
		// holds with a value the snapshot lacks or differs on must have
		// been written between them, which is rare; a value older than
		// both would show up here as a value neither wrote.
		for k, v := range held {
			if sv, ok := first[k]; ok && sv != v {
				var a, b int
				fmt.Sscanf(v, "v%d", &a)
				fmt.Sscanf(sv, "v%d", &b)
				if a > b {
					t.Fatalf("round %d: held iterator reads %q=%q, newer than the later snapshot's %q", rounds, k, v, sv)
				}
			}
		}
		select {
		case err := <-errc:
			t.Fatal(err)
		default:
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	t.Logf("%d rounds", rounds)
}

// TestReviewZeroSeqConvertedFixture: a LevelDB store converted to bloomkv's
// format (its tables keep unknown sequence numbers), then range deletions,
// overwrites, snapshots and partial and full compactions (which zero):
// every read matches the model, before and after a reopen.
func TestReviewZeroSeqConvertedFixture(t *testing.T) {
	for _, fixture := range leveldbFixtures {
		t.Run(filepath.Base(fixture), func(t *testing.T) {
			dir := copyFixture(t, fixture)
			o := &Options{Format: FormatBloomKV, TargetFileSize: 8 << 10}
			d := mustOpen(t, dir, o)
			defer func() { d.Close() }()
			m := rzModel(ldbcompat.Model())
			var all []string
			for k := range m {
				all = append(all, k)
			}
			sort.Strings(all)
			var probes []string
			for i := 0; i < len(all); i += 1 + len(all)/300 {
				probes = append(probes, all[i])
			}
			probes = append(probes, ldbcompat.Absent(10)...)
			rzCheck(t, d, nil, m, probes, "converted")
			q := len(all) / 4
			// Compact a part only: LevelDB's tables stay beside zeroed ones.
			if err := d.CompactRange([]byte(all[q]), []byte(all[2*q])); err != nil {
				t.Fatal(err)
			}
			s1 := d.NewSnapshot()
			m1 := m.clone()
			rzDelRange(t, d, m, all[q/2], all[q+q/2])
			for i := q / 3; i < 3*q; i += 7 {
				rzPut(t, d, m, all[i], "new-"+all[i])
			}
			s2 := d.NewSnapshot()
			m2 := m.clone()
			rzDelRange(t, d, m, all[2*q], all[3*q])
			rzCheck(t, d, nil, m, probes, "after writes")
			rzCheck(t, d, &ReadOptions{Snapshot: s1}, m1, probes, "snapshot 1")
			rzCheck(t, d, &ReadOptions{Snapshot: s2}, m2, probes, "snapshot 2")
			if err := d.CompactRange([]byte(all[0]), []byte(all[q])); err != nil {
				t.Fatal(err)
			}
			rzCheck(t, d, &ReadOptions{Snapshot: s1}, m1, probes, "snapshot 1 after a partial compaction")
			s1.Release()
			rzCompact(t, d)
			rzCheck(t, d, nil, m, probes, "after a full compaction")
			rzCheck(t, d, &ReadOptions{Snapshot: s2}, m2, probes, "snapshot 2 after a full compaction")
			s2.Release()
			rzCompact(t, d)
			rzCheck(t, d, nil, m, probes, "after the last compaction")
			rzCheckBounds(t, d)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = mustOpen(t, dir, o)
			rzCheck(t, d, nil, m, probes, "reopened")
		})
	}
}

// TestReviewZeroSeqPickerNaNScore: LBaseMaxBytes 1 TiB and LevelMultiplier
// 64 are each within their documented limits, but level 5's target,
// 2^40 * 64^4 = 2^64, wraps to 0 in MaxBytesForLevel, so an empty level 5
// scores 0/0 = NaN. Pick used to skip it (NaN >= 1 is false); since
// 6b5cd08 it skips only levels with s < 1, which NaN is not, and takes
// the NaN level when no other level is over: a compaction of an empty
// level, whose files[0] panics. Open itself runs Pick.
func TestReviewZeroSeqPickerNaNScore(t *testing.T) {
	o := &Options{FS: vfs.NewMem(), LBaseMaxBytes: 1 << 40, LevelMultiplier: 64}
	if _, err := o.resolve(); err != nil {
		t.Fatalf("the options are refused (no bug then): %v", err)
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("Pick on an empty tree panics: %v", p)
			}
		}()
		copts := &compaction.Options{L0Trigger: 4, BaseLevelBytes: 1 << 40, LevelMultiplier: 64, TargetFileSize: 2 << 20}
		var ptrs [NumLevels][]byte
		if c := compaction.Pick(&manifest.Version{}, copts, &ptrs); c != nil {
			t.Errorf("Pick on an empty tree returns a compaction of level %d (scores %v)", c.Level, compaction.Scores(&manifest.Version{}, copts))
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("Open panics: %v", p)
		}
	}()
	d, err := Open("/db", o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer d.Close()
	rzPut(t, d, nil, "a", "1")
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	mustGet(t, d, "a", "1")
}
