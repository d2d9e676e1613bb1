package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// names resolves every name it knows to loopback, as a test's DNS would
// resolve the real hosts.
type names map[string]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ip, ok := n[strings.TrimRight(strings.ToLower(host), ".")]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr(ip)}, nil
}

// startProxy serves a proxy for hosts on loopback until the test ends,
// and checks that Serve returns once its context is done.
func startProxy(t *testing.T, hosts ...string) *url.URL {
	t.Helper()
	allow, err := ParseAllowlist(hosts)
	if err != nil {
		t.Fatal(err)
	}
	p := New(allow, names{"example.com": "127.0.0.1", "other.test": "127.0.0.1", "in-range.test": "127.0.0.1"}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after its context ended")
		}
	})
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

func get(t *testing.T, client *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := client.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPlainHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s", r.Method, r.URL.Path)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	proxy := startProxy(t, "example.com")
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}

	if code, body := get(t, client, "http://example.com:"+port+"/a"); code != 200 || body != "hello GET /a" {
		t.Errorf("allowed host: %d %q, want 200 \"hello GET /a\"", code, body)
	}
	// Names are matched without case and whatever the port.
	if code, _ := get(t, client, "http://EXAMPLE.com.:"+port+"/"); code != 200 {
		t.Errorf("allowed host in capitals with a trailing dot: %d, want 200", code)
	}
	code, body := get(t, client, "http://other.test:"+port+"/")
	if code != http.StatusForbidden || !strings.Contains(body, "other.test is not in the task's allowed_hosts") {
		t.Errorf("other host: %d %q, want 403 naming it", code, body)
	}
	if code, _ := get(t, client, "http://127.0.0.1:"+port+"/"); code != http.StatusForbidden {
		t.Errorf("an address not allowed: %d, want 403", code)
	}
	// A body reaches the host whole.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(w, r.Body) }))
	defer echo.Close()
	_, eport, _ := net.SplitHostPort(echo.Listener.Addr().String())
	big := strings.Repeat("x", 200<<10)
	resp, err := client.Post("http://example.com:"+eport+"/", "text/plain", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != big {
		t.Errorf("a 200 KiB body came back as %d bytes", len(got))
	}
}

func TestConnect(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	proxy := startProxy(t, "*.com", "10.0.0.0/8")
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(proxy)
	client := &http.Client{Transport: tr}

	// httptest's certificate is for example.com, which *.com allows.
	if code, body := get(t, client, "https://example.com:"+port+"/"); code != 200 || body != "secret" {
		t.Errorf("allowed host through CONNECT: %d %q, want 200 \"secret\"", code, body)
	}
	_, msg := get(t, client, "https://other.test:"+port+"/")
	if !strings.Contains(msg, "Forbidden") {
		t.Errorf("other host through CONNECT: %q, want the proxy's 403", msg)
	}
	// 10.0.0.0/8 allows no name that resolves to loopback.
	if code, _ := get(t, client, "https://in-range.test:"+port+"/"); code == 200 {
		t.Error("a name resolving outside the allowed range was let through")
	}
}

func TestAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	proxy := startProxy(t, "127.0.0.0/8")
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	if code, _ := get(t, client, "http://127.0.0.1:"+port+"/"); code != 200 {
		t.Errorf("an address in an allowed range: %d, want 200", code)
	}
	if code, _ := get(t, client, "http://in-range.test:"+port+"/"); code != 200 {
		t.Errorf("a name resolving into an allowed range: %d, want 200", code)
	}
	if code, _ := get(t, client, "http://nowhere.test:"+port+"/"); code != http.StatusForbidden {
		t.Errorf("a name that does not resolve: %d, want 403", code)
	}
}

func TestWildcardIsNotTheApex(t *testing.T) {
	allow, err := ParseAllowlist([]string{"*.example.com", "pypi.org."})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"a.example.com": true, "a.b.example.com": true, "example.com": false,
		"badexample.com": false, "pypi.org": true, "PyPI.org": true, "www.pypi.org": false} {
		if got := allow.allowsName(host); got != want {
			t.Errorf("allowsName(%q) = %v, want %v", host, got, want)
		}
	}
	if _, err := ParseAllowlist([]string{"10.0.0.0/33"}); err == nil {
		t.Error("a CIDR range of 33 bits was read")
	}
}

// TestBounded checks that a proxy serves MaxConns connections at once and
// answers one more 503, and that Serve returns with tunnels still open.
func TestBounded(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	_, port, _ := net.SplitHostPort(up.Addr().String())
	allow, _ := ParseAllowlist([]string{"example.com"})
	p := New(allow, names{"example.com": "127.0.0.1"}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	connect := func() string {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "CONNECT example.com:%s HTTP/1.1\r\nHost: example.com:%s\r\n\r\n", port, port)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		return strings.TrimSpace(line)
	}
	for i := range MaxConns {
		if line := connect(); line != "HTTP/1.1 200 Connection established" {
			t.Fatalf("tunnel %d: %q", i, line)
		}
	}
	if line := connect(); !strings.HasPrefix(line, "HTTP/1.1 503") {
		t.Errorf("tunnel %d: %q, want 503", MaxConns+1, line)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return with tunnels open")
	}
	// Its tunnels are closed: the clients read their end.
	_ = conns[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conns[0].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("a tunnel's client read %v after Serve returned, want EOF", err)
	}
}

// A proxy's allowlist changes while it serves: a phase after another.
func TestSetAllowlist(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	allow, _ := ParseAllowlist([]string{"example.com"})
	p := New(allow, names{"example.com": "127.0.0.1"}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: ln.Addr().String()})}}
	if code, _ := get(t, client, "http://example.com:"+port+"/"); code != 200 {
		t.Errorf("before: %d, want 200", code)
	}
	p.SetAllowlist(&Allowlist{})
	if code, _ := get(t, client, "http://example.com:"+port+"/"); code != http.StatusForbidden {
		t.Errorf("after an empty allowlist: %d, want 403", code)
	}
}
