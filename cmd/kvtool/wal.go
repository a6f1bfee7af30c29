package main

import (
	"fmt"
	"io"
	"os"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/logrec"
	"github.com/bloomkv/bloomkv/wal"
)

func runWAL(args []string, stdout, stderr io.Writer) int {
	return subcommand("wal", map[string]command{
		"dump": {"dump", "print every batch record of a write-ahead log", runWALDump},
	}, args, stdout, stderr)
}

func runWALDump(args []string, stdout, stderr io.Writer) int {
	f := newFlags("wal dump", "kvtool wal dump [flags] FILE",
		"Prints every record of the write-ahead log FILE (NNNNNN.log): its first\nsequence number, its count of writes and each write (SET key => value or\nDEL key), keys and values abbreviated. A damaged record (or damaged bytes\nskipped) is reported and gives exit status 1, as does a file with no\nrecord of the log format at all (not a log file); a torn tail, what a\ncrash while appending leaves, ends the log quietly.")
	hexOut := f.Bool("hex", false, "print keys and values as hex")
	maxLen := f.Int("max_len", 32, "abbreviate keys and values longer than this many bytes (0: print whole)")
	countsOnly := f.Bool("counts_only", false, "print one line per record, without its writes")
	pos, err := f.parse(args, 1, 1, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	bf := byteFormat{Hex: *hexOut, Max: *maxLen}
	bad, markers := 0, 0
	records, ops, dropped, err := forEachWALRecord(pos[0], func(n int, b *batch, err error) {
		if err != nil {
			bad++
			fmt.Fprintf(stdout, "record %d: ERROR %v\n", n, err)
			fmt.Fprintf(stderr, "kvtool wal dump: %s record %d: %v\n", pos[0], n, err)
			return
		}
		if b.marker != "" {
			markers++
			fmt.Fprintf(stdout, "record %d: %s\n", n, b.marker)
			return
		}
		fmt.Fprintf(stdout, "record %d: seq %d, count %d, %d bytes\n", n, b.seq, len(b.ops), b.size)
		if *countsOnly {
			return
		}
		for i, op := range b.ops {
			if op.Kind == base.KindDelete {
				fmt.Fprintf(stdout, "  %d DEL %s\n", b.seq+uint64(i), bf.format(op.Key))
			} else {
				fmt.Fprintf(stdout, "  %d SET %s => %s\n", b.seq+uint64(i), bf.format(op.Key), bf.format(op.Value))
			}
		}
	})
	if err != nil {
		return fail(stderr, "wal dump", err)
	}
	if records == 0 && markers == 0 && bad == 0 && dropped > 0 {
		return fail(stderr, "wal dump", fmt.Errorf("%s is not a log file: none of its %d bytes is a record of the write-ahead log format", pos[0], dropped))
	}
	fmt.Fprintf(stdout, "--- %d records, %d writes", records, ops)
	if dropped > 0 {
		fmt.Fprintf(stdout, ", %d damaged bytes skipped", dropped)
		fmt.Fprintf(stderr, "kvtool wal dump: %s: %d damaged bytes skipped\n", pos[0], dropped)
	}
	fmt.Fprintln(stdout)
	if bad > 0 || dropped > 0 {
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
			switch t, prev := logrec.Classify(rec); t {
			case logrec.Header:
				b = &batch{size: len(rec), marker: fmt.Sprintf("header: the log before is %06d.log", prev)}
			case logrec.End:
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

// batch is a decoded WAL record: a db.Batch's encoding (decoded by
// logrec.DecodeBatch), or a marker of a memtable switch.
type batch struct {
	seq  uint64
	size int
	ops  []logrec.Op
	// marker, when not empty, says the record is no batch but the header
	// or the end record a memtable switch writes (see
	// logrec.Classify).
	marker string
}

// decodeBatch decodes a batch record, checking every length against the
// bytes present. The ops alias rec.
func decodeBatch(rec []byte) (*batch, error) {
	seq, ops, err := logrec.DecodeBatch(rec)
	if err != nil {
		return nil, err
	}
	return &batch{seq: seq, size: len(rec), ops: ops}, nil
}
