package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/cache"
	"github.com/google/go-cmp/cmp"
)

// checkTable compares everything a Reader exposes with the model.
func checkTable(t *testing.T, r *Reader, m model, rng *rand.Rand, probes int) {
	t.Helper()
	// Full forward and backward scans.
	it := r.NewIterator()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(m) {
			t.Fatalf("forward scan: extra entry %s", base.FormatInternalKey(it.Key()))
		}
		if !bytes.Equal(it.Key(), m[i].key) || !bytes.Equal(it.Value(), m[i].value) {
			t.Fatalf("forward scan %d: got %s, want %s", i, base.FormatInternalKey(it.Key()), base.FormatInternalKey(m[i].key))
		}
		i++
	}
	if err := it.Error(); err != nil || i != len(m) {
		t.Fatalf("forward scan: %d of %d entries, err %v", i, len(m), err)
	}
	i = len(m) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		if i < 0 || !bytes.Equal(it.Key(), m[i].key) || !bytes.Equal(it.Value(), m[i].value) {
			t.Fatalf("backward scan at %d: got %s", i, base.FormatInternalKey(it.Key()))
		}
		i--
	}
	if err := it.Error(); err != nil || i != -1 {
		t.Fatalf("backward scan stopped at %d, err %v", i, err)
	}

	// Probes: existing keys, other versions of existing user keys, and keys
	// between and outside.
	probe := func() []byte {
		switch x := rng.Intn(4); {
		case x == 0 && len(m) > 0:
			return m[rng.Intn(len(m))].key
		case x == 1 && len(m) > 0:
			return base.MakeSeekKey(base.UserKey(m[rng.Intn(len(m))].key), uint64(rng.Intn(1100)))
		case x == 2 && len(m) > 0:
			u := append(bytes.Clone(base.UserKey(m[rng.Intn(len(m))].key)), byte(rng.Intn(256)))
			return base.MakeInternalKey(u, uint64(rng.Intn(1100)), base.Kind(rng.Intn(2)))
		default:
			return base.MakeInternalKey(randomUserKey(rng, 6), uint64(rng.Intn(1100)), base.Kind(rng.Intn(2)))
		}
	}
	for p := 0; p < probes; p++ {
		ik := probe()
		j := m.seekGE(ik)

		k, v, ok, err := r.Find(ik)
		if err != nil {
			t.Fatalf("Find(%s): %v", base.FormatInternalKey(ik), err)
		}
		if ok != (j < len(m)) || (ok && (!bytes.Equal(k, m[j].key) || !bytes.Equal(v, m[j].value))) {
			t.Fatalf("Find(%s) = %s %v, want index %d of %d", base.FormatInternalKey(ik), base.FormatInternalKey(k), ok, j, len(m))
		}
		// Get: the same entry, when its user key is the probe's.
		uk := base.UserKey(ik)
		gv, gkind, found, err := r.Get(ik, uk)
		if err != nil {
			t.Fatalf("Get(%s): %v", base.FormatInternalKey(ik), err)
		}
		wantFound := j < len(m) && bytes.Equal(base.UserKey(m[j].key), uk)
		if found != wantFound {
			t.Fatalf("Get(%s) found=%v, want %v", base.FormatInternalKey(ik), found, wantFound)
		}
		if found {
			_, _, wkind, _ := base.ParseInternalKey(m[j].key)
			if gkind != wkind || !bytes.Equal(gv, m[j].value) {
				t.Fatalf("Get(%s) = %v %q, want %v %q", base.FormatInternalKey(ik), gkind, gv, wkind, m[j].value)
			}
		}

		// SeekGE then a few steps in either direction.
		ok = it.SeekGE(ik)
		checkAt(t, it, ok, m, j, "SeekGE")
		for s, pos := 0, j; s < 3 && pos < len(m); s++ {
			if rng.Intn(2) == 0 {
				pos++
				checkAt(t, it, it.Next(), m, pos, "SeekGE+Next")
			} else {
				pos--
				checkAt(t, it, it.Prev(), m, pos, "SeekGE+Prev")
			}
			if pos < 0 || pos >= len(m) {
				break
			}
		}
		// SeekLT.
		j--
		ok = it.SeekLT(ik)
		checkAt(t, it, ok, m, j, "SeekLT")
		if j >= 0 {
			checkAt(t, it, it.Prev(), m, j-1, "SeekLT+Prev")
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkAt checks that the iterator is at model index pos (invalid when pos
// is outside the model).
func checkAt(t *testing.T, it *Iterator, ok bool, m model, pos int, what string) {
	t.Helper()
	if err := it.Error(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	want := pos >= 0 && pos < len(m)
	if ok != want || it.Valid() != want {
		t.Fatalf("%s: ok=%v Valid=%v, want %v (pos %d of %d)", what, ok, it.Valid(), want, pos, len(m))
	}
	if want && (!bytes.Equal(it.Key(), m[pos].key) || !bytes.Equal(it.Value(), m[pos].value)) {
		t.Fatalf("%s: at %s, want %s", what, base.FormatInternalKey(it.Key()), base.FormatInternalKey(m[pos].key))
	}
}

func TestRoundTrip(t *testing.T) {
	type tc struct {
		n, blockSize, restart int
		noCompress            bool
		filter                bool
	}
	var cases []tc
	for _, n := range []int{0, 1, 2, 17, 300, 3000} {
		for _, bs := range []int{1, 64, 4096} {
			for _, nc := range []bool{false, true} {
				cases = append(cases, tc{n, bs, 0, nc, n%2 == 0})
			}
		}
	}
	cases = append(cases,
		tc{3000, 4096, 1, false, true},
		tc{3000, 4096, 3, true, false},
		tc{100000, 4096, 0, false, true},
		tc{20000, 32 << 10, 0, true, true},
	)
	for _, c := range cases {
		name := fmt.Sprintf("n=%d/bs=%d/ri=%d/nocomp=%v/filter=%v", c.n, c.blockSize, c.restart, c.noCompress, c.filter)
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(c.n*31 + c.blockSize)))
			m := randomModel(rng, c.n, 10, 200)
			wo := WriterOptions{BlockSize: c.blockSize, BlockRestartInterval: c.restart, DisableCompression: c.noCompress}
			if c.filter {
				wo.FilterPolicy = bloom10
			}
			data, props := buildTable(t, m, wo)
			var ca *cache.Cache
			if c.n > 10000 {
				ca = cache.New(64 << 20)
			}
			r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{bloom10}, Cache: ca})
			defer r.Close()
			if diff := cmp.Diff(props, r.Properties()); diff != "" {
				t.Fatalf("reader properties differ from writer's (-w +r):\n%s", diff)
			}
			checkProperties(t, props, m, wo, len(data))
			probes := min(3*len(m)+20, 3000)
			checkTable(t, r, m, rng, probes)
			if err := r.VerifyChecksums(); err != nil {
				t.Fatalf("VerifyChecksums: %v", err)
			}
			if c.filter {
				for _, e := range m {
					if !r.MayContain(base.UserKey(e.key)) {
						t.Fatalf("MayContain(%q) = false for a key in the table", base.UserKey(e.key))
					}
				}
			}
		})
	}
}

func checkProperties(t *testing.T, p *Properties, m model, wo WriterOptions, fileSize int) {
	t.Helper()
	var dels, rk, rv uint64
	for _, e := range m {
		if _, _, k, _ := base.ParseInternalKey(e.key); k == base.KindDelete {
			dels++
		}
		rk += uint64(len(e.key))
		rv += uint64(len(e.value))
	}
	if p.NumEntries != uint64(len(m)) || p.NumDeletions != dels || p.RawKeySize != rk || p.RawValueSize != rv {
		t.Fatalf("properties %+v: want %d entries, %d deletions, raw %d/%d", p, len(m), dels, rk, rv)
	}
	if len(m) > 0 && (!bytes.Equal(p.Smallest, m[0].key) || !bytes.Equal(p.Largest, m[len(m)-1].key)) {
		t.Fatalf("smallest/largest %s %s", base.FormatInternalKey(p.Smallest), base.FormatInternalKey(p.Largest))
	}
	if len(m) == 0 && (p.Smallest != nil || p.Largest != nil || p.NumDataBlocks != 0) {
		t.Fatalf("empty table properties %+v", p)
	}
	if p.FormatVersion != FormatVersion {
		t.Fatalf("format version %d", p.FormatVersion)
	}
	wantComp := "snappy"
	if wo.DisableCompression {
		wantComp = "none"
	}
	if p.Compression != wantComp {
		t.Fatalf("compression %q, want %q", p.Compression, wantComp)
	}
	if wo.FilterPolicy != nil {
		if p.FilterPolicy != wo.FilterPolicy.Name() || p.FilterSize == 0 {
			t.Fatalf("filter %q size %d", p.FilterPolicy, p.FilterSize)
		}
		if len(m) > 0 {
			want := float64(p.FilterSize) * 8 / float64(len(m))
			if d := p.FilterBitsPerKey - want; d > 1e-4 || d < -1e-4 {
				t.Fatalf("FilterBitsPerKey %v, want %v", p.FilterBitsPerKey, want)
			}
		}
	} else if p.FilterPolicy != "" || p.FilterSize != 0 {
		t.Fatalf("filter %q size %d without a policy", p.FilterPolicy, p.FilterSize)
	}
	// IndexSize is the index's decoded size; stored, it may be compressed.
	if p.DataSize+p.FilterSize+FooterLen > uint64(fileSize) || p.IndexSize > 2*uint64(fileSize) {
		t.Fatalf("sizes %d+%d+%d exceed file %d", p.DataSize, p.IndexSize, p.FilterSize, fileSize)
	}
}

func TestBigValues(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	big := make([]byte, 16<<20)
	rng.Read(big[:1<<20]) // mostly compressible, partly not
	m := model{
		{base.MakeInternalKey([]byte("a"), 3, base.KindSet), []byte("small")},
		{base.MakeInternalKey([]byte("b"), 2, base.KindSet), big},
		{base.MakeInternalKey([]byte("c"), 1, base.KindSet), big[:5<<20]},
		{base.MakeInternalKey([]byte("d"), 1, base.KindSet), []byte("tail")},
	}
	for _, nc := range []bool{false, true} {
		data, props := buildTable(t, m, WriterOptions{DisableCompression: nc})
		if props.NumDataBlocks != 3 {
			t.Fatalf("%d data blocks, want 3 (the big values get blocks of their own)", props.NumDataBlocks)
		}
		r := openTable(t, data, ReaderOptions{Cache: cache.New(64 << 20)})
		checkTable(t, r, m, rng, 10)
		r.Close()
	}
}

func TestFilter(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	m := randomModel(rng, 5000, 12, 10)
	data, props := buildTable(t, m, WriterOptions{FilterPolicy: bloom10})
	present := make(map[string]bool)
	for _, e := range m {
		present[string(base.UserKey(e.key))] = true
	}

	r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{filter.NewLevelDBBloomPolicy(10), bloom10}})
	if !r.HasFilter() || r.FilterPolicyName() != bloom10.Name() || r.FilterBytes() != int(props.FilterSize) || r.FilterBytes() == 0 {
		t.Fatalf("HasFilter %v name %q bytes %d", r.HasFilter(), r.FilterPolicyName(), r.FilterBytes())
	}
	// The index block and its search windows, 8 bytes a data block.
	if want := int(props.IndexSize) + len(r.iwin.prefix) + 8*int(props.NumDataBlocks); r.IndexBytes() != want || props.IndexSize == 0 {
		t.Fatalf("IndexBytes %d, IndexSize %d, %d data blocks", r.IndexBytes(), props.IndexSize, props.NumDataBlocks)
	}
	for k := range present {
		if !r.MayContain([]byte(k)) {
			t.Fatalf("MayContain(%q) = false for a key in the table", k)
		}
	}
	// The filter is over user keys: absent keys are mostly rejected.
	var fp, n int
	for i := 0; i < 20000; i++ {
		k := fmt.Sprintf("absent-%d", i)
		if present[k] {
			continue
		}
		n++
		if r.MayContain([]byte(k)) {
			fp++
		}
	}
	if rate := float64(fp) / float64(n); rate > 0.03 {
		t.Fatalf("false-positive rate %.4f for absent keys", rate)
	}

	// A reader that does not know the policy's name uses no filter.
	for _, fs := range [][]filter.Policy{nil, {filter.NewLevelDBBloomPolicy(10)}, {filter.None, nil}} {
		r := openTable(t, data, ReaderOptions{Filters: fs})
		if r.HasFilter() || r.FilterPolicyName() != "" || r.FilterBytes() != 0 {
			t.Fatalf("filters %v: HasFilter %v", fs, r.HasFilter())
		}
		for i := 0; i < 100; i++ {
			if !r.MayContain([]byte(fmt.Sprintf("absent-%d", i))) {
				t.Fatal("MayContain false without a usable filter")
			}
		}
		if r.Properties().FilterPolicy != bloom10.Name() {
			t.Fatal("properties lost the filter name")
		}
	}

	// filter.None and nil write no filter block.
	for _, p := range []filter.Policy{nil, filter.None} {
		data, props := buildTable(t, m[:10], WriterOptions{FilterPolicy: p})
		r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{bloom10, filter.None}})
		if r.HasFilter() || props.FilterPolicy != "" || props.FilterSize != 0 {
			t.Fatalf("policy %v: table has a filter", p)
		}
	}
}

func TestReadStatsAndCache(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	m := randomModel(rng, 2000, 8, 50)
	data, props := buildTable(t, m, WriterOptions{FilterPolicy: bloom10})
	if props.NumDataBlocks < 5 {
		t.Fatalf("only %d data blocks", props.NumDataBlocks)
	}
	target := m[len(m)/2].key

	// No cache: one Find reads exactly one data block with one ReadAt.
	f := &countingReaderAt{data: data}
	var st ReadStats
	r, err := NewReader(f, int64(len(data)), ReaderOptions{Stats: &st, Filters: []filter.Policy{bloom10}})
	if err != nil {
		t.Fatal(err)
	}
	calls0 := f.calls.Load()
	bytes0 := f.bytes.Load()
	if _, _, ok, err := r.Find(target); !ok || err != nil {
		t.Fatalf("Find: %v %v", ok, err)
	}
	if got := f.calls.Load() - calls0; got != 1 {
		t.Fatalf("Find made %d ReadAt calls, want 1", got)
	}
	if st.DataBlocksRead.Load() != 1 || st.DataBlockBytesRead.Load() != f.bytes.Load()-bytes0 {
		t.Fatalf("stats: %d blocks %d bytes; file bytes %d", st.DataBlocksRead.Load(), st.DataBlockBytesRead.Load(), f.bytes.Load()-bytes0)
	}
	if st.CacheHits.Load() != 0 || st.CacheMisses.Load() != 0 {
		t.Fatal("cache counted without a cache")
	}
	// MayContain reads nothing.
	r.MayContain([]byte("x"))
	r.MayContain(base.UserKey(target))
	if f.calls.Load()-calls0 != 1 {
		t.Fatal("MayContain read the file")
	}

	// With a cache: the second Find of the same block is a hit.
	c := cache.New(1 << 20)
	var st2 ReadStats
	f2 := &countingReaderAt{data: data}
	r2, err := NewReader(f2, int64(len(data)), ReaderOptions{Cache: c, FileID: 7, Stats: &st2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if k, _, ok, err := r2.Find(target); !ok || err != nil || !bytes.Equal(k, target) {
			t.Fatalf("Find %d: %v %v", i, ok, err)
		}
	}
	if st2.DataBlocksRead.Load() != 1 || st2.CacheHits.Load() != 1 || st2.CacheMisses.Load() != 1 {
		t.Fatalf("stats: read %d hits %d misses %d", st2.DataBlocksRead.Load(), st2.CacheHits.Load(), st2.CacheMisses.Load())
	}
	// A scan reads each block once, then from the cache.
	readBefore := st2.DataBlocksRead.Load()
	it := r2.NewIterator()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != len(m) {
		t.Fatalf("scan: %d entries, %v", n, err)
	}
	if got := st2.DataBlocksRead.Load() - readBefore; got != int64(props.NumDataBlocks)-1 {
		t.Fatalf("scan read %d blocks, want %d", got, props.NumDataBlocks-1)
	}
	c.EvictFile(7)
	if c.Size() != 0 {
		t.Fatal("EvictFile left blocks")
	}

	// Returned slices survive later Finds and cache churn.
	small := cache.New(8 << 10)
	r3 := openTable(t, data, ReaderOptions{Cache: small, FileID: 1})
	k0, v0, _, _ := r3.Find(m[0].key)
	for _, e := range m {
		r3.Find(e.key)
	}
	if !bytes.Equal(k0, m[0].key) || !bytes.Equal(v0, m[0].value) {
		t.Fatal("slices returned by Find changed after later calls")
	}
}

func TestWriterErrors(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	k := func(u string, seq uint64) []byte { return base.MakeInternalKey([]byte(u), seq, base.KindSet) }
	if err := w.Add([]byte("short"), nil); err == nil {
		t.Fatal("malformed key accepted")
	}
	if err := w.Add(base.MakeInternalKey([]byte("k"), 1, base.Kind(9)), nil); err == nil {
		t.Fatal("unknown kind accepted")
	}
	if err := w.Add(k("b", 5), nil); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{k("b", 5), k("b", 6), k("a", 1)} {
		if err := w.Add(bad, nil); err == nil {
			t.Fatalf("out-of-order key %s accepted", base.FormatInternalKey(bad))
		}
	}
	if err := w.Add(k("b", 4), nil); err != nil {
		t.Fatal(err)
	}
	if w.NumEntries() != 2 {
		t.Fatalf("NumEntries %d", w.NumEntries())
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err == nil {
		t.Fatal("second Finish accepted")
	}
	if err := w.Add(k("c", 1), nil); err == nil {
		t.Fatal("Add after Finish accepted")
	}

	// Write errors are returned and sticky.
	fw := &failWriter{after: 100}
	w = NewWriter(fw, WriterOptions{BlockSize: 64})
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		err = w.Add(k(fmt.Sprintf("%05d", i), 1), []byte("value"))
	}
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Add error %v", err)
	}
	if _, err := w.Finish(); !errors.Is(err, errDiskFull) {
		t.Fatalf("Finish error %v", err)
	}
}

var errDiskFull = errors.New("disk full")

type failWriter struct{ n, after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n+len(p) > f.after {
		return 0, errDiskFull
	}
	f.n += len(p)
	return len(p), nil
}

func TestSeparators(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for i := 0; i < 20000; i++ {
		a := base.MakeInternalKey(randomUserKey(rng, 5), uint64(rng.Intn(5)), base.Kind(rng.Intn(2)))
		b := base.MakeInternalKey(randomUserKey(rng, 5), uint64(rng.Intn(5)), base.Kind(rng.Intn(2)))
		c := base.CompareInternal(a, b)
		if c == 0 {
			continue
		}
		if c > 0 {
			a, b = b, a
		}
		s := appendSeparator(nil, a, b)
		if base.CompareInternal(a, s) > 0 || base.CompareInternal(s, b) >= 0 {
			t.Fatalf("separator(%s, %s) = %s", base.FormatInternalKey(a), base.FormatInternalKey(b), base.FormatInternalKey(s))
		}
		if len(s) > len(a) {
			t.Fatalf("separator %q longer than %q", s, a)
		}
		if _, _, _, ok := base.ParseInternalKey(s); !ok {
			t.Fatalf("separator %q is not an internal key", s)
		}
		s = appendSuccessor(nil, a)
		if base.CompareInternal(a, s) > 0 || len(s) > len(a) {
			t.Fatalf("successor(%s) = %s", base.FormatInternalKey(a), base.FormatInternalKey(s))
		}
	}
	for _, tc := range []struct{ a, b, want string }{
		{"abc", "abz", "abd"},
		{"abc", "abd", "abc"}, // can't increment below b: the key itself
		{"ab", "abc", "ab"},
		{"a\xff", "b", "a\xff"},
		{"", "b", ""},
	} {
		s := appendSeparator(nil, base.MakeInternalKey([]byte(tc.a), 5, base.KindSet), base.MakeInternalKey([]byte(tc.b), 5, base.KindSet))
		if got := string(base.UserKey(s)); got != tc.want {
			t.Errorf("separator(%q, %q) user key %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestReaderClosed(t *testing.T) {
	m := randomModel(rand.New(rand.NewSource(1)), 10, 4, 4)
	data, _ := buildTable(t, m, WriterOptions{})
	r := openTable(t, data, ReaderOptions{})
	it := r.NewIterator()
	if !it.First() {
		t.Fatal(it.Error())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if it.First() || it.SeekGE(m[0].key) || it.Valid() {
		t.Fatal("closed iterator moved")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.Find(m[0].key); err == nil {
		t.Fatal("Find on a closed reader")
	}
	if r.NewIterator().First() {
		t.Fatal("iterator of a closed reader moved")
	}
}

func TestPropertiesString(t *testing.T) {
	m := randomModel(rand.New(rand.NewSource(1)), 10, 4, 4)
	_, p := buildTable(t, m, WriterOptions{FilterPolicy: bloom10})
	s := p.String()
	for _, want := range []string{"entries: 10", bloom10.Name(), "snappy"} {
		if !strings.Contains(s, want) {
			t.Fatalf("String() lacks %q:\n%s", want, s)
		}
	}
}

func TestConcurrentReads(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	m := randomModel(rng, 5000, 8, 30)
	data, _ := buildTable(t, m, WriterOptions{FilterPolicy: bloom10})
	var st ReadStats
	r := openTable(t, data, ReaderOptions{Filters: []filter.Policy{bloom10}, Cache: cache.New(32 << 10), FileID: 3, Stats: &st})
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func(g int) {
			rng := rand.New(rand.NewSource(int64(g)))
			it := r.NewIterator()
			for i := 0; i < 2000; i++ {
				e := m[rng.Intn(len(m))]
				k, v, ok, err := r.Find(e.key)
				if err != nil || !ok || !bytes.Equal(k, e.key) || !bytes.Equal(v, e.value) {
					done <- fmt.Errorf("Find(%s): %v %v", base.FormatInternalKey(e.key), ok, err)
					return
				}
				if !r.MayContain(base.UserKey(e.key)) {
					done <- fmt.Errorf("MayContain false")
					return
				}
				if !it.SeekGE(e.key) || !bytes.Equal(it.Key(), e.key) {
					done <- fmt.Errorf("SeekGE(%s): %v", base.FormatInternalKey(e.key), it.Error())
					return
				}
			}
			done <- it.Close()
		}(g)
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if st.CacheHits.Load()+st.CacheMisses.Load() < 16000 || st.DataBlocksRead.Load() != st.CacheMisses.Load() {
		t.Fatalf("stats: hits %d misses %d reads %d", st.CacheHits.Load(), st.CacheMisses.Load(), st.DataBlocksRead.Load())
	}
}
