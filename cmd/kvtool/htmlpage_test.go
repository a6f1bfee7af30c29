package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/browsertest"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// hostileKey would end the page's data script and run a handler if a
// page put keys into its markup as they are.
const hostileKey = "</script><img src=x onerror=document.title=1>"

// buildLevelStore makes a store of three levels in a temporary directory:
// 6,000 keys written with background compactions on, small tables and a
// small level 1 (so they reach level 2), then two flushes to level 0
// (below the level-0 compaction trigger). With reopen the flushes come
// after the store is reopened without compactions: the new MANIFEST
// starts with the whole tree (a snapshot); without, the MANIFEST holds
// every flush and compaction. It returns the directory, closed.
// Compactions run in the background, so the tables may differ from run
// to run; the tests compare the pages with the store.
func buildLevelStore(t *testing.T, reopen bool) string {
	t.Helper()
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{WriteBufferSize: 32 << 10, TargetFileSize: 8 << 10, LBaseMaxBytes: 24 << 10, LevelMultiplier: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6000; i++ {
		k := i * 7919 % 6000
		if err := d.Put(key(k), value(k), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	if reopen {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if d, err = db.Open(dir, &db.Options{DisableAutomaticCompactions: true}); err != nil {
			t.Fatal(err)
		}
	}
	for r := 0; r < 2; r++ {
		for i := 100 * r; i < 6000; i += 37 {
			if err := d.Put(key(i), value(i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.version.NumFiles(0) == 0 || st.version.NumFiles(1) == 0 || st.version.NumFiles(2) == 0 {
		t.Fatalf("buildLevelStore made no three levels:\n%s", st.version)
	}
	return dir
}

// buildHostileStore makes a store of two tables whose bounds are markup
// (hostileKey, a <style> element, <b>), quotes, control bytes and invalid
// UTF-8.
func buildHostileStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range [][]string{
		{"\x00\xff\xfe", hostileKey},
		{"\"quoted\" 'key' & <b>", "`${x}`", "]]><!--", "<style>body{display:none}</style>", "line\nbreak\u2028sep"},
	} {
		for _, k := range table {
			if err := d.Put([]byte(k), []byte("v"), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pageDataOf extracts and decodes the JSON a page embeds.
func pageDataOf(t *testing.T, page []byte) *pageData {
	t.Helper()
	const open = `<script id="bloomkv-data" type="application/json">`
	i := bytes.Index(page, []byte(open))
	if i < 0 {
		t.Fatalf("page has no data script")
	}
	rest := page[i+len(open):]
	j := bytes.Index(rest, []byte("</script>"))
	if j < 0 {
		t.Fatalf("page's data script is not closed")
	}
	var p pageData
	if err := json.Unmarshal(rest[:j], &p); err != nil {
		t.Fatalf("page data: %v", err)
	}
	return &p
}

// writeLSMPage runs kvtool lsm --html and returns the page's path and
// bytes.
func writeLSMPage(t *testing.T, dir string, extra ...string) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lsm.html")
	out, _ := mustRun(t, exitOK, append(append([]string{"lsm", "--html", path}, extra...), dir)...)
	if !strings.HasPrefix(out, "wrote "+path+": ") {
		t.Errorf("lsm --html says %q", out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// manifestEdits counts the version edits of dir's MANIFEST, independently
// of the page.
func manifestEdits(t *testing.T, dir string) []*manifest.VersionEdit {
	t.Helper()
	path, err := readCurrent(dir)
	if err != nil {
		t.Fatal(err)
	}
	var edits []*manifest.VersionEdit
	if _, err := forEachEdit(path, func(n int, e *manifest.VersionEdit, err error) {
		if err != nil {
			t.Fatalf("record %d: %v", n, err)
		}
		edits = append(edits, e)
	}); err != nil {
		t.Fatal(err)
	}
	return edits
}

// liveTables returns the store's tables from its MANIFEST.
func liveTables(t *testing.T, dir string) (*manifest.Version, int) {
	t.Helper()
	st, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, files := range st.version.Files {
		n += len(files)
	}
	return st.version, n
}

// screenshotPath is where a test writes its screenshot: the package's
// directory with BLOOMKV_SCREENSHOTS=1 (the README shows them), a
// temporary one otherwise.
func screenshotPath(t *testing.T, name string) string {
	if os.Getenv("BLOOMKV_SCREENSHOTS") == "1" {
		return name
	}
	return filepath.Join(t.TempDir(), name)
}

// checkScreenshot fails t if the PNG at path is missing or over 200 KB.
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 200<<10 {
		t.Errorf("screenshot %s is %d bytes, over 200 KB", path, fi.Size())
	}
}

// loadPage loads a page in the browser and fails t unless its script ran
// to the end without an error.
func loadPage(t *testing.T, browser, path, shot string, w, h int) browsertest.Page {
	t.Helper()
	p := browsertest.Load(t, browser, path, shot, w, h)
	if len(p.Errors) > 0 {
		t.Fatalf("%s: script errors: %q", path, p.Errors)
	}
	if !p.Rendered {
		t.Fatalf("%s: the page did not set data-rendered", path)
	}
	return p
}

// boxes returns the table boxes of a rendered page: file number → the
// data-mark attribute ("" when unmarked).
func boxes(t *testing.T, dom string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`<div class="table\b[^"]*"[^>]*>`).FindAllString(dom, -1) {
		file := regexp.MustCompile(`data-file="(\d+)"`).FindStringSubmatch(m)
		if file == nil {
			t.Fatalf("a box without data-file: %s", m)
		}
		if _, dup := out[file[1]]; dup {
			t.Errorf("two boxes of table %s", file[1])
		}
		mark := regexp.MustCompile(`data-mark="([^"]*)"`).FindStringSubmatch(m)
		out[file[1]] = ""
		if mark != nil {
			out[file[1]] = mark[1]
		}
	}
	return out
}

// TestLSMHTMLData checks the data of kvtool lsm --html against the store,
// without a browser: every live table with its level, size, key range
// and properties; every version edit of the MANIFEST, in order, kinds
// inferred; the edits replayed (as the page's script does) ending in the
// live version; and every filter measured.
func TestLSMHTMLData(t *testing.T) {
	for _, reopen := range []bool{true, false} {
		t.Run(fmt.Sprintf("reopen=%v", reopen), func(t *testing.T) { testLSMHTMLData(t, reopen) })
	}
}

func testLSMHTMLData(t *testing.T, reopen bool) {
	dir := buildLevelStore(t, reopen)
	_, page := writeLSMPage(t, dir)
	p := pageDataOf(t, page)
	v, live := liveTables(t, dir)

	if p.Kind != "lsm" || p.NumLevels != manifest.NumLevels || len(p.Levels) != manifest.NumLevels || len(p.Problems) != 0 {
		t.Fatalf("page: kind %q, %d levels, %d level lists, problems %q", p.Kind, p.NumLevels, len(p.Levels), p.Problems)
	}
	byFile := map[uint64]*pageTable{}
	for _, pt := range p.Tables {
		byFile[pt.File] = pt
	}
	n := 0
	for level, files := range v.Files {
		var want []uint64
		for _, m := range files {
			want = append(want, m.FileNum)
			pt := byFile[m.FileNum]
			if pt == nil || !pt.Live {
				t.Fatalf("table %06d is not live on the page", m.FileNum)
			}
			if pt.Level != level || pt.Size != m.Size || pt.Smallest != escape(base.UserKey(m.Smallest)) ||
				pt.Largest != escape(base.UserKey(m.Largest)) || pt.SmallestSeq != m.SmallestSeq || pt.LargestSeq != m.LargestSeq {
				t.Errorf("table %06d on the page: %+v, MANIFEST: L%d %s", m.FileNum, pt, level, m)
			}
			r, f, err := openTable(tablePath(dir, m.FileNum), true)
			if err != nil {
				t.Fatal(err)
			}
			props := r.Properties()
			if pt.Props == nil || pt.Props.Entries != props.NumEntries || pt.Props.Filter != props.FilterPolicy ||
				pt.Props.BitsPerKey != props.FilterBitsPerKey || pt.Props.FilterBytes != props.FilterSize || !pt.Props.FilterKnown {
				t.Errorf("table %06d: page props %+v, table %+v", m.FileNum, pt.Props, props)
			}
			r.Close()
			f.Close()
			if pt.Props != nil && (pt.Props.Probes < defaultFPRProbes*9/10 || float64(pt.Props.FalsePositives) > 0.03*float64(pt.Props.Probes)) {
				t.Errorf("table %06d: %d false positives of %d probes at 10 bits/key", m.FileNum, pt.Props.FalsePositives, pt.Props.Probes)
			}
			if pt.X0 < 0 || pt.X1 > 1 || pt.X0 > pt.X1 {
				t.Errorf("table %06d placed at [%g, %g]", m.FileNum, pt.X0, pt.X1)
			}
			n++
		}
		if !slices.Equal(p.Levels[level], want) && !(len(want) == 0 && len(p.Levels[level]) == 0) {
			t.Errorf("L%d on the page: %v, MANIFEST: %v", level, p.Levels[level], want)
		}
	}
	if n != live {
		t.Fatalf("%d live tables checked, %d in the store", n, live)
	}

	edits := manifestEdits(t, dir)
	if len(p.History) != len(edits) {
		t.Fatalf("%d history steps, %d version edits in the MANIFEST", len(p.History), len(edits))
	}
	kinds := map[string]int{}
	for i, e := range edits {
		h := p.History[i]
		kinds[h.Kind]++
		if h.Record != i+1 || len(h.Added) != len(e.NewFiles) || len(h.Deleted) != len(e.DeletedFiles) {
			t.Errorf("history step %d: %+v; edit %+v", i+1, h, e)
		}
		for _, a := range h.Added {
			if byFile[a[1]] == nil {
				t.Errorf("history step %d adds table %06d, which the page lacks", i+1, a[1])
			}
		}
	}
	// The second open starts the MANIFEST with the whole tree; then come
	// the two flushes. In one session the MANIFEST starts with no table,
	// then come every flush and compaction.
	if reopen && (p.History[0].Kind != editSnapshot || kinds[editFlush] != 2 || len(p.History) != 3) {
		t.Errorf("history kinds: %v; first %+v", kinds, p.History[0])
	}
	if !reopen && (p.History[0].Kind != editOpen || kinds[editFlush] < 10 || kinds[editCompaction]+kinds[editMove] < 2) {
		t.Errorf("history kinds: %v; first %+v", kinds, p.History[0])
	}
	// Replay the edits as the script does: it ends in the live version.
	replay := replayHistory(p.History)
	for level := range replay {
		got, want := slices.Sorted(slices.Values(replay[level])), slices.Sorted(slices.Values(p.Levels[level]))
		if !slices.Equal(got, want) {
			t.Errorf("L%d replayed: %v, live: %v", level, got, want)
		}
	}

	// --fpr_probes=0 measures nothing.
	_, page = writeLSMPage(t, dir, "--fpr_probes", "0")
	for _, pt := range pageDataOf(t, page).Tables {
		if pt.Props != nil && pt.Props.Probes != 0 {
			t.Errorf("--fpr_probes=0: table %06d measured with %d probes", pt.File, pt.Props.Probes)
		}
	}
}

// TestLSMHTMLHistory builds a store whose MANIFEST holds flushes and a
// compaction into level 1 (no second open), and checks the kinds and
// summaries the page infers.
func TestLSMHTMLHistory(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{DisableAutomaticCompactions: true, TargetFileSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 2; r++ {
		for i := r; i < 3000; i += 2 {
			if err := d.Put(key(i), value(i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	_, page := writeLSMPage(t, dir)
	p := pageDataOf(t, page)
	var kinds []string
	for _, h := range p.History {
		kinds = append(kinds, h.Kind)
	}
	if want := []string{editOpen, editFlush, editFlush, editCompaction}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	if s := p.History[3].Summary; !regexp.MustCompile(`^L0 → L1: 2 tables \([^)]+\) in, \d+ tables \([^)]+\) out$`).MatchString(s) {
		t.Errorf("compaction summary %q", s)
	}
	if s := p.History[1].Summary; !regexp.MustCompile(`^\d{6} \([^)]+\) written to L0$`).MatchString(s) {
		t.Errorf("flush summary %q", s)
	}
	// The tables the compaction deleted are still drawn in the history.
	for _, f := range p.History[1].Added {
		pt := tableOf(p, f[1])
		if pt == nil || pt.Live || pt.Props != nil || pt.Level != 0 {
			t.Errorf("deleted table %06d on the page: %+v", f[1], pt)
		}
	}
}

// replayHistory applies the edits to an empty tree, as the page's script
// does, and returns the tables of each level.
func replayHistory(edits []pageEdit) [][]uint64 {
	replay := make([][]uint64, manifest.NumLevels)
	for _, h := range edits {
		for _, d := range h.Deleted {
			replay[d[0]] = slices.DeleteFunc(replay[d[0]], func(f uint64) bool { return f == d[1] })
		}
		for _, a := range h.Added {
			replay[a[0]] = append(replay[a[0]], a[1])
		}
	}
	return replay
}

func tableOf(p *pageData, file uint64) *pageTable {
	for _, t := range p.Tables {
		if t.File == file {
			return t
		}
	}
	return nil
}

// TestEditKind checks the kinds editKind infers.
func TestEditKind(t *testing.T) {
	meta := func(n uint64, size uint64) *manifest.FileMetadata {
		return &manifest.FileMetadata{FileNum: n, Size: size,
			Smallest: base.AppendInternalKey(nil, []byte("a"), 1, base.KindSet),
			Largest:  base.AppendInternalKey(nil, []byte("z"), 1, base.KindSet)}
	}
	metas := map[uint64]*manifest.FileMetadata{4: meta(4, 1000), 5: meta(5, 1000), 6: meta(6, 3000)}
	for _, tc := range []struct {
		e    manifest.VersionEdit
		kind string
		sum  string
	}{
		{manifest.VersionEdit{Comparer: "c", HasLogNumber: true, LogNumber: 3}, editOpen, "no tables: comparer c, log 000003"},
		{manifest.VersionEdit{NewFiles: []manifest.NewFileEntry{{Level: 0, Meta: meta(7, 2048)}}}, editFlush, "000007 (2.0KiB) written to L0"},
		{manifest.VersionEdit{NewFiles: []manifest.NewFileEntry{{Level: 2, Meta: meta(7, 2048)}}}, editFlush, "000007 (2.0KiB) written to L2"},
		{manifest.VersionEdit{Comparer: "c", NewFiles: []manifest.NewFileEntry{{Level: 1, Meta: meta(7, 1024)}, {Level: 3, Meta: meta(8, 1024)}}}, editSnapshot, "the whole tree: 2 tables (2.0KiB) in L1-L3"},
		{manifest.VersionEdit{DeletedFiles: []manifest.DeletedFileEntry{{Level: 0, FileNum: 4}, {Level: 1, FileNum: 6}},
			NewFiles: []manifest.NewFileEntry{{Level: 1, Meta: meta(9, 3500)}}}, editCompaction, "L0 → L1: 2 tables (3.9KiB) in, 1 table (3.4KiB) out"},
		{manifest.VersionEdit{DeletedFiles: []manifest.DeletedFileEntry{{Level: 1, FileNum: 6}},
			NewFiles: []manifest.NewFileEntry{{Level: 2, Meta: meta(6, 3000)}}}, editMove, "1 table (2.9KiB) moved L1 → L2, nothing rewritten"},
		{manifest.VersionEdit{DeletedFiles: []manifest.DeletedFileEntry{{Level: 3, FileNum: 5}}}, editCompaction, "1 table (1000B) of L3 dropped, nothing written"},
	} {
		kind, sum := editKind(&tc.e, metas)
		if kind != tc.kind || sum != tc.sum {
			t.Errorf("editKind(%+v) = %q, %q; want %q, %q", tc.e, kind, sum, tc.kind, tc.sum)
		}
	}
}

// TestKeyFrac checks the placing of keys: the span's ends at 0 and 1,
// decimal keys by their number, order kept for any bytes.
func TestKeyFrac(t *testing.T) {
	span := func(keys ...string) keySpan {
		var ms []*manifest.FileMetadata
		for i := 0; i+1 < len(keys); i += 2 {
			ms = append(ms, &manifest.FileMetadata{
				Smallest: base.AppendInternalKey(nil, []byte(keys[i]), 1, base.KindSet),
				Largest:  base.AppendInternalKey(nil, []byte(keys[i+1]), 1, base.KindSet)})
		}
		return spanOf(ms)
	}
	sp := span("key00000", "key01999", "key02000", "key05999")
	for _, tc := range []struct {
		key  string
		want float64
	}{{"key00000", 0}, {"key05999", 1}, {"a", 0}, {"z", 1}, {"key03000", 0.5}, {"key01500", 0.25}} {
		if got := keyFrac([]byte(tc.key), sp); got < tc.want-0.01 || got > tc.want+0.01 {
			t.Errorf("keyFrac(%q) = %g, want %g", tc.key, got, tc.want)
		}
	}
	if got := keyFrac([]byte("x"), keySpan{empty: true}); got != 0.5 {
		t.Errorf("keyFrac in an empty span = %g", got)
	}
	if got := keyFrac([]byte("k"), span("k", "k")); got != 0.5 {
		t.Errorf("keyFrac in a span of one key = %g", got)
	}
	// Random keys, sorted, place in order, within [0, 1].
	rng := rand.New(rand.NewSource(1))
	var keys []string
	for i := 0; i < 2000; i++ {
		b := make([]byte, rng.Intn(6))
		for j := range b {
			b[j] = "09az\x00\xff"[rng.Intn(6)] + byte(rng.Intn(3))
		}
		keys = append(keys, string(b))
	}
	slices.Sort(keys)
	sp = span(keys[10], keys[20], keys[500], keys[1500])
	prev := -1.0
	for _, k := range keys {
		f := keyFrac([]byte(k), sp)
		if f < prev || f < 0 || f > 1 {
			t.Fatalf("keyFrac(%q) = %g after %g", k, f, prev)
		}
		prev = f
	}
}

// TestPageIsSelfContained checks that a page names no resource outside
// itself: no http:// or https:// anywhere, no src= or href= attribute,
// no @import, no url().
func TestPageIsSelfContained(t *testing.T) {
	dir := buildLevelStore(t, false)
	_, lsm := writeLSMPage(t, dir)
	explain := filepath.Join(t.TempDir(), "explain.html")
	mustRun(t, exitOK, "explain", "--html", explain, dir, string(key(5)))
	ex, err := os.ReadFile(explain)
	if err != nil {
		t.Fatal(err)
	}
	for name, page := range map[string][]byte{"lsm": lsm, "explain": ex} {
		for _, re := range []string{`(?i)https?://`, `(?i)\b(src|href)\s*=`, `(?i)@import`, `(?i)url\(`, `(?i)<link\b`, `(?i)<iframe\b`} {
			if loc := regexp.MustCompile(re).FindIndex(page); loc != nil {
				t.Errorf("%s page matches %s: %q", name, re, page[max(0, loc[0]-60):min(len(page), loc[1]+60)])
			}
		}
	}
}

// TestLSMHTMLInBrowser loads kvtool lsm --html's page of a three-level
// store in Chromium: it renders without a script error, with one row per
// level (all manifest.NumLevels of them, the empty ones too), one box
// per live table and one history step per version edit. With
// BLOOMKV_SCREENSHOTS=1 it saves lsm.png, the README's picture.
func TestLSMHTMLInBrowser(t *testing.T) {
	browser := browsertest.Require(t)
	dir := buildLevelStore(t, false)
	path, page := writeLSMPage(t, dir)
	p := pageDataOf(t, page)
	v, live := liveTables(t, dir)
	// The screenshot shows the properties of a level-1 table.
	shot := screenshotPath(t, "lsm.png")
	pg := loadPage(t, browser, fmt.Sprintf("%s#%06d", path, v.Files[1][0].FileNum), shot, 1280, 800)
	checkScreenshot(t, shot)
	if n := browsertest.Count(pg.DOM, "table"); n != live {
		t.Errorf("%d table boxes, %d live tables", n, live)
	}
	if n := browsertest.Count(pg.DOM, "level"); n != manifest.NumLevels {
		t.Errorf("%d level rows, want %d", n, manifest.NumLevels)
	}
	if n, want := browsertest.Count(pg.DOM, "history-step"), len(manifestEdits(t, dir)); n != want || n != len(p.History) {
		t.Errorf("%d history steps, %d version edits", n, want)
	}
	got := boxes(t, pg.DOM)
	for _, files := range v.Files {
		for _, m := range files {
			if _, ok := got[fmt.Sprintf("%06d", m.FileNum)]; !ok {
				t.Errorf("no box for table %06d", m.FileNum)
			}
		}
	}
	if !strings.Contains(pg.DOM, fmt.Sprintf("Table %06d.sst", v.Files[1][0].FileNum)) {
		t.Errorf("the page opened with #%06d does not show its properties", v.Files[1][0].FileNum)
	}

	// #step=N shows the tree after edit N: the tables the edits up to N
	// leave, live or deleted since.
	step := len(p.History) / 2
	pg = loadPage(t, browser, fmt.Sprintf("%s#step=%d", path, step), "", 1280, 760)
	want := 0
	for _, files := range replayHistory(p.History[:step]) {
		want += len(files)
	}
	if n := browsertest.Count(pg.DOM, "table"); n != want || want == 0 {
		t.Errorf("after edit %d: %d boxes, want %d", step, n, want)
	}
	if !strings.Contains(pg.DOM, fmt.Sprintf("After edit %d of %d", step, len(p.History))) {
		t.Errorf("the page opened with #step=%d does not say so", step)
	}
}

// traceMarks returns the marks a Get or Seek trace gives its tables, by
// file number, from kvtool explain --json, its number of steps and the
// last table it asked.
func traceMarks(t *testing.T, args ...string) (marks map[string]string, steps int, last string) {
	t.Helper()
	out, _ := mustRun(t, exitOK, append([]string{"explain", "--json"}, args...)...)
	var tr struct {
		Steps []struct {
			Level   int    `json:"level"`
			File    uint64 `json:"file"`
			Outcome string `json:"outcome"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatal(err)
	}
	marks = map[string]string{}
	for _, s := range tr.Steps {
		if s.Level >= 0 {
			last = fmt.Sprintf("%06d", s.File)
			marks[last] = traceMark(s.Outcome)
		}
	}
	return marks, len(tr.Steps), last
}

// TestExplainHTMLInBrowser writes kvtool explain --html pages of a
// three-level store (a present key, an absent key, a seek) and loads
// them: every table the trace lists is marked with its outcome (and only
// those), the step list has one item per step, and there is one box per
// live table. With BLOOMKV_SCREENSHOTS=1 it saves explain.png.
func TestExplainHTMLInBrowser(t *testing.T) {
	browser := browsertest.Require(t)
	dir := buildLevelStore(t, false)
	_, live := liveTables(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		shot string
	}{
		{"absent", []string{"key05990x"}, "explain.png"},
		{"present", []string{string(key(4500))}, ""},
		{"seek", []string{"--seek", "--lower", string(key(2000)), "--upper", string(key(2100)), string(key(2050))}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{dir}, tc.args...)
			if tc.args[0] == "--seek" {
				args = append(append([]string{}, tc.args[:len(tc.args)-1]...), dir, tc.args[len(tc.args)-1])
			}
			want, steps, last := traceMarks(t, args...)
			path := filepath.Join(t.TempDir(), tc.name+".html")
			out, errs := mustRun(t, exitOK, append([]string{"explain", "--html", path}, args...)...)
			if !strings.Contains(errs, "wrote "+path) || out == "" {
				t.Errorf("explain --html: stdout %q, stderr %q", out, errs)
			}
			shot, url := "", path
			if tc.shot != "" {
				// The screenshot shows the last table's properties.
				shot, url = screenshotPath(t, tc.shot), path+"#"+last
			}
			pg := loadPage(t, browser, url, shot, 1280, 740)
			if shot != "" {
				checkScreenshot(t, shot)
			}
			if n := browsertest.Count(pg.DOM, "table"); n != live {
				t.Errorf("%d boxes, %d live tables", n, live)
			}
			if n := browsertest.Count(pg.DOM, "trace-step"); n != steps {
				t.Errorf("%d trace steps on the page, %d in the trace", n, steps)
			}
			if n := browsertest.Count(pg.DOM, "traced"); n != len(want) {
				t.Errorf("%d marked boxes, %d tables in the trace", n, len(want))
			}
			got := boxes(t, pg.DOM)
			for file, mark := range got {
				if mark != want[file] {
					t.Errorf("table %s marked %q, the trace says %q", file, mark, want[file])
				}
			}
			for file := range want {
				if _, ok := got[file]; !ok {
					t.Errorf("table %s of the trace has no box", file)
				}
			}
		})
	}
}

// TestHTMLHostileKeys writes both pages of a store whose keys are markup
// (a key "</script><img onerror=...>"), quotes, control bytes and
// invalid UTF-8: the page's only </script> tags are its own, no key
// reaches the markup, the data decodes to the keys as kvtool prints
// them, and in the browser the page renders without error, the keys show
// as text and no <img> element appears.
func TestHTMLHostileKeys(t *testing.T) {
	dir := buildHostileStore(t)
	path, page := writeLSMPage(t, dir)
	expl := filepath.Join(t.TempDir(), "explain.html")
	mustRun(t, exitOK, "explain", "--html", expl, dir, hostileKey)
	ex, err := os.ReadFile(expl)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"lsm": page, "explain": ex} {
		if n := bytes.Count(b, []byte("</script")); n != 3 {
			t.Errorf("%s page has %d </script tags, want its own 3", name, n)
		}
		for _, bad := range []string{"<img", "<style>body", "<b>", "<!--"} {
			if bytes.Contains(b, []byte(bad)) {
				t.Errorf("%s page holds %q", name, bad)
			}
		}
	}
	p := pageDataOf(t, page)
	var keys []string
	for _, pt := range p.Tables {
		keys = append(keys, pt.Smallest, pt.Largest)
	}
	if !slices.Contains(keys, escape([]byte(hostileKey))) || !slices.Contains(keys, `\x00\xff\xfe`) ||
		!slices.Contains(keys, `line\nbreak\xe2\x80\xa8sep`) || !slices.Contains(keys, `"quoted" 'key' & <b>`) {
		t.Errorf("page keys %q", keys)
	}
	if tr := pageDataOf(t, ex).Trace; tr == nil || tr.Key != escape([]byte(hostileKey)) || len(tr.Steps) == 0 {
		t.Errorf("explain page trace: %+v", tr)
	}

	browser := browsertest.Require(t)
	// Markup is what remains of the serialized DOM without its attribute
	// values (the boxes' tooltips hold keys), double-quoted with "
	// escaped. (Chromium escapes < and > in them too; not every browser
	// does.)
	attrs := regexp.MustCompile(`="[^"]*"`)
	for _, f := range []string{path, expl} {
		pg := loadPage(t, browser, f, "", 1280, 700)
		markup := attrs.ReplaceAllString(pg.DOM, "")
		for _, bad := range []string{"<img", "<style>body", "<title>1</title>", "<b>\""} {
			if strings.Contains(markup, bad) {
				t.Errorf("%s: a key became markup: %s", f, bad)
			}
		}
		// The explain page shows the key as text, the lsm page in its
		// table's tooltip.
		if !strings.Contains(pg.DOM, "&lt;/script&gt;&lt;img src=x onerror=document.title=1&gt;") {
			t.Errorf("%s: the hostile key is not shown as text", f)
		}
		if n := browsertest.Count(pg.DOM, "table"); n != 2 {
			t.Errorf("%s: %d boxes, want 2", f, n)
		}
	}
}

// TestHTMLSmallStores loads the pages of an empty store (no table: every
// level row, no box, the history's edits) and of a store of one table.
func TestHTMLSmallStores(t *testing.T) {
	empty := t.TempDir()
	d, err := db.Open(empty, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	one := buildStore(t, filter.None) // one table, without a filter
	browser := browsertest.Find()
	for _, tc := range []struct {
		dir    string
		tables int
	}{{empty, 0}, {one, 1}} {
		path, page := writeLSMPage(t, tc.dir)
		p := pageDataOf(t, page)
		if len(p.Tables) != tc.tables || len(p.History) != len(manifestEdits(t, tc.dir)) {
			t.Errorf("%s: %d tables, %d steps", tc.dir, len(p.Tables), len(p.History))
		}
		expl := filepath.Join(t.TempDir(), "explain.html")
		mustRun(t, exitOK, "explain", "--html", expl, tc.dir, "key00007")
		if browser == "" {
			continue
		}
		pg := loadPage(t, browser, path, "", 1000, 600)
		if n := browsertest.Count(pg.DOM, "table"); n != tc.tables {
			t.Errorf("%s: %d boxes, want %d", tc.dir, n, tc.tables)
		}
		if n := browsertest.Count(pg.DOM, "level"); n != manifest.NumLevels {
			t.Errorf("%s: %d level rows", tc.dir, n)
		}
		if n := browsertest.Count(pg.DOM, "history-step"); n != len(p.History) {
			t.Errorf("%s: %d history steps, want %d", tc.dir, n, len(p.History))
		}
		pg = loadPage(t, browser, expl, "", 1000, 600)
		if n := browsertest.Count(pg.DOM, "traced"); n != tc.tables {
			t.Errorf("%s explain: %d marked boxes, want %d", tc.dir, n, tc.tables)
		}
	}
	if browser == "" {
		t.Skip("no Chromium installed: the pages were checked without a browser")
	}
}

// TestHTMLErrors checks the failures: a FILE that cannot be written, a
// FILE in the store's directory (refused: the store's directory stays as
// it was), a DIR that is not a store; and that writing both pages
// changes nothing in the store.
func TestHTMLErrors(t *testing.T) {
	dir := buildStore(t, nil)
	ageDir(t, dir)
	before := snapshotDir(t, dir)
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lsm", "--html", filepath.Join(notDir, "page.html"), dir}, exitFailure, "cannot write the page to"},
		{[]string{"lsm", "--html", filepath.Join(t.TempDir(), "missing", "page.html"), dir}, exitFailure, "no such file or directory"},
		{[]string{"lsm", "--html", t.TempDir(), dir}, exitFailure, "it is a directory"},
		{[]string{"lsm", "--html", "", dir}, exitFailure, "--html needs a file name"},
		{[]string{"lsm", "--html", filepath.Join(dir, "lsm.html"), dir}, exitFailure, "in the store's directory"},
		{[]string{"lsm", "--html", filepath.Join(dir, "CURRENT"), dir}, exitFailure, "a file of the store"},
		{[]string{"lsm", "--html", filepath.Join(t.TempDir(), "p.html"), t.TempDir()}, exitFailure, "is not a bloomkv store: it has no CURRENT file"},
		{[]string{"lsm", "--html", filepath.Join(t.TempDir(), "p.html"), filepath.Join(t.TempDir(), "nothing")}, exitFailure, "no such file or directory"},
		{[]string{"lsm", "--html", filepath.Join(t.TempDir(), "p.html"), "--fpr_probes", "-1", dir}, exitUsage, "must not be negative"},
		{[]string{"explain", "--html", filepath.Join(notDir, "page.html"), dir, "k"}, exitFailure, "cannot write the page to"},
		{[]string{"explain", "--html", filepath.Join(dir, "x.html"), dir, "k"}, exitFailure, "in the store's directory"},
		{[]string{"explain", "--html", filepath.Join(t.TempDir(), "p.html"), t.TempDir(), "k"}, exitFailure, "no store in"},
	} {
		_, errs := mustRun(t, tc.code, tc.args...)
		if !strings.Contains(errs, tc.want) {
			t.Errorf("kvtool %s: stderr %q lacks %q", strings.Join(tc.args, " "), errs, tc.want)
		}
	}
	// Both pages of a store whose last writes are in its log; the log's
	// keys are in no table, and the explain page says the memtable
	// answered.
	writeLSMPage(t, dir)
	expl := filepath.Join(t.TempDir(), "explain.html")
	mustRun(t, exitOK, "explain", "--html", expl, dir, "wal-a")
	b, err := os.ReadFile(expl)
	if err != nil {
		t.Fatal(err)
	}
	if tr := pageDataOf(t, b).Trace; tr == nil || len(tr.Steps) != 1 || tr.Steps[0].Mark != "found" || len(tr.Notes) != 1 ||
		!strings.Contains(tr.Notes[0], "not asked: the lookup ended at memtable") {
		t.Errorf("explain page of a key in the log: %+v", tr)
	}
	after := snapshotDir(t, dir)
	if len(after) != len(before) {
		t.Errorf("the store's directory had %d entries, has %d", len(before), len(after))
	}
	for name, b := range before {
		if after[name] != b {
			t.Errorf("%s changed", name)
		}
	}
}
