package wal

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/bloomkv/bloomkv/internal/base"
)

// fuzzSeedLog is a valid log spanning several blocks with every fragment
// type, used as a seed.
func fuzzSeedLog(tb testing.TB) []byte {
	log, _, _ := writeLog(tb, [][]byte{
		[]byte("hello"), {}, bytes.Repeat([]byte("a"), 300),
		bytes.Repeat([]byte("b"), 2*BlockSize), []byte("end"),
	})
	return log
}

type fuzzRead struct {
	recs    [][]byte
	errs    []bool // per Next call: true for a corruption error
	dropped int64
}

func fuzzReadAll(t *testing.T, src io.Reader, limit int) fuzzRead {
	r := NewReader(src)
	var res fuzzRead
	total := 0
	for calls := 0; ; calls++ {
		if calls > limit {
			t.Fatalf("reader made %d calls without reaching EOF", calls)
		}
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error is neither EOF nor corruption: %v", err)
			}
			res.errs = append(res.errs, true)
			continue
		}
		total += len(rec)
		res.errs = append(res.errs, false)
		res.recs = append(res.recs, bytes.Clone(rec))
		// The record is assembled from bytes read, so its buffer stays
		// within a small multiple of the input.
		if cap(r.scratch) > 2*limit+64 {
			t.Fatalf("scratch capacity %d for an input of %d bytes", cap(r.scratch), limit)
		}
	}
	if total > limit {
		t.Fatalf("returned %d record bytes from %d input bytes", total, limit)
	}
	if r.DroppedBytes() < 0 || r.DroppedBytes() > int64(limit) {
		t.Fatalf("dropped %d of %d bytes", r.DroppedBytes(), limit)
	}
	res.dropped = r.DroppedBytes()
	return res
}

// FuzzReader feeds arbitrary bytes to a Reader: it must end with io.EOF
// after a bounded number of calls, report only corruption errors, never
// panic, return no more record bytes than it was given, and behave the same
// whatever the chunking of its input.
func FuzzReader(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00"))
	f.Add(fuzzSeedLog(f))
	small, _, _ := writeLog(f, [][]byte{[]byte("a"), {}, []byte("bc")})
	f.Add(small)
	f.Fuzz(func(t *testing.T, data []byte) {
		// Each call consumes input, drops a pending record, or ends.
		limit := 2*len(data) + 4
		a := fuzzReadAll(t, bytes.NewReader(data), limit)
		b := fuzzReadAll(t, iotest.OneByteReader(bytes.NewReader(data)), limit)
		if !equalRecs(a.recs, b.recs) || len(a.errs) != len(b.errs) || a.dropped != b.dropped {
			t.Fatalf("chunked input read differently: %d/%d records, %d/%d calls",
				len(a.recs), len(b.recs), len(a.errs), len(b.errs))
		}
	})
}

// FuzzRoundTrip writes records cut from the input (lengths chosen by the
// input, some stretched across blocks) and reads them back unchanged.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("hello world"), uint16(3))
	f.Add(bytes.Repeat([]byte{7}, 1000), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, stretch uint16) {
		var recs [][]byte
		for len(data) > 0 {
			n := min(int(data[0]), len(data)-1)
			recs = append(recs, data[1:1+n])
			data = data[1+n:]
		}
		if stretch > 0 {
			// One large record to force FIRST/MIDDLE/LAST fragments.
			recs = append(recs, makeRecord(int(stretch), int(stretch)*3))
		}
		log, _, _ := writeLog(t, recs)
		res := fuzzReadAll(t, bytes.NewReader(log), len(log))
		if len(res.recs) != len(recs) || res.dropped != 0 {
			t.Fatalf("wrote %d records, read %d (dropped %d)", len(recs), len(res.recs), res.dropped)
		}
		for i := range recs {
			if !bytes.Equal(res.recs[i], recs[i]) {
				t.Fatalf("record %d differs", i)
			}
		}
	})
}
