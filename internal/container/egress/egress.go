// Package egress is an HTTP proxy that lets a container reach only the
// hosts of an allowlist: a Harbor task's network_mode = "allowlist". The
// container has no network of its own; lane forwards one address in it to
// the proxy (see netfwd), and the container's programs find the proxy
// through HTTP_PROXY and HTTPS_PROXY. HTTPS goes through CONNECT, plain
// HTTP as an absolute-form request; either is refused with 403 unless its
// host is allowed.
//
// Hosts are matched as Harbor's allowed_hosts are: by name, whatever the
// port; an entry "*.example.com" allows the names under example.com (not
// example.com itself); an IP address or a CIDR range allows a request to
// an address in it, given literally or as a name that resolves there (the
// connection then goes to those addresses only).
package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of a proxy, so that a container cannot make it hold more than a
// bounded amount of the host's resources.
const (
	// MaxConns is how many client connections are served at once; one
	// more is answered 503 and closed.
	MaxConns = 64
	// HeaderTimeout bounds reading a request's head.
	HeaderTimeout = 30 * time.Second
	// DialTimeout bounds connecting to an allowed host.
	DialTimeout = 15 * time.Second
	// maxHeader bounds a request's head.
	maxHeader = 64 << 10
)

// Resolver finds a host name's addresses; net.DefaultResolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Allowlist is a parsed allowed_hosts.
type Allowlist struct {
	names    map[string]bool
	suffixes []string // ".example.com" of "*.example.com"
	prefixes []netip.Prefix
}

// ParseAllowlist reads Harbor's allowed_hosts entries: host names, leading
// wildcards ("*.example.com"), IP addresses and CIDR ranges. Names are
// matched without case and without a trailing dot.
func ParseAllowlist(hosts []string) (*Allowlist, error) {
	a := &Allowlist{names: map[string]bool{}}
	for _, h := range hosts {
		h = strings.TrimRight(strings.ToLower(strings.TrimSpace(h)), ".")
		switch {
		case h == "":
			return nil, errors.New("an empty allowed host")
		case strings.Contains(h, "/"):
			p, err := netip.ParsePrefix(h)
			if err != nil {
				return nil, fmt.Errorf("allowed host %q: %w", h, err)
			}
			a.prefixes = append(a.prefixes, p.Masked())
		case strings.HasPrefix(h, "*."):
			a.suffixes = append(a.suffixes, h[1:])
		default:
			if ip, err := netip.ParseAddr(h); err == nil {
				a.prefixes = append(a.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
				continue
			}
			a.names[h] = true
		}
	}
	return a, nil
}

// allowsName says whether the host name (no port) is allowed by name.
func (a *Allowlist) allowsName(host string) bool {
	host = strings.TrimRight(strings.ToLower(host), ".")
	if a.names[host] {
		return true
	}
	for _, s := range a.suffixes {
		if strings.HasSuffix(host, s) && len(host) > len(s) {
			return true
		}
	}
	return false
}

// allowsAddr says whether ip is in an allowed address or range.
func (a *Allowlist) allowsAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range a.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Proxy is an egress proxy for an allowlist, which may change while it
// serves. Its zero value is not usable: make one with New.
type Proxy struct {
	allow    atomic.Pointer[Allowlist]
	resolver Resolver
	log      *slog.Logger
}

// New makes a proxy that lets through only the hosts of allow, resolving
// names with resolver (net.DefaultResolver when nil).
func New(allow *Allowlist, resolver Resolver, log *slog.Logger) *Proxy {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{resolver: resolver, log: log}
	p.allow.Store(allow)
	return p
}

// SetAllowlist makes the proxy let through allow's hosts from now on (a
// connection already made stays); an empty Allowlist refuses every host.
func (p *Proxy) SetAllowlist(allow *Allowlist) { p.allow.Store(allow) }

// Serve answers the connections ln accepts until ctx ends; then it closes
// ln and every connection, and returns once nothing it started runs.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	slots := make(chan struct{}, MaxConns)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("egress proxy: accept: %w", err)
		}
		select {
		case slots <- struct{}{}:
		default:
			_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = io.WriteString(conn, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
			conn.Close()
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			p.serveConn(ctx, conn)
		})
	}
}

// serveConn answers one request on conn, then closes it (a tunnel lasts
// as long as both of its ends).
func (p *Proxy) serveConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_ = conn.SetReadDeadline(time.Now().Add(HeaderTimeout))
	head := &headLimit{r: conn, n: maxHeader}
	br := bufio.NewReaderSize(head, 4<<10)
	req, err := http.ReadRequest(br)
	if err != nil {
		reply(conn, http.StatusBadRequest, "lane's egress proxy could not read the request")
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	head.n = math.MaxInt64 // a body, or a tunnel, may be of any length
	if req.Method == http.MethodConnect {
		p.tunnel(ctx, conn, br, req)
		return
	}
	p.forward(ctx, conn, req)
}

// headLimit reads at most n bytes from r: a request's head is bounded,
// what follows it is not.
type headLimit struct {
	r io.Reader
	n int64
}

func (l *headLimit) Read(b []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("request head too large")
	}
	if int64(len(b)) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	l.n -= int64(n)
	return n, err
}

// reply writes a short response that ends the connection.
func reply(conn net.Conn, code int, msg string) {
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	body := msg + "\n"
	fmt.Fprintf(conn, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}

// check is why host (without its port) may not be reached, "" if it
// may, with the addresses to dial for it (nil: any of its own).
func (p *Proxy) check(ctx context.Context, host string) ([]netip.Addr, string) {
	allow := p.allow.Load()
	if allow.allowsName(host) {
		return nil, ""
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if allow.allowsAddr(ip) {
			return []netip.Addr{ip}, ""
		}
		return nil, host + " is not in the task's allowed_hosts"
	}
	if len(allow.prefixes) == 0 {
		return nil, host + " is not in the task's allowed_hosts"
	}
	lctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	ips, err := p.resolver.LookupNetIP(lctx, "ip", host)
	var ok []netip.Addr
	for _, ip := range ips {
		if allow.allowsAddr(ip) {
			ok = append(ok, ip)
		}
	}
	if err != nil || len(ok) == 0 {
		return nil, host + " is not in the task's allowed_hosts"
	}
	return ok, ""
}

// dial connects to hostport, an allowed host, through addrs when given,
// else through its name's addresses.
func (p *Proxy) dial(ctx context.Context, hostport string, addrs []netip.Addr) (net.Conn, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	if addrs == nil {
		if addrs, err = p.resolver.LookupNetIP(dctx, "ip", host); err != nil {
			return nil, err
		}
	}
	var d net.Dialer
	var last error = fmt.Errorf("%s has no address", host)
	for _, ip := range addrs {
		conn, err := d.DialContext(dctx, "tcp", net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		last = err
	}
	return nil, last
}

// tunnel answers a CONNECT: the host's connection, joined to the client's.
func (p *Proxy) tunnel(ctx context.Context, conn net.Conn, rest io.Reader, req *http.Request) {
	hostport := req.Host
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		reply(conn, http.StatusBadRequest, "CONNECT needs HOST:PORT")
		return
	}
	addrs, why := p.check(ctx, host)
	if why != "" {
		p.log.Info("egress proxy: refused", "host", hostport)
		reply(conn, http.StatusForbidden, "lane's egress proxy refused: "+why)
		return
	}
	up, err := p.dial(ctx, hostport, addrs)
	if err != nil {
		reply(conn, http.StatusBadGateway, "lane's egress proxy could not reach "+hostport+": "+err.Error())
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { up.Close() })
	defer stop()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	join(conn, rest, up)
}

// join copies both ways between the client (conn, read through in) and
// up until both directions end.
func join(conn net.Conn, in io.Reader, up net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, in)
		closeWrite(up)
	}()
	_, _ = io.Copy(conn, up)
	closeWrite(conn)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	c.Close()
}

// forward answers a plain HTTP request in absolute form: it is sent on to
// its host (one request a connection), and the answer back.
func (p *Proxy) forward(ctx context.Context, conn net.Conn, req *http.Request) {
	if req.URL == nil || req.URL.Host == "" || req.URL.Scheme != "http" {
		reply(conn, http.StatusBadRequest, "lane's egress proxy takes http://HOST/… requests and CONNECT")
		return
	}
	host := req.URL.Hostname()
	addrs, why := p.check(ctx, host)
	if why != "" {
		p.log.Info("egress proxy: refused", "host", req.URL.Host)
		reply(conn, http.StatusForbidden, "lane's egress proxy refused: "+why)
		return
	}
	hostport := req.URL.Host
	if req.URL.Port() == "" {
		hostport = net.JoinHostPort(host, "80")
	}
	up, err := p.dial(ctx, hostport, addrs)
	if err != nil {
		reply(conn, http.StatusBadGateway, "lane's egress proxy could not reach "+hostport+": "+err.Error())
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { up.Close() })
	defer stop()
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	req.RequestURI = ""
	if err := req.Write(up); err != nil {
		reply(conn, http.StatusBadGateway, "lane's egress proxy could not send the request to "+hostport+": "+err.Error())
		return
	}
	_, _ = io.Copy(conn, up)
}
