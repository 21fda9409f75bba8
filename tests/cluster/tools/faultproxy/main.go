// faultproxy: a fault-injecting TLS reverse proxy between crashdoc and the test
// tier's real kube-apiserver (tests/cluster/faults.sh).
//
//	faultproxy -listen 127.0.0.1:36470 -control 127.0.0.1:36471 \
//	  -upstream https://127.0.0.1:36443 -ca pki/ca.crt \
//	  -client-cert pki/reader.crt -client-key pki/reader.key \
//	  -serve-cert pki/apiserver.crt -serve-key pki/apiserver.key \
//	  -rate 0.2 -mix delay=1,429=1,503=1,drop=1,truncate=1
//
// Every request is forwarded with the -client-cert identity (crashdoc's own
// client certificate is not looked at), so what crashdoc can do is what that
// user may do. With probability -rate a request gets one fault, drawn from
// -mix by weight:
//
//	delay     forwarded after -delay (default 1.5s)
//	429       not forwarded: "Too many requests, please try again later." with
//	          Retry-After: -retry-after (as k8s.io/apiserver v0.36.3
//	          pkg/server/filters/priority-and-fairness.go tooManyRequests writes it)
//	503       not forwarded: a v1 Status ServiceUnavailable "apiserver is shutting
//	          down" (k8s.io/apiserver v0.36.3 pkg/server/filters/waitgroup.go), no Retry-After
//	drop      not forwarded: the connection is hijacked and closed with no response
//	truncate  forwarded, but the body is cut after a few hundred bytes and the
//	          connection closed (a watch stream ends mid-event)
//
// Blackout: while on, every connection is accepted and closed at once (no
// response), and every request in flight (watch streams included) is cut.
// Toggle with SIGUSR1 or the control endpoint.
//
// Control endpoint (plain HTTP, loopback):
//
//	GET  /counts                 JSON: per path class and fault kind, plus totals
//	POST /set?rate=0.2&mix=...&only=REGEX&blackout=1|0
//	                             change the rate, mix, blackout, or restrict faults
//	                             to path classes matching REGEX (e.g. "pods/log")
//	POST /reset                  zero the counts
//
// Path classes are "<verb> <resource>[/<subresource>]", e.g. "list pods",
// "get pods/log", "watch pods", "get replicasets" (verb: watch when
// ?watch=true, list without a name, get otherwise; non-resource paths are
// "get /<path>"). Kinds: pass, delay, 429, 503, drop, truncate, blackout.
// HTTP/2 is disabled so that drop closes a real TCP connection.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type kindWeight struct {
	kind   string
	weight float64
}

type proxy struct {
	mu       sync.Mutex
	rng      *rand.Rand
	rate     float64
	mix      []kindWeight
	only     *regexp.Regexp
	blackout bool
	counts   map[string]map[string]int // class -> kind -> n
	inflight map[int64]context.CancelFunc
	nextID   int64
	started  time.Time

	delay      time.Duration
	retryAfter string
	truncateAt int64
	rp         *httputil.ReverseProxy
	logw       io.Writer
}

func parseMix(s string) ([]kindWeight, error) {
	var out []kindWeight
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, w, ok := strings.Cut(part, "=")
		if !ok {
			w = "1"
		}
		switch k {
		case "delay", "429", "503", "drop", "truncate":
		default:
			return nil, fmt.Errorf("unknown fault kind %q (delay, 429, 503, drop, truncate)", k)
		}
		f, err := strconv.ParseFloat(w, 64)
		if err != nil || f < 0 {
			return nil, fmt.Errorf("bad weight in %q", part)
		}
		out = append(out, kindWeight{k, f})
	}
	return out, nil
}

// class: "<verb> <resource>[/<sub>]" from the API path.
func class(r *http.Request) string {
	p := strings.Trim(r.URL.Path, "/")
	seg := strings.Split(p, "/")
	var rest []string
	switch {
	case len(seg) >= 2 && seg[0] == "api":
		rest = seg[2:]
	case len(seg) >= 3 && seg[0] == "apis":
		rest = seg[3:]
	default:
		return "get /" + p
	}
	if len(rest) >= 2 && rest[0] == "namespaces" {
		if len(rest) == 2 {
			rest = []string{"namespaces", rest[1]}
		} else {
			rest = rest[2:]
		}
	}
	if len(rest) == 0 {
		return "get /" + p
	}
	res := rest[0]
	verb := "get"
	if len(rest) == 1 {
		verb = "list"
	}
	if len(rest) >= 3 {
		res += "/" + rest[2]
	}
	if w := r.URL.Query().Get("watch"); w == "true" || w == "1" {
		verb = "watch"
	}
	if r.Method != http.MethodGet {
		verb = strings.ToLower(r.Method)
	}
	return verb + " " + res
}

func (p *proxy) count(cls, kind string) {
	p.mu.Lock()
	m := p.counts[cls]
	if m == nil {
		m = map[string]int{}
		p.counts[cls] = m
	}
	m[kind]++
	p.mu.Unlock()
}

// decide picks the fault (or "pass") for one request.
func (p *proxy) decide(cls string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blackout {
		return "blackout"
	}
	if p.only != nil && !p.only.MatchString(cls) {
		return "pass"
	}
	if p.rate <= 0 || p.rng.Float64() >= p.rate {
		return "pass"
	}
	var total float64
	for _, kw := range p.mix {
		total += kw.weight
	}
	if total <= 0 {
		return "pass"
	}
	x := p.rng.Float64() * total
	for _, kw := range p.mix {
		if x < kw.weight {
			return kw.kind
		}
		x -= kw.weight
	}
	return p.mix[len(p.mix)-1].kind
}

func hijackClose(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			if tc, ok := c.(*tls.Conn); ok {
				if nc, ok := tc.NetConn().(*net.TCPConn); ok {
					_ = nc.SetLinger(0) // a reset, as a dying load balancer or server would
				}
			}
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

type truncBody struct {
	r    io.ReadCloser
	left int64
	cut  func() // counts the cut once (a body shorter than -truncate-at passes whole)
}

func (t *truncBody) Read(b []byte) (int, error) {
	if t.left <= 0 {
		if t.cut != nil {
			t.cut()
			t.cut = nil
		}
		return 0, errors.New("faultproxy: body truncated")
	}
	if int64(len(b)) > t.left {
		b = b[:t.left]
	}
	n, err := t.r.Read(b)
	t.left -= int64(n)
	return n, err
}
func (t *truncBody) Close() error { return t.r.Close() }

type ctxKey struct{}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cls := class(r)
	kind := p.decide(cls)
	p.count(cls, kind)
	if p.logw != nil {
		p.mu.Lock()
		fmt.Fprintf(p.logw, "%s\t%s\t%s\t%s\n", time.Now().UTC().Format("15:04:05.000"), kind, cls, r.URL.RequestURI())
		p.mu.Unlock()
	}
	switch kind {
	case "blackout", "drop":
		hijackClose(w)
		return
	case "429":
		w.Header().Set("Retry-After", p.retryAfter)
		http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
		return
	case "503":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"apiserver is shutting down","reason":"ServiceUnavailable","code":503}`)
		return
	case "delay":
		select {
		case <-time.After(p.delay):
		case <-r.Context().Done():
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	p.mu.Lock()
	id := p.nextID
	p.nextID++
	p.inflight[id] = cancel
	blackout := p.blackout
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.inflight, id)
		p.mu.Unlock()
		cancel()
	}()
	if blackout { // switched on while this request was delayed
		hijackClose(w)
		return
	}
	r = r.WithContext(context.WithValue(ctx, ctxKey{}, kind))
	p.rp.ServeHTTP(w, r)
}

func (p *proxy) setBlackout(on bool) {
	p.mu.Lock()
	p.blackout = on
	var cancels []context.CancelFunc
	if on {
		for _, c := range p.inflight {
			cancels = append(cancels, c)
		}
	}
	p.mu.Unlock()
	for _, c := range cancels {
		c()
	}
	log.Printf("blackout %v (%d requests in flight cut)", on, len(cancels))
}

// blackoutListener closes every accepted connection while the blackout is on.
type blackoutListener struct {
	net.Listener
	p *proxy
}

func (l blackoutListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.p.mu.Lock()
		on := l.p.blackout
		if on {
			m := l.p.counts["(connection)"]
			if m == nil {
				m = map[string]int{}
				l.p.counts["(connection)"] = m
			}
			m["blackout"]++
		}
		l.p.mu.Unlock()
		if !on {
			return c, nil
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	}
}

func (p *proxy) snapshot() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	classes := map[string]map[string]int{}
	totals := map[string]int{}
	requests := 0
	for c, m := range p.counts {
		cm := map[string]int{}
		for k, n := range m {
			cm[k] = n
			totals[k] += n
			if c != "(connection)" && k != "truncate-cut" {
				requests += n
			}
		}
		classes[c] = cm
	}
	faults := requests - totals["pass"] // a truncate-cut is a truncate that found a body long enough to cut
	return map[string]any{
		"requests": requests, "faults": faults, "kinds": totals, "classes": classes,
		"rate": p.rate, "blackout": p.blackout, "uptime_s": time.Since(p.started).Seconds(),
	}
}

func (p *proxy) control() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/counts", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.snapshot())
	})
	mux.HandleFunc("/reset", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.counts = map[string]map[string]int{}
		p.mu.Unlock()
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/set", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if v := q.Get("rate"); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				http.Error(w, "bad rate", 400)
				return
			}
			p.mu.Lock()
			p.rate = f
			p.mu.Unlock()
		}
		if q.Has("mix") {
			m, err := parseMix(q.Get("mix"))
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			p.mu.Lock()
			p.mix = m
			p.mu.Unlock()
		}
		if q.Has("only") {
			var re *regexp.Regexp
			if v := q.Get("only"); v != "" {
				var err error
				if re, err = regexp.Compile(v); err != nil {
					http.Error(w, err.Error(), 400)
					return
				}
			}
			p.mu.Lock()
			p.only = re
			p.mu.Unlock()
		}
		if v := q.Get("blackout"); v != "" {
			p.setBlackout(v == "1" || v == "true" || v == "on")
		}
		log.Printf("set %s", r.URL.RawQuery)
		_ = json.NewEncoder(w).Encode(p.snapshot())
	})
	return mux
}

func main() {
	listen := flag.String("listen", "127.0.0.1:36470", "TLS address crashdoc connects to")
	controlAddr := flag.String("control", "127.0.0.1:36471", "plain-HTTP control address (counts, rate, blackout)")
	upstream := flag.String("upstream", "https://127.0.0.1:36443", "the kube-apiserver")
	caFile := flag.String("ca", "", "CA of the kube-apiserver's serving certificate")
	clientCert := flag.String("client-cert", "", "client certificate the proxy presents upstream")
	clientKey := flag.String("client-key", "", "its key")
	serveCert := flag.String("serve-cert", "", "the proxy's serving certificate")
	serveKey := flag.String("serve-key", "", "its key")
	rate := flag.Float64("rate", 0, "probability that a request gets a fault")
	mixFlag := flag.String("mix", "delay=1,429=1,503=1,drop=1,truncate=1", "fault kinds and weights")
	delay := flag.Duration("delay", 1500*time.Millisecond, "delay of a delay fault")
	retryAfter := flag.Int("retry-after", 1, "Retry-After seconds of a 429")
	truncateAt := flag.Int64("truncate-at", 300, "bytes of a body passed on before a truncate fault cuts it")
	seed := flag.Int64("seed", 1, "random seed (the fault sequence per request order)")
	logFile := flag.String("log", "", "one TSV line per request: time, kind, class, URI")
	flag.Parse()

	mix, err := parseMix(*mixFlag)
	if err != nil {
		log.Fatal(err)
	}
	up, err := url.Parse(*upstream)
	if err != nil {
		log.Fatal(err)
	}
	caPEM, err := os.ReadFile(*caFile)
	if err != nil {
		log.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		log.Fatalf("no certificate in %s", *caFile)
	}
	cert, err := tls.LoadX509KeyPair(*clientCert, *clientKey)
	if err != nil {
		log.Fatal(err)
	}
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	p := &proxy{
		rng: rand.New(rand.NewSource(*seed)), rate: *rate, mix: mix,
		counts: map[string]map[string]int{}, inflight: map[int64]context.CancelFunc{},
		started: time.Now(), delay: *delay, retryAfter: strconv.Itoa(*retryAfter), truncateAt: *truncateAt,
	}
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		p.logw = f
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(up)
			pr.Out.Host = up.Host
			// crashdoc's own credentials stay here: upstream, the proxy is the reader
			pr.Out.Header.Del("Authorization")
		},
		Transport:     transport,
		FlushInterval: -1, // watch streams pass event by event
		ModifyResponse: func(resp *http.Response) error {
			if kind, _ := resp.Request.Context().Value(ctxKey{}).(string); kind == "truncate" {
				cls := class(resp.Request)
				resp.Body = &truncBody{r: resp.Body, left: p.truncateAt, cut: func() { p.count(cls, "truncate-cut") }}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil { // cut by a blackout or the client went away
				hijackClose(w)
				return
			}
			log.Printf("upstream %s: %v", r.URL.Path, err)
			w.WriteHeader(http.StatusBadGateway)
		},
		ErrorLog: log.New(io.Discard, "", 0), // truncations and cut streams are the point
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{
		Handler:      p,
		TLSConfig:    &tls.Config{NextProtos: []string{"http/1.1"}},
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}, // HTTP/1.1 only
		ErrorLog:     log.New(io.Discard, "", 0),
	}
	go func() {
		if err := srv.ServeTLS(blackoutListener{ln, p}, *serveCert, *serveKey); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	cln, err := net.Listen("tcp", *controlAddr)
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = http.Serve(cln, p.control()) }()
	log.Printf("listening on https://%s -> %s, control http://%s, rate %.2f", *listen, *upstream, *controlAddr, *rate)

	for s := range sig {
		if s == syscall.SIGUSR1 {
			p.mu.Lock()
			on := !p.blackout
			p.mu.Unlock()
			p.setBlackout(on)
			continue
		}
		break
	}
	snap := p.snapshot()
	b, _ := json.Marshal(snap)
	fmt.Println(string(b))
	printTable(snap)
	_ = srv.Close()
}

// printTable writes the counts as "class kind n" lines to stderr.
func printTable(snap map[string]any) {
	classes := snap["classes"].(map[string]map[string]int)
	names := make([]string, 0, len(classes))
	for c := range classes {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		var parts []string
		for k, n := range classes[c] {
			parts = append(parts, fmt.Sprintf("%s=%d", k, n))
		}
		sort.Strings(parts)
		fmt.Fprintf(os.Stderr, "%-32s %s\n", c, strings.Join(parts, " "))
	}
}
