package train

import (
	"strings"
	"testing"
)

func TestLossChart(t *testing.T) {
	got := ColumnChart([]float64{4, 3, 2, 1}, "loss", 80, 2)
	lines := strings.Split(got, "\n")
	if len(lines) != 3 || lines[2] != "          loss by step (1–4)" {
		t.Fatalf("chart has %d lines:\n%s", len(lines), got)
	}
	// Heights in eighths: 16, 11, 6 and 1 of 16 (the lowest keeps a sliver).
	if lines[0] != "        4 █▃  " || lines[1] != "        1 ██▆▁" {
		t.Errorf("chart:\n%s", got)
	}
}
