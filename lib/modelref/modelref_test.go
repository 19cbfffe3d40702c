package modelref

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// A training checkpoint is refused, in the one wording sample(), tinker
// sample and the batch sampler share, before the service is asked.
func TestResolveRefusesTrainingCheckpoint(t *testing.T) {
	_, err := Resolve(context.Background(), nil, "tinker://run-1/weights/0001")
	var ue *tinkerapi.UserError
	want := "tinker://run-1/weights/0001 is a training checkpoint (weights/); save sampler weights first and sample its sampler_weights/ path"
	if !errors.As(err, &ue) || ue.Msg != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if _, err := Resolve(context.Background(), nil, "tinker:///sampler_weights/x"); !errors.As(err, &ue) {
		t.Fatalf("empty run id: err = %v, want a user error", err)
	}
}

func TestRendererName(t *testing.T) {
	if n, err := RendererName(models.TinyLlama, ""); err != nil || n != "role_colon" {
		t.Errorf("tiny default = %q, %v", n, err)
	}
	if n, err := RendererName("no/such-model", "llama3"); err != nil || n != "llama3" {
		t.Errorf("a given name = %q, %v", n, err)
	}
	_, err := RendererName("no/such-model", "")
	want := "no default chat renderer for no/such-model; choose one of " + strings.Join(chat.Names(), ", ")
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	// The recommended renderer is the cookbook's model table's.
	for base, want := range map[string]string{"openai/gpt-oss-20b": "gpt_oss_no_sysprompt", "Qwen/Qwen3-4B-Instruct-2507": "qwen3_instruct", "deepseek-ai/DeepSeek-V3.1": "deepseekv3", "moonshotai/Kimi-K2-Thinking": "kimi_k2"} {
		if n, err := RendererName(base, ""); err != nil || n != want {
			t.Errorf("RendererName(%s) = %q, %v; want %s", base, n, err, want)
		}
	}
	if _, err := RendererName("thinkingmachines/Inkling-1", ""); err == nil || !strings.Contains(err.Error(), "tml_v0") {
		t.Errorf("Inkling: %v", err)
	}
}

// A resolved model renders with its own tokenizer (no second load), and
// without one it says why.
func TestModelRendererUsesItsTokenizer(t *testing.T) {
	m := &Model{Base: models.TinyLlama, TokErr: errors.New("no tokenizer here")}
	if _, err := m.Renderer(""); err == nil || err.Error() != "no tokenizer here" {
		t.Fatalf("without a tokenizer: %v", err)
	}
	if m.Decode([]int{1, 2}) != "" {
		t.Error("Decode without a tokenizer gave text")
	}
	if m.Key() != models.TinyLlama || m.SessionBase() != models.TinyLlama {
		t.Errorf("base model key %q, session base %q", m.Key(), m.SessionBase())
	}
	p := &Model{Base: "b", Path: "tinker://r/sampler_weights/s"}
	if p.Key() != p.Path || p.SessionBase() != "" {
		t.Errorf("checkpoint key %q, session base %q", p.Key(), p.SessionBase())
	}
}

// A model directory's default renderer is the one its chat template
// speaks; without a template it is a base model's role_colon.
func TestDirRenderer(t *testing.T) {
	for tmpl, want := range map[string]string{
		"":                                       "role_colon",
		"{{ '<|start_header_id|>' + role }}":     "llama3",
		"{{ '<|im_start|>' + message['role'] }}": "qwen3",
		"{{ '[INST]' }}":                         "",
	} {
		if got := dirRenderer(tmpl); got != want {
			t.Errorf("dirRenderer(%q) = %q, want %q", tmpl, got, want)
		}
	}
}
