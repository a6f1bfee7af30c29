package vfs

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"testing"
)

// testLocks checks the semantics every FS's Lock and LockShared share.
func testLocks(t *testing.T, fsys FS, dir string) {
	t.Helper()
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := Join(dir, "LOCK")
	mustLock := func(shared bool) io.Closer {
		t.Helper()
		lock := fsys.Lock
		if shared {
			lock = fsys.LockShared
		}
		l, err := lock(name)
		if err != nil {
			t.Fatalf("lock (shared %v): %v", shared, err)
		}
		return l
	}
	refused := func(shared bool) {
		t.Helper()
		lock := fsys.Lock
		if shared {
			lock = fsys.LockShared
		}
		l, err := lock(name)
		if err == nil {
			l.Close()
			t.Fatalf("lock (shared %v) succeeded next to a conflicting holder", shared)
		}
		if !errors.Is(err, ErrLockHeld) {
			t.Fatalf("lock (shared %v): %v, want one matching ErrLockHeld", shared, err)
		}
	}

	// A shared lock never creates its file.
	if _, err := fsys.LockShared(name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LockShared of a missing file: %v, want fs.ErrNotExist", err)
	}
	if names, _ := fsys.List(dir); len(names) != 0 {
		t.Fatalf("LockShared of a missing file created %v", names)
	}

	// Exclusive excludes everything.
	ex := mustLock(false)
	refused(false)
	refused(true)
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ex.Close(); err == nil {
		t.Fatal("second Close of a lock succeeded")
	}

	// Shared locks coexist and exclude an exclusive one until the last goes.
	s1 := mustLock(true)
	s2 := mustLock(true)
	refused(false)
	s1.Close()
	s1.Close() // a second Close must not release s2's hold
	refused(false)
	s3 := mustLock(true)
	s2.Close()
	refused(false)
	s3.Close()
	ex = mustLock(false)
	ex.Close()
}

func TestLocksOS(t *testing.T)  { testLocks(t, Default, filepath.Join(t.TempDir(), "d")) }
func TestLocksMem(t *testing.T) { testLocks(t, NewMem(), "/x/d") }
func TestLocksFault(t *testing.T) {
	f := NewFaultFS(NewMem(), nil)
	testLocks(t, f, "/x/d")
	if f.Count(OpLockShared) == 0 || f.Count(OpLock) == 0 {
		t.Fatalf("FaultFS counted %d shared and %d exclusive locks", f.Count(OpLockShared), f.Count(OpLock))
	}
	// A shared lock is not a mutating operation; an injected error reaches
	// the caller with its cause.
	f.SetInjector(Fault{Ops: OpLockShared, Err: fs.ErrPermission}.Injector())
	if _, err := f.LockShared("/x/d/LOCK"); !errors.Is(err, fs.ErrPermission) || !errors.Is(err, ErrInjected) {
		t.Fatalf("injected LockShared error: %v", err)
	}
	if OpMutating&OpLockShared != 0 {
		t.Fatal("OpLockShared is in OpMutating")
	}
}
