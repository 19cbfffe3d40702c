package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/tinkershell/tinker/lib/lazyre"
)

// decodeError turns a decoder error into an *Error saying what to fix.
func decodeError(path string, data []byte, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		e := strict.Errors[0] // the first in the file
		line, _ := e.Position()
		return &Error{Path: path, Line: line, Msg: unknownKeyMsg(indexKeys(data).fullKey(e.Key(), line))}
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, _ := de.Position()
		if msg := wrongTypeMsg(indexKeys(data), de.Key()); msg != "" {
			return &Error{Path: path, Line: line, Msg: msg}
		}
		return &Error{Path: path, Line: line, Msg: "invalid TOML: " + strings.TrimPrefix(de.Error(), "toml: ")}
	}
	return &Error{Path: path, Msg: err.Error()}
}

func unknownKeyMsg(key []string) string {
	name := key[len(key)-1]
	switch {
	case len(key) >= 3 && key[0] == "profiles":
		if isAPIKeyName(key[2]) {
			return fmt.Sprintf("%s in profile %s: %s", key[2], show(key[1]), apiKeyAdvice)
		}
		return fmt.Sprintf("unknown key %s in profile %s (known: %s)", show(key[2]), show(key[1]), strings.Join(profileKeys, ", "))
	case isAPIKeyName(name):
		return name + ": " + apiKeyAdvice
	case len(key) == 1:
		return fmt.Sprintf("unknown key %s (known: default_profile and [profiles.NAME] tables)", show(name))
	}
	return fmt.Sprintf("unknown key %s", show(strings.Join(key, ".")))
}

const apiKeyAdvice = "an API key is never read from this file; remove the line and set TINKER_API_KEY, or set credential_command to a command that prints the key"

// isAPIKeyName catches api_key and its spellings.
func isAPIKeyName(k string) bool {
	k = strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(k))
	return k == "apikey" || k == "tinkerapikey"
}

// wrongTypeMsg explains a value of the wrong type at key or at one of its
// parents (a dotted key a.b = 1 makes a a table), or returns "" when the
// decoder's error is about something else.
func wrongTypeMsg(idx keyIndex, key []string) string {
	for n := 1; n <= len(key); n++ {
		if msg := typeMismatch(idx, key[:n]); msg != "" {
			return msg
		}
	}
	return ""
}

// typeMismatch checks the value at key against the file's schema.
func typeMismatch(idx keyIndex, key []string) string {
	got, ok := idx[joinKey(key...)]
	if !ok {
		return ""
	}
	isTable := got.kind == unstable.Table || got.kind == unstable.InlineTable
	switch {
	case len(key) == 1 && key[0] == "default_profile":
		if got.kind != unstable.String {
			return "default_profile must be a string naming a profile, not " + kindName(got.kind)
		}
	case len(key) == 1 && key[0] == "profiles":
		if !isTable {
			return "profiles must hold tables such as [profiles.work], not " + kindName(got.kind)
		}
	case len(key) == 2 && key[0] == "profiles":
		if !isTable {
			table := "[profiles.NAME]"
			if !secretish(key[1]) {
				table = "[profiles." + key[1] + "]"
			}
			return fmt.Sprintf("profile %s must be a table %s, not %s", show(key[1]), table, kindName(got.kind))
		}
	case len(key) == 3 && key[0] == "profiles" && key[2] == "local":
		if got.kind != unstable.Bool {
			return fmt.Sprintf("local in profile %s must be true or false, not %s", show(key[1]), kindName(got.kind))
		}
	case len(key) == 3 && key[0] == "profiles":
		if got.kind != unstable.String {
			return fmt.Sprintf("%s in profile %s must be a string, not %s", key[2], show(key[1]), kindName(got.kind))
		}
	}
	return ""
}

// profileName is what a profile may be called: a bare TOML key, so that it
// is safe to show and to type after --profile.
var profileName = lazyre.New(`^[A-Za-z0-9_-]+$`)

// check validates the decoded values; of several problems it reports the
// first in the file.
func (f *File) check() error {
	var errs []*Error
	bad := func(line int, format string, args ...any) {
		errs = append(errs, &Error{Path: f.Path, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	if f.defaultLine > 0 {
		switch _, ok := f.Profiles[f.DefaultProfile]; {
		case f.DefaultProfile == "":
			bad(f.defaultLine, "default_profile is empty: name a profile or remove the line")
		case !ok:
			bad(f.defaultLine, "default_profile %s is not a profile in this file (%s)", show(f.DefaultProfile), knownProfiles(f))
		}
	}
	for _, name := range f.Names() {
		p := f.Profiles[name]
		switch {
		case secretish(name):
			bad(p.Line(), "a profile name looks like an API key: %s", keyAdvice)
			continue
		case !profileName.MatchString(name):
			bad(p.Line(), "profile name %s may contain only letters, digits, '-' and '_'", show(name))
			continue
		}
		for _, k := range []string{"base_url", "credential_command", "format"} {
			if p.KeyLine(k) > 0 && p.stringValue(k) == "" {
				bad(p.KeyLine(k), "%s in profile %q is empty: remove the line to use the default", k, name)
			}
		}
		if p.Format != "" && p.Format != "table" && p.Format != "json" {
			bad(p.KeyLine("format"), "format in profile %q is %s: use \"table\" or \"json\"", name, show(p.Format))
		}
		if p.BaseURL != "" {
			if msg := checkBaseURL(p.BaseURL); msg != "" {
				bad(p.KeyLine("base_url"), "base_url in profile %q %s", name, msg)
			}
		}
		for _, k := range []string{"base_url", "credential_command"} {
			if v := p.stringValue(k); looksLikeKey(v) || secretish(firstWord(v)) {
				bad(p.KeyLine(k), "%s in profile %q contains what looks like an API key: %s", k, name, keyAdvice)
			} else if p.Local && p.stringValue(k) != "" {
				bad(p.KeyLine(k), "profile %q sets both local = true and %s: a local profile uses the in-process server; remove one of them", name, k)
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	first := errs[0]
	for _, e := range errs[1:] {
		if e.Line < first.Line {
			first = e
		}
	}
	return first
}

func (p *Profile) stringValue(key string) string {
	switch key {
	case "base_url":
		return p.BaseURL
	case "credential_command":
		return p.CredentialCommand
	case "format":
		return p.Format
	}
	return ""
}

// checkBaseURL returns what is wrong with u as a service address, or "".
// It never quotes u, which may hold a password.
func checkBaseURL(u string) string {
	parsed, err := url.Parse(u)
	switch {
	case err == nil && parsed.User != nil:
		return "must not contain a user or password: use credential_command for the credential"
	case err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" ||
		parsed.RawQuery != "" || parsed.Fragment != "":
		return "must be an http(s)://host[/prefix] address, without query or fragment"
	}
	return ""
}

// keyLike matches a tml- key's random part (a long unbroken run of letters
// and digits, so that names such as tml-prod-key-2 are not taken for keys)
// and a JWT.
var keyLike = lazyre.New(`tml-[A-Za-z0-9_-]*[A-Za-z0-9]{16}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?`)

func looksLikeKey(s string) bool { return keyLike.MatchString(s) }

// keyAdvice says where a key goes instead of this file.
const keyAdvice = "keep keys out of this file; let the command fetch the key (e.g. from a password manager) or set TINKER_API_KEY"

// secretish reports whether a name or value could be a pasted key: key-like
// anywhere, or starting the way keys do (tml-, or eyJ for a JWT) however
// short its runs of letters. Such a value is refused and never quoted.
func secretish(s string) bool {
	return looksLikeKey(s) || strings.HasPrefix(s, "tml-") || strings.HasPrefix(s, "eyJ")
}

// show quotes a name or value from the file for a message, unless it
// could be a key.
func show(s string) string {
	if secretish(s) {
		return "(a value that looks like an API key, not shown)"
	}
	return strconv.Quote(s)
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// knownProfiles lists the profile names for a message.
func knownProfiles(f *File) string {
	if len(f.Profiles) == 0 {
		if f.Path == "" {
			return "no config file, as neither HOME nor XDG_CONFIG_HOME is set"
		}
		if !f.Exists {
			return f.Path + " does not exist"
		}
		return "the file defines no profiles"
	}
	return "known: " + strings.Join(f.Names(), ", ")
}
