package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/bloomkv/bloomkv/db"
)

func runExplain(args []string, stdout, stderr io.Writer) int {
	f := newFlags("explain", "kvtool explain [flags] DIR KEY",
		"Looks KEY up in the store in DIR (db.DB.ExplainGet) and prints the\nlookup's path through the tree: the memtables, then each table it\nconsidered, newest first, and what became of it: outside its key range,\nskipped by its filter (policy, bits per key, answer), or read (the index\nis in memory; each data block from the block cache or the file, stored\nand decoded sizes), ending found, deleted, or absent (a filter's false\npositive is named as such), with the time of each step. A key that is\nnot there is not an error. The store is opened read-only: nothing in DIR\nchanges; a fresh open has an empty block cache, so blocks come from the\nfile.")
	s := storeFlags{readOnly: true}
	s.register(f, false)
	hexIO := f.Bool("hex", false, "KEY (and the bounds) are hex")
	asJSON := f.Bool("json", false, "print the trace as JSON (db.LookupTrace, db.SeekTrace) instead of a tree")
	seek := f.Bool("seek", false, "explain an iterator's Seek to KEY instead of a Get (db.DB.ExplainSeek): which tables the bounds and the prefix and range filters left out, where each source landed, what blocks it read")
	lower := f.String("lower", "", "with --seek: the iterator's lower bound (inclusive); empty: none")
	upper := f.String("upper", "", "with --seek: the iterator's upper bound (exclusive); empty: none")
	prefix := f.String("prefix", "", "with --seek: bound the iterator to the keys with this prefix (db.PrefixBounds), as a prefix scan does")
	htmlOut := f.String("html", "", "also write to this file one self-contained HTML page (no network needed to view it) that draws the tree, as kvtool lsm --html does, with the lookup's path on it: each table it considered marked by what became of it, and the steps with their times beside it (\"wrote FILE\" goes to stderr). The file must not be in DIR, nor a link to a file of the store (refused); a link at FILE is replaced by the page, never written through. When the page lists problems (an unreadable table), explain exits 1 after printing the trace, as lsm --html does")
	probes := f.Int("fpr_probes", defaultFPRProbes, "with --html: absent keys to ask each table's filter about, to measure its false-positive rate for the picture; 0: do not measure")
	pos, err := f.parse(args, 2, 2, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	withPage := isFlagSet(f, "html")
	if withPage {
		if *probes < 0 {
			fmt.Fprintf(stderr, "kvtool explain: --fpr_probes must not be negative\n")
			return exitUsage
		}
		if err := checkPagePath(*htmlOut, pos[0]); err != nil {
			return fail(stderr, "explain", err)
		}
	}
	key, err := parseBytes(pos[1], *hexIO)
	if err != nil {
		return fail(stderr, "explain", err)
	}
	if !*seek && (*lower != "" || *upper != "" || *prefix != "") {
		return fail(stderr, "explain", fmt.Errorf("--lower, --upper and --prefix need --seek"))
	}
	var ro db.ReadOptions
	for _, b := range []struct {
		arg string
		dst *[]byte
	}{{*lower, &ro.LowerBound}, {*upper, &ro.UpperBound}} {
		if b.arg != "" {
			if *b.dst, err = parseBytes(b.arg, *hexIO); err != nil {
				return fail(stderr, "explain", err)
			}
		}
	}
	if *prefix != "" {
		p, err := parseBytes(*prefix, *hexIO)
		if err != nil {
			return fail(stderr, "explain", err)
		}
		ro.LowerBound, ro.UpperBound = db.PrefixBounds(p)
	}
	// problems counts what the page lists as wrong with the store: the
	// command then fails, after printing the trace, as lsm --html does.
	problems := 0
	err = func() (err error) {
		d, err := openStore(f.Name(), pos[0], s, stderr)
		if err != nil {
			return err
		}
		defer closeStore(d, &err)
		var tr fmt.Stringer
		var st *seekOrGet
		if *seek {
			t, err := d.ExplainSeek(key, &ro)
			if err != nil {
				return err
			}
			tr, st = t, &seekOrGet{seek: t}
		} else {
			_, lt, _ := d.ExplainGet(key, nil)
			if lt.Err != "" {
				return fmt.Errorf("%s", lt.Err)
			}
			tr, st = lt, &seekOrGet{get: lt}
		}
		if withPage {
			// The store is still open (and locked): the MANIFEST read
			// now holds the version the lookup read.
			if problems, err = writeExplainPage(*htmlOut, pos[0], st, *probes, stderr); err != nil {
				return err
			}
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(tr)
		}
		_, err = io.WriteString(stdout, tr.String())
		return err
	}()
	if err != nil {
		return fail(stderr, "explain", err)
	}
	if problems > 0 {
		return exitFailure
	}
	return exitOK
}

// seekOrGet is the trace an explain page draws: one of the two.
type seekOrGet struct {
	get  *db.LookupTrace
	seek *db.SeekTrace
}

// writeExplainPage writes the explain page of the trace tr of the store in
// dir to path, says so on stderr with the problems the page lists, and
// returns how many it lists.
func writeExplainPage(path, dir string, tr *seekOrGet, probes int, stderr io.Writer) (int, error) {
	p, sp, src, err := buildPageOf(dir, pageOptions{kind: "explain", fprProbes: probes})
	if err != nil {
		return 0, err
	}
	title := "bloomkv lookup: "
	if tr.seek != nil {
		p.Trace = seekTrace(tr.seek, sp)
		title += "seek "
	} else {
		p.Trace = getTrace(tr.get, sp, src.st.version)
		title += "get "
	}
	page, err := renderPage(p, title+p.Trace.Key+" in "+dir)
	if err != nil {
		return 0, err
	}
	if err := writePage(path, dir, page); err != nil {
		return 0, err
	}
	for _, pr := range p.Problems {
		fmt.Fprintf(stderr, "kvtool explain: %s\n", pr)
	}
	fmt.Fprintf(stderr, "kvtool explain: %s\n", pageSummary(path, p))
	return len(p.Problems), nil
}
