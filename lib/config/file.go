package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	"github.com/pelletier/go-toml/v2"
)

// Profile is one [profiles.NAME] table. Zero fields were not set.
type Profile struct {
	Name              string
	BaseURL           string
	CredentialCommand string
	Local             bool
	Format            string // "table" or "json"

	path  string
	lines map[string]int // key → line, for the keys the table sets
}

// profileKeys are the keys a profile may set, in the order messages list them.
var profileKeys = []string{"base_url", "credential_command", "local", "format"}

// Line is where the profile's table starts.
func (p *Profile) Line() int { return p.lines[""] }

// KeyLine is the line that sets key, or 0 when the profile leaves it unset.
func (p *Profile) KeyLine(key string) int { return p.lines[key] }

// File is a loaded config file; a file that does not exist loads as one
// with no profiles.
type File struct {
	Path           string
	Exists         bool
	DefaultProfile string // "" when the file names none
	Profiles       map[string]*Profile

	defaultLine int
}

// Names are the profile names, sorted.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Profiles))
	for n := range f.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Load reads the config file at path. A missing file, or path "" (no
// place for one), is not an error.
func Load(path string) (*File, error) {
	if path == "" {
		return &File{Profiles: map[string]*Profile{}}, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{Path: path, Profiles: map[string]*Profile{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	return Parse(path, data)
}

// fileDoc and profileDoc are the file's schema for the strict decoder.
type fileDoc struct {
	DefaultProfile string                `toml:"default_profile"`
	Profiles       map[string]profileDoc `toml:"profiles"`
}

type profileDoc struct {
	BaseURL           string `toml:"base_url"`
	CredentialCommand string `toml:"credential_command"`
	Local             bool   `toml:"local"`
	Format            string `toml:"format"`
}

// Parse decodes the config file's contents; path is used in errors. Every
// error is an *Error naming the line to fix.
func Parse(path string, data []byte) (*File, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // as some editors write
	var doc fileDoc
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, decodeError(path, data, err)
	}
	idx := indexKeys(data)
	f := &File{
		Path:           path,
		Exists:         true,
		DefaultProfile: doc.DefaultProfile,
		Profiles:       make(map[string]*Profile, len(doc.Profiles)),
		defaultLine:    idx.line("default_profile"),
	}
	for name, d := range doc.Profiles {
		p := &Profile{
			Name:              name,
			BaseURL:           d.BaseURL,
			CredentialCommand: d.CredentialCommand,
			Local:             d.Local,
			Format:            d.Format,
			path:              path,
			lines:             map[string]int{"": idx.line("profiles", name)},
		}
		for _, k := range profileKeys {
			if l := idx.line("profiles", name, k); l > 0 {
				p.lines[k] = l
			}
		}
		f.Profiles[name] = p
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}
