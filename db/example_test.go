package db_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

// tempDir returns a fresh directory for an example's store and a function
// that removes it.
func tempDir() (string, func()) {
	dir, err := os.MkdirTemp("", "bloomkv-example-")
	if err != nil {
		log.Fatal(err)
	}
	return dir, func() { os.RemoveAll(dir) }
}

// Open creates the store when the directory holds none. A directory is
// held by one DB at a time: a second Open fails with ErrLocked until the
// first is closed.
func ExampleOpen() {
	dir, cleanup := tempDir()
	defer cleanup()

	d, err := db.Open(dir, nil) // nil Options: the defaults
	if err != nil {
		log.Fatal(err)
	}
	if err := d.Put([]byte("hello"), []byte("world"), nil); err != nil {
		log.Fatal(err)
	}
	v, err := d.Get([]byte("hello"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("hello = %s\n", v)

	_, err = d.Get([]byte("goodbye"), nil)
	fmt.Println("goodbye not found:", errors.Is(err, db.ErrNotFound))

	_, err = db.Open(dir, nil)
	fmt.Println("second open locked out:", errors.Is(err, db.ErrLocked))

	if err := d.Close(); err != nil {
		log.Fatal(err)
	}
	// Reopened, the store has everything that was written.
	d, err = db.Open(dir, &db.Options{ErrorIfMissing: true})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	v, _ = d.Get([]byte("hello"), nil)
	fmt.Printf("after reopen hello = %s\n", v)
	// Output:
	// hello = world
	// goodbye not found: true
	// second open locked out: true
	// after reopen hello = world
}

// A Batch applies several writes atomically: readers, and recovery after a
// crash, see all of them or none. Writes apply in order, so a later write
// to a key in the batch wins.
func ExampleDB_Write() {
	dir, cleanup := tempDir()
	defer cleanup()
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	var b db.Batch
	b.Put([]byte("apple"), []byte("red"))
	b.Put([]byte("banana"), []byte("yellow"))
	b.Put([]byte("cherry"), []byte("red"))
	b.Delete([]byte("apple"))
	fmt.Println("writes in batch:", b.Count())

	// Sync: the batch survives a machine crash once Write returns.
	if err := d.Write(&b, &db.WriteOptions{Sync: true}); err != nil {
		log.Fatal(err)
	}
	for _, k := range []string{"apple", "banana", "cherry"} {
		v, err := d.Get([]byte(k), nil)
		if errors.Is(err, db.ErrNotFound) {
			fmt.Printf("%s: deleted\n", k)
			continue
		}
		fmt.Printf("%s: %s\n", k, v)
	}
	// Output:
	// writes in batch: 4
	// apple: deleted
	// banana: yellow
	// cherry: red
}

// An Iterator walks the keys in order. Seek positions it at the first key
// at or after its argument, so a range or a prefix is a Seek and a loop
// that stops at the first key past the end.
func ExampleDB_NewIterator() {
	dir, cleanup := tempDir()
	defer cleanup()
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	for _, k := range []string{"user:3", "user:1", "item:9", "user:2", "zone:1"} {
		if err := d.Put([]byte(k), []byte("v-"+k), nil); err != nil {
			log.Fatal(err)
		}
	}

	it := d.NewIterator(nil)
	fmt.Println("keys with prefix user:")
	for ok := it.Seek([]byte("user:")); ok; ok = it.Next() {
		if !bytes.HasPrefix(it.Key(), []byte("user:")) {
			break
		}
		fmt.Printf("  %s = %s\n", it.Key(), it.Value())
	}
	fmt.Println("all keys, last first:")
	for ok := it.Last(); ok; ok = it.Prev() {
		fmt.Printf("  %s\n", it.Key())
	}
	if err := it.Error(); err != nil {
		log.Fatal(err)
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// keys with prefix user:
	//   user:1 = v-user:1
	//   user:2 = v-user:2
	//   user:3 = v-user:3
	// all keys, last first:
	//   zone:1
	//   user:3
	//   user:2
	//   user:1
	//   item:9
}

// A Snapshot is a consistent view of the store as of one moment: reads
// through it do not see later writes. Release it when done.
func ExampleDB_NewSnapshot() {
	dir, cleanup := tempDir()
	defer cleanup()
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	d.Put([]byte("balance"), []byte("100"), nil)
	snap := d.NewSnapshot()
	defer snap.Release()
	d.Put([]byte("balance"), []byte("50"), nil)
	d.Put([]byte("audit"), []byte("withdrew 50"), nil)

	now, _ := d.Get([]byte("balance"), nil)
	then, _ := d.Get([]byte("balance"), &db.ReadOptions{Snapshot: snap})
	fmt.Printf("balance now %s, at the snapshot %s\n", now, then)

	// Iterators take the snapshot too: the audit entry is not there yet.
	it := d.NewIterator(&db.ReadOptions{Snapshot: snap})
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("snapshot holds %s = %s\n", it.Key(), it.Value())
	}
	it.Close()
	// Output:
	// balance now 50, at the snapshot 100
	// snapshot holds balance = 100
}

// Options.FilterPolicy chooses the filter every table carries. The default
// (nil) is a Bloom filter of 10 bits per key; filter.None turns filters
// off, so every lookup of a key within a table's range reads the table.
// Metrics shows the difference: with a filter, lookups of absent keys are
// answered from memory.
func ExampleOptions_filterPolicy() {
	for _, c := range []struct {
		name   string
		policy filter.Policy
	}{
		{"default (Bloom, 10 bits/key)", nil},
		{"Bloom, 16 bits/key", filter.NewBloomPolicy(16)},
		{"LevelDB-compatible Bloom", filter.NewLevelDBBloomPolicy(10)},
		{"no filter", filter.None},
	} {
		dir, cleanup := tempDir()
		d, err := db.Open(dir, &db.Options{FilterPolicy: c.policy})
		if err != nil {
			log.Fatal(err)
		}
		for i := 0; i <= 1000; i += 2 { // even numbers only, 0 to 1000
			d.Put([]byte(fmt.Sprintf("key%04d", i)), []byte("v"), nil)
		}
		if err := d.Flush(); err != nil { // write the table
			log.Fatal(err)
		}
		for i := 1; i < 1000; i += 2 { // look up the odd, absent, keys
			d.Get([]byte(fmt.Sprintf("key%04d", i)), nil)
		}
		m := d.Metrics()
		fmt.Printf("%s: %d filter checks, over 95%% avoided reading the table: %v\n",
			c.name, m.Filter.Checks, m.Filter.Useful > 475)
		d.Close()
		cleanup()
	}
	// Output:
	// default (Bloom, 10 bits/key): 500 filter checks, over 95% avoided reading the table: true
	// Bloom, 16 bits/key: 500 filter checks, over 95% avoided reading the table: true
	// LevelDB-compatible Bloom: 500 filter checks, over 95% avoided reading the table: true
	// no filter: 0 filter checks, over 95% avoided reading the table: false
}

// Metrics reports what the read path did: how often filters were asked,
// how often they saved a read, and the false-positive rate they reached,
// per level and in total, with file counts and sizes. Metrics.String
// renders it all as a table.
func ExampleDB_Metrics() {
	dir, cleanup := tempDir()
	defer cleanup()
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	for i := 0; i <= 2000; i += 2 { // even numbers, 0 to 2000
		d.Put([]byte(fmt.Sprintf("key%05d", i)), []byte("value"), nil)
	}
	d.Flush()
	for i := 0; i < 2000; i++ { // half present, half absent, all in the table's range
		d.Get([]byte(fmt.Sprintf("key%05d", i)), nil)
	}

	m := d.Metrics()
	files := 0
	for _, l := range m.Levels {
		files += l.Files
	}
	fmt.Println("tables:", files)
	fmt.Println("gets:", m.Gets)
	fmt.Println("filter checks:", m.Filter.Checks)
	fmt.Println("keys found (true positives):", m.Filter.TruePositives)
	fmt.Println("absent keys let through, under 2%:", m.Filter.FalsePositiveRate() < 0.02)
	fmt.Println("filter bytes in memory > 0:", m.FilterBytes > 0)
	// Output:
	// tables: 1
	// gets: 2000
	// filter checks: 2000
	// keys found (true positives): 1000
	// absent keys let through, under 2%: true
	// filter bytes in memory > 0: true
}

// Options.FS puts a store on another file system. vfs.NewMem keeps it in
// memory and knows what is durable, so a test of a program that embeds the
// store can crash the machine under it: CrashCloneWith(SurviveNone) keeps
// only what was synced. (A LOCK is not durable state, so the crashed copy
// opens while the original is still open.)
func ExampleOptions_fs() {
	mem := vfs.NewMem()
	d, err := db.Open("/store", &db.Options{FS: mem})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	d.Put([]byte("synced"), []byte("1"), &db.WriteOptions{Sync: true})
	d.Put([]byte("not synced"), []byte("2"), nil)

	crashed := mem.CrashCloneWith(vfs.CrashOptions{UnsyncedData: vfs.SurviveNone, UnsyncedDirOps: vfs.SurviveNone})
	after, err := db.Open("/store", &db.Options{FS: crashed})
	if err != nil {
		log.Fatal(err)
	}
	defer after.Close()
	for _, k := range []string{"synced", "not synced"} {
		v, err := after.Get([]byte(k), nil)
		fmt.Printf("%s: %q %v\n", k, v, err)
	}
	// Output:
	// synced: "1" <nil>
	// not synced: "" bloomkv: not found
}

// A memtable's filter answers most reads of keys the memtable does not
// hold without searching it; Metrics.MemTableFilter counts its answers.
// DisableMemTableFilter turns it off.
func ExampleOptions_disableMemTableFilter() {
	d, err := db.Open("/store", &db.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	for i := 0; i < 100; i++ {
		d.Put([]byte(fmt.Sprintf("key%03d", i)), []byte("v"), nil)
	}
	d.Get([]byte("key007"), nil)  // in the memtable: the filter lets it through
	d.Get([]byte("absent"), nil)  // most likely "not there": no search
	d.Get([]byte("absent2"), nil) // the same
	m := d.Metrics().MemTableFilter
	fmt.Printf("checks %d, found %d, not searched %d\n", m.Checks, m.TruePositives, m.Useful)
	// Output:
	// checks 3, found 1, not searched 2
}

// Checkpoint writes a consistent copy of a live store into a new
// directory; the copy opens as a store of its own. Tables are hard-linked,
// so a checkpoint costs little space until the stores diverge.
func ExampleDB_Checkpoint() {
	dir, cleanup := tempDir()
	defer cleanup()
	d, err := db.Open(dir+"/live", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	d.Put([]byte("k"), []byte("before"), nil)
	if err := d.Checkpoint(dir + "/backup"); err != nil {
		log.Fatal(err)
	}
	d.Put([]byte("k"), []byte("after"), nil)

	b, err := db.Open(dir+"/backup", &db.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	live, _ := d.Get([]byte("k"), nil)
	backup, _ := b.Get([]byte("k"), nil)
	fmt.Printf("live %s, backup %s\n", live, backup)
	// Output: live after, backup before
}

// MultiGet reads many keys at one sequence number: the answers are one
// consistent view, as through a snapshot. Entry i answers keys[i].
func ExampleDB_MultiGet() {
	dir, cleanup := tempDir()
	defer cleanup()
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	d.Put([]byte("user:1"), []byte("ada"), nil)
	d.Put([]byte("user:3"), []byte("grace"), nil)

	keys := [][]byte{[]byte("user:3"), []byte("user:2"), []byte("user:1")}
	values, errs := d.MultiGet(keys, nil)
	for i, k := range keys {
		switch {
		case errors.Is(errs[i], db.ErrNotFound):
			fmt.Printf("%s: not found\n", k)
		case errs[i] != nil:
			log.Fatal(errs[i])
		default:
			fmt.Printf("%s: %s\n", k, values[i])
		}
	}
	// Output:
	// user:3: grace
	// user:2: not found
	// user:1: ada
}

// MultiGetInto writes into the caller's result slices, which a loop of
// batches can reuse: an absent key then costs no allocation at all.
func ExampleDB_MultiGetInto() {
	dir, cleanup := tempDir()
	defer cleanup()
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	d.Put([]byte("user:1"), []byte("ada"), nil)
	d.Put([]byte("user:3"), []byte("grace"), nil)

	values, errs := make([][]byte, 2), make([]error, 2)
	for _, batch := range [][][]byte{
		{[]byte("user:1"), []byte("user:2")},
		{[]byte("user:3"), []byte("user:4")},
	} {
		if err := d.MultiGetInto(batch, values, errs, nil); err != nil {
			log.Fatal(err) // only for results of the wrong length
		}
		for i, k := range batch {
			if errs[i] != nil {
				fmt.Printf("%s: %v\n", k, errs[i])
				continue
			}
			fmt.Printf("%s: %s\n", k, values[i])
		}
	}
	// Output:
	// user:1: ada
	// user:2: bloomkv: not found
	// user:3: grace
	// user:4: bloomkv: not found
}

// A scan of every key with a prefix: PrefixBounds gives the bounds, and the
// iterator never reads a table or block that holds none of those keys.
func ExamplePrefixBounds() {
	dir, cleanup := tempDir()
	defer cleanup()
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	for _, k := range []string{"user:41:name", "user:42:email", "user:42:name", "user:43:name"} {
		d.Put([]byte(k), []byte("..."), nil)
	}
	lower, upper := db.PrefixBounds([]byte("user:42:"))
	it := d.NewIterator(&db.ReadOptions{LowerBound: lower, UpperBound: upper})
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s\n", it.Key())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// user:42:email
	// user:42:name
}

// Deleting every key with a prefix is one write: DeleteRange over the
// prefix's bounds. Reads stop seeing the keys at once; a snapshot taken
// before still sees them; compactions reclaim the space.
func ExampleDB_DeleteRange() {
	dir, cleanup := tempDir()
	defer cleanup()
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	for _, k := range []string{"user:41:name", "user:42:email", "user:42:name", "user:43:name"} {
		d.Put([]byte(k), []byte("..."), nil)
	}
	before := d.NewSnapshot()
	defer before.Release()

	lower, upper := db.PrefixBounds([]byte("user:42:"))
	if err := d.DeleteRange(lower, upper, nil); err != nil {
		log.Fatal(err)
	}
	// Written after the tombstone: not deleted.
	d.Put([]byte("user:42:name"), []byte("new"), nil)

	show := func(ro *db.ReadOptions) {
		it := d.NewIterator(ro)
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			fmt.Printf(" %s", it.Key())
		}
		fmt.Println()
	}
	fmt.Print("now:")
	show(nil)
	fmt.Print("before:")
	show(&db.ReadOptions{Snapshot: before})
	// Output:
	// now: user:41:name user:42:name user:43:name
	// before: user:41:name user:42:email user:42:name user:43:name
}

// With a prefix extractor, tables' filters also hold their keys'
// prefixes: a scan bounded to one prefix skips the tables that hold none.
func ExampleOptions_prefix() {
	dir, cleanup := tempDir()
	defer cleanup()
	d, err := db.Open(dir, &db.Options{Prefix: filter.DelimitedPrefix(':')})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	for _, k := range []string{"alice:email", "alice:name", "carol:name"} {
		d.Put([]byte(k), []byte("..."), nil)
	}
	d.Flush() // the keys are now in a table whose filter holds "alice:" and "carol:"

	for _, p := range []string{"alice:", "bob:"} {
		lo, hi := db.PrefixBounds([]byte(p))
		it := d.NewIterator(&db.ReadOptions{LowerBound: lo, UpperBound: hi})
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		it.Close()
		fmt.Printf("%s %d keys\n", p, n)
	}
	m := d.Metrics()
	fmt.Printf("prefix filter: %d checks, %d tables skipped\n", m.PrefixFilter.Checks, m.PrefixFilter.Useful)
	// Output:
	// alice: 2 keys
	// bob: 0 keys
	// prefix filter: 2 checks, 1 tables skipped
}
