package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"html"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bloomkv/bloomkv/internal/browsertest"
)

var (
	dataRE    = regexp.MustCompile(`(?s)<script type="application/json" id="kvbench-data">(.*?)</script>`)
	sectionRE = regexp.MustCompile(`<section class="bench" id="([^"]+)" data-name="([^"]+)">`)
	barNRE    = regexp.MustCompile(`<rect [^>]*data-n="(\d+)"`)
	// External references: anything the page would fetch.
	externalRE = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\b(src|href|xlink:href|action)\s*=\s*["']?\s*([a-z][a-z0-9+.-]*:|//)`),
		regexp.MustCompile(`(?i)@import`),
		regexp.MustCompile(`(?i)url\s*\(`),
		regexp.MustCompile(`(?i)https?://`),
		regexp.MustCompile(`(?i)<(link|img|iframe|object|embed|base)\b`),
	}
)

// pageSections splits page into its bench sections: name and text.
func pageSections(page string) (names, texts []string) {
	idx := sectionRE.FindAllStringSubmatchIndex(page, -1)
	for i, m := range idx {
		end := len(page)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		if e := strings.Index(page[m[0]:end], "</section>"); e >= 0 {
			end = m[0] + e
		}
		names = append(names, html.UnescapeString(page[m[4]:m[5]]))
		texts = append(texts, page[m[0]:end])
	}
	return names, texts
}

// latencyBars returns the data-n counts of the latency chart in a
// section's text, and whether it has one.
func latencyBars(section string) (sum int64, ok bool) {
	i := strings.Index(section, `<svg class="chart latency"`)
	if i < 0 {
		return 0, false
	}
	svg := section[i:]
	svg = svg[:strings.Index(svg, "</svg>")]
	for _, m := range barNRE.FindAllStringSubmatch(svg, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		sum += n
	}
	return sum, true
}

// TestReport runs a few benchmarks with --report and --json, in a store
// whose path needs escaping, and checks the page without a browser (its
// data is the --json document and the text output's figures, a section per
// benchmark that ran with a latency chart holding all its latencies,
// everything escaped, nothing fetched), then in headless Chromium (it
// renders, no script error, the sections and charts are there).
// BLOOMKV_SCREENSHOTS=1 saves the screenshot as report.png.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	cfg := defaultConfig()
	cfg.num = 6000
	cfg.writeBufferSize = 32 << 10 // some tables, so the read path has counters
	cfg.benchmarks = "fillrandom,readrandom,readmissing,compact,readmissing,stats"
	cfg.dbPath = filepath.Join(dir, `db <b>&"'`)
	cfg.jsonPath = filepath.Join(dir, "out.json")
	cfg.reportPath = filepath.Join(dir, "report.html")
	var out, errOut bytes.Buffer
	if err := run(cfg, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	data, err := os.ReadFile(cfg.reportPath)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)

	// The text output is as without --report: no histogram unless
	// --histogram is set.
	lines := parseOutput(t, out.String())
	for _, r := range lines {
		if r.histTitle != "" || r.histCount != 0 {
			t.Errorf("%s: a histogram printed without --histogram", r.name)
		}
	}
	if strings.Contains(out.String(), "report") {
		t.Errorf("stdout mentions the report:\n%s", out.String())
	}

	// The embedded data is the --json document.
	m := dataRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no kvbench-data script in the page")
	}
	var embedded struct {
		Report         json.RawMessage `json:"report"`
		LatencyBuckets [][][3]int64    `json:"latency_buckets"`
	}
	if err := json.Unmarshal([]byte(m[1]), &embedded); err != nil {
		t.Fatalf("the embedded data does not parse: %v", err)
	}
	jsonFile, err := os.ReadFile(cfg.jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var fromPage, fromJSON any
	if err := json.Unmarshal(embedded.Report, &fromPage); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(jsonFile, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(fromJSON, fromPage); d != "" {
		t.Errorf("the page's data differs from --json (-json +page):\n%s", d)
	}
	var rep report
	if err := json.Unmarshal(embedded.Report, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.FilterEffect == nil {
		t.Errorf("no filter comparison in the page's data")
	} else if !strings.Contains(page, `<section class="filter-effect"`) || !strings.Contains(page, `<svg class="chart speedup"`) {
		t.Errorf("no filter comparison section with its chart")
	}

	// A section per benchmark that ran, in order, with the text output's
	// figures; the latency chart holds every latency.
	names, sections := pageSections(page)
	var ran []*result
	for _, r := range rep.Results {
		if r.Skipped == "" {
			ran = append(ran, r)
		}
	}
	if len(ran) != 6 || len(names) != len(ran) || len(embedded.LatencyBuckets) != len(rep.Results) {
		t.Fatalf("%d results ran, %d sections (%q), %d latency bucket lists", len(ran), len(names), names, len(embedded.LatencyBuckets))
	}
	texts := map[string][]*parsed{}
	for _, l := range lines {
		texts[l.name] = append(texts[l.name], l)
	}
	histograms := 0
	for i, r := range ran {
		if names[i] != r.Name {
			t.Errorf("section %d is %s, want %s", i+1, names[i], r.Name)
		}
		if r.Name != "stats" {
			l := texts[r.Name][0]
			texts[r.Name] = texts[r.Name][1:]
			if got := strconv.FormatFloat(r.MicrosPerOp, 'f', 3, 64); got != strconv.FormatFloat(l.micros, 'f', 3, 64) {
				t.Errorf("%s: %s micros/op in the page, %.3f printed", r.Name, got, l.micros)
			}
			fig := strconv.FormatFloat(r.MicrosPerOp, 'f', 3, 64)
			if benchmarks[r.Name].kind == kindOther { // (Kind is not in the JSON)
				fig = durLabel(r.MicrosPerOp) // one call: its time
			}
			if !strings.Contains(sections[i], ">"+fig+"<") {
				t.Errorf("%s: section lacks its figure %s", r.Name, fig)
			}
		}
		var bucketSum int64
		for _, b := range embedded.LatencyBuckets[i] {
			bucketSum += b[2]
		}
		bars, hasChart := latencyBars(sections[i])
		switch {
		case r.Latency == nil:
			if hasChart || bucketSum != 0 {
				t.Errorf("%s: a latency chart or buckets without latencies", r.Name)
			}
		case !hasChart:
			t.Errorf("%s: no latency chart", r.Name)
		default:
			histograms++
			if bars != r.Latency.Count || bucketSum != r.Latency.Count {
				t.Errorf("%s: %d latencies, %d in the chart's bars, %d in the buckets", r.Name, r.Latency.Count, bars, bucketSum)
			}
		}
		switch {
		case r.ReadPath != nil && !strings.Contains(sections[i], `<svg class="chart read-path"`):
			t.Errorf("%s: no read-path chart", r.Name)
		case r.WritePath != nil && !strings.Contains(sections[i], `<svg class="chart write-path"`):
			t.Errorf("%s: no write-path chart", r.Name)
		}
	}
	if histograms != 4 {
		t.Errorf("%d latency charts, want 4 (fillrandom, readrandom, readmissing twice)", histograms)
	}
	if !strings.Contains(page, `<svg class="chart throughput"`) {
		t.Errorf("no throughput chart")
	}
	if !strings.Contains(page, `<pre class="metrics">level |`) {
		t.Errorf("no stats metrics")
	}

	// Escaped, and nothing fetched.
	if strings.Contains(page, "<b>") || !strings.Contains(page, html.EscapeString(cfg.dbPath)) {
		t.Errorf("the store path is not escaped in the page")
	}
	for _, re := range externalRE {
		if loc := re.FindStringIndex(page); loc != nil {
			t.Errorf("external reference %q in the page", page[max(loc[0]-40, 0):min(loc[1]+40, len(page))])
		}
	}

	t.Run("browser", func(t *testing.T) {
		browser := browsertest.Require(t)
		shot := ""
		if os.Getenv("BLOOMKV_SCREENSHOTS") == "1" {
			shot = "report.png"
		}
		pg := browsertest.Load(t, browser, cfg.reportPath, shot, 1000, 1500)
		if !pg.Rendered || len(pg.Errors) > 0 {
			t.Fatalf("rendered %v, script errors %q", pg.Rendered, pg.Errors)
		}
		if n := browsertest.Count(pg.DOM, "bench"); n != len(ran) {
			t.Errorf("%d elements of class bench, want %d", n, len(ran))
		}
		_, domSections := pageSections(pg.DOM)
		if len(domSections) != len(ran) {
			t.Fatalf("%d sections in the DOM, want %d", len(domSections), len(ran))
		}
		for i, r := range ran {
			if r.Latency != nil && browsertest.Count(domSections[i], "chart") < 1 {
				t.Errorf("%s: no chart in its section", r.Name)
			}
		}
		if shot != "" {
			st, err := os.Stat(shot)
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() > 200<<10 {
				t.Errorf("screenshot %s is %d KB, over 200", shot, st.Size()>>10)
			}
		}
	})
}

// TestReportBrokenPage: the page's own check catches a page that does not
// match its data (a section missing, a chart short of latencies), records
// the error and does not claim to be rendered.
func TestReportBrokenPage(t *testing.T) {
	browser := browsertest.Require(t)
	h := newHistogram()
	for i := range 100 {
		h.add(time.Duration(1000 + 10*i))
	}
	r := &result{Name: "readrandom", Kind: kindRead, Ops: 100, MicrosPerOp: 1, OpsPerSec: 1e6, hist: h, Latency: h.summary(),
		ReadPath: &readPath{}}
	var buf bytes.Buffer
	if err := writeHTMLReport(&buf, &reportPage{rep: &report{Results: []*result{r}}, hists: []*histogram{h}}); err != nil {
		t.Fatal(err)
	}
	good := buf.String()
	broken := map[string]string{
		"no section": strings.Replace(good, `class="bench"`, `class="gone"`, 1),
		"short bars": strings.Replace(good, `data-n="`, `data-n="9`, 1),
	}
	dir := t.TempDir()
	for name, page := range map[string]string{"good": good, "no section": broken["no section"], "short bars": broken["short bars"]} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".html")
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		pg := browsertest.Load(t, browser, path, "", 800, 600)
		if ok := pg.Rendered && len(pg.Errors) == 0; ok != (name == "good") {
			t.Errorf("%s page: rendered %v, errors %q", name, pg.Rendered, pg.Errors)
		}
	}
}

// TestReportBadPath: a --report path that cannot be written fails before
// the run (nothing printed, the store not touched), with a message naming
// --report, and kvbench exits 1.
func TestReportBadPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := []string{
		filepath.Join(dir, "no-such-dir", "r.html"),
		dir,                             // a directory
		filepath.Join(file, "r.html"),   // under a file
		filepath.Join(dir, "dir") + "/", // not a file name
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, filepath.Join(ro, "r.html"))
	}
	for _, path := range bad {
		cfg := defaultConfig()
		cfg.num, cfg.benchmarks = 100, "fillrandom"
		cfg.dbPath = filepath.Join(dir, "db")
		cfg.reportPath = path
		var out bytes.Buffer
		err := run(cfg, &out, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--report "+path) {
			t.Errorf("--report %s: err %v", path, err)
		}
		if out.Len() > 0 {
			t.Errorf("--report %s: the run started:\n%s", path, out.String())
		}
		if _, err := os.Stat(cfg.dbPath); err == nil {
			t.Errorf("--report %s: the store was created", path)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left", e.Name())
		}
	}
	_, stderr, status := kvbenchCmd(t, "--benchmarks=fillrandom", "--num=100", "--report="+bad[0])
	if status != 1 || !strings.HasPrefix(stderr, "kvbench: --report "+bad[0]+": ") || !strings.Contains(stderr, "no such file or directory") {
		t.Errorf("status %d, stderr %q", status, stderr)
	}
}

// TestReportTarget: the page replaces an earlier one only when written,
// and only then is a temporary file made (an interrupted run left an
// empty one); a symbolic link at the path is replaced by the page, and
// the file it named is left as it was.
func TestReportTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.html")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt, err := newReportTarget(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("checking the path left files: %v", entries)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("the check changed the page: %q", b)
	}
	if err := rt.write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("write left %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("page mode %v", st.Mode())
	}
	// Through a symbolic link: the link is replaced, the file it named
	// kept as it was.
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if rt, err = newReportTarget(link, ""); err != nil {
		t.Fatal(err)
	}
	if err := rt.write([]byte("via link")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || !st.Mode().IsRegular() {
		t.Errorf("the link is still there: %v %v", st, err)
	}
	if b, _ := os.ReadFile(link); string(b) != "via link" {
		t.Errorf("the page holds %q", b)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("the file the link named was written: %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("files left: %v", entries)
	}
}

// makeStore runs kvbench to make a small store of a table in dir.
func makeStore(t *testing.T, dir string) {
	t.Helper()
	cfg := defaultConfig()
	cfg.num, cfg.benchmarks, cfg.dbPath, cfg.compare = 2000, "fillrandom,flush", dir, false
	if err := run(cfg, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// readDir returns every file of dir with its bytes.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// TestReportLinkIntoStore: a --report path that is a symbolic link to a
// file of --db's store (its CURRENT, a table), a dangling link into the
// store's directory, or a hard link to one of its files is refused before
// the run, and the store is left as it was. (The page used to replace the
// file the link named: a link to CURRENT made the store unopenable.)
func TestReportLinkIntoStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db")
	makeStore(t, db)
	before := readDir(t, db)
	var table string
	for name := range before {
		if strings.HasSuffix(name, ".sst") {
			table = name
		}
	}
	if table == "" {
		t.Fatalf("no table in %v", before)
	}
	out := t.TempDir()
	links := map[string]func(string) error{
		"current.html": func(p string) error { return os.Symlink(filepath.Join(db, "CURRENT"), p) },
		"table.html":   func(p string) error { return os.Symlink(filepath.Join(db, table), p) },
		"rel.html":     func(p string) error { return os.Symlink(filepath.Join("..", "db", "CURRENT"), p) }, // from a sibling of db
		"new.html":     func(p string) error { return os.Symlink(filepath.Join(db, "page.html"), p) },
		"hard.html":    func(p string) error { return os.Link(filepath.Join(db, "CURRENT"), p) },
	}
	for name, mk := range links {
		path := filepath.Join(out, name)
		if name == "rel.html" {
			sub := filepath.Join(filepath.Dir(db), "sub")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			path = filepath.Join(sub, name)
		}
		if err := mk(path); err != nil {
			t.Fatal(err)
		}
		for _, existing := range []bool{false, true} {
			cfg := defaultConfig()
			cfg.num, cfg.benchmarks, cfg.dbPath, cfg.reportPath, cfg.useExisting, cfg.compare = 100, "readrandom", db, path, existing, false
			if !existing {
				cfg.benchmarks = "fillrandom"
			}
			var stdout bytes.Buffer
			err := run(cfg, &stdout, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "--report "+path+": is a link to ") || !strings.Contains(err.Error(), "a file of --db's store") {
				t.Errorf("%s (use_existing_db=%v): err %v", name, existing, err)
			}
			if stdout.Len() > 0 {
				t.Errorf("%s: the run started", name)
			}
		}
	}
	if after := readDir(t, db); !maps.Equal(after, before) {
		t.Errorf("the store's directory changed: %d files %v, was %d %v",
			len(after), slices.Sorted(maps.Keys(after)), len(before), slices.Sorted(maps.Keys(before)))
	}
	// A link to a file outside the store is replaced by the page; the
	// file stays as it was.
	other := filepath.Join(t.TempDir(), "other.html")
	if err := os.WriteFile(other, []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(out, "outside.html")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	_, stderr, status := kvbenchCmd(t, "--benchmarks=fillrandom", "--num=100", "--compare_no_filter=false", "--db="+db, "--report="+link)
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	if st, err := os.Lstat(link); err != nil || !st.Mode().IsRegular() {
		t.Errorf("the link was not replaced by the page: %v %v", st, err)
	}
	if b, _ := os.ReadFile(other); string(b) != "other" {
		t.Errorf("the file the link named was written")
	}
}

// TestReportInStore: a --report path inside --db, or --db itself, is
// refused before the run, on a fresh fill and with --use_existing_db.
// (Inside --db, a fresh fill used to fail blaming kvbench's own temporary
// file, and --use_existing_db wrote the page into the store's directory,
// which the next run then refused to clear; --report equal to --db failed
// only after the run.)
func TestReportInStore(t *testing.T) {
	base := t.TempDir()
	db := filepath.Join(base, "db")
	for _, tc := range []struct {
		report string
		want   string
	}{
		{filepath.Join(db, "r.html"), "is inside --db's directory"},
		{db, "is --db's directory"},
		{db + "/./", "not a file name"},
		{filepath.Join(base, ".", "db"), "is --db's directory"},
	} {
		for _, existing := range []bool{false, true} {
			if existing {
				makeStore(t, db)
			} else if err := os.RemoveAll(db); err != nil {
				t.Fatal(err)
			}
			args := []string{"--benchmarks=fillrandom", "--num=100", "--compare_no_filter=false", "--db=" + db, "--report=" + tc.report}
			if existing {
				args = append(args, "--use_existing_db", "--benchmarks=readrandom")
			}
			stdout, stderr, status := kvbenchCmd(t, args...)
			if status != 1 || !strings.Contains(stderr, "--report "+tc.report+": "+tc.want) || stdout != "" {
				t.Errorf("--report=%s (use_existing_db=%v): status %d, stdout %q, stderr %q", tc.report, existing, status, stdout, stderr)
			}
		}
	}
	// With a link to --db as the report's directory.
	link := filepath.Join(t.TempDir(), "to-db")
	if err := os.Symlink(db, link); err != nil {
		t.Fatal(err)
	}
	if _, stderr, status := kvbenchCmd(t, "--benchmarks=readrandom", "--num=100", "--use_existing_db", "--db="+db, "--report="+filepath.Join(link, "r.html")); status != 1 || !strings.Contains(stderr, "is inside --db's directory") {
		t.Errorf("through a link to --db: status %d, stderr %q", status, stderr)
	}
	if entries, _ := os.ReadDir(db); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.Contains(e.Name(), "html") }) {
		t.Errorf("a page or a temporary file in the store: %v", entries)
	}
}

// TestReportInterrupted: a run stopped by SIGINT or SIGTERM leaves no
// temporary file beside --report's path (it used to leave an empty
// .r.html.tmpNNN).
func TestReportInterrupted(t *testing.T) {
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "--benchmarks=fillrandom,readrandom", "--num=5000000", "--compare_no_filter=false",
			"--report="+filepath.Join(dir, "r.html"))
		cmd.Env = append(os.Environ(), "KVBENCH_TEST_MAIN=1")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The header is printed once the run has started.
		if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, stdout)
		if err := cmd.Wait(); err == nil {
			t.Errorf("%v: the run was not stopped", sig)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v: files left: %v", sig, entries)
		}
	}
}

// TestReportEscapes: every text of the page is escaped, and the embedded
// data cannot end its script element.
func TestReportEscapes(t *testing.T) {
	nasty := `</script><script>alert(1)</script>&amp;"'`
	h := newHistogram()
	h.add(1500)
	rep := &report{
		Config: jsonConfig{Benchmarks: nasty, Date: nasty},
		Results: []*result{
			{Name: nasty, Kind: kindRead, Ops: 1, MicrosPerOp: 1.5, OpsPerSec: 1e5, Latency: h.summary(), hist: h,
				ReadPath: &readPath{}, WritePath: &writePath{BackgroundErrors: nasty}},
			{Name: "fillseq", Skipped: nasty},
		},
		FilterEffect: &filterEffect{Filter: nasty, Verdict: nasty, Speedups: []float64{2}, Speedup: 2, Low: 2, High: 2},
	}
	var buf bytes.Buffer
	pg := &reportPage{rep: rep, header: "title " + nasty + "\nStore:   " + nasty + "\n----\n",
		flags: []flagValue{{"db", nasty, true}}, hists: []*histogram{h, nil}}
	if err := writeHTMLReport(&buf, pg); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if n := strings.Count(page, "<script>alert"); n != 0 {
		t.Errorf("unescaped text: %d script injections", n)
	}
	if n := strings.Count(page, "</script>"); n != 3 { // the handler, the data, the check
		t.Errorf("%d </script> in the page, want 3", n)
	}
	m := dataRE.FindStringSubmatch(page)
	var d pageData
	if m == nil || json.Unmarshal([]byte(m[1]), &d) != nil || d.Report.Results[0].Name != nasty {
		t.Errorf("the embedded data does not round-trip")
	}
}

func TestParseHeader(t *testing.T) {
	title, rows := parseHeader("bloomkv kvbench (go, linux/amd64, 2 CPUs)\nKeys:       16 bytes\nFilter:     a\n            b\nStore:      /x:y\n-----\n")
	want := []headerRow{{"Keys", "16 bytes"}, {"Filter", "a"}, {"", "b"}, {"Store", "/x:y"}}
	if title != "bloomkv kvbench (go, linux/amd64, 2 CPUs)" || !cmp.Equal(rows, want, cmp.AllowUnexported(headerRow{})) {
		t.Errorf("parseHeader = %q, %v", title, rows)
	}
}

// TestFlagValues: the page lists every flag with the run's value and
// marks those that differ from the defaults.
func TestFlagValues(t *testing.T) {
	cfg := defaultConfig()
	cfg.num, cfg.dbPath, cfg.histogram = 77, "/some/db", true
	changed := map[string]string{}
	n := 0
	for _, f := range flagValues(cfg) {
		n++
		if f.Changed {
			changed[f.Name] = f.Value
		}
	}
	want := map[string]string{"num": "77", "db": "/some/db", "histogram": "true"}
	if !cmp.Equal(changed, want) || n < 30 {
		t.Errorf("changed flags %v of %d, want %v", changed, n, want)
	}
	if cfg.num != 77 || cfg.dbPath != "/some/db" {
		t.Errorf("flagValues changed cfg: %+v", cfg)
	}
}
