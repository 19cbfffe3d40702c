// Command tinker is a scriptable shell for the Tinker fine-tuning service.
package main

import (
	"os"

	"github.com/tinkershell/tinker/cmd/tinker/app"
	"github.com/tinkershell/tinker/lib/term"
)

func main() {
	os.Exit(app.Main(os.Args[1:], term.System()))
}
