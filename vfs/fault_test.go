package vfs

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

func TestFaultFSPassesThrough(t *testing.T) {
	testFS(t, NewFaultFS(NewMem(), nil), "/x/d")
	testFS(t, NewFaultFS(Default, nil), filepath.Join(t.TempDir(), "d"))
}

func TestOpString(t *testing.T) {
	if s := (OpWrite | OpSync).String(); s != "write|sync" {
		t.Fatalf("got %q", s)
	}
	if s := OpSyncDir.String(); s != "syncdir" {
		t.Fatalf("got %q", s)
	}
}

// faultWorkload does one of each operation kind on fsys and returns the
// first error.
func faultWorkload(fsys FS) error {
	steps := []func() error{
		func() error { return fsys.MkdirAll("/d", 0o755) },
		func() error {
			f, err := fsys.Create("/d/a.log")
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := f.Write([]byte("0123456789")); err != nil {
				return err
			}
			if _, err := f.Size(); err != nil {
				return err
			}
			return f.Sync()
		},
		func() error {
			f, err := fsys.Open("/d/a.log")
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.ReadAt(make([]byte, 4), 2)
			return err
		},
		func() error { _, err := fsys.List("/d"); return err },
		func() error { _, err := fsys.Stat("/d/a.log"); return err },
		func() error { return fsys.Rename("/d/a.log", "/d/b.sst") },
		func() error { return fsys.SyncDir("/d") },
		func() error {
			l, err := fsys.Lock("/d/LOCK")
			if err == nil {
				l.Close()
			}
			return err
		},
		func() error {
			l, err := fsys.LockShared("/d/LOCK")
			if err == nil {
				l.Close()
			}
			return err
		},
		func() error { return fsys.Remove("/d/b.sst") },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// TestFaultEveryOperation fails each operation of a workload in turn and
// checks the error that comes back.
func TestFaultEveryOperation(t *testing.T) {
	probe := NewFaultFS(NewMem(), nil)
	if err := faultWorkload(probe); err != nil {
		t.Fatal(err)
	}
	total := probe.Count(OpAll)
	if total != 14 {
		t.Fatalf("workload made %d operations, want 14", total)
	}
	seen := Op(0)
	for i := int64(0); i < total; i++ {
		inj := Fault{After: i}.Injector()
		fsys := NewFaultFS(NewMem(), inj)
		err := faultWorkload(fsys)
		if !errors.Is(err, ErrInjected) || !errors.Is(err, ErrIO) {
			t.Fatalf("op %d: err = %v, want an injected ErrIO", i, err)
		}
		var ie *InjectedError
		if !errors.As(err, &ie) || ie.Path == "" {
			t.Fatalf("op %d: %v has no path", i, err)
		}
		if got := inj.Injected(); len(got) != 1 || got[0].Op != ie.Op {
			t.Fatalf("op %d: injector recorded %v", i, got)
		}
		seen |= ie.Op
	}
	if seen != OpAll {
		t.Fatalf("kinds failed: %v, want all: %v", seen, OpAll)
	}
}

func TestFaultSelection(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	inj := Fault{Ops: OpWrite, PathContains: ".log", After: 2, Count: 2, Err: syscall.ENOSPC}.Injector()
	fsys := NewFaultFS(m, inj)
	logf, _ := fsys.Create("/d/1.log")
	sst, _ := fsys.Create("/d/2.sst")
	var results []bool
	for i := 0; i < 6; i++ {
		if _, err := sst.Write([]byte("s")); err != nil {
			t.Fatalf("write to .sst failed: %v", err)
		}
		_, err := logf.Write([]byte("l"))
		if err != nil && (!errors.Is(err, syscall.ENOSPC) || !errors.Is(err, ErrInjected)) {
			t.Fatalf("err %v is not an injected ENOSPC", err)
		}
		results = append(results, err == nil)
	}
	want := []bool{true, true, false, false, true, true}
	for i := range want {
		if results[i] != want[i] {
			t.Fatalf("write results %v, want %v", results, want)
		}
	}
	if got := readFile(t, m, "/d/1.log"); got != "llll" {
		t.Fatalf("failed writes reached the file: %q", got)
	}
	if inj.Matched() != 6 {
		t.Fatalf("matched %d", inj.Matched())
	}
	if fsys.Count(OpWrite) != 12 || fsys.Count(OpCreate) != 2 {
		t.Fatalf("counts: %d writes, %d creates", fsys.Count(OpWrite), fsys.Count(OpCreate))
	}
}

func TestFaultStickyDisableAndTorn(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	inj := Fault{Ops: OpWrite | OpSync, After: 1, Count: -1, Torn: true, Err: syscall.ENOSPC}.Injector()
	fsys := NewFaultFS(m, inj)
	f, _ := fsys.Create("/d/f")
	if _, err := f.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	n, err := f.Write([]byte("abcd"))
	if n != 2 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("torn write: n=%d err=%v", n, err)
	}
	for i := 0; i < 3; i++ {
		if err := f.Sync(); !errors.Is(err, ErrInjected) {
			t.Fatalf("sticky fault let sync %d through: %v", i, err)
		}
	}
	inj.Disable()
	if _, err := f.Write([]byte("!")); err != nil {
		t.Fatalf("after Disable: %v", err)
	}
	if got := readFile(t, m, "/d/f"); got != "okab!" {
		t.Fatalf("file = %q", got)
	}
	fsys.SetInjector(InjectorFunc(func(op Op, path string) error {
		if op == OpRemove {
			return &InjectedError{Err: syscall.EIO}
		}
		return nil
	}))
	err = fsys.Remove("/d/f")
	var ie *InjectedError
	if !errors.As(err, &ie) || ie.Op != OpRemove || ie.Path != "/d/f" || !errors.Is(err, syscall.EIO) {
		t.Fatalf("InjectorFunc error: %#v", err)
	}
	fsys.SetInjector(nil)
	if err := fsys.Remove("/d/f"); err != nil {
		t.Fatal(err)
	}
}

func TestFaultProbability(t *testing.T) {
	run := func(seed int64) []bool {
		fsys := NewFaultFS(NewMem(), Fault{Ops: OpStat, Count: -1, Probability: 0.25, Seed: seed}.Injector())
		var out []bool
		for i := 0; i < 2000; i++ {
			_, err := fsys.Stat("/")
			if err != nil && !errors.Is(err, ErrInjected) {
				t.Fatal(err)
			}
			out = append(out, err != nil)
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	fails, same := 0, true
	differ := false
	for i := range a {
		if a[i] {
			fails++
		}
		same = same && a[i] == b[i]
		differ = differ || a[i] != c[i]
	}
	if !same || !differ {
		t.Fatalf("same seed same failures: %v; other seed differs: %v", same, differ)
	}
	if fails < 400 || fails > 600 {
		t.Fatalf("%d of 2000 failed at p=0.25", fails)
	}
}

func BenchmarkFaultFSWrite(b *testing.B) {
	fsys := NewFaultFS(NewMem(), Fault{Ops: OpSync, PathContains: "never"}.Injector())
	f, _ := fsys.Create("/f")
	buf := make([]byte, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%10000 == 0 {
			f, _ = fsys.Create("/f")
		}
		f.Write(buf)
	}
}
