// Package browsertest loads the HTML pages bloomkv's tools write in a real
// browser (headless Chromium) for their tests: it returns the page's DOM
// after its scripts ran, the script errors the browser logged, and a
// screenshot.
//
// A page cooperates through two attributes on its <html> element, which
// the page's own script sets:
//
//	data-rendered="1"          set as the last step of a successful render
//	data-script-errors="..."   set by a window "error" handler, if any fired
//
// Load checks both, and also scans the browser's console log for uncaught
// exceptions, so a page that throws before it installs its handler is
// caught too.
package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Find returns the path of a Chromium (or Chrome) binary, or "" when there
// is none. $BLOOMKV_CHROMIUM, when set, wins.
func Find() string {
	if p := os.Getenv("BLOOMKV_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Require returns the browser's path, or skips t when no browser is
// installed. CI installs Debian's chromium, so there the test runs.
func Require(t testing.TB) string {
	t.Helper()
	p := Find()
	if p == "" {
		t.Skip("no Chromium installed (apt-get install chromium); the page is not loaded in a browser")
	}
	return p
}

// Page is what the browser made of a page.
type Page struct {
	// DOM is the serialized document after the page's scripts ran.
	DOM string
	// Errors are the script errors: the page's data-script-errors
	// attribute and the uncaught exceptions in the console log.
	Errors []string
	// Rendered reports whether the page set data-rendered="1".
	Rendered bool
}

// flags are the ones that keep headless Chromium quiet on a machine with no
// network and run it as root in a sandbox-less container.
var flags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
	"--no-first-run", "--disable-background-networking",
	"--disable-component-update", "--disable-sync", "--hide-scrollbars",
	"--mute-audio", "--disable-dev-shm-usage",
	"--allow-file-access-from-files",
}

var uncaught = regexp.MustCompile(`(?i)(Uncaught [^"\n]*|CONSOLE\([0-9]+\)[^\n]*error[^\n]*)`)

// Load opens the HTML file at path in headless Chromium and returns the
// page after its scripts ran (up to a virtual-time budget of 5 s). When
// screenshot is not "", it also writes a PNG of the page at width×height
// pixels there. A browser that cannot start fails t.
func Load(t testing.TB, browser, path, screenshot string, width, height int) Page {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + abs
	profile := t.TempDir()
	common := append(append([]string{}, flags...),
		"--user-data-dir="+profile,
		"--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=5000",
		fmt.Sprintf("--window-size=%d,%d", width, height))

	dom, logs := run(t, browser, append(common, "--dump-dom", url))
	page := Page{DOM: dom}
	page.Rendered = regexp.MustCompile(`<html[^>]*\bdata-rendered="1"`).MatchString(dom)
	if m := regexp.MustCompile(`<html[^>]*\bdata-script-errors="([^"]*)"`).FindStringSubmatch(dom); m != nil && m[1] != "" {
		page.Errors = append(page.Errors, "page: "+m[1])
	}
	for _, m := range uncaught.FindAllString(logs, -1) {
		page.Errors = append(page.Errors, "console: "+m)
	}
	if screenshot != "" {
		_, _ = run(t, browser, append(common, "--screenshot="+screenshot, url))
		if st, err := os.Stat(screenshot); err != nil || st.Size() == 0 {
			t.Fatalf("browsertest: no screenshot written to %s", screenshot)
		}
	}
	return page
}

// run starts the browser once and returns its stdout and stderr.
func run(t testing.TB, browser string, args []string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("browsertest: %s %s: %v\n%s", browser, strings.Join(args, " "), err, tail(stderr.String()))
	}
	return stdout.String(), stderr.String()
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// Count returns how many elements of the DOM carry class cls (as one of
// their classes).
func Count(dom, cls string) int {
	re := regexp.MustCompile(`class="([^"]*)"`)
	n := 0
	for _, m := range re.FindAllStringSubmatch(dom, -1) {
		for _, c := range strings.Fields(m[1]) {
			if c == cls {
				n++
				break
			}
		}
	}
	return n
}
