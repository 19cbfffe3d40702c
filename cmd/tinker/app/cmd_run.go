package app

import (
	"fmt"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
)

// tinker run list|info, as the official CLI has them
// (docs/compat.md, "Listing runs and checkpoints").

var runCmd = &command{
	Name:    "run",
	Summary: "Manage training runs.",
	Help:    "Manage training runs.",
	Sub: []*command{
		{
			Name:    "list",
			Summary: "List training runs.",
			Flags: []flagSpec{
				{Long: "--limit", Kind: flagInt, Metavar: "INTEGER", Help: "Maximum number of runs to fetch (default: 20, 0 for all)."},
				{Long: "--columns", Short: "-c", Kind: flagString, Metavar: "TEXT", Help: runColumnsHelp},
			},
			API: runList,
		},
		{
			Name:    "info",
			Summary: "Show details of a training run.",
			Args:    []argSpec{{Name: "RUN_ID"}},
			API:     runInfo,
		},
	},
}

// runColumnsHelp is --columns' help: the keys of ops.RunColumns, written out
// so that the command table is static data (TestRunColumnsHelp keeps it in
// step).
const runColumnsHelp = "Comma-separated columns: id, model, owner, lora, updated, status, checkpoint, checkpoint_time."

func runColumnKeys() []string {
	keys := make([]string, len(ops.RunColumns))
	for i, col := range ops.RunColumns {
		keys[i] = col.Key
	}
	return keys
}

// runColumns validates -c before any network traffic, keeping order and
// duplicates; an unknown key goes through the catch-all (a kept quirk).
func runColumns(spec string) ([]int, error) {
	keys := ops.DefaultRunColumns
	if strings.TrimSpace(spec) != "" {
		keys = strings.Split(spec, ",")
	}
	var idx []int
	var bad []string
	for _, k := range keys {
		k = strings.TrimSpace(k)
		found := -1
		for i, col := range ops.RunColumns {
			if col.Key == k {
				found = i
			}
		}
		if found < 0 {
			bad = append(bad, k)
			continue
		}
		idx = append(idx, found)
	}
	if len(bad) > 0 {
		return nil, unexpected(fmt.Errorf("Unknown column(s): %s. Available: %s", strings.Join(bad, ", "), strings.Join(runColumnKeys(), ", ")))
	}
	return idx, nil
}

// moreSuffix is the title suffix when the listing was cut by --limit.
func moreSuffix(total, shown int) string {
	if total <= shown {
		return ""
	}
	return fmt.Sprintf(" (%d more not shown, use --limit to see more)", total-shown)
}

func runList(r *apiRun) error {
	cols, err := runColumns(r.str("columns"))
	if err != nil {
		return err
	}
	limit := r.intOr("limit", 20)
	c, err := r.preflight()
	if err != nil {
		return err
	}
	progress := func(target int) ops.Progress {
		label := fmt.Sprintf("Fetching %d training runs", target)
		if limit == 0 {
			label = "Fetching all training runs"
		}
		return r.bar(label, int64(target))
	}
	if r.jsonMode() {
		progress = nil
	}
	runs, total, err := ops.ListRuns(r.ctx, c, limit, "owned", progress)
	if err != nil {
		return err
	}
	if r.jsonMode() {
		list := make([]any, len(runs))
		for i := range runs {
			list[i] = ops.RunJSON(&runs[i])
		}
		return r.writeJSON(render.Object{{Key: "runs", Value: list}})
	}
	now := r.now()
	t := &render.Table{Title: ops.Plural(len(runs), "training run", "training runs") + moreSuffix(total, len(runs))}
	for _, i := range cols {
		t.Columns = append(t.Columns, render.Column{Header: ops.RunColumns[i].Header, Kind: ops.RunColumns[i].Kind})
	}
	for i := range runs {
		row := make([]string, len(cols))
		for j, ci := range cols {
			row[j] = ops.RunColumns[ci].Cell(&runs[i], now)
		}
		t.Rows = append(t.Rows, row)
	}
	return r.writeTable(t)
}

func runInfo(r *apiRun) error {
	c, err := r.preflight()
	if err != nil {
		return err
	}
	run, err := c.GetTrainingRun(r.ctx, r.args[0], "owned")
	if err != nil {
		return err
	}
	return r.show(&ops.Run{R: *run})
}

// show prints a value as JSON or as its vertical Property/Value table.
func (c *invocation) show(v interface {
	Record(now time.Time) *render.Record
	JSON() any
}) error {
	if c.jsonMode() {
		return c.writeJSON(v.JSON())
	}
	return c.writeTable(v.Record(c.now()).Table())
}
