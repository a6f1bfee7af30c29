package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/db"
	"github.com/bloomkv/bloomkv/internal/browsertest"
)

// TestHTMLPageLinksIntoStore: --html FILE where FILE is a link to a file
// of the store (a symbolic link, absolute or relative, to its CURRENT or a
// table; a dangling one into its directory; a hard link to its CURRENT or
// a table) is refused by lsm and explain alike, and every file of the
// store stays as it was. (The page used to be written through the link:
// CURRENT held HTML and the store did not open; a table was truncated.) A
// link to a file outside the store is replaced by the page, and the file
// it named is left alone.
func TestHTMLPageLinksIntoStore(t *testing.T) {
	dir := buildStore(t, nil)
	ageDir(t, dir)
	before := snapshotDir(t, dir)
	table := filepath.Base(oneFile(t, dir, ".sst"))
	out := t.TempDir()
	rel, err := filepath.Rel(out, filepath.Join(dir, "CURRENT"))
	if err != nil {
		t.Fatal(err)
	}
	links := []struct {
		name string
		make func(string) error
	}{
		{"current.html", func(p string) error { return os.Symlink(filepath.Join(dir, "CURRENT"), p) }},
		{"table.html", func(p string) error { return os.Symlink(filepath.Join(dir, table), p) }},
		{"relative.html", func(p string) error { return os.Symlink(rel, p) }},
		{"chain.html", func(p string) error { return os.Symlink(filepath.Join(out, "current.html"), p) }},
		{"dangling.html", func(p string) error { return os.Symlink(filepath.Join(dir, "page.html"), p) }},
		{"hard-current.html", func(p string) error { return os.Link(filepath.Join(dir, "CURRENT"), p) }},
		{"hard-table.html", func(p string) error { return os.Link(filepath.Join(dir, table), p) }},
	}
	for _, l := range links {
		path := filepath.Join(out, l.name)
		if err := l.make(path); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"lsm", "--html", path, dir},
			{"explain", "--html", path, dir, "key00007"},
		} {
			_, errs := mustRun(t, exitFailure, args...)
			if !strings.Contains(errs, "will not write the page to "+path+": it is a link to ") || !strings.Contains(errs, "a file of the store") {
				t.Errorf("kvtool %s: stderr %q", strings.Join(args, " "), errs)
			}
		}
	}
	after := snapshotDir(t, dir)
	for name, b := range before {
		if after[name] != b {
			t.Errorf("%s changed", name)
		}
	}
	if len(after) != len(before) {
		t.Errorf("the store's directory had %d entries, has %d", len(before), len(after))
	}
	mustRun(t, exitOK, "check", dir)

	// A link elsewhere: replaced by the page, its file kept.
	other := filepath.Join(t.TempDir(), "other.html")
	if err := os.WriteFile(other, []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"lsm", "--html", "", dir}, {"explain", "--html", "", dir, "key00007"}} {
		link := filepath.Join(out, args[0]+"-elsewhere.html")
		if err := os.Symlink(other, link); err != nil {
			t.Fatal(err)
		}
		args[2] = link
		mustRun(t, exitOK, args...)
		if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: the link was not replaced by the page: %v", args[0], err)
		}
		if b, _ := os.ReadFile(link); !bytes.HasPrefix(b, []byte("<!doctype html>")) {
			t.Errorf("%s: the page is not at %s", args[0], link)
		}
		if b, _ := os.ReadFile(other); string(b) != "other" {
			t.Errorf("%s: the file the link named was written", args[0])
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left", e.Name())
		}
	}
}

// TestLSMHTMLLiveWriter runs lsm --html against a store another writer
// keeps flushing and compacting: every run succeeds. (Tables compacted
// away between reading the MANIFEST and opening them failed 8 runs of 8;
// now the store is read again while it changes under the reading.)
func TestLSMHTMLLiveWriter(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{WriteBufferSize: 8 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10, LevelMultiplier: 3})
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var writes atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			k := i * 7919 % 20000
			if err := d.Put(key(k), bytes.Repeat(value(k), 4), nil); err != nil {
				t.Error(err)
				return
			}
			writes.Add(1)
		}
	}()
	defer func() {
		stop.Store(true)
		wg.Wait()
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}()
	for writes.Load() < 5000 {
		time.Sleep(10 * time.Millisecond)
	}
	page := filepath.Join(t.TempDir(), "lsm.html")
	for run := 0; run < 8; run++ {
		code, out, errs := runTool(t, "lsm", "--html", page, "--fpr_probes", "200", dir)
		if code != exitOK {
			t.Errorf("run %d against a live writer: exit %d\n%s%s", run, code, out, errs)
		}
	}
	t.Logf("%d writes meanwhile", writes.Load())
}

// TestHTMLHugeKeys: a store of 8 MiB keys (db.MaxKeySize). The pages
// embed no key whole (each is cut to a few dozen bytes with its length),
// and lsm --html measures every filter with probe keys of at most
// probeStemMax bytes of prefix, or, where the keys of a table share a
// longer prefix, with fewer probes, probeBytesMax bytes in all. (Probes
// of the whole 8 MiB smallest key took lsm --html 29 s, explain --html
// 55 s, on a store of five such tables.)
func TestHTMLHugeKeys(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{WriteBufferSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	const n = db.MaxKeySize
	huge := func(c byte, last string) []byte { return append(bytes.Repeat([]byte{c}, n-len(last)), last...) }
	tables := [][][]byte{
		{huge('a', ""), huge('b', ""), huge('c', "")}, // keys apart from their first byte
		{huge('d', "1"), huge('d', "3")},              // keys apart only in their last byte
		{huge('e', "")},                               // one key
	}
	for _, keys := range tables {
		for _, k := range keys {
			if err := d.Put(k, []byte("v"), nil); err != nil {
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
	start := time.Now()
	_, page := writeLSMPage(t, dir)
	t.Logf("lsm --html: %s, a page of %d bytes", time.Since(start).Round(time.Millisecond), len(page))
	expl := filepath.Join(t.TempDir(), "explain.html")
	start = time.Now()
	mustRun(t, exitOK, "explain", "--html", expl, dir, string(huge('d', "2")))
	t.Logf("explain --html: %s", time.Since(start).Round(time.Millisecond))
	ex, err := os.ReadFile(expl)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"lsm": page, "explain": ex} {
		if len(b) > 200<<10 {
			t.Errorf("%s page: %d bytes", name, len(b))
		}
		if bytes.Contains(b, bytes.Repeat([]byte("a"), 300)) || bytes.Contains(b, bytes.Repeat([]byte("d"), 300)) {
			t.Errorf("%s page holds a key of 300 bytes or more", name)
		}
	}
	p := pageDataOf(t, page)
	if len(p.Tables) != 3 {
		t.Fatalf("%d tables, want 3", len(p.Tables))
	}
	wantProbes := []int{defaultFPRProbes, probeBytesMax / (n + 2 + 8), defaultFPRProbes}
	for i, pt := range p.Tables {
		if pt.Props == nil || pt.Props.Probes != wantProbes[i] {
			t.Errorf("table %06d: props %+v, want %d probes", pt.File, pt.Props, wantProbes[i])
		}
		if want := fmt.Sprintf("...(%d bytes)", n); !strings.HasSuffix(pt.Smallest, want) || len(pt.Smallest) > 100 {
			t.Errorf("table %06d: smallest key shown as %.80q", pt.File, pt.Smallest)
		}
	}
	if tr := pageDataOf(t, ex).Trace; tr == nil || len(tr.Headline) > 400 || len(tr.Key) > 100 {
		t.Errorf("explain page trace: %.400v", tr)
	}
}

// TestProbeKeys: the probe keys of a table lie inside its key range when
// the range leaves room for short keys, copy at most probeStemMax bytes
// of its smallest key then, and add up to at most probeBytesMax bytes.
func TestProbeKeys(t *testing.T) {
	long := func(prefix string, n int, last string) []byte {
		return append(append([]byte(prefix), bytes.Repeat([]byte{'x'}, n)...), last...)
	}
	for _, tc := range []struct {
		name         string
		small, large []byte
		maxStem      int
		inside       bool
		probes       int
	}{
		{"short keys", []byte("key00000"), []byte("key01999"), 8, true, 10000},
		{"long keys apart early", long("a", 1<<20, ""), long("b", 1<<20, ""), probeStemMax, true, 10000},
		{"long shared prefix", long("a", 1000, "1"), long("a", 1000, "3"), 1002, true, 10000},
		{"8 MiB shared prefix", long("a", 8<<20, "1"), long("a", 8<<20, "3"), 8<<20 + 2, true, probeBytesMax / (8<<20 + 2 + 10)},
		{"one 8 MiB key", long("a", 8<<20, ""), long("a", 8<<20, ""), probeStemMax, false, 10000},
		{"empty smallest key", []byte{}, []byte("z"), 0, true, 10000},
	} {
		stem, probes := probeKeys(tc.small, tc.large, 10000)
		if len(stem)-2 > tc.maxStem || probes != tc.probes {
			t.Errorf("%s: stem of %d bytes (want at most %d), %d probes (want %d)", tc.name, len(stem)-2, tc.maxStem, probes, tc.probes)
		}
		for _, i := range []uint64{0, 1, 9999} {
			k := append(bytes.Clone(stem), 0, 0, 0, 0, 0, 0, byte(i>>8), byte(i))
			in := bytes.Compare(k, tc.small) > 0 && bytes.Compare(k, tc.large) < 0
			if in != tc.inside {
				t.Errorf("%s: probe %d inside the range: %v, want %v", tc.name, i, in, tc.inside)
			}
		}
	}
}

// buildTwoTableStore makes a store of two level-0 tables, of the keys
// "a0".."a9" and "b0".."b9", and returns its directory and the second
// table's file.
func buildTwoTableStore(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"a", "b"} {
		for i := 0; i < 10; i++ {
			if err := d.Put([]byte(fmt.Sprintf("%s%d", prefix, i)), []byte("v"), nil); err != nil {
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
	tables := storeFiles(t, dir, ".sst")
	return dir, tables[len(tables)-1]
}

// TestHTMLProblemsFail: explain --html, like lsm --html, exits 1 when
// its page lists a problem (here a table whose footer is damaged, which
// the lookup itself passes by its key range), after printing the trace
// and writing the page. It used to exit 0.
func TestHTMLProblemsFail(t *testing.T) {
	dir, table := buildTwoTableStore(t)
	flipByte(t, table, -1)
	page := filepath.Join(t.TempDir(), "p.html")
	out, errs := mustRun(t, exitFailure, "lsm", "--html", page, dir)
	if !strings.Contains(errs, "table ") || !strings.HasPrefix(out, "wrote ") {
		t.Errorf("lsm --html: stdout %q, stderr %q", out, errs)
	}
	out, errs = mustRun(t, exitFailure, "explain", "--html", page, dir, "a3")
	if !strings.HasPrefix(out, `get "a3"  →  found`) || !strings.Contains(errs, "kvtool explain: table ") || !strings.Contains(errs, "wrote "+page) {
		t.Errorf("explain --html: stdout %q, stderr %q", out, errs)
	}
	if p := pageDataOf(t, mustRead(t, page)); len(p.Problems) != 1 {
		t.Errorf("page problems %q", p.Problems)
	}
	mustRun(t, exitOK, "explain", dir, "a3") // without a page, the lookup alone
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// overlapProbe, put at the end of a page's body, records on <html>
// whether the side panel (#side) covers any element of the tree's column
// (#left), and whether it sits beside the tree or under it.
const overlapProbe = `<script>(function () {
  var side = document.getElementById("side").getBoundingClientRect();
  var hit = "";
  Array.prototype.forEach.call(document.querySelectorAll("#left, #left *"), function (e) {
    var r = e.getBoundingClientRect();
    if (r.width && r.height && r.left < side.right - 0.5 && side.left < r.right - 0.5 && r.top < side.bottom - 0.5 && side.top < r.bottom - 0.5) {
      hit = hit || (e.id || e.className || e.tagName);
    }
  });
  var left = document.getElementById("left").getBoundingClientRect();
  var h = document.documentElement;
  h.setAttribute("data-overlap", hit);
  h.setAttribute("data-side", side.top >= left.bottom - 0.5 ? "under" : "beside");
})();</script>
`

// TestExplainHTMLCosmetics loads explain pages in the browser: below
// 600 px the side panel goes under the tree instead of over it (it covered
// the tree), and beside it on a wide window; the legend has the dotted
// "older than range tombstone" mark; the empty key shows as ‹empty›, not
// as nothing; and a seek's headline names a missing upper bound ∞.
func TestExplainHTMLCosmetics(t *testing.T) {
	dir := buildLevelStore(t, true)
	out := t.TempDir()
	get := filepath.Join(out, "get.html")
	mustRun(t, exitOK, "explain", "--html", get, dir, "key00100")
	empty := filepath.Join(out, "empty.html")
	mustRun(t, exitOK, "explain", "--html", empty, dir, "")
	seek := filepath.Join(out, "seek.html")
	mustRun(t, exitOK, "explain", "--html", seek, "--seek", "--lower", "key00100", dir, "key00200")

	if tr := pageDataOf(t, mustRead(t, empty)).Trace; tr == nil || tr.Key != emptyKey {
		t.Errorf("the empty key's page: %+v", tr)
	}
	if tr := pageDataOf(t, mustRead(t, seek)).Trace; tr == nil || !strings.Contains(tr.Headline, `in ["key00100", ∞)`) {
		t.Errorf("the seek's headline: %+v", tr)
	}

	browser := browsertest.Require(t)
	probed := filepath.Join(out, "probed.html")
	page := mustRead(t, get)
	i := bytes.LastIndex(page, []byte("</body>"))
	if err := os.WriteFile(probed, append(append(bytes.Clone(page[:i]), overlapProbe...), page[i:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	attr := func(dom, name string) string {
		m := regexp.MustCompile(`<html[^>]*\b` + name + `="([^"]*)"`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("no %s on <html>", name)
		}
		return m[1]
	}
	for _, tc := range []struct {
		width int
		side  string
	}{{500, "under"}, {590, "under"}, {1280, "beside"}} {
		pg := loadPage(t, browser, probed, "", tc.width, 900)
		if hit := attr(pg.DOM, "data-overlap"); hit != "" {
			t.Errorf("%d px: the side panel covers %s", tc.width, hit)
		}
		if side := attr(pg.DOM, "data-side"); side != tc.side {
			t.Errorf("%d px: the side panel is %s the tree, want %s", tc.width, side, tc.side)
		}
		if !strings.Contains(pg.DOM, "older than range tombstone") || browsertest.Count(pg.DOM, "mark-tombstone") == 0 {
			t.Errorf("%d px: the legend lacks the range tombstone's mark", tc.width)
		}
	}
	pg := loadPage(t, browser, empty, "", 1280, 800)
	if !strings.Contains(pg.DOM, "bloomkv lookup: get "+emptyKey) || !strings.Contains(pg.DOM, "\u2193 "+emptyKey) {
		t.Errorf("the empty key is not shown as %s", emptyKey)
	}
	pg = loadPage(t, browser, seek, "", 1280, 800)
	if !strings.Contains(pg.DOM, "∞)") {
		t.Errorf("the seek page does not show the open upper bound as ∞")
	}
}
