package golden

import (
	"os"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tinkershell/tinker/lib/hfhub/hubtest"
)

// HubToken is the token the loopback Hub accepts; cases check that it never
// appears in any output.
const HubToken = "hf_GoldenTokenAbcdefghijklmnop42"

type hubKey struct{}

// hubHolder keeps a case's loopback Hub between commands.
type hubHolder struct{ srv *hubtest.Server }

// hubFake is the testscript command for a loopback Hugging Face Hub:
//
//	hubfake                          start it; later commands get HF_ENDPOINT and HF_TOKEN
//	hubfake repo NS/NAME FILE...     add a repo holding the named files of the work dir
//	hubfake file NS/NAME BRANCH PATH print a file of the repo to stdout
//	hubfake echotoken                error answers quote the Authorization header
func hubFake(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("hubfake: no negation")
	}
	h := ts.Value(hubKey{}).(*hubHolder)
	switch {
	case len(args) == 0:
		if h.srv != nil {
			ts.Fatalf("hubfake: already started")
		}
		h.srv = hubtest.New(HubToken)
		ts.Defer(h.srv.Close)
		ts.Setenv("HF_ENDPOINT", h.srv.URL())
		ts.Setenv("HF_TOKEN", HubToken)
	case h.srv == nil:
		ts.Fatalf("hubfake: start it first")
	case args[0] == "repo" && len(args) >= 2:
		files := map[string]string{}
		for _, name := range args[2:] {
			data, err := os.ReadFile(ts.MkAbs(name))
			ts.Check(err)
			files[filepath.Base(name)] = string(data)
		}
		h.srv.AddRepo(args[1], files)
	case args[0] == "echotoken" && len(args) == 1:
		h.srv.EchoToken(true)
	case args[0] == "file" && len(args) == 4:
		data, ok := h.srv.Files(args[1], args[2])[args[3]]
		if !ok {
			ts.Fatalf("hubfake: %s@%s has no %s", args[1], args[2], args[3])
		}
		ts.Stdout().Write(data)
	default:
		ts.Fatalf("usage: hubfake [repo NS/NAME FILE... | file NS/NAME BRANCH PATH | echotoken]")
	}
}
