package app

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/train"
)

// The command table is static data, so the defaults its help names are
// written out; this keeps them equal to the values the commands use.
func TestHelpNamesCurrentDefaults(t *testing.T) {
	cases := []struct {
		command, flag, want string
	}{
		{"eval", "--max-tokens", fmt.Sprintf("(default %d)", train.DefaultEvalMaxTokens)},
		{"train sft", "--batch-size", fmt.Sprintf("(default %d)", train.DefaultBatchSize)},
		{"train sft", "--save-every", fmt.Sprintf("(default %d)", train.DefaultSaveEvery)},
		{"train sft", "--eval-every", fmt.Sprintf("(default %d)", train.DefaultEvalEvery)},
		{"train sft", "--keep-states", fmt.Sprintf("(default %d;", train.DefaultKeepStates)},
		{"train dpo", "--save-every", fmt.Sprintf("(default %d)", train.DefaultSaveEvery)},
		{"train dpo", "--keep-states", fmt.Sprintf("(default %d;", train.DefaultKeepStates)},
		{"train dpo", "--beta", fmt.Sprintf("(default %g)", train.DefaultDPOBeta)},
		{"train dpo", "--batch-size", fmt.Sprintf("(default %d)", train.DefaultBatchSize)},
		{"train rl", "--group-size", fmt.Sprintf("(default %d)", train.DefaultGroupSize)},
		{"train rl", "--steps", fmt.Sprintf("(default %d)", train.DefaultRLSteps)},
		{"train rl", "--max-tokens", fmt.Sprintf("(default %d)", train.DefaultRLMaxTokens)},
		{"train rl", "--save-every", fmt.Sprintf("(default %d)", train.DefaultSaveEvery)},
	}
	for _, c := range cases {
		help, ok := flagHelp(c.command, c.flag)
		if !ok {
			t.Errorf("tinker %s has no %s", c.command, c.flag)
		} else if !strings.Contains(help, c.want) {
			t.Errorf("tinker %s %s: help %q does not say %q", c.command, c.flag, help, c.want)
		}
	}
}

func TestRunColumnsHelp(t *testing.T) {
	want := "Comma-separated columns: " + strings.Join(runColumnKeys(), ", ") + "."
	if runColumnsHelp != want {
		t.Errorf("run list --columns help is %q, want %q", runColumnsHelp, want)
	}
}

// flagHelp finds a flag of the command named by its words.
func flagHelp(command, flag string) (string, bool) {
	for _, n := range walk(root) {
		if strings.Join(n.words, " ") != command {
			continue
		}
		for _, f := range n.cmd.flags() {
			if f.Long == flag {
				return f.Help, true
			}
		}
	}
	return "", false
}
