package db

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/filter"
)

// TestErrorMessagesSayBloomkvOnce checks the prefix rule of the package
// documentation, and that the wrapped sentinels stay errors.Is-checkable.
func TestErrorMessagesSayBloomkvOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	type errCase struct {
		name string
		err  error
		is   error
	}
	var cases []errCase
	_, err := Open(dir, &Options{ErrorIfMissing: true})
	cases = append(cases, errCase{"missing", err, ErrDBMissing})
	_, err = Open(dir, &Options{BlockSize: 1 << 30})
	cases = append(cases, errCase{"block size", err, ErrInvalidOptions})
	_, err = Open("", nil)
	cases = append(cases, errCase{"empty path", err, ErrInvalidArgument})
	for _, c := range cases {
		if !errors.Is(c.err, c.is) {
			t.Errorf("%s: %v does not match %v", c.name, c.err, c.is)
			continue
		}
		msg := c.err.Error()
		if !strings.HasPrefix(msg, "bloomkv: ") || strings.Count(msg, "bloomkv:") != 1 {
			t.Errorf("%s: %q should say \"bloomkv: \" once, at the front", c.name, msg)
		}
	}
	if msg := cases[0].err.Error(); !strings.Contains(msg, dir) {
		t.Errorf("missing store: %q does not name the directory", msg)
	}
	if msg := cases[2].err.Error(); !strings.Contains(msg, "path is empty") {
		t.Errorf("empty path: %q does not say the path is empty", msg)
	}
}

// TestClosingTwice checks the one rule for closing twice: a second
// DB.Close or Iterator.Close returns ErrClosed, a second Release does
// nothing, and nothing is left broken by either.
func TestClosingTwice(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	if err := d.Put([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	it := d.NewIterator(nil)
	if !it.First() || string(it.Key()) != "k" {
		t.Fatal("iterator does not see k")
	}
	if err := it.Close(); err != nil {
		t.Fatalf("first iterator Close: %v", err)
	}
	if err := it.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second iterator Close: %v, want ErrClosed", err)
	}
	if it.First() || !errors.Is(it.Error(), ErrClosed) {
		t.Fatalf("iterator used after Close: Error %v", it.Error())
	}
	s := d.NewSnapshot()
	s.Release()
	s.Release()
	if _, err := d.Get([]byte("k"), &ReadOptions{Snapshot: s}); !errors.Is(err, ErrSnapshotReleased) {
		t.Fatalf("Get through a twice-released snapshot: %v", err)
	}
	mustGet(t, d, "k", "v")
	if err := d.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := d.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
	d = mustOpen(t, dir, nil)
	mustGet(t, d, "k", "v")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWaitForCompactions checks that after WaitForCompactions the tree
// needs no compaction and nothing is being flushed, that a Close during
// the wait ends it with ErrClosed, and that reads after it count no
// compaction reads.
func TestWaitForCompactions(t *testing.T) {
	o := &Options{WriteBufferSize: 16 << 10, TargetFileSize: 8 << 10, LBaseMaxBytes: 32 << 10, L0CompactionTrigger: 2}
	d := mustOpen(t, t.TempDir(), o)
	for i := 0; i < 20000; i++ {
		if err := d.Put([]byte(fmt.Sprintf("key%08d", i*7919%20000)), []byte("value-value-value"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	busy := d.imm != nil || d.flushing || d.compacting
	pick := compaction.Pick(d.vs.current, d.copts, &d.pointers)
	d.mu.Unlock()
	if busy || pick != nil {
		t.Fatalf("after WaitForCompactions: busy %v, a compaction is still needed: %v", busy, pick != nil)
	}
	m := d.Metrics()
	if m.Levels[0].Files >= o.L0CompactionTrigger || m.Compactions == 0 {
		t.Fatalf("after the wait: %d level-0 tables, %d compactions", m.Levels[0].Files, m.Compactions)
	}
	for i := 0; i < 1000; i++ {
		mustGet(t, d, fmt.Sprintf("key%08d", i), "value-value-value")
	}
	if m2 := d.Metrics(); m2.CompactionBlocksRead != m.CompactionBlocksRead {
		t.Fatalf("compactions read blocks after the wait: %d then %d", m.CompactionBlocksRead, m2.CompactionBlocksRead)
	}

	// A Close while a wait is blocked on busy work ends the wait.
	for i := 0; i < 20000; i++ {
		if err := d.Put([]byte(fmt.Sprintf("again%08d", i)), []byte("value-value-value"), nil); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- d.WaitForCompactions() }()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("wait racing Close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("WaitForCompactions did not return after Close")
	}
	if err := d.WaitForCompactions(); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitForCompactions after Close: %v", err)
	}
}

// TestLegacyBloomTablesStayFiltered: tables written with the Bloom
// encoding before v2 (filter.LegacyBloomPolicyName) are read, and filtered,
// by a store whose policy is now the default.
func TestLegacyBloomTablesStayFiltered(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, &Options{FilterPolicy: filter.NewLegacyBloomPolicy(10)})
	for i := 0; i < 1000; i++ {
		if err := d.Put([]byte(fmt.Sprintf("k%05d", i)), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d = mustOpen(t, dir, nil)
	defer d.Close()
	for i := 0; i < 1000; i++ {
		mustGet(t, d, fmt.Sprintf("k%05d", i), "v")
		mustMiss(t, d, fmt.Sprintf("k%05dx", i))
	}
	f := d.Metrics().Filter
	if f.Checks < 1990 || f.Useful < 900 { // k00999x is past the table: no check
		t.Fatalf("the legacy table's filter was not used: %+v", f)
	}
}
