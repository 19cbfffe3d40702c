package main

// The linker lays out packages' code depth-first from main's imports, so
// the order main names them in decides where each package's init code
// lands. Through app alone, this module's 3 MB of code sat between the
// dependencies, and their ~240 initialisers, which run at every start,
// were spread over as many 64 KB stretches of a 10 MB text: each stretch a
// page fault. Naming the dependencies first puts them (with everything
// they import) ahead of this module's code: 11-14 fewer faults and ~2.5%
// less CPU for `tinker -c '1+1'` (docs/architecture.md, section
// "Cold start: what `tinker -c '1+1'` pays, and its floor").
// TestDependencyInitsComeFirst keeps the order and that each package here
// is one the rest of tinker imports anyway, so none is linked for this.
import (
	_ "archive/tar"
	_ "compress/bzip2"
	_ "crypto/tls"
	_ "encoding/json"
	_ "mime"
	_ "net/http"

	_ "github.com/fatih/color"
	_ "github.com/google/uuid"
	_ "github.com/mattn/go-isatty"
	_ "github.com/mattn/go-runewidth"
	_ "github.com/pelletier/go-toml/v2"
	_ "github.com/peterh/liner"
	_ "go.starlark.net/lib/json"
	_ "go.starlark.net/lib/math"
	_ "go.starlark.net/lib/time"
	_ "go.starlark.net/starlark"
	_ "go.starlark.net/starlarkstruct"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
	_ "golang.org/x/text/unicode/norm"
)
