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
	pos, err := f.parse(args, 2, 2, stdout, stderr)
	if err != nil {
		return usageStatus(err)
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
	err = func() (err error) {
		d, err := openStore(f.Name(), pos[0], s, stderr)
		if err != nil {
			return err
		}
		defer closeStore(d, &err)
		var tr fmt.Stringer
		if *seek {
			if tr, err = d.ExplainSeek(key, &ro); err != nil {
				return err
			}
		} else {
			_, lt, _ := d.ExplainGet(key, nil)
			if lt.Err != "" {
				return fmt.Errorf("%s", lt.Err)
			}
			tr = lt
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
	return exitOK
}
