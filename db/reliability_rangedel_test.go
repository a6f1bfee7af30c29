package db

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestCheckpointRangeDelsUnderWrites takes checkpoints while a writer
// puts, deletes and deletes ranges (with DB.DeleteRange and inside
// batches) and flushes and compacts: each checkpoint must open and hold
// exactly the model after some prefix of the writes, one that includes
// every write acknowledged before Checkpoint was called and none issued
// after it returned. The range tombstones still in the memtables at the
// checkpoint's moment go into the checkpoint; the ones written after that
// moment do not.
func TestCheckpointRangeDelsUnderWrites(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d (the writer's operations; their interleaving with the checkpoints is the scheduler's)", seed)
	checkpoints := 24
	if testing.Short() {
		checkpoints = 8
	}
	mem := vfs.NewMem()
	// Each file a checkpoint creates takes a while, so the writer gets
	// writes (and range deletions) in between the checkpoint's moment and
	// its reading of the memtables: those must stay out of it.
	slow := vfs.NewFaultFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpCreate && strings.HasPrefix(path, "/ckpt") {
			time.Sleep(300 * time.Microsecond)
		}
		return nil
	}))
	o := &Options{FS: slow, WriteBufferSize: 16 << 10, BlockSize: 256, TargetFileSize: 4 << 10, L0CompactionTrigger: 2, LBaseMaxBytes: 16 << 10}
	d := mustOpen(t, "/db", o)
	defer d.Close()

	var (
		mu      sync.Mutex
		hist    []crashWrite
		hashes  = []uint64{0} // hashes[j]: the model after hist[:j]
		acked   int           // writes returned
		started int           // writes called
	)
	stop := make(chan struct{})
	writerErr := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewSource(seed))
		model, h := map[string]string{}, uint64(0)
		pad := strings.Repeat("p", 300)
		key := func() string { return fmt.Sprintf("k%03d", rng.Intn(crashKeySpace)) }
		bounds := func() (string, string) {
			s := rng.Intn(crashKeySpace)
			n := 1 + rng.Intn(4)
			if rng.Intn(3) == 0 {
				n = 5 + rng.Intn(60)
			}
			return fmt.Sprintf("k%03d", s), fmt.Sprintf("k%03d", s+n)
		}
		for n := 0; ; n++ {
			select {
			case <-stop:
				writerErr <- nil
				return
			default:
			}
			var w crashWrite
			switch x := rng.Intn(100); {
			case x < 45:
				w = crashWrite{keys: []string{key()}, values: []string{fmt.Sprintf("%d:%x%s", n, rng.Uint32(), pad[:rng.Intn(len(pad))])}, dels: []bool{false}}
			case x < 55:
				w = crashWrite{keys: []string{key()}, values: []string{""}, dels: []bool{true}}
			case x < 70:
				w = crashWrite{rangeOnly: true}
				w.addRange(bounds())
			case x < 94:
				for i := 1 + rng.Intn(6); i > 0; i-- {
					switch rng.Intn(5) {
					case 0:
						w.addRange(bounds())
					case 1:
						w.keys, w.values, w.dels = append(w.keys, key()), append(w.values, ""), append(w.dels, true)
					default:
						w.keys, w.values, w.dels = append(w.keys, key()), append(w.values, fmt.Sprintf("%d.%d:%x", n, i, rng.Uint32())), append(w.dels, false)
					}
				}
			case x < 98:
				if err := d.Flush(); err != nil {
					writerErr <- fmt.Errorf("Flush: %w", err)
					return
				}
				continue
			default:
				s, e := bounds()
				if err := d.CompactRange([]byte(s), []byte(e)); err != nil {
					writerErr <- fmt.Errorf("CompactRange: %w", err)
					return
				}
				continue
			}
			mu.Lock()
			started++
			mu.Unlock()
			var err error
			if w.rangeOnly {
				err = d.DeleteRange([]byte(w.keys[0]), []byte(w.ends[0]), nil)
			} else {
				err = d.Write(w.toBatch(), nil)
			}
			if err != nil {
				writerErr <- fmt.Errorf("write %d: %w", n, err)
				return
			}
			h = w.apply(model, h)
			mu.Lock()
			hist = append(hist, w)
			hashes = append(hashes, h)
			acked++
			mu.Unlock()
		}
	}()

	matched := map[string]int{}
	for c := 0; c < checkpoints; c++ {
		time.Sleep(time.Duration(1+c%4) * time.Millisecond)
		mu.Lock()
		lo := acked
		mu.Unlock()
		dir := fmt.Sprintf("/ckpt%d", c)
		if err := d.Checkpoint(dir); err != nil {
			close(stop)
			t.Fatalf("Checkpoint(%s): %v", dir, err)
		}
		mu.Lock()
		hi := started
		mu.Unlock()
		cd, err := Open(dir, &Options{FS: mem, ReadOnly: true})
		if err != nil {
			close(stop)
			t.Fatalf("Open(%s): %v", dir, err)
		}
		got, err := scanState(cd, nil)
		if err != nil {
			close(stop)
			t.Fatalf("scan of %s: %v", dir, err)
		}
		if diff := readsDiffer(cd, nil, got, crashKeys, crashSeeks); diff != "" {
			close(stop)
			t.Fatalf("checkpoint %s: the reads disagree with the forward scan: %s", dir, diff)
		}
		cd.Close()
		// Opened for writing, the checkpoint goes on as a store of its
		// own: writes that take its sequence numbers past those of the
		// source's later writes change none of the keys it holds (a
		// tombstone from after its moment, kept in it, would now apply).
		cd, err = Open(dir, &Options{FS: mem})
		if err != nil {
			close(stop)
			t.Fatalf("Open(%s) for writing: %v", dir, err)
		}
		var b Batch
		for i := 0; i < 4*(hi-lo+8)*8; i++ {
			b.Put([]byte("zz"), []byte{byte(i)})
		}
		b.Delete([]byte("zz"))
		if err := cd.Write(&b, nil); err != nil {
			close(stop)
			t.Fatalf("writing to %s: %v", dir, err)
		}
		if diff := readsDiffer(cd, nil, got, crashKeys, crashSeeks); diff != "" {
			close(stop)
			t.Fatalf("checkpoint %s changed when written to: %s", dir, diff)
		}
		if err := cd.Close(); err != nil {
			close(stop)
			t.Fatalf("Close(%s): %v", dir, err)
		}
		// The writes up to hi are in hist once the writer acknowledges
		// them; wait for that (hi is at most one ahead of acked).
		for {
			mu.Lock()
			n := acked
			mu.Unlock()
			if n >= hi {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		mu.Lock()
		ws, hs := hist[:hi], hashes[:hi+1]
		mu.Unlock()
		h := stateHash(got)
		match := -1
		for j := hi; j >= lo; j-- {
			if hs[j] != h {
				continue
			}
			m := map[string]string{}
			for _, w := range ws[:j] {
				w.apply(m, 0)
			}
			if diffStates(got, m) == "  (identical)" {
				match = j
				break
			}
		}
		if match < 0 {
			close(stop)
			m := map[string]string{}
			for _, w := range ws[:lo] {
				w.apply(m, 0)
			}
			t.Fatalf("checkpoint %s is not the store after any of writes %d..%d (those acknowledged before it, and those started before it returned); against the state after %d:\n%s\nthe writes in between:\n%s",
				dir, lo, hi, lo, diffStates(got, m), describeWrites(ws, lo, hi))
		}
		if match == lo {
			matched["at the call"]++
		} else {
			matched["later"]++
		}
	}
	close(stop)
	if err := <-writerErr; err != nil && !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d checkpoints against %d writes (%d range tombstones in the tables at the end): the moment of each: %v", checkpoints, acked, storeRangeDels(d), matched)
}
