package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startLimited runs a server on loopback with small connection limits and
// a short body timeout.
func startLimited(t *testing.T) string {
	t.Helper()
	s, err := Open(Options{DataDir: t.TempDir(), SweepInterval: -1, MaxConns: 8, MaxConnsPerClient: 4, BodyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	base, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(base, "http://")
}

// rawRequest sends text on a new connection and reads one answer.
func rawRequest(t *testing.T, addr, text string) (*http.Response, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, text); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to %.60q: %v", text, err)
	}
	resp.Body.Close()
	return resp, c
}

// TestSlowBodiesAndConnectionLimits (issue 31, item 18): connections that
// send their bodies too slowly are closed after the body timeout; while a
// client holds its share of connections, a further one gets 429 but a
// health check still answers; once the slow ones are gone, work resumes.
func TestSlowBodiesAndConnectionLimits(t *testing.T) {
	addr := startLimited(t)
	var slow []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /api/v1/create_session HTTP/1.1\r\nHost: x\r\nX-API-Key: tml-slow\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		slow = append(slow, c)
	}
	time.Sleep(50 * time.Millisecond) // the server has accepted them
	resp, _ := rawRequest(t, addr, "GET /api/v1/training_runs HTTP/1.1\r\nHost: x\r\nX-API-Key: tml-a\r\n\r\n")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a fifth connection of one client = %d, want 429 with Retry-After", resp.StatusCode)
	}
	if resp, _ := rawRequest(t, addr, "GET /api/v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 {
		t.Errorf("health check over the limit = %d, want 200", resp.StatusCode)
	}
	for i, c := range slow {
		c.SetReadDeadline(time.Now().Add(15 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("slow connection %d still open: %v", i, err)
		}
	}
	time.Sleep(50 * time.Millisecond) // the server has counted them closed
	if resp, _ := rawRequest(t, addr, "GET /api/v1/training_runs HTTP/1.1\r\nHost: x\r\nX-API-Key: tml-a\r\n\r\n"); resp.StatusCode != 200 {
		t.Errorf("after the slow connections closed = %d, want 200", resp.StatusCode)
	}
}

// TestHugeHeadersAndSmuggling (issue 31, item 20): a header block past
// 64 KiB (a 200 KB key, 1,100 headers of 900 bytes) is answered 431, and
// a request with both Content-Length and Transfer-Encoding 400 with the
// connection closed, before any handler does work.
func TestHugeHeadersAndSmuggling(t *testing.T) {
	addr := startLimited(t)
	key := "tml-" + strings.Repeat("k", 200<<10)
	if resp, _ := rawRequest(t, addr, "GET /api/v1/training_runs HTTP/1.1\r\nHost: x\r\nX-API-Key: "+key+"\r\n\r\n"); resp.StatusCode != 431 {
		t.Errorf("200 KB key = %d, want 431", resp.StatusCode)
	}
	var many strings.Builder
	for i := range 1100 {
		fmt.Fprintf(&many, "X-Pad-%d: %s\r\n", i, strings.Repeat("p", 900))
	}
	if resp, _ := rawRequest(t, addr, "GET /api/v1/healthz HTTP/1.1\r\nHost: x\r\n"+many.String()+"\r\n"); resp.StatusCode != 431 {
		t.Errorf("1,100 headers of 900 B = %d, want 431", resp.StatusCode)
	}
	body := `{"tags":[],"user_metadata":{},"sdk_version":"0.25.0","type":"create_session"}`
	smuggle := fmt.Sprintf("POST /api/v1/create_session HTTP/1.1\r\nHost: x\r\nX-API-Key: tml-a\r\nContent-Type: application/json\r\n"+
		"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	resp, c := rawRequest(t, addr, smuggle)
	if resp.StatusCode != 400 || !resp.Close {
		t.Errorf("Content-Length with Transfer-Encoding = %d (close %v), want 400 and the connection closed", resp.StatusCode, resp.Close)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _ := io.Copy(io.Discard, c); n != 0 {
		t.Errorf("%d more bytes after the refusal", n)
	}
	chunked := fmt.Sprintf("POST /api/v1/create_session HTTP/1.1\r\nHost: x\r\nX-API-Key: tml-a\r\nContent-Type: application/json\r\n"+
		"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	if resp, _ := rawRequest(t, addr, chunked); resp.StatusCode != 200 {
		t.Errorf("a chunked body alone = %d, want 200", resp.StatusCode)
	}
}

// TestHeadScanner: the scanner finds the head of each request on a
// kept-alive connection, split across reads anywhere, and ignores header
// names inside a body.
func TestHeadScanner(t *testing.T) {
	ok := "POST /a HTTP/1.1\r\nContent-Length: 40\r\n\r\n" + "Transfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n" +
		"GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
	bad := ok + "POST /c HTTP/1.1\r\ntransfer-encoding: chunked\r\nCONTENT-LENGTH: 3\r\n\r\n0\r\n\r\n"
	for _, step := range []int{1, 3, 7, 1000} {
		for _, c := range []struct {
			in   string
			want bool
		}{{ok, false}, {bad, true}} {
			var h headScanner
			got := false
			for i := 0; i < len(c.in); i += step {
				got = h.feed([]byte(c.in[i:min(i+step, len(c.in))])) || got
			}
			if got != c.want {
				t.Errorf("step %d: smuggled = %v, want %v for %q", step, got, c.want, c.in)
			}
		}
	}
}
