package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bloomkv/bloomkv/filter"
)

// Chart geometry, in SVG user units (pixels). The page holds two grids of
// small panels, one panel per filter family in each, on shared axes: first
// the false-positive rate (log scale) with a strip of measured/theory under
// it, then the probe time.
const (
	svgW      = 1000
	panelCols = 4
	panelW    = 214 // a panel's plot area
	panelGapX = 14
	gridL     = 72 // left edge of the first column's plot areas
	fprH      = 150
	ratioGap  = 16
	ratioH    = 56
	cellGapY  = 54 // under a cell: tick labels, then the next cell's title
	speedH    = 110
	floorRate = 1e-9 // the rate axis never goes below this
	// The measured/theory strip spans ratioMin..ratioMax on a log scale;
	// ratios beyond it are drawn as triangles on its edge.
	ratioMin, ratioMax = 0.5, 2.0

	theorySty  = `stroke="#222" stroke-width="1" fill="none"`
	boundSty   = `stroke="#999" stroke-width="1" stroke-dasharray="2,3" fill="none"`
	bandFill   = "#dcdcdc"
	contextSty = `fill="#cfcfcf"`
	gridSty    = `stroke="#ececec" stroke-width="1"`
	frameSty   = `fill="none" stroke="#555"`
	markR      = 3.2 // a measurement's radius
)

// palette colours the families, the same in both grids.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// writeLabSVG draws the filter laboratory's rows. Every mark has one
// meaning throughout: a thin dark line is theory, a filled dot is a
// measurement (hollow: no false positive seen, drawn on the axis floor).
//
// The first grid has one panel per family, so that families whose rates
// coincide (the Bloom filters from 1 to 10 bits per key) do not hide one
// another: the false-positive rate against the actual bits per key of each
// filter built, with the 2^-bits bound of any filter dotted; under it a
// strip of measured/theory on a log scale from ratioMin to ratioMax, theory
// being the line at 1 and the grey band around it what chance allows
// (labRow.RatioErr), so a dot outside the band is a real departure from
// theory. The second grid is the other side of the trade-off, nanoseconds
// per absent-key probe against bits per key: each panel's family in colour
// over every other family in grey.
func writeLabSVG(w io.Writer, rows []labRow, subtitle string, distinct int) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	fams := families(rows)

	xmax, lo, nsMax := 1.0, 1.0, 1.0
	for _, r := range rows {
		xmax = max(xmax, r.ActualBits)
		nsMax = max(nsMax, r.ProbeNs)
		if r.Measured > 0 {
			lo = min(lo, r.Measured)
		}
		if !math.IsNaN(r.Theory) && r.Theory > 0 {
			lo = min(lo, r.Theory)
		}
	}
	lo = min(lo, 1/float64(max(distinct, 1)))
	xmax = math.Ceil(xmax + 1)
	if int(xmax)%2 == 1 {
		xmax++
	}
	xstep := 4.0
	if xmax > 32 {
		xstep = 8
	}
	ymin := math.Pow(10, math.Floor(math.Log10(max(lo, floorRate))))
	nsTop, nsStep := niceScale(nsMax)

	rowsN := max((len(fams)+panelCols-1)/panelCols, 1)
	usedW := max(min(len(fams), panelCols), 1)*(panelW+panelGapX) - panelGapX
	cell1 := fprH + ratioGap + ratioH + cellGapY
	cell2 := speedH + cellGapY
	top1 := 146
	sec2 := top1 + rowsN*cell1 + 6
	top2 := sec2 + 34
	height := top2 + rowsN*cell2 - cellGapY + 50

	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", svgW, height, svgW, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="24" text-anchor="middle" font-size="17" font-weight="bold">Filters: false-positive rate and probe time against bits per key</text>`+"\n", svgW/2)
	p(`<text x="%d" y="43" text-anchor="middle" fill="#444">%s</text>`+"\n", svgW/2, esc(subtitle))

	// The key, in two rows.
	p(`<g class="key" fill="#222">`)
	kx, ky := gridL, 66
	item := func(draw func(x, y int), text string) {
		draw(kx, ky)
		p(`<text x="%d" y="%d">%s</text>`, kx+30, ky+4, text)
		kx += 30 + int(6.4*float64(len([]rune(stripTags(text))))) + 26
	}
	item(func(x, y int) { p(`<line x1="%d" x2="%d" y1="%d" y2="%d" %s/>`, x, x+24, y, y, theorySty) }, "theory")
	item(func(x, y int) { p(`<circle cx="%d" cy="%d" r="%.1f" fill="#1f77b4"/>`, x+12, y, markR) }, "measured")
	item(func(x, y int) {
		p(`<circle cx="%d" cy="%d" r="%.1f" fill="white" stroke="#1f77b4" stroke-width="1.2"/>`, x+12, y, markR)
	}, "no false positive seen (on the axis floor)")
	item(func(x, y int) { p(`<line x1="%d" x2="%d" y1="%d" y2="%d" %s/>`, x, x+24, y, y, boundSty) },
		`2<tspan dy="-5" font-size="9">&#x2212;bits</tspan><tspan dy="5">: no filter can do better</tspan>`)
	kx, ky = gridL, 86
	item(func(x, y int) { p(`<rect x="%d" y="%d" width="24" height="12" fill="%s"/>`, x, y-6, bandFill) },
		"measured/theory that chance allows (±2σ: probe sampling, and a Bloom filter's own spread)")
	item(func(x, y int) { p(`<path d="%s" fill="#1f77b4"/>`, triangle(float64(x+12), float64(y-4), true)) },
		"measured/theory beyond the strip")
	p("</g>\n")

	// First grid: rate and measured/theory.
	p(`<text x="%d" y="%d" font-size="14" font-weight="bold">False-positive rate (log scale), and measured/theory under it</text>`+"\n", gridL, top1-30)
	for i, fam := range fams {
		color := palette[i%len(palette)]
		col, row := i%panelCols, i/panelCols
		px := float64(gridL + col*(panelW+panelGapX))
		py := float64(top1 + row*cell1)
		rt := py + fprH + ratioGap // top of the ratio strip
		x := func(v float64) float64 { return px + v/xmax*panelW }
		y := func(v float64) float64 {
			v = max(v, ymin)
			return py + math.Log10(v)/math.Log10(ymin)*fprH
		}
		yr := func(v float64) float64 {
			v = min(max(v, ratioMin), ratioMax)
			return rt + math.Log2(ratioMax/v)/math.Log2(ratioMax/ratioMin)*ratioH
		}
		fr := familyRows(rows, fam)

		p(`<g class="panel" data-family="%s">`+"\n", esc(fam))
		p(`<text x="%.1f" y="%.1f" font-weight="bold" fill="%s">%s</text>`+"\n", px, py-6, color, esc(fam))
		// Grid lines: every decade, every half x tick; the ratio strip's
		// at 1/sqrt2 and sqrt2.
		p(`<g %s>`, gridSty)
		for d := ymin; d <= 1.0001; d *= 10 {
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, px, px+panelW, y(d), y(d))
		}
		for v := 0.0; v <= xmax; v += xstep / 2 {
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, x(v), x(v), py, py+fprH)
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, x(v), x(v), rt, rt+ratioH)
		}
		for _, v := range []float64{math.Sqrt2 / 2, math.Sqrt2} {
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, px, px+panelW, yr(v), yr(v))
		}
		p("</g>\n")
		if col == 0 {
			p(`<g text-anchor="end" font-size="10" fill="#444">`)
			for d := 1.0; d >= ymin*0.999; d /= 100 {
				p(`<text x="%.1f" y="%.1f">%s</text>`, px-4, y(d)+3, decadeLabel(d))
			}
			for _, v := range []float64{ratioMax, 1, ratioMin} {
				p(`<text x="%.1f" y="%.1f">%g</text>`, px-4, yr(v)+3, v)
			}
			p("</g>\n")
			p(`<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle" font-size="11" fill="#222">false-positive rate</text>`+"\n", px-48, py+fprH/2)
			p(`<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle" font-size="11" fill="#222">meas/th</text>`+"\n", px-48, rt+ratioH/2)
		}
		p(`<g text-anchor="middle" font-size="10" fill="#444">`)
		for v := 0.0; v <= xmax; v += xstep {
			p(`<text x="%.1f" y="%.1f">%g</text>`, x(v), rt+ratioH+13, v)
		}
		p("</g>\n")
		p(`<rect x="%.1f" y="%.1f" width="%d" height="%d" %s/>`+"\n", px, py, panelW, fprH, frameSty)
		p(`<rect x="%.1f" y="%.1f" width="%d" height="%d" %s/>`+"\n", px, rt, panelW, ratioH, frameSty)

		// The rate panel, clipped to its frame (and a little around it,
		// for the dots on the floor).
		p(`<clipPath id="rate%d"><rect x="%.1f" y="%.1f" width="%d" height="%d"/></clipPath>`+"\n", i, px-5, py-5, panelW+10, fprH+10)
		p(`<g clip-path="url(#rate%d)">`+"\n", i)
		// The bound, down to the floor of the axis (not along it).
		var lb []string
		vEnd := min(xmax, -math.Log2(ymin))
		for v := 0.0; v < vEnd; v += 0.25 {
			lb = append(lb, fmt.Sprintf("%.1f,%.1f", x(v), y(math.Pow(2, -v))))
		}
		lb = append(lb, fmt.Sprintf("%.1f,%.1f", x(vEnd), y(math.Pow(2, -vEnd))))
		p(`<polyline class="bound" %s points="%s"/>`+"\n", boundSty, strings.Join(lb, " "))
		for _, r := range fr {
			class, fill := "measured", color
			if r.FalsePositives == 0 {
				class, fill = "measured none-seen", "white"
			}
			tip := fmt.Sprintf("%s: budget %g, actual %.2f bits/key, measured %s (%d of %d), theory %s, meas/th %s, build %.1f ns/key, probe %.1f ns",
				r.Family, r.Budget, r.ActualBits, pct(r.Measured), r.FalsePositives, r.Absent, theoryText(r.Theory), ratioText(r), r.BuildNs, r.ProbeNs)
			p(`<circle class="%s" cx="%.1f" cy="%.1f" r="%.1f" fill="%s" stroke="%s" stroke-width="1.2"><title>%s</title></circle>`+"\n",
				class, x(r.ActualBits), y(r.Measured), markR, fill, color, esc(tip))
		}
		// Theory over the dots, thin, so that a dot on it shows it: a
		// line where the family's filters grow steadily in size, else a
		// short stroke at each filter (a line would invent filters in
		// between).
		var pts []string
		steady := len(fr) >= 3
		for j, r := range fr {
			if math.IsNaN(r.Theory) || r.Theory <= 0 || (j > 0 && r.ActualBits <= fr[j-1].ActualBits) {
				steady = false
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(r.ActualBits), y(r.Theory)))
		}
		if steady {
			p(`<polyline class="theory" %s points="%s"/>`+"\n", theorySty, strings.Join(pts, " "))
		} else {
			for _, r := range fr {
				if !math.IsNaN(r.Theory) && r.Theory > 0 {
					p(`<line class="theory" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" %s/>`+"\n",
						x(r.ActualBits)-9, x(r.ActualBits)+9, y(r.Theory), y(r.Theory), theorySty)
				}
			}
		}
		p("</g>\n")

		// The measured/theory strip.
		p(`<clipPath id="ratio%d"><rect x="%.1f" y="%.1f" width="%d" height="%d"/></clipPath>`+"\n", i, px-5, rt-1, panelW+10, ratioH+2)
		p(`<g clip-path="url(#ratio%d)">`+"\n", i)
		halfW := max(1.5, min(4, panelW/xmax/2*0.9))
		for _, r := range fr {
			if e := r.RatioErr(); !math.IsNaN(e) {
				top, bot := yr(1+e), yr(1-e)
				p(`<rect class="band" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x(r.ActualBits)-halfW, top, 2*halfW, bot-top, bandFill)
			}
		}
		p(`<line class="theory" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" %s/>`+"\n", px, px+panelW, yr(1), yr(1), theorySty)
		for _, r := range fr {
			v := r.Ratio()
			if math.IsNaN(v) {
				continue
			}
			cx := x(r.ActualBits)
			tip := fmt.Sprintf("%s %g: meas/th %s", r.Family, r.Budget, ratioText(r))
			switch {
			case r.FalsePositives == 0:
				p(`<circle class="ratio none-seen" cx="%.1f" cy="%.1f" r="%.1f" fill="white" stroke="%s" stroke-width="1.2"><title>%s</title></circle>`+"\n",
					cx, yr(ratioMin), markR, color, esc(tip))
			case v > ratioMax || v < ratioMin:
				up := v > ratioMax
				edge := rt + ratioH
				if up {
					edge = rt
				}
				p(`<path class="ratio clipped" d="%s" fill="%s"><title>%s</title></path>`+"\n", triangle(cx, edge, up), color, esc(tip))
			default:
				p(`<circle class="ratio" cx="%.1f" cy="%.1f" r="%.1f" fill="%s"><title>%s</title></circle>`+"\n", cx, yr(v), markR, color, esc(tip))
			}
		}
		p("</g>\n</g>\n")
	}
	p(`<text x="%d" y="%d" text-anchor="middle" font-size="12">bits per key (each filter's actual size / keys in it)</text>`+"\n",
		gridL+usedW/2, top1+rowsN*cell1-cellGapY+30)

	// Second grid: probe time.
	p(`<text x="%d" y="%d" font-size="14" font-weight="bold">Probe time: ns per absent-key probe (each panel's filter in colour, the others in grey)</text>`+"\n", gridL, sec2)
	for i, fam := range fams {
		color := palette[i%len(palette)]
		col, row := i%panelCols, i/panelCols
		px := float64(gridL + col*(panelW+panelGapX))
		py := float64(top2 + row*cell2)
		x := func(v float64) float64 { return px + v/xmax*panelW }
		y := func(v float64) float64 { return py + (1-v/nsTop)*speedH }

		p(`<g class="panel" data-family="%s">`+"\n", esc(fam))
		p(`<text x="%.1f" y="%.1f" font-weight="bold" fill="%s">%s</text>`+"\n", px, py-6, color, esc(fam))
		p(`<g %s>`, gridSty)
		for v := nsStep; v < nsTop-nsStep/2; v += nsStep {
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, px, px+panelW, y(v), y(v))
		}
		for v := 0.0; v <= xmax; v += xstep / 2 {
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, x(v), x(v), py, py+speedH)
		}
		p("</g>\n")
		if col == 0 {
			p(`<g text-anchor="end" font-size="10" fill="#444">`)
			for v := 0.0; v <= nsTop+nsStep/2; v += nsStep {
				p(`<text x="%.1f" y="%.1f">%g ns</text>`, px-4, y(v)+3, v)
			}
			p("</g>\n")
		}
		p(`<g text-anchor="middle" font-size="10" fill="#444">`)
		for v := 0.0; v <= xmax; v += xstep {
			p(`<text x="%.1f" y="%.1f">%g</text>`, x(v), py+speedH+13, v)
		}
		p("</g>\n")
		p(`<rect x="%.1f" y="%.1f" width="%d" height="%d" %s/>`+"\n", px, py, panelW, speedH, frameSty)
		p(`<g %s>`, contextSty)
		for _, r := range rows {
			if r.Family != fam {
				p(`<circle class="context" cx="%.1f" cy="%.1f" r="2"/>`, x(r.ActualBits), y(r.ProbeNs))
			}
		}
		p("</g>\n")
		for _, r := range familyRows(rows, fam) {
			tip := fmt.Sprintf("%s %g: %.2f bits/key, probe %.1f ns, build %.1f ns/key", r.Family, r.Budget, r.ActualBits, r.ProbeNs, r.BuildNs)
			p(`<circle class="probe-ns" cx="%.1f" cy="%.1f" r="%.1f" fill="%s"><title>%s</title></circle>`+"\n", x(r.ActualBits), y(r.ProbeNs), markR, color, esc(tip))
		}
		p("</g>\n")
	}
	p(`<text x="%d" y="%d" text-anchor="middle" font-size="12">bits per key</text>`+"\n",
		gridL+usedW/2, top2+rowsN*cell2-cellGapY+30)
	p("</svg>\n")
	return bw.Flush()
}

// niceScale returns an axis top at or above v and a tick step that
// divides it into at most five parts: 1, 2 or 5 times a power of ten.
func niceScale(v float64) (top, step float64) {
	v = max(v, 1)
	mag := math.Pow(10, math.Floor(math.Log10(v/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		step = m * mag
		if step*5 >= v {
			break
		}
	}
	return step * math.Ceil(v/step), step
}

// triangle is an SVG path of a small triangle with its tip at (x, y),
// pointing up or down.
func triangle(x, y float64, up bool) string {
	d := 7.0
	if !up {
		d = -d
	}
	return fmt.Sprintf("M%.1f,%.1f L%.1f,%.1f L%.1f,%.1f Z", x, y, x-4.5, y+d, x+4.5, y+d)
}

func theoryText(t float64) string {
	if math.IsNaN(t) {
		return "n/a"
	}
	return pct(t)
}

func ratioText(r labRow) string {
	v := r.Ratio()
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f ±%.3f", v, r.RatioErr())
}

// decadeLabel writes a power of ten as a percentage: 100%, 10%, 1%,
// 0.1%, ... 0.0001%, then 1e-5% and smaller.
func decadeLabel(d float64) string {
	e := int(math.Round(math.Log10(d))) + 2 // exponent of the percentage
	if e >= 0 {
		return fmt.Sprintf("%d%%", int(math.Round(math.Pow(10, float64(e)))))
	}
	if e >= -4 {
		return "0." + strings.Repeat("0", -e-1) + "1%"
	}
	return fmt.Sprintf("1e%d%%", e)
}

// stripTags drops the markup of a key's text, to estimate its width.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return strings.ReplaceAll(b.String(), "&#x2212;", "-")
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Range chart geometry: one panel per key set, side by side, two to a row.
const (
	rangePanelW    = 400
	rangePanelH    = 300
	rangePanelGapX = 70
	rangeGridL     = 84
	rangeCellGapY  = 70 // under a panel: tick labels, the axis title, the next panel's title
	rangeMarkOff   = 2.5
)

// diamond is an SVG path of a diamond centred at (x, y) of half-width r.
func diamond(x, y, r float64) string {
	return fmt.Sprintf("M%.1f,%.1f L%.1f,%.1f L%.1f,%.1f L%.1f,%.1f Z", x, y-r, x+r, y, x, y+r, x-r, y)
}

// writeRangeSVG draws the range laboratory's rows: one panel per key set,
// the false-positive rate (log scale) against the range width L (log
// scale), with the bound (filter.GrafiteFPR) a thin line per bits per key
// and the measured rates of the uniform queries dots and of the
// correlated ones diamonds, both in the colour of their bits per key (and
// hollow, on the axis floor, when no false positive was seen). The two
// kinds sit a little left and right of their width, so that equal rates
// do not hide each other.
func writeRangeSVG(w io.Writer, rows []rangeRow, subtitle string) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	var sets []string
	var bitsList []int
	var widths []uint64
	lo, maxQ := 1.0, 1
	for _, r := range rows {
		if !slices.Contains(sets, r.Set) {
			sets = append(sets, r.Set)
		}
		if !slices.Contains(bitsList, r.Bits) {
			bitsList = append(bitsList, r.Bits)
		}
		if !slices.Contains(widths, r.Width) {
			widths = append(widths, r.Width)
		}
		lo = min(lo, r.Bound)
		for _, q := range []rangeQueries{r.Uniform, r.Correlated} {
			if q.FalsePositives > 0 {
				lo = min(lo, q.Rate())
			}
			maxQ = max(maxQ, q.Queries)
		}
	}
	slices.Sort(bitsList)
	slices.Sort(widths)
	lo = min(lo, 1/float64(maxQ))
	lx0, lx1 := 0.0, 1.0
	if len(widths) > 0 {
		lx0, lx1 = math.Log2(float64(widths[0])), math.Log2(float64(widths[len(widths)-1]))
	}
	if lx1-lx0 < 1 {
		lx0, lx1 = lx0-0.5, lx1+0.5
	}
	// The floor is the decade under the smallest bound, rate measured and
	// single false positive of a row.
	ymin := math.Pow(10, math.Floor(math.Log10(max(lo, floorRate))))
	colorOf := func(bits int) string { return palette[slices.Index(bitsList, bits)%len(palette)] }

	cols := max(min(len(sets), 2), 1)
	rowsN := max((len(sets)+cols-1)/cols, 1)
	usedW := cols*(rangePanelW+rangePanelGapX) - rangePanelGapX
	top := 136
	cell := rangePanelH + rangeCellGapY
	height := top + rowsN*cell - rangeCellGapY + 58
	width := max(svgW, rangeGridL+usedW+30)

	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="24" text-anchor="middle" font-size="17" font-weight="bold">Range filter: false-positive rate on empty ranges against range width</text>`+"\n", width/2)
	p(`<text x="%d" y="43" text-anchor="middle" fill="#444">%s</text>`+"\n", width/2, esc(subtitle))

	// The key: the marks, then the colours.
	p(`<g class="key" fill="#222">`)
	kx, ky := rangeGridL, 66
	item := func(draw func(x, y int), text string) {
		draw(kx, ky)
		p(`<text x="%d" y="%d">%s</text>`, kx+30, ky+4, text)
		kx += 30 + int(6.4*float64(len([]rune(stripTags(text))))) + 26
	}
	item(func(x, y int) { p(`<line x1="%d" x2="%d" y1="%d" y2="%d" %s/>`, x, x+24, y, y, theorySty) },
		`bound L/2<tspan dy="-5" font-size="9">bits&#x2212;2</tspan><tspan dy="5"> (at most 1)</tspan>`)
	item(func(x, y int) { p(`<circle cx="%d" cy="%d" r="%.1f" fill="#222"/>`, x+12, y, markR) }, "uniform ranges")
	item(func(x, y int) { p(`<path d="%s" fill="#222"/>`, diamond(float64(x+12), float64(y), markR+1)) }, "correlated (right after a key)")
	item(func(x, y int) {
		p(`<circle cx="%d" cy="%d" r="%.1f" fill="white" stroke="#222" stroke-width="1.2"/>`, x+6, y, markR)
		p(`<path d="%s" fill="white" stroke="#222" stroke-width="1.2"/>`, diamond(float64(x+18), float64(y), markR+1))
	}, "no false positive seen (on the axis floor)")
	kx, ky = rangeGridL, 86
	for _, b := range bitsList {
		item(func(x, y int) { p(`<rect x="%d" y="%d" width="24" height="10" fill="%s"/>`, x, y-5, colorOf(b)) },
			fmt.Sprintf("%d bits/key", b))
	}
	p("</g>\n")

	for i, set := range sets {
		col, row := i%cols, i/cols
		px := float64(rangeGridL + col*(rangePanelW+rangePanelGapX))
		py := float64(top + row*cell)
		const pad = 14.0 // room for the marks at the first and last width
		x := func(l float64) float64 {
			return px + pad + (math.Log2(l)-lx0)/(lx1-lx0)*(rangePanelW-2*pad)
		}
		y := func(v float64) float64 {
			v = max(v, ymin)
			return py + math.Log10(v)/math.Log10(ymin)*rangePanelH
		}
		p(`<g class="panel" data-family="%s">`+"\n", esc(set))
		p(`<text x="%.1f" y="%.1f" font-weight="bold" font-size="13">%s keys</text>`+"\n", px, py-8, esc(set))
		p(`<g %s>`, gridSty)
		for d := ymin; d <= 1.0001; d *= 10 {
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, px, px+rangePanelW, y(d), y(d))
		}
		for _, l := range widths {
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, x(float64(l)), x(float64(l)), py, py+rangePanelH)
		}
		p("</g>\n")
		p(`<g text-anchor="end" font-size="10" fill="#444">`)
		for d := 1.0; d >= ymin*0.999; d /= 10 {
			p(`<text x="%.1f" y="%.1f">%s</text>`, px-4, y(d)+3, decadeLabel(d))
		}
		p("</g>\n")
		p(`<g text-anchor="middle" font-size="10" fill="#444">`)
		lastX := math.Inf(-1)
		for _, l := range widths {
			if xl := x(float64(l)); xl-lastX >= 24 {
				p(`<text x="%.1f" y="%.1f">%d</text>`, xl, py+rangePanelH+14, l)
				lastX = xl
			}
		}
		p("</g>\n")
		p(`<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle" font-size="11" fill="#222">false-positive rate</text>`+"\n",
			px-56, py+rangePanelH/2)
		p(`<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11" fill="#222">range width L (integers)</text>`+"\n",
			px+rangePanelW/2, py+rangePanelH+32)
		p(`<rect x="%.1f" y="%.1f" width="%d" height="%d" %s/>`+"\n", px, py, rangePanelW, rangePanelH, frameSty)

		p(`<clipPath id="range%d"><rect x="%.1f" y="%.1f" width="%d" height="%d"/></clipPath>`+"\n", i, px, py-6, rangePanelW, rangePanelH+12)
		p(`<g clip-path="url(#range%d)">`+"\n", i)
		// The bounds: L/2^(bits-2) is a line of slope 1 on these scales
		// until it reaches 1, so its ends, its corner and the floor
		// crossing draw it exactly.
		for _, b := range bitsList {
			corner := math.Log2(1 / filter.GrafiteFPR(b, 1))
			floorAt := corner + math.Log2(ymin)
			lxs := []float64{lx0, lx1}
			for _, v := range []float64{corner, floorAt} {
				if v > lx0 && v < lx1 {
					lxs = append(lxs, v)
				}
			}
			slices.Sort(lxs)
			var pts []string
			for _, v := range lxs {
				bound := math.Min(1, math.Exp2(v-corner))
				if bound < ymin*0.999 {
					continue
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(math.Exp2(v)), y(bound)))
			}
			if len(pts) == 1 {
				pts = append(pts, pts[0])
			}
			p(`<polyline class="bound" data-bits="%d" stroke="%s" stroke-width="1" fill="none" points="%s"><title>%s</title></polyline>`+"\n",
				b, colorOf(b), strings.Join(pts, " "), esc(fmt.Sprintf("%d bits/key: bound L/2^%d", b, b-2)))
		}
		for _, r := range rows {
			if r.Set != set {
				continue
			}
			color := colorOf(r.Bits)
			for _, k := range []struct {
				name string
				q    rangeQueries
				off  float64
			}{{"uniform", r.Uniform, -rangeMarkOff}, {"correlated", r.Correlated, rangeMarkOff}} {
				if k.q.Queries == 0 {
					continue
				}
				class, fill := "measured "+k.name, color
				if k.q.FalsePositives == 0 {
					class, fill = class+" none-seen", "white"
				}
				tip := fmt.Sprintf("%s keys, %d bits/key, L=%d, %s: %s (%d of %d), bound %s, meas/bd %.3f, %.1f ns/query",
					r.Set, r.Bits, r.Width, k.name, pct(k.q.Rate()), k.q.FalsePositives, k.q.Queries, pct(r.Bound), r.Ratio(k.q), k.q.Ns)
				cx, cy := x(float64(r.Width))+k.off, y(k.q.Rate())
				if k.name == "uniform" {
					p(`<circle class="%s" data-bits="%d" cx="%.1f" cy="%.1f" r="%.1f" fill="%s" stroke="%s" stroke-width="1.2"><title>%s</title></circle>`+"\n",
						class, r.Bits, cx, cy, markR, fill, color, esc(tip))
				} else {
					p(`<path class="%s" data-bits="%d" d="%s" fill="%s" stroke="%s" stroke-width="1.2"><title>%s</title></path>`+"\n",
						class, r.Bits, diamond(cx, cy, markR+1), fill, color, esc(tip))
				}
			}
		}
		p("</g>\n</g>\n")
	}
	p("</svg>\n")
	return bw.Flush()
}

// The charts of kvbench --report's page (htmlreport.go). They are drawn
// for inline use in HTML: no XML declaration and no namespace, a viewBox
// and width 100% so they scale with the page, class "chart" on the <svg>.
const (
	repW      = 880 // a report chart's width in user units
	repPlotL  = 78  // left edge of the plot area
	repPlotR  = 24  // right margin
	repTickSz = 11  // tick label font size
)

// logDecades returns the powers of ten from 10^floor(log10 lo) to
// 10^ceil(log10 hi), at least two of them.
func logDecades(lo, hi float64) []float64 {
	a := math.Floor(math.Log10(lo))
	b := math.Ceil(math.Log10(hi))
	if b <= a {
		b = a + 1
	}
	var out []float64
	for e := a; e <= b; e++ {
		out = append(out, math.Pow(10, e))
	}
	return out
}

// durLabel writes a latency given in microseconds with the unit that suits
// it: 100 ns, 2.5 µs, 40 ms, 1.2 s.
func durLabel(us float64) string {
	trim := func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
	switch {
	case us < 1:
		return trim(us*1e3) + " ns"
	case us < 1e3:
		return trim(us) + " µs"
	case us < 1e6:
		return trim(us/1e3) + " ms"
	}
	return trim(us/1e6) + " s"
}

// countLabel writes a power of ten as an integer with thousands
// separators up to a million, then as 1e7, 1e8...
func countLabel(v float64) string {
	if v < 1e7 {
		return thousands(int(math.Round(v)))
	}
	return fmt.Sprintf("1e%d", int(math.Round(math.Log10(v))))
}

// latencyBinsPerDecade is the resolution of the latency chart: bars of
// equal width on the log axis, each 1/20 of a decade (12% apart), made of
// the histogram's buckets (64 per power of two) by their midpoints.
const latencyBinsPerDecade = 20

// latencyMark is a vertical line on the latency chart.
type latencyMark struct {
	label string
	us    float64
}

// writeLatencySVG draws h, whose values are the latencies of one
// unit (op, or call), as a histogram: latency on a log axis in µs, bars
// of equal width on that axis, their heights the number of latencies in
// each on a log axis (so that the tail, p99.9 and beyond, shows next to
// the mode), with p50, p99, p99.9 and the maximum marked.
func writeLatencySVG(w io.Writer, h *histogram, unit, color string) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	const (
		plotT = 64 // room above for the markers' labels
		plotH = 190
		botM  = 48
	)
	height := plotT + plotH + botM
	plotW := float64(repW - repPlotL - repPlotR)
	minUS := max(float64(h.min)/1e3, 0.01)
	maxUS := max(float64(h.max)/1e3, minUS*1.0001)
	dec := logDecades(minUS, maxUS)
	x0, x1 := math.Log10(dec[0]), math.Log10(dec[len(dec)-1])
	x := func(us float64) float64 {
		return repPlotL + (math.Log10(max(us, dec[0]))-x0)/(x1-x0)*plotW
	}
	nbins := int(math.Round((x1 - x0) * latencyBinsPerDecade))
	bins := make([]uint64, nbins)
	for b, c := range h.counts {
		if c == 0 {
			continue
		}
		lo, hi := bucketBounds(b)
		mid := max((float64(lo)+float64(hi))/2/1e3, dec[0])
		i := min(max(int((math.Log10(mid)-x0)*latencyBinsPerDecade), 0), nbins-1)
		bins[i] += c
	}
	var top uint64 = 1
	for _, c := range bins {
		top = max(top, c)
	}
	yTop := math.Pow(10, math.Ceil(math.Log10(float64(top))+1e-9))
	yBot := 0.5 // a bar of one latency keeps some height
	y := func(v float64) float64 {
		return plotT + plotH - (math.Log10(max(v, yBot))-math.Log10(yBot))/(math.Log10(yTop)-math.Log10(yBot))*plotH
	}

	p(`<svg class="chart latency" width="100%%" viewBox="0 0 %d %d" role="img" font-family="system-ui, Helvetica, Arial, sans-serif" font-size="12">`+"\n", repW, height)
	p(`<title>Latency per %s: %d samples</title>`+"\n", esc(unit), h.n)
	p(`<g %s>`, gridSty)
	for v := 1.0; v <= yTop; v *= 10 {
		p(`<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f"/>`, repPlotL, repPlotL+plotW, y(v), y(v))
	}
	for _, d := range dec {
		p(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>`, x(d), x(d), plotT, plotT+plotH)
	}
	p("</g>\n")
	// The bars.
	p(`<g class="bars" fill="%s">`+"\n", color)
	bw0 := plotW / float64(nbins)
	for i, c := range bins {
		if c == 0 {
			continue
		}
		lo := math.Pow(10, x0+float64(i)/latencyBinsPerDecade)
		hi := math.Pow(10, x0+float64(i+1)/latencyBinsPerDecade)
		tip := fmt.Sprintf("%s to %s: %d (%.2f%%)", durLabel(lo), durLabel(hi), c, 100*float64(c)/float64(h.n))
		top := y(float64(c))
		p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" data-n="%d"><title>%s</title></rect>`+"\n",
			repPlotL+float64(i)*bw0+0.5, top, max(bw0-1, 0.8), plotT+plotH-top, c, esc(tip))
	}
	p("</g>\n")
	// The percentiles: a dashed line each from its label, in the strip
	// above the plot, down to the axis (placeMarkLabels keeps the labels
	// off one another and off the other marks' lines).
	marks := []latencyMark{
		{"p50", us(h.percentile(0.5))}, {"p99", us(h.percentile(0.99))},
		{"p99.9", us(h.percentile(0.999))}, {"max", float64(h.max) / 1e3},
	}
	xs := make([]float64, len(marks))
	widths := make([]float64, len(marks))
	texts := make([]string, len(marks))
	for i, m := range marks {
		xs[i] = x(m.us)
		texts[i] = m.label + " " + durLabel(m.us)
		widths[i] = markCharW * float64(len([]rune(texts[i])))
	}
	p(`<g class="marks" font-size="11" fill="#222">`)
	for i, pl := range placeMarkLabels(xs, widths, 4, repW) {
		ly := float64(14 + 14*pl.row)
		lx, anchor := pl.left, "start"
		if pl.end {
			lx, anchor = pl.left+widths[i], "end"
		}
		p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%d" stroke="#222" stroke-width="1" stroke-dasharray="3,3"/>`, xs[i], xs[i], ly+3, plotT+plotH)
		p(`<text x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, lx, ly, anchor, esc(texts[i]))
	}
	p("</g>\n")
	p(`<rect x="%d" y="%d" width="%.1f" height="%d" %s/>`+"\n", repPlotL, plotT, plotW, plotH, frameSty)
	// Axes: ticks, labels and titles.
	p(`<g text-anchor="end" font-size="%d" fill="#444">`, repTickSz)
	for v := 1.0; v <= yTop; v *= 10 {
		p(`<text x="%d" y="%.1f">%s</text>`, repPlotL-5, y(v)+4, countLabel(v))
	}
	p("</g>\n")
	p(`<g text-anchor="middle" font-size="%d" fill="#444">`, repTickSz)
	for _, d := range dec {
		p(`<text x="%.1f" y="%d">%s</text>`, x(d), plotT+plotH+16, durLabel(d))
	}
	p("</g>\n")
	p(`<text x="%.1f" y="%d" text-anchor="middle" fill="#222">latency per %s, log scale</text>`+"\n", repPlotL+plotW/2, plotT+plotH+38, esc(unit))
	p(`<text transform="translate(18 %d) rotate(-90)" text-anchor="middle" fill="#222">%ss per bar (log scale)</text>`+"\n", plotT+plotH/2, esc(strings.Fields(unit)[0]))
	p("</svg>\n")
	return bw.Flush()
}

// markCharW is the width of a character of a mark's label (font size 11)
// as placeMarkLabels reckons it: a little over the average, so that
// labels it keeps apart stay apart.
const markCharW = 6.2

// markLabel is where placeMarkLabels puts a mark's label: in row row of
// the strip above the plot (0 the top), from left, and ending at the
// mark's line (end) or starting just after it.
type markLabel struct {
	row  int
	left float64
	end  bool
}

// placeMarkLabels places the labels, widths[i] wide, of the vertical
// lines at xs[i] in rows rows above the plot: each after its line or
// before it, within [0, width], clear of the other labels of its row and
// clear of the other marks' lines, each of which runs from its own
// label's row down. Of the placements that do, it picks the one with the
// labels highest, then the fewest before their lines, by trying them all
// (there are four marks: 8^4 placements at most). When none does, the
// labels go after their lines (before, where that runs past width) in
// rows 0, 1, 2...
func placeMarkLabels(xs, widths []float64, rows int, width float64) []markLabel {
	const gap = 3 // between a line and its label, and around labels
	n := len(xs)
	cur := make([]markLabel, n)
	var best []markLabel
	bestCost := math.MaxInt
	// clear reports whether cur[i] keeps clear of cur[:i].
	clear := func(i int) bool {
		c := cur[i]
		l, r := c.left, c.left+widths[i]
		if l < 0 || r > width {
			return false
		}
		for j, o := range cur[:i] {
			ol, or := o.left, o.left+widths[j]
			switch {
			case o.row == c.row && l < or+2*gap && ol < r+2*gap:
				return false // the labels overlap
			case o.row < c.row && xs[j] > l-gap && xs[j] < r+gap:
				return false // j's line crosses i's label
			case o.row > c.row && xs[i] > ol-gap && xs[i] < or+gap:
				return false // i's line crosses j's label
			}
		}
		return true
	}
	var try func(i, cost int)
	try = func(i, cost int) {
		if cost >= bestCost {
			return
		}
		if i == n {
			best, bestCost = slices.Clone(cur), cost
			return
		}
		for r := 0; r < rows; r++ {
			for _, end := range []bool{false, true} {
				cur[i] = markLabel{row: r, left: xs[i] + gap, end: end}
				c := cost + r*n*2 // one row higher beats every anchor
				if end {
					cur[i].left = xs[i] - gap - widths[i]
					c++
				}
				if clear(i) {
					try(i+1, c)
				}
			}
		}
	}
	try(0, 0)
	if best != nil {
		return best
	}
	for i := range cur {
		cur[i] = markLabel{row: min(i, rows-1), left: xs[i] + gap}
		if cur[i].left+widths[i] > width {
			cur[i] = markLabel{row: min(i, rows-1), left: xs[i] - gap - widths[i], end: true}
		}
	}
	return cur
}

// kindColor is the colour of a benchmark's kind on the report's charts.
func kindColor(k benchKind) string {
	switch k {
	case kindWrite:
		return palette[0]
	case kindRead:
		return palette[2]
	}
	return "#7f7f7f"
}

// writeThroughputSVG draws one bar per benchmark that ran many
// operations: its operations per second, all threads together, on a log
// axis (bars start at the axis's left end, so only their ends compare),
// coloured by kind, each a link to the benchmark's section (anchor(i) for
// results[i]). The one-call benchmarks (compact, flush, stats) have no
// throughput to compare and are left out; it draws nothing when no
// benchmark is left.
func writeThroughputSVG(w io.Writer, results []*result, anchor func(i int) string) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	const (
		rowH  = 24
		plotL = 150
		plotR = 250 // room for the figures after the longest bar
		plotT = 34
		botM  = 46
	)
	var rs []int
	lo, hi := math.Inf(1), 0.0
	for i, r := range results {
		if r.Skipped != "" || r.Kind == kindOther || r.OpsPerSec <= 0 {
			continue
		}
		rs = append(rs, i)
		lo, hi = min(lo, r.OpsPerSec), max(hi, r.OpsPerSec)
	}
	if len(rs) == 0 {
		return nil
	}
	dec := logDecades(lo, hi)
	x0, x1 := math.Log10(dec[0]), math.Log10(dec[len(dec)-1])
	plotW := float64(repW - plotL - plotR)
	x := func(v float64) float64 { return plotL + (math.Log10(v)-x0)/(x1-x0)*plotW }
	plotH := len(rs) * rowH
	height := plotT + plotH + botM

	p(`<svg class="chart throughput" width="100%%" viewBox="0 0 %d %d" role="img" font-family="system-ui, Helvetica, Arial, sans-serif" font-size="12">`+"\n", repW, height)
	p(`<title>Operations per second of each benchmark</title>` + "\n")
	// The key.
	kx := float64(plotL)
	for _, k := range []struct {
		kind benchKind
		name string
	}{{kindWrite, "writes"}, {kindRead, "reads"}} {
		p(`<rect x="%.1f" y="10" width="14" height="10" fill="%s"/><text x="%.1f" y="19" fill="#222">%s</text>`, kx, kindColor(k.kind), kx+19, esc(k.name))
		kx += 19 + 6.6*float64(len(k.name)) + 22
	}
	p("\n")
	p(`<g %s>`, gridSty)
	for _, d := range dec {
		p(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>`, x(d), x(d), plotT, plotT+plotH)
	}
	p("</g>\n")
	for row, i := range rs {
		r := results[i]
		yc := float64(plotT + row*rowH + rowH/2)
		p(`<a href="#%s"><g class="bar">`, anchor(i))
		p(`<text x="%d" y="%.1f" text-anchor="end" fill="#222">%s</text>`, plotL-8, yc+4, esc(r.Name))
		p(`<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="%s" data-ops-per-sec="%g"><title>%s: %s ops/s, %.3f µs/op</title></rect>`,
			plotL, yc-8, max(x(r.OpsPerSec)-plotL, 1), 16, kindColor(r.Kind), r.OpsPerSec, esc(r.Name), thousands(int(math.Round(r.OpsPerSec))), r.MicrosPerOp)
		p(`<text x="%.1f" y="%.1f" fill="#222">%s ops/s · %s µs/op</text>`, x(r.OpsPerSec)+6, yc+4, thousands(int(math.Round(r.OpsPerSec))), fmtSig(r.MicrosPerOp))
		p("</g></a>\n")
	}
	p(`<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#555"/>`+"\n", plotL, plotL, plotT, plotT+plotH)
	p(`<line x1="%d" x2="%.1f" y1="%d" y2="%d" stroke="#555"/>`+"\n", plotL, plotL+plotW, plotT+plotH, plotT+plotH)
	p(`<g text-anchor="middle" font-size="%d" fill="#444">`, repTickSz)
	for _, d := range dec {
		p(`<text x="%.1f" y="%d">%s</text>`, x(d), plotT+plotH+16, rateLabel(d))
	}
	p("</g>\n")
	p(`<text x="%.1f" y="%d" text-anchor="middle" fill="#222">operations per second, all threads (log scale; longer is faster)</text>`+"\n", plotL+plotW/2, plotT+plotH+38)
	p("</svg>\n")
	return bw.Flush()
}

// rateLabel writes a power of ten with an SI suffix: 1, 10, 100, 1k,
// 10k, 100k, 1M, 10M...
func rateLabel(v float64) string {
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= u.div {
			return strconv.FormatFloat(v/u.div, 'g', 3, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// fmtSig writes v with three significant digits, without an exponent for
// the values a µs/op takes (0.001 to 10^9).
func fmtSig(v float64) string {
	if v <= 0 {
		return "0"
	}
	d := max(0, 2-int(math.Floor(math.Log10(v))))
	return strconv.FormatFloat(v, 'f', d, 64)
}

// writeSpeedupSVG draws the no-filter comparison's rounds: each round's
// speedup (no-filter time / filter time) a dot on a log axis, one row a
// round, the range of the rounds shaded, the median a line, and 1 (no
// effect) a dark line.
func writeSpeedupSVG(w io.Writer, fe *filterEffect) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	const (
		rowH  = 18
		plotT = 36 // room above for the key
		botM  = 46
	)
	if len(fe.Speedups) == 0 {
		return nil
	}
	lo, hi := min(fe.Low, 1), max(fe.High, 1)
	// Pad the axis by a tenth of its span each side, and make it at least
	// 0.5x..2x wide around 1 so that a tight range does not look wide.
	span := math.Log10(hi / lo)
	l0 := math.Min(math.Log10(lo)-0.1*span-0.02, math.Log10(0.5))
	l1 := math.Max(math.Log10(hi)+0.1*span+0.02, math.Log10(2))
	plotW := float64(repW - repPlotL - repPlotR)
	x := func(v float64) float64 { return repPlotL + (math.Log10(v)-l0)/(l1-l0)*plotW }
	plotH := len(fe.Speedups) * rowH
	height := plotT + plotH + botM

	p(`<svg class="chart speedup" width="100%%" viewBox="0 0 %d %d" role="img" font-family="system-ui, Helvetica, Arial, sans-serif" font-size="12">`+"\n", repW, height)
	p(`<title>readmissing speedup from the filter, per round</title>` + "\n")
	// The key: what each mark means.
	kx := float64(repPlotL)
	key := func(mark string, off float64, text string) {
		p(mark, kx+off)
		p(`<text x="%.1f" y="19" fill="#222">%s</text>`, kx+20, esc(text))
		kx += 20 + 6.4*float64(len([]rune(text))) + 24
	}
	key(`<circle cx="%.1f" cy="15" r="4" fill="`+palette[0]+`"/>`, 7, "one round")
	key(`<rect x="%.1f" y="8" width="14" height="14" fill="`+bandFill+`"/>`, 0, "range of the rounds")
	key(`<rect x="%.1f" y="8" width="3" height="14" fill="`+palette[1]+`"/>`, 6, fmt.Sprintf("median %.2fx", fe.Speedup))
	key(`<rect x="%.1f" y="8" width="2" height="14" fill="#222"/>`, 6, "1x: no effect")
	p("\n")
	p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>range of the rounds: %.2fx to %.2fx</title></rect>`+"\n",
		x(fe.Low), plotT, max(x(fe.High)-x(fe.Low), 1), plotH, bandFill, fe.Low, fe.High)
	// Ticks: 1, 2, 5 times each power of ten in range.
	var ticks []float64
	for e := math.Floor(l0); e <= math.Ceil(l1); e++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, e); math.Log10(v) >= l0 && math.Log10(v) <= l1 {
				ticks = append(ticks, v)
			}
		}
	}
	p(`<g %s>`, gridSty)
	for _, v := range ticks {
		p(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>`, x(v), x(v), plotT, plotT+plotH)
	}
	p("</g>\n")
	p(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#222" stroke-width="1.5"><title>1x: no effect</title></line>`+"\n", x(1), x(1), plotT-4, plotT+plotH+4)
	p(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="2"><title>median %.2fx</title></line>`+"\n", x(fe.Speedup), x(fe.Speedup), plotT, plotT+plotH, palette[1], fe.Speedup)
	p(`<g text-anchor="end" font-size="%d" fill="#444">`, repTickSz)
	for i, s := range fe.Speedups {
		yc := float64(plotT + i*rowH + rowH/2)
		p(`<text x="%d" y="%.1f">round %d</text>`, repPlotL-6, yc+4, i+1)
		p(`<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"><title>round %d: %.2fx</title></circle>`, x(s), yc, markR+0.8, palette[0], i+1, s)
	}
	p("</g>\n")
	p(`<rect x="%d" y="%d" width="%.1f" height="%d" %s/>`+"\n", repPlotL, plotT, plotW, plotH, frameSty)
	p(`<g text-anchor="middle" font-size="%d" fill="#444">`, repTickSz)
	for _, v := range ticks {
		p(`<text x="%.1f" y="%d">%gx</text>`, x(v), plotT+plotH+16, v)
	}
	p("</g>\n")
	p(`<text x="%.1f" y="%d" text-anchor="middle" fill="#222">speedup: time per absent-key lookup without the filter / with it (log scale; right of 1x: the filter helps)</text>`+"\n",
		repPlotL+plotW/2, plotT+plotH+38)
	p("</svg>\n")
	return bw.Flush()
}

// share is one part of a stacked bar of writeSharesSVG.
type share struct {
	label string
	n     int64
	color string
	show  string // n as the key gives it; "": n with thousands separators
}

// shown is s.n as the key of writeSharesSVG gives it.
func (s share) shown() string {
	if s.show != "" {
		return s.show
	}
	return thousands(int(s.n))
}

// shareRow is one stacked bar: what its total counts and its parts.
type shareRow struct {
	title string
	parts []share
}

// writeSharesSVG draws each row as a bar split into its parts in
// proportion to their counts, with a key under it that gives each part's
// count and share; a row whose parts are all zero says so instead.
func writeSharesSVG(w io.Writer, class string, rows []shareRow) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	const (
		plotL = 150
		rowH  = 50
		barH  = 18
		topM  = 6
	)
	plotW := float64(repW - plotL - repPlotR)
	height := topM + len(rows)*rowH
	p(`<svg class="chart %s" width="100%%" viewBox="0 0 %d %d" role="img" font-family="system-ui, Helvetica, Arial, sans-serif" font-size="12">`+"\n", esc(class), repW, height)
	for i, r := range rows {
		y0 := float64(topM + i*rowH)
		var total int64
		for _, s := range r.parts {
			total += s.n
		}
		p(`<text x="%d" y="%.1f" text-anchor="end" fill="#222">%s</text>`, plotL-8, y0+barH-5, esc(r.title))
		if total == 0 {
			p(`<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="none" stroke="#bbb" stroke-dasharray="3,3"/>`, plotL, y0, plotW, barH)
			p(`<text x="%.1f" y="%.1f" fill="#666">none</text>`+"\n", float64(plotL+8), y0+barH-5)
			continue
		}
		bx := float64(plotL)
		for _, s := range r.parts {
			if s.n == 0 {
				continue
			}
			sw := plotW * float64(s.n) / float64(total)
			p(`<rect x="%.2f" y="%.1f" width="%.2f" height="%d" fill="%s" data-n="%d"><title>%s: %s (%.1f%%)</title></rect>`,
				bx, y0, sw, barH, s.color, s.n, esc(s.label), esc(s.shown()), 100*float64(s.n)/float64(total))
			bx += sw
		}
		p(`<rect x="%d" y="%.1f" width="%.1f" height="%d" %s/>`+"\n", plotL, y0, plotW, barH, frameSty)
		kx := float64(plotL)
		for _, s := range r.parts {
			text := fmt.Sprintf("%s %s (%.1f%%)", s.label, s.shown(), 100*float64(s.n)/float64(total))
			p(`<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f" fill="#222">%s</text>`,
				kx, y0+barH+7, s.color, kx+14, y0+barH+16, esc(text))
			kx += 14 + 6.4*float64(len([]rune(text))) + 18
		}
		p("\n")
	}
	p("</svg>\n")
	return bw.Flush()
}
