package ops

import (
	"context"
	"errors"
	"fmt"
	"os"
	gotime "time"

	"github.com/tinkershell/tinker/lib/download"
	"github.com/tinkershell/tinker/lib/hfhub"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Hub upload shared by push_to_hub() and `tinker checkpoint push-hf`.

// HubPushOptions configure PushToHub; the zero value pushes privately to a
// repo and branch derived from the checkpoint.
type HubPushOptions struct {
	Repo           string
	Revision       string
	CommitMessage  string
	Public         bool
	CreatePR       bool
	NoModelCard    bool
	Force          bool // push even when the repo's README names another checkpoint
	AllowPatterns  []string
	IgnorePatterns []string
	// Notice, if set, is told when the archive is being requested.
	Notice func(p tinkerapi.Path)
	// Progress, if set, follows the upload's bytes.
	Progress func(sent, total int64)
}

// PushToHub downloads a sampler checkpoint's archive into a temporary
// directory and uploads it to the Hugging Face Hub as a PEFT adapter. The
// Hub token comes from the environment (HF_TOKEN or the hf CLI's login)
// and never appears in an error.
func PushToHub(ctx context.Context, c *tinkerapi.Client, path string, o HubPushOptions) (*HubPush, error) {
	if err := tinkerapi.CheckScheme(path, "sampler_weights"); err != nil {
		return nil, err
	}
	p, err := tinkerapi.ParsePath(path)
	if err != nil {
		return nil, UserErr("Unexpected error occurred: Invalid tinker path: "+path, "")
	}
	hub := hfhub.FromEnv()
	user, err := hub.Whoami(ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, ErrNotLoggedIn
	}
	tmp, err := os.MkdirTemp("", "tinker-push-*")
	if err != nil {
		return nil, fmt.Errorf("push_to_hub: %w", err)
	}
	defer os.RemoveAll(tmp)
	if o.Notice != nil {
		o.Notice(p)
	}
	dl, err := download.Download(ctx, download.Options{
		URL:    archiveURL(c, p),
		Client: storageClient,
		Parent: tmp,
		Name:   "checkpoint",
	})
	if err != nil {
		switch {
		case errors.Is(err, download.ErrIncomplete):
			return nil, hubErr(hfhub.ErrIncomplete)
		case errors.Is(err, download.ErrExtract):
			return nil, UserErr(extractReason(err), "Archive may be corrupted or malicious.")
		}
		return nil, downloadErr(err, tmp)
	}
	info := hfhub.AdapterInfo{BaseModel: "unknown"}
	// The official CLI pushes even when the service cannot describe the
	// checkpoint; the model card then says the base model is unknown.
	if wi, err := c.WeightsInfo(ctx, path); err == nil && wi.BaseModel != "" {
		info = hfhub.AdapterInfo{BaseModel: wi.BaseModel, LoraRank: wi.LoraRank, TrainAttn: wi.TrainAttn, TrainMLP: wi.TrainMLP, TrainUnembed: wi.TrainUnembed}
	}
	res, err := hub.Push(ctx, hfhub.PushOptions{
		Dir: dl.Path, TinkerPath: path, Adapter: info,
		RepoID: o.Repo, Revision: o.Revision, Public: o.Public, CreatePR: o.CreatePR,
		NoModelCard: o.NoModelCard, Force: o.Force, CommitMessage: o.CommitMessage,
		AllowPatterns: o.AllowPatterns, IgnorePatterns: o.IgnorePatterns,
		User: user.Name, Progress: o.Progress,
	})
	if err != nil {
		return nil, hubErr(err)
	}
	return &HubPush{Path: path, Public: o.Public, RevisionGiven: o.Revision != "", R: *res}, nil
}

// ErrNotLoggedIn is a push without a Hugging Face token.
var ErrNotLoggedIn = UserErr("Not logged in", "Run: hf auth login")

// hubErr words a push failure as the official CLI does; anything else is
// its catch-all.
func hubErr(err error) error {
	var mm *hfhub.CheckpointMismatchError
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, hfhub.ErrNotLoggedIn):
		return ErrNotLoggedIn
	case errors.Is(err, hfhub.ErrNotAdapter):
		return UserErr("Checkpoint archive does not contain a PEFT adapter.", "Expected adapter_config.json and adapter_model.safetensors (or adapter_model.bin).")
	case errors.Is(err, hfhub.ErrIncomplete):
		return UserErr("Checkpoint archive is missing 'checkpoint_complete'.", "The adapter files may be incomplete.")
	case errors.As(err, &mm):
		return UserErr("Repo ID appears to contain a different Tinker checkpoint.", fmt.Sprintf("Found %s, expected %s.", mm.Found, mm.Expected))
	}
	return UserErr("Unexpected error occurred: "+err.Error(), "")
}

// HubPush is a checkpoint uploaded to the Hub.
type HubPush struct {
	Path          string
	Public        bool
	RevisionGiven bool // the table shows the revision only when it was asked for
	R             hfhub.PushResult
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
