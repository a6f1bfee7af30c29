package logrec

import (
	"bytes"
	"errors"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, prev := range []uint64{0, 1, 127, 128, 1 << 40, 1<<64 - 1} {
		rec := AppendHeader(nil, prev)
		if len(rec) >= BatchHeaderLen {
			t.Fatalf("header of %d is %d bytes: it could be taken for a batch", prev, len(rec))
		}
		got, ok := DecodeHeader(rec)
		if !ok || got != prev {
			t.Fatalf("DecodeHeader(AppendHeader(%d)) = %d, %v", prev, got, ok)
		}
		if typ, p := Classify(rec); typ != Header || p != prev {
			t.Fatalf("Classify(header %d) = %v, %d", prev, typ, p)
		}
		if _, ok := DecodeHeader(append(rec, 0)); ok {
			t.Fatalf("a header of %d with a trailing byte decoded", prev)
		}
	}
	for _, bad := range [][]byte{nil, {}, {HeaderTag}, {0x01, 0x02}, {HeaderTag, 0x80}} {
		if _, ok := DecodeHeader(bad); ok {
			t.Fatalf("DecodeHeader(%x) succeeded", bad)
		}
	}
	if typ, _ := Classify(nil); typ != End {
		t.Fatalf("Classify(empty) = %v, want End", typ)
	}
}

// batch is the encoding of a batch at seq of the given ops.
func batch(seq uint64, ops ...Op) []byte {
	rec := make([]byte, BatchHeaderLen)
	for i := 0; i < 8; i++ {
		rec[i] = byte(seq >> (8 * i))
	}
	rec[8] = byte(len(ops))
	for _, op := range ops {
		rec = append(rec, byte(op.Kind), byte(len(op.Key)))
		rec = append(rec, op.Key...)
		if op.Kind == base.KindSet {
			rec = append(rec, byte(len(op.Value)))
			rec = append(rec, op.Value...)
		}
	}
	return rec
}

// FuzzLogRecord: what a log record may hold (a batch, a header, the end
// record, or damage) is decoded without a panic, and a record is never
// both a header and a valid batch.
func FuzzLogRecord(f *testing.F) {
	f.Add(batch(7, Op{base.KindSet, []byte("key"), []byte("value")}, Op{Kind: base.KindDelete, Key: []byte("gone")}))
	f.Add(AppendHeader(nil, 12))
	f.Add([]byte{})
	f.Add([]byte{HeaderTag, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, rec []byte) {
		_, isHeader := DecodeHeader(rec)
		_, _, batchErr := DecodeBatch(rec)
		if isHeader && batchErr == nil {
			t.Fatalf("%x decodes both as a log header and as a batch", rec)
		}
	})
}

func TestDecodeBatch(t *testing.T) {
	rec := []byte{5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
		1, 1, 'k', 2, 'v', 'w', // SET k => vw
		0, 0, // DEL ""
	}
	seq, ops, err := DecodeBatch(rec)
	if err != nil || seq != 5 || len(ops) != 2 || ops[0].Kind != base.KindSet || string(ops[0].Key) != "k" ||
		string(ops[0].Value) != "vw" || ops[1].Kind != base.KindDelete || len(ops[1].Key) != 0 {
		t.Fatalf("DecodeBatch = %d, %+v, %v", seq, ops, err)
	}
	if typ, _ := Classify(rec); typ != Batch {
		t.Fatalf("Classify(batch) = %v", typ)
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
		if _, _, err := DecodeBatch(r); !errors.Is(err, base.ErrCorruption) {
			t.Errorf("DecodeBatch(%x) = %v, want corruption", r, err)
		}
	}
}
