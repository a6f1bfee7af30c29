package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dirSnapshot is every entry of a directory (name, size, bytes and
// modification time) and the directory's own modification time, as ".".
type dirSnapshot map[string]string

func snapshotDir(t *testing.T, dir string) dirSnapshot {
	t.Helper()
	s := dirSnapshot{}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	s["."] = fi.ModTime().String()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s[e.Name()] = fi.ModTime().String() + " " + string(b)
	}
	return s
}

// ageDir sets the modification time of dir and of every file in it an hour
// back, so a rewrite shows even with coarse timestamps.
func ageDir(t *testing.T, dir string) {
	t.Helper()
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Chtimes(filepath.Join(dir, e.Name()), past, past); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(dir, past, past); err != nil {
		t.Fatal(err)
	}
}

// TestReadCommandsChangeNothing runs every command that only reads on a
// store whose last writes are still in its write-ahead log (a put, and a
// batch of a put and a delete of a key in a table): the output shows
// those writes, and afterwards every file of the directory (names, sizes,
// bytes, modification times) and the directory itself are as they were.
// get, scan and metrics used to replay the log into a table and rewrite
// the MANIFEST, so a later manifest dump lost the history.
func TestReadCommandsChangeNothing(t *testing.T) {
	dir := buildStore(t, nil)
	ageDir(t, dir)
	before := snapshotDir(t, dir)
	manifestBefore, _ := mustRun(t, 0, "manifest", "dump", dir)

	for _, tc := range []struct {
		args []string
		code int
		want []string // in stdout
		not  []string // absent from stdout
	}{
		{[]string{"get", dir, "wal-a"}, 0, []string{"A\n"}, nil},
		{[]string{"get", dir, "wal-b"}, 0, []string{"B\n"}, nil},
		{[]string{"get", dir, "key00001"}, 1, nil, nil}, // deleted in the log
		{[]string{"get", dir, "key00002"}, 0, []string{"value00002\n"}, nil},
		{[]string{"scan", dir}, 0, []string{"key00000\tvalue00000\n", "key00002\tvalue00002\n", "wal-a\tA\n", "wal-b\tB\n"}, []string{"key00001"}},
		{[]string{"scan", "--prefix", "wal-", dir}, 0, []string{"wal-a\tA\nwal-b\tB\n"}, nil},
		{[]string{"metrics", dir}, 0, []string{"L0", "total", "memtable"}, []string{"memtable 0B"}},
		{[]string{"lsm", dir}, 0, []string{"L0"}, nil},
		{[]string{"check", dir}, 0, []string{"ok"}, nil},
		{[]string{"manifest", "dump", dir}, 0, []string{"record 1"}, nil},
		{[]string{"wal", "dump", oneFile(t, dir, ".log")}, 0, []string{"wal-a", "wal-b", "key00001"}, nil},
		{[]string{"sst", "dump", oneFile(t, dir, ".sst")}, 0, []string{"key00000"}, nil},
		{[]string{"sst", "props", oneFile(t, dir, ".sst")}, 0, nil, nil},
		{[]string{"sst", "check", oneFile(t, dir, ".sst")}, 0, nil, nil},
	} {
		out, _ := mustRun(t, tc.code, tc.args...)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("kvtool %s: output lacks %q:\n%s", strings.Join(tc.args, " "), w, out)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(out, w) {
				t.Errorf("kvtool %s: output has %q:\n%s", strings.Join(tc.args, " "), w, out)
			}
		}
	}

	after := snapshotDir(t, dir)
	for name, b := range before {
		if a, ok := after[name]; !ok {
			t.Errorf("%s was removed", name)
		} else if a != b {
			t.Errorf("%s changed", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s was created", name)
		}
	}
	if manifestAfter, _ := mustRun(t, 0, "manifest", "dump", dir); manifestAfter != manifestBefore {
		t.Errorf("manifest dump changed:\nbefore:\n%s\nafter:\n%s", manifestBefore, manifestAfter)
	}
}
