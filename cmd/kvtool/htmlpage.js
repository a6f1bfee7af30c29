// kvtool's LSM tree page (htmlpage.go): draws the data embedded in the
// page. Every string from the store goes into the page as text
// (textContent), never as markup. The last step of a successful render
// sets data-rendered="1" on <html>.
(function () {
  "use strict";

  var started = Date.now();
  var data = JSON.parse(document.getElementById("bloomkv-data").textContent);
  var MIN_W = 6; // the narrowest box, in pixels
  var INSET = 1; // pixels a box is drawn inside its place, so neighbours show apart

  var byFile = {};
  data.tables.forEach(function (t) { byFile[t.file] = t; });
  var history = data.history || [];
  var trace = data.trace || null;
  var traced = {}; // file number -> {n: step number, step: step}
  if (trace) {
    trace.steps.forEach(function (s, i) {
      if (s.level >= 0) { traced[s.file] = { n: i + 1, step: s }; }
    });
  }

  // ---- small helpers ----
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function fileName(n) { var s = String(n); while (s.length < 6) { s = "0" + s; } return s; }
  // A LevelDB-format store names its tables NNNNNN.ldb, as LevelDB does.
  var tableExt = data.format === "leveldb" ? ".ldb" : ".sst";
  function human(n) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"];
    var i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? String(n) : n.toFixed(n < 10 ? 2 : 1)) + " " + units[i];
  }
  function pct(x) {
    if (x === 0) { return "0%"; }
    return (100 * x).toFixed(x < 0.001 ? 3 : 2) + "%";
  }
  function plural(n, what) { return n + " " + what + (n === 1 ? "" : "s"); }

  // ---- colours ----
  // Both scales run from good (green) to bad (red); "no filter" and the
  // rest are greys, and every colour is in the legend.
  var PALETTE = ["#2f9e55", "#7cc46a", "#c5e17a", "#fde58b", "#fdae61", "#e8604c"];
  var FPR_STEPS = [
    { max: 0.001, label: "< 0.1%" }, { max: 0.005, label: "0.1 - 0.5%" }, { max: 0.01, label: "0.5 - 1%" },
    { max: 0.02, label: "1 - 2%" }, { max: 0.05, label: "2 - 5%" }, { max: Infinity, label: "\u2265 5%" }];
  var BITS_STEPS = [
    { min: 14, label: "\u2265 14" }, { min: 10, label: "10 - 14" }, { min: 8, label: "8 - 10" },
    { min: 6, label: "6 - 8" }, { min: 4, label: "4 - 6" }, { min: -Infinity, label: "< 4" }];
  var GREY = { nofilter: "#6c757d", unknown: "#c8ced4", unmeasured: "#e3e7eb" };

  function measured(t) { return t.props && t.props.probes > 0; }
  function fprOf(t) { return t.props.false_positives / t.props.probes; }
  var anyMeasured = data.tables.some(measured);
  var colourBy = anyMeasured ? "fpr" : "bits";

  // colourOf returns the fill of a live table, and the class of a box
  // that has none of its own ("gone", "unreadable").
  function colourOf(t) {
    if (!t.live) { return { cls: "gone" }; }
    if (!t.props) { return { cls: "unreadable" }; }
    if (!t.props.filter) { return { fill: GREY.nofilter }; }
    if (!t.props.filter_known) { return { fill: GREY.unknown }; }
    var i;
    if (colourBy === "fpr") {
      if (!measured(t)) { return { fill: GREY.unmeasured }; }
      var r = fprOf(t);
      for (i = 0; i < FPR_STEPS.length; i++) { if (r < FPR_STEPS[i].max) { return { fill: PALETTE[i] }; } }
    } else {
      for (i = 0; i < BITS_STEPS.length; i++) { if (t.props.bits_per_key >= BITS_STEPS[i].min) { return { fill: PALETTE[i] }; } }
    }
    return { fill: PALETTE[PALETTE.length - 1] };
  }

  // ---- the versions of the history ----
  // One pass over the history, when the page opens, keeps the tree after
  // every CHECKPOINT-th edit and the largest bytes each level ever holds
  // (for scale); levelsAt(i), the tree after edit i (1-based), starts
  // from the checkpoint at or before i and replays fewer than CHECKPOINT
  // edits. The last step is the version the store's MANIFEST builds now.
  // (Replaying from the first edit for every step, as the page once did
  // to find scale, took 41 s to draw 18,639 edits.)
  var CHECKPOINT = 256;
  function emptyLevels() {
    var lv = [];
    for (var l = 0; l < data.num_levels; l++) { lv.push([]); }
    return lv;
  }
  function copyLevels(lv) { return lv.map(function (l) { return l.slice(); }); }
  // applyEdit applies edit e to the tree lv, in place, and adds the
  // change of each level's bytes to bytes (when given). A level's files
  // are filtered once per edit, not searched once per deleted file.
  function applyEdit(lv, e, bytes) {
    var gone = {};
    e.deleted.forEach(function (d) {
      if (!lv[d[0]]) { return; }
      (gone[d[0]] = gone[d[0]] || {})[d[1]] = true;
    });
    Object.keys(gone).forEach(function (l) {
      lv[l] = lv[l].filter(function (f) {
        if (!gone[l][f]) { return true; }
        if (bytes && byFile[f]) { bytes[l] -= byFile[f].size; }
        return false;
      });
    });
    var present = {};
    e.added.forEach(function (a) {
      var l = a[0], f = a[1];
      if (!lv[l]) { return; }
      if (!present[l]) {
        present[l] = {};
        lv[l].forEach(function (g) { present[l][g] = true; });
      }
      if (present[l][f]) { return; }
      present[l][f] = true;
      lv[l].push(f);
      if (bytes && byFile[f]) { bytes[l] += byFile[f].size; }
    });
  }
  function levelBytes(files) {
    var n = 0;
    files.forEach(function (f) { if (byFile[f]) { n += byFile[f].size; } });
    return n;
  }
  // scale: the bytes that fill a row. It is the largest sorted level (L1
  // or deeper, whose tables' ranges do not overlap, so their boxes tile
  // the row) the page ever shows, or level 0's largest when no deeper
  // level ever held a table; it stays as the slider moves, so a box keeps
  // its size from one version to the next.
  var scale = 0;
  var checkpoints = [];
  (function () {
    var l0 = 0;
    function measure(bytes) {
      bytes.forEach(function (b, level) {
        if (level === 0) { l0 = Math.max(l0, b); } else { scale = Math.max(scale, b); }
      });
    }
    var lv = emptyLevels();
    var bytes = lv.map(function () { return 0; });
    for (var i = 0; i < history.length; i++) {
      if (i % CHECKPOINT === 0) { checkpoints.push(copyLevels(lv)); }
      applyEdit(lv, history[i], bytes);
      if (i + 1 < history.length) { measure(bytes); }
    }
    measure(data.levels.map(levelBytes));
    scale = scale || l0 || 1;
  })();
  function levelsAt(step) {
    if (step >= history.length) { return copyLevels(data.levels); }
    var k = Math.min(Math.floor(step / CHECKPOINT), checkpoints.length - 1);
    var lv = copyLevels(checkpoints[k]);
    for (var i = k * CHECKPOINT; i < step; i++) { applyEdit(lv, history[i]); }
    return lv;
  }

  // ---- the page's frame ----
  var state = { step: history.length, pinned: null };
  var body = document.body;
  var header = el("header");
  var h1 = el("h1", null, trace ? "bloomkv lookup: " + (trace.op === "seek" ? "seek " : "get ") + trace.key : "bloomkv LSM tree");
  header.appendChild(h1);
  var liveCount = 0;
  data.levels.forEach(function (f) { liveCount += f.length; });
  var bytesNow = 0;
  data.levels.forEach(function (f) { bytesNow += levelBytes(f); });
  var metaParts = [data.store, data.manifest || "no MANIFEST", plural(liveCount, "table") + ", " + human(bytesNow),
    "last sequence " + data.last_seq, "format " + data.format];
  if (data.kind === "lsm") { metaParts.push(plural(history.length, "version edit")); }
  header.appendChild(el("p", "meta", metaParts.join("  \u00b7  ")));
  body.appendChild(header);

  if (data.problems && data.problems.length) {
    var probs = el("div");
    probs.id = "problems";
    data.problems.forEach(function (p) { probs.appendChild(el("div", null, "Problem: " + p)); });
    body.appendChild(probs);
  }
  if (trace) {
    var hl = el("div", null, trace.headline);
    hl.id = "headline";
    body.appendChild(hl);
  }

  var main = el("div", "main");
  var left = el("div");
  left.id = "left";
  var side = el("div");
  side.id = "side";
  main.appendChild(left);
  main.appendChild(side);
  body.appendChild(main);

  var caption = el("div");
  caption.id = "caption";
  left.appendChild(caption);
  var keylabel = null;
  if (trace) {
    keylabel = el("div");
    keylabel.id = "keylabel";
    left.appendChild(keylabel);
  }
  var tree = el("div");
  tree.id = "tree";
  left.appendChild(tree);
  var axis = el("div", "axis");
  axis.appendChild(el("div", "spacer"));
  var ends = el("div", "ends");
  ends.appendChild(el("span", "key", data.tables.length ? "\u2190 " + data.smallest : ""));
  ends.appendChild(el("span", "key", data.tables.length ? data.largest + " \u2192" : ""));
  axis.appendChild(ends);
  left.appendChild(axis);
  var legend = el("div");
  legend.id = "legend";
  left.appendChild(legend);

  // ---- the lookup's steps ----
  if (trace) {
    var tcard = el("div", "card");
    tcard.id = "trace";
    tcard.appendChild(el("h2", null, "The lookup, step by step" + (trace.elapsed ? " (" + trace.elapsed + ")" : "")));
    var ol = el("ol");
    ol.id = "trace-list";
    trace.steps.forEach(function (s, i) {
      var li = el("li", "trace-step");
      li.setAttribute("data-mark", s.mark);
      if (s.level >= 0) { li.setAttribute("data-file", fileName(s.file)); }
      li.appendChild(el("span", "num" + (s.level < 0 ? " mem" : ""), i + 1));
      var where = el("span", "where", s.level < 0 ? s.where : "L" + s.level + " " + fileName(s.file) + tableExt);
      var pill = el("span", "pill mark-" + s.mark, s.outcome);
      where.appendChild(pill);
      li.appendChild(where);
      li.appendChild(el("span", "time", s.elapsed || ""));
      if (s.detail) { li.appendChild(el("span", "detail", s.detail)); }
      if (s.level >= 0) {
        li.addEventListener("mouseenter", function () { highlight(s.file, true); });
        li.addEventListener("mouseleave", function () { highlight(s.file, false); });
      }
      ol.appendChild(li);
    });
    tcard.appendChild(ol);
    (trace.notes || []).forEach(function (n) { tcard.appendChild(el("div", "level-note", n)); });
    side.appendChild(tcard);
  }
  function highlight(file, on) {
    var box = tree.querySelector('.table[data-file="' + fileName(file) + '"]');
    if (box) { box.classList.toggle("hl", on); }
    if (on && box && !state.pinned) { showDetails(byFile[file]); }
  }

  // ---- properties of a table ----
  var details = el("div", "card");
  details.id = "details";
  side.appendChild(details);
  function showHint() {
    details.textContent = "";
    details.appendChild(el("h2", null, "Table properties"));
    details.appendChild(el("div", "hint", "Hover over a table (click to keep it here) to see its properties."));
  }
  function showDetails(t) {
    if (!t) { return; }
    details.textContent = "";
    details.appendChild(el("h2", null, "Table " + fileName(t.file) + tableExt + (t.live ? "" : " (deleted since)")));
    var dl = el("dl");
    function row(k, v, mono) {
      dl.appendChild(el("dt", null, k));
      dl.appendChild(el("dd", mono ? "key" : null, v));
    }
    row("level", "L" + t.level);
    row("size", human(t.size) + " (" + t.size + " bytes)");
    row("smallest key", t.smallest, true);
    row("largest key", t.largest + (t.tombstone_end ? " (a range tombstone's end)" : ""), true);
    if ((t.smallest + t.largest).indexOf("\\") >= 0) { row("as hex", t.smallest_hex + " .. " + t.largest_hex, true); }
    row("sequences", t.seqs_unknown ? "unknown (not in LevelDB's MANIFEST)" : t.smallest_seq + " - " + t.largest_seq);
    if (t.range_dels) { row("range tombstones", t.range_dels); }
    var p = t.props;
    if (p) {
      row("entries", p.entries + (p.deletions ? " (" + p.deletions + " deletions)" : ""));
      row("data blocks", p.data_blocks + ", " + (p.compression || "?"));
      if (p.filter) {
        row("filter", p.filter + (p.filter_known ? "" : " (unknown to kvtool)"));
        row("filter size", human(p.filter_bytes));
        row("bits per key", p.bits_per_key.toFixed(2));
        if (p.probes > 0) {
          row("measured FPR", pct(fprOf(t)) + " (" + p.false_positives + " of " + p.probes + " absent keys)");
        } else {
          row("measured FPR", p.filter_known && p.entries > 0 && data.fpr_probes > 0 ? "no keys to measure" : "not measured");
        }
      } else {
        row("filter", "none: every lookup in its range reads a block");
      }
      row("prefix filter", p.prefix ? p.prefix + ", " + plural(p.num_prefixes, "prefix") : "none");
      row("range filter", p.range_filter ? p.range_filter + ", " + human(p.range_filter_bytes) : "none");
    } else if (t.live) {
      row("properties", "unreadable: " + (t.error || "?"));
    } else {
      row("properties", "not on disk any more: only the MANIFEST's record of it remains");
    }
    if (trace && traced[t.file]) {
      var s = traced[t.file];
      row("this lookup", "step " + s.n + ": " + s.step.outcome + (s.step.elapsed ? " (" + s.step.elapsed + ")" : ""));
    }
    details.appendChild(dl);
  }
  showHint();
  // A page opened as FILE#NNNNNN shows table NNNNNN's properties at once,
  // as FILE#step=N the tree after edit N of the history (or both, joined
  // by "&").
  (location.hash || "").replace(/^#/, "").split("&").forEach(function (part) {
    var m = /^step=([0-9]+)$/.exec(part);
    if (m && history.length) {
      state.step = Math.max(1, Math.min(history.length, parseInt(m[1], 10)));
    } else if (/^[0-9]+$/.test(part) && byFile[parseInt(part, 10)]) {
      state.pinned = parseInt(part, 10);
      showDetails(byFile[state.pinned]);
    }
  });

  // ---- history controls ----
  var slider = null, prevB = null, nextB = null, stepLabel = null, hlist = null, hrows = null;
  var ROW_H = 22; // a history row's height in pixels: .history-step's in the style sheet
  var OVERSCAN = 200; // rows drawn beyond each end of the list's view
  var drawn = {}; // step -> its row, for the rows drawn
  function historyRow(i) {
    var e = history[i];
    var li = el("li", "history-step");
    li.setAttribute("data-step", String(i + 1));
    li.style.top = (i * ROW_H) + "px";
    li.title = "#" + (i + 1) + " " + e.kind + ": " + e.summary;
    li.appendChild(el("span", "n", "#" + (i + 1)));
    li.appendChild(el("span", "k " + e.kind, e.kind));
    li.appendChild(el("span", "s", e.summary));
    li.addEventListener("click", function () { setStep(i + 1); });
    return li;
  }
  // drawRows draws the history rows in the list's view and OVERSCAN
  // beyond each end, removes the others, and marks the current step's.
  function drawRows() {
    if (!hlist) { return; }
    var view = hlist.clientHeight || 240;
    var first = Math.max(0, Math.floor(hlist.scrollTop / ROW_H) - OVERSCAN);
    var end = Math.min(history.length, Math.ceil((hlist.scrollTop + view) / ROW_H) + OVERSCAN);
    Object.keys(drawn).forEach(function (k) {
      var i = parseInt(k, 10);
      if (i < first || i >= end) { hrows.removeChild(drawn[k]); delete drawn[k]; }
    });
    for (var i = first; i < end; i++) {
      if (!drawn[i]) { drawn[i] = historyRow(i); hrows.appendChild(drawn[i]); }
      drawn[i].classList.toggle("current", i + 1 === state.step);
    }
  }
  if (data.kind === "lsm") {
    var hcard = el("div", "card");
    hcard.id = "history";
    hcard.appendChild(el("h2", null, "History: the MANIFEST's version edits"));
    if (history.length === 0) {
      hcard.appendChild(el("div", "hint", "The MANIFEST holds no version edit that could be read."));
    } else {
      var controls = el("div", "controls");
      prevB = el("button", null, "\u25c0 prev");
      prevB.type = "button";
      nextB = el("button", null, "next \u25b6");
      nextB.type = "button";
      slider = el("input");
      slider.type = "range";
      slider.min = "1";
      slider.max = String(history.length);
      slider.value = String(history.length);
      slider.setAttribute("aria-label", "version edit");
      stepLabel = el("span", "mono");
      controls.appendChild(prevB);
      controls.appendChild(slider);
      controls.appendChild(nextB);
      controls.appendChild(stepLabel);
      hcard.appendChild(controls);
      // The list scrolls in a box, and holds only the rows in and near
      // its view (drawRows): a MANIFEST can hold tens of thousands of
      // edits, and laying out a row for each took seconds.
      hlist = el("div");
      hlist.id = "history-list";
      hlist.setAttribute("data-steps", String(history.length));
      hrows = el("ol");
      hrows.style.height = (history.length * ROW_H) + "px";
      hlist.appendChild(hrows);
      hlist.addEventListener("scroll", drawRows);
      hcard.appendChild(hlist);
      prevB.addEventListener("click", function () { setStep(state.step - 1); });
      nextB.addEventListener("click", function () { setStep(state.step + 1); });
      slider.addEventListener("input", function () { setStep(parseInt(slider.value, 10)); });
      document.addEventListener("keydown", function (ev) {
        if (ev.target && ev.target.tagName === "INPUT") { return; }
        if (ev.key === "ArrowLeft") { setStep(state.step - 1); }
        if (ev.key === "ArrowRight") { setStep(state.step + 1); }
      });
    }
    left.appendChild(hcard);
  }
  function setStep(s) {
    if (!history.length) { return; }
    s = Math.max(1, Math.min(history.length, s));
    state.step = s;
    render();
  }

  // ---- the legend ----
  function swatch(fill, cls) {
    var s = el("span", "swatch" + (cls ? " " + cls : ""));
    if (fill) { s.style.background = fill; }
    return s;
  }
  function item(sw, text) {
    var k = el("span", "key-item");
    k.appendChild(sw);
    k.appendChild(el("span", null, text));
    return k;
  }
  function drawLegend() {
    legend.textContent = "";
    var g = el("div", "group");
    var sel = el("select");
    sel.setAttribute("aria-label", "colour by");
    [["fpr", "measured false-positive rate"], ["bits", "filter bits per key"]].forEach(function (o) {
      var opt = el("option", null, o[1]);
      opt.value = o[0];
      if (o[0] === colourBy) { opt.selected = true; }
      sel.appendChild(opt);
    });
    sel.addEventListener("change", function () { colourBy = sel.value; render(); });
    g.appendChild(el("span", "title", "Colour:"));
    g.appendChild(sel);
    var steps = colourBy === "fpr" ? FPR_STEPS : BITS_STEPS;
    steps.forEach(function (st, i) { g.appendChild(item(swatch(PALETTE[i]), st.label)); });
    g.appendChild(item(swatch(GREY.nofilter), "no filter"));
    if (colourBy === "fpr") { g.appendChild(item(swatch(GREY.unmeasured), "not measured")); }
    g.appendChild(item(swatch(GREY.unknown), "filter unknown to kvtool"));
    if (data.kind === "lsm") { g.appendChild(item(swatch(null, "gone-swatch"), "deleted since")); }
    legend.appendChild(g);
    var g2 = el("div", "group");
    g2.appendChild(el("span", "title", "Box:"));
    g2.appendChild(el("span", null, "width \u221d bytes, centred on its key range (the bar beneath)"));
    legend.appendChild(g2);
    if (trace) {
      var g3 = el("div", "group");
      g3.appendChild(el("span", "title", "Lookup:"));
      var marks = [["range", "outside key range"], ["tombstone", "older than range tombstone"], ["filter-no", "filter: no"], ["false-positive", "read: false positive"],
        ["found", "read: found"], ["deleted", "read: deleted"], ["absent", "read: absent (no filter)"]];
      if (trace.op === "seek") {
        marks = [["prefix-no", "prefix filter: no"], ["range-no", "range filter: no"], ["sought", "sought (read)"]];
      }
      marks.forEach(function (m) { g3.appendChild(item(swatch(null, "outline mark-" + m[0]), m[1])); });
      g3.appendChild(item(swatch("#c0392b"), "the key"));
      legend.appendChild(g3);
    }
  }

  // ---- the tree ----
  // place returns a table's box and range bar in pixels of a track W wide.
  function place(t, W) {
    var w = Math.max(MIN_W, Math.min(W, t.size / scale * W));
    var mid = (t.x0 + t.x1) / 2 * W;
    var left = Math.max(0, Math.min(W - w, mid - w / 2));
    var r0 = t.x0 * W, r1 = Math.max(t.x1 * W, r0 + 1);
    return { left: left, width: w, r0: r0, r1: r1, lo: Math.min(left, r0), hi: Math.max(left + w, r1) };
  }
  // sideBySide lays a sorted level's tables (L1 and deeper: their ranges do
  // not overlap) out in one lane, in key order, each box as near the
  // middle of its range as the boxes before and after it allow. It
  // returns null when the boxes do not fit in the row side by side.
  function sideBySide(items, W) {
    items.sort(function (a, b) { return a.t.x0 - b.t.x0 || a.t.x1 - b.t.x1; });
    var total = 0;
    items.forEach(function (it) { total += it.p.width; });
    if (total > W + 0.5) { return null; }
    var edge = 0;
    items.forEach(function (it) { // rightwards, off the boxes before
      it.p.left = Math.max(it.p.left, edge);
      edge = it.p.left + it.p.width;
    });
    edge = W;
    for (var i = items.length - 1; i >= 0; i--) { // leftwards, inside the row
      var p = items[i].p;
      p.left = Math.min(p.left, edge - p.width);
      edge = p.left;
    }
    return [items];
  }
  // lanes packs the level's tables into lanes, each where nothing it
  // holds overlaps (box or range bar; touching is not overlapping): level
  // 0 newest first, the others left to right. A sorted level whose boxes
  // fit side by side gets one lane (sideBySide).
  function lanes(level, files, W) {
    var items = files.map(function (f) { return { t: byFile[f], p: place(byFile[f], W) }; });
    if (level > 0) {
      var one = sideBySide(items, W);
      if (one) { return one; }
    }
    if (level === 0) {
      items.sort(function (a, b) { return b.t.largest_seq - a.t.largest_seq || b.t.file - a.t.file; });
    } else {
      items.sort(function (a, b) { return a.p.lo - b.p.lo; });
    }
    var out = [];
    items.forEach(function (it) {
      for (var i = 0; i < out.length; i++) {
        var clash = out[i].some(function (o) { return Math.min(it.p.hi, o.p.hi) - Math.max(it.p.lo, o.p.lo) > 1.5; });
        if (!clash) { out[i].push(it); return; }
      }
      out.push([it]);
    });
    return out;
  }

  function render() {
    var lv = levelsAt(state.step);
    var now = state.step >= history.length;
    var added = {};
    if (history.length && data.kind === "lsm") {
      history[state.step - 1].added.forEach(function (a) { added[a[1]] = true; });
    }
    tree.textContent = "";
    var W = 0;
    for (var level = 0; level < data.num_levels; level++) {
      var files = (lv[level] || []).filter(function (f) { return byFile[f]; });
      var row = el("div", "level" + (files.length ? "" : " empty"));
      row.setAttribute("data-level", String(level));
      var label = el("div", "level-label");
      label.appendChild(el("b", null, "L" + level));
      if (files.length) { label.appendChild(el("span", null, plural(files.length, "table") + " \u00b7 " + human(levelBytes(files)))); }
      row.appendChild(label);
      var track = el("div", "track");
      row.appendChild(track);
      tree.appendChild(row);
      if (!W) { W = Math.max(100, track.clientWidth); }
      if (!files.length) {
        track.appendChild(el("div", "none", level === 0 && liveCount === 0 && now ? "empty: the store holds no tables" : "empty"));
        continue;
      }
      lanes(level, files, W).forEach(function (laneItems) {
        var lane = el("div", "lane");
        laneItems.forEach(function (it) { drawTable(lane, it.t, it.p, level, added[it.t.file]); });
        track.appendChild(lane);
      });
    }
    drawKey(W);
    drawLegend();
    drawCaption(now);
    if (hlist) {
      slider.value = String(state.step);
      prevB.disabled = state.step <= 1;
      nextB.disabled = state.step >= history.length;
      stepLabel.textContent = now ? "now" : state.step + " / " + history.length;
      var top = (state.step - 1) * ROW_H;
      if (top < hlist.scrollTop || top + ROW_H > hlist.scrollTop + hlist.clientHeight) {
        hlist.scrollTop = top - hlist.clientHeight / 2;
      }
      drawRows();
    }
    if (state.pinned) {
      var box = tree.querySelector('.table[data-file="' + fileName(state.pinned) + '"]');
      if (box) { box.classList.add("pinned"); } else { state.pinned = null; showHint(); }
    }
  }

  function drawTable(lane, t, p, level, isAdded) {
    var bar = el("div", "whisker" + (trace && !traced[t.file] ? " faded" : ""));
    bar.style.left = p.r0.toFixed(1) + "px";
    bar.style.width = (p.r1 - p.r0).toFixed(1) + "px";
    lane.appendChild(bar);
    var c = colourOf(t);
    var cls = "table" + (c.cls ? " " + c.cls : "") + (isAdded ? " added" : "");
    var tr = trace ? traced[t.file] : null;
    if (trace) { cls += tr ? " traced mark-" + tr.step.mark : " faded"; }
    var box = el("div", cls);
    box.setAttribute("data-file", fileName(t.file));
    box.setAttribute("data-level", String(level));
    if (tr) { box.setAttribute("data-mark", tr.step.mark); }
    var w = Math.max(MIN_W - 2 * INSET, p.width - 2 * INSET);
    box.style.left = (p.left + INSET).toFixed(1) + "px";
    box.style.width = w.toFixed(1) + "px";
    if (c.fill) { box.style.background = c.fill; }
    if (p.width >= 54) { box.textContent = fileName(t.file); }
    box.title = fileName(t.file) + tableExt + "  " + human(t.size) + "  [" + t.smallest + " .. " + t.largest + "]";
    box.addEventListener("mouseenter", function () { if (!state.pinned) { showDetails(t); } });
    box.addEventListener("click", function () {
      if (state.pinned === t.file) {
        state.pinned = null;
        box.classList.remove("pinned");
        return;
      }
      var old = tree.querySelector(".table.pinned");
      if (old) { old.classList.remove("pinned"); }
      state.pinned = t.file;
      box.classList.add("pinned");
      showDetails(t);
    });
    lane.appendChild(box);
    if (tr) {
      var badge = el("span", "badge", tr.n);
      badge.style.left = Math.max(0, p.left - 6).toFixed(1) + "px";
      lane.appendChild(badge);
    }
  }

  function drawKey(W) {
    if (!trace) { return; }
    var L = tree.querySelector(".track").offsetLeft;
    if (trace.has_lower || trace.has_upper) {
      var lo = trace.has_lower ? trace.lower_x : 0, hi = trace.has_upper ? trace.upper_x : 1;
      var b = el("div", "bounds");
      b.style.left = (L + lo * W).toFixed(1) + "px";
      b.style.width = Math.max(2, (hi - lo) * W).toFixed(1) + "px";
      tree.appendChild(b);
    }
    var line = el("div", "keyline");
    line.style.left = (L + trace.key_x * W - 1).toFixed(1) + "px";
    tree.appendChild(line);
    keylabel.textContent = "";
    var where = trace.key_where === "before" ? " (before every table's range)" : trace.key_where === "after" ? " (after every table's range)" : "";
    var s = el("span", null, "\u2193 " + trace.key + where);
    s.style.left = (trace.key_x * W).toFixed(1) + "px";
    // Near an end, the label hangs inwards from the line, not across it.
    if (trace.key_x < 0.2) { s.style.transform = "translateX(-6px)"; }
    if (trace.key_x > 0.8) { s.style.transform = "translateX(calc(-100% + 6px))"; }
    keylabel.appendChild(s);
  }

  function drawCaption(now) {
    caption.textContent = "";
    if (trace) {
      caption.appendChild(el("span", null, "Each table the lookup considered is outlined by what became of it and numbered as in its steps; the others are faded."));
      return;
    }
    if (!history.length) {
      caption.appendChild(el("span", null, "The tree now."));
      return;
    }
    var e = history[state.step - 1];
    caption.appendChild(el("span", null, (now ? "Now, after" : "After") + " edit " + state.step + " of " + history.length + " (MANIFEST record " + e.record + "): "));
    caption.appendChild(el("span", "kind", e.kind));
    caption.appendChild(el("span", null, ", " + e.summary + (e.added.length ? " (dashed outline: added by this edit)" : "")));
  }

  render();
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(render, 100);
  });
  // data-render-ms is how long the script took to draw the page (the
  // tests hold it to a budget).
  document.documentElement.setAttribute("data-render-ms", String(Date.now() - started));
  document.documentElement.setAttribute("data-rendered", "1");
})();
