package console

import "strconv"

func logsView(rows []logRow, configured bool) func(*hw) {
	return func(w *hw) {
		w.WriteString("<h1>Training logs</h1>\n")
		switch {
		case len(rows) > 0:
			w.WriteString(`<ul class="logs">`)
			for _, r := range rows {
				w.f(`<li><a href="%v">%v</a></li>`, r.URL, r.Dir)
			}
			w.WriteString("</ul>\n")
		case configured:
			w.WriteString("<p class=\"empty\">None of the log directories given holds a metrics.jsonl yet.</p>\n")
		default:
			w.WriteString(`<p class="empty">No log directories were given. Start the console with <code>tinker console --log-dir DIR</code> (or <code>tinker serve --console-log-dir DIR</code>) to watch the metrics.jsonl that <code>tinker train … --log-dir DIR</code> writes.</p>` + "\n")
		}
	}
}

func logView(d *logData) func(*hw) {
	return func(w *hw) {
		m := d.Metrics
		w.f(`<p class="crumbs"><a href="/console/logs">Training logs</a> /</p>
<h1>%v</h1>
<p class="muted">%v lines in metrics.jsonl`, d.Dir, m.Lines)
		if m.Bad > 0 {
			w.f(", %v of them unreadable (skipped)", m.Bad)
		}
		w.WriteString(".</p>\n")
		chartsView(w, d.Charts)
		if len(m.Rows) > 0 {
			w.WriteString("<h2>Newest records</h2>\n")
			w.table("records", m.Columns, m.Rows, nil)
		}
	}
}

func playView(d *playData, csrf string) func(*hw) {
	return func(w *hw) {
		f := d.Form
		w.WriteString("<h1>Sample playground</h1>\n" + `<form method="post" action="/console/playground" class="play">` + "\n")
		w.csrfField(csrf)
		w.WriteString(`<label for="model">Model</label>` + "\n" + `<select id="model" name="model">` + "\n")
		options(w, "Base models", d.Models, f.Model)
		options(w, "Sampler checkpoints", d.Samplers, f.Model)
		w.WriteString("</select>\n" + `<label for="renderer">Renderer</label>` + "\n" + `<select id="renderer" name="renderer">`)
		for _, r := range d.Renderers {
			label := r
			switch r {
			case "":
				label = "the model's default"
			case rawPrompt:
				label = "none: the message is the prompt"
			}
			w.f(`<option value="%v"`, r)
			selected(w, r == f.Renderer)
			w.f(">%v</option>", label)
		}
		w.f(`</select>
<label for="system">System message</label>
<textarea id="system" name="system" rows="2" placeholder="optional">%v</textarea>
<label for="message">User message</label>
<textarea id="message" name="message" rows="4" required>%v</textarea>
<div class="row">
<span><label for="temperature">Temperature</label><input id="temperature" name="temperature" type="number" min="0" max="5" step="0.05" value="%v"></span>
<span><label for="max_tokens">Max tokens</label><input id="max_tokens" name="max_tokens" type="number" min="1" max="%v" value="%v"></span>
</div>
<button type="submit" id="sample">Sample</button>
</form>
`, f.System, f.Message, f.Temperature, maxPlayTokens, f.MaxTokens)
		if d.Result != nil {
			resultView(w, d.Result)
		}
	}
}

// options writes an optgroup of choices, marking the chosen one.
func options(w *hw, label string, choices []string, chosen string) {
	if len(choices) == 0 {
		return
	}
	w.f(`<optgroup label="%v">`, label)
	for _, c := range choices {
		w.WriteString("<option")
		selected(w, c == chosen)
		w.f(">%v</option>", c)
	}
	w.WriteString("</optgroup>\n")
}

func selected(w *hw, on bool) {
	if on {
		w.WriteString(" selected")
	}
}

func resultView(w *hw, r *playResult) {
	w.f(`<section class="result" id="result">
<h2>Completion</h2>
<pre class="completion">%v</pre>
<p class="muted">%v tokens after a %v-token prompt; stopped by %v.</p>
<div class="tokens">`, r.Text, len(r.Tokens), r.Prompt, r.Stop)
	for _, t := range r.Tokens {
		w.f(`<span class="token" title="id %v, logprob %v"><span class="piece">%v</span><span class="lp">%v</span></span>`, t.ID, t.Logprob, t.Text, t.Logprob)
	}
	w.WriteString(`</div>
<table class="list" id="token-table">
<thead><tr><th class="num">#</th><th class="num">Token id</th><th>Text</th><th class="num">Logprob</th></tr></thead>
<tbody>`)
	for i, t := range r.Tokens {
		w.f(`<tr><td class="num">%v</td><td class="num">%v</td><td><code>%v</code></td><td class="num">%v</td></tr>`+"\n", i, t.ID, strconv.Quote(t.Text), t.Logprob)
	}
	w.WriteString("</tbody>\n</table>\n</section>\n")
}
