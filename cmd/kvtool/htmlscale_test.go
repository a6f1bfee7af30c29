package main

import (
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/browsertest"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// syntheticHistory returns n version edits of a store that flushes a
// table to level 0 at a time and, after every fourth flush, compacts
// level 0 and level 1 into two new level-1 tables (which tile the key
// space, so level 1 stays sorted), with an edit of no tables (a new log)
// every tenth edit; and the version they build. It is the history a store
// written with a tiny write buffer leaves in its MANIFEST, made without
// writing the store.
func syntheticHistory(t testing.TB, n int) ([]numberedEdit, *manifest.Version) {
	t.Helper()
	rng := rand.New(rand.NewSource(1))
	ikey := func(k int, seq uint64) []byte {
		return base.MakeInternalKey([]byte(fmt.Sprintf("%016d", k)), seq, base.KindSet)
	}
	const space = 1 << 30
	var (
		edits    []numberedEdit
		next     uint64 = 10
		seq      uint64 = 1
		l0, l1   []uint64
		flushes  int
		builder  = manifest.NewBuilder(nil)
		newTable = func(lo, hi int, size uint64) *manifest.FileMetadata {
			next++
			seq += 100
			return &manifest.FileMetadata{FileNum: next, Size: size, Smallest: ikey(lo, seq-99), Largest: ikey(hi, seq),
				SmallestSeq: seq - 99, LargestSeq: seq}
		}
	)
	for len(edits) < n {
		e := &manifest.VersionEdit{}
		switch {
		case len(edits) == 0:
			e.Comparer = comparerName
		case len(edits)%10 == 0:
			e.HasLogNumber, e.LogNumber = true, next
		case flushes%4 == 3 && len(l0) > 0:
			for _, f := range l0 {
				e.DeletedFiles = append(e.DeletedFiles, manifest.DeletedFileEntry{Level: 0, FileNum: f})
			}
			for _, f := range l1 {
				e.DeletedFiles = append(e.DeletedFiles, manifest.DeletedFileEntry{Level: 1, FileNum: f})
			}
			l0, l1 = nil, nil
			for i := 0; i < 2; i++ {
				m := newTable(i*space/2, (i+1)*space/2-1, 2<<20+uint64(rng.Intn(1<<20)))
				e.NewFiles = append(e.NewFiles, manifest.NewFileEntry{Level: 1, Meta: m})
				l1 = append(l1, m.FileNum)
			}
			flushes++
		default:
			lo := rng.Intn(space / 4)
			m := newTable(lo, lo+space/2+rng.Intn(space/4), 1<<20+uint64(rng.Intn(1<<19)))
			e.NewFiles = append(e.NewFiles, manifest.NewFileEntry{Level: 0, Meta: m})
			l0 = append(l0, m.FileNum)
			flushes++
		}
		e.HasNextFileNumber, e.NextFileNumber = true, next+1
		e.HasLastSequence, e.LastSequence = true, seq
		if err := builder.Apply(e); err != nil {
			t.Fatalf("edit %d: %v", len(edits)+1, err)
		}
		edits = append(edits, numberedEdit{len(edits) + 1, e})
	}
	v, err := builder.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return edits, v
}

// syntheticPage writes the lsm page of syntheticHistory(n) to a file and
// returns its path. The live tables' properties are made up (there are
// no table files to read).
func syntheticPage(t testing.TB, n int) string {
	t.Helper()
	edits, v := syntheticHistory(t, n)
	dir := t.TempDir()
	src := &pageSource{st: &storeState{dir: dir, manifestPath: filepath.Join(dir, "MANIFEST-000001"), version: v,
		records: n, nextFileNum: edits[n-1].e.NextFileNumber, lastSeq: edits[n-1].e.LastSequence, comparer: comparerName}, edits: edits}
	p, _ := buildPage(src, pageOptions{kind: "lsm", history: true})
	p.Problems = []string{}
	for _, pt := range p.Tables {
		if pt.Live {
			pt.Error = ""
			pt.Props = &pageProps{Entries: 1000, Filter: "bloomkv.BloomFilter64v2", FilterKnown: true, BitsPerKey: 10,
				Probes: 10000, FalsePositives: 80 + int(pt.File%40)}
		}
	}
	page, err := renderPage(p, "bloomkv LSM tree: synthetic")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "lsm.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLSMHTMLLongHistory: a page of 20,000 version edits renders in the
// browser, its script taking well under 2 s (the page records its render
// time in data-render-ms). The page used to replay the history from the
// first edit for each step, to size the rows, and lay out a row of the
// history list for each edit: 20,000 edits took 35 s to draw (18,639 took
// 41 s on the reviewer's machine); now about 0.2 s. It also opens at
// #step=N for steps between the script's checkpoints and checks the
// boxes against the history replayed here.
func TestLSMHTMLLongHistory(t *testing.T) {
	const n = 20000
	path := syntheticPage(t, n)
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := pageDataOf(t, page)
	browser := browsertest.Require(t)
	start := time.Now()
	pg := loadPage(t, browser, path, "", 1280, 800)
	ms := renderMillis(t, pg.DOM)
	t.Logf("%d edits: the script rendered in %.0f ms (%s with the browser's start)", n, ms, time.Since(start).Round(time.Millisecond))
	if ms > 2000 {
		t.Errorf("%d edits: the page took %.0f ms to render, want well under 2 s", n, ms)
	}
	if !strings.Contains(pg.DOM, fmt.Sprintf(`data-steps="%d"`, n)) {
		t.Errorf("the history list does not hold %d steps", n)
	}
	// Only the rows near the list's view are in the document, the last
	// step's (the current one) among them.
	if got := browsertest.Count(pg.DOM, "history-step"); got == 0 || got > 500 {
		t.Errorf("%d history rows drawn, want the few near the view", got)
	}
	if !regexp.MustCompile(fmt.Sprintf(`<li class="history-step current"[^>]*data-step="%d"`, n)).MatchString(pg.DOM) {
		t.Errorf("the current step's row (%d) is not drawn and marked", n)
	}
	for _, step := range []int{257, 10001} {
		pg := loadPage(t, browser, fmt.Sprintf("%s#step=%d", path, step), "", 1280, 800)
		want := map[string]string{}
		for _, files := range replayHistory(p.History[:step]) {
			for _, f := range files {
				want[fmt.Sprintf("%06d", f)] = ""
			}
		}
		if got := boxes(t, pg.DOM); len(got) != len(want) || !maps.Equal(got, want) {
			t.Errorf("#step=%d: boxes %v, want %v", step, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
		if !regexp.MustCompile(fmt.Sprintf(`<li class="history-step current"[^>]*data-step="%d"`, step)).MatchString(pg.DOM) {
			t.Errorf("#step=%d: its row is not drawn and marked", step)
		}
	}
}

var renderMS = regexp.MustCompile(`<html[^>]*\bdata-render-ms="([0-9.]+)"`)

// renderMillis returns the page's data-render-ms.
func renderMillis(t testing.TB, dom string) float64 {
	t.Helper()
	m := renderMS.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page records no data-render-ms")
	}
	ms, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
