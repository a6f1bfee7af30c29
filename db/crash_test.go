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
//
// Operation i does, by i%6: 0 puts p<i>; 1 writes a batch of three keys;
// 2 puts d<i> ("ack i put") then deletes it; 3 overwrites p<i-3>; 4 puts
// r<i>-00..09 in a batch ("ack i put"), deletes [r<i>-02, r<i>-07) with
// DeleteRange ("ack i rdel"), then puts r<i>-05 again; 5 writes one batch
// that deletes [w<i-6>, w<i>) (every key of operation i-6), puts
// w<i-6>-after (inside that range, after the tombstone) and w<i>. Every
// 199th operation also compacts the r and w keys, so tombstones meet the
// data they cover in compactions, besides the flushes of the small
// write buffer.
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
		if i%199 == 198 {
			if err := d.CompactRange([]byte("r"), []byte("x")); err != nil {
				fmt.Printf("error %v\n", err)
				os.Exit(2)
			}
		}
		switch i % 6 {
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
		case 4:
			var b Batch
			for j := 0; j < 10; j++ {
				b.Put([]byte(fmt.Sprintf("r%08d-%02d", i, j)), v)
			}
			err = d.Write(&b, sync)
			if err == nil {
				fmt.Printf("ack %d put\n", i)
				err = d.DeleteRange([]byte(fmt.Sprintf("r%08d-02", i)), []byte(fmt.Sprintf("r%08d-07", i)), sync)
			}
			if err == nil {
				fmt.Printf("ack %d rdel\n", i)
				err = d.Put([]byte(fmt.Sprintf("r%08d-05", i)), []byte("again"), sync)
			}
		case 5:
			var b Batch
			b.DeleteRange([]byte(fmt.Sprintf("w%08d", i-6)), []byte(fmt.Sprintf("w%08d", i)))
			b.Put([]byte(fmt.Sprintf("w%08d-after", i-6)), v)
			b.Put([]byte(fmt.Sprintf("w%08d", i)), v)
			err = d.Write(&b, sync)
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
	acked := map[int]bool{}     // op index → fully acknowledged
	putAcked := map[int]bool{}  // op index (i%6 == 2 or 4) → its put was acknowledged
	rdelAcked := map[int]bool{} // op index (i%6 == 4) → its DeleteRange was acknowledged
	skipped := map[int]bool{}   // op indexes no child ran
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
			switch {
			case len(f) == 3 && f[2] == "rdel":
				rdelAcked[i] = true
			case len(f) == 3:
				putAcked[i] = true
			default:
				acked[i] = true
			}
			maxOp = max(maxOp, i)
		}
		werr := cmd.Wait()
		var exitErr *exec.ExitError
		if !errors.As(werr, &exitErr) || exitErr.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child did not die of SIGKILL: %v", round, werr)
		}
		checkCrashState(t, dir, round, next, maxOp, acked, putAcked, rdelAcked, skipped)
		// Ops after maxOp may have reached the log without an ack; skip
		// their indexes so every op's keys stay its own. The child was
		// at most inside op maxOp+1.
		for i := maxOp + 2; i < maxOp+8; i++ {
			skipped[i] = true
		}
		next = maxOp + 8
	}
	t.Logf("%d rounds, %d acknowledged operations (sync %v) survived SIGKILL", rounds, len(acked), syncWrites)
}

func checkCrashState(t *testing.T, dir string, round, from, maxOp int, acked, putAcked, rdelAcked, skipped map[int]bool) {
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
	// The ops this round may have touched: from..maxOp+1 (one in flight),
	// and op i+6 deletes the range of op i.
	for i := 0; i <= maxOp+6; i++ {
		v := fmt.Sprintf("v%08d", i)
		switch i % 6 {
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
		case 4:
			checkRangeDelOp(t, round, i, acked[i], rdelAcked[i] || acked[i], putAcked[i] || rdelAcked[i] || acked[i], get)
		case 5:
			checkRangeDelBatch(t, round, i, acked, skipped, get)
		}
	}
	_ = from
}

// checkRangeDelOp checks the keys of a crash child's operation i (i%6 ==
// 4): ten puts in a batch, DeleteRange of the middle five, r<i>-05 put
// again. The store must be at one of its four steps (none, or a later one
// than acknowledged): never a half batch, never a covered key back.
func checkRangeDelOp(t *testing.T, round, i int, acked, rdelAcked, putAcked bool, get func(string) (string, bool)) {
	t.Helper()
	v := fmt.Sprintf("v%08d", i)
	present := ""
	for j := 0; j < 10; j++ {
		got, ok := get(fmt.Sprintf("r%08d-%02d", i, j))
		switch {
		case !ok:
			present += "."
		case got == v:
			present += "v"
		case got == "again" && j == 5:
			present += "a"
		default:
			t.Fatalf("round %d: r%08d-%02d has a value never written: %q", round, i, j, got)
		}
	}
	// The states the four steps leave, in order.
	steps := []string{"..........", "vvvvvvvvvv", "vv.....vvv", "vv...a.vvv"}
	step := -1
	for s, p := range steps {
		if p == present {
			step = s
		}
	}
	must := 0
	switch {
	case acked:
		must = 3
	case rdelAcked:
		must = 2
	case putAcked:
		must = 1
	}
	switch {
	case step < 0 && strings.Count(present, ".") > 0 && strings.Count(present, ".") < 5:
		t.Fatalf("round %d: op %d: keys r..-00..09 are %q: a half batch", round, i, present)
	case step < 0 && strings.Count(present, ".") == 5:
		t.Fatalf("round %d: op %d: keys r..-00..09 are %q: the range deletion half applied or a covered key came back", round, i, present)
	case step < 0:
		t.Fatalf("round %d: op %d: keys r..-00..09 are %q, no step of the operation leaves that", round, i, present)
	case step < must:
		t.Fatalf("round %d: op %d: keys r..-00..09 are %q (step %d), but step %d was acknowledged", round, i, present, step, must)
	}
}

// checkRangeDelBatch checks the keys of a crash child's operation i (i%6
// == 5): one batch that deletes [w<i-6>, w<i>) and puts w<i-6>-after and
// w<i>. All or nothing of it is there; once it is, w<i-6> is gone for
// good (no later operation writes it) and w<i-6>-after stays until
// operation i+6 deletes it.
func checkRangeDelBatch(t *testing.T, round, i int, acked, skipped map[int]bool, get func(string) (string, bool)) {
	t.Helper()
	v := fmt.Sprintf("v%08d", i)
	cur, curOK := get(fmt.Sprintf("w%08d", i))
	after, afterOK := get(fmt.Sprintf("w%08d-after", i-6))
	if curOK && cur != v || afterOK && after != v {
		t.Fatalf("round %d: op %d: w%08d = %q, w%08d-after = %q: values never written", round, i, i, cur, i-6, after)
	}
	if skipped[i] {
		if curOK || afterOK {
			t.Fatalf("round %d: op %d never ran, but w%08d (%v) or w%08d-after (%v) is there", round, i, i, curOK, i-6, afterOK)
		}
		return
	}
	// Applied: w<i> is there, unless operation i+6 (a later batch) deleted
	// it, which also deleted w<i>-after... and put w<i>-after itself.
	laterAfter, laterOK := get(fmt.Sprintf("w%08d-after", i))
	later := laterOK && laterAfter == fmt.Sprintf("v%08d", i+6)
	if later && curOK {
		t.Fatalf("round %d: op %d: w%08d came back after operation %d deleted its range", round, i, i, i+6)
	}
	applied := curOK || later
	if acked[i] && !applied {
		t.Fatalf("round %d: acknowledged batch %d (DeleteRange and two puts) lost", round, i)
	}
	if applied != afterOK {
		t.Fatalf("round %d: op %d: half a batch: w%08d there %v (or deleted by op %d: %v), w%08d-after there %v",
			round, i, i, curOK, i+6, later, i-6, afterOK)
	}
	if applied {
		if old, ok := get(fmt.Sprintf("w%08d", i-6)); ok {
			t.Fatalf("round %d: op %d applied but w%08d, in its deleted range, is still there: %q", round, i, i-6, old)
		}
	}
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
