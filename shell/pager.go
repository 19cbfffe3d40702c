package shell

import (
	"os"
	"os/exec"
	"strings"

	xterm "golang.org/x/term"
)

// defaultPager is used when $PAGER is unset: -R passes colours through.
const defaultPager = "less -R"

// page shows text through the user's pager when it is longer than the
// terminal, as help pages are at the prompt; it reports false (the caller
// prints the text) when standard output is not a terminal, the text fits,
// or no pager runs. The keyboard is paused meanwhile so that the pager
// gets the keys.
func (in *Interp) page(text string) bool {
	_, rows, err := xterm.GetSize(1)
	if err != nil || !xterm.IsTerminal(1) || strings.Count(text, "\n")+1 < rows-1 {
		return false
	}
	pager, set := os.LookupEnv("PAGER")
	if !set {
		pager = defaultPager
		if _, err := exec.LookPath("less"); err != nil {
			return false
		}
	}
	if strings.TrimSpace(pager) == "" || pager == "cat" {
		return false
	}
	cmd := exec.Command("sh", "-c", pager)
	cmd.Stdin = strings.NewReader(text + "\n")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if p, ok := in.keys.(interface{ pause() func() }); ok {
		defer p.pause()()
	}
	return cmd.Run() == nil
}
