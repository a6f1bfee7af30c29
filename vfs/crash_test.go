package vfs

import (
	"errors"
	"io"
	"io/fs"
	"math/rand"
	"testing"
)

func writeFile(t *testing.T, fsys FS, name, data string, sync bool) File {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// readFile returns the file's contents, or "<missing>".
func readFile(t *testing.T, fsys FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCrashCloneDeterministicPolicies(t *testing.T) {
	none := CrashOptions{UnsyncedData: SurviveNone, UnsyncedDirOps: SurviveNone}
	all := CrashOptions{UnsyncedData: SurviveAll, UnsyncedDirOps: SurviveAll}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, m *MemFS)
		file  string
		none  string // content after a crash keeping nothing unsynced
		all   string // content after a crash keeping everything
	}{
		{"unsynced new file is lost", func(t *testing.T, m *MemFS) {
			writeFile(t, m, "/d/a", "data", true)
		}, "/d/a", "<missing>", "data"},
		{"synced dir entry, unsynced tail", func(t *testing.T, m *MemFS) {
			f := writeFile(t, m, "/d/a", "head", true)
			m.SyncDir("/d")
			f.Write([]byte("+tail"))
		}, "/d/a", "head", "head+tail"},
		{"dir synced before data: empty file survives", func(t *testing.T, m *MemFS) {
			f, _ := m.Create("/d/a")
			m.SyncDir("/d")
			f.Write([]byte("x"))
		}, "/d/a", "", "x"},
		{"unsynced rename over an existing file", func(t *testing.T, m *MemFS) {
			writeFile(t, m, "/d/CURRENT", "old", true)
			m.SyncDir("/d")
			writeFile(t, m, "/d/tmp", "new", true)
			m.Rename("/d/tmp", "/d/CURRENT")
		}, "/d/CURRENT", "old", "new"},
		{"unsynced rename: old name back", func(t *testing.T, m *MemFS) {
			writeFile(t, m, "/d/tmp", "new", true)
			m.SyncDir("/d")
			m.Rename("/d/tmp", "/d/CURRENT")
		}, "/d/tmp", "new", "<missing>"},
		{"synced rename", func(t *testing.T, m *MemFS) {
			writeFile(t, m, "/d/CURRENT", "old", true)
			writeFile(t, m, "/d/tmp", "new", true)
			m.Rename("/d/tmp", "/d/CURRENT")
			m.SyncDir("/d")
		}, "/d/CURRENT", "new", "new"},
		{"unsynced remove is undone", func(t *testing.T, m *MemFS) {
			writeFile(t, m, "/d/a", "keep", true)
			m.SyncDir("/d")
			m.Remove("/d/a")
		}, "/d/a", "keep", "<missing>"},
		{"unsynced truncating re-create keeps the old file", func(t *testing.T, m *MemFS) {
			writeFile(t, m, "/d/a", "v1", true)
			m.SyncDir("/d")
			writeFile(t, m, "/d/a", "v2", true)
		}, "/d/a", "v1", "v2"},
		{"SyncDir of another directory does not help", func(t *testing.T, m *MemFS) {
			m.MkdirAll("/e", 0o755)
			writeFile(t, m, "/d/a", "data", true)
			m.SyncDir("/e")
		}, "/d/a", "<missing>", "data"},
		{"rename across directories", func(t *testing.T, m *MemFS) {
			m.MkdirAll("/e", 0o755)
			writeFile(t, m, "/d/a", "data", true)
			m.SyncDir("/d")
			m.Rename("/d/a", "/e/a")
			m.SyncDir("/e")
		}, "/e/a", "data", "data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMem()
			m.MkdirAll("/d", 0o755)
			tc.setup(t, m)
			if got := readFile(t, m.CrashCloneWith(none), tc.file); got != tc.none {
				t.Errorf("SurviveNone: %s = %q, want %q", tc.file, got, tc.none)
			}
			if got := readFile(t, m.CrashCloneWith(all), tc.file); got != tc.all {
				t.Errorf("SurviveAll: %s = %q, want %q", tc.file, got, tc.all)
			}
			// Clone is the current state.
			if got, want := readFile(t, m.Clone(), tc.file), readFile(t, m, tc.file); got != want {
				t.Errorf("Clone: %s = %q, want %q", tc.file, got, want)
			}
		})
	}
}

// TestCrashCloneRandom checks that random crashes only produce allowed
// states and, over many seeds, produce each of them.
func TestCrashCloneRandom(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	f := writeFile(t, m, "/d/log", "synced.", true)
	m.SyncDir("/d")
	f.Write([]byte("0123456789"))
	writeFile(t, m, "/d/new", "n", true)  // unsynced entry
	writeFile(t, m, "/d/gone", "g", true) // synced entry, then removed
	m.SyncDir("/d")                       // makes new and gone durable
	m.Remove("/d/gone")                   // unsynced
	writeFile(t, m, "/d/late", "l", true) // unsynced
	m.Rename("/d/late", "/d/late2")       // unsynced
	tails := map[int]bool{}
	states := map[string]bool{}
	for seed := int64(0); seed < 400; seed++ {
		c := m.CrashClone(rand.New(rand.NewSource(seed)))
		log := readFile(t, c, "/d/log")
		if len(log) < len("synced.") || log != ("synced.0123456789")[:len(log)] {
			t.Fatalf("seed %d: log = %q: not synced data plus a prefix of the tail", seed, log)
		}
		tails[len(log)-len("synced.")] = true
		if got := readFile(t, c, "/d/new"); got != "n" {
			t.Fatalf("seed %d: durable file new = %q", seed, got)
		}
		gone := readFile(t, c, "/d/gone")
		late, late2 := readFile(t, c, "/d/late"), readFile(t, c, "/d/late2")
		if gone != "g" && gone != "<missing>" {
			t.Fatalf("seed %d: gone = %q", seed, gone)
		}
		if late2 != "l" && late2 != "<missing>" || late != "l" && late != "<missing>" || late == "l" && late2 == "l" {
			t.Fatalf("seed %d: late=%q late2=%q", seed, late, late2)
		}
		states[gone+"/"+late+"/"+late2] = true
		// The clone is fully synced: a strict crash of it changes nothing.
		cc := c.CrashCloneWith(CrashOptions{UnsyncedData: SurviveNone, UnsyncedDirOps: SurviveNone})
		if readFile(t, cc, "/d/log") != log {
			t.Fatalf("seed %d: clone was not fully synced", seed)
		}
	}
	if !tails[0] || !tails[10] || len(tails) < 6 {
		t.Errorf("unsynced tail lengths seen: %v; want 0, 10 and several in between", tails)
	}
	if len(states) < 5 {
		t.Errorf("directory outcomes seen: %v; want at least 5 of the 6 possible", states)
	}
}

func TestCloneIsIndependent(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	f := writeFile(t, m, "/d/a", "one", false)
	l, err := m.Lock("/d/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	c := m.Clone()
	f.Write([]byte("two"))
	if got := readFile(t, c, "/d/a"); got != "one" {
		t.Fatalf("clone saw a later write: %q", got)
	}
	l2, err := c.Lock("/d/LOCK")
	if err != nil {
		t.Fatalf("clone inherited the lock: %v", err)
	}
	l2.Close()
	l.Close()
	if b, ops := m.UnsyncedState(); b != 6 || ops == 0 {
		t.Fatalf("UnsyncedState = %d bytes, %d ops", b, ops)
	}
	if b, ops := c.UnsyncedState(); b != 0 || ops != 0 {
		t.Fatalf("clone UnsyncedState = %d bytes, %d ops", b, ops)
	}
	testFS(t, c, "/d/sub")
}

func TestPendingDirOpsBounded(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	for i := 0; i < maxPendingDirOps+10; i++ {
		writeFile(t, m, "/d/f", "x", true).Close()
	}
	if _, ops := m.UnsyncedState(); ops != maxPendingDirOps {
		t.Fatalf("%d pending ops, want the bound %d", ops, maxPendingDirOps)
	}
	// The oldest creations now count as durable.
	c := m.CrashCloneWith(CrashOptions{UnsyncedData: SurviveNone, UnsyncedDirOps: SurviveNone})
	if got := readFile(t, c, "/d/f"); got != "x" {
		t.Fatalf("f = %q", got)
	}
}

func BenchmarkCrashClone(b *testing.B) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	buf := make([]byte, 64<<10)
	for i := 0; i < 32; i++ {
		f, _ := m.Create(Join("/d", string(rune('a'+i))))
		f.Write(buf)
		f.Sync()
		f.Write(buf[:1000])
	}
	rng := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.CrashClone(rng)
	}
}
