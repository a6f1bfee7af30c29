package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/bloomkv/bloomkv/db"
)

// storeFlags are the flags of the commands that open a store with db.Open.
type storeFlags struct {
	filter string
	create bool
	// readOnly opens the store with db.Options.ReadOnly: the commands that
	// only read (get, scan, metrics) change nothing in the directory.
	readOnly bool
	// writesTables is set for a read-only open that still writes tables
	// elsewhere (checkpoint writes the logs' contents into a new table).
	writesTables bool
}

// writes reports whether the open may write tables: put and delete
// (flushes, compactions, the replayed log) and checkpoint.
func (s *storeFlags) writes() bool { return !s.readOnly || s.writesTables }

// filterSyntax lists what --filter accepts.
const filterSyntax = "bloom[:BITS], leveldb[:BITS], blocked[:BITS], binaryfuse[:8|16] (or fuse[:8|16]) or none"

func (s *storeFlags) register(f *cmdFlags, canCreate bool) {
	if s.writes() {
		f.StringVar(&s.filter, "filter", "", "filter policy of the tables this command writes: "+filterSyntax+
			"; default: the store's own, the policy and bits per key of its tables (per level; bloom:10 for a new store). A --filter that differs is used, with a note")
	} else {
		f.StringVar(&s.filter, "filter", "", "filter policy: "+filterSyntax+" (accepted for scripts; this read-only open writes no table, and reads every table's filter by the policy it names)")
	}
	if canCreate {
		f.BoolVar(&s.create, "create", false, "create the store if DIR holds none")
	}
}

// openStore opens the store in dir, read-only for the commands that only
// read, and refusing to create one unless asked. Its errors say plainly
// when another process holds the store. A command that writes tables
// writes them with the store's own filter policies (storeFilters) unless
// --filter says otherwise; notes about the choice go to stderr, prefixed
// with the command's name.
func openStore(name, dir string, s storeFlags, stderr io.Writer) (*db.DB, error) {
	p, err := parsePolicy(s.filter)
	if err != nil {
		return nil, fmt.Errorf("%w: --filter: %v", errBadFilterFlag, err)
	}
	o := &db.Options{FilterPolicy: p, ErrorIfMissing: !s.create, ReadOnly: s.readOnly}
	// The tables' extractor and range filter: iterators ask them, and the
	// tables a command writes keep them.
	o.Prefix, o.RangeFilter = storeScanFilters(dir)
	if s.writes() {
		sf := storeFilters(dir)
		if s.filter == "" {
			o.FilterPolicy, o.LevelFilterPolicies = sf.policy, sf.levels
		}
		for _, n := range sf.notes(s.filter, p) {
			fmt.Fprintf(stderr, "kvtool %s: note: %s\n", name, n)
		}
	}
	d, err := db.Open(dir, o)
	switch {
	case errors.Is(err, db.ErrLocked) && s.readOnly:
		return nil, fmt.Errorf("store %s is locked: another process has it open for writing (%w)", dir, err)
	case errors.Is(err, db.ErrLocked):
		return nil, fmt.Errorf("store %s is locked: another process has it open (%w)", dir, err)
	case errors.Is(err, db.ErrDBMissing):
		return nil, fmt.Errorf("no store in %s (%w)", dir, err)
	}
	return d, err
}

// errBadFilterFlag marks a --filter value kvtool cannot parse: a usage
// error (exit status 2), found only when the store is opened.
var errBadFilterFlag = errors.New("bad flag")

// closeStore closes d, turning a failure to close into the command's error.
func closeStore(d *db.DB, err *error) {
	if cerr := d.Close(); *err == nil && cerr != nil {
		*err = fmt.Errorf("close: %w", cerr)
	}
}

func runGet(args []string, stdout, stderr io.Writer) int {
	f := newFlags("get", "kvtool get [flags] DIR KEY",
		"Prints the value of KEY in the store in DIR, escaped as text (or as hex\nwith --hex). A key that is not there fails with exit status 1. The store\nis opened read-only: nothing in DIR changes.")
	s := storeFlags{readOnly: true}
	s.register(f, false)
	hexIO := f.Bool("hex", false, "KEY is hex, and the value is printed as hex")
	raw := f.Bool("raw", false, "write the value's bytes exactly, without escaping or newline")
	pos, err := f.parse(args, 2, 2, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	key, err := parseBytes(pos[1], *hexIO)
	if err != nil {
		return fail(stderr, "get", err)
	}
	err = func() (err error) {
		d, err := openStore(f.Name(), pos[0], s, stderr)
		if err != nil {
			return err
		}
		defer closeStore(d, &err)
		v, err := d.Get(key, nil)
		if errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("key %s not found", byteFormat{Hex: *hexIO}.format(key))
		}
		if err != nil {
			return err
		}
		if *raw {
			_, err = stdout.Write(v)
			return err
		}
		_, err = fmt.Fprintln(stdout, byteFormat{Hex: *hexIO}.format(v))
		return err
	}()
	if err != nil {
		return fail(stderr, "get", err)
	}
	return exitOK
}

func runPut(args []string, stdout, stderr io.Writer) int {
	f := newFlags("put", "kvtool put [flags] DIR KEY VALUE",
		"Sets KEY to VALUE in the store in DIR (with --create, making the store if\nneeded). The write is synced to the write-ahead log before put returns.\nThe tables the open writes (the replayed log, flushes, compactions) get\nthe store's own filter policy, read from its tables, unless --filter\nsays otherwise.")
	var s storeFlags
	s.register(f, true)
	hexIn := f.Bool("hex", false, "KEY and VALUE are hex")
	pos, err := f.parse(args, 3, 3, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	key, err := parseBytes(pos[1], *hexIn)
	if err != nil {
		return fail(stderr, "put", err)
	}
	value, err := parseBytes(pos[2], *hexIn)
	if err != nil {
		return fail(stderr, "put", err)
	}
	err = func() (err error) {
		d, err := openStore(f.Name(), pos[0], s, stderr)
		if err != nil {
			return err
		}
		defer closeStore(d, &err)
		return d.Put(key, value, &db.WriteOptions{Sync: true})
	}()
	if err != nil {
		return fail(stderr, "put", err)
	}
	return exitOK
}

func runDelete(args []string, stdout, stderr io.Writer) int {
	f := newFlags("delete", "kvtool delete [flags] DIR KEY",
		"Deletes KEY from the store in DIR. Deleting a missing key is not an error.\nThe deletion is synced to the write-ahead log before delete returns.\nThe tables the open writes get the store's own filter policy, as with put.")
	var s storeFlags
	s.register(f, false)
	hexIn := f.Bool("hex", false, "KEY is hex")
	pos, err := f.parse(args, 2, 2, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	key, err := parseBytes(pos[1], *hexIn)
	if err != nil {
		return fail(stderr, "delete", err)
	}
	err = func() (err error) {
		d, err := openStore(f.Name(), pos[0], s, stderr)
		if err != nil {
			return err
		}
		defer closeStore(d, &err)
		return d.Delete(key, &db.WriteOptions{Sync: true})
	}()
	if err != nil {
		return fail(stderr, "delete", err)
	}
	return exitOK
}

// scanRange is the key range of a scan: [start, end) intersected with the
// keys that have prefix. A nil end means no upper bound.
type scanRange struct {
	start, end, prefix []byte
}

// first returns the key to seek to.
func (r scanRange) first() []byte {
	if bytes.Compare(r.prefix, r.start) > 0 {
		return r.prefix
	}
	return r.start
}

// done reports whether key and every key after it are outside the range.
func (r scanRange) done(key []byte) bool {
	if r.end != nil && bytes.Compare(key, r.end) >= 0 {
		return true
	}
	// Keys with the prefix are contiguous and start at the seek key, so
	// the first key without it ends the scan.
	return !bytes.HasPrefix(key, r.prefix)
}

func runScan(args []string, stdout, stderr io.Writer) int {
	f := newFlags("scan", "kvtool scan [flags] DIR",
		"Prints the live keys of the store in DIR in order, one per line as\nKEY<tab>VALUE, escaped as text (or as hex with --hex). --start, --end and\n--prefix narrow the range; with several, the keys printed meet them all.\nThe store is opened read-only: nothing in DIR changes.")
	s := storeFlags{readOnly: true}
	s.register(f, false)
	start := f.String("start", "", "first key (inclusive)")
	end := f.String("end", "", "key to stop before (exclusive); empty: no end")
	prefix := f.String("prefix", "", "print only keys with this prefix")
	limit := f.Int("limit", 0, "print at most this many keys (0: no limit)")
	hexIO := f.Bool("hex", false, "--start, --end and --prefix are hex, and keys and values are printed as hex")
	keysOnly := f.Bool("keys_only", false, "print keys without values")
	maxLen := f.Int("max_len", 0, "abbreviate keys and values longer than this many bytes (0: print whole)")
	pos, err := f.parse(args, 1, 1, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	if *limit < 0 || *maxLen < 0 {
		fmt.Fprintf(stderr, "kvtool scan: --limit and --max_len must not be negative\n")
		return exitUsage
	}
	var r scanRange
	for _, a := range []struct {
		s   string
		dst *[]byte
	}{{*start, &r.start}, {*end, &r.end}, {*prefix, &r.prefix}} {
		if a.s == "" {
			continue
		}
		if *a.dst, err = parseBytes(a.s, *hexIO); err != nil {
			return fail(stderr, "scan", err)
		}
	}
	bf := byteFormat{Hex: *hexIO, Max: *maxLen}
	err = func() (err error) {
		d, err := openStore(f.Name(), pos[0], s, stderr)
		if err != nil {
			return err
		}
		defer closeStore(d, &err)
		it := d.NewIterator(nil)
		defer func() {
			if cerr := it.Close(); err == nil {
				err = cerr
			}
		}()
		n := 0
		for ok := it.Seek(r.first()); ok && (*limit == 0 || n < *limit); ok = it.Next() {
			if r.done(it.Key()) {
				break
			}
			if *keysOnly {
				_, err = fmt.Fprintln(stdout, bf.format(it.Key()))
			} else {
				_, err = fmt.Fprintf(stdout, "%s\t%s\n", bf.format(it.Key()), bf.format(it.Value()))
			}
			if err != nil {
				return err
			}
			n++
		}
		return it.Error()
	}()
	if err != nil {
		return fail(stderr, "scan", err)
	}
	return exitOK
}

func runMetrics(args []string, stdout, stderr io.Writer) int {
	f := newFlags("metrics", "kvtool metrics [flags] DIR",
		"Opens the store in DIR and prints its metrics (db.Metrics().String()):\nfiles and bytes per level, filter and index memory, and the counters\nsince this open. The store is opened read-only: the write-ahead logs are\nreplayed into the memtable in memory, and nothing in DIR changes.")
	s := storeFlags{readOnly: true}
	s.register(f, false)
	pos, err := f.parse(args, 1, 1, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	err = func() (err error) {
		d, err := openStore(f.Name(), pos[0], s, stderr)
		if err != nil {
			return err
		}
		defer closeStore(d, &err)
		_, err = io.WriteString(stdout, d.Metrics().String())
		return err
	}()
	if err != nil {
		return fail(stderr, "metrics", err)
	}
	return exitOK
}

func runCheckpoint(args []string, stdout, stderr io.Writer) int {
	f := newFlags("checkpoint", "kvtool checkpoint [flags] DIR DEST",
		"Writes a consistent copy of the store in DIR into DEST, a directory that\nmust not exist (db.DB.Checkpoint): tables are hard-linked where the file\nsystem allows and copied otherwise, and what the write-ahead logs hold\ngoes into one new table (with the store's own filter policy, unless\n--filter says otherwise), so DEST opens as a store of its own. DIR is\nopened read-only and does not change; it must not be open for writing\nin another process (a program that has the store open calls\nCheckpoint itself).")
	s := storeFlags{readOnly: true, writesTables: true}
	s.register(f, false)
	pos, err := f.parse(args, 2, 2, stdout, stderr)
	if err != nil {
		return usageStatus(err)
	}
	err = func() (err error) {
		d, err := openStore(f.Name(), pos[0], s, stderr)
		if err != nil {
			return err
		}
		defer closeStore(d, &err)
		if err := d.Checkpoint(pos[1]); err != nil {
			return err
		}
		m := d.Metrics()
		files := 0
		for _, l := range m.Levels {
			files += l.Files
		}
		_, err = fmt.Fprintf(stdout, "checkpoint of %s written to %s (%d tables, plus one for the logs' writes when they hold any)\n", pos[0], pos[1], files)
		return err
	}()
	if err != nil {
		return fail(stderr, "checkpoint", err)
	}
	return exitOK
}
