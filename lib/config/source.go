package config

import "fmt"

// SourceKind is where a setting's value came from.
type SourceKind int

const (
	FromDefault SourceKind = iota // built in
	FromFlag                      // a command-line flag; Name is the flag
	FromEnv                       // an environment variable; Name is the variable
	FromProfile                   // a key of the selected profile; Name is the profile
	FromFile                      // default_profile in the config file
)

// Source is where a setting's value came from, precisely enough to find
// and change it.
type Source struct {
	Kind SourceKind
	Name string // the flag, the variable or the profile
	Path string // the config file, for FromProfile and FromFile
	Line int    // the line in Path that sets the value
}

// String is the source as shown to users: `flag --profile`,
// `env TINKER_BASE_URL`, `profile "work" in /path/config.toml:7`,
// `default_profile in /path/config.toml:1` or `default`.
func (s Source) String() string {
	switch s.Kind {
	case FromFlag:
		return "flag " + s.Name
	case FromEnv:
		return "env " + s.Name
	case FromProfile:
		return fmt.Sprintf("profile %q in %s", s.Name, s.place())
	case FromFile:
		return "default_profile in " + s.place()
	}
	return "default"
}

func (s Source) place() string {
	if s.Line > 0 {
		return fmt.Sprintf("%s:%d", s.Path, s.Line)
	}
	return s.Path
}
