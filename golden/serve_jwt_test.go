package golden

import (
	"bufio"
	"context"
	"net"
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := tinkerCmd(t, home, "serve", "--jwt", "--addr", addr, "--data", filepath.Join(home, "data"))
	cmd.Env = append(cmd.Env, "TINKER_NOW=") // tokens expire on the real clock
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	banner := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stderr).ReadString('\n')
		banner <- line
	}()
	select {
	case line := <-banner:
		if !strings.Contains(line, "tinker server on http://"+addr) {
			t.Fatalf("banner %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("tinker serve did not start")
	}
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
