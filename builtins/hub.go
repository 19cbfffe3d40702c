package builtins

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/progress"
	"go.starlark.net/starlark"
)

// hubBuiltins are the builtins hub.go defines (registryParts lists them).
var hubBuiltins = []entry{
	{docEntry{
		Name:      "push_to_hub",
		Signature: "push_to_hub(path, repo=None, public=False, revision=None, commit_message=None, create_pr=False, allow_patterns=None, ignore_patterns=None, model_card=True, force=False)",
		Summary:   "Upload a sampler checkpoint to the Hugging Face Hub as a PEFT adapter (also `tinker checkpoint push-hf`).",
		Details: "The Hub token comes from HF_TOKEN or `hf auth login`; HF_ENDPOINT selects another Hub.\n" +
			"Without repo, the repo is tinker-<base model>-<run id> under your account and the branch is named\n" +
			"after the checkpoint. A README.md model card naming the tinker:// path is added unless\n" +
			"model_card=False; a repo whose README names another checkpoint is refused unless force=True.\n" +
			"The result has .repo_id, .url, .revision, .commit_url, .uploaded and .unchanged.",
		Example:      "push_to_hub(run.info(\"RUN_ID\").last_sampler_checkpoint, repo=\"me/my-adapter\")",
		ExampleNeeds: "the Hugging Face Hub and a write token",
	}, pushToHubFn},
}

// HubPush is what push_to_hub() returns.
type HubPush struct{ ops.HubPush }

var (
	_ RecordValue       = (*HubPush)(nil)
	_ JSONValue         = (*HubPush)(nil)
	_ starlark.HasAttrs = (*HubPush)(nil)
)

func (h *HubPush) String() string        { return fmt.Sprintf("<hub push %s>", h.R.FullRepoID) }
func (h *HubPush) Type() string          { return "hub_push" }
func (h *HubPush) Freeze()               {}
func (h *HubPush) Truth() starlark.Bool  { return true }
func (h *HubPush) Hash() (uint32, error) { return starlark.String(h.R.FullRepoID).Hash() }

func (h *HubPush) AttrNames() []string                      { return hubPushAttrs.names(h) }
func (h *HubPush) Attr(name string) (starlark.Value, error) { return hubPushAttrs.get(h, name) }

var hubPushAttrs = attrTable[*HubPush]{
	{name: "checkpoint_path", doc: "the tinker:// path pushed", value: func(h *HubPush) starlark.Value { return starlark.String(h.Path) }},
	{name: "commit_url", doc: "the commit's URL, or None when nothing changed", value: func(h *HubPush) starlark.Value { return noneIfEmpty(h.R.CommitURL) }},
	{name: "public", doc: "whether the repository is public", value: func(h *HubPush) starlark.Value { return starlark.Bool(h.Public) }},
	{name: "repo_id", doc: "the repository, namespace/name", value: func(h *HubPush) starlark.Value { return starlark.String(h.R.FullRepoID) }},
	{name: "revision", doc: "the branch committed to, or None for the default one", value: func(h *HubPush) starlark.Value { return noneIfEmpty(h.R.Revision) }},
	{name: "unchanged", doc: "the files the repository already had", value: func(h *HubPush) starlark.Value { return strList(h.R.Unchanged) }},
	{name: "uploaded", doc: "the files in the commit", value: func(h *HubPush) starlark.Value { return strList(h.R.Uploaded) }},
	{name: "url", doc: "the repository's URL", value: func(h *HubPush) starlark.Value { return starlark.String(h.R.RepoURL) }},
}

func noneIfEmpty(s string) starlark.Value {
	if s == "" {
		return starlark.None
	}
	return starlark.String(s)
}

func (h *HubPush) MarshalJSON() ([]byte, error) { return marshalJSON(h) }

func pushToHubFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pv starlark.Value
	var repoV, revV, msgV, allowV, ignoreV starlark.Value = starlark.None, starlark.None, starlark.None, starlark.None, starlark.None
	var public, createPR, force bool
	modelCard := true
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "path", &pv, "repo?", &repoV, "public?", &public, "revision?", &revV,
		"commit_message?", &msgV, "create_pr?", &createPR, "allow_patterns?", &allowV, "ignore_patterns?", &ignoreV,
		"model_card?", &modelCard, "force?", &force); err != nil {
		return nil, err
	}
	path, err := pathOf(pv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	o := ops.HubPushOptions{Public: public, CreatePR: createPR, NoModelCard: !modelCard, Force: force}
	for _, s := range []struct {
		v    starlark.Value
		name string
		dst  *string
	}{{repoV, "repo", &o.Repo}, {revV, "revision", &o.Revision}, {msgV, "commit_message", &o.CommitMessage}} {
		if *s.dst, err = optString(s.v, s.name); err != nil {
			return nil, err
		}
	}
	if o.AllowPatterns, err = patternsArg(allowV, "allow_patterns"); err != nil {
		return nil, err
	}
	if o.IgnorePatterns, err = patternsArg(ignoreV, "ignore_patterns"); err != nil {
		return nil, err
	}
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	var bar *progress.Bar
	if env.NoticesTTY {
		bar = progress.NewBytes(env.Notices, true, env.Width, "Uploading", 0)
		o.Progress = func(sent, total int64) { bar.SetTotal(total); bar.Set(sent) }
	}
	res, err := ops.PushToHub(ContextOf(thread), c, path, o)
	bar.End(err)
	if err == ops.ErrNotLoggedIn {
		// The subcommand prints the CLI's hint below the message; here the
		// message is all there is, so it says what to do.
		return nil, userErr("Not logged in to the Hugging Face Hub: set HF_TOKEN to a token with write access, or run `hf auth login`", "")
	}
	if err != nil {
		return nil, err
	}
	return &HubPush{*res}, nil
}

// patternsArg takes None, a string or a list of strings.
func patternsArg(v starlark.Value, name string) ([]string, error) {
	switch v := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.String:
		return []string{string(v)}, nil
	case starlark.Iterable:
		var out []string
		it := v.Iterate()
		defer it.Done()
		var x starlark.Value
		for it.Next(&x) {
			s, ok := starlark.AsString(x)
			if !ok {
				return nil, fmt.Errorf("%s: want strings, got %s", name, x.Type())
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: want a string or a list of strings, got %s", name, v.Type())
}
