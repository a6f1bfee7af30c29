package db

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// tableBytes returns the number and total size of the live tables.
func tableBytes(d *DB) (n int, size uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, files := range d.vs.current.Files {
		for _, f := range files {
			n++
			size += f.Size
		}
	}
	return n, size
}

// TestCompactRangeReturnsSpaceAfterSnapshotRelease: CompactRange(nil,
// nil) after the last snapshot is released leaves only live data. On
// 4324f50 CompactRange never rewrote the deepest level holding data, so
// the versions and tombstones a snapshot had kept there stayed, even
// after a reopen (3 tables and 5 MB after deleting every key; 19 MB
// where 2 MB were live after 10 overwrites).
func TestCompactRangeReturnsSpaceAfterSnapshotRelease(t *testing.T) {
	const keys = 5000
	val := func(i, round int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("%06d-%02d|", i, round)), 40) // 400 bytes
	}
	o := &Options{FS: vfs.NewMem(), DisableCompression: true}

	t.Run("delete everything", func(t *testing.T) {
		d := mustOpen(t, "/db", o)
		defer d.Close()
		for i := 0; i < keys; i++ {
			if err := d.Put(memKey(i), val(i, 0), nil); err != nil {
				t.Fatal(err)
			}
		}
		s := d.NewSnapshot()
		for i := 0; i < keys; i++ {
			if err := d.Delete(memKey(i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
		if n, _ := tableBytes(d); n == 0 {
			t.Fatal("the snapshot's versions were dropped while it was live")
		}
		if v, err := d.Get(memKey(7), &ReadOptions{Snapshot: s}); err != nil || !bytes.Equal(v, val(7, 0)) {
			t.Fatalf("live snapshot reads %q, %v", v, err)
		}
		s.Release()
		if err := d.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
		if n, size := tableBytes(d); n != 0 {
			t.Fatalf("after deleting every key and compacting: %d tables, %d bytes; want none", n, size)
		}
	})

	t.Run("overwrites", func(t *testing.T) {
		d := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), DisableCompression: true})
		defer d.Close()
		// The live bytes: the same final data written once into a fresh
		// store and compacted the same way.
		ref := mustOpen(t, "/ref", &Options{FS: vfs.NewMem(), DisableCompression: true})
		defer ref.Close()
		const rounds = 10
		var snaps []*Snapshot
		for r := 0; r < rounds; r++ {
			for i := 0; i < keys; i++ {
				if err := d.Put(memKey(i), val(i, r), nil); err != nil {
					t.Fatal(err)
				}
			}
			snaps = append(snaps, d.NewSnapshot())
			if r%3 == 0 {
				if err := d.CompactRange(nil, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := 0; i < keys; i++ {
			if err := ref.Put(memKey(i), val(i, rounds-1), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := ref.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
		_, live := tableBytes(ref)
		if err := d.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
		_, pinned := tableBytes(d)
		for _, s := range snaps {
			s.Release()
		}
		if err := d.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
		_, after := tableBytes(d)
		t.Logf("live %d bytes; %d with 10 snapshots; %d after releasing them (%.2fx live)",
			live, pinned, after, float64(after)/float64(live))
		if pinned < 5*live {
			t.Fatalf("with snapshots live only %d bytes stayed, live is %d: the snapshots' versions were dropped", pinned, live)
		}
		if float64(after) > 1.15*float64(live) {
			t.Fatalf("after releasing every snapshot and compacting: %d bytes, %.2fx the %d live bytes; want <= 1.15x",
				after, float64(after)/float64(live), live)
		}
		for i := 0; i < keys; i += 97 {
			if v, err := d.Get(memKey(i), nil); err != nil || !bytes.Equal(v, val(i, rounds-1)) {
				t.Fatalf("Get(%d) = %.20q, %v", i, v, err)
			}
		}
	})
}
