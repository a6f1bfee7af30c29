package db

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// The size limits: a write at each limit is accepted and can be flushed,
// compacted and replayed; one byte (or one write) past it is refused with
// ErrInvalidArgument before anything reaches the log, and nothing of its
// batch is applied. On 4324f50 a 257 MiB value was acknowledged and then
// every later write and every Open failed (the flush could not write it),
// and a batch of 4,100 keys of 17 KiB panicked in the memtable, on every
// Open as well (the batch was in the log).

// roundTrip checks, through a flush, a compaction and a reopen (which
// replays nothing: the flush emptied the log), and through a reopen that
// replays the log, that want holds.
//
// The writes at the limits move GiBs: under the race detector (which
// has nothing to find in one goroutine copying bytes) roundTrip does
// nothing and only the refusals are checked; with -short it writes and
// reads back; the plain `go test` run does everything.
func roundTrip(t *testing.T, dir string, o *Options, write func(d *DB) error, want map[string][]byte) {
	t.Helper()
	if raceEnabled {
		return
	}
	check := func(d *DB, when string) {
		t.Helper()
		for k, v := range want {
			got, err := d.Get([]byte(k), nil)
			if err != nil || !bytes.Equal(got, v) {
				t.Fatalf("%s: Get(key of %d bytes) = %d bytes, %v; want %d bytes", when, len(k), len(got), err, len(v))
			}
		}
	}
	// Replay: written, closed without a flush, reopened.
	d := mustOpen(t, dir, o)
	if err := write(d); err != nil {
		t.Fatalf("write at the limit: %v", err)
	}
	check(d, "after the write")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		return
	}
	d = mustOpen(t, dir, o)
	check(d, "after a reopen that replayed the log")
	if err := d.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatalf("compaction: %v", err)
	}
	check(d, "after flush and compaction")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, dir, o)
	defer d.Close()
	check(d, "after reopen")
	if err := d.Put([]byte("after"), []byte("ok"), nil); err != nil {
		t.Fatalf("a later write fails: %v", err)
	}
}

// requireRefused checks that err wraps ErrInvalidArgument and that the
// store holds none of the refused batch's writes and still takes writes.
func requireRefused(t *testing.T, d *DB, err error, what string, keys ...[]byte) {
	t.Helper()
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("%s: %v, want ErrInvalidArgument", what, err)
	}
	for _, k := range keys {
		if _, err := d.Get(k, nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: a write of the refused batch is there (%v)", what, err)
		}
	}
	if err := d.Put([]byte("still"), []byte("works"), nil); err != nil {
		t.Fatalf("%s: the next write fails: %v", what, err)
	}
}

func TestKeyAndValueLimits(t *testing.T) {
	dir := t.TempDir()
	o := &Options{WriteBufferSize: 1 << 20}
	bigKey := bytes.Repeat([]byte{'k'}, MaxKeySize)
	value := bytes.Repeat([]byte{'v'}, MaxValueSize+1)
	roundTrip(t, dir, o, func(d *DB) error {
		var b Batch
		b.Put(bigKey, []byte("at the key limit"))
		b.Put([]byte("v"), value[:MaxValueSize])
		if err := b.Err(); err != nil {
			return err
		}
		return d.Write(&b, &WriteOptions{Sync: true})
	}, map[string][]byte{string(bigKey): []byte("at the key limit"), "v": value[:MaxValueSize]})

	d := mustOpen(t, dir, o)
	defer d.Close()
	over := append(bigKey, 'k')
	requireRefused(t, d, d.Put(over, nil, nil), "Put of a key one byte over MaxKeySize", over)
	requireRefused(t, d, d.Delete(over, nil), "Delete of a key one byte over MaxKeySize")
	requireRefused(t, d, d.Put([]byte("v2"), value, nil), "Put of a value one byte over MaxValueSize", []byte("v2"))
	var b Batch
	b.Put([]byte("first"), []byte("ok"))
	b.Put([]byte("v3"), value)
	b.Put([]byte("last"), []byte("ok"))
	if !errors.Is(b.Err(), ErrInvalidArgument) {
		t.Fatalf("Batch.Err = %v", b.Err())
	}
	requireRefused(t, d, d.Write(&b, nil), "a batch holding one value over MaxValueSize", []byte("first"), []byte("v3"), []byte("last"))
	b.Reset()
	if b.Err() != nil || b.Count() != 0 {
		t.Fatalf("Reset left Err %v, Count %d", b.Err(), b.Count())
	}
}

func TestBatchLimits(t *testing.T) {
	dir := t.TempDir()
	o := &Options{WriteBufferSize: 1 << 20}
	// Two values whose batch is exactly MaxBatchSize bytes.
	half := MaxBatchSize / 2
	key := func(i int) []byte { return []byte(fmt.Sprintf("big%d", i)) }
	var sized Batch
	sized.Put(key(0), make([]byte, MaxValueSize))
	// kind, key length, key, value length (4 bytes below 2^28), value
	rest := MaxBatchSize - sized.Len() - 1 - 1 - len(key(1)) - 4
	if rest >= 1<<28 || rest < half/2 {
		t.Fatalf("cannot size the batch: %d", rest)
	}
	vals := [][]byte{bytes.Repeat([]byte{'a'}, MaxValueSize), bytes.Repeat([]byte{'b'}, rest)}
	roundTrip(t, dir, o, func(d *DB) error {
		var b Batch
		b.Put(key(0), vals[0])
		b.Put(key(1), vals[1])
		if b.Len() != MaxBatchSize {
			return fmt.Errorf("batch is %d bytes, want exactly MaxBatchSize %d", b.Len(), MaxBatchSize)
		}
		return d.Write(&b, nil)
	}, map[string][]byte{string(key(0)): vals[0], string(key(1)): vals[1]})

	d := mustOpen(t, dir, o)
	defer d.Close()
	var b Batch
	b.Put(key(2), vals[0])
	b.Put(key(3), append(vals[1], 'b'))
	requireRefused(t, d, d.Write(&b, nil), "a batch one byte over MaxBatchSize", key(2), key(3))

	// MaxBatchCount writes are accepted, and read back through a replay,
	// a flush, a compaction and a reopen; one more is refused.
	countKey := func(i int) []byte { return []byte{byte(i >> 16), byte(i >> 8), byte(i)} }
	sample := map[string][]byte{}
	for i := 0; i < MaxBatchCount; i += 4099 {
		sample[string(countKey(i))] = []byte{}
	}
	sample[string(countKey(MaxBatchCount-1))] = []byte{}
	cdir := t.TempDir()
	roundTrip(t, cdir, o, func(d *DB) error {
		var b Batch
		for i := 0; i < MaxBatchCount; i++ {
			b.Put(countKey(i), nil)
		}
		if b.Err() != nil || b.Count() != MaxBatchCount {
			return fmt.Errorf("a batch of MaxBatchCount writes: Err %v, Count %d", b.Err(), b.Count())
		}
		return d.Write(&b, nil)
	}, sample)
	b.Reset()
	for i := 0; i < MaxBatchCount; i++ {
		b.Delete(countKey(i))
	}
	b.Delete([]byte("one more"))
	requireRefused(t, d, d.Write(&b, nil), "a batch of MaxBatchCount+1 writes")
}

// TestBatchOfManyLargeKeys: the report's batch, 4,100 keys of 17 KiB in
// one synced write, then 4,100 single Puts of such keys with a 256 MiB
// write buffer: both are accepted, and read back after a reopen that
// replays them.
func TestBatchOfManyLargeKeys(t *testing.T) {
	dir := t.TempDir()
	const n = 4100
	key := func(i int) []byte {
		k := bytes.Repeat([]byte{'x'}, 17<<10)
		copy(k, fmt.Sprintf("%06d", i))
		return k
	}
	want := map[string][]byte{}
	roundTrip(t, dir, nil, func(d *DB) error {
		var b Batch
		for i := 0; i < n; i++ {
			b.Put(key(i), []byte(fmt.Sprint(i)))
			want[string(key(i))] = []byte(fmt.Sprint(i))
		}
		return d.Write(&b, &WriteOptions{Sync: true})
	}, want)

	dir = t.TempDir()
	want = map[string][]byte{}
	roundTrip(t, dir, &Options{WriteBufferSize: 256 << 20}, func(d *DB) error {
		for i := 0; i < n; i++ {
			if err := d.Put(key(i), []byte(fmt.Sprint(-i)), nil); err != nil {
				return err
			}
			want[string(key(i))] = []byte(fmt.Sprint(-i))
		}
		return nil
	}, want)
}

// TestReplayBatchLargerThanWriteBuffer: a batch many times the write
// buffer is replayed whole after a reopen.
func TestReplayBatchLargerThanWriteBuffer(t *testing.T) {
	want := map[string][]byte{}
	roundTrip(t, t.TempDir(), &Options{WriteBufferSize: 4 << 10}, func(d *DB) error {
		var b Batch
		for i := 0; i < 5000; i++ {
			k, v := memKey(i), bytes.Repeat([]byte{byte(i)}, 100)
			b.Put(k, v)
			want[string(k)] = v
		}
		return d.Write(&b, nil)
	}, want)
}

func TestOptionLimits(t *testing.T) {
	for name, o := range map[string]*Options{
		"WriteBufferSize over MaxWriteBufferSize": {WriteBufferSize: MaxWriteBufferSize + 1},
		"BlockSize over 256 MiB":                  {BlockSize: 256<<20 + 1},
		"BlockRestartInterval over 65536":         {BlockRestartInterval: 1<<16 + 1},
		"LevelMultiplier over 100":                {LevelMultiplier: 101},
		"LBaseMaxBytes over 1 TiB":                {LBaseMaxBytes: 1<<40 + 1},
		"TargetFileSize over 1 TiB":               {TargetFileSize: 1<<40 + 1},
	} {
		if _, err := o.resolve(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: %v, want ErrInvalidOptions", name, err)
		}
	}
	for name, o := range map[string]*Options{
		"WriteBufferSize at MaxWriteBufferSize": {WriteBufferSize: MaxWriteBufferSize},
		"the other limits":                      {BlockSize: 256 << 20, BlockRestartInterval: 1 << 16, LevelMultiplier: 100, LBaseMaxBytes: 1 << 40, TargetFileSize: 1 << 40},
	} {
		if _, err := o.resolve(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
