// Command tinker-local is tinker with the local server linked in: lib/server
// and its SQLite store, the engine, the web console. tinker hands its
// process over to tinker-local for --local, serve and console, so that
// tinker itself starts without them (docs/architecture.md, "Splitting the
// local server out of `tinker`"); run directly, it is tinker.
package main

import (
	"fmt"
	"os"

	"github.com/tinkershell/tinker/cmd/tinker/app"
	"github.com/tinkershell/tinker/cmd/tinker/localserver"
	"github.com/tinkershell/tinker/lib/term"
)

func main() {
	if err := app.CheckCompanion(); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
	app.Local = localserver.Server{}
	os.Exit(app.Main(os.Args[1:], term.System()))
}
