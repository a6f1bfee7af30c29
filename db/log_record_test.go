package db

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

func TestLogHeaderRoundTrip(t *testing.T) {
	for _, prev := range []uint64{0, 1, 127, 128, 1 << 40, 1<<64 - 1} {
		rec := appendLogHeader(nil, prev)
		if len(rec) >= batchHeaderLen {
			t.Fatalf("header of %d is %d bytes: it could be taken for a batch", prev, len(rec))
		}
		got, ok := decodeLogHeader(rec)
		if !ok || got != prev {
			t.Fatalf("decodeLogHeader(appendLogHeader(%d)) = %d, %v", prev, got, ok)
		}
		if _, ok := decodeLogHeader(append(rec, 0)); ok {
			t.Fatalf("a header of %d with a trailing byte decoded", prev)
		}
	}
	for _, bad := range [][]byte{nil, {}, {logHeaderTag}, {0x01, 0x02}, {logHeaderTag, 0x80}} {
		if _, ok := decodeLogHeader(bad); ok {
			t.Fatalf("decodeLogHeader(%x) succeeded", bad)
		}
	}
}

// FuzzLogRecord: what a log record may hold (a batch, a header, the end
// record, or damage) is decoded without a panic, and a record is never
// both a header and a valid batch.
func FuzzLogRecord(f *testing.F) {
	var b Batch
	b.Put([]byte("key"), []byte("value"))
	b.Delete([]byte("gone"))
	b.setSeq(7)
	f.Add(b.rep)
	f.Add(appendLogHeader(nil, 12))
	f.Add([]byte{})
	f.Add([]byte{logHeaderTag, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, rec []byte) {
		_, isHeader := decodeLogHeader(rec)
		batchErr := forEachBatchOp(rec, func(batchOp) error { return nil })
		if isHeader && batchErr == nil {
			t.Fatalf("%x decodes both as a log header and as a batch", rec)
		}
	})
}

func TestDecodeLogBatch(t *testing.T) {
	rec := []byte{5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
		1, 1, 'k', 2, 'v', 'w', // SET k => vw
		0, 0, // DEL ""
	}
	seq, ws, err := DecodeLogBatch(rec)
	if err != nil || seq != 5 || len(ws) != 2 || ws[0].Delete || string(ws[0].Key) != "k" || string(ws[0].Value) != "vw" || !ws[1].Delete || len(ws[1].Key) != 0 {
		t.Fatalf("DecodeLogBatch = %d, %+v, %v", seq, ws, err)
	}
	if typ, _ := ClassifyLogRecord(rec); typ != LogBatch {
		t.Fatalf("ClassifyLogRecord(batch) = %v", typ)
	}
	bad := [][]byte{
		rec[:11],                             // short header
		rec[:len(rec)-1],                     // truncated op
		append(bytes.Clone(rec), 7),          // unknown kind
		append(bytes.Clone(rec), 1, 0x80),    // unterminated varint
		append(bytes.Clone(rec[:12]), 1, 99), // key longer than the record
		append(bytes.Clone(rec), 0, 0),       // count mismatch
	}
	for _, r := range bad {
		if _, _, err := DecodeLogBatch(r); !errors.Is(err, ErrCorruption) {
			t.Errorf("DecodeLogBatch(%x) = %v, want corruption", r, err)
		}
	}
}

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
			writeLog(l2, appendLogHeader(nil, l1), batch("pad", 2, string(make([]byte, 40000))), batch("b", 3, "v-b"))
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
