package db

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
)

// Outcomes of a LookupTrace and of its steps.
const (
	// OutcomeFound: the step (or the lookup) found a value.
	OutcomeFound = "found"
	// OutcomeDeleted: the newest entry the read sees is a deletion, or an
	// entry older than a range tombstone over the key.
	OutcomeDeleted = "deleted"
	// OutcomeNotFound: the lookup found no entry (a lookup's outcome).
	OutcomeNotFound = "not found"
	// OutcomeError: the lookup failed (see LookupTrace.Err).
	OutcomeError = "error"

	// OutcomeMiss: a memtable holds no entry for the key.
	OutcomeMiss = "miss"
	// OutcomeNotInFilter: a memtable's filter says it holds no entry for
	// the key, and it is not searched (Options.DisableMemTableFilter).
	OutcomeNotInFilter = "filter: not there"
	// OutcomeOutsideRange: the key is outside the table's key range; the
	// table is not opened.
	OutcomeOutsideRange = "outside key range"
	// OutcomeOlderThanTombstone: every entry of the table is older than
	// the range tombstone over the key; the table is not opened.
	OutcomeOlderThanTombstone = "older than range tombstone"
	// OutcomeFilterNo: the table's filter says the key is not there; no
	// block is read.
	OutcomeFilterNo = "filter: no"
	// OutcomeFalsePositive: the filter said "maybe" and the data block
	// did not hold the key.
	OutcomeFalsePositive = "false positive"
	// OutcomeAbsent: a table without a filter was read and did not hold
	// the key.
	OutcomeAbsent = "absent"
)

// A LookupTrace is what ExplainGet saw on its way through the tree, in the
// order it went: the memtables, then the tables newest first, level by
// level, until one answered.
type LookupTrace struct {
	Key []byte `json:"key"`
	// Seq is the sequence number the lookup read at.
	Seq uint64 `json:"seq"`
	// Outcome is OutcomeFound, OutcomeDeleted, OutcomeNotFound or
	// OutcomeError.
	Outcome string `json:"outcome"`
	// Err is the lookup's error, for OutcomeError.
	Err string `json:"error,omitempty"`
	// RangeTombstoneSeq is the sequence number of the newest range
	// tombstone over the key that the read sees (0: none): every entry
	// older than it is deleted.
	RangeTombstoneSeq uint64        `json:"range_tombstone_seq,omitempty"`
	Steps             []TraceStep   `json:"steps"`
	Elapsed           time.Duration `json:"elapsed_ns"`
}

// A TraceStep is one place a lookup looked: a memtable or a table.
type TraceStep struct {
	// Where is "memtable", "frozen memtable" or "table".
	Where string `json:"where"`
	// Level and FileNum name the table (Level is -1 for a memtable).
	Level   int    `json:"level"`
	FileNum uint64 `json:"file,omitempty"`
	// FileName is the table's file name: NNNNNN.sst, or NNNNNN.ldb for a
	// table of LevelDB's naming.
	FileName string `json:"file_name,omitempty"`
	// Smallest and Largest are the table's user-key range.
	Smallest []byte `json:"smallest,omitempty"`
	Largest  []byte `json:"largest,omitempty"`
	// Outcome is one of the Outcome constants.
	Outcome string `json:"outcome"`
	// FilterPolicy and FilterBitsPerKey describe the table's filter when
	// the lookup asked it ("" when the table has none it can use; bits per
	// key 0 when the table does not record them, as LevelDB's do not);
	// FilterMayContain is its answer.
	FilterPolicy     string  `json:"filter_policy,omitempty"`
	FilterBitsPerKey float64 `json:"filter_bits_per_key,omitempty"`
	FilterMayContain bool    `json:"filter_may_contain,omitempty"`
	// Blocks are the data blocks read (the index is always in memory).
	Blocks  []sstable.BlockRead `json:"blocks,omitempty"`
	Elapsed time.Duration       `json:"elapsed_ns"`
}

// ExplainGet performs Get(key, ro) and returns, beside its result, a trace
// of the lookup: each memtable and table it considered, in order, whether
// each table was skipped by its key range, by a range tombstone or by its
// filter (with the filter's policy, bits per key and answer), or read
// (which data blocks: from the block cache or the file, stored and
// decoded sizes), how each ended (a filter's false positive is named as
// such), and the time spent in each. It counts in Metrics as a Get does.
// Get itself does no tracing and pays nothing for it.
func (d *DB) ExplainGet(key []byte, ro *ReadOptions) ([]byte, *LookupTrace, error) {
	tr := &LookupTrace{Key: bytes.Clone(key)}
	start := time.Now()
	v, err := d.explainGet(key, ro, tr)
	tr.Elapsed = time.Since(start)
	switch {
	case err == nil:
		tr.Outcome = OutcomeFound
	case errors.Is(err, ErrNotFound):
		if tr.Outcome == "" {
			tr.Outcome = OutcomeNotFound
		}
	default:
		tr.Outcome, tr.Err = OutcomeError, err.Error()
	}
	return v, tr, err
}

func (d *DB) explainGet(key []byte, ro *ReadOptions, tr *LookupTrace) ([]byte, error) {
	readCell := d.reads.Inc()
	defer d.reads.DecAt(readCell)
	if d.closed.Load() {
		return nil, ErrClosed
	}
	ref := d.loadReadState()
	defer ref.unref()
	seq, err := d.readSeq(ro)
	if err != nil {
		return nil, err
	}
	tr.Seq = seq
	rs := ref.rs
	d.m.gets.Add(1)
	var del uint64 // the newest range tombstone over key the read sees
	if rs.hasRangeDels() {
		frozen, err := rs.rangeDels()
		if err != nil {
			return nil, err
		}
		del, _ = frozen.MaxSeq(key, seq)
		if q, ok := rs.mem.RangeDels().MaxSeq(key, seq); ok && q > del {
			del = q
		}
	}
	tr.RangeTombstoneSeq = del
	// answer turns the entry a step found into the lookup's result.
	answer := func(st *TraceStep, v []byte, eseq uint64, kind base.Kind) ([]byte, error) {
		if kind == base.KindDelete || eseq < del {
			st.Outcome, tr.Outcome = OutcomeDeleted, OutcomeDeleted
			return nil, ErrNotFound
		}
		st.Outcome = OutcomeFound
		return v, nil
	}
	for i, mem := range [2]*memtable.MemTable{rs.mem, rs.imm} {
		if mem == nil {
			continue
		}
		t0 := time.Now()
		st := TraceStep{Where: "memtable", Level: -1, Outcome: OutcomeMiss}
		if i == 1 {
			st.Where = "frozen memtable"
		}
		var h uint64
		// An empty active memtable is not asked, as in Get.
		if !(i == 0 && mem.Empty()) && !d.memMayContain(mem, key, &h) {
			st.Outcome = OutcomeNotInFilter
			st.Elapsed = time.Since(t0)
			tr.Steps = append(tr.Steps, st)
			continue
		}
		v, eseq, kind, ok := mem.GetEntry(key, seq)
		if ok {
			d.memFound(mem)
		}
		var res []byte
		if ok {
			res, err = answer(&st, v, eseq, kind)
			if err == nil {
				res = bytes.Clone(res)
			}
		}
		st.Elapsed = time.Since(t0)
		tr.Steps = append(tr.Steps, st)
		if ok {
			return res, err
		}
	}
	var buf [64]byte
	seek := base.AppendInternalKey(buf[:0], key, seq, base.KindSeek)
	for level := 0; level < manifest.NumLevels; level++ {
		files := rs.v.Files[level]
		if level > 0 {
			files = rs.v.FindFiles(level, key)
		}
		for _, f := range files {
			t0 := time.Now()
			st := TraceStep{Where: "table", Level: level, FileNum: f.FileNum, FileName: d.tableBaseName(f.FileNum),
				Smallest: base.UserKey(f.Smallest), Largest: base.UserKey(f.Largest)}
			v, done, err := d.explainTable(level, f, key, seek, del, &st, answer)
			st.Elapsed = time.Since(t0)
			tr.Steps = append(tr.Steps, st)
			if done || err != nil {
				return v, err
			}
		}
	}
	return nil, ErrNotFound
}

// explainTable is one table's step of explainGet; done reports that the
// table answered the lookup.
func (d *DB) explainTable(level int, f *manifest.FileMetadata, key, seek []byte, del uint64, st *TraceStep,
	answer func(*TraceStep, []byte, uint64, base.Kind) ([]byte, error)) (v []byte, done bool, err error) {
	if del > 0 && f.LargestSeq < del {
		st.Outcome = OutcomeOlderThanTombstone
		return nil, false, nil
	}
	if bytes.Compare(key, base.UserKey(f.Smallest)) < 0 || bytes.Compare(key, base.UserKey(f.Largest)) > 0 {
		st.Outcome = OutcomeOutsideRange
		return nil, false, nil
	}
	r, maybe, err := d.tableMayContain(level, f, key)
	if err != nil {
		st.Outcome = OutcomeError
		return nil, true, err
	}
	if r.HasFilter() {
		st.FilterPolicy = r.FilterPolicyName()
		st.FilterBitsPerKey = r.Properties().FilterBitsPerKey
		st.FilterMayContain = maybe
	}
	if !maybe {
		st.Outcome = OutcomeFilterNo
		return nil, false, nil
	}
	val, eseq, kind, ok, blocks, err := r.GetTraced(seek, key, nil)
	st.Blocks = blocks
	if err != nil {
		st.Outcome = OutcomeError
		return nil, true, wrapf(err, "table %06d", f.FileNum)
	}
	if !ok {
		st.Outcome = OutcomeAbsent
		if r.HasFilter() {
			st.Outcome = OutcomeFalsePositive
		}
		return nil, false, nil
	}
	if r.HasFilter() {
		d.m.levels[level].filterTruePositives.Add(1)
	}
	v, err = answer(st, val, eseq, kind)
	return v, true, err
}

// Summary counts a trace's tables by what became of them.
func (t *LookupTrace) Summary() (filterNo, falsePositives, blocksRead, blocksCached int) {
	for _, s := range t.Steps {
		switch s.Outcome {
		case OutcomeFilterNo:
			filterNo++
		case OutcomeFalsePositive:
			falsePositives++
		}
		r, c := countBlocks(s.Blocks)
		blocksRead, blocksCached = blocksRead+r, blocksCached+c
	}
	return
}

// String renders the trace as a tree, one line per step, as kvtool
// explain prints it.
func (t *LookupTrace) String() string {
	var b strings.Builder
	fno, fp, read, cached := t.Summary()
	outcome := t.Outcome
	if t.Err != "" {
		outcome += ": " + t.Err
	}
	fmt.Fprintf(&b, "get %s  →  %s  (%s skipped by filter, %s, %s read from files, %s from the cache, %s)\n",
		quoteKey(t.Key), outcome, plural(fno, "table"), plural(fp, "false positive"), plural(read, "data block"),
		plural(cached, "data block"), roundDuration(t.Elapsed))
	if t.RangeTombstoneSeq > 0 {
		fmt.Fprintf(&b, "  range tombstone over the key at seq %d: older entries are deleted\n", t.RangeTombstoneSeq)
	}
	for _, s := range t.Steps {
		if s.Level < 0 {
			fmt.Fprintf(&b, "  %-18s %s\n", s.Where, s.Outcome)
			continue
		}
		fmt.Fprintf(&b, "  L%d  %s   ", s.Level, stepFileName(s.FileName, s.FileNum))
		switch s.Outcome {
		case OutcomeOutsideRange:
			fmt.Fprintf(&b, "outside [%s, %s]", quoteKey(s.Smallest), quoteKey(s.Largest))
		case OutcomeOlderThanTombstone:
			b.WriteString("every entry older than the range tombstone: skipped")
		default:
			if s.FilterPolicy != "" {
				ans := "no"
				if s.FilterMayContain {
					ans = "maybe"
				}
				if s.FilterBitsPerKey > 0 {
					fmt.Fprintf(&b, "filter %s %.1f bits/key: %s", s.FilterPolicy, s.FilterBitsPerKey, ans)
				} else {
					fmt.Fprintf(&b, "filter %s: %s", s.FilterPolicy, ans)
				}
			} else {
				b.WriteString("no filter")
			}
			if s.Outcome != OutcomeFilterNo {
				b.WriteString(" → index (in memory)")
				writeBlocks(&b, s.Blocks)
				fmt.Fprintf(&b, " → %s", s.Outcome)
			}
		}
		fmt.Fprintf(&b, "  (%s)\n", roundDuration(s.Elapsed))
	}
	return b.String()
}

// countBlocks counts the blocks read from the file and from the cache.
func countBlocks(blocks []sstable.BlockRead) (read, cached int) {
	for _, bl := range blocks {
		if bl.Cached {
			cached++
		} else {
			read++
		}
	}
	return read, cached
}

// writeBlocks renders a step's data block reads, " → block @off (...)"
// each.
func writeBlocks(b *strings.Builder, blocks []sstable.BlockRead) {
	for _, bl := range blocks {
		if bl.Cached {
			fmt.Fprintf(b, " → block @%d (cache, %s)", bl.Offset, kib(bl.DecodedSize))
		} else {
			fmt.Fprintf(b, " → block @%d (file, %s → %s)", bl.Offset, kib(int(bl.StoredSize)), kib(bl.DecodedSize))
		}
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func kib(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/1024)
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d
}

// A SeekTrace is what ExplainSeek saw: where each source of a new
// iterator's Seek lands, and which tables the iterator's bounds and
// filters left out before anything of them was read.
type SeekTrace struct {
	Key []byte `json:"key"`
	// Lower and Upper are the ReadOptions' bounds (nil: unbounded).
	Lower []byte `json:"lower,omitempty"`
	Upper []byte `json:"upper,omitempty"`
	Seq   uint64 `json:"seq"`
	// Found reports that the Seek landed on a key: Result.
	Found  bool   `json:"found"`
	Result []byte `json:"result,omitempty"`
	Err    string `json:"error,omitempty"`
	// Steps are the memtables, then per level the tables in the bounds
	// that the seek asked, in order: every level-0 table, and in a deeper
	// level the tables from the one holding the seek key to the one it
	// landed in (the tables a level's iterator passes by key range, or
	// does not reach, are not listed).
	Steps   []SeekStep    `json:"steps"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Outcomes of a SeekStep.
const (
	// SeekLanded: the source was sought; First is where it landed (nil:
	// past its end).
	SeekLanded = "sought"
	// SeekPrefixFilterNo and SeekRangeFilterNo: the table's prefix or
	// range filter ruled it out; nothing of it is read.
	SeekPrefixFilterNo = "prefix filter: no"
	SeekRangeFilterNo  = "range filter: no"
)

// A SeekStep is one source of the iterator: a memtable or a table.
type SeekStep struct {
	Where    string `json:"where"`
	Level    int    `json:"level"`
	FileNum  uint64 `json:"file,omitempty"`
	FileName string `json:"file_name,omitempty"`
	Smallest []byte `json:"smallest,omitempty"`
	Largest  []byte `json:"largest,omitempty"`
	Outcome  string `json:"outcome"`
	// First is the user key of the first entry at or after the seek key
	// in this source (whatever its kind or sequence number), nil if none.
	First  []byte              `json:"first,omitempty"`
	Blocks []sstable.BlockRead `json:"blocks,omitempty"`
}

// ExplainSeek makes an iterator with ro, seeks it to key and returns what
// it did: for each memtable and each table within the bounds, in order,
// whether the table's prefix filter or range filter ruled it out (those
// tables are never read), which table of each level the seek landed in,
// the first entry there and the data blocks read to find it (from the
// block cache or the file), and the key the iterator's Seek returned. The
// trace looks at those blocks before the iterator's Seek without counting
// them or filling the block cache, so it shows the cache as the Seek met
// it, and Metrics count exactly what a plain Seek counts: its filter
// checks, cache lookups and block reads.
func (d *DB) ExplainSeek(key []byte, ro *ReadOptions) (*SeekTrace, error) {
	tr := &SeekTrace{Key: bytes.Clone(key)}
	if ro != nil {
		tr.Lower, tr.Upper = bytes.Clone(ro.LowerBound), bytes.Clone(ro.UpperBound)
	}
	start := time.Now()
	err := d.explainSeek(key, ro, tr)
	tr.Elapsed = time.Since(start)
	if err != nil {
		tr.Err = err.Error()
	}
	return tr, err
}

func (d *DB) explainSeek(key []byte, ro *ReadOptions, tr *SeekTrace) error {
	it := &Iterator{s: d.newIterState(ro, true)} // the trace reads its read state
	defer it.Close()
	if err := it.Error(); err != nil {
		return err
	}
	if err := d.traceSeek(it.s, key, tr); err != nil {
		return err
	}
	if tr.Found = it.Seek(key); tr.Found {
		tr.Result = bytes.Clone(it.Key())
	}
	return it.Error()
}

// traceSeek fills tr's steps for a Seek of it to key, before the Seek
// itself, so the blocks are found in the cache state the Seek meets.
func (d *DB) traceSeek(it *iterState, key []byte, tr *SeekTrace) error {
	cell, ok := it.enter()
	if !ok {
		return it.err
	}
	defer it.exit(cell)
	tr.Seq = it.seq
	rs := it.rs
	target := key
	if it.lower != nil && bytes.Compare(target, it.lower) < 0 {
		target = it.lower
	}
	seek := base.AppendInternalKey(nil, target, it.seq, base.KindSeek)
	for i, mem := range [2]*memtable.MemTable{rs.mem, rs.imm} {
		if mem == nil {
			continue
		}
		st := SeekStep{Where: "memtable", Level: -1, Outcome: SeekLanded}
		if i == 1 {
			st.Where = "frozen memtable"
		}
		mi := mem.NewIterator()
		if mi.SeekGE(seek) {
			st.First = bytes.Clone(base.UserKey(mi.Key()))
		}
		mi.Close()
		tr.Steps = append(tr.Steps, st)
	}
	if it.empty {
		return nil
	}
	prefix, prefixOK := []byte(nil), false
	if d.opts.Prefix != nil {
		prefix, prefixOK = filter.ScanPrefix(d.opts.Prefix, it.lower, it.upper)
	}
	rangeOK := d.opts.RangeFilter != nil && it.lower != nil && it.upper != nil
	for level := range rs.v.Files {
		landed := false
		for _, f := range it.overlapping(rs.v, level) {
			if level > 0 && (landed || bytes.Compare(base.UserKey(f.Largest), target) < 0) {
				continue
			}
			st := SeekStep{Where: "table", Level: level, FileNum: f.FileNum, FileName: d.tableBaseName(f.FileNum),
				Smallest: base.UserKey(f.Smallest), Largest: base.UserKey(f.Largest)}
			r, err := d.tables.get(f)
			if err != nil {
				return err
			}
			switch {
			case prefixOK && prefixRuledOut(r, d.opts.prefixName, prefix):
				st.Outcome = SeekPrefixFilterNo
			case rangeOK && r.HasRangeFilter() && !r.RangeMayContain(it.lower, it.upper):
				st.Outcome = SeekRangeFilterNo
			default:
				st.Outcome = SeekLanded
				ikey, ok, blocks, err := r.SeekTraced(seek)
				st.Blocks = blocks
				if err != nil {
					return wrapf(err, "table %06d", f.FileNum)
				}
				if ok {
					st.First = base.UserKey(ikey)
					landed = true
				}
			}
			tr.Steps = append(tr.Steps, st)
		}
	}
	return nil
}

// String renders the trace as a tree, one line per source, as kvtool
// explain --seek prints it.
func (t *SeekTrace) String() string {
	var b strings.Builder
	result := "end of the range"
	if t.Found {
		result = quoteKey(t.Result)
	}
	if t.Err != "" {
		result = "error: " + t.Err
	}
	skipped, read, cached := 0, 0, 0
	for _, s := range t.Steps {
		if s.Outcome == SeekPrefixFilterNo || s.Outcome == SeekRangeFilterNo {
			skipped++
		}
		r, c := countBlocks(s.Blocks)
		read, cached = read+r, cached+c
	}
	fmt.Fprintf(&b, "seek %s", quoteKey(t.Key))
	if t.Lower != nil || t.Upper != nil {
		fmt.Fprintf(&b, " in [%s, %s)", quoteKey(t.Lower), quoteBound(t.Upper))
	}
	fmt.Fprintf(&b, "  →  %s  (%s skipped by filter, %s read from files, %s from the cache, %s)\n",
		result, plural(skipped, "table"), plural(read, "data block"), plural(cached, "data block"), roundDuration(t.Elapsed))
	for _, s := range t.Steps {
		if s.Level < 0 {
			fmt.Fprintf(&b, "  %-18s ", s.Where)
		} else {
			fmt.Fprintf(&b, "  L%d  %s   ", s.Level, stepFileName(s.FileName, s.FileNum))
		}
		if s.Outcome != SeekLanded {
			b.WriteString(s.Outcome + "\n")
			continue
		}
		if s.Level >= 0 {
			b.WriteString("index (in memory)")
			writeBlocks(&b, s.Blocks)
			b.WriteString(" → ")
		}
		if s.First != nil {
			fmt.Fprintf(&b, "first entry %s\n", quoteKey(s.First))
		} else {
			b.WriteString("nothing at or after the key\n")
		}
	}
	return b.String()
}

// tableBaseName returns the file name of table num, as tablePath finds it.
func (d *DB) tableBaseName(num uint64) string { return filepath.Base(d.tablePath(num)) }

// stepFileName is a trace step's file name, or NNNNNN.sst for a trace
// decoded from JSON written without one.
func stepFileName(name string, num uint64) string {
	if name != "" {
		return name
	}
	return fmt.Sprintf("%06d.sst", num)
}

// maxQuotedKey is the most of a key a trace's text shows: keys may be up
// to MaxKeySize (8 MiB), and a trace of such keys would be megabytes long.
const maxQuotedKey = 64

// quoteKey quotes k as %q does, cut to its first maxQuotedKey bytes with
// its length named when longer.
func quoteKey(k []byte) string {
	if len(k) <= maxQuotedKey {
		return fmt.Sprintf("%q", k)
	}
	return fmt.Sprintf("%q…(%d bytes)", k[:maxQuotedKey], len(k))
}

// quoteBound is quoteKey for an upper bound, nil meaning none.
func quoteBound(k []byte) string {
	if k == nil {
		return "∞"
	}
	return quoteKey(k)
}

// prefixRuledOut reports whether table r's prefix filter rules prefix out.
func prefixRuledOut(r *sstable.Reader, extractor string, prefix []byte) bool {
	checked, may := r.PrefixCheck(extractor, prefix)
	return checked && !may
}
