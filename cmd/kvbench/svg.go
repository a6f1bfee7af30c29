package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// Chart geometry, in SVG user units (pixels).
const (
	svgW, svgH    = 980, 600
	plotL, plotR  = 90, 740 // left and right edges of the plot area
	plotT, plotB  = 64, 530 // top and bottom edges
	legendX       = 760
	floorRate     = 1e-9 // the log axis never goes below this
	lowerBoundSty = `stroke="#888" stroke-width="1.5" stroke-dasharray="2,4"`
)

// dashes tells overlapping theory lines apart.
var dashes = []string{"8,4", "3,3", "12,3,3,3", "1,3"}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// writeLabSVG draws the filter laboratory's rows: the false-positive rate
// on a log axis against bits per key, each family's theory as a dashed
// line and its measurements as points, both at the actual bits per key of
// the filters built, and the 2^-bits lower bound of any filter as a dotted line. A
// measurement of zero false positives is drawn hollow on the axis floor,
// since 0 has no place on a log axis.
func writeLabSVG(w io.Writer, rows []labRow, title string, probes int) error {
	bw := bufio.NewWriter(w)
	fams := families(rows)

	// Axes: x from 0 to past the largest budget or size, y from the
	// decade under the smallest rate drawn up to 1.
	xmax := 1.0
	lo := 1.0
	for _, r := range rows {
		xmax = max(xmax, r.Budget, r.ActualBits)
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
	x := func(v float64) float64 { return plotL + v/xmax*(plotR-plotL) }
	y := func(v float64) float64 {
		v = max(v, ymin)
		return plotT + (0-math.Log10(v))/(0-math.Log10(ymin))*(plotB-plotT)
	}

	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="13">`+"\n", svgW, svgH, svgW, svgH)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	head, sub, _ := strings.Cut(title, " (")
	p(`<text x="%d" y="24" text-anchor="middle" font-size="16" font-weight="bold">%s</text>`+"\n", svgW/2, esc(head))
	if sub != "" {
		p(`<text x="%d" y="44" text-anchor="middle" font-size="13" fill="#444">(%s</text>`+"\n", svgW/2, esc(sub))
	}

	// Grid and tick labels.
	p(`<g stroke="#e4e4e4" stroke-width="1">` + "\n")
	for d := ymin; d <= 1.0001; d *= 10 {
		for m := 2.0; m < 10 && d < 0.99; m++ {
			p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#f3f3f3"/>`+"\n", plotL, plotR, y(d*m), y(d*m))
		}
		p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`+"\n", plotL, plotR, y(d), y(d))
	}
	for v := 0.0; v <= xmax; v++ {
		p(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>`+"\n", x(v), x(v), plotT, plotB)
	}
	p("</g>\n")
	p(`<g text-anchor="end">` + "\n")
	for d := ymin; d <= 1.0001; d *= 10 {
		p(`<text x="%d" y="%.1f">%s</text>`+"\n", plotL-8, y(d)+4, decadeLabel(d))
	}
	p("</g>\n")
	p(`<g text-anchor="middle">` + "\n")
	step := math.Max(2, 2*math.Ceil(xmax/24))
	for v := 0.0; v <= xmax; v += step {
		p(`<text x="%.1f" y="%d">%g</text>`+"\n", x(v), plotB+20, v)
	}
	p("</g>\n")
	p(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", plotL, plotT, plotR-plotL, plotB-plotT)
	p(`<text x="%d" y="%d" text-anchor="middle" font-size="14">bits per key (filter bits / keys in the filter)</text>`+"\n", (plotL+plotR)/2, plotB+50)
	p(`<text transform="translate(24 %d) rotate(-90)" text-anchor="middle" font-size="14">false-positive rate (log scale)</text>`+"\n", (plotT+plotB)/2)

	// Clip lines and points to the plot area.
	p(`<defs><clipPath id="plot"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath></defs>`+"\n", plotL, plotT-6, plotR-plotL+6, plotB-plotT+12)
	p(`<g clip-path="url(#plot)">` + "\n")

	// The lower bound of any filter: 2^-bits.
	var lb []string
	for v := 1.0; v <= xmax; v += 0.25 {
		lb = append(lb, fmt.Sprintf("%.1f,%.1f", x(v), y(math.Pow(2, -v))))
	}
	p(`<polyline fill="none" %s points="%s"/>`+"\n", lowerBoundSty, strings.Join(lb, " "))

	for i, fam := range fams {
		color := palette[i%len(palette)]
		fr := sortedByBudget(rows, fam)
		var pts []string
		for _, r := range sortedByActual(fr) {
			if !math.IsNaN(r.Theory) && r.Theory > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(r.ActualBits), y(r.Theory)))
			}
		}
		if len(pts) > 1 {
			p(`<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" opacity="0.8" points="%s"/>`+"\n", color, dashes[i%len(dashes)], strings.Join(pts, " "))
		}
		for _, r := range fr {
			if len(pts) == 1 && !math.IsNaN(r.Theory) && r.Theory > 0 {
				// One filter: its theory is one value, drawn as a short bar.
				p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="4,3"/>`+"\n",
					x(r.ActualBits)-14, x(r.ActualBits)+14, y(r.Theory), y(r.Theory), color)
			}
			fill := color
			if r.FalsePositives == 0 {
				fill = "white"
			}
			tip := fmt.Sprintf("%s: budget %g, actual %.2f bits/key, measured %s (%d of %d), theory %s, build %.1f ns/key, probe %.1f ns",
				r.Family, r.Budget, r.ActualBits, pct(r.Measured), r.FalsePositives, r.Absent, theoryText(r.Theory), r.BuildNs, r.ProbeNs)
			p(`<g><title>%s</title>%s</g>`+"\n", esc(tip), marker(i, x(r.ActualBits), y(r.Measured), color, fill))
		}
	}
	p("</g>\n")

	// Legend: one row per family (its marker over its theory line).
	ly := float64(plotT + 10)
	p(`<text x="%d" y="%.1f" font-weight="bold">filters</text>`+"\n", legendX, ly)
	ly += 24
	for i, fam := range fams {
		color := palette[i%len(palette)]
		p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>%s<text x="%d" y="%.1f">%s</text>`+"\n",
			legendX, legendX+34, ly-4, ly-4, color, dashes[i%len(dashes)], marker(i, legendX+17, ly-4, color, color), legendX+42, ly, esc(fam))
		ly += 22
	}
	p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" %s/><text x="%d" y="%.1f">lower bound, 2<tspan dy="-6" font-size="10">&#x2212;bits</tspan></text>`+"\n",
		legendX, legendX+34, ly-4, ly-4, lowerBoundSty, legendX+42, ly)
	ly += 30
	notes := []string{
		"points: measured rate",
		"dashed lines: theory",
		"hollow point: no false",
		"positive seen (drawn on",
		"the floor of the axis)",
		"",
		"x: each filter\u2019s actual",
		"size in bits per key",
	}
	for _, n := range notes {
		p(`<text x="%d" y="%.1f" font-size="12" fill="#444">%s</text>`+"\n", legendX, ly, esc(n))
		ly += 16
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

// marker draws family i's point shape: circle, square, triangle, diamond,
// then again.
func marker(i int, cx, cy float64, stroke, fill string) string {
	st := fmt.Sprintf(`fill="%s" stroke="%s" stroke-width="1.5"`, fill, stroke)
	switch i % 4 {
	case 0:
		return fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="4.5" %s/>`, cx, cy, st)
	case 1:
		return fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="8" height="8" %s/>`, cx-4, cy-4, st)
	case 2:
		return fmt.Sprintf(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" %s/>`, cx, cy-5.5, cx+5, cy+4, cx-5, cy+4, st)
	}
	return fmt.Sprintf(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" %s/>`, cx, cy-6, cx+5, cy, cx, cy+6, cx-5, cy, st)
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
