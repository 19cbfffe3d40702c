package golden

import (
	"bufio"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestServeVerboseLog runs tinker serve -v on a loopback port and makes
// requests: each gets one log line with method, path, status, duration
// and a hash of the key, never the key or the body; the banner names
// TINKER_BASE_URL and HF_ENDPOINT.
func TestServeVerboseLog(t *testing.T) {
	home := t.TempDir()
	cmd := tinkerCmd(t, home, "serve", "-v", "--addr", "127.0.0.1:0", "--data", filepath.Join(home, "data"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	var banner []string
	for len(banner) < 2 && lines.Scan() {
		banner = append(banner, lines.Text())
	}
	base := regexp.MustCompile(`TINKER_BASE_URL=(http://\S+)`).FindStringSubmatch(strings.Join(banner, "\n"))
	if base == nil || !strings.Contains(banner[1], "HF_ENDPOINT="+base[1]) {
		t.Fatalf("banner does not name TINKER_BASE_URL and HF_ENDPOINT:\n%s", strings.Join(banner, "\n"))
	}
	const key = "tml-secretkey-should-never-be-logged"
	get := func(path string, body string) {
		req, _ := http.NewRequest("POST", base[1]+path, strings.NewReader(body))
		req.Header.Set("X-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	get("/api/v1/create_session", `{"tags": [], "user_metadata": {"note": "body-secret"}, "sdk_version": "0.1"}`)
	get("/api/v1/no_such_route", "")
	cmd.Process.Signal(syscall.SIGINT)
	rest, _ := io.ReadAll(readerOf(lines))
	cmd.Wait()
	log := string(rest)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^2026-11-22T12:00:00Z POST /api/v1/create_session 200 \S+ user=[0-9a-f]{12}$`),
		regexp.MustCompile(`(?m)^2026-11-22T12:00:00Z POST /api/v1/no_such_route 404 \S+ user=[0-9a-f]{12}$`),
	} {
		if !want.MatchString(log) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "secretkey") || strings.Contains(log, "body-secret") {
		t.Errorf("the log shows a key or a body:\n%s", log)
	}
}

// readerOf gives the lines a scanner has not read yet.
func readerOf(s *bufio.Scanner) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		for s.Scan() {
			io.WriteString(pw, s.Text()+"\n")
		}
		pw.Close()
	}()
	return pr
}
