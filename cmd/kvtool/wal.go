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
		`Prints every record of the write-ahead log FILE (NNNNNN.log): its first
sequence number, its count of writes and each write with its sequence
number (SET key => value, DEL key, or RANGEDEL [start, end) for a
DeleteRange, which deletes the keys from start to end, end excluded),
keys and values abbreviated. A damaged record, damaged bytes
skipped, or a last record cut short (what a crash in mid-write leaves,
and what opening the store drops) is reported and gives exit status 1.
A file that is not a log is refused with exit status 1, saying what it
is: a table, a MANIFEST, a CURRENT, or, unless it is named *.log (then it
is a damaged log), a file with no intact record of the log format. An
empty log (what a crash right after its creation leaves) is no error.
The logs of a LevelDB-format store (LevelDB's, goleveldb's, or bloomkv's
with db.Options.Format = FormatLevelDB) hold batches alone: none of the
header and end records bloomkv writes at a memtable switch.`)
	hexOut := f.Bool("hex", false, "print keys and values as hex")
	maxLen := f.Int("max_len", 32, "abbreviate keys and values longer than this many bytes (0: print whole)")
	countsOnly := f.Bool("counts_only", false, "print one line per record, without its writes")
	pos, err := f.parse(args, 1, 1, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	path := pos[0]
	if err := checkLogKind(path, kindWAL); err != nil {
		return fail(stderr, "wal dump", err)
	}
	bf := byteFormat{Hex: *hexOut, Max: *maxLen}
	sum, err := forEachWALRecord(path, func(n int, b *batch, err error) {
		if err != nil {
			fmt.Fprintf(stdout, "record %d: ERROR %v\n", n, err)
			fmt.Fprintf(stderr, "kvtool wal dump: %s record %d: %v\n", path, n, err)
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
			switch op.Kind {
			case base.KindDelete:
				fmt.Fprintf(stdout, "  %d DEL %s\n", b.seq+uint64(i), bf.format(op.Key))
			case base.KindRangeDelete:
				fmt.Fprintf(stdout, "  %d RANGEDEL [%s, %s)\n", b.seq+uint64(i), bf.format(op.Key), bf.format(op.Value))
			default:
				fmt.Fprintf(stdout, "  %d SET %s => %s\n", b.seq+uint64(i), bf.format(op.Key), bf.format(op.Value))
			}
		}
	})
	if err != nil {
		return fail(stderr, "wal dump", err)
	}
	fmt.Fprintf(stdout, "--- %d records, %d writes", sum.records, sum.ops)
	for _, p := range sum.problems() {
		fmt.Fprintf(stdout, ", %s", p)
		fmt.Fprintf(stderr, "kvtool wal dump: %s: %s\n", path, p)
	}
	fmt.Fprintln(stdout)
	if !sum.ok() {
		return exitFailure
	}
	return exitOK
}

// walSummary is what forEachWALRecord read.
type walSummary struct {
	records int // good batch records (not the header and end records of memtable switches)
	ops     int // writes in them
	bad     int // records that are damaged or do not decode
	// damaged is the bytes the log reader skipped before the end of the
	// log (the bad records' bytes); torn is the bytes at its end that
	// are not a whole record, what a crash in mid-write leaves (and any
	// damage there, which looks the same).
	damaged, torn int64
}

// ok reports whether the log read without damage.
func (s walSummary) ok() bool { return s.bad == 0 && s.damaged == 0 && s.torn == 0 }

func (s walSummary) damagedText() string { return fmt.Sprintf("%d damaged bytes skipped", s.damaged) }
func (s walSummary) tornText() string {
	return fmt.Sprintf("the last %d bytes are a record cut short (a write torn by a crash, or damage; opening the store drops them)", s.torn)
}

// problems describes the bytes skipped.
func (s walSummary) problems() []string {
	var out []string
	if s.damaged > 0 {
		out = append(out, s.damagedText())
	}
	if s.torn > 0 {
		out = append(out, s.tornText())
	}
	return out
}

// forEachWALRecord reads the log at path and calls fn with each record's
// number (from 1) and decoded batch, or with its error. It returns what it
// read and an I/O error.
func forEachWALRecord(path string, fn func(n int, b *batch, err error)) (walSummary, error) {
	var sum walSummary
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	r := wal.NewReader(f)
	for n := 1; ; n++ {
		before := r.DroppedBytes()
		rec, err := r.Next()
		if err == io.EOF {
			// The reader drops a record cut short at the end of the log
			// without an error: those are the bytes this last call
			// dropped.
			sum.torn = r.DroppedBytes() - before
			sum.damaged = before
			return sum, nil
		}
		if err != nil && !isCorruption(err) {
			return sum, err
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
			sum.bad++
			fn(n, nil, err)
			continue
		}
		if b.marker == "" {
			sum.records++
			sum.ops += len(b.ops)
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
