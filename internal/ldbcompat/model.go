// Package ldbcompat holds what bloomkv's tests against LevelDB and
// goleveldb share: the writes that made the stores under
// db/testdata/leveldb (written by LevelDB 1.23 itself with cpp/gen.cc, and by
// goleveldb with the generator in the goleveldb submodule), so that a test
// can compute every key the stores must hold without shipping a copy of
// them, and the model of the round trip that ends with LevelDB or
// goleveldb reading a store bloomkv wrote.
//
// The fixture's writes, in order (Key and Value give the bytes):
//
//  1. Round 1, snappy blocks: every key i in [0, NumKeys), in the order
//     i = j*7919 mod NumKeys, so level-0 tables overlap.
//  2. CompactRange over everything.
//  3. A snapshot is taken. Round 2: every i%3 == 0 is overwritten, then
//     every i%7 == 0 deleted. CompactRange over everything while the
//     snapshot is held, so older versions survive next to newer ones (and
//     LevelDB may split one key's versions across two tables of a level).
//     The snapshot is released.
//  4. The store is closed and reopened with compression off. Round 3: every
//     i%5 == 0 is overwritten, more than a write buffer holds, so level 0
//     gets raw tables above the snappy ones of the deeper levels.
//  5. Round 4, left in the log (the store is closed without a flush):
//     every i%11 == 0 is overwritten, then every i%13 == 0 deleted.
//
// The stores are written with 64 KiB write buffers (goleveldb's 32 KiB
// from step 4 on, so that round 3 reaches level 0 there too), 64 KiB
// tables (LevelDB raises its to 1 MiB), 4 KiB blocks and 10 bits/key Bloom
// filters. LevelDB's store ends with two live logs (its last flush, begun
// as it closed, was abandoned: its table is an orphan): LevelDB replays
// both. goleveldb (the 2022 snapshot) does not read that store as LevelDB
// does: strict, it refuses the first log ("invalid sequence number");
// lenient, it loses round 4.
package ldbcompat

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// NumKeys is the number of keys the fixtures' writes touch.
const NumKeys = 6000

// Key returns key i of the fixture.
func Key(i int) string { return fmt.Sprintf("key%06d", i) }

// Value returns the value round r writes to key i: a prefix naming both,
// then filler of a length that varies with i, compressible enough that
// snappy keeps it.
func Value(r, i int) string {
	return fmt.Sprintf("r%d-%d-", r, i) + strings.Repeat("abcdefgh", 2+(i*7)%8)
}

// Model returns what the fixture's store holds after its writes: key to
// value, deleted keys absent.
func Model() map[string]string {
	m := make(map[string]string, NumKeys)
	for i := 0; i < NumKeys; i++ {
		m[Key(i)] = Value(1, i)
	}
	for i := 0; i < NumKeys; i++ {
		if i%3 == 0 {
			m[Key(i)] = Value(2, i)
		}
	}
	for i := 0; i < NumKeys; i++ {
		if i%7 == 0 {
			delete(m, Key(i))
		}
	}
	for i := 0; i < NumKeys; i++ {
		if i%5 == 0 {
			m[Key(i)] = Value(3, i)
		}
	}
	for i := 0; i < NumKeys; i++ {
		if i%11 == 0 {
			m[Key(i)] = Value(4, i)
		}
	}
	for i := 0; i < NumKeys; i++ {
		if i%13 == 0 {
			delete(m, Key(i))
		}
	}
	return m
}

// Absent returns keys the fixture never wrote, interleaved with its own
// (for absent-key reads that must go through the filters).
func Absent(n int) []string {
	out := make([]string, n)
	for j := range out {
		out[j] = fmt.Sprintf("key%06d.x", (j*7919)%NumKeys)
	}
	return out
}

// Op is one write of the round trip: a put of Value to Key, or a deletion.
type Op struct {
	Key, Value string
	Delete     bool
}

// RoundTripOps returns the writes a round-trip test makes with bloomkv on
// a copy of a fixture, before the store goes back to LevelDB or goleveldb:
// overwrites, deletions and new keys across the whole key range.
func RoundTripOps() []Op {
	var ops []Op
	for i := 0; i < NumKeys; i++ {
		switch {
		case i%4 == 1:
			ops = append(ops, Op{Key: Key(i), Value: Value(5, i)})
		case i%6 == 1:
			ops = append(ops, Op{Key: Key(i), Delete: true})
		}
	}
	for i := 0; i < 500; i++ {
		ops = append(ops, Op{Key: fmt.Sprintf("new%06d", i), Value: Value(5, i)})
	}
	return ops
}

// Apply applies ops to model.
func Apply(model map[string]string, ops []Op) {
	for _, op := range ops {
		if op.Delete {
			delete(model, op.Key)
		} else {
			model[op.Key] = op.Value
		}
	}
}

// Diff compares what a store holds (got) with model and describes the
// first few differences, or returns "" when they agree.
func Diff(model, got map[string]string) string {
	var sb strings.Builder
	n := 0
	note := func(format string, args ...any) {
		if n < 5 {
			fmt.Fprintf(&sb, format+"\n", args...)
		}
		n++
	}
	for k, v := range model {
		switch g, ok := got[k]; {
		case !ok:
			note("%q missing (want %q)", k, v)
		case g != v:
			note("%q = %q, want %q", k, g, v)
		}
	}
	for k, g := range got {
		if _, ok := model[k]; !ok {
			note("%q = %q should be absent", k, g)
		}
	}
	if n > 5 {
		fmt.Fprintf(&sb, "... %d differences in all\n", n)
	}
	return sb.String()
}

// ChurnOps returns 20,000 overwrites and deletions of 5,000 keys: with a
// 64 KiB write buffer the store flushes many times while writes go on,
// and closes with recent writes only in its logs.
func ChurnOps() []Op {
	ops := make([]Op, 0, 20000)
	for i := 0; i < 20000; i++ {
		k := fmt.Sprintf("churn%05d", (i*7919)%5000)
		if i%9 == 4 {
			ops = append(ops, Op{Key: k, Delete: true})
		} else {
			ops = append(ops, Op{Key: k, Value: Value(6, i)})
		}
	}
	return ops
}

// CopyStore copies the regular files of the store in src (a store has no
// subdirectories) into dst, which it creates: tests and the round trip
// point bloomkv at copies of the fixtures, never at the committed ones.
func CopyStore(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
