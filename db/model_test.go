package db

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

var modelOps = flag.Int("model_ops", 4000, "operations per randomized model test run")

// model is the reference: a plain map.
type model map[string]string

func (m model) clone() model {
	c := make(model, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (m model) sortedKeys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

type modelSnap struct {
	s *Snapshot
	m model
}

// TestRandomizedAgainstModel runs mixed operations against a DB and a map
// and requires identical answers: puts, deletes, batches, gets (latest and
// at snapshots), iterators in both directions with seeks, flushes,
// close/reopen and checkpoints (opened and compared with the model), with
// small write buffers so tables pile up.
func TestRandomizedAgainstModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"bloom", Options{WriteBufferSize: 8 << 10, BlockSize: 256}},
		{"leveldb-bloom-nocache", Options{WriteBufferSize: 16 << 10, FilterPolicy: filter.NewLevelDBBloomPolicy(10), DisableBlockCache: true}},
		{"no-filter-uncompressed", Options{WriteBufferSize: 4 << 10, FilterPolicy: filter.None, DisableCompression: true, BlockSize: 1 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := int64(1); seed <= 2; seed++ {
				runModel(t, seed, tc.opts, *modelOps)
			}
		})
	}
}

// deleteRange removes the keys in [lo, hi) (none when lo >= hi).
func (m model) deleteRange(lo, hi string) {
	for k := range m {
		if lo <= k && k < hi {
			delete(m, k)
		}
	}
}

// randRange returns lo <= hi spanning a few of randKey's keys; lo == hi
// now and then.
func randRange(rng *rand.Rand) (lo, hi string) {
	lo = randKey(rng)
	switch rng.Intn(8) {
	case 0:
		return lo, lo
	case 1:
		return lo, lo + "\x00" // exactly lo
	}
	n := 0
	fmt.Sscanf(lo, "k%03d", &n)
	hi = fmt.Sprintf("k%03d", n+1+rng.Intn(25))
	if hi < lo {
		lo, hi = hi, lo
	}
	return lo, hi
}

func randKey(rng *rand.Rand) string {
	switch rng.Intn(10) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("k%03d\x00z", rng.Intn(300))
	}
	return fmt.Sprintf("k%03d", rng.Intn(300))
}

func randValue(rng *rand.Rand) string {
	n := rng.Intn(40)
	if rng.Intn(50) == 0 {
		n = 5000 + rng.Intn(10000)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.Intn(26))
	}
	return string(b)
}

func runModel(t *testing.T, seed int64, opts Options, ops int) {
	rng := rand.New(rand.NewSource(seed))
	fs := vfs.NewMem()
	opts.FS = fs
	d := mustOpen(t, "/db", &opts)
	defer func() { d.Close() }()
	m := model{}
	var snaps []modelSnap
	var intoVals [][]byte // MultiGetInto's results, reused
	var intoErrs []error
	fail := func(op int, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d op %d: %s", seed, op, fmt.Sprintf(format, args...))
	}
	for op := 0; op < ops; op++ {
		switch r := rng.Intn(100); {
		case r < 35:
			k, v := randKey(rng), randValue(rng)
			if err := d.Put([]byte(k), []byte(v), &WriteOptions{Sync: rng.Intn(20) == 0}); err != nil {
				fail(op, "Put: %v", err)
			}
			m[k] = v
		case r < 45:
			k := randKey(rng)
			if err := d.Delete([]byte(k), nil); err != nil {
				fail(op, "Delete: %v", err)
			}
			delete(m, k)
		case r < 55:
			var b Batch
			for i := rng.Intn(10); i >= 0; i-- {
				k := randKey(rng)
				if rng.Intn(12) == 0 {
					lo, hi := randRange(rng)
					b.DeleteRange([]byte(lo), []byte(hi))
					m.deleteRange(lo, hi)
				} else if rng.Intn(3) == 0 {
					b.Delete([]byte(k))
					delete(m, k)
				} else {
					v := randValue(rng)
					b.Put([]byte(k), []byte(v))
					m[k] = v
				}
			}
			if err := d.Write(&b, nil); err != nil {
				fail(op, "Write: %v", err)
			}
		case r < 75:
			k := randKey(rng)
			ro, want := (*ReadOptions)(nil), m
			if len(snaps) > 0 && rng.Intn(3) == 0 {
				s := snaps[rng.Intn(len(snaps))]
				ro, want = &ReadOptions{Snapshot: s.s}, s.m
			}
			v, err := d.Get([]byte(k), ro)
			wv, ok := want[k]
			switch {
			case ok && (err != nil || string(v) != wv):
				fail(op, "Get(%q) = %q, %v; want %q", k, v, err, wv)
			case !ok && !errors.Is(err, ErrNotFound):
				fail(op, "Get(%q) = %q, %v; want ErrNotFound", k, v, err)
			}
		case r < 83:
			ro, want := (*ReadOptions)(nil), m
			if len(snaps) > 0 && rng.Intn(2) == 0 {
				s := snaps[rng.Intn(len(snaps))]
				ro, want = &ReadOptions{Snapshot: s.s}, s.m
			}
			checkIterator(t, rng, d, ro, want, func(format string, args ...any) { fail(op, format, args...) })
		case r < 87:
			if len(snaps) < 4 {
				snaps = append(snaps, modelSnap{d.NewSnapshot(), m.clone()})
			} else {
				i := rng.Intn(len(snaps))
				snaps[i].s.Release()
				snaps = append(snaps[:i], snaps[i+1:]...)
			}
		case r < 92:
			if err := d.Flush(); err != nil {
				fail(op, "Flush: %v", err)
			}
		case r < 94:
			for _, s := range snaps {
				s.s.Release()
			}
			snaps = nil
			if err := d.Close(); err != nil {
				fail(op, "Close: %v", err)
			}
			d = mustOpen(t, "/db", &opts)
		case r < 97:
			lo, hi := randRange(rng)
			if rng.Intn(10) == 0 {
				lo, hi = hi, lo // inverted (or empty): refused, or a no-op
			}
			err := d.DeleteRange([]byte(lo), []byte(hi), nil)
			switch {
			case lo > hi && !errors.Is(err, ErrInvalidArgument):
				fail(op, "DeleteRange(%q, %q) inverted: %v, want ErrInvalidArgument", lo, hi, err)
			case lo <= hi && err != nil:
				fail(op, "DeleteRange(%q, %q): %v", lo, hi, err)
			}
			m.deleteRange(lo, hi)
		case r < 98:
			lo, hi := randRange(rng)
			var start, limit []byte
			if rng.Intn(3) > 0 {
				start, limit = []byte(lo), []byte(hi)
			}
			if err := d.CompactRange(start, limit); err != nil {
				fail(op, "CompactRange: %v", err)
			}
		case r < 99:
			ro, want := (*ReadOptions)(nil), m
			if len(snaps) > 0 && rng.Intn(2) == 0 {
				s := snaps[rng.Intn(len(snaps))]
				ro, want = &ReadOptions{Snapshot: s.s}, s.m
			}
			keys := make([][]byte, 1+rng.Intn(20))
			for i := range keys {
				keys[i] = []byte(randKey(rng))
			}
			vals, errs := d.MultiGet(keys, ro)
			if rng.Intn(2) == 0 {
				// MultiGetInto, into slices left from the last one.
				if cap(intoVals) < len(keys) {
					intoVals, intoErrs = make([][]byte, 20), make([]error, 20)
				}
				vals, errs = intoVals[:len(keys)], intoErrs[:len(keys)]
				if err := d.MultiGetInto(keys, vals, errs, ro); err != nil {
					fail(op, "MultiGetInto: %v", err)
				}
			}
			for i, k := range keys {
				wv, ok := want[string(k)]
				switch {
				case ok && (errs[i] != nil || string(vals[i]) != wv):
					fail(op, "MultiGet[%d](%q) = %q, %v; want %q", i, k, vals[i], errs[i], wv)
				case !ok && (!errors.Is(errs[i], ErrNotFound) || vals[i] != nil):
					fail(op, "MultiGet[%d](%q) = %q, %v; want nil, ErrNotFound", i, k, vals[i], errs[i])
				}
			}
		case r < 100:
			// A checkpoint holds exactly the model of its moment, as a
			// store of its own.
			dir := fmt.Sprintf("/cp%d", op)
			if err := d.Checkpoint(dir); err != nil {
				fail(op, "Checkpoint: %v", err)
			}
			c, err := Open(dir, &Options{FS: fs})
			if err != nil {
				fail(op, "Open of the checkpoint: %v", err)
			}
			checkIterator(t, rng, c, nil, m, func(format string, args ...any) { fail(op, "checkpoint: "+format, args...) })
			if err := c.Close(); err != nil {
				fail(op, "Close of the checkpoint: %v", err)
			}
		}
	}
	for _, s := range snaps {
		s.s.Release()
	}
	checkIterator(t, rng, d, nil, m, func(format string, args ...any) { t.Fatalf("final: "+format, args...) })
	tables := 0
	for _, lm := range d.Metrics().Levels {
		tables += lm.Files
	}
	if tables == 0 {
		t.Fatalf("seed %d: the run never made a table", seed)
	}
}

// checkIterator compares a full forward scan, a full backward scan and a
// random walk of seeks, Nexts and Prevs against the model.
func checkIterator(t *testing.T, rng *rand.Rand, d *DB, ro *ReadOptions, m model, fail func(string, ...any)) {
	t.Helper()
	keys := m.sortedKeys()
	it := d.NewIterator(ro)
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(keys) || string(it.Key()) != keys[i] || string(it.Value()) != m[keys[i]] {
			fail("forward scan at %d: got %q", i, it.Key())
		}
		i++
	}
	if it.Error() != nil || i != len(keys) {
		fail("forward scan saw %d of %d keys (err %v)", i, len(keys), it.Error())
	}
	i = len(keys) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		if i < 0 || string(it.Key()) != keys[i] || string(it.Value()) != m[keys[i]] {
			fail("backward scan at %d: got %q", i, it.Key())
		}
		i--
	}
	if it.Error() != nil || i != -1 {
		fail("backward scan stopped at %d (err %v)", i, it.Error())
	}
	pos := -1
	for step := 0; step < 30; step++ {
		switch rng.Intn(4) {
		case 0:
			target := randKey(rng)
			pos = sort.SearchStrings(keys, target)
			it.Seek([]byte(target))
		case 1:
			if pos >= 0 && pos < len(keys) {
				pos++
				it.Next()
			}
		case 2:
			if pos >= 0 && pos < len(keys) {
				pos--
				it.Prev()
			}
		case 3:
			pos = len(keys) - 1
			it.Last()
		}
		want := pos >= 0 && pos < len(keys)
		if it.Valid() != want {
			fail("walk step %d: Valid=%v want %v (pos %d of %d)", step, it.Valid(), want, pos, len(keys))
		}
		if want && (string(it.Key()) != keys[pos] || !bytes.Equal(it.Value(), []byte(m[keys[pos]]))) {
			fail("walk step %d: at %q, want %q", step, it.Key(), keys[pos])
		}
		if !want {
			pos = -1
		}
	}
	if err := it.Close(); err != nil {
		fail("iterator Close: %v", err)
	}
}
