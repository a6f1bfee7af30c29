package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
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
