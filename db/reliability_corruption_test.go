package db

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

var corruptSample = flag.Int("corrupt_sample", 120, "bytes flipped per file larger than 1 KiB in TestCorruption (smaller files: every byte; -long: every byte of every file)")

// corruptStore is the small store the corruption test damages: tables on
// several levels (some holding deletions), a MANIFEST with several edits,
// and a log holding batches that are in no table.
type corruptStore struct {
	mem     *vfs.MemFS
	model   map[string]string // the live keys
	keys    []string          // every key ever written, in order
	walKeys map[string]int    // keys only in the log → their batch
	opts    Options
}

func ckey(i int) string { return fmt.Sprintf("c%04d", i) }

func buildCorruptStore(t *testing.T) *corruptStore {
	t.Helper()
	s := &corruptStore{mem: vfs.NewMem(), model: map[string]string{}, walKeys: map[string]int{}}
	s.opts = Options{WriteBufferSize: 64 << 10, BlockSize: 256, TargetFileSize: 3 << 10, DisableAutomaticCompactions: true}
	o := s.opts
	o.FS = s.mem
	d := mustOpen(t, "/db", &o)
	put := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := fmt.Sprintf("val-%s-%s", ckey(i), strings.Repeat("abcdefgh", i%7))
			if err := d.Put([]byte(ckey(i)), []byte(v), nil); err != nil {
				t.Fatal(err)
			}
			s.model[ckey(i)] = v
			s.keys = append(s.keys, ckey(i))
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 100)
	put(100, 200)
	put(200, 300)
	if _, err := compactRange(d, nil, nil); err != nil {
		t.Fatal(err)
	}
	put(300, 400)
	for i := 0; i < 400; i += 7 {
		if err := d.Delete([]byte(ckey(i)), nil); err != nil {
			t.Fatal(err)
		}
		delete(s.model, ckey(i))
	}
	put(400, 450)
	// The log: batches of five fresh keys, synced, in no table.
	for b := 0; b < 14; b++ {
		var batch Batch
		for j := 0; j < 5; j++ {
			i := 450 + 5*b + j
			v := fmt.Sprintf("wal-%s", ckey(i))
			batch.Put([]byte(ckey(i)), []byte(v))
			s.model[ckey(i)] = v
			s.keys = append(s.keys, ckey(i))
			s.walKeys[ckey(i)] = b
		}
		if err := d.Write(&batch, &WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return s
}

// corruptFiles lists the store's tables, logs and MANIFESTs with sizes.
func (s *corruptStore) corruptFiles(t *testing.T) (names []string, sizes []int) {
	t.Helper()
	all, err := s.mem.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range all {
		typ, _, ok := parseFileName(n)
		if !ok || (typ != fileTypeTable && typ != fileTypeLog && typ != fileTypeManifest) {
			continue
		}
		fi, err := s.mem.Stat("/db/" + n)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() == 0 {
			continue
		}
		names = append(names, n)
		sizes = append(sizes, int(fi.Size()))
	}
	return names, sizes
}

// flipped returns a copy of the store with byte off of file name XORed
// with 0x80.
func (s *corruptStore) flipped(t *testing.T, name string, off int) *vfs.MemFS {
	t.Helper()
	c := s.mem.Clone()
	flipFileByte(t, c, "/db/"+name, off)
	return c
}

type corruptStats struct {
	trials, bytes                int
	openRefused, paranoidRefused int
	corruptReads, lostWALRecords int
	perfect                      int
	byKind                       map[fileType]int
	paranoidAcceptedTableFlipsAt []string
	nonParanoidOpenRefusedByKind map[fileType]int
}

// TestCorruption flips single bytes (XOR 0x80) of the tables, the log and
// the MANIFEST of a small store, one at a time: every byte of files up to
// 1 KiB, a random sample of larger ones (every byte with -long; fewer with
// -short). After each
// flip: Open fails with an error wrapping ErrCorruption, or every Get and
// iteration returns the right value or an error wrapping ErrCorruption; a
// key may go missing only when the flip hit the log (the damaged record is
// dropped and the LOG says so), and then its whole batch goes; a deleted
// key never comes back; nothing panics. With ParanoidChecks, Open refuses
// every flip in a table, and when it accepts a store, the store is exact.
func TestCorruption(t *testing.T) {
	s := buildCorruptStore(t)
	names, sizes := s.corruptFiles(t)
	kinds := map[fileType]bool{}
	for _, n := range names {
		typ, _, _ := parseFileName(n)
		kinds[typ] = true
	}
	if !kinds[fileTypeTable] || !kinds[fileTypeLog] || !kinds[fileTypeManifest] {
		t.Fatalf("the store lacks a table, a log or a MANIFEST: %v", names)
	}
	rng := rand.New(rand.NewSource(1))
	st := &corruptStats{byKind: map[fileType]int{}, nonParanoidOpenRefusedByKind: map[fileType]int{}}
	small, sample, head, tail, logTail := 1<<10, *corruptSample, 16, 64, 160
	if testing.Short() {
		small, sample, head, tail, logTail = 0, 6, 2, 4, 8
	}
	for fi, name := range names {
		typ, _, _ := parseFileName(name)
		var offs []int
		if sizes[fi] <= small || *relLong {
			for off := 0; off < sizes[fi]; off++ {
				offs = append(offs, off)
			}
		} else {
			seen := map[int]bool{}
			// The ends of a file hold its framing: a table's footer, the
			// header of a log's last record.
			n := tail
			if typ == fileTypeLog {
				n = logTail
			}
			for off := 0; off < head && off < sizes[fi]; off++ {
				seen[off] = true
			}
			for off := 0; off < n && off < sizes[fi]; off++ {
				seen[sizes[fi]-1-off] = true
			}
			for n := len(seen); len(seen) < n+sample && len(seen) < sizes[fi]; {
				seen[rng.Intn(sizes[fi])] = true
			}
			for off := range seen {
				offs = append(offs, off)
			}
			sort.Ints(offs)
		}
		for _, off := range offs {
			s.trial(t, st, name, typ, off, false)
			if typ != fileTypeManifest {
				s.trial(t, st, name, typ, off, true)
			}
			st.bytes++
			st.byKind[typ]++
		}
	}
	t.Logf("%d bytes flipped (%d in tables, %d in logs, %d in MANIFESTs), %d opens: %d refused by Open (%v), %d by paranoid Open; %d reads reported corruption, %d log records dropped, %d stores read back exactly",
		st.bytes, st.byKind[fileTypeTable], st.byKind[fileTypeLog], st.byKind[fileTypeManifest], st.trials,
		st.openRefused, st.nonParanoidOpenRefusedByKind, st.paranoidRefused, st.corruptReads, st.lostWALRecords, st.perfect)
}

func (s *corruptStore) trial(t *testing.T, st *corruptStats, name string, typ fileType, off int, paranoid bool) {
	t.Helper()
	st.trials++
	fsys := s.flipped(t, name, off)
	o := s.opts
	o.FS = fsys
	o.ParanoidChecks = paranoid
	where := fmt.Sprintf("byte %d of %s flipped (paranoid %v)", off, name, paranoid)
	d, err := Open("/db", &o)
	if err != nil {
		if !errors.Is(err, ErrCorruption) {
			t.Fatalf("%s: Open failed without ErrCorruption: %v", where, err)
		}
		if paranoid {
			st.paranoidRefused++
		} else {
			st.openRefused++
			st.nonParanoidOpenRefusedByKind[typ]++
		}
		return
	}
	defer d.Close()
	// A key may be missing only if its record in the log was dropped.
	mayMiss := func(k string) bool {
		_, inLog := s.walKeys[k]
		return inLog && typ == fileTypeLog && !paranoid
	}
	exact := true
	batchSeen := map[int][2]int{} // batch → (present, missing)
	for _, k := range s.keys {
		v, err := d.Get([]byte(k), nil)
		want, live := s.model[k]
		switch {
		case err == nil && (!live || string(v) != want):
			t.Fatalf("%s: Get(%s) = %q, want %q (live %v): a wrong value", where, k, v, want, live)
		case isNotFound(err) && live && !mayMiss(k):
			t.Fatalf("%s: Get(%s) = not found, want %q", where, k, want)
		case err != nil && !isNotFound(err):
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("%s: Get(%s) failed without ErrCorruption: %v", where, k, err)
			}
			st.corruptReads++
			exact = false
			continue
		}
		if b, ok := s.walKeys[k]; ok {
			c := batchSeen[b]
			if err == nil {
				c[0]++
			} else {
				c[1]++
				exact = false
			}
			batchSeen[b] = c
		}
	}
	for b, c := range batchSeen {
		if c[0] != 0 && c[1] != 0 {
			t.Fatalf("%s: batch %d half there: %d keys present, %d missing", where, b, c[0], c[1])
		}
		if c[1] != 0 {
			st.lostWALRecords++
		}
	}
	// Iterators: forward and backward, every key they yield right.
	for _, backward := range []bool{false, true} {
		it := d.NewIterator(nil)
		seen := 0
		ok := it.First()
		if backward {
			ok = it.Last()
		}
		for ; ok; seen++ {
			k := string(it.Key())
			if want, live := s.model[k]; !live || want != string(it.Value()) {
				t.Fatalf("%s: iterator (backward %v) yields %s = %q, want %q (live %v)", where, backward, k, it.Value(), want, live)
			}
			if backward {
				ok = it.Prev()
			} else {
				ok = it.Next()
			}
		}
		err := it.Error()
		it.Close()
		switch {
		case err != nil && !errors.Is(err, ErrCorruption):
			t.Fatalf("%s: iterator failed without ErrCorruption: %v", where, err)
		case err != nil:
			exact = false
		case seen != len(s.model):
			// Only log records may be missing, and Gets saw the same.
			missing := 0
			for k := range s.model {
				if _, err := d.Get([]byte(k), nil); isNotFound(err) {
					if !mayMiss(k) {
						t.Fatalf("%s: iterator missed %s", where, k)
					}
					missing++
				}
			}
			if seen+missing != len(s.model) {
				t.Fatalf("%s: iterator (backward %v) saw %d keys; %d live, %d dropped with the log", where, backward, seen, len(s.model), missing)
			}
		}
	}
	if paranoid && !exact {
		t.Fatalf("%s: paranoid Open accepted a store it cannot read back exactly", where)
	}
	if paranoid && typ == fileTypeTable {
		t.Fatalf("%s: paranoid Open accepted a corrupt table", where)
	}
	if exact {
		st.perfect++
	}
	if !exact && typ == fileTypeLog && !paranoid {
		// Dropped log data must be reported in the LOG.
		f, err := fsys.Open("/db/LOG")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if !strings.Contains(string(b), "dropp") {
			t.Fatalf("%s: log records were dropped, the LOG does not say so:\n%s", where, b)
		}
	}
}
