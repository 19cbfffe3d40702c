package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/tinkershell/tinker/lib/config"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/shell"
)

// tinker config: the profiles file and what is in force (lib/config).

var configCmd = &command{
	Name:    "config",
	Summary: "Show profiles and the settings in force.",
	Help:    "Show the profiles in the config file and the settings in force, with where each came from.",
	Sub: []*command{
		{Name: "list", Summary: "List the profiles in the config file.", Run: configList},
		{Name: "show", Summary: "Show the settings in force and where each came from.", Run: configShow},
		{Name: "path", Summary: "Print the config file's path.", Run: configPath},
	},
}

func configPath(c *invocation) int {
	fmt.Fprintln(c.io.Out, config.DefaultPath(os.Getenv))
	return shell.ExitOK
}

// loadConfig reads the file and resolves the profile, or prints the one
// line that says what to fix.
func (c *invocation) loadConfig() (*config.File, *config.Resolved, bool) {
	f, err := config.Load(config.DefaultPath(os.Getenv))
	if err == nil {
		var r *config.Resolved
		if r, err = f.Resolve(c.opts.profile, os.Getenv); err == nil {
			return f, r, true
		}
	}
	fmt.Fprintf(c.io.Err, "Error: %v\n", err)
	return nil, nil, false
}

func configList(c *invocation) int {
	f, r, ok := c.loadConfig()
	if !ok {
		return shell.ExitUsage
	}
	t := &render.Table{Title: fmt.Sprintf("Profiles in %s", tilde(f.Path)), Columns: []render.Column{
		{Header: "Profile"}, {Header: "Active"}, {Header: "Local"}, {Header: "Base URL"}, {Header: "Credential command"}, {Header: "Format"}}}
	var js []any
	for _, name := range f.Names() {
		p := f.Profiles[name]
		local := p.Local != nil && *p.Local
		active := name == r.Profile
		t.Rows = append(t.Rows, []string{name, yesNo(active), yesNo(local), orNA(p.BaseURL), orNA(p.CredentialCommand), orNA(p.Format)})
		js = append(js, render.Object{{Key: "name", Value: name}, {Key: "active", Value: active}, {Key: "local", Value: local},
			{Key: "base_url", Value: p.BaseURL}, {Key: "credential_command", Value: p.CredentialCommand}, {Key: "format", Value: p.Format}})
	}
	if c.jsonMode() {
		return exitOf(c.writeJSON(render.Object{{Key: "path", Value: f.Path}, {Key: "profiles", Value: append([]any{}, js...)}}))
	}
	if len(t.Rows) == 0 {
		fmt.Fprintf(c.io.Out, "No profiles in %s.\n", tilde(f.Path))
		return shell.ExitOK
	}
	return exitOf(c.writeTable(t))
}

func configShow(c *invocation) int {
	_, r, ok := c.loadConfig()
	if !ok {
		return shell.ExitUsage
	}
	profile := config.Setting{Name: "profile", Value: r.Profile, Source: r.ProfileSource}
	if r.Profile == "" {
		profile.Source = "default"
	}
	key := config.Setting{Name: "api_key", Value: config.MaskKey(os.Getenv("TINKER_API_KEY")), Source: "env TINKER_API_KEY"}
	if key.Value == "" {
		key.Source = "not set"
	}
	file := config.Setting{Name: "config_file", Value: r.Path, Source: "default (~/.config)"}
	if os.Getenv("XDG_CONFIG_HOME") != "" {
		file.Source = "env XDG_CONFIG_HOME"
	}
	settings := []config.Setting{profile, r.BaseURL, r.CredentialCmd, key, r.Local, r.Format, file}
	if c.jsonMode() {
		var js []any
		for _, s := range settings {
			js = append(js, render.Object{{Key: "name", Value: s.Name}, {Key: "value", Value: s.Value}, {Key: "source", Value: s.Source}})
		}
		return exitOf(c.writeJSON(js))
	}
	t := &render.Table{Title: "Settings in force", Columns: []render.Column{{Header: "Setting"}, {Header: "Value"}, {Header: "Source"}}}
	for _, s := range settings {
		t.Rows = append(t.Rows, []string{s.Name, orNA(tilde(s.Value)), tilde(s.Source)})
	}
	return exitOf(c.writeTable(t))
}

// tilde shortens paths under the home directory for display.
func tilde(s string) string {
	if home, err := os.UserHomeDir(); err == nil && home != "" && home != "/" {
		return strings.ReplaceAll(s, home+string(os.PathSeparator), "~"+string(os.PathSeparator))
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

func orNA(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}

// exitOf turns an output error into an exit status.
func exitOf(err error) int {
	if err != nil {
		return shell.ExitError
	}
	return shell.ExitOK
}
