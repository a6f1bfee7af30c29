//go:build unix

package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockHelperProcess is not a test: TestLocksAcrossProcesses runs the
// test binary with BLOOMKV_LOCK_HELPER=shared|exclusive and
// BLOOMKV_LOCK_PATH set, and this takes that lock in the new process and
// prints "ok", "held" or the error.
func TestLockHelperProcess(t *testing.T) {
	mode := os.Getenv("BLOOMKV_LOCK_HELPER")
	if mode == "" {
		t.Skip("helper process for TestLocksAcrossProcesses")
	}
	lock := Default.Lock
	if mode == "shared" {
		lock = Default.LockShared
	}
	l, err := lock(os.Getenv("BLOOMKV_LOCK_PATH"))
	switch {
	case err == nil:
		l.Close()
		fmt.Println("RESULT ok")
	case errors.Is(err, ErrLockHeld):
		fmt.Println("RESULT held")
	default:
		fmt.Println("RESULT error:", err)
	}
}

// TestLocksAcrossProcesses checks the flock semantics between processes:
// shared locks coexist, an exclusive one excludes and is excluded.
func TestLocksAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	name := filepath.Join(t.TempDir(), "LOCK")
	other := func(mode string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$", "-test.v")
		cmd.Env = append(os.Environ(), "BLOOMKV_LOCK_HELPER="+mode, "BLOOMKV_LOCK_PATH="+name)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if r, ok := strings.CutPrefix(line, "RESULT "); ok {
				return r
			}
		}
		t.Fatalf("helper printed no result:\n%s", out)
		return ""
	}
	ex, err := Default.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"shared", "exclusive"} {
		if got := other(mode); got != "held" {
			t.Errorf("%s lock in another process while this one holds it exclusively: %s, want held", mode, got)
		}
	}
	ex.Close()
	sh, err := Default.LockShared(name)
	if err != nil {
		t.Fatal(err)
	}
	if got := other("shared"); got != "ok" {
		t.Errorf("shared lock in another process next to a shared one: %s, want ok", got)
	}
	if got := other("exclusive"); got != "held" {
		t.Errorf("exclusive lock in another process next to a shared one: %s, want held", got)
	}
	sh.Close()
	if got := other("exclusive"); got != "ok" {
		t.Errorf("exclusive lock in another process once released: %s, want ok", got)
	}
}

// TestLockPermission: a LOCK file that cannot be opened fails with a
// permission error, not one matching ErrLockHeld. Root opens any file, so
// the test needs another user.
func TestLockPermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: chmod does not deny root access")
	}
	name := filepath.Join(t.TempDir(), "LOCK")
	if err := os.WriteFile(name, nil, 0); err != nil {
		t.Fatal(err)
	}
	for _, lock := range []func(string) (interface{ Close() error }, error){
		func(n string) (interface{ Close() error }, error) { return Default.Lock(n) },
		func(n string) (interface{ Close() error }, error) { return Default.LockShared(n) },
	} {
		_, err := lock(name)
		if !errors.Is(err, fs.ErrPermission) || errors.Is(err, ErrLockHeld) {
			t.Errorf("lock of a mode-000 file: %v, want fs.ErrPermission", err)
		}
	}
}
