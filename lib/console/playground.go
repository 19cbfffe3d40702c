package console

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Bounds of a playground request (the API bounds them again).
const (
	maxPlayTokens = 2048
	maxPlayText   = 64 << 10
	maxPlayModels = 200 // sampler checkpoints offered
	rawPrompt     = "raw"
)

// playForm is the playground's form, as posted and as shown again.
type playForm struct {
	Model, Renderer, System, Message string
	Temperature                      float64
	MaxTokens                        int
}

// playData is the playground page: the choices, the form and the result.
type playData struct {
	Form      playForm
	Models    []string
	Samplers  []string
	Renderers []string
	Result    *playResult
}

type playResult struct {
	Text, Stop string
	Prompt     int // prompt tokens
	Tokens     []playToken
}

type playToken struct {
	ID            int
	Text, Logprob string
}

func (c *Console) playgroundPage(w http.ResponseWriter, r *http.Request, s *session) {
	d := c.playChoices(r.Context(), s)
	d.Form = playForm{Temperature: 0.7, MaxTokens: 32, Message: "Tell me a short story."}
	if len(d.Models) > 0 {
		d.Form.Model = d.Models[0]
	}
	c.write(w, http.StatusOK, page{Title: "Playground", Nav: "playground", CSRF: s.csrf}, playView(d, s.csrf))
}

// playChoices lists the servable base models and the user's sampler
// checkpoints.
func (c *Console) playChoices(ctx context.Context, s *session) *playData {
	d := &playData{Renderers: append([]string{"", rawPrompt}, chat.Names()...)}
	if ms, err := ops.ListModels(ctx, s.client); err == nil {
		for _, m := range ms {
			if m.Servable == nil || *m.Servable {
				d.Models = append(d.Models, m.ModelName)
			}
		}
	}
	if cps, err := s.client.ListUserCheckpoints(ctx, maxPlayModels, 0); err == nil {
		for _, cp := range cps.Checkpoints {
			if cp.CheckpointType == "sampler" {
				d.Samplers = append(d.Samplers, cp.TinkerPath)
			}
		}
	}
	return d
}

// readPlayForm reads and bounds the posted form.
func readPlayForm(r *http.Request) (playForm, string) {
	f := playForm{Model: r.PostFormValue("model"), Renderer: r.PostFormValue("renderer"),
		System: r.PostFormValue("system"), Message: r.PostFormValue("message")}
	var err error
	if f.Temperature, err = strconv.ParseFloat(r.PostFormValue("temperature"), 64); err != nil || f.Temperature < 0 || f.Temperature > 5 {
		return f, "Temperature must be a number from 0 to 5."
	}
	if f.MaxTokens, err = strconv.Atoi(r.PostFormValue("max_tokens")); err != nil || f.MaxTokens < 1 || f.MaxTokens > maxPlayTokens {
		return f, "Max tokens must be a whole number from 1 to " + strconv.Itoa(maxPlayTokens) + "."
	}
	switch {
	case f.Model == "":
		return f, "Choose a model."
	case strings.TrimSpace(f.Message) == "":
		return f, "Write a message (or a prompt) to sample from."
	case len(f.Message)+len(f.System) > maxPlayText:
		return f, "The text is too long: keep it under 64 KB."
	}
	return f, ""
}

func (c *Console) playgroundSample(w http.ResponseWriter, r *http.Request, s *session) {
	f, problem := readPlayForm(r)
	d := c.playChoices(r.Context(), s)
	d.Form = f
	p := page{Title: "Playground", Nav: "playground", CSRF: s.csrf, Error: problem}
	if problem == "" {
		res, err := c.sample(r.Context(), s, f)
		if err != nil {
			p.Error = apiMessage(err)
		}
		d.Result = res
	}
	status := http.StatusOK
	if p.Error != "" {
		status = http.StatusBadRequest
	}
	c.write(w, status, p, playView(d, s.csrf))
}

// sample runs the form through ops.Sample, the sample() builtin's
// operation, and lays out the first sequence token by token.
func (c *Console) sample(ctx context.Context, s *session, f playForm) (*playResult, error) {
	ts, samplers, err := s.tinkerSession(ctx)
	if err != nil {
		return nil, err
	}
	req := tinkerapi.NewSampleRequest(nil)
	req.MaxTokens, req.Temperature = f.MaxTokens, f.Temperature
	o := ops.SampleOptions{Model: f.Model, Request: req}
	if f.Renderer == rawPrompt {
		prompt := f.Message
		o.Prompt = &prompt
	} else {
		o.Renderer = f.Renderer
		if strings.TrimSpace(f.System) != "" {
			o.Messages = append(o.Messages, chat.Message{Role: "system", Content: f.System})
		}
		o.Messages = append(o.Messages, chat.Message{Role: "user", Content: f.Message})
	}
	res, err := ops.Sample(ctx, ts, samplers, o)
	if err != nil {
		return nil, err
	}
	out := &playResult{Prompt: len(res.PromptTokens)}
	if len(res.Sequences) == 0 {
		return out, nil
	}
	seq := res.Sequences[0]
	out.Text, out.Stop = seq.Text, seq.StopReason
	m, _ := modelref.Resolve(ctx, ts, f.Model)
	for i, t := range seq.Tokens {
		tok := playToken{ID: t}
		if m != nil {
			tok.Text = m.Decode([]int{t})
		}
		if i < len(seq.Logprobs) {
			tok.Logprob = strconv.FormatFloat(float64(seq.Logprobs[i]), 'f', 3, 32)
		}
		out.Tokens = append(out.Tokens, tok)
	}
	return out, nil
}
