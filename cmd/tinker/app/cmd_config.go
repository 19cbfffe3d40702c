package app

import (
	"fmt"
	"os"
	"path/filepath"
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
	path := config.Path(os.Getenv)
	if path == "" {
		fmt.Fprintln(c.io.Err, "Error: no config file: neither HOME nor XDG_CONFIG_HOME is set")
		return shell.ExitError
	}
	fmt.Fprintln(c.io.Out, path)
	return shell.ExitOK
}

// loadConfig reads the file and resolves the settings in force, or prints
// the one line that says what to fix.
func (c *invocation) loadConfig() (*config.File, *config.Settings, bool) {
	f, err := config.Load(config.Path(os.Getenv))
	if err == nil {
		flags := config.Flags{Profile: c.opts.profile, Local: c.opts.local}
		if c.opts.formatSet {
			flags.Format = c.opts.format
		}
		var s *config.Settings
		if s, err = config.Resolve(f, flags, os.Getenv); err == nil {
			return f, s, true
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
		local := p.Local
		active := name == r.Profile.Value
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
	rows := r.Rows()
	file := config.Row{Name: "config_file", Value: r.Path, Source: "default ($HOME/.config)"}
	if filepath.IsAbs(os.Getenv("XDG_CONFIG_HOME")) {
		file.Source = "env XDG_CONFIG_HOME"
	}
	rows = append(rows, file)
	if c.jsonMode() {
		var js []any
		for _, s := range rows {
			o := render.Object{{Key: "name", Value: s.Name}, {Key: "value", Value: s.Value}, {Key: "source", Value: s.Source}}
			if len(s.Overrides) > 0 {
				over := make([]any, len(s.Overrides))
				for i, v := range s.Overrides {
					over[i] = v
				}
				o = append(o, render.Member{Key: "overrides", Value: over})
			}
			js = append(js, o)
		}
		return exitOf(c.writeJSON(js))
	}
	t := &render.Table{Title: "Settings in force", Columns: []render.Column{{Header: "Setting"}, {Header: "Value"}, {Header: "Source"}}}
	for _, s := range rows {
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
