package db

import (
	"bytes"
	"io"
	"testing"

	"github.com/bloomkv/bloomkv/internal/logrec"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// TestReplayStopsAfterUnendedLog builds, by hand, the logs a crash can
// leave after a memtable switch whose old log was not yet synced: log L1
// holds a write of "a" (with or without its end-of-log record) and log
// L2, whose header names L1, a later write of "b". Open must replay L2
// only when L1 ended with its end record; otherwise keeping "b" could
// keep a write while losing an earlier one. A damaged first record of L2
// (maybe its header) needs the same. The refused log is gone after Open,
// so a second Open does not bring "b" back.
func TestReplayStopsAfterUnendedLog(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ended         bool // L1 ends with its end-of-log record
		damagedHeader bool // L2's first record fails its checksum
		wantB         bool
	}{
		{"predecessor cut short", false, false, false},
		{"predecessor ended", true, false, true},
		{"damaged header, predecessor cut short", false, true, false},
		{"damaged header, predecessor ended", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			o := &Options{FS: fs}
			d := mustOpen(t, "db", o)
			l1 := d.logNum
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			batch := func(key string, seq uint64, value string) []byte {
				var b Batch
				b.Put([]byte(key), []byte(value))
				b.setSeq(seq)
				return bytes.Clone(b.rep)
			}
			writeLog := func(num uint64, recs ...[]byte) {
				f, err := fs.Create(logFileName("db", num))
				if err != nil {
					t.Fatal(err)
				}
				w := wal.NewWriter(f)
				for _, r := range recs {
					if err := w.AddRecord(r); err != nil {
						t.Fatal(err)
					}
				}
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			first := [][]byte{batch("a", 1, "v-a")}
			if tc.ended {
				first = append(first, nil) // the end-of-log record
			}
			writeLog(l1, first...)
			l2 := l1 + 1
			// A damaged record costs the rest of its 32 KiB block, so a
			// large write ("pad", also lost then) puts "b" in the next.
			writeLog(l2, logrec.AppendHeader(nil, l1), batch("pad", 2, string(make([]byte, 40000))), batch("b", 3, "v-b"))
			if tc.damagedHeader {
				flipFileByte(t, fs, logFileName("db", l2), 7) // the header's tag: checksum fails
			}

			// A read-only open, which replays into memory, applies the
			// same rule (and, changing nothing, leaves it to the next).
			ro := mustOpen(t, "db", &Options{FS: fs, ReadOnly: true})
			mustGet(t, ro, "a", "v-a")
			if tc.wantB {
				mustGet(t, ro, "b", "v-b")
			} else {
				mustMiss(t, ro, "b")
			}
			if err := ro.Close(); err != nil {
				t.Fatal(err)
			}

			for reopen := 0; reopen < 2; reopen++ {
				d := mustOpen(t, "db", o)
				mustGet(t, d, "a", "v-a")
				if tc.wantB {
					mustGet(t, d, "b", "v-b")
				} else {
					mustMiss(t, d, "b")
				}
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// flipFileByte XORs byte off of the named file of fs with 0x80.
func flipFileByte(t *testing.T, fs vfs.FS, name string, off int) {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	data[off] ^= 0x80
	w, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	w.Close()
}
