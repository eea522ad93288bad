package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
	clientspdy "k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"

	"github.com/minikubelet/minikubelet/internal/localsock"
)

// Streams are the command line's standard streams. In is a terminal when
// it is an *os.File on one.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// agent is how the command line reaches a running agent: at an http URL,
// or through a Unix socket (unix:///path/to.sock), whose requests go to
// http://localhost.
type agent struct {
	base      string
	transport *http.Transport
}

// dialAgent parses --server.
func dialAgent(server string) (*agent, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("--server %q: %w", server, err)
	}
	switch u.Scheme {
	case "unix":
		path := u.Path
		if path == "" {
			path = u.Opaque
		}
		if path == "" {
			return nil, fmt.Errorf("--server %q: want unix:///path/to.sock", server)
		}
		return &agent{base: "http://localhost", transport: localsock.Transport(path)}, nil
	case "http", "https":
		return &agent{base: strings.TrimRight(server, "/"), transport: &http.Transport{Proxy: nil}}, nil
	default:
		return nil, fmt.Errorf("--server %q: want http://host:port or unix:///path/to.sock", server)
	}
}

// client is the agent's client for the plain endpoints (/pods).
func (a *agent) client() *client {
	return &client{base: a.base, http: &http.Client{Transport: a.transport}}
}

// spdyPingPeriod keeps an idle session alive through idle timeouts, as
// kubectl keeps its own.
const spdyPingPeriod = 5 * time.Second

// session is one exec or attach.
type session struct {
	// path and query of the endpoint.
	path  string
	query url.Values
	// stdin sends the command line's stdin; tty runs on a terminal.
	stdin, tty bool
}

// run runs a session against the agent and returns the command line's
// exit code: the remote command's when it failed, as kubectl exits.
func (a *agent) run(ctx context.Context, sess session, s Streams, name string) int {
	u, err := url.Parse(a.base + sess.path + "?" + sess.query.Encode())
	if err != nil {
		fmt.Fprintf(s.Err, "minikubelet %s: %v\n", name, err)
		return 1
	}
	rt, err := spdy.NewRoundTripperWithConfig(spdy.RoundTripperConfig{UpgradeTransport: a.transport, PingPeriod: spdyPingPeriod})
	if err != nil {
		fmt.Fprintf(s.Err, "minikubelet %s: %v\n", name, err)
		return 1
	}
	executor, err := remotecommand.NewSPDYExecutorForTransports(rt, clientspdy.NewUpgraderForStreaming(rt), http.MethodPost, u)
	if err != nil {
		fmt.Fprintf(s.Err, "minikubelet %s: %v\n", name, err)
		return 1
	}
	opts := remotecommand.StreamOptions{Stdout: s.Out, Tty: sess.tty}
	if sess.stdin {
		opts.Stdin = s.In
	}
	if !sess.tty {
		opts.Stderr = s.Err
	}
	if sess.tty {
		restore, sizes, err := rawTerminal(ctx, s)
		if err != nil {
			fmt.Fprintf(s.Err, "minikubelet %s: %v\n", name, err)
			return 1
		}
		defer restore()
		opts.TerminalSizeQueue = sizes
	}
	err = executor.StreamWithContext(ctx, opts)
	var exitErr exec.CodeExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exitErr) && exitErr.Exited():
		fmt.Fprintf(s.Err, "command terminated with exit code %d\n", exitErr.ExitStatus())
		return exitErr.ExitStatus()
	case errors.Is(err, context.Canceled):
		return 130
	default:
		fmt.Fprintf(s.Err, "minikubelet %s: %v\n", name, err)
		return 1
	}
}

// useTTY decides, as kubectl does, whether a session asking for a
// terminal gets one: only with stdin, and only when stdin is a terminal.
func useTTY(tty, stdin bool, s Streams) (bool, string) {
	if !tty || !stdin {
		return false, ""
	}
	if f, ok := s.In.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return false, "Unable to use a TTY - input is not a terminal or the right kind of file"
	}
	return true, ""
}

// rawTerminal puts the command line's terminal in raw mode, so that every
// key goes to the remote terminal, and reports its size, at once and on
// each SIGWINCH, until ctx ends or restore is called.
func rawTerminal(ctx context.Context, s Streams) (restore func(), sizes remotecommand.TerminalSizeQueue, err error) {
	in := s.In.(*os.File) // useTTY checked
	state, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return nil, nil, fmt.Errorf("raw terminal mode: %w", err)
	}
	sizeFd := int(in.Fd())
	if f, ok := s.Out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		sizeFd = int(f.Fd())
	}
	ctx, cancel := context.WithCancel(ctx)
	winch := make(chan os.Signal, 1) // signal.Notify's; a resize seen once is enough
	signal.Notify(winch, syscall.SIGWINCH)
	q := make(chanSizeQueue) // written and closed by the goroutine below
	go func() {
		defer close(q)
		for {
			if w, h, err := term.GetSize(sizeFd); err == nil && w > 0 && h > 0 {
				select {
				case q <- remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}:
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-winch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		cancel()
		_ = term.Restore(int(in.Fd()), state)
	}, q, nil
}

// chanSizeQueue hands terminal sizes to the session.
type chanSizeQueue chan remotecommand.TerminalSize

func (q chanSizeQueue) Next() *remotecommand.TerminalSize {
	size, ok := <-q
	if !ok {
		return nil
	}
	return &size
}

// streamFlags are the flags exec and attach share.
type streamFlags struct {
	server, namespace, container string
	stdin, tty                   bool
}

func (f *streamFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", DefaultServer, "the agent: unix://PATH of its local socket (root only); exec and attach are not on the read-only port")
	fs.StringVar(&f.namespace, "namespace", "", "the pod's namespace (default: wherever the pod is)")
	fs.StringVar(&f.namespace, "n", "", "shorthand for --namespace")
	fs.StringVar(&f.container, "container", "", "the container (default: the pod's default container, else its first)")
	fs.StringVar(&f.container, "c", "", "shorthand for --container")
	fs.BoolVar(&f.stdin, "stdin", false, "pass stdin to the container")
	fs.BoolVar(&f.stdin, "i", false, "shorthand for --stdin")
	fs.BoolVar(&f.tty, "tty", false, "stdin is a terminal (with -i, when stdin is one)")
	fs.BoolVar(&f.tty, "t", false, "shorthand for --tty")
}

// parseInterspersed parses args with fs, allowing flags after positional
// arguments as kubectl does, and "-it" for "-i -t".
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var expanded []string
	for _, a := range args {
		if a == "-it" || a == "-ti" {
			expanded = append(expanded, "-i", "-t")
			continue
		}
		expanded = append(expanded, a)
	}
	var positional []string
	for rest := expanded; ; {
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
}

// target finds the pod and container a session is for, and says which
// container it chose when none was given.
func (a *agent) target(ctx context.Context, podName string, f streamFlags, stderr io.Writer) (namespace, pod, container string, spec *v1.Container, err error) {
	pods, err := a.client().pods(ctx)
	if err != nil {
		return "", "", "", nil, err
	}
	p, err := findPod(pods, podName, f.namespace)
	if err != nil {
		return "", "", "", nil, err
	}
	name := f.container
	if name == "" {
		var note string
		name, note = defaultContainer(p)
		if note != "" {
			fmt.Fprintln(stderr, note)
		}
	}
	return p.Namespace, p.Name, name, kubecontainer.SpecOf(p, name), nil
}

func streamPath(verb, namespace, pod, container string) string {
	return "/" + verb + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(pod) + "/" + url.PathEscape(container)
}

// streamQuery is the query of /exec and /attach, with the kubelet's
// parameter names.
func streamQuery(stdin, tty bool) url.Values {
	q := url.Values{}
	q.Set("output", "1")
	if stdin {
		q.Set("input", "1")
	}
	if tty {
		q.Set("tty", "1")
	} else {
		q.Set("error", "1")
	}
	return q
}
