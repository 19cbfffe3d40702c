package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodFile = `# tinker profiles
default_profile = "work"

[profiles.work]
base_url = "https://tinker.example.com/services/tinker-prod"
credential_command = "pass show tinker/work"
format = "json"

[profiles.laptop]
local = true

[profiles.staging]
base_url = "http://staging.example.com:8080"
`

func TestParseGood(t *testing.T) {
	f, err := Parse("cfg.toml", []byte(goodFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Names(), ","); got != "laptop,staging,work" {
		t.Errorf("names %q", got)
	}
	if f.DefaultProfile != "work" || f.defaultLine != 2 || !f.Exists {
		t.Errorf("default %q line %d exists %v", f.DefaultProfile, f.defaultLine, f.Exists)
	}
	w := f.Profiles["work"]
	if w.BaseURL != "https://tinker.example.com/services/tinker-prod" || w.CredentialCommand != "pass show tinker/work" || w.Format != "json" || w.Local {
		t.Errorf("work = %+v", w)
	}
	for key, line := range map[string]int{"": 4, "base_url": 5, "credential_command": 6, "format": 7, "local": 0} {
		if got := w.KeyLine(key); got != line {
			t.Errorf("work %q at line %d, want %d", key, got, line)
		}
	}
	if l := f.Profiles["laptop"]; !l.Local || l.KeyLine("local") != 10 || l.Line() != 9 {
		t.Errorf("laptop = %+v", l)
	}
}

// Dotted keys and inline tables define the same profiles as [headers], and
// their lines are still known.
// A byte order mark, as some editors write, is not a syntax error.
func TestParseBOM(t *testing.T) {
	f, err := Parse("cfg.toml", []byte("\ufeff[profiles.w]\nformat = \"json\"\n"))
	if err != nil || f.Profiles["w"].KeyLine("format") != 2 {
		t.Fatalf("Parse = %+v, %v", f, err)
	}
}

func TestParseDottedAndInline(t *testing.T) {
	src := "profiles.a.format = \"json\"\nprofiles.b = { local = true,\n  format = \"table\" }\n[profiles.c]\nlocal.x = 1\n"
	f, err := Parse("cfg.toml", []byte(src))
	if err == nil || err.Error() != `cfg.toml:5: local in profile "c" must be true or false, not a table` {
		t.Fatalf("err = %v", err)
	}
	f, err = Parse("cfg.toml", []byte(src[:strings.Index(src, "[profiles.c]")]))
	if err != nil {
		t.Fatal(err)
	}
	if a := f.Profiles["a"]; a.Format != "json" || a.KeyLine("format") != 1 || a.Line() != 1 {
		t.Errorf("a = %+v", a)
	}
	if b := f.Profiles["b"]; !b.Local || b.Format != "table" || b.KeyLine("local") != 2 || b.Line() != 2 {
		t.Errorf("b = %+v %v", b, b.lines)
	}
}

func TestParseErrors(t *testing.T) {
	const p = "/home/u/.config/tinker/config.toml"
	for _, tc := range []struct{ name, src, want string }{
		{"syntax", "[profiles.work]\nbase_url = \"https://x\n", p + `:2: invalid TOML: basic strings cannot have new lines`},
		{"missing value", "default_profile = \n", p + `:1: invalid TOML: unexpected character U+000A at start of value`},
		{"duplicate table", "[profiles.a]\nlocal = true\n[profiles.a]\n", p + `:3: invalid TOML: table a already exists`},
		{"unknown key", "default_profile = \"work\"\n\n[profiles.work]\nbase_url = \"https://x\"\n\n\nbase_ulr = \"https://y\"\n",
			p + `:7: unknown key "base_ulr" in profile "work" (known: base_url, credential_command, local, format)`},
		{"unknown key inline", "\nprofiles = { work = { local = true, base_ulr = \"x\" } }\n", p + `:2: unknown key "base_ulr" in profile "work" (known: base_url, credential_command, local, format)`},
		{"unknown subtable", "[profiles.work.extra]\nx = 1\n", p + `:1: unknown key "extra" in profile "work" (known: base_url, credential_command, local, format)`},
		{"unknown top-level", "\n[work]\nlocal = true\n", p + `:2: unknown key "work" (known: default_profile and [profiles.NAME] tables)`},
		{"api_key in profile", "[profiles.work]\napi_key = \"tml-abc\"\n", p + `:2: api_key in profile "work": an API key is never read from this file; remove the line and set TINKER_API_KEY, or set credential_command to a command that prints the key`},
		{"api_key top-level", "API-KEY = \"tml-abc\"\n", p + `:1: API-KEY: an API key is never read from this file; remove the line and set TINKER_API_KEY, or set credential_command to a command that prints the key`},
		{"wrong type bool", "[profiles.work]\nlocal = \"yes\"\n", p + `:2: local in profile "work" must be true or false, not a string`},
		{"wrong type string", "[profiles.work]\nbase_url = 8000\n", p + `:2: base_url in profile "work" must be a string, not a number`},
		{"wrong type profile", "[profiles]\nwork = \"https://x\"\n", p + `:2: profile "work" must be a table [profiles.work], not a string`},
		{"wrong type profiles", "[[profiles]]\nlocal = true\n", p + `:1: profiles must hold tables such as [profiles.work], not an array of tables`},
		{"wrong type default", "default_profile = true\n", p + `:1: default_profile must be a string naming a profile, not a boolean`},
		// default_profile after a table header belongs to that table.
		{"default_profile in a table", "[profiles.work]\nlocal = true\n[profiles.home]\nlocal = true\n\ndefault_profile = \"work\"\n",
			p + `:6: unknown key "default_profile" in profile "home" (known: base_url, credential_command, local, format)`},
		{"default unknown", "default_profile = \"wrk\"\n[profiles.work]\nlocal = true\n[profiles.home]\nlocal = true\n",
			p + `:1: default_profile "wrk" is not a profile in this file (known: home, work)`},
		{"default without profiles", "default_profile = \"wrk\"\n", p + `:1: default_profile "wrk" is not a profile in this file (the file defines no profiles)`},
		{"default empty", "default_profile = \"\"\n", p + `:1: default_profile is empty: name a profile or remove the line`},
		{"bad name", "[profiles.\"my work\"]\nlocal = true\n", p + `:1: profile name "my work" may contain only letters, digits, '-' and '_'`},
		{"bad format", "[profiles.w]\nformat = \"yaml\"\n", p + `:2: format in profile "w" is "yaml": use "table" or "json"`},
		{"empty base_url", "[profiles.w]\nbase_url = \"\"\n", p + `:2: base_url in profile "w" is empty: remove the line to use the default`},
		{"bad base_url", "[profiles.w]\nbase_url = \"tinker.example.com\"\n", p + `:2: base_url in profile "w" must be an http(s)://host[/prefix] address, without query or fragment`},
		{"base_url with password", "[profiles.w]\nbase_url = \"https://me:hunter2@x.example\"\n", p + `:2: base_url in profile "w" must not contain a user or password: use credential_command for the credential`},
		{"key in command", "[profiles.w]\ncredential_command = \"echo tml-4fT9xQ2mZ8pL3vR7wK1n\"\n", p + `:2: credential_command in profile "w" contains what looks like an API key: keep keys out of this file; let the command fetch the key (e.g. from a password manager) or set TINKER_API_KEY`},
		{"local and base_url", "[profiles.w]\nlocal = true\nbase_url = \"http://x\"\n", p + `:3: profile "w" sets both local = true and base_url: a local profile uses the in-process server; remove one of them`},
		{"first of several", "[profiles.b]\nformat = \"xml\"\n[profiles.a]\nformat = \"csv\"\n", p + `:2: format in profile "b" is "xml": use "table" or "json"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(p, []byte(tc.src))
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %s\nwant %s", err, tc.want)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Line == 0 || strings.Contains(err.Error(), "\n") {
				t.Errorf("not a one-line *Error with a line: %#v", err)
			}
		})
	}
}

// Names that contain a key-like word are not keys.
func TestCommandsThatAreNotKeys(t *testing.T) {
	for _, cmd := range []string{"op read op://vault/tml-prod-key-2/credential", "pass show tinker/tml-local-user", "cat ~/.tinker-key"} {
		src := "[profiles.w]\ncredential_command = \"" + cmd + "\"\n"
		if _, err := Parse("c.toml", []byte(src)); err != nil {
			t.Errorf("%s: %v", cmd, err)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	f, err := Load(path)
	if err != nil {
		t.Fatalf("missing file: %v", err)
	}
	if f.Exists || len(f.Profiles) != 0 || f.Path != path {
		t.Errorf("missing file loaded as %+v", f)
	}
	if err := os.WriteFile(path, []byte(goodFile), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err = Load(path); err != nil || !f.Exists || len(f.Profiles) != 3 {
		t.Fatalf("Load = %+v, %v", f, err)
	}
	if err := os.WriteFile(path, []byte("[profiles.w]\nlocal = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err = Load(path); err == nil || err.Error() != path+`:2: local in profile "w" must be true or false, not a number` {
		t.Errorf("Load bad file: %v", err)
	}
	if _, err = Load(dir); err == nil || !strings.HasPrefix(err.Error(), "config file: ") {
		t.Errorf("Load of a directory: %v", err)
	}
}

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_CONFIG_HOME": "/x/cfg", "HOME": "/home/u"}, "/x/cfg/tinker/config.toml"},
		{map[string]string{"XDG_CONFIG_HOME": "rel/cfg", "HOME": "/home/u"}, "/home/u/.config/tinker/config.toml"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.config/tinker/config.toml"},
		{nil, ""},
	} {
		if got := Path(envOf(tc.env)); got != tc.want {
			t.Errorf("Path(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
	f, err := Load("")
	if err != nil || f.Exists || len(f.Profiles) != 0 {
		t.Fatalf("Load(\"\") = %+v, %v", f, err)
	}
	if _, err := Resolve(f, Flags{Profile: "w"}, envOf(nil)); err == nil || err.Error() != `unknown profile "w" (from flag --profile): no config file, as neither HOME nor XDG_CONFIG_HOME is set` {
		t.Errorf("unknown profile without a config file: %v", err)
	}
}
