package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

const sample = `default_profile = "local"

[profiles.local]
local = true

[profiles.work]
base_url = "https://work.example"
credential_command = "pass show tinker"
format = "json"
`

func TestResolvePrecedence(t *testing.T) {
	f, err := Load(write(t, sample))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		flag    string
		env     map[string]string
		profile string
		base    Setting
		local   string
		format  string
	}{
		{"", nil, "local", Setting{"base_url", "", "default"}, "true", ""},
		{"", map[string]string{"TINKER_PROFILE": "work"}, "work", Setting{"base_url", "https://work.example", `profile "work"`}, "false", "json"},
		{"work", map[string]string{"TINKER_PROFILE": "local"}, "work", Setting{"base_url", "https://work.example", `profile "work"`}, "false", "json"},
		{"work", map[string]string{"TINKER_BASE_URL": "http://env"}, "work", Setting{"base_url", "http://env", "env TINKER_BASE_URL"}, "false", "json"},
	}
	for _, c := range cases {
		r, err := f.Resolve(c.flag, env(c.env))
		if err != nil {
			t.Fatal(err)
		}
		if r.Profile != c.profile || r.BaseURL != c.base || r.Local.Value != c.local || r.Format.Value != c.format {
			t.Errorf("flag %q env %v: got %+v", c.flag, c.env, r)
		}
		get := r.Getenv(env(c.env))
		if get("TINKER_BASE_URL") != c.base.Value {
			t.Errorf("Getenv(TINKER_BASE_URL) = %q, want %q", get("TINKER_BASE_URL"), c.base.Value)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct{ body, want string }{
		{"[profiles.work]\nbase_ulr = \"x\"\n", `:2: unknown key "base_ulr" in profile "work" (known: base_url, credential_command, local, format)`},
		{"[profiles.work]\napi_key = \"tml-secret\"\n", `:2: api_key is not allowed in the config file`},
		{"[profiles.work]\nlocal = \"yes\"\n", `:2: profiles.work.local must be true or false, not a TOML string`},
		{"default_profile = \n", `:1: `},
		{"[profiles.a]\nformat = \"yaml\"\n", `profile "a": format must be "table" or "json", not "yaml"`},
		{"default_profile = \"b\"\n[profiles.a]\n", `default_profile "b" names no [profiles.b] table (profiles: a)`},
		{"colour = 1\n", `:1: unknown key "colour" at the top level`},
	}
	for _, c := range cases {
		p := write(t, c.body)
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), p) {
			t.Errorf("%q: err = %v, want %q after the path", c.body, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "tml-secret") {
			t.Errorf("the key leaked into %v", err)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("error is more than one line: %q", err)
		}
	}
}

func TestMissingFileAndUnknownProfile(t *testing.T) {
	f, err := Load(filepath.Join(t.TempDir(), "none.toml"))
	if err != nil || len(f.Profiles) != 0 {
		t.Fatalf("missing file: %v %+v", err, f)
	}
	if _, err := f.Resolve("work", env(nil)); err == nil || !strings.Contains(err.Error(), `no profile "work"`) {
		t.Errorf("unknown profile: %v", err)
	}
	r, err := f.Resolve("", env(nil))
	if err != nil || r.Profile != "" || r.Local.Value != "false" {
		t.Errorf("no profile: %v %+v", err, r)
	}
}

func TestMaskKey(t *testing.T) {
	if got := MaskKey("tml-abcdefghijklmnop1234"); got != "tml-…1234" {
		t.Errorf("MaskKey = %q", got)
	}
	if got := MaskKey("short"); got != "(set)" {
		t.Errorf("MaskKey(short) = %q", got)
	}
}
