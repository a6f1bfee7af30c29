package main

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// A store records no options: no OPTIONS file, nothing in the MANIFEST
// about filters. What says which filter policy a store uses is its tables:
// each table's properties name its policy, and its filter, rebuilt from its
// keys, tells the budget (readTableFilter). kvtool's writes (put, delete,
// and checkpoint's new table) use the policies read back from them, level
// by level, so that kvtool adds no table of another policy to, say, a
// store kvbench made with --filter_policy=blocked. A store made with
// db.Options.FilterBudgetBitsPerKey, whose budgets per level follow the
// tree's shape, gets the budgets its levels have now.

// storeFilterPolicies are the filter policies of a store's tables.
type storeFilterPolicies struct {
	// policy is the policy of the store's table with the most entries
	// (db.Options.FilterPolicy): nil, db's default, for a store without
	// tables or whose tables cannot be read (db.Open then says what is
	// wrong).
	policy filter.Policy
	// levels[l] is the policy of level l's table with the most entries,
	// nil for a level without tables (db.Options.LevelFilterPolicies).
	levels []filter.Policy
	// unknown lists the levels whose tables name a policy kvtool cannot
	// rebuild, and the name.
	unknown []string
}

// storeFilters reads the filter policies of the tables of the store in dir.
func storeFilters(dir string) storeFilterPolicies {
	var sf storeFilterPolicies
	st, err := loadState(dir)
	if err != nil {
		return sf
	}
	var most uint64
	// emptyOnly are the levels whose only readable tables have no point
	// entries (only range tombstones): their empty filters tell the
	// policy and its probe count, but not its budget (a Bloom filter's
	// probe count is the same at two or three budgets).
	var emptyOnly []int
	for level, files := range st.version.Files {
		// The level's table with the most entries: its filter says most.
		var largest *manifest.FileMetadata
		var levelMost uint64
		for _, f := range files {
			if n, ok := tableEntries(tablePath(dir, f.FileNum)); ok && (largest == nil || n > levelMost) {
				largest, levelMost = f, n
			}
		}
		if largest == nil {
			continue
		}
		if levelMost == 0 {
			emptyOnly = append(emptyOnly, level)
			continue
		}
		sf.add(st, level, largest, levelMost, &most)
	}
	if sf.policy != nil {
		// The levels of tombstones alone get the store's policy (a nil
		// entry of LevelFilterPolicies means FilterPolicy).
		return sf
	}
	// No table has entries: the policy of the tables of tombstones alone,
	// at the smallest budget with their filters' probe count (an empty
	// filter tells no more; readTableFilter).
	for _, level := range emptyOnly {
		for _, f := range st.version.Files[level] {
			if _, ok := tableEntries(tablePath(dir, f.FileNum)); ok {
				sf.add(st, level, f, 0, &most)
				break
			}
		}
	}
	return sf
}

// add records the policy of table f, with n entries, as level's; the
// policy of the table with the most entries so far (*most) is the store's.
func (sf *storeFilterPolicies) add(st *storeState, level int, f *manifest.FileMetadata, n uint64, most *uint64) {
	tf, err := readTableFilter(tablePath(st.dir, f.FileNum))
	if err != nil {
		return
	}
	p := tf.policy
	if p == nil {
		sf.unknown = append(sf.unknown, fmt.Sprintf("L%d: %q", level, tf.name))
		return
	}
	if sf.levels == nil {
		sf.levels = make([]filter.Policy, len(st.version.Files))
	}
	sf.levels[level] = p
	if sf.policy == nil || n > *most {
		*most, sf.policy = n, p
	}
}

// notes returns what to tell the user about the policies of the tables a
// write will make: that an explicit --filter (flag, parsed as p) differs
// from the store's own policies, or that some of the store's policies are
// unknown to kvtool and replaced.
func (sf storeFilterPolicies) notes(flag string, p filter.Policy) []string {
	var out []string
	own := sf.describe()
	if flag != "" {
		if own != "" && own != describeFilter(p) {
			out = append(out, fmt.Sprintf("--filter=%s overrides the store's own filter policy (%s): the tables this command writes get %s", flag, own, describeFilter(p)))
		}
		return out
	}
	if len(sf.unknown) > 0 {
		instead := "db's default, " + describeFilter(filter.NewBloomPolicy(db.DefaultBloomBitsPerKey))
		if sf.policy != nil {
			instead = describeFilter(sf.policy)
		}
		out = append(out, fmt.Sprintf("kvtool cannot write the filter policy of the store's tables at %s; the tables it writes there get %s (--filter chooses)",
			strings.Join(sf.unknown, ", "), instead))
	}
	return out
}

// describe renders the store's policies: one when every level with tables
// has the same, else each level's; "" for a store without tables.
func (sf storeFilterPolicies) describe() string {
	var parts []string
	same := true
	for l, p := range sf.levels {
		if p == nil {
			continue
		}
		d := describeFilter(p)
		same = same && d == describeFilter(sf.policy)
		parts = append(parts, fmt.Sprintf("L%d %s", l, d))
	}
	switch {
	case len(parts) == 0:
		return ""
	case same:
		return describeFilter(sf.policy)
	}
	return strings.Join(parts, "; ")
}

// describeFilter renders a policy with its parameters.
func describeFilter(p filter.Policy) string {
	switch q := p.(type) {
	case nil:
		return "db's default"
	case filter.BitsPerKeyer:
		return fmt.Sprintf("%s, %d bits/key", p.Name(), q.BitsPerKey())
	case interface{ FingerprintBits() int }:
		return fmt.Sprintf("%s, %d-bit fingerprints", p.Name(), q.FingerprintBits())
	}
	if filter.IsNone(p) {
		return "no filter"
	}
	return p.Name()
}

// tableFilter is a table's filter policy, as far as the table tells.
type tableFilter struct {
	name    string        // the policy's name; "" for no filter
	entries uint64        // the table's entries
	policy  filter.Policy // nil when kvtool does not know the name
}

// readTableFilter rebuilds the filter policy of the table at path.
//
// The properties name the policy but do not record the budget it was made
// with, only the filter's bits per entry, which misses the budget both
// ways: below it when the table holds several versions of a key (a filter
// counts a key once), above it in a small table (a filter has at least 64
// bits, a blocked one 512). So for a Bloom policy kvtool takes the
// filter's own probe count k from its last byte, rebuilds the filter from
// the table's keys at each budget of that k, and keeps the smallest
// budget whose filter has the table's filter's size and last bytes (in a
// small table several budgets make the same filter). For binary fuse
// filters the fingerprint size is in the filter's trailer. A LevelDB
// table's filters (levelDBTableFilter) give LevelDB's Bloom policy.
func readTableFilter(path string) (tableFilter, error) {
	t, err := openTableFile(path)
	if err != nil {
		return tableFilter{}, err
	}
	defer t.close()
	p := t.props
	tf := tableFilter{name: p.FilterPolicy, entries: p.NumEntries}
	if p.FilterPolicy == "" {
		tf.policy = filter.None
		return tf, nil
	}
	if t.r.Format() == sstable.FormatLevelDB {
		return levelDBTableFilter(tf, t.r.FilterParts()), nil
	}
	var whole []byte // the table's filter; nil when kvtool does not know its policy
	if parts := t.r.FilterParts(); len(parts) == 1 {
		whole = parts[0]
	}
	var newPolicy func(int) filter.Policy
	switch p.FilterPolicy {
	case filter.BloomPolicyName:
		newPolicy = filter.NewBloomPolicy
	case filter.LegacyBloomPolicyName:
		newPolicy = filter.NewLegacyBloomPolicy
	case filter.LevelDBBloomPolicyName:
		newPolicy = filter.NewLevelDBBloomPolicy
	case filter.BlockedBloomPolicyName:
		newPolicy = filter.NewBlockedBloomPolicy
	case filter.BinaryFusePolicyName:
		fp := 8
		if n := len(whole); n >= fuseTrailerLen && whole[n-2] == 16 {
			fp = 16
		}
		tf.policy = filter.NewBinaryFusePolicy(fp)
		return tf, nil
	default:
		return tf, nil
	}
	k := 0
	if len(whole) > 0 {
		k = int(whole[len(whole)-1])
	}
	tail := whole[max(0, len(whole)-maxFilterTail):]
	budget, err := rebuildBudget(t.r, newPolicy, k, p.FilterSize, tail)
	if err != nil {
		return tableFilter{}, err
	}
	if budget == 0 {
		// No budget within reach makes this filter (a policy changed
		// since, or a budget above maxRebuildBudget): the measure, or
		// db's default for a table too small to measure.
		budget = int(math.Round(p.FilterBitsPerKey))
		if p.NumEntries < minMeasureEntries {
			budget = db.DefaultBloomBitsPerKey
		}
	}
	tf.policy = newPolicy(budget)
	return tf, nil
}

// maxFilterTail is how many of a filter's last bytes rebuildBudget
// compares: enough for every trailer the known policies write.
const maxFilterTail = 16

// levelDBTableFilter completes tf, a LevelDB table's, from its filters
// (one per 2 KiB of data-block offsets; nil when kvtool does not know the
// policy). A LevelDB-format store writes only LevelDB's Bloom filter
// (named leveldb.BuiltinBloomFilter2 whatever its tables' filters are
// named: goleveldb names the same bits leveldb.BuiltinBloomFilter), at the
// budget its tables show: LevelDB sizes each filter at budget bits for
// every entry of its blocks (64 at least), so the bits of all of them over
// the table's entries, rounded, among the budgets of the filters' probe
// count k; db's default for a table too small to measure.
func levelDBTableFilter(tf tableFilter, parts [][]byte) tableFilter {
	if tf.name != filter.LevelDBBloomPolicyName && tf.name != filter.GoLevelDBBloomPolicyName {
		return tf
	}
	var bits uint64
	k := 0
	for _, p := range parts {
		if len(p) > 0 {
			bits += uint64(len(p)-1) * 8
			k = int(p[len(p)-1])
		}
	}
	budget := db.DefaultBloomBitsPerKey
	if tf.entries >= minMeasureEntries {
		measured := int(math.Round(float64(bits) / float64(tf.entries)))
		best := 0
		for b := filter.MinBitsPerKey; b <= maxRebuildBudget; b++ {
			q := filter.NewLevelDBBloomPolicy(b).(filter.BitsPerKeyer)
			if q.NumProbes() == k && (best == 0 || absInt(b-measured) < absInt(best-measured)) {
				best = b
			}
		}
		if best != 0 {
			budget = best
		}
	}
	tf.policy = filter.NewLevelDBBloomPolicy(budget)
	return tf
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// minMeasureEntries is the fewest entries from which a table's measured
// bits per entry is within half a bit of its budget, when it holds one
// version of each key: a filter's size is rounded up to whole words (a
// blocked filter's lines are 512 bits), adding up to 512/n bits a key.
const minMeasureEntries = 1024

// maxRebuildBudget is the largest budget rebuildBudget tries.
const maxRebuildBudget = 64

// rebuildBudget returns the smallest budget b up to maxRebuildBudget at
// which newPolicy(b) uses k probes and makes, from the user keys of the
// table r, a filter of size bytes ending with tail; 0 when there is none.
func rebuildBudget(r *sstable.Reader, newPolicy func(int) filter.Policy, k int, size uint64, tail []byte) (int, error) {
	var budgets []int
	var builders []filter.Builder
	for b := filter.MinBitsPerKey; b <= maxRebuildBudget; b++ {
		p := newPolicy(b)
		if bk, ok := p.(filter.BitsPerKeyer); ok && bk.NumProbes() == k {
			budgets = append(budgets, b)
			builders = append(builders, p.NewBuilder())
		}
	}
	if len(budgets) == 0 {
		return 0, nil
	}
	// The table writer adds every entry's user key, in order.
	it := r.NewIterator()
	for ok := it.First(); ok; ok = it.Next() {
		for _, fb := range builders {
			fb.AddKey(base.UserKey(it.Key()))
		}
	}
	err := it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	for i, fb := range builders {
		if f := fb.Finish(nil); uint64(len(f)) == size && bytes.HasSuffix(f, tail) {
			return budgets[i], nil
		}
	}
	return 0, nil
}

// tableEntries returns the number of entries of the table at path, from its
// properties (counted by a scan in a LevelDB table, which records none).
func tableEntries(path string) (uint64, bool) {
	r, f, err := openTable(path, false)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	defer r.Close()
	p, err := r.ScanProperties()
	if err != nil {
		return 0, false
	}
	return p.NumEntries, true
}

// storeScanFilters returns the prefix extractor and range filter policy the
// store's tables were written with, as far as kvtool knows them (the
// extractors filter.FixedPrefix and filter.DelimitedPrefix, the Grafite
// range filter): a store records no options, so kvtool opens it with
// these, and its iterators (scan, explain --seek) ask the tables' prefix
// and range filters as the program that wrote them did. nil for what the
// tables do not have, or name something kvtool cannot rebuild.
func storeScanFilters(dir string) (prefix filter.Prefix, rangePolicy filter.RangePolicy) {
	st, err := loadState(dir)
	if err != nil {
		return nil, nil
	}
	// One readable table a level is enough (a level's tables are written
	// with the same options, unless the store was reopened with others):
	// opening every table here would read each one twice.
	for _, files := range st.version.Files {
		for _, f := range files {
			r, fl, err := openTable(tablePath(dir, f.FileNum), false)
			if err != nil {
				continue
			}
			p := r.Properties()
			if prefix == nil && p.PrefixExtractor != "" {
				prefix = parseExtractor(p.PrefixExtractor)
			}
			if rangePolicy == nil && p.RangeFilter == filter.GrafiteRangePolicyName {
				// Any bits per key reads any Grafite filter.
				rangePolicy = filter.NewGrafiteRangePolicy(16)
			}
			r.Close()
			fl.Close()
			if prefix != nil && rangePolicy != nil {
				return prefix, rangePolicy
			}
			break // the next level
		}
	}
	return prefix, rangePolicy
}

// parseExtractor returns the extractor whose Name is name, nil if kvtool
// does not know it.
func parseExtractor(name string) filter.Prefix {
	for n := 1; n <= 64; n++ {
		if p := filter.FixedPrefix(n); p.Name() == name {
			return p
		}
	}
	for c := 0; c < 256; c++ {
		if p := filter.DelimitedPrefix(byte(c)); p.Name() == name {
			return p
		}
	}
	return nil
}
