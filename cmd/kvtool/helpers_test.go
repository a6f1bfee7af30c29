package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
)

// numKeys is how many keys buildStore flushes to a table.
const numKeys = 2000

func key(i int) []byte   { return []byte(fmt.Sprintf("key%05d", i)) }
func value(i int) []byte { return []byte(fmt.Sprintf("value%05d", i)) }

// buildStore makes a store in a temporary directory: numKeys keys flushed
// to one table, then, left in the write-ahead log, a put of "wal-a" and a
// batch of a put of "wal-b" and a delete of key(1). It returns the
// directory, closed.
func buildStore(t *testing.T, p filter.Policy) string {
	t.Helper()
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{FilterPolicy: p})
	if err != nil {
		t.Fatal(err)
	}
	var b db.Batch
	for i := 0; i < numKeys; i++ {
		b.Put(key(i), value(i))
	}
	if err := d.Write(&b, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Put([]byte("wal-a"), []byte("A"), nil); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.Put([]byte("wal-b"), []byte("B"))
	b.Delete(key(1))
	if err := d.Write(&b, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runTool runs kvtool with args and returns its exit status and output.
func runTool(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// mustRun runs kvtool and fails the test unless it exits with want.
func mustRun(t *testing.T, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	code, out, errs := runTool(t, args...)
	if code != want {
		t.Fatalf("kvtool %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errs)
	}
	return out, errs
}

// storeFiles returns the paths of dir's files whose names end in suffix,
// sorted.
func storeFiles(t *testing.T, dir, suffix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

// oneFile returns the only file of dir ending in suffix.
func oneFile(t *testing.T, dir, suffix string) string {
	t.Helper()
	fs := storeFiles(t, dir, suffix)
	if len(fs) != 1 {
		t.Fatalf("%s holds %d %s files, want 1: %v", dir, len(fs), suffix, fs)
	}
	return fs[0]
}

// flipByte inverts the byte at off (negative: from the end) of path.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
