package db

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var crashRounds = flag.Int("crash_rounds", 20, "SIGKILL rounds in TestKillDuringSyncedWrites")

const crashChildEnv = "BLOOMKV_CRASH_CHILD_DIR"

// TestCrashChild is the child process of TestKillDuringSyncedWrites and
// TestKillDuringUnsyncedWrites: it writes with Sync: true (or false) and
// prints a line for every write that returned.
// Run directly it does nothing.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		return
	}
	start, _ := strconv.Atoi(os.Getenv("BLOOMKV_CRASH_START"))
	d, err := Open(dir, &Options{WriteBufferSize: 32 << 10})
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(2)
	}
	sync := &WriteOptions{Sync: os.Getenv("BLOOMKV_CRASH_NOSYNC") == ""}
	fmt.Println("ready")
	for i := start; ; i++ {
		v := []byte(fmt.Sprintf("v%08d", i))
		switch i % 4 {
		case 0:
			err = d.Put([]byte(fmt.Sprintf("p%08d", i)), v, sync)
		case 1:
			var b Batch
			for j := 0; j < 3; j++ {
				b.Put([]byte(fmt.Sprintf("b%08d-%d", i, j)), v)
			}
			err = d.Write(&b, sync)
		case 2:
			err = d.Put([]byte(fmt.Sprintf("d%08d", i)), v, sync)
			if err == nil {
				fmt.Printf("ack %d put\n", i)
				err = d.Delete([]byte(fmt.Sprintf("d%08d", i)), sync)
			}
		case 3:
			err = d.Put([]byte(fmt.Sprintf("p%08d", i-3)), v, sync)
		}
		if err != nil {
			fmt.Printf("error %v\n", err)
			os.Exit(2)
		}
		fmt.Printf("ack %d\n", i)
	}
}

// TestKillDuringSyncedWrites starts a child process writing with Sync:
// true, kills it with SIGKILL at a random moment, reopens the store and
// checks that every acknowledged write is there, that no batch is half
// applied, and that no acknowledged delete came back. It repeats on the
// same store, so recovery also runs over earlier recoveries' output.
func TestKillDuringSyncedWrites(t *testing.T) { killDuringWrites(t, true, *crashRounds) }

// TestKillDuringUnsyncedWrites is TestKillDuringSyncedWrites with Sync:
// false. A SIGKILL ends the process, not the machine, so the page cache
// keeps what the log wrote (through its memory map, by default) and every
// acknowledged write must still be there.
func TestKillDuringUnsyncedWrites(t *testing.T) { killDuringWrites(t, false, *crashRounds/2) }

func killDuringWrites(t *testing.T, syncWrites bool, rounds int) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	acked := map[int]bool{}    // op index → fully acknowledged
	putAcked := map[int]bool{} // op index (i%4==2) → its put was acknowledged
	next := 0
	for round := 0; round < rounds; round++ {
		cmd := exec.Command(exe, "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, "BLOOMKV_CRASH_START="+strconv.Itoa(next))
		if !syncWrites {
			cmd.Env = append(cmd.Env, "BLOOMKV_CRASH_NOSYNC=1")
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			s := bufio.NewScanner(out)
			for s.Scan() {
				lines <- s.Text()
			}
			close(lines)
		}()
		if l := <-lines; l != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child said %q", round, l)
		}
		time.Sleep(time.Duration(5+rng.Intn(100)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		maxOp := next - 1
		for l := range lines {
			f := strings.Fields(l)
			if len(f) < 2 || f[0] != "ack" {
				t.Fatalf("round %d: child said %q", round, l)
			}
			i, _ := strconv.Atoi(f[1])
			if len(f) == 3 {
				putAcked[i] = true
			} else {
				acked[i] = true
			}
			maxOp = max(maxOp, i)
		}
		werr := cmd.Wait()
		var exitErr *exec.ExitError
		if !errors.As(werr, &exitErr) || exitErr.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child did not die of SIGKILL: %v", round, werr)
		}
		checkCrashState(t, dir, round, next, maxOp, acked, putAcked)
		// Ops after maxOp may have reached the log without an ack; skip
		// their indexes so every op's keys stay its own.
		next = maxOp + 8
	}
	t.Logf("%d rounds, %d acknowledged operations (sync %v) survived SIGKILL", rounds, len(acked), syncWrites)
}

func checkCrashState(t *testing.T, dir string, round, from, maxOp int, acked, putAcked map[int]bool) {
	t.Helper()
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
	}
	defer d.Close()
	get := func(k string) (string, bool) {
		v, err := d.Get([]byte(k), nil)
		if errors.Is(err, ErrNotFound) {
			return "", false
		}
		if err != nil {
			t.Fatalf("round %d: Get(%s): %v", round, k, err)
		}
		return string(v), true
	}
	// The ops this round may have touched: from..maxOp+4 (one in flight).
	for i := 0; i <= maxOp+4; i++ {
		v := fmt.Sprintf("v%08d", i)
		switch i % 4 {
		case 0:
			got, ok := get(fmt.Sprintf("p%08d", i))
			overwritten := acked[i+3]
			switch {
			case overwritten && got != fmt.Sprintf("v%08d", i+3):
				t.Fatalf("round %d: acknowledged overwrite %d lost: p%08d=%q", round, i+3, i, got)
			case acked[i] && !ok:
				t.Fatalf("round %d: acknowledged put %d lost", round, i)
			case ok && got != v && got != fmt.Sprintf("v%08d", i+3):
				t.Fatalf("round %d: p%08d has a value never written: %q", round, i, got)
			}
		case 1:
			n := 0
			for j := 0; j < 3; j++ {
				if got, ok := get(fmt.Sprintf("b%08d-%d", i, j)); ok {
					if got != v {
						t.Fatalf("round %d: batch %d key %d = %q", round, i, j, got)
					}
					n++
				}
			}
			if n != 0 && n != 3 {
				t.Fatalf("round %d: batch %d half applied: %d of 3 keys", round, i, n)
			}
			if acked[i] && n != 3 {
				t.Fatalf("round %d: acknowledged batch %d lost", round, i)
			}
		case 2:
			got, ok := get(fmt.Sprintf("d%08d", i))
			if acked[i] && ok {
				t.Fatalf("round %d: acknowledged delete %d came back: %q", round, i, got)
			}
			if putAcked[i] && !acked[i] && ok && got != v {
				t.Fatalf("round %d: d%08d = %q", round, i, got)
			}
			if !putAcked[i] && !acked[i] && ok && got != v {
				t.Fatalf("round %d: d%08d has a value never written", round, i)
			}
		}
	}
	_ = from
}

// TestMappedLogTailAfterCrash copies a store's directory while the store is
// open, as a crash of the process would leave it: the log, written through
// its memory map, ends in preallocated zeros. Opened with ParanoidChecks
// (which refuses any damaged log), the copy must hold every write.
func TestMappedLogTailAfterCrash(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := 0; i < 1000; i++ {
		if err := d.Put([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprintf("v%05d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	copyDir := t.TempDir()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	zeroTail := false
	for _, e := range names {
		if e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(dir + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), ".log") && len(b) > 0 && b[len(b)-1] == 0 {
			zeroTail = true
		}
		if err := os.WriteFile(copyDir+"/"+e.Name(), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("log ends in preallocated zeros: %v", zeroTail)
	c, err := Open(copyDir, &Options{ParanoidChecks: true})
	if err != nil {
		t.Fatalf("open after a simulated crash: %v", err)
	}
	defer c.Close()
	for i := 0; i < 1000; i++ {
		v, err := c.Get([]byte(fmt.Sprintf("k%05d", i)), nil)
		if err != nil || string(v) != fmt.Sprintf("v%05d", i) {
			t.Fatalf("k%05d: %q, %v", i, v, err)
		}
	}
}
