package train

import (
	"fmt"
	"math"
	"strings"
)

// Chart draws the headline figure of each step (the loss of SFT, the
// reward of RL) as a column chart.
func Chart[M Record](steps []M, width int) string {
	if len(steps) == 0 {
		return ""
	}
	vals := make([]float64, len(steps))
	name := ""
	for i, m := range steps {
		name, vals[i] = m.Headline()
	}
	return ColumnChart(vals, name, width, 8)
}

// ColumnChart draws vals as columns of block characters, height rows tall,
// at most width columns wide (steps are averaged into columns), labelled
// "what by step".
func ColumnChart(vals []float64, what string, width, height int) string {
	if len(vals) == 0 {
		return ""
	}
	const label = 10
	pts := columns(vals, min(len(vals), max(width-label, 1)))
	top, bottom := pts[0], pts[0]
	for _, v := range pts {
		top, bottom = math.Max(top, v), math.Min(bottom, v)
	}
	span := top - bottom
	if span == 0 {
		span = 1
	}
	blocks := []rune(" ▁▂▃▄▅▆▇█")
	var b strings.Builder
	for row := height - 1; row >= 0; row-- {
		switch row {
		case height - 1:
			fmt.Fprintf(&b, "%9.4g ", top)
		case 0:
			fmt.Fprintf(&b, "%9.4g ", bottom)
		default:
			b.WriteString(strings.Repeat(" ", label))
		}
		for _, v := range pts {
			eighths := int(math.Round((v-bottom)/span*float64(height*8-1))) + 1
			b.WriteRune(blocks[min(max(eighths-row*8, 0), 8)])
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%s %s by step (1–%d)", strings.Repeat(" ", label-1), what, len(vals))
	return b.String()
}

// columns averages vals into cols consecutive groups.
func columns(vals []float64, cols int) []float64 {
	pts := make([]float64, cols)
	for c := range cols {
		lo, hi := c*len(vals)/cols, (c+1)*len(vals)/cols
		s := 0.0
		for _, v := range vals[lo:hi] {
			s += v
		}
		pts[c] = s / float64(hi-lo)
	}
	return pts
}
