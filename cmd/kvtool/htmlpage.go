package main

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/linkpath"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// This file writes the HTML pages of kvtool lsm --html and kvtool explain
// --html: one self-contained file each (the style sheet, the script and
// the data inline; nothing fetched, so it opens from disk on a machine
// without a network). Go gathers what the page shows into a pageData and
// embeds it as JSON; htmlpage.js draws it.
//
// The picture: one row (class "level") for each of the manifest.NumLevels
// levels, empty ones included, so the tree keeps its shape while the
// history slider moves; in a row one box (class "table") per table of the
// version shown. A box's width is proportional to the table's bytes (the
// largest level below level 0 that the page ever shows fills the row; at
// least a few pixels), and it sits as near the middle of the table's key
// range, which a thin bar under it spans, as its neighbours allow: the
// tables of a level below 0 side by side in key order, those of level 0,
// whose ranges overlap, in lanes of their own within the row, newest on
// top. Keys are placed by keyFrac. A box's colour is its filter's
// measured false-positive rate (probeFPR) or its bits per key, with a
// legend.
//
// The page's protocol (internal/browsertest): its script sets
// data-rendered="1" on <html> as the last step of a successful render
// (and data-render-ms, the milliseconds the script took, just before), and
// a window "error" handler appends each error's message to
// data-script-errors on <html>.
//
// A page is written to a new file beside FILE and renamed over it
// (writePage), never through a link, and never to, or through a link to,
// a file of the store (checkPagePath). A store another process writes is
// read again while it changes under the reading (buildPageOf).

//go:embed htmlpage.css
var pageCSS string

//go:embed htmlpage.js
var pageJS string

// defaultFPRProbes is how many absent keys --fpr_probes asks each table's
// filter about by default: enough to tell 0.1% from 1% apart (about 84
// positives, ±10, at 10 bits per key), cheap next to reading a table.
const defaultFPRProbes = 10000

// pageData is everything an HTML page draws, embedded in it as JSON.
type pageData struct {
	// Kind is "lsm" (the tree and its history) or "explain" (the tree
	// with a lookup's path on it).
	Kind     string `json:"kind"`
	Store    string `json:"store"`
	Manifest string `json:"manifest"`
	// Format is the store's format, "bloomkv" or "leveldb" (see kvtool
	// check).
	Format   string `json:"format"`
	LastSeq  uint64 `json:"last_seq"`
	NextFile uint64 `json:"next_file"`
	// NumLevels is the number of level rows drawn: manifest.NumLevels.
	NumLevels int `json:"num_levels"`
	// Smallest and Largest are the keys at the left and right ends of the
	// rows: the smallest and largest user keys of every table the page
	// shows (over the whole history for lsm).
	Smallest string `json:"smallest"`
	Largest  string `json:"largest"`
	// Tables are every table the page shows, by file number: the live
	// ones, and for lsm those the history shows that have been deleted
	// since.
	Tables []*pageTable `json:"tables"`
	// Levels are the file numbers of the live tables, level by level, in
	// the version's order (level 0 newest first).
	Levels [][]uint64 `json:"levels"`
	// History is every version edit of the MANIFEST, in order (lsm only).
	History []pageEdit `json:"history"`
	// FPRProbes is how many absent keys each live table's filter was asked
	// about (0: not measured).
	FPRProbes int `json:"fpr_probes"`
	// Problems are what went wrong reading the store: damaged MANIFEST
	// records, unreadable tables.
	Problems []string `json:"problems"`
	// Trace is the lookup an explain page draws.
	Trace *pageTrace `json:"trace,omitempty"`
}

// pageTable is one table of a page.
type pageTable struct {
	File uint64 `json:"file"`
	// Level is the table's level now, or the last one it had.
	Level int `json:"level"`
	// Live reports that the table is in the current version; the page
	// read its properties only then.
	Live bool   `json:"live"`
	Size uint64 `json:"size"`
	// Smallest and Largest are its user-key range, escaped for display
	// (escape, abbreviated), and as hex (abbreviated).
	Smallest    string `json:"smallest"`
	Largest     string `json:"largest"`
	SmallestHex string `json:"smallest_hex"`
	LargestHex  string `json:"largest_hex"`
	// TombstoneEnd reports that Largest is a range tombstone's end, which
	// the table holds no key at.
	TombstoneEnd bool `json:"tombstone_end,omitempty"`
	// X0 and X1 place the range in the rows: keyFrac of its bounds.
	X0          float64 `json:"x0"`
	X1          float64 `json:"x1"`
	SmallestSeq uint64  `json:"smallest_seq"`
	LargestSeq  uint64  `json:"largest_seq"`
	// SeqsUnknown reports that the MANIFEST records no sequence numbers
	// for the table (LevelDB's new-file tag 7): the two above mean
	// nothing.
	SeqsUnknown bool   `json:"seqs_unknown,omitempty"`
	RangeDels   uint64 `json:"range_dels"`
	// Props are read from the table file of a live table (nil otherwise,
	// or when it could not be read: Error says why).
	Props *pageProps `json:"props,omitempty"`
	Error string     `json:"error,omitempty"`
}

// pageProps are a live table's properties and its measured filter.
type pageProps struct {
	Entries     uint64 `json:"entries"`
	Deletions   uint64 `json:"deletions"`
	DataBlocks  uint64 `json:"data_blocks"`
	Compression string `json:"compression"`
	// Filter is the filter policy's name ("" none), FilterKnown whether
	// kvtool can read it (and so measure it).
	Filter      string  `json:"filter"`
	FilterKnown bool    `json:"filter_known"`
	FilterBytes uint64  `json:"filter_bytes"`
	BitsPerKey  float64 `json:"bits_per_key"`
	// Prefix names the prefix extractor whose prefixes the filter also
	// holds, NumPrefixes how many.
	Prefix      string `json:"prefix,omitempty"`
	NumPrefixes uint64 `json:"num_prefixes,omitempty"`
	// RangeFilter names the range filter's policy, RangeFilterBytes its size.
	RangeFilter      string `json:"range_filter,omitempty"`
	RangeFilterBytes uint64 `json:"range_filter_bytes,omitempty"`
	// Probes absent keys were asked about; FalsePositives of them the
	// filter answered "maybe" (probeFPR). Probes is 0 when not measured.
	Probes         int `json:"probes"`
	FalsePositives int `json:"false_positives"`
}

// pageEdit is one version edit of the history.
type pageEdit struct {
	// Record is the edit's record number in the MANIFEST (from 1).
	Record int `json:"record"`
	// Kind is inferred from the levels the edit adds tables to and
	// deletes them from (editKind).
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	// Added and Deleted are [level, file number] pairs.
	Added   [][2]uint64 `json:"added"`
	Deleted [][2]uint64 `json:"deleted"`
	LastSeq uint64      `json:"last_seq,omitempty"`
}

// pageTrace is a lookup an explain page draws.
type pageTrace struct {
	// Op is "get" or "seek".
	Op string `json:"op"`
	// Headline is the trace's first line as kvtool explain prints it.
	Headline string `json:"headline"`
	Key      string `json:"key"`
	// KeyX places the key in the rows; KeyWhere is "before" or "after"
	// when it lies outside them (KeyX is then 0 or 1), else "".
	KeyX     float64 `json:"key_x"`
	KeyWhere string  `json:"key_where,omitempty"`
	// Lower and Upper are a seek's bounds (HasLower, HasUpper: set), and
	// LowerX, UpperX their places.
	HasLower bool            `json:"has_lower,omitempty"`
	HasUpper bool            `json:"has_upper,omitempty"`
	Lower    string          `json:"lower,omitempty"`
	Upper    string          `json:"upper,omitempty"`
	LowerX   float64         `json:"lower_x,omitempty"`
	UpperX   float64         `json:"upper_x,omitempty"`
	Elapsed  string          `json:"elapsed"`
	Steps    []pageTraceStep `json:"steps"`
	// Notes say what became of the levels the lookup asked no table of.
	Notes []string `json:"notes,omitempty"`
}

// pageTraceStep is one step of a lookup: a memtable or a table.
type pageTraceStep struct {
	Where string `json:"where"`
	// Level is -1 for a memtable.
	Level int    `json:"level"`
	File  uint64 `json:"file,omitempty"`
	// Mark is how the page marks the table (traceMark).
	Mark    string `json:"mark"`
	Outcome string `json:"outcome"`
	// Detail is the step's line as kvtool explain prints it.
	Detail  string `json:"detail"`
	Elapsed string `json:"elapsed,omitempty"`
}

// pageOptions say what a page is made of.
type pageOptions struct {
	kind      string
	history   bool // read and embed the MANIFEST's history
	fprProbes int
}

// pageSource is a store read for a page: its state and, with history, its
// version edits; and once openTables has run, its live tables' files.
type pageSource struct {
	st    *storeState
	edits []numberedEdit
	files map[uint64]*os.File
}

// openTables opens the file of every live table of the version read, so
// that a compaction that deletes the file later takes nothing away from
// the page, and reports whether any was missing: the store moved on
// since its MANIFEST was read (or the file was lost). A file that cannot
// be opened is left to readPageProps, which says why.
func (src *pageSource) openTables() (missing bool) {
	src.files = map[uint64]*os.File{}
	for _, files := range src.st.version.Files {
		for _, m := range files {
			f, err := os.Open(tablePath(src.st.dir, m.FileNum))
			switch {
			case err == nil:
				src.files[m.FileNum] = f
			case errors.Is(err, fs.ErrNotExist):
				missing = true
			}
		}
	}
	return missing
}

// closeTables closes the files openTables opened.
func (src *pageSource) closeTables() {
	for _, f := range src.files {
		f.Close()
	}
	src.files = nil
}

// numberedEdit is a version edit and its record number in the MANIFEST.
type numberedEdit struct {
	n int
	e *manifest.VersionEdit
}

// readPageSource reads the store in dir for a page. A directory that is
// not a store is an error saying so.
func readPageSource(dir string, history bool) (*pageSource, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (give a store's directory)", dir)
	}
	src := &pageSource{}
	var onEdit func(int, *manifest.VersionEdit)
	if history {
		onEdit = func(n int, e *manifest.VersionEdit) { src.edits = append(src.edits, numberedEdit{n, e}) }
	}
	src.st, err = loadStateWith(dir, onEdit)
	if err != nil {
		if _, cerr := os.Stat(filepath.Join(dir, "CURRENT")); errors.Is(cerr, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a bloomkv store: it has no CURRENT file", dir)
		}
		return nil, err
	}
	return src, nil
}

// pageAttempts is how many times, at most, buildPageOf reads a store that
// keeps changing while it is read.
const pageAttempts = 10

// buildPageOf reads the store in dir (readPageSource), opens the files of
// its live tables (pageSource.openTables) and gathers its page
// (buildPage). kvtool reads a store without its LOCK, so another process
// may be writing it, and the store can move on under the reading: a
// compaction deletes tables the MANIFEST just read names, or the MANIFEST
// grows (a torn last record) or is replaced while it is read. So when the
// read fails, a table's file is missing or the MANIFEST read has
// problems, and the MANIFEST changed meanwhile (CURRENT names another, or
// its size or time changed), the store is read again, up to pageAttempts
// times in all, with a short pause between: a problem is reported only
// when it persists, or when the store did not change and it is real.
// Once the files are open, the page is gathered from them, whatever the
// writer does.
func buildPageOf(dir string, o pageOptions) (*pageData, keySpan, *pageSource, error) {
	for attempt := 1; ; attempt++ {
		before := stampManifest(dir)
		src, err := readPageSource(dir, o.history)
		if err == nil && !src.openTables() && len(src.st.problems) == 0 {
			p, sp := buildPage(src, o)
			src.closeTables()
			return p, sp, src, nil
		}
		if attempt == pageAttempts || before == (manifestStamp{}) || stampManifest(dir) == before {
			if err != nil {
				return nil, keySpan{}, nil, err
			}
			p, sp := buildPage(src, o)
			src.closeTables()
			return p, sp, src, nil
		}
		if src != nil {
			src.closeTables()
		}
		time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
	}
}

// manifestStamp is what tells that a store's MANIFEST changed: the one
// CURRENT names, its size and its modification time.
type manifestStamp struct {
	path string
	size int64
	mod  time.Time
}

// stampManifest returns the stamp of dir's MANIFEST now (zero when it
// cannot be read).
func stampManifest(dir string) manifestStamp {
	path, err := readCurrent(dir)
	if err != nil {
		return manifestStamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return manifestStamp{path: path}
	}
	return manifestStamp{path, fi.Size(), fi.ModTime()}
}

// buildPage gathers the data of a page of the store src read: the live
// tables with their properties (and, with o.fprProbes > 0, their filters'
// measured false-positive rates), and with o.history every version edit
// and every table the edits name. The key span it returns, which the
// rows cover, is that of all those tables; an explain page places its
// keys in it.
func buildPage(src *pageSource, o pageOptions) (*pageData, keySpan) {
	st := src.st
	p := &pageData{
		Kind:      o.kind,
		Store:     st.dir,
		Manifest:  filepath.Base(st.manifestPath),
		Format:    st.format().String(),
		LastSeq:   st.lastSeq,
		NextFile:  st.nextFileNum,
		NumLevels: manifest.NumLevels,
		Levels:    make([][]uint64, manifest.NumLevels),
		History:   []pageEdit{},
		Problems:  []string{},
		FPRProbes: o.fprProbes,
	}
	for _, e := range st.problems {
		p.Problems = append(p.Problems, e.Error())
	}
	// metas are the tables to draw, by file number: first every table the
	// history names (with the level it was last added to), then the live
	// version, which wins.
	metas := map[uint64]*manifest.FileMetadata{}
	levels := map[uint64]int{}
	if o.history {
		p.History = historyOf(src.edits, metas, levels)
	}
	live := map[uint64]bool{}
	for level, files := range st.version.Files {
		p.Levels[level] = []uint64{}
		for _, m := range files {
			metas[m.FileNum], levels[m.FileNum], live[m.FileNum] = m, level, true
			p.Levels[level] = append(p.Levels[level], m.FileNum)
		}
	}
	nums := make([]uint64, 0, len(metas))
	for n := range metas {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	var ms []*manifest.FileMetadata
	for _, n := range nums {
		ms = append(ms, metas[n])
	}
	sp := spanOf(ms)
	p.Smallest, p.Largest = displayKey(sp.lo), displayKey(sp.hi)
	p.Tables = []*pageTable{}
	for _, n := range nums {
		m := metas[n]
		t := newPageTable(m, levels[n], sp)
		if live[n] {
			t.Live = true
			t.Props, t.Error = readPageProps(st.dir, m, src.files[n], o.fprProbes)
			if t.Error != "" {
				p.Problems = append(p.Problems, fmt.Sprintf("table %06d: %s", n, t.Error))
			}
		}
		p.Tables = append(p.Tables, t)
	}
	return p, sp
}

// keySpan is the user-key range a page's rows cover, with what keyFrac
// needs to place a key in it.
type keySpan struct {
	lo, hi []byte
	empty  bool // no table: every key maps to the middle
	// prefix is the length of the prefix lo and hi share, which every key
	// between them has too. digits[i] is the range of the byte at
	// prefix+i that keyFrac reads as a digit (spanDigits of them).
	prefix int
	digits []digitRange
	// flo and fhi are lo's and hi's places before scaling to [0, 1].
	flo, fhi float64
}

// digitRange is the byte values one position of the keys takes.
type digitRange struct{ min, max byte }

// spanDigits is how many bytes past the shared prefix place a key: more
// than a float64 resolves for any range of byte values.
const spanDigits = 16

// spanOf returns the span of the tables ms: their smallest and largest
// user keys, and the byte values their bounds take at each position past
// the prefix they all share. A position where every bound has an ASCII
// digit takes '0'..'9', one of lower-case (upper-case) letters 'a'..'z'
// ('A'..'Z'), otherwise the smallest to the largest value seen.
func spanOf(ms []*manifest.FileMetadata) keySpan {
	if len(ms) == 0 {
		return keySpan{empty: true}
	}
	var keys [][]byte
	for _, m := range ms {
		keys = append(keys, base.UserKey(m.Smallest), base.UserKey(m.Largest))
	}
	sp := keySpan{lo: keys[0], hi: keys[0]}
	for _, k := range keys[1:] {
		if bytes.Compare(k, sp.lo) < 0 {
			sp.lo = k
		}
		if bytes.Compare(k, sp.hi) > 0 {
			sp.hi = k
		}
	}
	for sp.prefix < len(sp.lo) && sp.prefix < len(sp.hi) && sp.lo[sp.prefix] == sp.hi[sp.prefix] {
		sp.prefix++
	}
	for i := 0; i < spanDigits; i++ {
		r, seen := digitRange{255, 0}, false
		for _, k := range keys {
			if p := sp.prefix + i; p < len(k) {
				r.min, r.max, seen = min(r.min, k[p]), max(r.max, k[p]), true
			}
		}
		if !seen {
			break
		}
		for _, class := range []digitRange{{'0', '9'}, {'a', 'z'}, {'A', 'Z'}} {
			if r.min >= class.min && r.max <= class.max {
				r = class
				break
			}
		}
		sp.digits = append(sp.digits, r)
	}
	sp.flo, sp.fhi = sp.place(sp.lo), sp.place(sp.hi)
	return sp
}

// place reads the bytes of key past the span's prefix as the digits of a
// fraction, position i in base digits[i].max-digits[i].min+1. A byte
// outside its position's range is clamped, and then every later digit
// taken as the same end of its range, and a key that ends early as one
// whose later digits are all the smallest: so a key never places after
// a greater one.
func (sp keySpan) place(key []byte) float64 {
	f, unit := 0.0, 1.0
	clamp := 0 // -1: clamped to the bottom, +1: to the top
	for i, r := range sp.digits {
		radix := float64(r.max) - float64(r.min) + 1
		unit /= radix
		d := 0.0
		p := sp.prefix + i
		switch {
		case clamp > 0:
			d = radix - 1
		case clamp < 0 || p >= len(key):
			clamp = -1
		case key[p] < r.min:
			clamp = -1
		case key[p] > r.max:
			d, clamp = radix-1, 1
		default:
			d = float64(key[p] - r.min)
		}
		f += d * unit
	}
	return f
}

// keyFrac maps key to [0, 1] across the span: the span's smallest key to
// 0, its largest to 1, keys outside it to the nearer end, and the keys
// between linearly by place, which reads the bytes past the prefix they
// share as digits in the ranges the tables' bounds use (so decimal keys
// such as kvbench's place by their number). A span of one key, or of
// none, maps every key to 0.5.
func keyFrac(key []byte, sp keySpan) float64 {
	if sp.empty || bytes.Equal(sp.lo, sp.hi) {
		return 0.5
	}
	if bytes.Compare(key, sp.lo) <= 0 {
		return 0
	}
	if bytes.Compare(key, sp.hi) >= 0 {
		return 1
	}
	if sp.fhi <= sp.flo {
		return 0.5
	}
	return min(1, max(0, (sp.place(key)-sp.flo)/(sp.fhi-sp.flo)))
}

// emptyKey is how a page shows the empty key, which would otherwise be
// blank. No key renders so: displayKey escapes every byte past ASCII.
const emptyKey = "‹empty›"

// displayKey renders a key for a page: escaped as kvtool prints keys,
// abbreviated past 48 bytes (...(N bytes)), the empty key as emptyKey.
// The page shows it as text, never as markup.
func displayKey(k []byte) string {
	if len(k) == 0 {
		return emptyKey
	}
	return byteFormat{Max: 48}.format(k)
}

// hexKey renders a key as hex, abbreviated past 32 bytes.
func hexKey(k []byte) string { return byteFormat{Hex: true, Max: 32}.format(k) }

func newPageTable(m *manifest.FileMetadata, level int, sp keySpan) *pageTable {
	lo, hi := base.UserKey(m.Smallest), base.UserKey(m.Largest)
	_, _, kind, ok := base.ParseBoundKey(m.Largest)
	return &pageTable{
		File: m.FileNum, Level: level, Size: m.Size,
		Smallest: displayKey(lo), Largest: displayKey(hi),
		SmallestHex: hexKey(lo), LargestHex: hexKey(hi),
		TombstoneEnd: ok && kind == base.KindRangeDelete,
		X0:           keyFrac(lo, sp), X1: keyFrac(hi, sp),
		SmallestSeq: m.SmallestSeq, LargestSeq: m.LargestSeq, SeqsUnknown: m.SeqsUnknown, RangeDels: m.RangeDels,
	}
}

// readPageProps reads the live table m of the store in dir, from f when
// it is not nil (the table's file, opened by pageSource.openTables),
// from its file otherwise, and returns its properties, with its filter
// measured by probes absent keys; or why it could not.
func readPageProps(dir string, m *manifest.FileMetadata, f *os.File, probes int) (*pageProps, string) {
	var r *sstable.Reader
	var err error
	if f != nil {
		r, err = tableReader(f, f.Name(), true)
	} else {
		r, f, err = openTable(tablePath(dir, m.FileNum), true)
		if err == nil {
			defer f.Close()
		}
	}
	if err != nil {
		return nil, err.Error()
	}
	defer r.Close()
	// A LevelDB table's counts and bits per key come from a scan.
	pr, err := r.ScanProperties()
	if err != nil {
		return nil, err.Error()
	}
	pp := &pageProps{
		Entries: pr.NumEntries, Deletions: pr.NumDeletions, DataBlocks: pr.NumDataBlocks,
		Compression: pr.Compression,
		Filter:      pr.FilterPolicy, FilterKnown: r.HasFilter(), FilterBytes: pr.FilterSize,
		BitsPerKey: pr.FilterBitsPerKey,
		Prefix:     pr.PrefixExtractor, NumPrefixes: pr.NumPrefixes,
		RangeFilter: pr.RangeFilter, RangeFilterBytes: pr.RangeFilterSize,
	}
	if r.HasFilter() && pr.NumEntries > 0 && probes > 0 {
		pp.Probes, pp.FalsePositives, err = probeFPR(r, base.UserKey(m.Smallest), base.UserKey(m.Largest), probes)
		if err != nil {
			return pp, fmt.Sprintf("measuring the filter: %v", err)
		}
	}
	return pp, ""
}

// Probe keys' bounds (probeKeys): a probe copies at most probeStemMax
// bytes of the table's smallest key when the table's key range leaves
// room for keys that short, and one table's probes add up to at most
// probeBytesMax bytes. Keys may be up to db.MaxKeySize (8 MiB): probes
// built on a whole 8 MiB key hashed 80 GB for one table's 10,000 probes
// (29 s for kvtool lsm --html).
const (
	probeStemMax  = 64
	probeBytesMax = 64 << 20
)

// probeKeys returns the stem of the probe keys of a table whose user keys
// run from small to large, and how many of the n probes asked for to
// make. A probe is the stem and an 8-byte counter. The stem is small cut
// to probeStemMax bytes, or to one byte past the prefix small and large
// share when that is longer (every key between them starts with that
// prefix), followed by "\xff~"; or, when small is a proper prefix of
// large, small followed by "\x00~". So a probe sorts after small
// (unless small's byte at the cut is 0xff) and, when small and large
// differ within the stem, before large: inside the table's range, where
// a lookup would ask the filter, and not a key of the table unless the
// table holds such keys (probeFPR drops those). A range of one key,
// small = large, holds no other: the probes lie outside it whatever
// their length, and the stem is at most probeStemMax bytes. Only when the
// shared prefix is long are the probes long too; then fewer are made,
// probeBytesMax bytes in all (at least one): a table of 8 MiB keys that
// differ only in their last bytes gets 7 probes, and the page says "x of
// 7 absent keys".
func probeKeys(small, large []byte, n int) (stem []byte, probes int) {
	shared := 0
	for shared < len(small) && shared < len(large) && small[shared] == large[shared] {
		shared++
	}
	cut, mark := min(len(small), max(probeStemMax, shared+1)), byte(0xff)
	switch {
	case bytes.Equal(small, large):
		cut = min(len(small), probeStemMax)
	case shared == len(small):
		mark = 0x00
	}
	stem = append(bytes.Clone(small[:cut]), mark, '~')
	if size := len(stem) + 8; n*size > probeBytesMax {
		n = max(1, probeBytesMax/size)
	}
	return stem, n
}

// probeFPR measures the false-positive rate of r's filter: it asks the
// filter about up to n absent keys made by probeKeys from the table's
// user-key range [small, large], and reads the table (r.GetEntry, one
// data block) only for those the filter answers "maybe", to drop any the
// table really holds. So it costs the probes' hashes and about n × the
// rate block reads, not a scan of the table. It returns the keys asked
// that the table does not hold and how many of them the filter said
// "maybe" to.
func probeFPR(r *sstable.Reader, small, large []byte, n int) (probes, positives int, err error) {
	key, n := probeKeys(small, large, n)
	stem := len(key)
	var seek []byte
	for i := 0; i < n; i++ {
		key = binary.BigEndian.AppendUint64(key[:stem], uint64(i))
		if !r.MayContain(key) {
			probes++
			continue
		}
		seek = base.AppendInternalKey(seek[:0], key, base.MaxSeqNum, base.KindSeek)
		_, _, _, found, err := r.GetEntry(seek, key)
		if err != nil {
			return probes, positives, err
		}
		if !found {
			probes++
			positives++
		}
	}
	return probes, positives, nil
}

// historyOf turns the version edits into the page's steps, recording in
// metas and levels every table they add (and the level it went to).
func historyOf(edits []numberedEdit, metas map[uint64]*manifest.FileMetadata, levels map[uint64]int) []pageEdit {
	out := make([]pageEdit, 0, len(edits))
	for _, ne := range edits {
		e := ne.e
		pe := pageEdit{Record: ne.n, Added: [][2]uint64{}, Deleted: [][2]uint64{}}
		if e.HasLastSequence {
			pe.LastSeq = e.LastSequence
		}
		for _, d := range e.DeletedFiles {
			pe.Deleted = append(pe.Deleted, [2]uint64{uint64(d.Level), d.FileNum})
		}
		for _, nf := range e.NewFiles {
			pe.Added = append(pe.Added, [2]uint64{uint64(nf.Level), nf.Meta.FileNum})
		}
		pe.Kind, pe.Summary = editKind(e, metas)
		for _, nf := range e.NewFiles {
			metas[nf.Meta.FileNum], levels[nf.Meta.FileNum] = nf.Meta, nf.Level
		}
		out = append(out, pe)
	}
	return out
}

// Kinds of version edits, as editKind infers them.
const (
	editOpen       = "open"       // no table added or deleted: a new log, the next file number, the sequence
	editSnapshot   = "snapshot"   // the whole tree, as a new MANIFEST starts
	editFlush      = "flush"      // tables added to one level, none deleted: a memtable written out
	editCompaction = "compaction" // tables deleted and others added below (or nothing added: all dropped)
	editMove       = "move"       // the same tables deleted from one level and added to a deeper one
)

// editKind infers what made e from the levels it adds tables to and
// deletes them from (a MANIFEST does not say), and sums it up in a line.
// metas holds the tables added by the edits before e.
func editKind(e *manifest.VersionEdit, metas map[uint64]*manifest.FileMetadata) (kind, summary string) {
	addLevels, delLevels := map[int]bool{}, map[int]bool{}
	var addBytes, delBytes uint64
	added, deleted := map[uint64]bool{}, map[uint64]bool{}
	for _, nf := range e.NewFiles {
		addLevels[nf.Level] = true
		addBytes += nf.Meta.Size
		added[nf.Meta.FileNum] = true
	}
	for _, d := range e.DeletedFiles {
		delLevels[d.Level] = true
		deleted[d.FileNum] = true
		if m := metas[d.FileNum]; m != nil {
			delBytes += m.Size
		}
	}
	levelsOf := func(set map[int]bool) string {
		var ls []int
		for l := range set {
			ls = append(ls, l)
		}
		slices.Sort(ls)
		if len(ls) == 1 {
			return fmt.Sprintf("L%d", ls[0])
		}
		return fmt.Sprintf("L%d-L%d", ls[0], ls[len(ls)-1])
	}
	tables := func(n int, bytes uint64) string {
		return fmt.Sprintf("%s (%s)", countOf(uint64(n), "table"), humanBytes(bytes))
	}
	switch {
	case len(e.NewFiles) == 0 && len(e.DeletedFiles) == 0:
		var parts []string
		if e.Comparer != "" {
			parts = append(parts, "comparer "+e.Comparer)
		}
		if e.HasLogNumber {
			parts = append(parts, fmt.Sprintf("log %06d", e.LogNumber))
		}
		if e.HasNextFileNumber {
			parts = append(parts, fmt.Sprintf("next file %06d", e.NextFileNumber))
		}
		if e.HasLastSequence {
			parts = append(parts, fmt.Sprintf("last sequence %d", e.LastSequence))
		}
		if len(parts) == 0 {
			parts = append(parts, "nothing recorded")
		}
		return editOpen, "no tables: " + strings.Join(parts, ", ")
	case len(e.DeletedFiles) == 0 && (e.Comparer != "" || len(addLevels) > 1):
		return editSnapshot, fmt.Sprintf("the whole tree: %s in %s", tables(len(e.NewFiles), addBytes), levelsOf(addLevels))
	case len(e.DeletedFiles) == 0:
		if len(e.NewFiles) == 1 {
			return editFlush, fmt.Sprintf("%06d (%s) written to %s", e.NewFiles[0].Meta.FileNum, humanBytes(addBytes), levelsOf(addLevels))
		}
		return editFlush, fmt.Sprintf("%s written to %s", tables(len(e.NewFiles), addBytes), levelsOf(addLevels))
	case len(e.NewFiles) == 0:
		return editCompaction, fmt.Sprintf("%s of %s dropped, nothing written", tables(len(e.DeletedFiles), delBytes), levelsOf(delLevels))
	}
	same := len(added) == len(deleted)
	for n := range added {
		same = same && deleted[n]
	}
	if same {
		return editMove, fmt.Sprintf("%s moved %s → %s, nothing rewritten", tables(len(e.NewFiles), addBytes), levelsOf(delLevels), levelsOf(addLevels))
	}
	// A compaction reads tables of a level and the ones they overlap in
	// the level it writes to: it is named by the first and the last.
	from, to := manifest.NumLevels, -1
	for l := range delLevels {
		from = min(from, l)
	}
	for l := range addLevels {
		to = max(to, l)
	}
	return editCompaction, fmt.Sprintf("L%d → L%d: %s in, %s out", from, to,
		tables(len(e.DeletedFiles), delBytes), tables(len(e.NewFiles), addBytes))
}

// renderPage returns the page for p: the style sheet, p as JSON and the
// script, inline. encoding/json escapes <, > and & in strings (as \u003c
// and so on), so no key can close the data's <script> element or open
// another; the script only ever puts the data into the page as text.
func renderPage(p *pageData, title string) ([]byte, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString(title))
	// The error handler comes first, so it sees every later script's errors.
	b.WriteString(`<script>window.addEventListener("error", function (e) {
  var h = document.documentElement;
  h.setAttribute("data-script-errors", (h.getAttribute("data-script-errors") || "") + (e.message || "error") + ";");
});</script>
`)
	b.WriteString("<style>\n")
	b.WriteString(pageCSS)
	b.WriteString("</style>\n</head>\n<body>\n<noscript>This page draws the tree with JavaScript; enable it to see the picture.</noscript>\n")
	b.WriteString("<script id=\"bloomkv-data\" type=\"application/json\">")
	b.Write(data)
	b.WriteString("</script>\n<script>\n")
	b.WriteString(pageJS)
	b.WriteString("</script>\n</body>\n</html>\n")
	return b.Bytes(), nil
}

// storeFileName matches the names of the files a store owns.
var storeFileName = regexp.MustCompile(`^(CURRENT|LOCK|LOG(\.old)?|MANIFEST-[0-9]+|[0-9]+\.(sst|log|ldb|dbtmp))$`)

// checkPagePath checks, before any work, that a page can go to path: not
// a directory, in a directory that exists, not in the store's own
// directory, which kvtool's read-only commands leave as it was (and
// kvbench refuses a directory holding files other than a store's), and
// not a link to a file of the store: a symbolic link that resolves into
// the store's directory, or a hard link to one of its files (os.SameFile
// against each of them). writePage never writes through a link anyway
// (it renames a new file over path), but a page path that names a file
// of the store is a mistake to report, not one to act on.
func checkPagePath(path, storeDir string) error {
	if path == "" {
		return fmt.Errorf("--html needs a file name")
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("cannot write the page to %s: it is a directory", path)
	}
	parent, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("cannot write the page to %s: %w", path, err)
	}
	if !parent.IsDir() {
		return fmt.Errorf("cannot write the page to %s: %s is not a directory", path, filepath.Dir(path))
	}
	// (No store in storeDir: the command says so.)
	if sd, err := os.Stat(storeDir); err == nil && sd.IsDir() {
		if os.SameFile(parent, sd) {
			what := "the store's directory"
			if storeFileName.MatchString(filepath.Base(path)) {
				what = "a file of the store"
			}
			return fmt.Errorf("will not write the page to %s: that is in %s, which kvtool only reads; write it elsewhere", path, what)
		}
		if name, ok := linkIntoStore(path, storeDir, sd); ok {
			return fmt.Errorf("will not write the page to %s: it is a link to %s, a file of the store in %s, which kvtool only reads; write it elsewhere", path, name, storeDir)
		}
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		// A file there that may not be written is not replaced either.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("cannot write the page to %s: %w", path, err)
		}
		f.Close()
	}
	return nil
}

// linkIntoStore reports whether path is a link to a file of the store in
// storeDir (whose os.Stat is sd), and that file's name: a symbolic link
// (or a chain of them) whose target, existing or not, is in storeDir, or
// a file that os.SameFile finds to be one of storeDir's files (a hard
// link, or a symbolic link reaching it another way).
func linkIntoStore(path, storeDir string, sd os.FileInfo) (string, bool) {
	lfi, err := os.Lstat(path)
	if err != nil {
		return "", false
	}
	if lfi.Mode()&fs.ModeSymlink != 0 {
		// The target's directory, even if the target does not exist yet:
		// follow the chain one link at a time, as far as it goes.
		target := linkpath.Follow(path)
		if dfi, err := os.Stat(filepath.Dir(target)); err == nil && os.SameFile(dfi, sd) {
			return filepath.Base(target), true
		}
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	entries, err := os.ReadDir(storeDir)
	if err != nil {
		return "", false
	}
	for _, e := range entries {
		if efi, err := os.Stat(filepath.Join(storeDir, e.Name())); err == nil && os.SameFile(fi, efi) {
			return e.Name(), true
		}
	}
	return "", false
}

// writePage writes page to path for the store in storeDir, checking path
// again (checkPagePath) first. It writes a new file beside path and
// renames it over path, so a link at path is replaced by the page, never
// written through, and a page that cannot be written whole leaves what
// was at path as it was.
func writePage(path, storeDir string, page []byte) error {
	if err := checkPagePath(path, storeDir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("cannot write the page: %w", err)
	}
	_, err = tmp.Write(page)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("cannot write the page: %w", err)
	}
	return nil
}

// pageSummary is the line kvtool prints after writing a page.
func pageSummary(path string, p *pageData) string {
	live, used := 0, 0
	for _, files := range p.Levels {
		live += len(files)
		if len(files) > 0 {
			used++
		}
	}
	s := fmt.Sprintf("wrote %s: %s in %s", path, countOf(uint64(live), "table"), countOf(uint64(used), "level"))
	if p.Kind == "lsm" {
		s += ", " + countOf(uint64(len(p.History)), "version edit")
	}
	if p.Trace != nil {
		s += ", " + countOf(uint64(len(p.Trace.Steps)), "lookup step")
	}
	return s
}

// traceMark is the page's mark of a step that ended with outcome: the
// class suffix the script styles it with.
func traceMark(outcome string) string {
	switch outcome {
	case db.OutcomeOutsideRange:
		return "range"
	case db.OutcomeOlderThanTombstone:
		return "tombstone"
	case db.OutcomeFilterNo:
		return "filter-no"
	case db.OutcomeFalsePositive:
		return "false-positive"
	case db.OutcomeAbsent:
		return "absent"
	case db.OutcomeFound:
		return "found"
	case db.OutcomeDeleted:
		return "deleted"
	case db.OutcomeMiss:
		return "miss"
	case db.SeekLanded:
		return "sought"
	case db.SeekPrefixFilterNo:
		return "prefix-no"
	case db.SeekRangeFilterNo:
		return "range-no"
	}
	return "error"
}

// stepLines returns the last n lines of a trace's text (db's String): one
// per step, in order, after the headline; nil if there are fewer.
func stepLines(text string, n int) (headline string, lines []string) {
	all := strings.Split(strings.TrimRight(text, "\n"), "\n")
	headline = all[0]
	if len(all)-1 < n {
		return headline, nil
	}
	for _, l := range all[len(all)-n:] {
		lines = append(lines, strings.TrimSpace(l))
	}
	return headline, lines
}

var (
	stepTable = regexp.MustCompile(`^L[0-9]+ +[0-9]+\.(?:sst|ldb) +`)
	stepTime  = regexp.MustCompile(` +\((?:[0-9.]+(?:ns|µs|us|ms|s|m|h))+\)$`)
)

// trimDetail is a step's line without what the page shows beside it: the
// table's name, or the memtable's, and the time; "" when only the
// outcome remains.
func trimDetail(line, where, outcome string) string {
	d := stepTable.ReplaceAllString(line, "")
	d = strings.TrimPrefix(d, where)
	d = strings.TrimSpace(stepTime.ReplaceAllString(d, ""))
	if d == outcome {
		return ""
	}
	return d
}

// placeKey sets the trace's key position in the span.
func placeKey(pt *pageTrace, key []byte, sp keySpan) {
	pt.Key, pt.KeyX = displayKey(key), keyFrac(key, sp)
	switch {
	case sp.empty:
	case bytes.Compare(key, sp.lo) < 0:
		pt.KeyWhere = "before"
	case bytes.Compare(key, sp.hi) > 0:
		pt.KeyWhere = "after"
	}
}

// getTrace turns a Get's trace into the page's. v is the version the
// lookup read, for the notes on the levels it asked no table of.
func getTrace(tr *db.LookupTrace, sp keySpan, v *manifest.Version) *pageTrace {
	pt := &pageTrace{Op: "get", Elapsed: roundElapsed(tr.Elapsed)}
	placeKey(pt, tr.Key, sp)
	headline, lines := stepLines(tr.String(), len(tr.Steps))
	pt.Headline = headline
	asked := map[int]bool{}
	ended := ""
	for i, s := range tr.Steps {
		st := pageTraceStep{Where: s.Where, Level: s.Level, File: s.FileNum, Mark: traceMark(s.Outcome),
			Outcome: s.Outcome, Elapsed: roundElapsed(s.Elapsed)}
		if lines != nil {
			st.Detail = trimDetail(lines[i], s.Where, s.Outcome)
		}
		pt.Steps = append(pt.Steps, st)
		if s.Level >= 0 {
			asked[s.Level] = true
		}
		switch s.Outcome {
		case db.OutcomeFound, db.OutcomeDeleted, db.OutcomeError:
			ended = s.Where
			if s.Level >= 0 {
				ended = fmt.Sprintf("L%d %06d", s.Level, s.FileNum)
			}
		}
	}
	for level, files := range v.Files {
		if len(files) == 0 || asked[level] {
			continue
		}
		switch {
		case ended != "" && !askedBelow(asked, level):
			pt.Notes = append(pt.Notes, fmt.Sprintf("L%d: not asked: the lookup ended at %s", level, ended))
		case level == 0:
			pt.Notes = append(pt.Notes, "L0: not asked")
		default:
			pt.Notes = append(pt.Notes, fmt.Sprintf("L%d: no table's key range holds the key (a binary search over the ranges, in memory): nothing read", level))
		}
	}
	return pt
}

// askedBelow reports whether the lookup asked a table of a level deeper
// than level.
func askedBelow(asked map[int]bool, level int) bool {
	for l := range asked {
		if l > level {
			return true
		}
	}
	return false
}

// seekTrace turns a Seek's trace into the page's.
func seekTrace(tr *db.SeekTrace, sp keySpan) *pageTrace {
	pt := &pageTrace{Op: "seek", Elapsed: roundElapsed(tr.Elapsed)}
	placeKey(pt, tr.Key, sp)
	if tr.Lower != nil {
		pt.HasLower, pt.Lower, pt.LowerX = true, displayKey(tr.Lower), keyFrac(tr.Lower, sp)
	}
	if tr.Upper != nil {
		pt.HasUpper, pt.Upper, pt.UpperX = true, displayKey(tr.Upper), keyFrac(tr.Upper, sp)
	}
	headline, lines := stepLines(tr.String(), len(tr.Steps))
	pt.Headline = headline
	for i, s := range tr.Steps {
		st := pageTraceStep{Where: s.Where, Level: s.Level, File: s.FileNum, Mark: traceMark(s.Outcome), Outcome: s.Outcome}
		if lines != nil {
			st.Detail = trimDetail(lines[i], s.Where, s.Outcome)
		}
		pt.Steps = append(pt.Steps, st)
	}
	pt.Notes = append(pt.Notes, "A seek lists the tables it asked: every level-0 table within the bounds, and in each deeper level those from the one holding the key to the one it landed in; the others are left out by their key ranges, in memory.")
	return pt
}

// roundElapsed renders a step's time as kvtool explain does.
func roundElapsed(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		d = d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		d = d.Round(100 * time.Nanosecond)
	}
	return d.String()
}
