package main

import (
	"fmt"
	"io"

	"github.com/bloomkv/bloomkv/internal/manifest"
)

func runManifest(args []string, stdout, stderr io.Writer) int {
	return subcommand("manifest", map[string]command{
		"dump": {"dump", "print every version edit of a MANIFEST, then the version they build", runManifestDump},
	}, args, stdout, stderr)
}

func runManifestDump(args []string, stdout, stderr io.Writer) int {
	f := newFlags("manifest dump", "kvtool manifest dump [flags] FILE|DIR",
		`Prints every version edit of the MANIFEST FILE (or of the MANIFEST that
DIR's CURRENT names): comparer, log and file numbers, last sequence, and
the tables each edit adds and deletes (number, size, sequence numbers, key
range, and rangedels=N for a table holding N range tombstones, whose key
range then covers them: a bound of kind RANGEDEL is a tombstone's start,
or, as the largest, its end, which the tombstone excludes). Then it prints
the version the edits build, and the store's format, which the comparer
tells: a LevelDB-format store's MANIFEST (comparer
leveldb.BytewiseComparator, written by LevelDB, goleveldb or bloomkv)
records its tables without sequence numbers: seqs=unknown. A damaged record is reported, skipped, and gives exit status 1, as
does a MANIFEST without any version edit. A file that is not a MANIFEST
is refused with exit status 1, saying what it is: a write-ahead log, a
table, a CURRENT (give its directory instead), or, unless it is named
MANIFEST-*, a file with no intact record of the log format.`)
	hexOut := f.Bool("hex", false, "print keys as hex")
	maxLen := f.Int("max_len", 64, "abbreviate keys longer than this many bytes (0: print whole)")
	pos, err := f.parse(args, 1, 1, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	path, err := manifestPathOf(pos[0])
	if err != nil {
		return fail(stderr, "manifest dump", err)
	}
	if err := checkLogKind(path, kindManifest); err != nil {
		return fail(stderr, "manifest dump", err)
	}
	bf := byteFormat{Hex: *hexOut, Max: *maxLen}
	b := manifest.NewBuilder(nil)
	bad, records := 0, 0
	comparer := ""
	dropped, err := forEachEdit(path, func(n int, e *manifest.VersionEdit, err error) {
		records = n
		if err != nil {
			bad++
			fmt.Fprintf(stdout, "record %d: ERROR %v\n", n, err)
			fmt.Fprintf(stderr, "kvtool manifest dump: %s record %d: %v\n", path, n, err)
			return
		}
		fmt.Fprintf(stdout, "record %d:\n", n)
		printEdit(stdout, e, bf)
		if e.Comparer != "" {
			comparer = e.Comparer
		}
		if err := b.Apply(e); err != nil {
			bad++
			fmt.Fprintf(stdout, "  ERROR applying edit: %v\n", err)
			fmt.Fprintf(stderr, "kvtool manifest dump: %s record %d: %v\n", path, n, err)
		}
	})
	if err != nil {
		return fail(stderr, "manifest dump", err)
	}
	if dropped > 0 {
		bad++
		fmt.Fprintf(stderr, "kvtool manifest dump: %s: %d damaged bytes skipped\n", path, dropped)
	}
	if records == 0 {
		bad++
		fmt.Fprintf(stderr, "kvtool manifest dump: %s holds no version edit\n", path)
	}
	v, err := b.Finish()
	if err != nil {
		return fail(stderr, "manifest dump", err)
	}
	fmt.Fprintf(stdout, "--- version:\n")
	for level, files := range v.Files {
		for _, m := range files {
			fmt.Fprintf(stdout, "L%d %s\n", level, formatMeta(m, bf))
		}
	}
	st := storeState{comparer: comparer}
	fmt.Fprintf(stdout, "--- format: %s", st.format())
	if comparer == "" {
		fmt.Fprintf(stdout, " (no comparer recorded)\n")
	} else {
		fmt.Fprintf(stdout, " (comparer %s)\n", comparer)
	}
	if bad > 0 {
		return exitFailure
	}
	return exitOK
}

// formatSeqs renders the sequence numbers of a table's entries as
// SMALLEST-LARGEST, or "unknown" for a table recorded with LevelDB's
// new-file tag 7, which records none (manifest.FileMetadata.SeqsUnknown).
func formatSeqs(m *manifest.FileMetadata) string {
	if m.SeqsUnknown {
		return "unknown"
	}
	return fmt.Sprintf("%d-%d", m.SmallestSeq, m.LargestSeq)
}

// printEdit prints the fields of e that are set, one per line.
func printEdit(w io.Writer, e *manifest.VersionEdit, bf byteFormat) {
	if e.Comparer != "" {
		fmt.Fprintf(w, "  comparer: %s\n", e.Comparer)
	}
	if e.HasLogNumber {
		fmt.Fprintf(w, "  log number: %d\n", e.LogNumber)
	}
	if e.HasPrevLogNumber {
		fmt.Fprintf(w, "  prev log number: %d\n", e.PrevLogNumber)
	}
	if e.HasNextFileNumber {
		fmt.Fprintf(w, "  next file number: %d\n", e.NextFileNumber)
	}
	if e.HasLastSequence {
		fmt.Fprintf(w, "  last sequence: %d\n", e.LastSequence)
	}
	for _, cp := range e.CompactPointers {
		fmt.Fprintf(w, "  compact pointer: L%d %s\n", cp.Level, bf.formatBound(cp.Key))
	}
	for _, d := range e.DeletedFiles {
		fmt.Fprintf(w, "  deleted file: L%d %06d\n", d.Level, d.FileNum)
	}
	for _, nf := range e.NewFiles {
		fmt.Fprintf(w, "  new file: L%d %s\n", nf.Level, formatMeta(nf.Meta, bf))
	}
}

// formatMeta renders a table of a version edit. Its bounds may be of kind
// RANGEDEL (formatBound); rangedels=N, as manifest.FileMetadata.String
// writes it, counts its range tombstones.
func formatMeta(m *manifest.FileMetadata, bf byteFormat) string {
	s := fmt.Sprintf("%06d size=%d seqs=%s [%s .. %s]", m.FileNum, m.Size, formatSeqs(m),
		bf.formatBound(m.Smallest), bf.formatBound(m.Largest))
	if m.RangeDels > 0 {
		s += fmt.Sprintf(" rangedels=%d", m.RangeDels)
	}
	return s
}
