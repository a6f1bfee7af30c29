package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

func runCheck(args []string, stdout, stderr io.Writer) int {
	f := newFlags("check", "kvtool check [flags] DIR",
		"Verifies the store in DIR without opening it: CURRENT and every record of\nthe MANIFEST it names; for every table the MANIFEST lists, that the file\nis there with the recorded size, key range (its entries' and its range\ntombstones') and count of range tombstones, the checksum of every\nblock, the order of its keys and that its filter admits every key; and\nevery record of every write-ahead log. It prints one line per file and\nwhat is wrong, and exits with status 1 when anything is.\n\nIt first prints the store's format, which the MANIFEST's comparer tells:\nbloomkv's (bloomkv.BytewiseComparator) or LevelDB's\n(leveldb.BytewiseComparator: a store LevelDB or goleveldb wrote, or\nbloomkv with db.Options.Format = FormatLevelDB), whose tables are\nNNNNNN.ldb files of LevelDB's table format, which must hold no range\ntombstones.")
	pos, err := f.parse(args, 1, 1, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	dir := pos[0]
	problems := 0
	problem := func(format string, args ...any) {
		problems++
		msg := fmt.Sprintf(format, args...)
		fmt.Fprintf(stdout, "ERROR %s\n", msg)
		fmt.Fprintf(stderr, "kvtool check: %s\n", msg)
	}

	st, err := loadState(dir)
	if err != nil {
		return fail(stderr, "check", err)
	}
	mname := filepath.Base(st.manifestPath)
	for _, p := range st.problems {
		problem("%v", p)
	}
	format := st.format()
	switch st.comparer {
	case "":
		fmt.Fprintf(stdout, "format: %s (%s names no comparer)\n", format, mname)
	case comparerName, levelDBComparerName:
		fmt.Fprintf(stdout, "format: %s (comparer %s)\n", format, st.comparer)
	default:
		problem("%s: written with comparer %q, neither bloomkv's %q nor LevelDB's %q", mname, st.comparer, comparerName, levelDBComparerName)
	}
	if len(st.problems) == 0 {
		fmt.Fprintf(stdout, "%s: ok (%d records, %d tables, last sequence %d)\n", mname, st.records, len(st.version.AllFileNums()), st.lastSeq)
	}

	live := map[uint64]bool{}
	tables := 0
	for level, files := range st.version.Files {
		for _, m := range files {
			live[m.FileNum] = true
			tables++
			name := filepath.Base(tablePath(dir, m.FileNum))
			entries, err := checkTable(dir, m, format)
			if err != nil {
				problem("L%d %s: %v", level, name, err)
				continue
			}
			tombstones := ""
			if m.RangeDels > 0 {
				tombstones = ", " + countOf(m.RangeDels, "range tombstone")
			}
			fmt.Fprintf(stdout, "L%d %s: ok (%d entries%s, %s)\n", level, name, entries, tombstones, humanBytes(m.Size))
		}
	}

	files, err := listStoreFiles(dir)
	if err != nil {
		return fail(stderr, "check", err)
	}
	logRecords := 0
	for _, sf := range files {
		switch sf.kind {
		case "table":
			if !live[sf.num] {
				fmt.Fprintf(stdout, "%s: not in the MANIFEST (left over; the next open deletes it)\n", sf.name)
			}
		case "log":
			path := filepath.Join(dir, sf.name)
			var bad []string
			sum, err := forEachWALRecord(path, func(n int, _ *batch, err error) {
				if err != nil {
					bad = append(bad, fmt.Sprintf("record %d: %v", n, err))
				}
			})
			if err != nil {
				problem("%s: %v", sf.name, err)
				continue
			}
			for _, b := range bad {
				problem("%s %s", sf.name, b)
			}
			if sum.damaged > 0 && len(bad) == 0 {
				problem("%s: %s", sf.name, sum.damagedText())
			}
			if sum.torn > 0 {
				problem("%s: %s", sf.name, sum.tornText())
			}
			logRecords += sum.records
			state := "live"
			if sf.num < st.logNum && sf.num != st.prevLogNum {
				state = "obsolete"
			}
			if sum.ok() {
				fmt.Fprintf(stdout, "%s: ok (%s, %d records, %d writes)\n", sf.name, state, sum.records, sum.ops)
			}
		case "manifest":
			if sf.name != mname {
				fmt.Fprintf(stdout, "%s: not named by CURRENT (left over; the next open deletes it)\n", sf.name)
			}
		}
	}
	if problems > 0 {
		fmt.Fprintf(stdout, "FAILED: %d problems\n", problems)
		return exitFailure
	}
	fmt.Fprintf(stdout, "OK: MANIFEST, %d tables, %d log records verified\n", tables, logRecords)
	return exitOK
}

// checkTable verifies one live table of a store of the given format
// against its MANIFEST entry and returns its number of entries.
func checkTable(dir string, m *manifest.FileMetadata, format db.Format) (uint64, error) {
	path := tablePath(dir, m.FileNum)
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if uint64(fi.Size()) != m.Size {
		return 0, base.CorruptionErrorf("file is %d bytes, the MANIFEST says %d", fi.Size(), m.Size)
	}
	r, f, err := openTable(path, true)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	defer r.Close()
	if err := r.VerifyChecksums(); err != nil {
		return 0, err
	}
	if format == db.FormatLevelDB && r.Format() != sstable.FormatLevelDB {
		// db writes LevelDB's tables into such a store; LevelDB and
		// goleveldb could not read one of bloomkv's.
		return 0, base.CorruptionErrorf("a table in %s's format in a LevelDB-format store", r.Format())
	}
	// A LevelDB table records no counts or bounds: a scan tells them.
	p, err := r.ScanProperties()
	if err != nil {
		return 0, err
	}
	ts := r.RangeDels()
	if uint64(len(ts)) != m.RangeDels {
		// The store reads a table's tombstones only when the MANIFEST
		// counts some: a count of 0 would hide them from reads.
		return 0, base.CorruptionErrorf("the table holds %d range tombstones, the MANIFEST says %d", len(ts), m.RangeDels)
	}
	lo, hi := tableBounds(p, ts)
	if !bytes.Equal(lo, m.Smallest) || !bytes.Equal(hi, m.Largest) {
		// A store written before tombstone ends t+"\x00" got the bound t
		// recorded the end itself: as valid, one key wider.
		if olo, ohi := tableBoundsEnd(p, ts, func(e []byte) []byte { return e }); bytes.Equal(olo, m.Smallest) && bytes.Equal(ohi, m.Largest) {
			lo, hi = olo, ohi
		}
	}
	if !bytes.Equal(lo, m.Smallest) || !bytes.Equal(hi, m.Largest) {
		bf := byteFormat{Max: 32}
		return 0, base.CorruptionErrorf("key range [%s .. %s] differs from the MANIFEST's [%s .. %s]",
			bf.formatBoundOrNone(lo), bf.formatBoundOrNone(hi), bf.formatBound(m.Smallest), bf.formatBound(m.Largest))
	}
	if r.HasFilter() {
		keys, err := distinctUserKeys(r)
		if err != nil {
			return 0, err
		}
		if n := falseNegatives(r, keys); n > 0 {
			return 0, base.CorruptionErrorf("filter %s denies %d of the table's %d keys", p.FilterPolicy, n, len(keys))
		}
	}
	return p.NumEntries, nil
}
