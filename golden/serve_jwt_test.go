package golden

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// TestServeJWT (issue 22, item 5): a real `tinker serve --jwt` process
// offers the JWT exchange: the Go client's whoami names the key's user,
// the CLI works on the token, and SIGTERM stops the server cleanly.
func TestServeJWT(t *testing.T) {
	home := t.TempDir()
	// Tokens expire on the real clock.
	addr, cmd := startServe(t, home, []string{"TINKER_NOW="}, "--jwt", "--data", filepath.Join(home, "data"))
	const key = "tml-jwt-golden"
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: "http://" + addr, APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	who, err := c.Whoami(context.Background())
	if err != nil || who.Sub != server.OwnerURN(key) {
		t.Fatalf("whoami: %+v %v", who, err)
	}
	cli := tinkerCmd(t, home, "run", "list")
	cli.Env = append(cli.Env, "TINKER_API_KEY="+key, "TINKER_BASE_URL=http://"+addr)
	if out, err := cli.CombinedOutput(); err != nil || strings.Contains(string(out), "Error") {
		t.Errorf("tinker run list on a JWT: %v\n%s", err, out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("tinker serve after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("tinker serve did not stop on SIGTERM")
	}
}
