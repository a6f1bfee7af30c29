package main

// kvbench --report: the run as one self-contained HTML page.

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/internal/linkpath"
)

// reportTarget is --report's file. It is checked when the run starts and
// written when the run ends: the page goes to a temporary file beside it,
// created only then, which is renamed over it. So a path that cannot be
// written fails before any benchmark runs, a run that fails or is
// interrupted (SIGINT, SIGTERM) leaves no half page and no temporary file
// (and the page from an earlier run, if any, in place), and a link at the
// path is replaced by the page, never written through.
type reportTarget struct {
	path string
}

// newReportTarget checks that path can take the page of a run whose
// store is in dbDir ("" for a temporary directory): it must name a file
// (not a directory, nor a file that may not be written) in a directory
// that exists and can take a new file, and must not be in dbDir (kvbench
// removes a store only when its directory holds nothing else, and a page
// there would be found in the next run's way), be dbDir itself, or be a
// link, symbolic or hard, to a file of dbDir's store. The errors name
// --report and path.
func newReportTarget(path, dbDir string) (*reportTarget, error) {
	// fail names --report and path, and leaves out the *fs.PathError's
	// own path, which is path or the temporary file.
	fail := func(err error) (*reportTarget, error) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("--report %s: %w", path, err)
	}
	if path == "" || strings.HasSuffix(path, string(filepath.Separator)) {
		return fail(errors.New("not a file name"))
	}
	if dbDir != "" {
		if err := reportOutsideStore(path, dbDir); err != nil {
			return fail(err)
		}
	}
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fail(err)
	case st.Mode()&fs.ModeSymlink != 0:
		// The link is replaced, whatever it names; but not by a page where
		// a directory was meant.
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return fail(errors.New("is a link to a directory"))
		}
	case st.IsDir():
		return fail(errors.New("is a directory"))
	case !st.Mode().IsRegular():
		return fail(errors.New("not a regular file"))
	default:
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // may it be written? (not truncated)
		if err != nil {
			return fail(err)
		}
		f.Close()
	}
	// May a file be made beside it? The temporary file of the page is
	// made only when the page is written, at the end.
	tmp, err := createReportTemp(path)
	if err != nil {
		return nil, err
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return &reportTarget{path: path}, nil
}

// createReportTemp creates the temporary file beside path that the page is
// written to.
func createReportTemp(path string) (*os.File, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("--report %s: cannot create a file in %s: %w", path, filepath.Dir(path), err)
	}
	return tmp, nil
}

// reportOutsideStore returns why path cannot take the page of a run whose
// store is in dbDir, or nil: path is dbDir, or in it (at any depth, by
// name or through links, whether dbDir exists yet or not), or a link,
// symbolic or hard, to a file of dbDir (os.SameFile against each).
func reportOutsideStore(path, dbDir string) error {
	isDB := fmt.Errorf("is --db's directory, %s (write the page outside the store)", dbDir)
	inDB := fmt.Errorf("is inside --db's directory, %s, which holds the store alone (write the page outside it)", dbDir)
	linkTo := func(name string) error {
		return fmt.Errorf("is a link to %s, a file of --db's store in %s (write the page outside the store)", name, dbDir)
	}
	absPath, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	absDB, err := filepath.Abs(dbDir)
	if err != nil {
		return err
	}
	within := func(p string) bool {
		rel, err := filepath.Rel(absDB, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	switch {
	case absPath == absDB:
		return isDB
	case within(absPath):
		return inDB
	}
	// A symbolic link (or a chain of them) whose target, existing or
	// not, is in dbDir.
	target := linkpath.Follow(absPath)
	db, dbErr := os.Stat(dbDir)
	if target != absPath {
		fi, err := os.Stat(filepath.Dir(target))
		if within(target) || (err == nil && dbErr == nil && os.SameFile(fi, db)) {
			return linkTo(filepath.Base(target))
		}
	}
	if dbErr != nil || !db.IsDir() {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && os.SameFile(fi, db) {
		return isDB
	}
	// Its directory, or one above, is dbDir through a link.
	for dir := filepath.Dir(absPath); ; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err == nil && os.SameFile(fi, db) {
			return inDB
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	// A hard link (or a link by another way) to one of dbDir's files.
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	entries, err := os.ReadDir(dbDir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if efi, err := os.Stat(filepath.Join(dbDir, e.Name())); err == nil && os.SameFile(fi, efi) {
			return linkTo(e.Name())
		}
	}
	return nil
}

// write writes page to a new temporary file beside the target and renames
// it over the target's path.
func (t *reportTarget) write(page []byte) error {
	tmp, err := createReportTemp(t.path)
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(page)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, t.path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("--report %s: %w", t.path, err)
	}
	return nil
}

// flagValue is one flag of a run as the page lists it.
type flagValue struct {
	Name, Value string
	Changed     bool // differs from kvbench's default
}

// flagValues returns every flag with its value in cfg, in the order -h
// lists them, and whether it differs from the default. The values are the
// effective ones (--reads is --num's when it was left negative).
func flagValues(cfg *config) []flagValue {
	def := flag.NewFlagSet("", flag.ContinueOnError)
	defaultConfig().registerFlags(def)
	cur := flag.NewFlagSet("", flag.ContinueOnError)
	c := new(config)
	c.registerFlags(cur) // cur's flags point into c...
	*c = *cfg            // ...which now holds the run's values
	var out []flagValue
	cur.VisitAll(func(f *flag.Flag) {
		v := f.Value.String()
		out = append(out, flagValue{f.Name, v, v != def.Lookup(f.Name).DefValue})
	})
	return out
}

// headerRow is one line of printHeader's header: "Keys:  16 bytes each"
// is {"Keys", "16 bytes each"}; a line that continues the one before has
// no label.
type headerRow struct{ label, value string }

// parseHeader splits printHeader's text into its title (the first line)
// and its rows, without the closing rule.
func parseHeader(s string) (title string, rows []headerRow) {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) == 0 {
		return "", nil
	}
	title = lines[0]
	for _, l := range lines[1:] {
		switch {
		case strings.Trim(l, "-") == "":
			continue
		case strings.HasPrefix(l, " "):
			rows = append(rows, headerRow{"", strings.TrimSpace(l)})
		default:
			label, value, ok := strings.Cut(l, ":")
			if !ok {
				rows = append(rows, headerRow{"", strings.TrimSpace(l)})
				continue
			}
			rows = append(rows, headerRow{label, strings.TrimSpace(value)})
		}
	}
	return title, rows
}

// cpuModel returns the processor's name and cache size from
// /proc/cpuinfo (db_bench's CPU and CPUCache lines), or "" where there is
// no such file.
func cpuModel() (model, cache string) {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "", ""
	}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		case "cache size":
			if cache == "" {
				cache = strings.TrimSpace(v)
			}
		}
	}
	return model, cache
}

// pageData is the JSON the page embeds (in the script element
// kvbench-data): the --json document, and each result's latencies as its
// histogram's non-empty buckets [lowest ns, highest ns, count],
// index-aligned with Report.Results (null for a result with none).
type pageData struct {
	Report         *report      `json:"report"`
	LatencyBuckets [][][3]int64 `json:"latency_buckets"`
}

// buckets returns h's non-empty buckets as pageData gives them.
func (h *histogram) buckets() [][3]int64 {
	if h == nil || h.n == 0 {
		return nil
	}
	var out [][3]int64
	for b, c := range h.counts {
		if c > 0 {
			lo, hi := bucketBounds(b)
			out = append(out, [3]int64{lo, hi, int64(c)})
		}
	}
	return out
}

// benchID is the id of results[i]'s section.
func benchID(i int) string { return fmt.Sprintf("bench-%d", i+1) }

// reportCSS is the page's style sheet: system fonts only, nothing fetched.
const reportCSS = `
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222; background: #f6f6f4; margin: 0; }
main { max-width: 980px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 24px; margin: 8px 0 2px; }
h2 { font-size: 19px; margin: 0 0 4px; }
h3 { font-size: 14px; margin: 14px 0 4px; color: #444; text-transform: uppercase; letter-spacing: .04em; }
.sub { color: #555; margin: 0 0 12px; }
section, header.run { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 14px 18px; margin: 14px 0; }
table { border-collapse: collapse; }
td, th { padding: 2px 10px 2px 0; vertical-align: top; text-align: left; }
th { font-weight: 600; color: #444; }
table.kv th { white-space: nowrap; }
table.num td.n, table.num th.n { text-align: right; font-variant-numeric: tabular-nums; }
table.num tr + tr td { border-top: 1px solid #eee; }
table.summary td, table.summary th { padding-right: 16px; }
.figures { display: flex; flex-wrap: wrap; gap: 6px 28px; margin: 6px 0 4px; }
.figure .v { font-size: 20px; font-weight: 600; font-variant-numeric: tabular-nums; }
.figure .u { color: #555; margin-left: 4px; }
.about { color: #555; font-weight: normal; font-size: 14px; margin-left: 8px; }
.note { color: #555; }
.warn { color: #a40000; }
.verdict.significant { font-weight: 600; }
pre { background: #f3f3f3; padding: 8px; overflow-x: auto; font-size: 12px; }
svg.chart { display: block; max-width: 100%; height: auto; margin: 6px 0; }
svg.chart a:hover text { text-decoration: underline; }
details summary { cursor: pointer; color: #444; }
code { font-size: 13px; }
td.flags code { white-space: nowrap; }
footer { color: #666; font-size: 12px; }
`

// reportHead is the page's start up to <body>; its script records the
// page's script errors in data-script-errors (the browser test reads
// them), so it comes before every other script.
const reportHead = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<script>
window.addEventListener("error", function (e) {
  var h = document.documentElement;
  h.setAttribute("data-script-errors", (h.getAttribute("data-script-errors") || "") + (e.message || "script error") + "; ");
});
</script>
`

// reportScript is the page's only other script. Everything is drawn
// already; it checks the page against the data it embeds (a section for
// each result that ran, in order, and latency bars that hold all of its
// latencies) and, when they agree, sets data-rendered="1" on <html>.
// A disagreement throws, which the error handler records.
const reportScript = `<script>
(function () {
  var data = JSON.parse(document.getElementById("kvbench-data").textContent);
  var results = data.report.results || [];
  var sections = document.querySelectorAll("section.bench");
  var j = 0;
  for (var i = 0; i < results.length; i++) {
    var r = results[i];
    if (r.skipped) continue;
    var s = sections[j++];
    if (!s || s.getAttribute("data-name") !== r.name) {
      throw new Error("no section for result " + (i + 1) + " (" + r.name + ")");
    }
    var b = data.latency_buckets[i];
    if (!b) continue;
    var want = 0, got = 0;
    b.forEach(function (x) { want += x[2]; });
    s.querySelectorAll("svg.latency rect[data-n]").forEach(function (e) { got += Number(e.getAttribute("data-n")); });
    if (got !== want) {
      throw new Error(r.name + ": the latency chart holds " + got + " latencies, the data " + want);
    }
  }
  if (j !== sections.length) {
    throw new Error(sections.length + " sections for " + j + " results that ran");
  }
  document.documentElement.setAttribute("data-rendered", "1");
})();
</script>
`

// reportPage is what writeHTMLReport draws.
type reportPage struct {
	rep    *report
	header string // printHeader's text
	flags  []flagValue
	hists  []*histogram // index-aligned with rep.Results
}

// writeHTMLReport writes the page: the run's header and flags, a summary
// (throughput chart and table), one section of class "bench" per result
// that ran (figures, latency chart and percentiles, read- or write-path
// counters and charts, the levels after it, and stats' metrics), the
// filter comparison, and the data as JSON. Every text is escaped; the
// page loads nothing.
func writeHTMLReport(w io.Writer, pg *reportPage) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	h := html.EscapeString
	rep := pg.rep
	title, rows := parseHeader(pg.header)

	bw.WriteString(reportHead)
	p("<title>kvbench: %s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", h(rep.Config.Benchmarks), reportCSS)

	// The run.
	p("<header class=\"run\">\n<h1>kvbench report</h1>\n<p class=\"sub\">%s</p>\n<table class=\"kv header\">\n", h(title))
	if model, cache := cpuModel(); model != "" {
		p("<tr><th>CPU</th><td>%d × %s</td></tr>\n", runtime.NumCPU(), h(model))
		if cache != "" {
			p("<tr><th>CPU cache</th><td>%s</td></tr>\n", h(cache))
		}
	}
	for _, r := range rows {
		cls := ""
		if r.label == "Warning" {
			cls = ` class="warn"`
		}
		p("<tr%s><th>%s</th><td>%s</td></tr>\n", cls, h(r.label), h(r.value))
	}
	p("<tr><th>Flags</th><td class=\"flags\">")
	for _, f := range pg.flags {
		if f.Changed {
			p("<code>--%s=%s</code> ", h(f.Name), h(f.Value))
		}
	}
	p("</td></tr>\n</table>\n")
	p("<details><summary>every flag (the engine's options and the workload's)</summary>\n<table class=\"kv flags\">\n")
	for _, f := range pg.flags {
		p("<tr><th>--%s</th><td><code>%s</code></td></tr>\n", h(f.Name), h(f.Value))
	}
	p("</table>\n</details>\n</header>\n")

	// The summary.
	p("<section class=\"summary\">\n<h2>Summary</h2>\n")
	if err := writeThroughputSVG(bw, rep.Results, benchID); err != nil {
		return err
	}
	var calls []string
	for _, r := range rep.Results {
		if r.Skipped == "" && benchmarks[r.Name].kind == kindOther && !slices.Contains(calls, r.Name) {
			calls = append(calls, r.Name)
		}
	}
	p("<p class=\"note\">")
	if len(calls) > 0 {
		p("Not in the chart: %s, one call each, with no rate to compare. ", h(strings.Join(calls, ", ")))
	}
	p("micros/op is per thread, as db_bench gives it; ops/s and MB/s count all threads.</p>\n")
	p("<table class=\"num summary\">\n<tr><th>#</th><th>benchmark</th><th class=\"n\">ops/s</th><th class=\"n\">micros/op</th><th class=\"n\">MB/s</th><th class=\"n\">p50</th><th class=\"n\">p99</th><th class=\"n\">p99.9</th><th class=\"n\">max</th></tr>\n")
	for i, r := range rep.Results {
		if r.Skipped != "" {
			p("<tr><td>%d</td><td>%s</td><td colspan=\"7\" class=\"note\">skipped (%s)</td></tr>\n", i+1, h(r.Name), h(r.Skipped))
			continue
		}
		ops, micros := thousands(int(math.Round(r.OpsPerSec))), fmt.Sprintf("%.3f", r.MicrosPerOp)
		switch {
		case r.Name == "stats":
			ops, micros = "", ""
		case r.Kind == kindOther:
			ops = "" // one call: no rate
		}
		p("<tr><td>%d</td><td><a href=\"#%s\">%s</a></td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>",
			i+1, benchID(i), h(r.Name), ops, micros, mbs(r))
		if l := r.Latency; l != nil {
			p("<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td></tr>\n", durLabel(l.P50), durLabel(l.P99), durLabel(l.P999), durLabel(l.Max))
		} else {
			p("<td colspan=\"4\"></td></tr>\n")
		}
	}
	p("</table>\n</section>\n")

	// One section per result that ran.
	for i, r := range rep.Results {
		if r.Skipped != "" {
			continue
		}
		if err := writeBenchSection(bw, i, r, pg.hists[i]); err != nil {
			return err
		}
	}

	if fe := rep.FilterEffect; fe != nil {
		if err := writeFilterEffectSection(bw, fe); err != nil {
			return err
		}
	}

	data, err := json.Marshal(pageData{Report: rep, LatencyBuckets: latencyBuckets(pg.hists)})
	if err != nil {
		return err
	}
	// json.Marshal writes <, > and & as \u003c, \u003e and \u0026, so the
	// data cannot close the script element.
	p("<footer><p>Written by kvbench (%s) on %s. The figures are embedded as JSON (the --json document and the latency buckets) in the script element <code>kvbench-data</code>.</p></footer>\n",
		h(runtime.Version()), h(rep.Config.Date))
	p("</main>\n<script type=\"application/json\" id=\"kvbench-data\">%s</script>\n", data)
	bw.WriteString(reportScript)
	p("</body>\n</html>\n")
	return bw.Flush()
}

func latencyBuckets(hists []*histogram) [][][3]int64 {
	out := make([][][3]int64, len(hists))
	for i, hg := range hists {
		out[i] = hg.buckets()
	}
	return out
}

// mbs is r's MB/s as db_bench prints it, or "" when no bytes moved.
func mbs(r *result) string {
	if r.Bytes == 0 || r.Elapsed == 0 {
		return ""
	}
	return fmt.Sprintf("%.1f", r.MBPerSec)
}

// writeBenchSection writes results[i]'s section; hist is its latencies.
func writeBenchSection(bw *bufio.Writer, i int, r *result, hist *histogram) error {
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	h := html.EscapeString
	p("<section class=\"bench\" id=\"%s\" data-name=\"%s\">\n", benchID(i), h(r.Name))
	p("<h2>%d. %s<span class=\"about\">%s</span></h2>\n", i+1, h(r.Name), h(benchmarks[r.Name].about))

	fig := func(v, unit string) {
		p("<div class=\"figure\"><span class=\"v\">%s</span><span class=\"u\">%s</span></div>\n", h(v), h(unit))
	}
	switch {
	case r.Name == "stats":
		// Nothing timed: the section is the metrics below.
	case r.Kind == kindOther:
		p("<div class=\"figures\">\n")
		fig(durLabel(r.MicrosPerOp), "one call")
		p("</div>\n")
	default:
		p("<div class=\"figures\">\n")
		fig(thousands(int(math.Round(r.OpsPerSec))), "ops/s")
		fig(fmt.Sprintf("%.3f", r.MicrosPerOp), "micros/op")
		if s := mbs(r); s != "" {
			fig(s, "MB/s")
		}
		fig(thousands(int(r.Ops)), "ops")
		fig(r.Elapsed.Round(time.Microsecond).String(), "elapsed")
		p("</div>\n")
	}
	p("<p class=\"note\">")
	var notes []string
	if isLookup(r.Name) {
		notes = append(notes, fmt.Sprintf("%s of %s found", thousands(int(r.Found)), thousands(int(r.Ops))))
	}
	if r.Scanned > 0 {
		notes = append(notes, fmt.Sprintf("%s entries scanned", thousands(int(r.Scanned))))
	}
	if r.Threads > 1 {
		notes = append(notes, fmt.Sprintf("%d threads", r.Threads))
	}
	if r.WriterOps > 0 {
		notes = append(notes, fmt.Sprintf("%s writes meanwhile (not measured)", thousands(int(r.WriterOps))))
	}
	if r.WaitedForCompactions > 10*time.Millisecond { // as settle says so
		notes = append(notes, fmt.Sprintf("waited %v for compactions first (not in the time)", r.WaitedForCompactions.Round(time.Millisecond)))
	}
	p("%s</p>\n", h(strings.Join(notes, "; ")))

	if hist != nil && hist.n > 0 {
		unit := r.histUnit()
		p("<h3>Latency per %s</h3>\n", h(unit))
		color := kindColor(r.Kind)
		if err := writeLatencySVG(bw, hist, unit, color); err != nil {
			return err
		}
		l := hist.summary()
		p("<table class=\"num latency\">\n<tr><th class=\"n\">count</th><th class=\"n\">mean</th><th class=\"n\">stddev</th><th class=\"n\">min</th><th class=\"n\">p50</th><th class=\"n\">p95</th><th class=\"n\">p99</th><th class=\"n\">p99.9</th><th class=\"n\">max</th></tr>\n")
		p("<tr><td class=\"n\">%s</td>", thousands(int(l.Count)))
		for _, v := range []float64{l.Mean, l.StdDev, l.Min, l.P50, l.P95, l.P99, l.P999, l.Max} {
			p("<td class=\"n\">%s</td>", durLabel(v))
		}
		p("</tr>\n</table>\n")
	}

	if rp := r.ReadPath; rp != nil {
		if err := writeReadPath(bw, rp); err != nil {
			return err
		}
	}
	if wp := r.WritePath; wp != nil {
		if err := writeWritePath(bw, wp); err != nil {
			return err
		}
	}
	if len(r.Levels) > 0 {
		p("<h3>Levels after</h3>\n<table class=\"num levels\">\n<tr><th>level</th><th class=\"n\">tables</th><th class=\"n\">size</th></tr>\n")
		for _, l := range r.Levels {
			p("<tr><td>L%d</td><td class=\"n\">%d</td><td class=\"n\">%s</td></tr>\n", l.Level, l.Files, mib(int64(l.Bytes)))
		}
		p("</table>\n")
	}
	if r.Name == "stats" && r.after != nil {
		p("<h3>The store's metrics</h3>\n<pre class=\"metrics\">%s</pre>\n", h(r.after.String()))
	}
	p("</section>\n")
	return nil
}

// isLookup reports whether benchmark name looks keys up, so that its
// found count means something (resultLine's list).
func isLookup(name string) bool {
	switch name {
	case "readrandom", "readmissing", "readhot", "seekrandom", "readwhilewriting", "multiget", "multimissing",
		"seekprefix", "scanempty", "scanshort":
		return true
	}
	return false
}

// Colours of the read- and write-path charts' parts.
const (
	goodColor  = "#2ca02c" // a filter negative, a cache hit: work saved
	hitColor   = "#1f77b4" // a true positive: the filter let a present key through
	costColor  = "#d62728" // a false positive, a block read from a file: work spent
	otherColor = "#ff7f0e"
)

// kv writes a two-column table of figures.
func kv(bw *bufio.Writer, class string, rows [][2]string) {
	fmt.Fprintf(bw, "<table class=\"kv num %s\">\n", html.EscapeString(class))
	for _, r := range rows {
		fmt.Fprintf(bw, "<tr><th>%s</th><td class=\"n\">%s</td></tr>\n", html.EscapeString(r[0]), html.EscapeString(r[1]))
	}
	fmt.Fprintf(bw, "</table>\n")
}

func writeReadPath(bw *bufio.Writer, rp *readPath) error {
	fmt.Fprintf(bw, "<h3>Read path</h3>\n")
	n := func(v int64) string { return thousands(int(v)) }
	var rows []shareRow
	if sc := rp.Scans; sc != nil {
		rows = append(rows,
			shareRow{"prefix filter checks", []share{{"tables skipped", sc.PrefixSkipped, goodColor, ""}, {"may hold the prefix", sc.PrefixPositives, costColor, ""}}},
			shareRow{"range filter checks", []share{{"tables skipped", sc.RangeSkipped, goodColor, ""}, {"may hold a key in range", sc.RangePositives, costColor, ""}}})
	} else {
		rows = append(rows, shareRow{"filter checks", []share{
			{"negatives", rp.FilterNegatives, goodColor, ""},
			{"true positives", rp.FilterTruePositives, hitColor, ""},
			{"false positives", rp.FilterPositives - rp.FilterTruePositives, costColor, ""}}})
	}
	rows = append(rows, shareRow{"data block lookups", []share{{"cache hits", rp.CacheHits, goodColor, ""}, {"cache misses", rp.CacheMisses, costColor, ""}}})
	if err := writeSharesSVG(bw, "read-path", rows); err != nil {
		return err
	}
	var t [][2]string
	if sc := rp.Scans; sc != nil {
		t = append(t,
			[2]string{"prefix filter checks", n(sc.PrefixChecks)},
			[2]string{"prefix filter: tables skipped", n(sc.PrefixSkipped)},
			[2]string{"range filter checks", n(sc.RangeChecks)},
			[2]string{"range filter: tables skipped", n(sc.RangeSkipped)},
			[2]string{"keys per scan", fmt.Sprintf("%.2f", sc.KeysPerScan)},
			[2]string{"data blocks read per scan", fmt.Sprintf("%.3f", sc.DataBlocksPerScan)})
	} else {
		t = append(t,
			[2]string{"filter checks", n(rp.FilterChecks)},
			[2]string{"filter negatives", n(rp.FilterNegatives)},
			[2]string{"filter false positives", n(rp.FilterPositives - rp.FilterTruePositives)},
			[2]string{"false-positive rate", fmt.Sprintf("%.3f%%", 100*rp.FalsePositiveRate)},
			[2]string{"data blocks read per op", fmt.Sprintf("%.3f", rp.DataBlocksPerOp)})
	}
	t = append(t,
		[2]string{"data blocks read from files", fmt.Sprintf("%s (%s)", n(rp.DataBlocksRead), mib(rp.DataBlockBytesRead))},
		[2]string{"block cache hits", fmt.Sprintf("%s of %s (%.1f%%)", n(rp.CacheHits), n(rp.CacheHits+rp.CacheMisses), 100*rp.CacheHitRate)})
	if rp.CompactionBlocksRead > 0 {
		t = append(t, [2]string{"blocks compactions read meanwhile (not counted above)", fmt.Sprintf("%s (%s)", n(rp.CompactionBlocksRead), mib(rp.CompactionBlockBytesRead))})
	}
	kv(bw, "read-path", t)
	return nil
}

func writeWritePath(bw *bufio.Writer, wp *writePath) error {
	fmt.Fprintf(bw, "<h3>Write path</h3>\n")
	if err := writeSharesSVG(bw, "write-path", []shareRow{{"bytes written", []share{
		{"WAL", wp.WALBytes, hitColor, mib(wp.WALBytes)},
		{"flushes", wp.FlushBytes, goodColor, mib(wp.FlushBytes)},
		{"compactions", wp.CompactionBytes, otherColor, mib(wp.CompactionBytes)}}}}); err != nil {
		return err
	}
	t := [][2]string{
		{"WAL", fmt.Sprintf("%s, %d syncs", mib(wp.WALBytes), wp.WALSyncs)},
		{"flushes", fmt.Sprintf("%d (%s)", wp.Flushes, mib(wp.FlushBytes))},
		{"compactions", fmt.Sprintf("%d (read %s, wrote %s)", wp.Compactions, mib(wp.CompactionBytesRead), mib(wp.CompactionBytes))},
		{"write amplification", fmt.Sprintf("%.2f", wp.WriteAmp)},
		{"write stalls", fmt.Sprintf("%d", wp.WriteStalls)},
		{"tables after", fmt.Sprintf("%d (%d in L0, %s)", wp.TablesAfter, wp.L0TablesAfter, mib(int64(wp.StoreBytesAfter)))},
		{"memtable after", mib(wp.MemTableAfter)},
	}
	if wp.BackgroundErrors != "" {
		t = append(t, [2]string{"background error", wp.BackgroundErrors})
	}
	kv(bw, "write-path", t)
	return nil
}

// writeFilterEffectSection writes the no-filter comparison: the medians
// side by side, the verdict and each round's speedup.
func writeFilterEffectSection(bw *bufio.Writer, fe *filterEffect) error {
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	h := html.EscapeString
	p("<section class=\"filter-effect\" id=\"filter-effect\">\n<h2>The filter's effect on readmissing</h2>\n")
	p("<p class=\"sub\">%s lookups of absent keys, same keys, same store shape; medians of %d alternating rounds with the filter and without.</p>\n", thousands(int(fe.Lookups)), fe.Rounds)
	p("<table class=\"num filter-effect\">\n<tr><th>filter</th><th class=\"n\">ops/s</th><th class=\"n\">file blocks/op</th><th class=\"n\">block reads/op</th><th class=\"n\">fp rate</th></tr>\n")
	p("<tr><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%.3f</td><td class=\"n\">%.3f</td><td class=\"n\">%.3f%%</td></tr>\n",
		h(fe.Filter), thousands(int(math.Round(fe.WithOpsPerSec))), fe.WithBlocks, fe.WithLookups, 100*fe.WithFPR)
	p("<tr><td>none</td><td class=\"n\">%s</td><td class=\"n\">%.3f</td><td class=\"n\">%.3f</td><td class=\"n\"></td></tr>\n</table>\n",
		thousands(int(math.Round(fe.NoneOpsPerSec))), fe.NoneBlocks, fe.NoneLookups)
	p("<p class=\"note\">file blocks: data blocks read from table files; block reads: data blocks fetched, from the cache or the files.</p>\n")
	cls := "verdict"
	if fe.Significant {
		cls += " significant"
	}
	p("<p class=\"%s\">%s</p>\n", cls, h(fe.Verdict))
	if err := writeSpeedupSVG(bw, fe); err != nil {
		return err
	}
	p("</section>\n")
	return nil
}
