package cli

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
	"testing"
)

// Mistakes in exec's and attach's command lines are said in one line,
// with exit code 2, before any request.
func TestExecAttachUsage(t *testing.T) {
	tests := []struct {
		name string
		run  func(context.Context, []string, Streams) int
		args []string
		want string
	}{
		{"exec without a pod", Exec, []string{"--", "ls"}, "usage: minikubelet exec"},
		{"exec without a command", Exec, []string{"web"}, `no command: give it after "--"`},
		{"exec with the command before --", Exec, []string{"web", "ls", "--", "ls"}, `unexpected argument "ls"`},
		{"exec with a bad server", Exec, []string{"web", "--server", "ftp://x", "--", "ls"}, `--server "ftp://x": want http://host:port or unix:///path/to.sock`},
		{"exec with an unknown flag", Exec, []string{"web", "-x", "--", "ls"}, "flag provided but not defined: -x"},
		{"attach without a pod", Attach, nil, "usage: minikubelet attach"},
		{"attach with two pods", Attach, []string{"a", "b"}, "usage: minikubelet attach"},
		{"attach with a bad server", Attach, []string{"web", "--server", "unix://"}, "want unix:///path/to.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			code := tt.run(context.Background(), tt.args, Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errOut})
			if code != 2 || !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 saying %q", code, errOut.String(), tt.want)
			}
		})
	}
}

// Flags may follow the pod, as with kubectl, and -it is -i -t.
func TestParseInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	var f streamFlags
	f.add(fs)
	pos, err := parseInterspersed(fs, []string{"web", "-it", "-c", "app", "-n", "kube-system"})
	if err != nil || len(pos) != 1 || pos[0] != "web" || !f.stdin || !f.tty || f.container != "app" || f.namespace != "kube-system" {
		t.Errorf("parsed %q %+v %v", pos, f, err)
	}
}

// A terminal is asked for only with stdin from a terminal; the query
// names the streams as the apiserver does.
func TestTTYAndQuery(t *testing.T) {
	if tty, note := useTTY(true, true, Streams{In: strings.NewReader("")}); tty || !strings.Contains(note, "Unable to use a TTY") {
		t.Errorf("-it with stdin not a terminal: tty %v, note %q", tty, note)
	}
	if tty, note := useTTY(true, false, Streams{In: strings.NewReader("")}); tty || note != "" {
		t.Errorf("-t without -i: tty %v, note %q; want none, silently, as kubectl", tty, note)
	}
	if q := streamQuery(true, false).Encode(); q != "error=1&input=1&output=1" {
		t.Errorf("-i query %q", q)
	}
	if q := streamQuery(false, true).Encode(); q != "output=1&tty=1" {
		t.Errorf("-t query %q", q)
	}
	if p := streamPath("exec", "ns", "a/b", "c"); p != "/exec/ns/a%2Fb/c" {
		t.Errorf("path %q", p)
	}
}
