// Command goleveldb is bloomkv's compatibility driver against goleveldb
// and LevelDB, kept in its own module so that goleveldb never becomes a
// dependency of the engine's module.
//
//	go run . gen DIR
//	    writes the goleveldb fixture (package ldbcompat's writes) into DIR,
//	    which must not exist: db/testdata/leveldb/goleveldb was made so.
//	go run . check [-leveldb-dump BIN] DIR
//	    reads DIR with goleveldb (or LevelDB 1.23 through the dump.cc
//	    binary) and compares it with the fixture's model. Either opens
//	    the store for writing (and may rewrite it): check a copy.
//	go run . roundtrip [-leveldb-dump BIN] FIXTURE...
//	    for each fixture (or "new": a store bloomkv creates with
//	    FormatLevelDB; "churn": the same, with many overwrites and no
//	    compaction before closing, so its logs hold writes newer than
//	    its MANIFEST's flushes): copies it, opens the copy with bloomkv, makes
//	    ldbcompat.RoundTripOps' writes and a full compaction, closes it;
//	    then reads the copy back with goleveldb (and, with -leveldb-dump,
//	    with LevelDB 1.23 through that dump.cc binary) and compares it
//	    with the model. roundtrip.sh builds the binary and runs this.
//
// It exits non-zero, naming the first differences, when a check fails.
package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/internal/ldbcompat"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "gen":
		if len(args) != 1 {
			usage()
		}
		err = gen(args[0])
	case "check":
		fs := flag.NewFlagSet("check", flag.ExitOnError)
		dump := fs.String("leveldb-dump", "", "read with LevelDB 1.23 through this dump binary (built from ../cpp/dump.cc) instead of goleveldb")
		fs.Parse(args)
		if fs.NArg() != 1 {
			usage()
		}
		err = check(fs.Arg(0), *dump)
	case "roundtrip":
		fs := flag.NewFlagSet("roundtrip", flag.ExitOnError)
		dump := fs.String("leveldb-dump", "", "also read each result with LevelDB 1.23 through this dump binary (built from ../cpp/dump.cc)")
		fs.Parse(args)
		if fs.NArg() == 0 {
			usage()
		}
		for _, fixture := range fs.Args() {
			if err = roundTrip(fixture, *dump); err != nil {
				break
			}
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "goleveldb:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: goleveldb gen DIR | check [-leveldb-dump BIN] DIR | roundtrip [-leveldb-dump BIN] FIXTURE...")
	os.Exit(2)
}

func options(c opt.Compression) *opt.Options {
	return &opt.Options{
		WriteBuffer:         64 << 10,
		CompactionTableSize: 64 << 10,
		BlockSize:           4 << 10,
		Compression:         c,
		Filter:              filter.NewBloomFilter(10),
	}
}

// gen makes the writes package ldbcompat describes with goleveldb.
func gen(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists", dir)
	}
	o := options(opt.SnappyCompression)
	o.ErrorIfExist = true
	d, err := leveldb.OpenFile(dir, o)
	if err != nil {
		return err
	}
	put := func(r, i int) error { return d.Put([]byte(ldbcompat.Key(i)), []byte(ldbcompat.Value(r, i)), nil) }
	for j := 0; j < ldbcompat.NumKeys; j++ {
		if err := put(1, j*7919%ldbcompat.NumKeys); err != nil {
			return err
		}
	}
	if err := d.CompactRange(util.Range{}); err != nil {
		return err
	}
	snap, err := d.GetSnapshot()
	if err != nil {
		return err
	}
	for i := 0; i < ldbcompat.NumKeys; i += 3 {
		if err := put(2, i); err != nil {
			return err
		}
	}
	for i := 0; i < ldbcompat.NumKeys; i += 7 {
		if err := d.Delete([]byte(ldbcompat.Key(i)), nil); err != nil {
			return err
		}
	}
	if err := d.CompactRange(util.Range{}); err != nil {
		return err
	}
	snap.Release()
	if err := d.Close(); err != nil {
		return err
	}
	// goleveldb's 64 KiB write buffer would hold all of round 3 (LevelDB's
	// arena fills sooner): half of it makes round 3 reach level 0.
	o = options(opt.NoCompression)
	o.WriteBuffer = 32 << 10
	if d, err = leveldb.OpenFile(dir, o); err != nil {
		return err
	}
	for i := 0; i < ldbcompat.NumKeys; i += 5 {
		if err := put(3, i); err != nil {
			return err
		}
	}
	for i := 0; i < ldbcompat.NumKeys; i += 11 {
		if err := put(4, i); err != nil {
			return err
		}
	}
	for i := 0; i < ldbcompat.NumKeys; i += 13 {
		if err := d.Delete([]byte(ldbcompat.Key(i)), nil); err != nil {
			return err
		}
	}
	if s, err := d.GetProperty("leveldb.sstables"); err == nil {
		fmt.Print(s)
	}
	return d.Close()
}

// readGoLevelDB returns every key and value of the store at dir, read by
// goleveldb with strict checksums.
func readGoLevelDB(dir string) (map[string]string, error) {
	o := options(opt.SnappyCompression)
	o.ErrorIfMissing = true
	// Checksums strictly; not StrictJournal, which refuses LevelDB 1.23's
	// own stores when an obsolete log is left (sequence numbers go back).
	o.Strict = opt.StrictJournalChecksum | opt.StrictBlockChecksum
	d, err := leveldb.OpenFile(dir, o)
	if err != nil {
		return nil, fmt.Errorf("goleveldb open: %w", err)
	}
	defer d.Close()
	got := map[string]string{}
	it := d.NewIterator(nil, nil)
	for it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	it.Release()
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("goleveldb iterate: %w", err)
	}
	// Every key through Get too: that path asks the filters.
	for k, v := range got {
		g, err := d.Get([]byte(k), nil)
		if err != nil || string(g) != v {
			return nil, fmt.Errorf("goleveldb Get(%q) = %q, %v; the iterator said %q", k, g, err, v)
		}
	}
	return got, nil
}

// check compares the store at dir with the fixture's model, reading it
// with goleveldb, or with LevelDB through dump.
func check(dir, dump string) error {
	if dump == "" {
		return checkGoLevelDB(dir, ldbcompat.Model())
	}
	got, err := readLevelDB(dump, dir)
	if err != nil {
		return err
	}
	if diff := ldbcompat.Diff(ldbcompat.Model(), got); diff != "" {
		return fmt.Errorf("LevelDB reads %s differently from the model:\n%s", dir, diff)
	}
	return nil
}

func checkGoLevelDB(dir string, model map[string]string) error {
	got, err := readGoLevelDB(dir)
	if err != nil {
		return err
	}
	if diff := ldbcompat.Diff(model, got); diff != "" {
		return fmt.Errorf("goleveldb reads %s differently from the model:\n%s", dir, diff)
	}
	return nil
}

// readLevelDB returns every key and value of the store at dir, read by
// LevelDB through the dump binary.
func readLevelDB(dump, dir string) (map[string]string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(dump, dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("LevelDB (%s %s): %v: %s", dump, dir, err, stderr.String())
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		hk, hv, ok := strings.Cut(sc.Text(), " ")
		k, err1 := hex.DecodeString(hk)
		v, err2 := hex.DecodeString(hv)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("LevelDB dump line %q", sc.Text())
		}
		got[string(k)] = string(v)
	}
	return got, sc.Err()
}

// roundTrip copies fixture, writes to the copy with bloomkv, and reads the
// result back with goleveldb (and LevelDB when dump is set).
func roundTrip(fixture, dump string) error {
	tmp, err := os.MkdirTemp("", "ldbcompat-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "store")
	model := map[string]string{}
	opts := &db.Options{WriteBufferSize: 64 << 10, TargetFileSize: 64 << 10}
	if fixture == "new" || fixture == "churn" {
		opts.Format = db.FormatLevelDB
	} else {
		if err := ldbcompat.CopyStore(fixture, dir); err != nil {
			return err
		}
		model = ldbcompat.Model()
	}
	d, err := db.Open(dir, opts)
	if err != nil {
		return fmt.Errorf("bloomkv open %s: %w", fixture, err)
	}
	if f := d.Format(); f != db.FormatLevelDB {
		d.Close()
		return fmt.Errorf("bloomkv opened %s in format %v", fixture, f)
	}
	ops := ldbcompat.RoundTripOps()
	if fixture == "churn" {
		ops = ldbcompat.ChurnOps()
	}
	for _, op := range ops {
		if op.Delete {
			err = d.Delete([]byte(op.Key), nil)
		} else {
			err = d.Put([]byte(op.Key), []byte(op.Value), nil)
		}
		if err != nil {
			d.Close()
			return err
		}
	}
	ldbcompat.Apply(model, ops)
	if fixture != "churn" { // churn closes amid flushes, its logs full
		if err := d.CompactRange(nil, nil); err != nil {
			d.Close()
			return err
		}
	}
	// Writes after the compaction stay in the log for the peer to replay.
	tail := []ldbcompat.Op{{Key: "tail-put", Value: "in the log"}, {Key: ldbcompat.Key(2), Delete: true}}
	for _, op := range tail {
		if op.Delete {
			err = d.Delete([]byte(op.Key), nil)
		} else {
			err = d.Put([]byte(op.Key), []byte(op.Value), nil)
		}
		if err != nil {
			d.Close()
			return err
		}
	}
	ldbcompat.Apply(model, tail)
	if err := d.Close(); err != nil {
		return err
	}
	// LevelDB first: goleveldb's open rewrites the store.
	if dump != "" {
		snapshot := filepath.Join(tmp, "for-leveldb")
		if err := ldbcompat.CopyStore(dir, snapshot); err != nil {
			return err
		}
		got, err := readLevelDB(dump, snapshot)
		if err != nil {
			return err
		}
		if diff := ldbcompat.Diff(model, got); diff != "" {
			return fmt.Errorf("%s: LevelDB 1.23 reads what bloomkv wrote differently from the model:\n%s", fixture, diff)
		}
		fmt.Printf("%s: LevelDB 1.23 read %d keys of bloomkv's store, all as the model says\n", fixture, len(got))
	}
	if err := checkGoLevelDB(dir, model); err != nil {
		return fmt.Errorf("%s: %w", fixture, err)
	}
	fmt.Printf("%s: goleveldb read %d keys of bloomkv's store, all as the model says\n", fixture, len(model))
	return nil
}
