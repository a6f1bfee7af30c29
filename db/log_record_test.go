package db

import (
	"bytes"
	"errors"
	"testing"
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
