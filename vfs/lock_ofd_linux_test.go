package vfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPOSIXLockHelperProcess is not a test: TestLocksExcludeLevelDB runs
// the test binary with BLOOMKV_POSIX_LOCK=try|hold and
// BLOOMKV_LOCK_PATH, and this takes a POSIX fcntl write lock on the path,
// as LevelDB locks its LOCK file. "try" prints "RESULT ok" or "RESULT
// held"; "hold" prints "RESULT locked" and keeps the lock until its stdin
// closes.
func TestPOSIXLockHelperProcess(t *testing.T) {
	mode := os.Getenv("BLOOMKV_POSIX_LOCK")
	if mode == "" {
		t.Skip("helper process for TestLocksExcludeLevelDB")
	}
	f, err := os.OpenFile(os.Getenv("BLOOMKV_LOCK_PATH"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Println("RESULT error:", err)
		return
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK}
	err = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
	switch {
	case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES):
		fmt.Println("RESULT held")
		return
	case err != nil:
		fmt.Println("RESULT error:", err)
		return
	}
	if mode == "try" {
		fmt.Println("RESULT ok")
		return
	}
	fmt.Println("RESULT locked")
	io.Copy(io.Discard, os.Stdin)
}

// TestLocksExcludeLevelDB: LevelDB locks LOCK with a POSIX fcntl lock,
// which on Linux does not see flock locks (the review opened one store
// with LevelDB and bloomkv at once, and lost a write LevelDB had
// acknowledged). bloomkv's lock now excludes LevelDB's, both ways, and
// read-only opens too.
func TestLocksExcludeLevelDB(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	name := filepath.Join(t.TempDir(), "LOCK")
	helper := func(mode string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPOSIXLockHelperProcess$", "-test.v")
		cmd.Env = append(os.Environ(), "BLOOMKV_POSIX_LOCK="+mode, "BLOOMKV_LOCK_PATH="+name)
		return cmd
	}
	result := func(out string) string {
		for _, line := range strings.Split(out, "\n") {
			if r, ok := strings.CutPrefix(line, "RESULT "); ok {
				return r
			}
		}
		return "no result: " + out
	}
	for _, shared := range []bool{false, true} {
		lock := Default.Lock
		if shared {
			lock = Default.LockShared
		}
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := lock(name)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := helper("try").CombinedOutput()
		if r := result(string(out)); r != "held" {
			t.Errorf("shared %v: LevelDB's lock while bloomkv holds LOCK: %s, want held", shared, r)
		}
		l.Close()
		out, _ = helper("try").CombinedOutput()
		if r := result(string(out)); r != "ok" {
			t.Errorf("shared %v: LevelDB's lock once bloomkv let go: %s, want ok", shared, r)
		}

		// LevelDB holds it: bloomkv is refused until it lets go.
		cmd := helper("hold")
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		got := ""
		for sc.Scan() {
			if r, ok := strings.CutPrefix(sc.Text(), "RESULT "); ok {
				got = r
				break
			}
		}
		if got != "locked" {
			t.Fatalf("helper: %q", got)
		}
		if _, err := lock(name); !errors.Is(err, ErrLockHeld) {
			t.Errorf("shared %v: bloomkv's lock while LevelDB holds LOCK: %v, want ErrLockHeld", shared, err)
		}
		stdin.Close()
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		l, err = lock(name)
		if err != nil {
			t.Fatalf("shared %v: once LevelDB let go: %v", shared, err)
		}
		l.Close()
	}
}
