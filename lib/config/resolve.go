package config

import (
	"fmt"
	"strconv"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Flags are the command-line flags that take part in resolution; zero
// values mean the flag was not given.
type Flags struct {
	Profile string // --profile NAME
	Local   bool   // --local
	Format  string // --format table|json
}

// Value is a resolved setting: its value, where it came from and the
// lower-precedence sources it hides, highest first.
type Value[T any] struct {
	Value     T
	Source    Source
	Overrides []Source
}

// Settings are the values in force for one run of tinker.
type Settings struct {
	Path              string        // the config file consulted, whether or not it exists
	Profile           Value[string] // "" when no profile is selected
	BaseURL           Value[string]
	APIKey            Value[string] // from the environment only; show it with MaskKey
	CredentialCommand Value[string]
	Local             Value[bool]
	Format            Value[string]

	getenv func(string) string
}

// Environment variables that take part in resolution.
const (
	EnvProfile       = "TINKER_PROFILE"
	EnvBaseURL       = "TINKER_BASE_URL"
	EnvAPIKey        = "TINKER_API_KEY"
	EnvCredentialCmd = "TINKER_CREDENTIAL_CMD"
)

// Resolve works out the settings in force from flags, the environment
// (getenv, normally os.Getenv) and the profile file f, with the precedence
// given in the package documentation. It fails only when the selected
// profile is not in f.
func Resolve(f *File, flags Flags, getenv func(string) string) (*Settings, error) {
	s := &Settings{Path: f.Path, getenv: getenv}

	// The profile name: --profile, TINKER_PROFILE, default_profile.
	var cands []candidate[string]
	if flags.Profile != "" {
		cands = append(cands, candidate[string]{flags.Profile, Source{Kind: FromFlag, Name: "--profile"}})
	}
	if v := getenv(EnvProfile); v != "" {
		cands = append(cands, candidate[string]{v, Source{Kind: FromEnv, Name: EnvProfile}})
	}
	if f.DefaultProfile != "" {
		cands = append(cands, candidate[string]{f.DefaultProfile, Source{Kind: FromFile, Path: f.Path, Line: f.defaultLine}})
	}
	s.Profile = pick(cands, "")
	var p *Profile
	if name := s.Profile.Value; name != "" {
		var ok bool
		if p, ok = f.Profiles[name]; !ok {
			return nil, fmt.Errorf("unknown profile %s (from %s): %s", show(name), s.Profile.Source, knownProfiles(f))
		}
	}
	from := func(key string) Source {
		return Source{Kind: FromProfile, Name: p.Name, Path: f.Path, Line: p.KeyLine(key)}
	}
	has := func(key string) bool { return p != nil && p.KeyLine(key) > 0 }

	// base_url: TINKER_BASE_URL, the profile, the hosted service.
	cands = cands[:0]
	if v := getenv(EnvBaseURL); v != "" {
		cands = append(cands, candidate[string]{v, Source{Kind: FromEnv, Name: EnvBaseURL}})
	}
	if has("base_url") {
		cands = append(cands, candidate[string]{p.BaseURL, from("base_url")})
	}
	s.BaseURL = pick(cands, tinkerapi.DefaultBaseURL)

	// The credential, as a whole: the environment's if it sets either
	// variable, else the profile's command.
	key, envCmd := getenv(EnvAPIKey), getenv(EnvCredentialCmd)
	if key != "" {
		s.APIKey = Value[string]{Value: key, Source: Source{Kind: FromEnv, Name: EnvAPIKey}}
	}
	cands = cands[:0]
	if envCmd != "" {
		cands = append(cands, candidate[string]{envCmd, Source{Kind: FromEnv, Name: EnvCredentialCmd}})
	}
	if has("credential_command") {
		cands = append(cands, candidate[string]{p.CredentialCommand, from("credential_command")})
	}
	if key != "" && envCmd == "" && has("credential_command") {
		// The key hides the profile's command: no value, but say so.
		s.CredentialCommand = Value[string]{Source: s.APIKey.Source, Overrides: []Source{from("credential_command")}}
	} else {
		s.CredentialCommand = pick(cands, "")
	}

	// local: --local, the profile.
	var lc []candidate[bool]
	if flags.Local {
		lc = append(lc, candidate[bool]{true, Source{Kind: FromFlag, Name: "--local"}})
	}
	if has("local") {
		lc = append(lc, candidate[bool]{p.Local, from("local")})
	}
	s.Local = pick(lc, false)

	// format: --format, the profile, table.
	cands = cands[:0]
	if flags.Format != "" {
		cands = append(cands, candidate[string]{flags.Format, Source{Kind: FromFlag, Name: "--format"}})
	}
	if has("format") {
		cands = append(cands, candidate[string]{p.Format, from("format")})
	}
	s.Format = pick(cands, "table")
	return s, nil
}

type candidate[T any] struct {
	value  T
	source Source
}

// pick takes the first candidate, recording the others as overridden, or
// the default when there is none.
func pick[T any](cands []candidate[T], def T) Value[T] {
	if len(cands) == 0 {
		return Value[T]{Value: def, Source: Source{Kind: FromDefault}}
	}
	v := Value[T]{Value: cands[0].value, Source: cands[0].source}
	for _, c := range cands[1:] {
		v.Overrides = append(v.Overrides, c.source)
	}
	return v
}

// Getenv answers like getenv with the profile's values in place: pass it
// to tinkerapi.ConfigFromEnv to configure a client for these settings.
func (s *Settings) Getenv(name string) string {
	switch name {
	case EnvBaseURL:
		if s.BaseURL.Source.Kind == FromProfile {
			return s.BaseURL.Value
		}
	case EnvCredentialCmd:
		if s.CredentialCommand.Source.Kind == FromProfile {
			return s.CredentialCommand.Value
		}
	}
	return s.getenv(name)
}

// Row is one setting as shown by `tinker config show`: secrets masked.
type Row struct {
	Name      string   `json:"name"`
	Value     string   `json:"value"`
	Source    string   `json:"source"`
	Overrides []string `json:"overrides,omitempty"`
}

// LocalServer stands for the base URL when local is in force.
const LocalServer = "(in-process local server)"

// Rows are the settings for display, in a fixed order. An unset value is "".
func (s *Settings) Rows() []Row {
	row := func(name, value string, src Source, over []Source) Row {
		r := Row{Name: name, Value: value, Source: src.String()}
		for _, o := range over {
			r.Overrides = append(r.Overrides, o.String())
		}
		return r
	}
	base := row("base_url", s.BaseURL.Value, s.BaseURL.Source, s.BaseURL.Overrides)
	if s.Local.Value {
		// The local server's address is chosen when it starts.
		var over []Source
		if s.BaseURL.Source.Kind != FromDefault {
			over = []Source{s.BaseURL.Source}
		}
		base = row("base_url", LocalServer, s.Local.Source, over)
	}
	key := row("api_key", MaskKey(s.APIKey.Value), s.APIKey.Source, nil)
	if s.APIKey.Value == "" {
		key.Source = "not set"
	}
	return []Row{
		row("profile", s.Profile.Value, s.Profile.Source, s.Profile.Overrides),
		base,
		key,
		row("credential_command", MaskCommand(s.CredentialCommand.Value), s.CredentialCommand.Source, s.CredentialCommand.Overrides),
		row("local", strconv.FormatBool(s.Local.Value), s.Local.Source, s.Local.Overrides),
		row("format", s.Format.Value, s.Format.Source, s.Format.Overrides),
	}
}
