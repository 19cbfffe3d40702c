package console

import (
	"net/http"
	"strconv"
)

type logRow struct{ Dir, URL string }

func (c *Console) logsPage(w http.ResponseWriter, r *http.Request, s *session) {
	var rows []logRow
	for i, d := range c.logDirs() {
		rows = append(rows, logRow{d, "/console/logs/" + strconv.Itoa(i)})
	}
	c.write(w, http.StatusOK, page{Title: "Training logs", Nav: "logs", CSRF: s.csrf}, logsView(rows, len(c.opts.LogDirs) > 0))
}

// logDir is the log directory the request's index names, if any.
func (c *Console) logDir(r *http.Request) (string, bool) {
	dirs := c.logDirs()
	i, err := strconv.Atoi(r.PathValue("i"))
	if err != nil || i < 0 || i >= len(dirs) {
		return "", false
	}
	return dirs[i], true
}

type logData struct {
	Dir     string
	Charts  chartsData
	Metrics *Metrics
}

func (c *Console) logData(r *http.Request) (*logData, string, int) {
	dir, ok := c.logDir(r)
	if !ok {
		return nil, "No such log directory; see the list of training logs.", http.StatusNotFound
	}
	m, err := readMetrics(dir)
	if err != nil {
		return nil, "Cannot read the metrics of " + dir + ": " + err.Error(), http.StatusInternalServerError
	}
	return &logData{Dir: dir, Metrics: m, Charts: chartsData{URL: "/console/logs/" + r.PathValue("i") + "/charts", Charts: charts(m.Curves)}}, "", 0
}

func (c *Console) logPage(w http.ResponseWriter, r *http.Request, s *session) {
	d, msg, status := c.logData(r)
	if d == nil {
		c.write(w, status, page{Title: "Training log", Nav: "logs", CSRF: s.csrf, Error: msg}, nil)
		return
	}
	c.write(w, http.StatusOK, page{Title: "Training log " + d.Dir, Nav: "logs", CSRF: s.csrf}, logView(d))
}

func (c *Console) logCharts(w http.ResponseWriter, r *http.Request, s *session) {
	d, msg, status := c.logData(r)
	if d == nil {
		http.Error(w, msg, status)
		return
	}
	var h hw
	chartsView(&h, d.Charts)
	c.send(w, http.StatusOK, &h)
}
