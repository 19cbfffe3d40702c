package builtins

import (
	"fmt"
	gotime "time"

	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/starlark"
)

// CheckpointChange is what checkpoint.publish, unpublish and set_ttl
// return: at the prompt it says in one line what was done (the service's
// answer is empty); scripts can ignore it or read its attributes.
type CheckpointChange struct {
	Path      string
	Action    string       // "published", "unpublished", "expiry set" or "expiry removed"
	ExpiresAt *gotime.Time // with "expiry set"
	Now       gotime.Time  // when it was done, for the relative expiry
}

var (
	_ TextValue         = (*CheckpointChange)(nil)
	_ JSONValue         = (*CheckpointChange)(nil)
	_ starlark.HasAttrs = (*CheckpointChange)(nil)
)

// Text is the one line the prompt shows.
func (c *CheckpointChange) Text() string {
	switch c.Action {
	case "published":
		return "Published " + c.Path + " (anyone with the path can use it)"
	case "unpublished":
		return "Unpublished " + c.Path + " (only you can use it)"
	case "expiry set":
		return fmt.Sprintf("%s expires %s (%s)", c.Path, render.Ago(*c.ExpiresAt, c.Now), c.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	return c.Path + " no longer expires"
}

func (c *CheckpointChange) String() string {
	return "<checkpoint_change " + c.Action + " " + c.Path + ">"
}
func (c *CheckpointChange) Type() string         { return "checkpoint_change" }
func (c *CheckpointChange) Freeze()              {}
func (c *CheckpointChange) Truth() starlark.Bool { return true }
func (c *CheckpointChange) Hash() (uint32, error) {
	return 0, fmt.Errorf("unhashable: checkpoint_change")
}

func (c *CheckpointChange) AttrNames() []string { return checkpointChangeAttrs.names(c) }
func (c *CheckpointChange) Attr(name string) (starlark.Value, error) {
	return checkpointChangeAttrs.get(c, name)
}

var checkpointChangeAttrs = attrTable[*CheckpointChange]{
	{name: "action", doc: `"published", "unpublished", "expiry set" or "expiry removed"`, value: func(c *CheckpointChange) starlark.Value { return starlark.String(c.Action) }},
	{name: "expires_at", doc: "when the checkpoint now expires (a time), or None", value: func(c *CheckpointChange) starlark.Value { return optTime(c.ExpiresAt) }},
	{name: "tinker_path", doc: "the checkpoint's tinker:// path", value: func(c *CheckpointChange) starlark.Value { return starlark.String(c.Path) }},
}

func (c *CheckpointChange) MarshalJSON() ([]byte, error) { return marshalJSON(c) }

// JSON is the change as an object (the official CLI prints nothing).
func (c *CheckpointChange) JSON() any {
	var exp any
	if c.ExpiresAt != nil {
		exp = render.PyTime(*c.ExpiresAt)
	}
	return render.Object{{Key: "tinker_path", Value: c.Path}, {Key: "action", Value: c.Action}, {Key: "expires_at", Value: exp}}
}
