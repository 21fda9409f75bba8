package main

import (
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseExit(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  exitOpts
		error bool
	}{
		{args: []string{"3"}, want: exitOpts{code: 3, after: time.Second}},
		{args: []string{"137", "--after", "0.5", "--say", "a", "--say", "b c"},
			want: exitOpts{code: 137, after: 500 * time.Millisecond, say: []string{"a", "b c"}}},
		{args: []string{"--after", "0", "0"}, want: exitOpts{code: 0}},
		{args: []string{}, error: true},
		{args: []string{"256"}, error: true},
		{args: []string{"x"}, error: true},
		{args: []string{"1", "2"}, error: true},
		{args: []string{"1", "--after", "-1"}, error: true},
		{args: []string{"1", "--bogus"}, error: true},
	} {
		got, err := parseExit(tc.args)
		if (err != nil) != tc.error {
			t.Errorf("parseExit(%q): error %v, want error %v", tc.args, err, tc.error)
			continue
		}
		if err == nil && (got.code != tc.want.code || got.after != tc.want.after ||
			strings.Join(got.say, "|") != strings.Join(tc.want.say, "|")) {
			t.Errorf("parseExit(%q) = %+v, want %+v", tc.args, got, tc.want)
		}
	}
}

func TestParseOthers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse func() (any, error)
		want  any
		error bool
	}{
		{"alloc rate", func() (any, error) { return parseAlloc([]string{"--mb-per-sec", "0.5"}) },
			allocOpts{mbPerSec: 0.5}, false},
		{"alloc spike", func() (any, error) { return parseAlloc([]string{"--mb-per-sec", "0", "--start-mb", "512", "--hold"}) },
			allocOpts{startMB: 512, hold: true}, false},
		{"alloc nothing", func() (any, error) { return parseAlloc(nil) }, nil, true},
		{"alloc hold without start", func() (any, error) { return parseAlloc([]string{"--mb-per-sec", "8", "--hold"}) }, nil, true},
		{"serve", func() (any, error) { return parseServe([]string{"--port", "8080", "--after", "30"}) },
			serveOpts{port: 8080, after: 30 * time.Second, path: "/healthz"}, false},
		{"serve path", func() (any, error) { return parseServe([]string{"--port=9", "--path", "/ready", "--ignore-term"}) },
			serveOpts{port: 9, path: "/ready", ignoreTerm: true}, false},
		{"serve no port", func() (any, error) { return parseServe(nil) }, nil, true},
		{"serve bad path", func() (any, error) { return parseServe([]string{"--port", "1", "--path", "x"}) }, nil, true},
		{"open", func() (any, error) { return parsePath("open", []string{"/etc/app/config.yaml"}) }, "/etc/app/config.yaml", false},
		{"open none", func() (any, error) { return parsePath("open", nil) }, nil, true},
		{"bind", func() (any, error) { return parseBind([]string{"--port", "8080"}) }, 8080, false},
		{"bind port 0", func() (any, error) { return parseBind([]string{"--port", "0"}) }, nil, true},
		{"connect env", func() (any, error) {
			return parseConnect([]string{"--env", "DB_SERVICE_HOST", "--env-port", "DB_SERVICE_PORT"})
		}, connectOpts{hostVar: "DB_SERVICE_HOST", portVar: "DB_SERVICE_PORT", timeout: 5 * time.Second, tries: 1}, false},
		{"connect addr", func() (any, error) { return parseConnect([]string{"--addr", "10.96.3.4:5432", "--tries", "3"}) },
			connectOpts{addr: "10.96.3.4:5432", timeout: 5 * time.Second, tries: 3}, false},
		{"connect both", func() (any, error) { return parseConnect([]string{"--addr", "1.2.3.4:5", "--env", "X"}) }, nil, true},
		{"connect half env", func() (any, error) { return parseConnect([]string{"--env", "X"}) }, nil, true},
		{"token defaults", func() (any, error) { return parseToken(nil) }, tokenOpts{after: 2 * time.Second, code: 1}, false},
		{"token", func() (any, error) { return parseToken([]string{"--exit", "0", "--after", "0"}) }, tokenOpts{}, false},
		{"token bad exit", func() (any, error) { return parseToken([]string{"--exit", "-3"}) }, nil, true},
		{"fill", func() (any, error) { return parseFill([]string{"--mb", "100", "--path", "/data"}) }, fillOpts{mb: 100, path: "/data"}, false},
		{"fill no path", func() (any, error) { return parseFill([]string{"--mb", "100"}) }, nil, true},
	} {
		got, err := tc.parse()
		if (err != nil) != tc.error {
			t.Errorf("%s: error %v, want error %v", tc.name, err, tc.error)
			continue
		}
		if err == nil && got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
		if err != nil {
			if _, ok := err.(usageError); !ok {
				t.Errorf("%s: error %v is not a usage error", tc.name, err)
			}
		}
	}
}

func TestParseSleep(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		d       time.Duration
		bounded bool
		error   bool
	}{
		{nil, 0, false, false},
		{[]string{"2.5"}, 2500 * time.Millisecond, true, false},
		{[]string{"x"}, 0, false, true},
		{[]string{"1", "2"}, 0, false, true},
	} {
		d, bounded, err := parseSleep(tc.args)
		if (err != nil) != tc.error || d != tc.d || bounded != tc.bounded {
			t.Errorf("parseSleep(%q) = %v, %v, %v", tc.args, d, bounded, err)
		}
	}
}

func TestConnectTarget(t *testing.T) {
	env := map[string]string{"DB_SERVICE_HOST": "10.96.3.4", "DB_SERVICE_PORT": "5432", "NAME_HOST": "db.example"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		o    connectOpts
		want string // "" = an error
	}{
		{connectOpts{hostVar: "DB_SERVICE_HOST", portVar: "DB_SERVICE_PORT"}, "10.96.3.4:5432"},
		{connectOpts{addr: "127.0.0.1:1"}, "127.0.0.1:1"},
		{connectOpts{addr: "[::1]:80"}, "[::1]:80"},
		{connectOpts{hostVar: "MISSING_HOST", portVar: "DB_SERVICE_PORT"}, ""},
		{connectOpts{hostVar: "NAME_HOST", portVar: "DB_SERVICE_PORT"}, ""}, // no DNS
		{connectOpts{addr: "localhost:80"}, ""},
		{connectOpts{addr: "10.0.0.1:0"}, ""},
	} {
		got, err := tc.o.target(getenv)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("%+v: target %q, %v; want %q", tc.o, got, err, tc.want)
		}
	}
}

var tokenRE = regexp.MustCompile(`^crashdoc-token ([0-9a-f]{32}) run-started (\S+)$`)

func TestTokenLine(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok := newToken()
		if seen[tok] {
			t.Fatalf("token %s repeated", tok)
		}
		seen[tok] = true
		started := time.Date(2026, 5, 4, 3, 2, 1, 123456789, time.FixedZone("x", 3600))
		line := tokenLine(tok, started)
		m := tokenRE.FindStringSubmatch(line)
		if m == nil || m[1] != tok {
			t.Fatalf("token line %q does not match %s", line, tokenRE)
		}
		if m[2] != "2026-05-04T02:02:01.123456789Z" {
			t.Fatalf("run-started %q, want UTC RFC 3339 with nanoseconds", m[2])
		}
		if back, err := time.Parse(time.RFC3339Nano, m[2]); err != nil || !back.Equal(started) {
			t.Fatalf("run-started %q does not parse back: %v", m[2], err)
		}
	}
}

// The doc comment at the top of main.go and `crashprog help` say the same.
func TestHelpMatchesDocComment(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if doc, help := norm(f.Doc.Text()), norm(usage); doc != help {
		for i := range min(len(doc), len(help)) {
			if doc[i] != help[i] {
				t.Fatalf("main.go's doc comment and the help text differ at %q / %q", doc[i:min(i+60, len(doc))], help[i:min(i+60, len(help))])
			}
		}
		t.Fatalf("main.go's doc comment and the help text differ in length: %d / %d", len(doc), len(help))
	}
	for _, b := range []string{"exit", "alloc", "serve", "open", "write", "bind", "connect", "token", "sleep", "pause", "fill", "help"} {
		if !strings.Contains(usage, "\n  crashprog "+b+" ") && !strings.Contains(usage, "\n  crashprog "+b+"\n") {
			t.Errorf("the help text has no line for %s", b)
		}
	}
}

func TestFill(t *testing.T) {
	dir := t.TempDir()
	var last int
	if err := fill(dir+"/f", 3, func(mb int) { last = mb }); err != nil || last != 3 {
		t.Fatalf("fill: %v, progress %d", err, last)
	}
	if err := fill(dir+"/missing/f", 1, func(int) {}); err == nil ||
		err.Error() != "open "+dir+"/missing/f: no such file or directory" {
		t.Fatalf("fill into a missing directory: %v", err)
	}
}

// A bad flag comes out as the flag package prints it, like any Go program.
func TestBadFlagOutput(t *testing.T) {
	_, err := parseServe([]string{"--port", "15001", "--upstrem", "127.0.0.1:8080"})
	ue, ok := err.(usageError)
	if !ok || ue.help || !strings.HasPrefix(ue.flagOutput, "flag provided but not defined: -upstrem\nUsage of serve:\n  -after seconds\n") {
		t.Fatalf("got %#v", err)
	}
	if _, err := parseExit([]string{"-h"}); err == nil || !err.(usageError).help {
		t.Fatalf("-h: %v", err)
	}
}

func TestCreateAll(t *testing.T) {
	dir := t.TempDir()
	f, err := createAll(dir + "/var/lib/cache/state.db")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := createAll(dir + "/var/lib/cache/state.db/x"); err == nil ||
		err.Error() != "mkdir "+dir+"/var/lib/cache/state.db: not a directory" {
		t.Fatalf("under a file: %v", err)
	}
}
