package builtins

import (
	"fmt"
	"sort"
	"strings"
)

// typeDoc documents a value type the builtins return, keyed by its Type().
// help(value) prints it and the README's reference lists it; a test checks
// that Attrs names exactly what the type's AttrNames() returns.
type typeDoc struct {
	Name    string
	Summary string // one line: what the value is and which builtins return it
	Attrs   []attrDoc
}

type attrDoc struct{ Name, Doc string }

// typeDocs is the one table of value types, in the order the README lists them.
var typeDocs = []typeDoc{
	{Name: "checkpoint", Summary: "A saved checkpoint of a training run: from checkpoint.list(), checkpoint.info(), save_checkpoint(), a run's last_checkpoint.", Attrs: []attrDoc{
		{"base_model", "the run's base model (checkpoint.info() only)"},
		{"checkpoint_id", `its id within the run, e.g. "sampler_weights/final"`},
		{"checkpoint_type", `"training" or "sampler"`},
		{"expires_at", "when it expires (a time), or None if never"},
		{"is_lora", "whether the run trains a LoRA adapter (checkpoint.info() only)"},
		{"lora_rank", "the run's LoRA rank, or None (checkpoint.info() only)"},
		{"name", `the last part of its path, e.g. "final"`},
		{"public", "whether anyone with the path can use it"},
		{"size_bytes", "its size in bytes, or None if unknown"},
		{"time", "when it was saved (a time)"},
		{"tinker_path", "its tinker:// path, what sample() and download() take"},
		{"training_run_id", "the id of the run it belongs to"},
	}},
	{Name: "run", Summary: "A training run: from run.list() and run.info().", Attrs: []attrDoc{
		{"base_model", "the model it fine-tunes"},
		{"corrupted", "whether the service marked the run corrupted"},
		{"is_lora", "whether it trains a LoRA adapter"},
		{"last_checkpoint", "its newest training checkpoint, or None"},
		{"last_request_time", "when it last received a request (a time)"},
		{"last_sampler_checkpoint", "its newest sampler checkpoint, or None"},
		{"lora_rank", "its LoRA rank, or None"},
		{"model_owner", "who owns it"},
		{"training_run_id", "its id"},
		{"user_metadata", "a dict of the metadata given at creation, or None"},
	}},
	{Name: "session", Summary: "A session's training runs and samplers: from session.info().", Attrs: []attrDoc{
		{"sampler_ids", "the ids of its samplers"},
		{"session_id", "its id"},
		{"training_run_ids", "the ids of its training runs"},
	}},
	{Name: "trace", Summary: "An exported session trace: from session.export_trace().", Attrs: []attrDoc{
		{"destination", "the file written, or None with url_only=True"},
		{"file_size_bytes", "the size of the file written"},
		{"session_id", "the session traced"},
		{"url", "the signed download URL (valid for about an hour)"},
	}},
	{Name: "sample_result", Summary: "What sample() returns; r[i] is the i-th sequence and len(r) their number.", Attrs: []attrDoc{
		{"model", "the base model or sampler path sampled from"},
		{"prompt_logprobs", "the prompt tokens' logprobs (None where the service gives none), or None unless prompt_logprobs=True"},
		{"prompt_tokens", "the prompt's token ids"},
		{"sequences", "the sampled sequences, a list of sequence values"},
		{"text", "the first sequence's text, or None if there is none"},
	}},
	{Name: "sequence", Summary: "One sampled continuation: an element of a sample_result's sequences.", Attrs: []attrDoc{
		{"index", "its position in the result"},
		{"logprobs", "each sampled token's logprob, or None"},
		{"mean_logprob", "the mean of logprobs, or None"},
		{"stop_reason", `why sampling stopped, e.g. "length" or "stop"`},
		{"text", "the decoded text"},
		{"tokens", "the sampled token ids"},
	}},
	{Name: "model", Summary: "A base model the backend serves: an element of models().", Attrs: []attrDoc{
		{"max_context_length", "the longest sequence it takes, in tokens, or None if the backend does not say"},
		{"model_name", "the name sample() and training_client() take"},
		{"servable", "whether its weights are on the server now (tinker serve), or None if the backend does not say"},
	}},
	{Name: "doctor", Summary: "What doctor() found about the backend; true when it can be used.", Attrs: []attrDoc{
		{"auth", `"API key", or "JWT for <user>" when the backend exchanges keys for JWTs`},
		{"backend", "how the backend was chosen (its URL, or the local server)"},
		{"base_url", "the URL requests go to"},
		{"credential", "where the credential comes from (never the credential)"},
		{"endpoints", `a dict from endpoint to "answers", "not offered", "refused the credential" or "failed"`},
		{"fixes", "what to do, one line each; empty when all is well"},
		{"hf_cache", "the Hugging Face cache directory tokenizers are read from"},
		{"models", "the base models listed, those without weights marked"},
		{"ok", "whether the backend answers and accepts the credential"},
	}},
	{Name: "batch", Summary: "What sample_batch() did: the job's counts and a summary per model.", Attrs: []attrDoc{
		{"models", "one dict per model: model, rows, missing, mean_tokens, stop_reasons, mean_logprob"},
		{"output", "the JSONL file the rows are in"},
		{"remaining", "the rows still to sample (the same call again samples just these)"},
		{"resumed", "the rows already in the file when this call started"},
		{"rows", "the job's rows read back from output: .model, .prompt_id, .sample, .seed, .text, .tokens, .stop_reason, .mean_logprob"},
		{"seed", "the job's base seed, which fixes every row's seed"},
		{"total", "the rows of the job"},
		{"written", "the rows this call added"},
	}},
	{Name: "training_client", Summary: "A LoRA model being trained: from training_client().", Attrs: []attrDoc{
		{"base_model", "the model the adapter is trained on"},
		{"forward", `forward(data, loss_fn="cross_entropy", loss_fn_config=None): the loss of a list of datums, without gradients; a forward_result`},
		{"forward_backward", "forward_backward(data, ...): as forward, and accumulates the gradients"},
		{"info", "info(): a record of the model: id, base model, architecture, tokenizer, LoRA rank"},
		{"load_state", "load_state(path, optimizer=False): restore a saved training state"},
		{"model_id", "the model's id on the backend"},
		{"optim_step", "optim_step(learning_rate=1e-4, ...): apply the accumulated gradients with Adam; a dict of metrics"},
		{"save_state", "save_state(name=None, ttl=None): save the training state; the checkpoint"},
		{"save_weights_for_sampler", "save_weights_for_sampler(name=None, ttl=None): save weights to sample from; the checkpoint"},
	}},
	{Name: "datum", Summary: "A training example: from datum() and conversation_datum().", Attrs: []attrDoc{
		{"advantages", "per-token advantages, or None"},
		{"logprobs", "per-token sampling logprobs, or None"},
		{"target_tokens", "the token each position predicts, or None"},
		{"tokens", "the input token ids"},
		{"weights", "per-token loss weights (1 where the model learns), or None"},
	}},
	{Name: "forward_result", Summary: "A forward or forward_backward pass of a training_client.", Attrs: []attrDoc{
		{"logprobs", "per datum, the logprob of each target token"},
		{"loss", "the summed loss"},
		{"mean_nll", "the loss per unit of weight, or None when the weights sum to 0"},
		{"metrics", "a dict of the pass's metrics"},
	}},
	{Name: "sft_run", Summary: "A supervised fine-tuning run: from sft(); it displays its steps and loss curve.", Attrs: []attrDoc{
		{"log_dir", "the directory of its config, metrics and state, or None"},
		{"metrics", "one dict per step: step, epoch, loss, eval_nll, learning_rate, tokens, num_sequences, time"},
		{"sampler_checkpoint", "the last sampler weights saved, or None"},
		{"state_checkpoint", "the last training state saved, or None"},
	}},
	{Name: "hub_push", Summary: "A checkpoint pushed to the Hugging Face Hub: from push_to_hub().", Attrs: []attrDoc{
		{"checkpoint_path", "the tinker:// path pushed"},
		{"commit_url", "the commit's URL, or None when nothing changed"},
		{"public", "whether the repository is public"},
		{"repo_id", "the repository, namespace/name"},
		{"revision", "the branch committed to, or None for the default one"},
		{"unchanged", "the files the repository already had"},
		{"uploaded", "the files in the commit"},
		{"url", "the repository's URL"},
	}},
	{Name: "tokenizer", Summary: "A base model's tokenizer: from tokenizer().", Attrs: []attrDoc{
		{"decode", "decode(ids, skip_special_tokens=False): the text of a list of token ids"},
		{"encode", "encode(text, special_tokens=False): the token ids of a text"},
		{"id", "the Hub repository it comes from"},
		{"vocab_size", "the number of token ids"},
	}},
	{Name: "rendered", Summary: "A conversation rendered for sampling: from render().", Attrs: []attrDoc{
		{"renderer", "the renderer's name"},
		{"stop_strings", "the strings that end the assistant's turn"},
		{"stop_tokens", "the token ids that end the assistant's turn"},
		{"text", "the prompt text"},
		{"tokens", "the prompt's token ids"},
	}},
	{Name: "download", Summary: "A downloaded checkpoint: from download() and checkpoint.download().", Attrs: []attrDoc{
		{"bytes", "the bytes extracted"},
		{"checkpoint_path", "the tinker:// path downloaded"},
		{"destination", "the directory it was extracted into"},
		{"file_size_bytes", "the archive's size, or None if the server did not say"},
		{"files", "the number of files extracted"},
	}},
	{Name: "checkpoint_change", Summary: "What checkpoint.publish(), unpublish() and set_ttl() did; it displays as one line.", Attrs: []attrDoc{
		{"action", `"published", "unpublished", "expiry set" or "expiry removed"`},
		{"expires_at", "when the checkpoint now expires (a time), or None"},
		{"tinker_path", "the checkpoint's tinker:// path"},
	}},
	{Name: "delete_result", Summary: "What checkpoint.delete() did; true when nothing failed or was left out.", Attrs: []attrDoc{
		{"cancelled", "whether the confirmation was answered no"},
		{"deleted", "the paths deleted"},
		{"deleted_count", "the number of paths deleted"},
		{"dry_run", "whether this was a dry run (nothing deleted)"},
		{"failed", `a list of {"tinker_path", "error"} dicts`},
		{"planned", "the paths a dry run or a cancelled delete would have deleted"},
		{"skipped", "the paths not attempted because Ctrl-C stopped the delete"},
	}},
	{Name: "billing_usage", Summary: "Hourly usage rows: from billing.usage().", Attrs: []attrDoc{
		{"columns", "the column names, in order"},
		{"rows", "one dict per hourly bucket, keyed by column"},
		{"sessions", "a dict of session id to its user metadata"},
	}},
	{Name: "table", Summary: "A table made with table(); it displays as a table and len(t) is its row count.", Attrs: []attrDoc{
		{"columns", "the column names, in order"},
		{"rows", "one list of cells per row"},
		{"title", "the title, or an empty string"},
	}},
	{Name: "record", Summary: "Fields shown vertically, made with record(); its fields are its attributes and keys (r.run, r[\"run\"])."},
	{Name: "help", Summary: "The text help() returns; it displays as plain text."},
}

// lookupTypeDoc finds a value type's documentation by its Type().
func lookupTypeDoc(name string) (typeDoc, bool) {
	for _, t := range typeDocs {
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
