package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

func runLSM(args []string, stdout, stderr io.Writer) int {
	f := newFlags("lsm", "kvtool lsm [flags] DIR",
		"Lists the tables of the store in DIR level by level, as its MANIFEST\ndescribes them: file number, size, entries, range tombstones (rangedels,\nfrom the MANIFEST), filter policy and bits per key (from each table's\nproperties), sequence numbers and user-key range. A range that ends at\na range tombstone's end is marked (tombstone end): the table holds no key\npast it, and may hold none at it. It reads the files without taking the store's LOCK.\n\nIn a LevelDB-format store (see kvtool check) the tables record no entry\ncounts or bits per key: lsm counts them by reading each table's data\nblocks, and the MANIFEST records no sequence numbers (seqs unknown).\n\nWith --html FILE it writes the tree as a page instead: see --html.")
	hexOut := f.Bool("hex", false, "print keys as hex")
	maxLen := f.Int("max_len", 24, "abbreviate keys longer than this many bytes (0: print whole)")
	htmlOut := f.String("html", "", "instead of the list, write to this file one self-contained HTML page (no network needed to view it) that draws the tree: a row per level, a box per table, as wide as its bytes and placed by its key range, coloured by its filter's measured false-positive rate or bits per key; hover or click a box for its properties. A slider replays the MANIFEST's version edits (flushes, compactions, ...) one by one. The file must not be in DIR, nor a link to a file of the store (refused); the page is written beside it and renamed over it, so a link at FILE is replaced, never written through. Exits 1 when the page lists problems (an unreadable table). A table the MANIFEST names that a writer deletes meanwhile makes kvtool read the store again")
	probes := f.Int("fpr_probes", defaultFPRProbes, "with --html: absent keys to ask each table's filter about, to measure its false-positive rate (a table is read only for the filter's \"maybe\" answers); 0: do not measure")
	pos, err := f.parse(args, 1, 1, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	if isFlagSet(f, "html") {
		return runLSMHTML(pos[0], *htmlOut, *probes, stdout, stderr)
	}
	st, err := loadState(pos[0])
	if err != nil {
		return fail(stderr, "lsm", err)
	}
	bf := byteFormat{Hex: *hexOut, Max: *maxLen}
	failed := false
	for _, p := range st.problems {
		fmt.Fprintf(stderr, "kvtool lsm: %v\n", p)
		failed = true
	}

	fmt.Fprintf(stdout, "%s: last sequence %d, log %06d, next file %06d, format %s\n\n",
		filepath.Base(st.manifestPath), st.lastSeq, st.logNum, st.nextFileNum, st.format())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "level\tfile\tsize\tentries\trangedels\tfilter\tbits/key\tseqs\tsmallest .. largest\n")
	var totalFiles int
	var totalBytes uint64
	for level, files := range st.version.Files {
		for _, m := range files {
			entries, policy, bits := "?", "?", "?"
			r, file, err := openTable(tablePath(st.dir, m.FileNum), false)
			if err != nil {
				fmt.Fprintf(stderr, "kvtool lsm: table %06d: %v\n", m.FileNum, err)
				failed = true
			} else {
				// A LevelDB table's counts come from a scan.
				if p, err := r.ScanProperties(); err != nil {
					fmt.Fprintf(stderr, "kvtool lsm: table %06d: %v\n", m.FileNum, err)
					failed = true
				} else {
					entries = fmt.Sprint(p.NumEntries)
					policy, bits = "none", "-"
					if p.FilterPolicy != "" {
						policy, bits = p.FilterPolicy, fmt.Sprintf("%.2f", p.FilterBitsPerKey)
					}
				}
				r.Close()
				file.Close()
			}
			fmt.Fprintf(tw, "L%d\t%06d\t%s\t%s\t%d\t%s\t%s\t%s\t%s .. %s\n",
				level, m.FileNum, humanBytes(m.Size), entries, m.RangeDels, policy, bits,
				formatSeqs(m), bf.formatBoundUser(m.Smallest, false), bf.formatBoundUser(m.Largest, true))
		}
		totalFiles += len(files)
		totalBytes += st.version.LevelBytes(level)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\nlevel  files  size\n")
	for level := range st.version.Files {
		if n := st.version.NumFiles(level); n > 0 {
			fmt.Fprintf(stdout, "L%-5d %5d  %s\n", level, n, humanBytes(st.version.LevelBytes(level)))
		}
	}
	fmt.Fprintf(stdout, "total  %5d  %s\n", totalFiles, humanBytes(totalBytes))
	if failed {
		return exitFailure
	}
	return exitOK
}

// runLSMHTML is kvtool lsm --html FILE DIR.
func runLSMHTML(dir, path string, probes int, stdout, stderr io.Writer) int {
	if probes < 0 {
		fmt.Fprintf(stderr, "kvtool lsm: --fpr_probes must not be negative\n")
		return exitUsage
	}
	if err := checkPagePath(path, dir); err != nil {
		return fail(stderr, "lsm", err)
	}
	p, _, _, err := buildPageOf(dir, pageOptions{kind: "lsm", history: true, fprProbes: probes})
	if err != nil {
		return fail(stderr, "lsm", err)
	}
	page, err := renderPage(p, "bloomkv LSM tree: "+dir)
	if err != nil {
		return fail(stderr, "lsm", err)
	}
	if err := writePage(path, dir, page); err != nil {
		return fail(stderr, "lsm", err)
	}
	for _, pr := range p.Problems {
		fmt.Fprintf(stderr, "kvtool lsm: %s\n", pr)
	}
	fmt.Fprintln(stdout, pageSummary(path, p))
	if len(p.Problems) > 0 {
		return exitFailure
	}
	return exitOK
}

// isFlagSet reports whether the command line set flag name (in either
// spelling).
func isFlagSet(f *cmdFlags, name string) bool {
	set := false
	alias := strings.ReplaceAll(name, "_", "-")
	f.Visit(func(fl *flag.Flag) { set = set || fl.Name == name || fl.Name == alias })
	return set
}
