package builtins

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tinkershell/tinker/lib/lazy"
)

// typeDoc documents a value type the builtins return, keyed by its Type().
// help(value) prints it and the README's reference lists it. Attrs comes
// from the type's attribute table (attrs.go), the same one its AttrNames
// and Attr read; a test checks every type has an entry.
type typeDoc struct {
	Name    string
	Summary string // one line: what the value is and which builtins return it
	Attrs   []attrDoc
}

type attrDoc struct{ Name, Doc string }

// typeDocs is the one table of value types, in the order the README lists
// them. Made on first use (help, completion, the README), not at every start.
var typeDocs = lazy.Value[[]typeDoc]{New: func() []typeDoc {
	return []typeDoc{
		{Name: "checkpoint", Summary: "A saved checkpoint of a training run: from checkpoint.list(), checkpoint.info(), save_checkpoint(), a run's last_checkpoint.", Attrs: checkpointAttrs.docs()},
		{Name: "run", Summary: "A training run: from run.list() and run.info().", Attrs: runAttrs.docs()},
		{Name: "session", Summary: "A session's training runs and samplers: from session.info().", Attrs: sessionAttrs.docs()},
		{Name: "trace", Summary: "An exported session trace: from session.export_trace().", Attrs: traceAttrs.docs()},
		{Name: "sample_result", Summary: "What sample() returns; r[i] is the i-th sequence and len(r) their number.", Attrs: sampleResultAttrs.docs()},
		{Name: "sequence", Summary: "One sampled continuation: an element of a sample_result's sequences.", Attrs: sequenceAttrs.docs()},
		{Name: "model", Summary: "A base model the backend serves: an element of models().", Attrs: modelAttrs.docs()},
		{Name: "doctor", Summary: "What doctor() found about the backend; true when it can be used.", Attrs: doctorAttrs.docs()},
		{Name: "batch", Summary: "What sample_batch() did: the job's counts and a summary per model.", Attrs: batchAttrs.docs()},
		{Name: "training_client", Summary: "A LoRA model being trained: from training_client().", Attrs: trainingClientAttrs.docs()},
		{Name: "datum", Summary: "A training example: from datum() and conversation_datum().", Attrs: datumAttrs.docs()},
		{Name: "forward_result", Summary: "A forward or forward_backward pass of a training_client.", Attrs: passResultAttrs.docs()},
		{Name: "sft_run", Summary: "A supervised fine-tuning run: from sft(); it displays its steps and loss curve.", Attrs: sftRunAttrs.docs()},
		{Name: "dpo_run", Summary: "A direct preference optimisation run: from dpo(); it displays its steps and loss curve.", Attrs: dpoRunAttrs.docs()},
		{Name: "rl_run", Summary: "A reinforcement learning run: from rl(); it displays its steps and reward curve.", Attrs: rlRunAttrs.docs()},
		{Name: "evaluation", Summary: "A model's scored answers: from evaluate(); it displays its rows.", Attrs: evaluationAttrs.docs()},
		{Name: "hub_push", Summary: "A checkpoint pushed to the Hugging Face Hub: from push_to_hub().", Attrs: hubPushAttrs.docs()},
		{Name: "tokenizer", Summary: "A base model's tokenizer: from tokenizer().", Attrs: tokenizerAttrs.docs()},
		{Name: "rendered", Summary: "A conversation rendered for sampling: from render().", Attrs: renderedAttrs.docs()},
		{Name: "download", Summary: "A downloaded checkpoint: from download() and checkpoint.download().", Attrs: downloadAttrs.docs()},
		{Name: "export", Summary: "An exported checkpoint: from export().", Attrs: exportAttrs.docs()},
		{Name: "checkpoint_change", Summary: "What checkpoint.publish(), unpublish() and set_ttl() did; it displays as one line.", Attrs: checkpointChangeAttrs.docs()},
		{Name: "delete_result", Summary: "What checkpoint.delete() did; true when nothing failed or was left out.", Attrs: deleteAttrs.docs()},
		{Name: "billing_usage", Summary: "Hourly usage rows: from billing.usage().", Attrs: billingAttrs.docs()},
		{Name: "table", Summary: "A table made with table(); it displays as a table and len(t) is its row count.", Attrs: tableAttrs.docs()},
		{Name: "record", Summary: "Fields shown vertically, made with record(); its fields are its attributes and keys (r.run, r[\"run\"])."},
		{Name: "help", Summary: "The text help() returns; it displays as plain text."},
	}
}}

// lookupTypeDoc finds a value type's documentation by its Type().
func lookupTypeDoc(name string) (typeDoc, bool) {
	for _, t := range typeDocs.Get() {
		if t.Name == name {
			return t, true
		}
	}
	return typeDoc{}, false
}

// helpForType is help(value) for a documented value type.
func helpForType(t typeDoc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s value\n\n    %s\n", t.Name, t.Summary)
	if len(t.Attrs) > 0 {
		b.WriteString("\nAttributes:\n")
		width := 0
		for _, a := range t.Attrs {
			width = max(width, len(a.Name))
		}
		for _, a := range sortedAttrs(t) {
			fmt.Fprintf(&b, "    %-*s  %s\n", width, a.Name, a.Doc)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func sortedAttrs(t typeDoc) []attrDoc {
	out := append([]attrDoc(nil), t.Attrs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// wrapWords joins words with ", " into indented lines of at most width columns.
func wrapWords(words []string, width int, indent string) string {
	var b strings.Builder
	line := indent
	for i, w := range words {
		if i < len(words)-1 {
			w += ","
		}
		if line != indent && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += w
	}
	b.WriteString(line)
	return b.String()
}
