package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// Chart geometry, in SVG user units (pixels): a grid of small panels, one
// per filter family, each with the false-positive rate on a log axis; then
// one wide panel of probe time.
const (
	svgW          = 1000
	panelCols     = 4
	panelW        = 214 // a small panel's plot area
	panelH        = 170
	panelGapX     = 12
	panelGapY     = 58
	gridL, gridT  = 70, 92 // top left of the first panel's plot area
	speedH        = 260    // the probe-time panel's plot area
	floorRate     = 1e-9   // the log axis never goes below this
	lowerBoundSty = `stroke="#999" stroke-width="1" stroke-dasharray="2,3"`
	theorySty     = `stroke="#222" stroke-width="1" fill="none"`
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// writeLabSVG draws the filter laboratory's rows in two charts. The first
// is a grid of small panels, one per family, on shared axes: the
// false-positive rate (log scale) against the actual bits per key of each
// filter built, theory as a thin black line, each measurement as a
// colored dot (hollow on the axis floor when no false positive was seen),
// and the 2^-bits lower bound of any filter dotted. Separate panels keep
// families whose curves coincide (the Bloom filters from 1 to 10 bits per
// key) from hiding one another. The second chart is the other side of the
// trade-off: nanoseconds per absent-key probe against bits per key, one
// line of dots per family.
func writeLabSVG(w io.Writer, rows []labRow, title string, probes int) error {
	bw := bufio.NewWriter(w)
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
	lo = min(lo, 1/float64(max(probes, 1)))
	xmax = math.Ceil(xmax + 1)
	if int(xmax)%2 == 1 {
		xmax++
	}
	ymin := math.Pow(10, math.Floor(math.Log10(max(lo, floorRate))))
	rowsN := (len(fams) + panelCols - 1) / panelCols
	speedT := gridT + rowsN*(panelH+panelGapY) + 40
	height := speedT + speedH + 70

	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", svgW, height, svgW, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	head, sub, _ := strings.Cut(title, " (")
	p(`<text x="%d" y="22" text-anchor="middle" font-size="16" font-weight="bold">%s</text>`+"\n", svgW/2, esc(head))
	if sub != "" {
		p(`<text x="%d" y="40" text-anchor="middle" fill="#444">(%s</text>`+"\n", svgW/2, esc(sub))
	}
	// The key to both charts' marks.
	p(`<g font-size="12" fill="#222">`)
	p(`<line x1="%d" x2="%d" y1="58" y2="58" %s/><text x="%d" y="62">theory</text>`, 120, 150, theorySty, 156)
	p(`<circle cx="%d" cy="58" r="3.5" fill="#1f77b4"/><text x="%d" y="62">measured</text>`, 240, 250)
	p(`<circle cx="%d" cy="58" r="3.5" fill="white" stroke="#1f77b4" stroke-width="1.2"/><text x="%d" y="62">no false positive seen (on the axis floor)</text>`, 335, 345)
	p(`<line x1="%d" x2="%d" y1="58" y2="58" %s/><text x="%d" y="62">lower bound of any filter, 2<tspan dy="-5" font-size="9">&#x2212;bits</tspan></text>`, 610, 640, lowerBoundSty, 646)
	p("</g>\n")

	for i, fam := range fams {
		px := float64(gridL + (i%panelCols)*(panelW+panelGapX))
		py := float64(gridT + (i/panelCols)*(panelH+panelGapY))
		x := func(v float64) float64 { return px + v/xmax*panelW }
		y := func(v float64) float64 {
			v = max(v, ymin)
			return py + (0-math.Log10(v))/(0-math.Log10(ymin))*panelH
		}
		color := palette[i%len(palette)]
		p(`<text x="%.1f" y="%.1f" font-weight="bold" fill="%s">%s</text>`+"\n", px, py-6, color, esc(fam))
		// Grid: every decade, every 2 bits per key.
		p(`<g stroke="#ececec" stroke-width="1">`)
		for d := ymin; d <= 1.0001; d *= 10 {
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, px, px+panelW, y(d), y(d))
		}
		for v := 0.0; v <= xmax; v += 2 {
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, x(v), x(v), py, py+panelH)
		}
		p("</g>\n")
		if i%panelCols == 0 {
			p(`<g text-anchor="end" font-size="10" fill="#444">`)
			for d := 1.0; d >= ymin*0.999; d /= 100 {
				p(`<text x="%.1f" y="%.1f">%s</text>`, px-4, y(d)+3, decadeLabel(d))
			}
			p("</g>\n")
		}
		p(`<g text-anchor="middle" font-size="10" fill="#444">`)
		for v := 0.0; v <= xmax; v += math.Max(4, 4*math.Ceil(xmax/24)) {
			p(`<text x="%.1f" y="%.1f">%g</text>`, x(v), py+panelH+13, v)
		}
		p("</g>\n")
		p(`<rect x="%.1f" y="%.1f" width="%d" height="%d" fill="none" stroke="#555"/>`+"\n", px, py, panelW, panelH)
		p(`<defs><clipPath id="panel%d"><rect x="%.1f" y="%.1f" width="%d" height="%d"/></clipPath></defs>`+"\n", i, px-5, py-5, panelW+10, panelH+10)
		p(`<g clip-path="url(#panel%d)">`+"\n", i)
		var lb []string
		for v := 1.0; v <= xmax; v += 0.25 {
			lb = append(lb, fmt.Sprintf("%.1f,%.1f", x(v), y(math.Pow(2, -v))))
		}
		p(`<polyline fill="none" %s points="%s"/>`+"\n", lowerBoundSty, strings.Join(lb, " "))
		fr := sortedByActual(sortedByBudget(rows, fam))
		var pts []string
		for _, r := range fr {
			if !math.IsNaN(r.Theory) && r.Theory > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(r.ActualBits), y(r.Theory)))
			}
		}
		for _, r := range fr {
			fill, stroke := color, color
			if r.FalsePositives == 0 {
				fill = "white"
			}
			tip := fmt.Sprintf("%s: budget %g, actual %.2f bits/key, measured %s (%d of %d), theory %s, build %.1f ns/key, probe %.1f ns",
				r.Family, r.Budget, r.ActualBits, pct(r.Measured), r.FalsePositives, r.Absent, theoryText(r.Theory), r.BuildNs, r.ProbeNs)
			p(`<g><title>%s</title><circle cx="%.1f" cy="%.1f" r="3.5" fill="%s" stroke="%s" stroke-width="1.2"/></g>`+"\n",
				esc(tip), x(r.ActualBits), y(r.Measured), fill, stroke)
		}
		// Theory over the dots, thin, so a dot on its line shows it.
		if len(pts) > 1 {
			p(`<polyline %s points="%s"/>`+"\n", theorySty, strings.Join(pts, " "))
		}
		for _, r := range fr {
			if len(pts) == 1 && !math.IsNaN(r.Theory) && r.Theory > 0 {
				p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" %s/>`+"\n", x(r.ActualBits)-10, x(r.ActualBits)+10, y(r.Theory), y(r.Theory), theorySty)
			}
		}
		p("</g>\n")
	}
	lastRowB := gridT + (rowsN-1)*(panelH+panelGapY) + panelH
	p(`<text x="%d" y="%d" text-anchor="middle" font-size="13">bits per key (each filter's actual size / keys in it)</text>`+"\n",
		gridL+(panelCols*(panelW+panelGapX))/2, lastRowB+30)
	p(`<text transform="translate(18 %d) rotate(-90)" text-anchor="middle" font-size="13">false-positive rate (log scale)</text>`+"\n",
		(gridT+lastRowB)/2)

	// The speed side: ns per absent-key probe against bits per key.
	sw := panelCols*(panelW+panelGapX) - panelGapX - 170
	sx := func(v float64) float64 { return float64(gridL) + v/xmax*float64(sw) }
	nsTop := math.Ceil(nsMax/10) * 10
	sy := func(v float64) float64 { return float64(speedT) + (1-v/nsTop)*speedH }
	p(`<text x="%d" y="%d" font-size="15" font-weight="bold">Probe time against bits per key (ns per absent-key probe, best of the repeats)</text>`+"\n", gridL, speedT-14)
	p(`<g stroke="#ececec" stroke-width="1">`)
	for v := 0.0; v <= nsTop+0.1; v += nsTop / 5 {
		p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, gridL, gridL+sw, sy(v), sy(v))
	}
	for v := 0.0; v <= xmax; v += 2 {
		p(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>`, sx(v), sx(v), speedT, speedT+speedH)
	}
	p("</g>\n")
	p(`<g text-anchor="end" font-size="10" fill="#444">`)
	for v := 0.0; v <= nsTop+0.1; v += nsTop / 5 {
		p(`<text x="%d" y="%.1f">%.0f ns</text>`, gridL-4, sy(v)+3, v)
	}
	p("</g>\n")
	p(`<g text-anchor="middle" font-size="10" fill="#444">`)
	for v := 0.0; v <= xmax; v += 2 {
		p(`<text x="%.1f" y="%d">%g</text>`, sx(v), speedT+speedH+13, v)
	}
	p("</g>\n")
	p(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#555"/>`+"\n", gridL, speedT, sw, speedH)
	p(`<text x="%d" y="%d" text-anchor="middle" font-size="13">bits per key</text>`+"\n", gridL+sw/2, speedT+speedH+32)
	ly := float64(speedT + 10)
	for i, fam := range fams {
		color := palette[i%len(palette)]
		fr := sortedByActual(sortedByBudget(rows, fam))
		var pts []string
		for _, r := range fr {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(r.ActualBits), sy(r.ProbeNs)))
		}
		p(`<polyline fill="none" stroke="%s" stroke-width="1.2" opacity="0.7" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		for _, r := range fr {
			p(`<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`, sx(r.ActualBits), sy(r.ProbeNs), color)
		}
		p("\n")
		p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/><text x="%d" y="%.1f">%s</text>`+"\n",
			gridL+sw+14, gridL+sw+34, ly, ly, color, gridL+sw+40, ly+4, esc(fam))
		ly += 18
	}
	p("</svg>\n")
	return bw.Flush()
}

func theoryText(t float64) string {
	if math.IsNaN(t) {
		return "n/a"
	}
	return pct(t)
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

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
