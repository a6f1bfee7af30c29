package main

import (
	"encoding/binary"
	"fmt"
	"github.com/bloomkv/bloomkv/db"
	"io"
	"os"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/wal"
)

func runWAL(args []string, stdout, stderr io.Writer) int {
	return subcommand("wal", map[string]command{
		"dump": {"dump", "print every batch record of a write-ahead log", runWALDump},
	}, args, stdout, stderr)
}

func runWALDump(args []string, stdout, stderr io.Writer) int {
	f := newFlags("wal dump", "kvtool wal dump [flags] FILE",
		"Prints every record of the write-ahead log FILE (NNNNNN.log): its first\nsequence number, its count of writes and each write (SET key => value or\nDEL key), keys and values abbreviated. A damaged record is reported and\nskipped, and gives exit status 1; a torn tail, what a crash while\nappending leaves, ends the log quietly.")
	hexOut := f.Bool("hex", false, "print keys and values as hex")
	maxLen := f.Int("max-len", 32, "abbreviate keys and values longer than this many bytes (0: print whole)")
	countsOnly := f.Bool("counts-only", false, "print one line per record, without its writes")
	pos, err := f.parse(args, 1, 1, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	bf := byteFormat{Hex: *hexOut, Max: *maxLen}
	bad := 0
	records, ops, dropped, err := forEachWALRecord(pos[0], func(n int, b *batch, err error) {
		if err != nil {
			bad++
			fmt.Fprintf(stdout, "record %d: ERROR %v\n", n, err)
			fmt.Fprintf(stderr, "kvtool wal dump: %s record %d: %v\n", pos[0], n, err)
			return
		}
		if b.marker != "" {
			fmt.Fprintf(stdout, "record %d: %s\n", n, b.marker)
			return
		}
		fmt.Fprintf(stdout, "record %d: seq %d, count %d, %d bytes\n", n, b.seq, len(b.ops), b.size)
		if *countsOnly {
			return
		}
		for i, op := range b.ops {
			if op.kind == base.KindDelete {
				fmt.Fprintf(stdout, "  %d DEL %s\n", b.seq+uint64(i), bf.format(op.key))
			} else {
				fmt.Fprintf(stdout, "  %d SET %s => %s\n", b.seq+uint64(i), bf.format(op.key), bf.format(op.value))
			}
		}
	})
	if err != nil {
		return fail(stderr, "wal dump", err)
	}
	fmt.Fprintf(stdout, "--- %d records, %d writes", records, ops)
	if dropped > 0 {
		fmt.Fprintf(stdout, ", %d damaged bytes skipped", dropped)
	}
	fmt.Fprintln(stdout)
	if bad > 0 {
		return exitFailure
	}
	return exitOK
}

// forEachWALRecord reads the log at path and calls fn with each record's
// number (from 1) and decoded batch, or with its error. It returns the
// number of good batch records (the header and end records of memtable
// switches are passed to fn but not counted), of writes in them, the
// bytes the log reader skipped as damaged, and an I/O error.
func forEachWALRecord(path string, fn func(n int, b *batch, err error)) (records, ops int, dropped int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	r := wal.NewReader(f)
	for n := 1; ; n++ {
		rec, err := r.Next()
		if err == io.EOF {
			return records, ops, r.DroppedBytes(), nil
		}
		if err != nil && !isCorruption(err) {
			return records, ops, r.DroppedBytes(), err
		}
		var b *batch
		if err == nil {
			switch t, prev := db.ClassifyLogRecord(rec); t {
			case db.LogHeader:
				b = &batch{size: len(rec), marker: fmt.Sprintf("header: the log before is %06d.log", prev)}
			case db.LogEnd:
				b = &batch{marker: "end of log (memtable switch)"}
			default:
				b, err = decodeBatch(rec)
			}
		}
		if err != nil {
			fn(n, nil, err)
			continue
		}
		if b.marker == "" {
			records++
			ops += len(b.ops)
		}
		fn(n, b, nil)
	}
}

// batch is a decoded WAL record: a db.Batch's encoding, which is a 12-byte
// header (uint64 LE first sequence number, uint32 LE count) and then per
// write a kind byte, a uvarint-prefixed key and, for a set, a
// uvarint-prefixed value.
type batch struct {
	seq  uint64
	size int
	ops  []batchOp
	// marker, when not empty, says the record is no batch but the header
	// or the end record a memtable switch writes (see
	// db.ClassifyLogRecord).
	marker string
}

type batchOp struct {
	kind       base.Kind
	key, value []byte
}

const batchHeaderLen = 12

// decodeBatch decodes a WAL record, checking every length against the
// bytes present. The ops alias rec.
func decodeBatch(rec []byte) (*batch, error) {
	if len(rec) < batchHeaderLen {
		return nil, base.CorruptionErrorf("batch of %d bytes is shorter than its header", len(rec))
	}
	b := &batch{seq: binary.LittleEndian.Uint64(rec), size: len(rec)}
	count := binary.LittleEndian.Uint32(rec[8:])
	p := rec[batchHeaderLen:]
	for len(p) > 0 {
		kind := base.Kind(p[0])
		if kind > base.KindMax {
			return nil, base.CorruptionErrorf("write %d has unknown kind %d", len(b.ops), p[0])
		}
		var op batchOp
		var err error
		op.kind = kind
		if op.key, p, err = lengthPrefixed(p[1:]); err != nil {
			return nil, fmt.Errorf("write %d key: %w", len(b.ops), err)
		}
		if kind == base.KindSet {
			if op.value, p, err = lengthPrefixed(p); err != nil {
				return nil, fmt.Errorf("write %d value: %w", len(b.ops), err)
			}
		}
		b.ops = append(b.ops, op)
	}
	if uint64(len(b.ops)) != uint64(count) {
		return nil, base.CorruptionErrorf("batch header says %d writes, found %d", count, len(b.ops))
	}
	return b, nil
}

func lengthPrefixed(p []byte) (field, rest []byte, err error) {
	l, n := binary.Uvarint(p)
	if n <= 0 {
		return nil, nil, base.CorruptionErrorf("bad length")
	}
	p = p[n:]
	if l > uint64(len(p)) {
		return nil, nil, base.CorruptionErrorf("length %d runs past the %d bytes left", l, len(p))
	}
	return p[:l], p[l:], nil
}
