// crashprog: one static binary whose first argument picks a behaviour, for the
// real kubelet node of crashdoc's cluster tier (tests/cluster/realnode). It
// prints only what a plain application would print; the Kubernetes side of
// each failure (reasons, exit codes, events, probe messages) comes from the
// real kubelet and container runtime.
//
// Usage:
//
//	crashprog exit N [--after SECONDS] [--say TEXT]...
//	    prints a startup line and each TEXT (stdout), then after SECONDS
//	    (default 1) prints "exiting with code N" (stderr) and exits N (0-255).
//	crashprog alloc --mb-per-sec N [--start-mb M] [--max-mb X] [--hold]
//	    allocates M MiB at once, then N MiB per second (fractions allowed),
//	    writing every page so the resident set really grows, and prints
//	    "allocated K MiB" as it goes (every 64 MiB of the start, then once a
//	    second). It grows until the cgroup memory limit kills it, or up to
//	    X MiB when X > 0 and then holds that memory. --hold: only the M MiB
//	    start, held (no growth).
//	crashprog serve --port P [--after SECONDS] [--path /healthz] [--ignore-term]
//	    prints "starting, ready in SECONDS s" and sleeps (connections to P
//	    are refused meanwhile), then listens on 0.0.0.0:P answering 200 "ok"
//	    on the path and 404 elsewhere. --ignore-term: SIGTERM is ignored, so
//	    the kubelet kills it when the grace period ends.
//	crashprog open PATH
//	    reads its configuration file PATH; on error prints
//	    "failed to load configuration: " and the Go error as os.Open formats
//	    it ("open PATH: no such file or directory") and exits 1.
//	crashprog write PATH
//	    creates PATH's missing directories and writes PATH; on error prints
//	    "failed to write state file: " and the Go error ("open PATH:
//	    read-only file system"; "mkdir DIR: read-only file system" when a
//	    directory was missing) and exits 1.
//	crashprog bind --port P
//	    listens on 0.0.0.0:P; on error prints "failed to start server: " and
//	    the Go error ("listen tcp 0.0.0.0:P: bind: address already in use")
//	    and exits 1; otherwise answers 200 "ok" forever.
//	crashprog connect (--addr IP:PORT | --env HOST_VAR --env-port PORT_VAR) [--timeout SECONDS] [--tries N]
//	    dials TCP to an IP address (it resolves no names). With --env and
//	    --env-port the IP and the port are read from those environment
//	    variables, as the kubelet sets DB_SERVICE_HOST and DB_SERVICE_PORT
//	    for a Service named db. Each failure prints "failed to connect: "
//	    and the Go error ("dial tcp 10.96.3.4:5432: connect: connection
//	    refused"); after N tries (default 1, 1 s apart; timeout 5 s each) it
//	    exits 1. Once connected it keeps the connection open.
//	crashprog token [--after SECONDS] [--exit N]
//	    prints "crashdoc-token HEX run-started TIME" (HEX: 128 random bits
//	    from crypto/rand, new at every start; TIME: RFC 3339 UTC with
//	    nanoseconds), a few filler lines, and the same token line again as
//	    its last line, then after SECONDS (default 2) exits N (default 1).
//	    It writes nothing to disk.
//	crashprog sleep [SECONDS]
//	    sleeps SECONDS (default: forever), then exits 0; SIGTERM or SIGINT
//	    ends it early, also with 0.
//	crashprog pause
//	    the pod sandbox process (the pause image): waits for SIGTERM or
//	    SIGINT, then exits 0.
//	crashprog fill --mb N --path DIR
//	    writes N MiB to DIR/crashprog-fill.bin (for an ephemeral-storage
//	    eviction), printing "wrote K MiB to FILE" every 64 MiB and at the
//	    end, then sleeps until it is killed; a write error is printed as
//	    "failed to fill FILE: " and the Go error, and it exits 1.
//	crashprog help
//	    prints this text.
//
// Once open, write, bind or connect succeed, the program keeps running as a
// healthy server would. Every behaviour but sleep and pause exits 128+n on
// signal n (SIGTERM: 143) after printing "received signal terminated,
// exiting". A usage error is printed to stderr with exit code 2; an unknown
// or malformed flag as Go's flag package prints it ("flag provided but not
// defined: -x", then "Usage of BEHAVIOUR:" and its flags).
package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const usage = `crashprog: one static binary whose first argument picks a behaviour, for the
real kubelet node of crashdoc's cluster tier (tests/cluster/realnode). It
prints only what a plain application would print; the Kubernetes side of
each failure (reasons, exit codes, events, probe messages) comes from the
real kubelet and container runtime.

Usage:

  crashprog exit N [--after SECONDS] [--say TEXT]...
      prints a startup line and each TEXT (stdout), then after SECONDS
      (default 1) prints "exiting with code N" (stderr) and exits N (0-255).
  crashprog alloc --mb-per-sec N [--start-mb M] [--max-mb X] [--hold]
      allocates M MiB at once, then N MiB per second (fractions allowed),
      writing every page so the resident set really grows, and prints
      "allocated K MiB" as it goes (every 64 MiB of the start, then once a
      second). It grows until the cgroup memory limit kills it, or up to
      X MiB when X > 0 and then holds that memory. --hold: only the M MiB
      start, held (no growth).
  crashprog serve --port P [--after SECONDS] [--path /healthz] [--ignore-term]
      prints "starting, ready in SECONDS s" and sleeps (connections to P
      are refused meanwhile), then listens on 0.0.0.0:P answering 200 "ok"
      on the path and 404 elsewhere. --ignore-term: SIGTERM is ignored, so
      the kubelet kills it when the grace period ends.
  crashprog open PATH
      reads its configuration file PATH; on error prints
      "failed to load configuration: " and the Go error as os.Open formats
      it ("open PATH: no such file or directory") and exits 1.
  crashprog write PATH
      creates PATH's missing directories and writes PATH; on error prints
      "failed to write state file: " and the Go error ("open PATH:
      read-only file system"; "mkdir DIR: read-only file system" when a
      directory was missing) and exits 1.
  crashprog bind --port P
      listens on 0.0.0.0:P; on error prints "failed to start server: " and
      the Go error ("listen tcp 0.0.0.0:P: bind: address already in use")
      and exits 1; otherwise answers 200 "ok" forever.
  crashprog connect (--addr IP:PORT | --env HOST_VAR --env-port PORT_VAR) [--timeout SECONDS] [--tries N]
      dials TCP to an IP address (it resolves no names). With --env and
      --env-port the IP and the port are read from those environment
      variables, as the kubelet sets DB_SERVICE_HOST and DB_SERVICE_PORT
      for a Service named db. Each failure prints "failed to connect: "
      and the Go error ("dial tcp 10.96.3.4:5432: connect: connection
      refused"); after N tries (default 1, 1 s apart; timeout 5 s each) it
      exits 1. Once connected it keeps the connection open.
  crashprog token [--after SECONDS] [--exit N]
      prints "crashdoc-token HEX run-started TIME" (HEX: 128 random bits
      from crypto/rand, new at every start; TIME: RFC 3339 UTC with
      nanoseconds), a few filler lines, and the same token line again as
      its last line, then after SECONDS (default 2) exits N (default 1).
      It writes nothing to disk.
  crashprog sleep [SECONDS]
      sleeps SECONDS (default: forever), then exits 0; SIGTERM or SIGINT
      ends it early, also with 0.
  crashprog pause
      the pod sandbox process (the pause image): waits for SIGTERM or
      SIGINT, then exits 0.
  crashprog fill --mb N --path DIR
      writes N MiB to DIR/crashprog-fill.bin (for an ephemeral-storage
      eviction), printing "wrote K MiB to FILE" every 64 MiB and at the
      end, then sleeps until it is killed; a write error is printed as
      "failed to fill FILE: " and the Go error, and it exits 1.
  crashprog help
      prints this text.

Once open, write, bind or connect succeed, the program keeps running as a
healthy server would. Every behaviour but sleep and pause exits 128+n on
signal n (SIGTERM: 143) after printing "received signal terminated,
exiting". A usage error is printed to stderr with exit code 2; an unknown
or malformed flag as Go's flag package prints it ("flag provided but not
defined: -x", then "Usage of BEHAVIOUR:" and its flags).
`

// usageError is a bad command line: printed with a pointer to `crashprog
// help`, exit code 2. A flag the flag package rejects is printed as that
// package prints it instead (flagOutput: the error, then "Usage of NAME:" and
// the flags), as any Go program using flag would; -h alone exits 0.
type usageError struct {
	msg        string
	flagOutput string
	help       bool
}

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{msg: fmt.Sprintf(format, a...)} }

// seconds is a flag.Value for a duration given in (fractional) seconds.
type seconds time.Duration

func (s *seconds) String() string {
	return strconv.FormatFloat(time.Duration(*s).Seconds(), 'f', -1, 64)
}
func (s *seconds) Set(v string) error {
	d, err := parseSeconds(v)
	if err != nil {
		return err
	}
	*s = seconds(d)
	return nil
}

func parseSeconds(v string) (time.Duration, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > 1e9 {
		return 0, fmt.Errorf("%q is not a number of seconds", v)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// lines is a repeatable string flag.
type lines []string

func (l *lines) String() string     { return strings.Join(*l, "\n") }
func (l *lines) Set(v string) error { *l = append(*l, v); return nil }

func parseExitCode(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 255 {
		return 0, fmt.Errorf("exit code %q is not a number from 0 to 255", v)
	}
	return n, nil
}

func parsePort(v int) error {
	if v < 1 || v > 65535 {
		return usagef("--port %d is not a port from 1 to 65535", v)
	}
	return nil
}

// parseArgs parses flags and positional arguments in any order with fs and
// returns the positional ones; it fails unless there are min to max of them.
func parseArgs(fs *flag.FlagSet, args []string, min, max int) ([]string, error) {
	var out strings.Builder
	fs.SetOutput(&out)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{msg: fmt.Sprintf("%s: %v", fs.Name(), err),
				flagOutput: out.String(), help: errors.Is(err, flag.ErrHelp)}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) < min || len(pos) > max {
		switch {
		case max == 0:
			return nil, usagef("%s takes no argument besides its flags, got %q", fs.Name(), pos)
		case min == max:
			return nil, usagef("%s takes %d argument(s), got %d", fs.Name(), min, len(pos))
		default:
			return nil, usagef("%s takes %d to %d argument(s), got %d", fs.Name(), min, max, len(pos))
		}
	}
	return pos, nil
}

type exitOpts struct {
	code  int
	after time.Duration
	say   []string
}

func parseExit(args []string) (exitOpts, error) {
	o := exitOpts{}
	after := seconds(time.Second)
	var say lines
	fs := flag.NewFlagSet("exit", flag.ContinueOnError)
	fs.Var(&after, "after", "`seconds` to wait before exiting")
	fs.Var(&say, "say", "a `line` to print (repeatable)")
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return o, err
	}
	if o.code, err = parseExitCode(pos[0]); err != nil {
		return o, usagef("exit: %v", err)
	}
	o.after, o.say = time.Duration(after), say
	return o, nil
}

type allocOpts struct {
	mbPerSec float64
	startMB  int
	maxMB    int
	hold     bool
}

func parseAlloc(args []string) (allocOpts, error) {
	o := allocOpts{}
	fs := flag.NewFlagSet("alloc", flag.ContinueOnError)
	fs.Float64Var(&o.mbPerSec, "mb-per-sec", 0, "`MiB` to allocate per second")
	fs.IntVar(&o.startMB, "start-mb", 0, "`MiB` to allocate at start")
	fs.IntVar(&o.maxMB, "max-mb", 0, "stop growing at this many `MiB` (0: no limit)")
	fs.BoolVar(&o.hold, "hold", false, "hold the start allocation without growing")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return o, err
	}
	switch {
	case o.mbPerSec < 0 || math.IsNaN(o.mbPerSec) || math.IsInf(o.mbPerSec, 0):
		return o, usagef("alloc: --mb-per-sec must be 0 or more")
	case o.startMB < 0 || o.maxMB < 0:
		return o, usagef("alloc: --start-mb and --max-mb must be 0 or more")
	case o.hold && o.startMB == 0:
		return o, usagef("alloc: --hold needs --start-mb")
	case !o.hold && o.mbPerSec == 0 && o.startMB == 0:
		return o, usagef("alloc: needs --mb-per-sec or --start-mb")
	}
	return o, nil
}

type serveOpts struct {
	port       int
	after      time.Duration
	path       string
	ignoreTerm bool
}

func parseServe(args []string) (serveOpts, error) {
	o := serveOpts{}
	var after seconds
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.IntVar(&o.port, "port", 0, "`port` to listen on")
	fs.Var(&after, "after", "`seconds` to wait before listening")
	fs.StringVar(&o.path, "path", "/healthz", "`path` answered with 200 ok")
	fs.BoolVar(&o.ignoreTerm, "ignore-term", false, "ignore SIGTERM")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return o, err
	}
	if err := parsePort(o.port); err != nil {
		return o, usagef("serve: %v", err)
	}
	if !strings.HasPrefix(o.path, "/") {
		return o, usagef("serve: --path %q does not start with /", o.path)
	}
	o.after = time.Duration(after)
	return o, nil
}

func parsePath(name string, args []string) (string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return "", err
	}
	return pos[0], nil
}

func parseBind(args []string) (int, error) {
	var port int
	fs := flag.NewFlagSet("bind", flag.ContinueOnError)
	fs.IntVar(&port, "port", 0, "`port` to listen on")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return 0, err
	}
	if err := parsePort(port); err != nil {
		return 0, usagef("bind: %v", err)
	}
	return port, nil
}

type connectOpts struct {
	addr, hostVar, portVar string
	timeout                time.Duration
	tries                  int
}

func parseConnect(args []string) (connectOpts, error) {
	o := connectOpts{}
	timeout := seconds(5 * time.Second)
	fs := flag.NewFlagSet("connect", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", "", "`address` to dial, IP:PORT")
	fs.StringVar(&o.hostVar, "env", "", "environment `variable` holding the IP")
	fs.StringVar(&o.portVar, "env-port", "", "environment `variable` holding the port")
	fs.Var(&timeout, "timeout", "`seconds` to wait for each try")
	fs.IntVar(&o.tries, "tries", 1, "number of `tries`, 1 s apart")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return o, err
	}
	switch {
	case o.addr != "" && (o.hostVar != "" || o.portVar != ""):
		return o, usagef("connect: --addr excludes --env and --env-port")
	case o.addr == "" && (o.hostVar == "" || o.portVar == ""):
		return o, usagef("connect: needs --addr IP:PORT, or --env HOST_VAR and --env-port PORT_VAR")
	case o.tries < 1:
		return o, usagef("connect: --tries must be 1 or more")
	case timeout == 0:
		return o, usagef("connect: --timeout must be more than 0")
	}
	o.timeout = time.Duration(timeout)
	return o, nil
}

// target is the IP:PORT that connect dials, from --addr or from the
// environment (getenv: os.Getenv, a parameter for the tests). It never
// resolves a name.
func (o connectOpts) target(getenv func(string) string) (string, error) {
	host, port := "", ""
	if o.addr != "" {
		var err error
		if host, port, err = net.SplitHostPort(o.addr); err != nil {
			return "", err
		}
	} else {
		if host = getenv(o.hostVar); host == "" {
			return "", fmt.Errorf("environment variable %s is not set", o.hostVar)
		}
		if port = getenv(o.portVar); port == "" {
			return "", fmt.Errorf("environment variable %s is not set", o.portVar)
		}
	}
	if net.ParseIP(host) == nil {
		return "", fmt.Errorf("%q is not an IP address (names are not resolved)", host)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("%q is not a port", port)
	}
	return net.JoinHostPort(host, port), nil
}

type tokenOpts struct {
	after time.Duration
	code  int
}

func parseToken(args []string) (tokenOpts, error) {
	o := tokenOpts{}
	after := seconds(2 * time.Second)
	var code string
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.Var(&after, "after", "`seconds` to wait before exiting")
	fs.StringVar(&code, "exit", "1", "exit `code`")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return o, err
	}
	var err error
	if o.code, err = parseExitCode(code); err != nil {
		return o, usagef("token: %v", err)
	}
	o.after = time.Duration(after)
	return o, nil
}

// parseSleep returns the sleep and whether there is one (no SECONDS: forever).
func parseSleep(args []string) (time.Duration, bool, error) {
	fs := flag.NewFlagSet("sleep", flag.ContinueOnError)
	pos, err := parseArgs(fs, args, 0, 1)
	if err != nil {
		return 0, false, err
	}
	if len(pos) == 0 {
		return 0, false, nil
	}
	d, err := parseSeconds(pos[0])
	if err != nil {
		return 0, false, usagef("sleep: %v", err)
	}
	return d, true, nil
}

type fillOpts struct {
	mb   int
	path string
}

func parseFill(args []string) (fillOpts, error) {
	o := fillOpts{}
	fs := flag.NewFlagSet("fill", flag.ContinueOnError)
	fs.IntVar(&o.mb, "mb", 0, "`MiB` to write")
	fs.StringVar(&o.path, "path", "", "`directory` to write the file in")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return o, err
	}
	if o.mb < 1 || o.path == "" {
		return o, usagef("fill: needs --mb N (1 or more) and --path DIR")
	}
	return o, nil
}

// newToken is 128 random bits in hex, from crypto/rand.
func newToken() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

func tokenLine(token string, started time.Time) string {
	return fmt.Sprintf("crashdoc-token %s run-started %s", token, started.UTC().Format(time.RFC3339Nano))
}

// exitOnSignal makes SIGTERM and SIGINT end the process with 128+n after a
// line, unless ignoreTerm (then SIGTERM is ignored and only SIGKILL ends it).
// As PID 1 of a container a process only gets the signals it handles, so the
// long-running behaviours handle them all the same way.
func exitOnSignal(ignoreTerm bool) {
	ch := make(chan os.Signal, 1)
	if ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
		signal.Notify(ch, syscall.SIGINT)
	} else {
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	}
	go func() {
		s := (<-ch).(syscall.Signal)
		fmt.Printf("received signal %v, exiting\n", s)
		os.Exit(128 + int(s))
	}()
}

// waitForever blocks until a signal handler ends the process.
func waitForever() { select {} }

func runExit(o exitOpts) int {
	exitOnSignal(false)
	fmt.Printf("starting (pid %d)\n", os.Getpid())
	for _, s := range o.say {
		fmt.Println(s)
	}
	time.Sleep(o.after)
	fmt.Fprintf(os.Stderr, "exiting with code %d\n", o.code)
	return o.code
}

// touched allocates mb MiB and writes one byte of every page, so the pages
// are really resident (a fresh allocation is only mapped until written).
func touched(mb int) [][]byte {
	page := os.Getpagesize()
	out := make([][]byte, 0, mb)
	for range mb {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += page {
			b[i] = 1
		}
		out = append(out, b)
	}
	return out
}

var held [][]byte // the alloc behaviour's memory, reachable so never collected

func runAlloc(o allocOpts) int {
	exitOnSignal(false)
	fmt.Printf("starting (pid %d)\n", os.Getpid())
	total := 0
	for total < o.startMB {
		n := min(64, o.startMB-total)
		held = append(held, touched(n)...)
		total += n
		fmt.Printf("allocated %d MiB\n", total)
	}
	if o.hold || (o.maxMB > 0 && total >= o.maxMB) || o.mbPerSec == 0 {
		fmt.Printf("holding %d MiB\n", total)
		waitForever()
	}
	start, printed, lastPrint := time.Now(), total, time.Now()
	for range time.Tick(100 * time.Millisecond) {
		want := o.startMB + int(o.mbPerSec*time.Since(start).Seconds())
		if o.maxMB > 0 {
			want = min(want, o.maxMB)
		}
		if want > total {
			held = append(held, touched(want-total)...)
			total = want
		}
		if total != printed && time.Since(lastPrint) >= time.Second {
			fmt.Printf("allocated %d MiB\n", total)
			printed, lastPrint = total, time.Now()
		}
		if o.maxMB > 0 && total >= o.maxMB {
			if total != printed {
				fmt.Printf("allocated %d MiB\n", total)
			}
			fmt.Printf("holding %d MiB\n", total)
			waitForever()
		}
	}
	return 0
}

func okHandler(path string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if path != "" && r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "ok")
	})
}

func runServe(o serveOpts) int {
	exitOnSignal(o.ignoreTerm)
	fmt.Printf("starting, ready in %s s\n", strconv.FormatFloat(o.after.Seconds(), 'f', -1, 64))
	time.Sleep(o.after)
	addr := net.JoinHostPort("0.0.0.0", strconv.Itoa(o.port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "failed to start server: %v\n", err)
		return 1
	}
	fmt.Printf("listening on %s, serving %s\n", addr, o.path)
	err = http.Serve(l, okHandler(o.path))
	fmt.Fprintf(os.Stderr, "server stopped: %v\n", err)
	return 1
}

func runOpen(path string) int {
	exitOnSignal(false)
	fmt.Printf("loading configuration from %s\n", path)
	f, err := os.Open(path)
	if err == nil {
		var n int64
		n, err = io.Copy(io.Discard, f)
		f.Close()
		if err == nil {
			fmt.Printf("loaded configuration (%d bytes)\n", n)
			waitForever()
		}
	}
	fmt.Fprintf(os.Stderr, "failed to load configuration: %v\n", err)
	return 1
}

func runWrite(path string) int {
	exitOnSignal(false)
	fmt.Printf("writing state file %s\n", path)
	f, err := createAll(path)
	if err == nil {
		_, err = fmt.Fprintf(f, "started %s\n", time.Now().UTC().Format(time.RFC3339))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			fmt.Println("state file written")
			waitForever()
		}
	}
	fmt.Fprintf(os.Stderr, "failed to write state file: %v\n", err)
	return 1
}

// createAll creates (truncates) path after its missing directories, as an
// application preparing its state directory does.
func createAll(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.Create(path)
}

func runBind(port int) int {
	exitOnSignal(false)
	addr := net.JoinHostPort("0.0.0.0", strconv.Itoa(port))
	fmt.Printf("starting server on %s\n", addr)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "failed to start server: %v\n", err)
		return 1
	}
	fmt.Printf("listening on %s\n", addr)
	err = http.Serve(l, okHandler(""))
	fmt.Fprintf(os.Stderr, "server stopped: %v\n", err)
	return 1
}

var conn net.Conn // connect's connection, reachable so never finalized (closed)

func runConnect(o connectOpts) int {
	exitOnSignal(false)
	addr, err := o.target(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "failed to connect: %v\n", err)
		return 1
	}
	for i := 1; ; i++ {
		fmt.Printf("connecting to %s\n", addr)
		c, err := net.DialTimeout("tcp", addr, o.timeout)
		if err == nil {
			fmt.Printf("connected to %s\n", addr)
			conn = c // held open until the process ends
			waitForever()
		}
		if i >= o.tries {
			fmt.Fprintf(os.Stderr, "failed to connect: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "failed to connect: %v (attempt %d of %d, retrying in 1s)\n", err, i, o.tries)
		time.Sleep(time.Second)
	}
}

func runToken(o tokenOpts) int {
	exitOnSignal(false)
	line := tokenLine(newToken(), time.Now())
	fmt.Println(line)
	fmt.Printf("starting worker pool (pid %d, 4 workers)\n", os.Getpid())
	fmt.Println("no saved state found, starting fresh")
	fmt.Println("worker pool ready")
	fmt.Println(line)
	time.Sleep(o.after)
	return o.code
}

// runSleep: SIGTERM/SIGINT end it with 0 (signal.Notify installs the handlers
// that PID 1 needs to receive them at all).
func runSleep(d time.Duration, bounded bool) int {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	var done <-chan time.Time
	if bounded {
		done = time.After(d)
	}
	select {
	case <-ch:
	case <-done:
	}
	return 0
}

func runFill(o fillOpts) int {
	exitOnSignal(false)
	name := filepath.Join(o.path, "crashprog-fill.bin")
	fmt.Printf("filling %s with %d MiB\n", name, o.mb)
	err := fill(name, o.mb, func(mb int) {
		if mb%64 == 0 || mb == o.mb {
			fmt.Printf("wrote %d MiB to %s\n", mb, name)
		}
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "failed to fill %s: %v\n", name, err)
		return 1
	}
	waitForever()
	return 0
}

// fill writes mb MiB of non-zero bytes to name (no sparse file: each block is
// allocated), syncing every 64 MiB, calling progress after each MiB.
func fill(name string, mb int, progress func(int)) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i%251) + 1
	}
	for i := 1; i <= mb; i++ {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
		if i%64 == 0 || i == mb {
			if err := f.Sync(); err != nil {
				f.Close()
				return err
			}
		}
		progress(i)
	}
	return f.Close()
}

// run parses the command line (args without the program name) and runs the
// behaviour, returning the exit code.
func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "help", "-h", "-help", "--help":
		fmt.Print(usage)
		return 0
	case "exit":
		var o exitOpts
		if o, err = parseExit(rest); err == nil {
			return runExit(o)
		}
	case "alloc":
		var o allocOpts
		if o, err = parseAlloc(rest); err == nil {
			return runAlloc(o)
		}
	case "serve":
		var o serveOpts
		if o, err = parseServe(rest); err == nil {
			return runServe(o)
		}
	case "open":
		var p string
		if p, err = parsePath("open", rest); err == nil {
			return runOpen(p)
		}
	case "write":
		var p string
		if p, err = parsePath("write", rest); err == nil {
			return runWrite(p)
		}
	case "bind":
		var port int
		if port, err = parseBind(rest); err == nil {
			return runBind(port)
		}
	case "connect":
		var o connectOpts
		if o, err = parseConnect(rest); err == nil {
			return runConnect(o)
		}
	case "token":
		var o tokenOpts
		if o, err = parseToken(rest); err == nil {
			return runToken(o)
		}
	case "sleep":
		var d time.Duration
		var bounded bool
		if d, bounded, err = parseSleep(rest); err == nil {
			return runSleep(d, bounded)
		}
	case "pause":
		if _, err = parseArgs(flag.NewFlagSet("pause", flag.ContinueOnError), rest, 0, 0); err == nil {
			return runSleep(0, false)
		}
	case "fill":
		var o fillOpts
		if o, err = parseFill(rest); err == nil {
			return runFill(o)
		}
	default:
		err = usagef("unknown behaviour %q", cmd)
	}
	if ue, ok := err.(usageError); ok && ue.flagOutput != "" {
		fmt.Fprint(os.Stderr, ue.flagOutput)
		if ue.help {
			return 0
		}
		return 2
	}
	fmt.Fprintf(os.Stderr, "crashprog: %v (crashprog help lists the behaviours)\n", err)
	return 2
}

func main() { os.Exit(run(os.Args[1:])) }
