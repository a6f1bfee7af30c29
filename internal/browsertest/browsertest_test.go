package browsertest

import (
	"os"
	"path/filepath"
	"testing"
)

const goodPage = `<!doctype html><html><head><meta charset="utf-8"><script>
window.addEventListener("error", function (e) {
  var h = document.documentElement;
  h.setAttribute("data-script-errors", (h.getAttribute("data-script-errors") || "") + e.message + ";");
});
</script></head><body><div id="root"></div><script>
for (var i = 0; i < 3; i++) { var d = document.createElement("div"); d.className = "box table"; document.getElementById("root").appendChild(d); }
document.documentElement.setAttribute("data-rendered", "1");
</script></body></html>`

const badPage = `<!doctype html><html><head><script>
window.addEventListener("error", function (e) {
  document.documentElement.setAttribute("data-script-errors", e.message);
});
</script></head><body><script>
undefinedFunction();
document.documentElement.setAttribute("data-rendered", "1");
</script></body></html>`

// TestLoad checks the harness itself: a page's script-built elements are
// in the DOM, a script error is reported and stops the render, and a
// screenshot is written.
func TestLoad(t *testing.T) {
	browser := Require(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.html")
	bad := filepath.Join(dir, "bad.html")
	if err := os.WriteFile(good, []byte(goodPage), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(badPage), 0o644); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "good.png")
	p := Load(t, browser, good, png, 400, 300)
	if !p.Rendered || len(p.Errors) != 0 {
		t.Fatalf("good page: rendered=%v errors=%q", p.Rendered, p.Errors)
	}
	if n := Count(p.DOM, "table"); n != 3 {
		t.Fatalf("good page: %d elements of class table, want 3", n)
	}
	b, err := os.ReadFile(png)
	if err != nil || len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Fatalf("screenshot is not a PNG (%v)", err)
	}
	p = Load(t, browser, bad, "", 400, 300)
	if p.Rendered || len(p.Errors) == 0 {
		t.Fatalf("bad page: rendered=%v errors=%q, want an error and no render", p.Rendered, p.Errors)
	}
}
