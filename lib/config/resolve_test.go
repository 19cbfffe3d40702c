package config

import (
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

const resolveFile = `default_profile = "work"

[profiles.work]
base_url = "https://work.example.com/tinker"
credential_command = "pass show tinker/work"
format = "json"

[profiles.home]
base_url = "https://home.example.com"

[profiles.laptop]
local = true
`

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// settingsLine renders every value with its source, so that one string per
// case states the whole resolution.
func settingsLine(s *Settings) string {
	var b strings.Builder
	for _, r := range s.Rows() {
		b.WriteString(r.Name + "=" + r.Value + " <" + r.Source)
		for _, o := range r.Overrides {
			b.WriteString(" > " + o)
		}
		b.WriteString(">\n")
	}
	return b.String()
}

func TestResolvePrecedence(t *testing.T) {
	f, err := Parse("/c.toml", []byte(resolveFile))
	if err != nil {
		t.Fatal(err)
	}
	noFile := &File{Path: "/none.toml", Profiles: map[string]*Profile{}}
	const key = "tml-4fT9xQ2mZ8pL3vR7wK1nabcd"
	for _, tc := range []struct {
		name  string
		file  *File
		flags Flags
		env   map[string]string
		want  string
	}{
		{"no file, no env", noFile, Flags{}, nil, `profile= <default>
base_url=` + tinkerapi.DefaultBaseURL + ` <default>
api_key= <not set>
credential_command= <default>
local=false <default>
format=table <default>
`},
		{"env only, no file", noFile, Flags{}, map[string]string{EnvAPIKey: key, EnvBaseURL: "http://127.0.0.1:8000"}, `profile= <default>
base_url=http://127.0.0.1:8000 <env TINKER_BASE_URL>
api_key=tml-…abcd <env TINKER_API_KEY>
credential_command= <default>
local=false <default>
format=table <default>
`},
		{"default_profile", f, Flags{}, nil, `profile=work <default_profile in /c.toml:1>
base_url=https://work.example.com/tinker <profile "work" in /c.toml:4>
api_key= <not set>
credential_command=pass show tinker/work <profile "work" in /c.toml:5>
local=false <default>
format=json <profile "work" in /c.toml:6>
`},
		{"TINKER_PROFILE over default_profile", f, Flags{}, map[string]string{EnvProfile: "home"}, `profile=home <env TINKER_PROFILE > default_profile in /c.toml:1>
base_url=https://home.example.com <profile "home" in /c.toml:9>
api_key= <not set>
credential_command= <default>
local=false <default>
format=table <default>
`},
		{"--profile over TINKER_PROFILE", f, Flags{Profile: "laptop"}, map[string]string{EnvProfile: "home"}, `profile=laptop <flag --profile > env TINKER_PROFILE > default_profile in /c.toml:1>
base_url=(in-process local server) <profile "laptop" in /c.toml:12>
api_key= <not set>
credential_command= <default>
local=true <profile "laptop" in /c.toml:12>
format=table <default>
`},
		{"env over profile; flags over profile", f, Flags{Format: "table", Local: true}, map[string]string{EnvBaseURL: "http://127.0.0.1:8000", EnvCredentialCmd: "cat /run/key"}, `profile=work <default_profile in /c.toml:1>
base_url=(in-process local server) <flag --local > env TINKER_BASE_URL>
api_key= <not set>
credential_command=cat /run/key <env TINKER_CREDENTIAL_CMD > profile "work" in /c.toml:5>
local=true <flag --local>
format=table <flag --format > profile "work" in /c.toml:6>
`},
		{"env key hides the profile's command", f, Flags{}, map[string]string{EnvAPIKey: key}, `profile=work <default_profile in /c.toml:1>
base_url=https://work.example.com/tinker <profile "work" in /c.toml:4>
api_key=tml-…abcd <env TINKER_API_KEY>
credential_command= <env TINKER_API_KEY > profile "work" in /c.toml:5>
local=false <default>
format=json <profile "work" in /c.toml:6>
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Resolve(tc.file, tc.flags, envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if got := settingsLine(s); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// Getenv hands the resolved values to the client configuration.
func TestResolveClientConfig(t *testing.T) {
	f, err := Parse("/c.toml", []byte(resolveFile))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CLOUDFLARE_ACCESS_CLIENT_ID": "cf-id"}
	s, err := Resolve(f, Flags{}, envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	cfg := tinkerapi.ConfigFromEnv(s.Getenv)
	if cfg.BaseURL != "https://work.example.com/tinker" || cfg.CredentialCmd != "pass show tinker/work" || cfg.APIKey != "" || cfg.CFAccessClientID != "cf-id" {
		t.Errorf("profile work: %+v", cfg)
	}

	// An API key in the environment: the profile's command is not passed,
	// so the client never mixes credentials from two places.
	env[EnvAPIKey] = "tml-envkey"
	env[EnvBaseURL] = "http://127.0.0.1:9"
	if s, err = Resolve(f, Flags{}, envOf(env)); err != nil {
		t.Fatal(err)
	}
	cfg = tinkerapi.ConfigFromEnv(s.Getenv)
	if cfg.BaseURL != "http://127.0.0.1:9" || cfg.CredentialCmd != "" || cfg.APIKey != "tml-envkey" {
		t.Errorf("env over profile: %+v", cfg)
	}

	// No profile: exactly the environment.
	s, err = Resolve(&File{Path: "/none", Profiles: map[string]*Profile{}}, Flags{}, envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tinkerapi.ConfigFromEnv(s.Getenv), tinkerapi.ConfigFromEnv(envOf(env)); got.BaseURL != want.BaseURL || got.APIKey != want.APIKey || got.CredentialCmd != want.CredentialCmd {
		t.Errorf("no profile: %+v, want %+v", got, want)
	}
}

func TestResolveUnknownProfile(t *testing.T) {
	f, err := Parse("/c.toml", []byte(resolveFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file  *File
		flags Flags
		env   map[string]string
		want  string
	}{
		{f, Flags{Profile: "wrok"}, nil, `unknown profile "wrok" (from flag --profile): known: home, laptop, work`},
		{f, Flags{}, map[string]string{EnvProfile: "prod"}, `unknown profile "prod" (from env TINKER_PROFILE): known: home, laptop, work`},
		{&File{Path: "/none.toml", Profiles: map[string]*Profile{}}, Flags{Profile: "work"}, nil, `unknown profile "work" (from flag --profile): /none.toml does not exist`},
	} {
		_, err := Resolve(tc.file, tc.flags, envOf(tc.env))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Resolve(%+v, %v) = %v, want %s", tc.flags, tc.env, err, tc.want)
		}
	}
}
