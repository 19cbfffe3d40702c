package console

import (
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// maxRuns is how many runs the runs page lists (the newest).
const maxRuns = 200

// activeWithin: a run that trained or was used this recently is active.
const activeWithin = 2 * time.Minute

// runRow is one line of the runs page.
type runRow struct {
	ID, URL, BaseModel, Owner, Rank, LastCheckpoint, Updated, Status, Loss string
	Spark                                                                  string // sparkline points of the loss
}

func (c *Console) runsPage(w http.ResponseWriter, r *http.Request, s *session) {
	rows, total, err := c.runRows(r, s)
	p := page{Title: "Runs", Nav: "runs", CSRF: s.csrf}
	if err != nil {
		p.Error = apiMessage(err)
	}
	c.write(w, http.StatusOK, p, runsView(rows, total))
}

// runsTable is the runs table alone, which the script polls.
func (c *Console) runsTable(w http.ResponseWriter, r *http.Request, s *session) {
	rows, total, err := c.runRows(r, s)
	if err != nil {
		c.apiFailure(w, s, err)
		return
	}
	var h hw
	runsTableView(&h, rows, total)
	c.send(w, http.StatusOK, &h)
}

// runRows lists the user's newest runs, most recently used first.
func (c *Console) runRows(r *http.Request, s *session) ([]runRow, int, error) {
	runs, total, err := ops.ListRuns(r.Context(), s.client, maxRuns, "owned", nil)
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].LastRequestTime.After(runs[j].LastRequestTime) })
	rows := make([]runRow, 0, len(runs))
	for i := range runs {
		rows = append(rows, c.runRow(&runs[i]))
	}
	return rows, total, err
}

func (c *Console) runRow(run *tinkerapi.TrainingRun) runRow {
	row := runRow{ID: run.TrainingRunID, URL: "/console/runs/" + url.PathEscape(run.TrainingRunID), BaseModel: run.BaseModel,
		Owner: run.ModelOwner, Rank: "—", LastCheckpoint: "—", Updated: c.ago(run.LastRequestTime)}
	if run.LoraRank != nil {
		row.Rank = strconv.Itoa(*run.LoraRank)
	}
	if run.LastCheckpoint != nil {
		row.LastCheckpoint = run.LastCheckpoint.CheckpointID
	}
	curves, trained := c.curves.Run(run.TrainingRunID, run.ModelOwner)
	row.Status = c.status(run, trained)
	if len(curves) > 0 && curves[0].Name == "loss" {
		row.Loss = num(curves[0].Y[len(curves[0].Y)-1])
		row.Spark = sparkline(curves[0].X, curves[0].Y)
	}
	return row
}

// status is "failed", "training" (a step in the last two minutes),
// "active" (used in the last two minutes) or "idle".
func (c *Console) status(run *tinkerapi.TrainingRun, trained time.Time) string {
	now := c.opts.Now()
	switch {
	case run.Corrupted:
		return "failed"
	case !trained.IsZero() && now.Sub(trained) < activeWithin:
		return "training"
	case now.Sub(run.LastRequestTime) < activeWithin:
		return "active"
	}
	return "idle"
}

// ckptRow is one line of a run's checkpoints.
type ckptRow struct {
	ID, Type, Size, Created, Expires, Path, URL string
	Public                                      bool
}

type runData struct {
	Run         runRow
	Checkpoints []ckptRow
	Charts      chartsData
}

func (c *Console) runPage(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("run")
	run, err := s.client.GetTrainingRun(r.Context(), id, "owned")
	if err != nil {
		c.apiFailure(w, s, err)
		return
	}
	p := page{Title: "Run " + id, Nav: "runs", CSRF: s.csrf, Notice: notice(r.URL.Query().Get("done"))}
	cps, _, err := ops.ListCheckpoints(r.Context(), s.client, id, 0, nil)
	if err != nil {
		p.Error = apiMessage(err)
	}
	d := runData{Run: c.runRow(run), Charts: c.runChartsData(run)}
	for _, cp := range cps {
		d.Checkpoints = append(d.Checkpoints, c.ckptRow(id, cp))
	}
	c.write(w, http.StatusOK, p, runView(d, s.csrf))
}

func (c *Console) ckptRow(runID string, cp tinkerapi.Checkpoint) ckptRow {
	row := ckptRow{ID: cp.CheckpointID, Type: cp.CheckpointType, Size: render.SizePtr(cp.SizeBytes), Public: cp.Public,
		Created: c.ago(cp.Time), Expires: "never", Path: cp.TinkerPath}
	if cp.ExpiresAt != nil {
		row.Expires = c.ago(*cp.ExpiresAt)
	}
	if p, err := tinkerapi.ParsePath(cp.TinkerPath); err == nil {
		row.URL = checkpointURL(runID, p.Kind, p.Name)
	}
	return row
}

func checkpointURL(runID, kind, name string) string {
	return "/console/runs/" + url.PathEscape(runID) + "/checkpoints/" + url.PathEscape(kind) + "/" + url.PathEscape(name)
}

// chartsData is the live block of a run page: its curves and where the
// script fetches them again.
type chartsData struct {
	URL    string
	Charts []Chart
}

func (c *Console) runChartsData(run *tinkerapi.TrainingRun) chartsData {
	curves, _ := c.curves.Run(run.TrainingRunID, run.ModelOwner)
	return chartsData{URL: "/console/runs/" + url.PathEscape(run.TrainingRunID) + "/charts", Charts: charts(curves)}
}

// runCharts is the charts block alone, which the script polls.
func (c *Console) runCharts(w http.ResponseWriter, r *http.Request, s *session) {
	run, err := s.client.GetTrainingRun(r.Context(), r.PathValue("run"), "owned")
	if err != nil {
		c.apiFailure(w, s, err)
		return
	}
	var h hw
	chartsView(&h, c.runChartsData(run))
	c.send(w, http.StatusOK, &h)
}

// apiMessage is an API error in one line (the client keeps keys out).
func apiMessage(err error) string { return ops.APIErr(err).Error() }

// apiFailure answers a failed lookup: 404 for what the user cannot see
// (another user's run looks exactly like a missing one), else the error.
func (c *Console) apiFailure(w http.ResponseWriter, s *session, err error) {
	status := http.StatusBadGateway
	var ae *tinkerapi.APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusForbidden) {
		c.write(w, http.StatusNotFound, page{Title: "Not found", CSRF: s.csrf, Error: "Not found: no run or checkpoint of yours has that name."}, backToRuns)
		return
	}
	var ue *tinkerapi.UserError
	if errors.As(err, &ue) {
		status = http.StatusBadRequest
	}
	c.write(w, status, page{Title: "Error", CSRF: s.csrf, Error: apiMessage(err)}, backToRuns)
}

// ago is a time as "3 minutes ago" from now.
func (c *Console) ago(t time.Time) string { return render.Ago(t, c.opts.Now()) }
