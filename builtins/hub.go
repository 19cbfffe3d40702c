package builtins

import (
	"fmt"
	gotime "time"

	"github.com/tinkershell/tinker/lib/hfhub"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/starlark"
)

func init() {
	register(docEntry{
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
	}, pushToHubFn)
}

// HubPush is what push_to_hub() returns.
type HubPush struct {
	Path          string
	Public        bool
	RevisionGiven bool // the table shows the revision only when it was asked for
	R             hfhub.PushResult
}

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
func (h *HubPush) AttrNames() []string {
	return []string{"checkpoint_path", "commit_url", "public", "repo_id", "revision", "unchanged", "uploaded", "url"}
}

func (h *HubPush) Attr(name string) (starlark.Value, error) {
	switch name {
	case "checkpoint_path":
		return starlark.String(h.Path), nil
	case "commit_url":
		return noneIfEmpty(h.R.CommitURL), nil
	case "public":
		return starlark.Bool(h.Public), nil
	case "repo_id":
		return starlark.String(h.R.FullRepoID), nil
	case "revision":
		return noneIfEmpty(h.R.Revision), nil
	case "unchanged":
		return strList(h.R.Unchanged), nil
	case "uploaded":
		return strList(h.R.Uploaded), nil
	case "url":
		return starlark.String(h.R.RepoURL), nil
	}
	return nil, nil
}

func noneIfEmpty(s string) starlark.Value {
	if s == "" {
		return starlark.None
	}
	return starlark.String(s)
}

func publicYesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

func (h *HubPush) Record(now gotime.Time) *render.Record {
	r := &render.Record{Title: "Checkpoint Hub Upload: " + h.Path}
	r.Fields = append(r.Fields, render.Field{Name: "Checkpoint Path", Value: h.Path}, render.Field{Name: "Repo ID", Value: h.R.RepoID})
	if h.RevisionGiven {
		r.Fields = append(r.Fields, render.Field{Name: "Revision", Value: h.R.Revision})
	}
	r.Fields = append(r.Fields, render.Field{Name: "Public", Value: publicYesNo(h.Public)})
	return r
}

func (h *HubPush) RowColumns() []render.Column {
	return []render.Column{{Header: "Checkpoint Path", Kind: render.Path}, {Header: "Repo ID", Kind: render.ID}, {Header: "Revision", Kind: render.ID}, {Header: "Public"}}
}

func (h *HubPush) Row(now gotime.Time) []string {
	return []string{h.Path, h.R.RepoID, h.R.Revision, publicYesNo(h.Public)}
}

func (h *HubPush) ListTitle(n int) string { return Plural(n, "hub upload", "hub uploads") }

func (h *HubPush) JSON() any {
	obj := render.Object{{Key: "checkpoint_path", Value: h.Path}, {Key: "repo_id", Value: h.R.RepoID}}
	if h.RevisionGiven {
		obj = append(obj, render.Member{Key: "revision", Value: h.R.Revision})
	}
	return append(obj, render.Member{Key: "public", Value: h.Public})
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
	o := HubPushOptions{Public: public, CreatePR: createPR, NoModelCard: !modelCard, Force: force}
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
	res, err := PushToHub(ContextOf(thread), c, path, o)
	bar.End(err)
	if err == errNotLoggedIn {
		// The subcommand prints the CLI's hint below the message; here the
		// message is all there is, so it says what to do.
		return nil, userErr("Not logged in to the Hugging Face Hub: set HF_TOKEN to a token with write access, or run `hf auth login`", "")
	}
	if err != nil {
		return nil, err
	}
	return res, nil
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
