package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
)

// r15IndexEntry is one entry of a hand-written index block: its key, its
// value (a block handle), and how many bytes of the previous key it
// shares (0 for a well-formed restart point).
type r15IndexEntry struct {
	key, value []byte
	shared     int
}

// r15IndexBlock encodes entries as an index block with a restart point at
// every entry, each entry sharing e.shared bytes with the previous key
// whatever the restart array says.
func r15IndexBlock(entries []r15IndexEntry) []byte {
	var buf []byte
	var restarts []uint32
	for _, e := range entries {
		restarts = append(restarts, uint32(len(buf)))
		buf = binary.AppendUvarint(buf, uint64(e.shared))
		buf = binary.AppendUvarint(buf, uint64(len(e.key)-e.shared))
		buf = binary.AppendUvarint(buf, uint64(len(e.value)))
		buf = append(buf, e.key[e.shared:]...)
		buf = append(buf, e.value...)
	}
	for _, r := range restarts {
		buf = binary.LittleEndian.AppendUint32(buf, r)
	}
	return binary.LittleEndian.AppendUint32(buf, uint32(len(restarts)))
}

// r15IndexEntries decodes the entries of a table's index block.
func r15IndexEntries(t *testing.T, r *Reader) []r15IndexEntry {
	t.Helper()
	var it blockIter
	if err := it.init(false, r.index); err != nil {
		t.Fatal(err)
	}
	var es []r15IndexEntry
	for ok := it.First(); ok; ok = it.Next() {
		es = append(es, r15IndexEntry{key: bytes.Clone(it.Key()), value: bytes.Clone(it.Value())})
	}
	if it.Error() != nil {
		t.Fatal(it.Error())
	}
	return es
}

// r15WithIndex returns the table data with its index block replaced by
// index (stored raw, with a valid checksum) and the footer rewritten to
// point at it: a file whose every checksum is valid.
func r15WithIndex(t *testing.T, data, index []byte) []byte {
	t.Helper()
	ft, err := decodeFooter(data[len(data)-min(len(data), FooterLen):])
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.Clone(data[:ft.index.offset])
	stored := append(bytes.Clone(index), byte(NoCompression))
	stored = binary.LittleEndian.AppendUint32(stored, ft.format.checksum(stored))
	out = append(out, stored...)
	ft.index = blockHandle{offset: ft.index.offset, size: uint64(len(index))}
	return append(out, ft.encode()...)
}

// TestR15SeekIndexHostileRestartShared: a checksum-valid table whose index
// block has a restart point at every entry, but one restart entry encodes
// its key as a suffix of the previous key (shared > 0), as no writer does.
// checkIndex walks the entries in order and accepts it, and
// buildIndexWindows (which checks the restart offsets but not that a
// restart entry shares nothing) builds windows. seekIndex then decodes
// restart points the block's SeekGE never touches (or skips ones it
// does), so the two disagree: the contract is the same entry, or both off
// the end, with the same error.
func TestR15SeekIndexHostileRestartShared(t *testing.T) {
	// One key a data block; the separators share "tenant:" and, for
	// blocks 3 to 7, the 8 bytes after it, so their windows are equal.
	P := "tenant:"
	ukeys := []string{
		P + "aaaaaaaa0", P + "bbbbbbbb0", P + "cccccccc0",
		P + "dddddddd1", P + "dddddddd3", P + "dddddddd5", P + "dddddddd7", P + "dddddddd9",
	}
	var m model
	for i, u := range ukeys {
		m = append(m, kv{base.MakeInternalKey([]byte(u), uint64(10+i), base.KindSet), []byte(fmt.Sprintf("v%d", i))})
	}
	data, _ := buildTable(t, m, WriterOptions{BlockSize: 1, DisableCompression: true})
	r0 := openTable(t, data, ReaderOptions{})
	es := r15IndexEntries(t, r0)
	r0.Close()
	if len(es) != len(ukeys) {
		t.Fatalf("%d index entries, want %d", len(es), len(ukeys))
	}
	// The separators are written as each block's own key (valid: >= the
	// block's keys, < the next block's), so none is shortened.
	for i := range es {
		es[i].key = m[i].key
	}
	for _, hostile := range []int{5, 7} {
		t.Run(fmt.Sprintf("hostile=%d", hostile), func(t *testing.T) {
			hes := append([]r15IndexEntry(nil), es...)
			hes[hostile].shared = len(P) + 8 // shares "tenant:dddddddd" with the previous key
			bad := r15WithIndex(t, data, r15IndexBlock(hes))
			r, err := NewReader(bytes.NewReader(bad), int64(len(bad)), ReaderOptions{})
			if err != nil {
				// Rejecting the file is a fine answer too.
				t.Skipf("NewReader rejects the index: %v", err)
			}
			defer r.Close()
			if r.iwin.w == nil {
				return // no windows: the block's own search, nothing to compare
			}
			// Every seek: the block's SeekGE and seekIndex must agree.
			var probes [][]byte
			for _, u := range ukeys {
				for _, suffix := range []string{"", "0", "2", "4", "6", "8", "\xff"} {
					k := u[:len(u)-1] + suffix
					probes = append(probes, base.MakeSeekKey([]byte(k), base.MaxSeqNum), base.MakeSeekKey([]byte(k), 0))
				}
			}
			probes = append(probes, base.MakeSeekKey([]byte("zzz"), 1), base.MakeSeekKey([]byte(P+"dddddddd:"), 1))
			for _, s := range probes {
				checkSeekIndex(t, r, s)
			}
		})
	}
	// What that means for Get: key 4 is found by the block's search (it
	// never decodes restart point 5), and the window search reads entry 5
	// first and fails.
	hes := append([]r15IndexEntry(nil), es...)
	hes[5].shared = len(P) + 8
	bad := r15WithIndex(t, data, r15IndexBlock(hes))
	r, err := NewReader(bytes.NewReader(bad), int64(len(bad)), ReaderOptions{})
	if err != nil {
		return
	}
	defer r.Close()
	u := []byte(ukeys[4])
	v, _, ok, err := r.Get(base.MakeSeekKey(u, base.MaxSeqNum), u)
	if err != nil || !ok || string(v) != "v4" {
		// For comparison, the old lookup: the block's SeekGE.
		var idx blockIter
		idx.init(false, r.index)
		old := idx.SeekGE(base.MakeSeekKey(u, base.MaxSeqNum))
		t.Fatalf("Get(%q) on a table NewReader accepted = %q, %v, %v; the index block's own SeekGE finds entry %q (ok %v, err %v)",
			u, v, ok, err, idx.Key(), old, idx.Error())
	}
}

// r15Families are separator shapes beyond indexsearch_test.go's: keys that
// are prefixes of each other, all-0xff keys of many lengths, the empty key
// with versions spanning many blocks, keys sharing 100 bytes and
// differing after, keys differing only in their 8th/9th byte after a
// prefix, 0x00 bytes, and mixes of short and long keys.
var r15Families = map[string]func(rng *rand.Rand) []byte{
	"prefixes": func(rng *rand.Rand) []byte { return bytes.Repeat([]byte("a"), rng.Intn(40)) },
	"all-ff":   func(rng *rand.Rand) []byte { return bytes.Repeat([]byte{0xff}, rng.Intn(30)) },
	"ff-or-00": func(rng *rand.Rand) []byte {
		k := bytes.Repeat([]byte{0xff}, rng.Intn(12))
		return append(k, bytes.Repeat([]byte{0}, rng.Intn(12))...)
	},
	"empty-heavy": func(rng *rand.Rand) []byte {
		if rng.Intn(3) > 0 {
			return nil
		}
		return []byte{byte(rng.Intn(3))}
	},
	"long-shared": func(rng *rand.Rand) []byte {
		k := bytes.Repeat([]byte{'x'}, 100)
		return append(k, []byte(fmt.Sprintf("%d", rng.Intn(500)))...)
	},
	"edge-window": func(rng *rand.Rand) []byte {
		// Prefix "pp", then 8 bytes of which only the 8th (or a 9th, past
		// the window) varies.
		k := []byte("pp\x01\x01\x01\x01\x01\x01\x01\x01")
		k[9] = byte(rng.Intn(256))
		if rng.Intn(2) == 0 {
			k = append(k, byte(rng.Intn(256)))
		}
		return k
	},
	"short-long": func(rng *rand.Rand) []byte {
		n := rng.Intn(20)
		k := make([]byte, n)
		for i := range k {
			k[i] = byte('0' + rng.Intn(2))
		}
		return k
	},
}

// r15Probes returns seek keys around every entry of m: each user key at the
// extreme and middle sequence numbers, its extensions and truncations, and
// fixed odd keys.
func r15Probes(m model, rng *rand.Rand, draw func(*rand.Rand) []byte) [][]byte {
	var ps [][]byte
	seen := map[string]bool{}
	add := func(k []byte) {
		if !seen[string(k)] {
			seen[string(k)] = true
			ps = append(ps, k)
		}
	}
	for _, e := range m {
		u := base.UserKey(e.key)
		_, seq, _, _ := base.ParseInternalKey(e.key)
		add(bytes.Clone(e.key))
		for _, s := range []uint64{base.MaxSeqNum, seq + 1, seq, max(seq, 1) - 1, 0} {
			add(base.MakeSeekKey(u, s))
			add(base.MakeInternalKey(u, s, base.KindDelete))
		}
		for _, x := range [][]byte{append(bytes.Clone(u), 0), append(bytes.Clone(u), 0xff), u[:len(u)/2], u[:max(0, len(u)-1)]} {
			add(base.MakeSeekKey(x, base.MaxSeqNum))
			add(base.MakeSeekKey(x, 0))
		}
	}
	for i := 0; i < 200; i++ {
		add(base.MakeSeekKey(draw(rng), uint64(rng.Intn(1000))))
	}
	for _, u := range [][]byte{nil, {0}, {0xff}, bytes.Repeat([]byte{0xff}, 8), bytes.Repeat([]byte{0xff}, 200), []byte("pp"), []byte("pp\x01\x01\x01\x01\x01\x01\x01\xff\xff")} {
		add(base.MakeSeekKey(u, base.MaxSeqNum))
		add(base.MakeSeekKey(u, 0))
	}
	return ps
}

// r15CheckTable checks, on table r holding m, seekIndex against the
// block's SeekGE and Get, Find, and the iterator's SeekGE/SeekLT with a few
// steps each way against the model, for every probe.
func r15CheckTable(t *testing.T, r *Reader, m model, probes [][]byte) {
	t.Helper()
	it := r.NewIterator()
	defer it.Close()
	for _, s := range probes {
		checkSeekIndex(t, r, s)
		pos := m.seekGE(s)
		// Find.
		k, v, ok, err := r.Find(s)
		if err != nil {
			t.Fatalf("Find(%s): %v", base.FormatInternalKey(s), err)
		}
		if ok != (pos < len(m)) || ok && (!bytes.Equal(k, m[pos].key) || !bytes.Equal(v, m[pos].value)) {
			t.Fatalf("Find(%s) = %s, %v; model %d of %d", base.FormatInternalKey(s), base.FormatInternalKey(k), ok, pos, len(m))
		}
		// Get.
		u := base.UserKey(s)
		gv, _, found, err := r.Get(s, u)
		if err != nil {
			t.Fatalf("Get(%s): %v", base.FormatInternalKey(s), err)
		}
		wantFound := pos < len(m) && bytes.Equal(base.UserKey(m[pos].key), u)
		if found != wantFound || found && !bytes.Equal(gv, m[pos].value) {
			t.Fatalf("Get(%s) found %v, model %v", base.FormatInternalKey(s), found, wantFound)
		}
		// SeekGE and 3 Next.
		ok = it.SeekGE(s)
		for step := 0; step < 3; step++ {
			p := pos + step
			if ok != (p < len(m)) || ok && !bytes.Equal(it.Key(), m[p].key) {
				t.Fatalf("SeekGE(%s) + %d Next: %v %s, model %d of %d", base.FormatInternalKey(s), step, ok, base.FormatInternalKey(it.Key()), p, len(m))
			}
			if !ok {
				break
			}
			ok = it.Next()
		}
		// SeekLT and 3 Prev, across blocks.
		ok = it.SeekLT(s)
		for step := 0; step < 3; step++ {
			p := pos - 1 - step
			if ok != (p >= 0) || ok && !bytes.Equal(it.Key(), m[p].key) {
				t.Fatalf("SeekLT(%s) + %d Prev: %v %s, model %d", base.FormatInternalKey(s), step, ok, base.FormatInternalKey(it.Key()), p)
			}
			if !ok {
				break
			}
			ok = it.Prev()
		}
		if it.Error() != nil {
			t.Fatal(it.Error())
		}
	}
}

// TestR15SeekIndexShapes builds tables of r15Families in both formats and
// several block sizes (one-block tables included) and checks every read
// that goes through seekIndex against the block's search and the model.
func TestR15SeekIndexShapes(t *testing.T) {
	for name, draw := range r15Families {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(len(name)) * 7))
			for _, n := range []int{1, 2, 3, 40, 600} {
				seen := map[string]bool{}
				var m model
				for tries := 0; len(m) < n && tries < 50*n; tries++ {
					ik := base.MakeInternalKey(draw(rng), uint64(rng.Intn(1000)), base.KindSet)
					if rng.Intn(6) == 0 {
						ik = base.MakeInternalKey(base.UserKey(ik), uint64(rng.Intn(1000)), base.KindDelete)
					}
					if !seen[string(ik)] {
						seen[string(ik)] = true
						m = append(m, kv{ik, randomValue(rng, 8)})
					}
				}
				sortModel(m)
				probes := r15Probes(m, rng, draw)
				for _, o := range []WriterOptions{
					{BlockSize: 1}, {BlockSize: 48}, {BlockSize: 200, BlockRestartInterval: 1},
					{BlockSize: 1, Format: FormatLevelDB}, {BlockSize: 64, Format: FormatLevelDB, FilterPolicy: ldbPolicy},
					{BlockSize: 4096},
				} {
					data, props := buildTable(t, m, o)
					r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{ldbPolicy}})
					if r.iwin.w == nil {
						t.Fatalf("n=%d %+v: no windows", n, o)
					}
					if len(r.iwin.w) != int(props.NumDataBlocks) && o.Format == FormatBloomKV {
						t.Fatalf("n=%d: %d windows for %d blocks", n, len(r.iwin.w), props.NumDataBlocks)
					}
					r15CheckTable(t, r, m, probes)
					r.Close()
				}
			}
		})
	}
}

// TestR15SeekIndexLevelDBFixtures checks seekIndex against the block's
// search, and the reads against the table's own scan, on the tables
// LevelDB wrote (testdata/leveldb).
func TestR15SeekIndexLevelDBFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "leveldb", "*.ldb"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, p := range paths {
		data, m := readLevelDBFixture(t, p)
		r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{ldbPolicy}})
		if r.iwin.w == nil {
			t.Fatalf("%s: no windows", p)
		}
		rng := rand.New(rand.NewSource(3))
		var sub model
		for i, e := range m {
			if i%7 == 0 || i == len(m)-1 {
				sub = append(sub, e)
			}
		}
		probes := r15Probes(sub, rng, func(rng *rand.Rand) []byte { return randomUserKey(rng, 20) })
		// The index's own separators, and their neighbours.
		for _, e := range r15IndexEntries(t, r) {
			u := base.UserKey(e.key)
			probes = append(probes, e.key, base.MakeSeekKey(u, 0), base.MakeSeekKey(append(bytes.Clone(u), 0), base.MaxSeqNum))
		}
		r15CheckTable(t, r, m, probes)
		r.Close()
	}
}

// TestR15SeekIndexHandCrafted: valid index blocks written by hand with
// separators no writer emits but a file may hold (checksums valid,
// NewReader accepts): a last separator that is a bare successor while the
// others share a prefix of more than 8 bytes, separators that are
// prefixes of each other, versions of one user key in several entries,
// and windows of all 0xff bytes, checked against the block's search.
func TestR15SeekIndexHandCrafted(t *testing.T) {
	// A table of enough blocks to re-point separators at.
	var m model
	for i := 0; i < 12; i++ {
		m = append(m, kv{base.MakeInternalKey([]byte(fmt.Sprintf("k%02d", i)), 1, base.KindSet), []byte("v")})
	}
	data, _ := buildTable(t, m, WriterOptions{BlockSize: 1, DisableCompression: true})
	r0 := openTable(t, data, ReaderOptions{})
	es := r15IndexEntries(t, r0)
	r0.Close()
	ff := func(n int) string { return string(bytes.Repeat([]byte{0xff}, n)) }
	sets := map[string][]string{
		"long-prefix-successor": {"prefix-longer-than-8:a", "prefix-longer-than-8:b", "prefix-longer-than-8:b\x00", "prefix-longer-than-8:c", "prefix-longer-than-8:d", "prefix-longer-than-8:e", "prefix-longer-than-8:f", "prefix-longer-than-8:g", "prefix-longer-than-8:h", "prefix-longer-than-8:i", "prefix-longer-than-8:j", "q"},
		"nested-prefixes":       {"", "a", "aa", "aaa", "aaaa", "aaaaa", "aaaaaa", "aaaaaaa", "aaaaaaaa", "aaaaaaaaa", "aaaaaaaaaa", "b"},
		"all-ff":                {"p" + ff(1), "p" + ff(2), "p" + ff(7), "p" + ff(8), "p" + ff(8) + "\x00", "p" + ff(9), "p" + ff(10), "p" + ff(16), "p" + ff(17), "p" + ff(30), "p" + ff(31), ff(40)},
		"all-ff-last-prefixed":  {"p" + ff(1), "p" + ff(2), "p" + ff(7), "p" + ff(8), "p" + ff(8) + "\x00", "p" + ff(9), "p" + ff(10), "p" + ff(16), "p" + ff(17), "p" + ff(30), "p" + ff(31), "p" + ff(40)},
		"short-successor":       {"0000000000000001", "0000000000000002", "0000000000000003", "0000000000000004", "0000000000000005", "0000000000000006", "0000000000000007", "0000000000000008", "0000000000000009", "000000000000001", "0000000000000010", "1"},
		"zeros":                 {"z", "z\x00", "z\x00\x00", "z\x00\x00\x00\x00\x00\x00\x00", "z\x00\x00\x00\x00\x00\x00\x00\x00", "z\x00\x00\x00\x00\x00\x00\x00\x00\x00", "z\x00\x01", "z\x01", "z\x01\x00", "z\x02", "z\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01", "z\x03"},
	}
	// Versions of one user key: the same key at falling sequence numbers.
	var versions []r15IndexEntry
	for i := range es {
		seq := uint64(200 - 10*i)
		u := "same-user-key"
		if i >= 8 {
			u = "same-user-key\x00"
		}
		versions = append(versions, r15IndexEntry{key: base.MakeInternalKey([]byte(u), seq, base.KindSet), value: es[i].value})
	}
	run := func(t *testing.T, hes []r15IndexEntry) {
		bad := r15WithIndex(t, data, r15IndexBlock(hes))
		r, err := NewReader(bytes.NewReader(bad), int64(len(bad)), ReaderOptions{})
		if err != nil {
			t.Fatalf("NewReader: %v", err)
		}
		defer r.Close()
		if r.iwin.w == nil {
			t.Fatal("no windows")
		}
		var probes [][]byte
		for _, e := range hes {
			u := base.UserKey(e.key)
			for _, x := range [][]byte{u, append(bytes.Clone(u), 0), append(bytes.Clone(u), 0xff), u[:len(u)/2], u[:max(0, len(u)-1)], append(append(bytes.Clone(u), 0xff), bytes.Repeat([]byte{0xff}, 9)...)} {
				for _, s := range []uint64{base.MaxSeqNum, 195, 155, 150, 145, 95, 1, 0} {
					probes = append(probes, base.MakeSeekKey(x, s))
				}
			}
		}
		for _, s := range probes {
			checkSeekIndex(t, r, s)
		}
	}
	for name, keys := range sets {
		t.Run(name, func(t *testing.T) {
			hes := make([]r15IndexEntry, len(es))
			for i := range es {
				hes[i] = r15IndexEntry{key: base.MakeInternalKey([]byte(keys[i]), 5, base.KindSet), value: es[i].value}
			}
			run(t, hes)
		})
	}
	t.Run("versions", func(t *testing.T) { run(t, versions) })
}

// TestR15SeekIndexMalformedSeek: seek keys shorter than a trailer (a
// malformed internal key) go through the block's search and agree with
// it, through every entry point.
func TestR15SeekIndexMalformedSeek(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	m := randomModel(rng, 300, 10, 10)
	data, _ := buildTable(t, m, WriterOptions{BlockSize: 64})
	r := openTable(t, data, ReaderOptions{})
	defer r.Close()
	for _, s := range [][]byte{nil, {}, {0}, []byte("a"), []byte("abcdefg"), {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
		checkSeekIndex(t, r, s)
		k, _, ok, err := r.Find(s)
		pos := m.seekGE(s)
		if err != nil || ok != (pos < len(m)) || ok && !bytes.Equal(k, m[pos].key) {
			t.Fatalf("Find(%q) = %q %v %v, model %d", s, k, ok, err, pos)
		}
	}
	if _, _, _, err := r.Find([]byte("x")); err != nil && !errors.Is(err, base.ErrCorruption) {
		t.Fatal(err)
	}
}
