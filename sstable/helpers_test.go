package sstable

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
)

// kv is one table entry of a test model.
type kv struct {
	key, value []byte
}

// model is a sorted list of entries: what a table should hold.
type model []kv

// seekGE returns the index of the first entry >= ikey (len(m) if none).
func (m model) seekGE(ikey []byte) int {
	return sort.Search(len(m), func(i int) bool { return base.CompareInternal(m[i].key, ikey) >= 0 })
}

// randomUserKey draws from a small alphabet so keys share prefixes, repeat,
// and include empty keys, zero bytes and 0xff bytes.
func randomUserKey(rng *rand.Rand, maxLen int) []byte {
	alphabet := []byte{0x00, 0x01, 'a', 'b', 'c', 'm', 'z', 0xfe, 0xff}
	n := rng.Intn(maxLen + 1)
	k := make([]byte, n)
	for i := range k {
		k[i] = alphabet[rng.Intn(len(alphabet))]
	}
	return k
}

func randomValue(rng *rand.Rand, maxLen int) []byte {
	n := rng.Intn(maxLen + 1)
	v := make([]byte, n)
	if rng.Intn(2) == 0 {
		rng.Read(v) // incompressible
	} else {
		for i := range v {
			v[i] = byte('a' + rng.Intn(3)) // compressible
		}
	}
	return v
}

// randomModel returns n distinct entries in internal-key order, with both
// kinds and several versions of many user keys.
func randomModel(rng *rand.Rand, n, maxKeyLen, maxValueLen int) model {
	seen := make(map[string]bool, n)
	m := make(model, 0, n)
	for len(m) < n {
		var ukey []byte
		if len(m) > 0 && rng.Intn(4) == 0 {
			ukey = base.UserKey(m[rng.Intn(len(m))].key) // another version
		} else if rng.Intn(3) == 0 {
			ukey = []byte(fmt.Sprintf("key%08d", rng.Intn(10*n)))
		} else {
			ukey = randomUserKey(rng, maxKeyLen)
		}
		kind := base.KindSet
		if rng.Intn(5) == 0 {
			kind = base.KindDelete
		}
		ik := base.MakeInternalKey(ukey, uint64(rng.Intn(1000)), kind)
		if seen[string(ik)] {
			continue
		}
		seen[string(ik)] = true
		var v []byte
		if kind == base.KindSet {
			v = randomValue(rng, maxValueLen)
		}
		m = append(m, kv{ik, v})
	}
	sort.Slice(m, func(i, j int) bool { return base.CompareInternal(m[i].key, m[j].key) < 0 })
	return m
}

// buildTable writes m into a table and returns its bytes and properties.
func buildTable(t testing.TB, m model, o WriterOptions) ([]byte, *Properties) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, o)
	for _, e := range m {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatalf("Add(%s): %v", base.FormatInternalKey(e.key), err)
		}
	}
	props, err := w.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if uint64(buf.Len()) != w.EstimatedSize() {
		t.Fatalf("EstimatedSize()=%d after Finish, file is %d bytes", w.EstimatedSize(), buf.Len())
	}
	return buf.Bytes(), props
}

func openTable(t testing.TB, data []byte, o ReaderOptions) *Reader {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), o)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	return r
}

// countingReaderAt counts ReadAt calls and bytes, and fails reads past the
// data (like a file) instead of panicking.
type countingReaderAt struct {
	data  []byte
	calls atomic.Int64
	bytes atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.calls.Add(1)
	c.bytes.Add(int64(len(p)))
	if off < 0 || off > int64(len(c.data)) {
		return 0, io.EOF
	}
	n := copy(p, c.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// bloom10 is the filter policy the tests write with.
var bloom10 = filter.NewBloomPolicy(10)
