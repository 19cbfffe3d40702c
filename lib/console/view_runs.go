package console

import "strconv"

func runsView(rows []runRow, total int) func(*hw) {
	return func(w *hw) {
		w.WriteString("<h1>Training runs</h1>\n")
		runsTableView(w, rows, total)
	}
}

// runsTableView is the live block of the runs page.
func runsTableView(w *hw, rows []runRow, total int) {
	w.WriteString(`<div class="runs" data-live="/console/runs-table">` + "\n")
	defer w.WriteString("</div>\n")
	if len(rows) == 0 {
		w.WriteString(`<p class="empty">No training runs yet. Start one (for example <code>tinker --local train sft …</code> or a training script against this server) and it appears here.</p>` + "\n")
		return
	}
	w.WriteString(`<table class="list" id="runs">
<thead><tr><th>Run</th><th>Base model</th><th>Rank</th><th>Owner</th><th>Last checkpoint</th><th>Updated</th><th>Status</th><th class="num">Loss</th><th></th></tr></thead>
<tbody>
`)
	for _, r := range rows {
		w.f(`<tr><td><a href="%v">%v</a></td><td>%v</td><td class="num">%v</td><td class="owner" title="%v">%v</td>`, r.URL, r.ID, r.BaseModel, r.Rank, r.Owner, r.Owner)
		w.f(`<td>%v</td><td>%v</td><td><span class="status %v">%v</span></td><td class="num">%v</td><td class="spark">`, r.LastCheckpoint, r.Updated, r.Status, r.Status, r.Loss)
		if r.Spark != "" {
			w.f(`<svg viewBox="0 0 %v %v" aria-label="loss by step"><polyline class="line" points="%v"/></svg>`, sparkW, sparkH, r.Spark)
		}
		w.WriteString("</td></tr>\n")
	}
	w.WriteString("</tbody>\n</table>\n")
	if total > len(rows) {
		w.f("<p class=\"muted\">The newest %v of %v runs.</p>\n", len(rows), total)
	}
}

func runView(d runData, csrf string) func(*hw) {
	return func(w *hw) {
		r := d.Run
		w.f(`<p class="crumbs"><a href="/">Runs</a> /</p>
<h1>%v</h1>
<dl class="facts">
<dt>Base model</dt><dd>%v</dd>
<dt>LoRA rank</dt><dd>%v</dd>
<dt>Owner</dt><dd class="owner">%v</dd>
<dt>Status</dt><dd><span class="status %v" id="run-status">%v</span></dd>
<dt>Updated</dt><dd>%v</dd>
</dl>
<h2>Training curves</h2>
`, r.ID, r.BaseModel, r.Rank, r.Owner, r.Status, r.Status, r.Updated)
		chartsView(w, d.Charts)
		w.WriteString("<h2>Checkpoints</h2>\n")
		if len(d.Checkpoints) == 0 {
			w.WriteString("<p class=\"empty\">No checkpoints yet.</p>\n")
			return
		}
		w.WriteString(`<table class="list" id="checkpoints">
<thead><tr><th>Checkpoint</th><th>Type</th><th class="num">Size</th><th>Public</th><th>Created</th><th>Expires</th><th>Actions</th></tr></thead>
<tbody>
`)
		for _, cp := range d.Checkpoints {
			ckptView(w, cp, csrf)
		}
		w.WriteString("</tbody>\n</table>\n")
	}
}

// ckptView is one checkpoint's row with its actions.
func ckptView(w *hw, cp ckptRow, csrf string) {
	state, action, label := "private", "publish", "Publish"
	if cp.Public {
		state, action, label = "public", "unpublish", "Unpublish"
	}
	w.f(`<tr data-checkpoint="%v"><td title="%v">%v</td><td>%v</td><td class="num">%v</td>`, cp.ID, cp.Path, cp.ID, cp.Type, cp.Size)
	w.f(`<td class="public"><span class="status %v">%v</span></td><td>%v</td><td>%v</td><td class="actions">`, state, state, cp.Created, cp.Expires)
	if cp.URL != "" {
		w.f(`<a class="button" href="%v/download">Download</a>`, cp.URL)
		w.f(`<form method="post" action="%v/%v">`, cp.URL, action)
		w.csrfField(csrf)
		w.f(`<button type="submit" class="%v">%v</button></form>`, action, label)
		w.f(`<a class="button danger" href="%v/delete">Delete…</a>`, cp.URL)
	}
	w.WriteString("</td></tr>\n")
}

func deleteView(run, id, action, runURL, csrf string) func(*hw) {
	return func(w *hw) {
		w.f(`<section class="confirm">
<h1>Delete %v?</h1>
<p>The checkpoint <strong>%v</strong> of run <strong>%v</strong> and its files will be deleted. This cannot be undone.</p>
<form method="post" action="%v">`, id, id, run, action)
		w.csrfField(csrf)
		w.f(`<button type="submit" class="danger" id="confirm-delete">Delete</button>
<a class="button" href="%v">Cancel</a>
</form>
</section>
`, runURL)
	}
}

// chartsView is the live block of curves; the script fetches it again
// from its data-live URL.
func chartsView(w *hw, d chartsData) {
	w.f(`<div class="charts" data-live="%v">`+"\n", d.URL)
	for _, c := range d.Charts {
		chartView(w, c)
	}
	if len(d.Charts) == 0 {
		w.WriteString("<p class=\"empty\">No training steps recorded yet; curves appear here as steps finish.</p>\n")
	}
	w.WriteString("</div>\n")
}

func chartView(w *hw, c Chart) {
	w.f(`<figure class="chart" data-title="%v" data-points="%v">
<figcaption><span>%v</span> <span class="last">%v</span> <span class="muted">%v points</span></figcaption>
<svg viewBox="0 0 %v %v" role="img" aria-label="%v by step">
`, c.Title, c.N, c.Title, c.Last, c.N, c.W, c.H, c.Title)
	w.f(`<line class="axis" x1="%v" y1="%v" x2="%v" y2="%v"/>`+"\n", c.Left, c.Bottom, c.PlotRght, c.Bottom)
	w.f(`<line class="axis" x1="%v" y1="%v" x2="%v" y2="%v"/>`+"\n", c.Left, c.PlotTop, c.Left, c.Bottom)
	for _, t := range c.YTicks {
		at := px(t.At)
		w.f(`<line class="grid" x1="%v" y1="%v" x2="%v" y2="%v"/>`, c.Left, at, c.PlotRght, at)
		w.f(`<text class="tick" x="%v" y="%v" dx="-6" dy="4" text-anchor="end">%v</text>`+"\n", c.Left, at, t.Label)
	}
	for _, t := range c.XTicks {
		w.f(`<text class="tick" x="%v" y="%v" dy="18" text-anchor="middle">%v</text>`+"\n", px(t.At), c.Bottom, t.Label)
	}
	w.f(`<polyline class="line" points="%v"/>
<circle class="dot" cx="%v" cy="%v" r="3.5"/>
</svg>
</figure>
`, c.Points, px(c.LastX), px(c.LastY))
}

// px is a pixel coordinate with one decimal.
func px(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
