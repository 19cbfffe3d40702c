// Package config reads tinker's profiles file, $XDG_CONFIG_HOME/tinker/config.toml,
// and resolves the settings in force: a profile chosen by --profile,
// TINKER_PROFILE or default_profile, overridden field by field by the
// environment. API keys never live in the file: they come from
// TINKER_API_KEY or a profile's credential_command.
//
//	default_profile = "local"
//
//	[profiles.local]
//	local = true
//
//	[profiles.work]
//	base_url = "https://tinker.example.com"
//	credential_command = "pass show tinker/work"
//	format = "json"
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Profile is one [profiles.NAME] table.
type Profile struct {
	BaseURL           string `toml:"base_url"`
	CredentialCommand string `toml:"credential_command"`
	Local             *bool  `toml:"local"`
	Format            string `toml:"format"`
}

// File is a parsed profiles file; a missing file is an empty one.
type File struct {
	Path           string             `toml:"-"`
	DefaultProfile string             `toml:"default_profile"`
	Profiles       map[string]Profile `toml:"profiles"`
}

// profileKeys are the keys a profile may hold, for messages.
const profileKeys = "base_url, credential_command, local, format"

// DefaultPath is $XDG_CONFIG_HOME/tinker/config.toml, else
// ~/.config/tinker/config.toml.
func DefaultPath(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "tinker", "config.toml")
}

// Load reads the profiles file at path. Every problem is one line naming
// the file, the line and what to change.
func Load(path string) (*File, error) {
	f := &File{Path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	d := toml.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(f); err != nil {
		return nil, describe(path, err)
	}
	f.Path = path
	for name, p := range f.Profiles {
		if p.Format != "" && p.Format != "table" && p.Format != "json" {
			return nil, fmt.Errorf("%s: profile %q: format must be \"table\" or \"json\", not %q", path, name, p.Format)
		}
	}
	if f.DefaultProfile != "" {
		if _, ok := f.Profiles[f.DefaultProfile]; !ok {
			return nil, fmt.Errorf("%s: default_profile %q names no [profiles.%s] table (profiles: %s)",
				path, f.DefaultProfile, f.DefaultProfile, f.names())
		}
	}
	return f, nil
}

// typeErrRE matches the decoder's message for a value of the wrong type.
var typeErrRE = regexp.MustCompile(`cannot decode TOML (\w+) into .* of type \*?(\w+)`)

// describe turns a decoding error into one line: path:line: what to fix.
func describe(path string, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		e := &strict.Errors[0]
		row, _ := e.Position()
		key := []string(e.Key())
		last := key[len(key)-1]
		where := "at the top level (known: default_profile, [profiles.NAME])"
		if len(key) >= 3 && key[0] == "profiles" {
			where = fmt.Sprintf("in profile %q (known: %s)", key[1], profileKeys)
		}
		if last == "api_key" {
			return fmt.Errorf("%s:%d: api_key is not allowed in the config file: set TINKER_API_KEY, or give the profile a credential_command that prints the key", path, row)
		}
		return fmt.Errorf("%s:%d: unknown key %q %s", path, row, last, where)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		if k := de.Key(); len(k) > 0 {
			if m := typeErrRE.FindStringSubmatch(msg); m != nil {
				want := map[string]string{"bool": "true or false", "string": "a quoted string"}[m[2]]
				return fmt.Errorf("%s:%d: %s must be %s, not a TOML %s", path, row, strings.Join(k, "."), want, m[1])
			}
			msg = fmt.Sprintf("%s: %s", strings.Join(k, "."), msg)
		}
		return fmt.Errorf("%s:%d: %s; fix the TOML syntax", path, row, msg)
	}
	return fmt.Errorf("%s: %v", path, err)
}

func (f *File) names() string {
	if len(f.Profiles) == 0 {
		return "none defined"
	}
	return strings.Join(f.Names(), ", ")
}

// Names lists the profiles, sorted.
func (f *File) Names() []string {
	out := make([]string, 0, len(f.Profiles))
	for n := range f.Profiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Setting is one resolved value and where it came from.
type Setting struct {
	Name, Value, Source string
}

// Resolved is what is in force.
type Resolved struct {
	Profile       string // "" when none is selected
	ProfileSource string
	Path          string
	BaseURL       Setting
	CredentialCmd Setting
	Local         Setting // Value "true" or "false"
	Format        Setting // "" Value when nothing chose one
}

// Resolve picks the profile (flag, then TINKER_PROFILE, then
// default_profile) and fills each setting from the environment first, then
// the profile.
func (f *File) Resolve(flagProfile string, getenv func(string) string) (*Resolved, error) {
	r := &Resolved{Path: f.Path}
	switch {
	case flagProfile != "":
		r.Profile, r.ProfileSource = flagProfile, "--profile"
	case getenv("TINKER_PROFILE") != "":
		r.Profile, r.ProfileSource = getenv("TINKER_PROFILE"), "env TINKER_PROFILE"
	case f.DefaultProfile != "":
		r.Profile, r.ProfileSource = f.DefaultProfile, "default_profile in "+f.Path
	}
	var p Profile
	if r.Profile != "" {
		var ok bool
		if p, ok = f.Profiles[r.Profile]; !ok {
			return nil, fmt.Errorf("no profile %q in %s (profiles: %s)", r.Profile, f.Path, f.names())
		}
	}
	from := fmt.Sprintf("profile %q", r.Profile)
	pick := func(name, env, profile string) Setting {
		if v := getenv(env); v != "" {
			return Setting{name, v, "env " + env}
		}
		if profile != "" {
			return Setting{name, profile, from}
		}
		return Setting{name, "", "default"}
	}
	r.BaseURL = pick("base_url", "TINKER_BASE_URL", p.BaseURL)
	r.CredentialCmd = pick("credential_command", "TINKER_CREDENTIAL_CMD", p.CredentialCommand)
	r.Local = Setting{"local", "false", "default"}
	if p.Local != nil {
		r.Local = Setting{"local", fmt.Sprint(*p.Local), from}
	}
	r.Format = Setting{"format", "", "default"}
	if p.Format != "" {
		r.Format = Setting{"format", p.Format, from}
	}
	return r, nil
}

// Getenv is getenv with the profile's values filled in where the
// environment has none, so code that reads TINKER_BASE_URL and
// TINKER_CREDENTIAL_CMD sees the profile without a second reader.
func (r *Resolved) Getenv(getenv func(string) string) func(string) string {
	return func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		switch k {
		case "TINKER_BASE_URL":
			return r.BaseURL.Value
		case "TINKER_CREDENTIAL_CMD":
			return r.CredentialCmd.Value
		}
		return ""
	}
}

// MaskKey shows that a key is set without showing it: its prefix and last
// four characters at most.
func MaskKey(k string) string {
	switch {
	case k == "":
		return ""
	case len(k) <= 12:
		return "(set)"
	default:
		return k[:4] + "…" + k[len(k)-4:]
	}
}
