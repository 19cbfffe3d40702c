package console

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Chart is one curve laid out for the SVG in charts.html: the polyline's
// points in pixels and the axis labels.
type Chart struct {
	Title    string
	Points   string // "x,y x,y …" for <polyline points>
	N        int    // number of points (the browser test counts them)
	Last     string // the newest value
	LastX    float64
	LastY    float64
	YTicks   []Tick
	XTicks   []Tick
	W, H     int
	Left     int
	Bottom   int
	PlotTop  int
	PlotRght int
}

// Tick is one axis label at a pixel position.
type Tick struct {
	At    float64
	Label string
}

const (
	chartW, chartH         = 520, 200
	padL, padR, padT, padB = 64, 12, 12, 28
)

// newChart lays out y by x (same length, at least one point).
func newChart(title string, xs, ys []float64) Chart {
	x0, x1 := bounds(xs)
	y0, y1 := bounds(ys)
	if x1 == x0 {
		x0, x1 = x0-1, x1+1
	}
	if y1 == y0 {
		pad := math.Max(math.Abs(y0)*0.05, 1e-9)
		y0, y1 = y0-pad, y1+pad
	}
	px := func(x float64) float64 { return padL + (x-x0)/(x1-x0)*(chartW-padL-padR) }
	py := func(y float64) float64 { return chartH - padB - (y-y0)/(y1-y0)*(chartH-padT-padB) }
	var b strings.Builder
	for i := range xs {
		fmt.Fprintf(&b, "%.1f,%.1f ", px(xs[i]), py(ys[i]))
	}
	n := len(xs)
	ch := Chart{Title: title, Points: strings.TrimSpace(b.String()), N: n, Last: num(ys[n-1]),
		LastX: px(xs[n-1]), LastY: py(ys[n-1]), W: chartW, H: chartH, Left: padL, Bottom: chartH - padB, PlotTop: padT, PlotRght: chartW - padR}
	for _, y := range []float64{y0, (y0 + y1) / 2, y1} {
		ch.YTicks = append(ch.YTicks, Tick{py(y), num(y)})
	}
	for _, x := range []float64{x0, x1} {
		ch.XTicks = append(ch.XTicks, Tick{px(x), strconv.FormatFloat(math.Round(x), 'f', -1, 64)})
	}
	return ch
}

// Sparklines in the runs table are this many pixels.
const sparkW, sparkH = 120, 28

// sparkline is the polyline points of ys by xs in a sparkW×sparkH box.
func sparkline(xs, ys []float64) string {
	xs, ys = finite(xs, ys)
	x0, x1 := bounds(xs)
	y0, y1 := bounds(ys)
	var b strings.Builder
	for i := range xs {
		x, y := 0.0, float64(sparkH)/2
		if x1 > x0 {
			x = (xs[i] - x0) / (x1 - x0) * sparkW
		}
		if y1 > y0 {
			y = 2 + (y1-ys[i])/(y1-y0)*(sparkH-4)
		}
		fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
	}
	return strings.TrimSpace(b.String())
}

// bounds is the least and greatest of vs, ignoring NaN and ±Inf.
func bounds(vs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if lo > hi {
		return 0, 0
	}
	return lo, hi
}

// num shows a metric compactly: 4 significant digits.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// charts lays out every curve that has points.
func charts(curves []Named) []Chart {
	out := make([]Chart, 0, len(curves))
	for _, c := range curves {
		xs, ys := finite(c.X, c.Y)
		if len(xs) > 0 {
			out = append(out, newChart(c.Name, xs, ys))
		}
	}
	return out
}

// finite drops the points whose value is NaN or ±Inf.
func finite(xs, ys []float64) ([]float64, []float64) {
	var fx, fy []float64
	for i, y := range ys {
		if !math.IsNaN(y) && !math.IsInf(y, 0) && !math.IsNaN(xs[i]) && !math.IsInf(xs[i], 0) {
			fx, fy = append(fx, xs[i]), append(fy, y)
		}
	}
	return fx, fy
}
