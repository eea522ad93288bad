package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	clientexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	rcserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	streamhttp "k8s.io/streaming/pkg/httpstream"
	utilexec "k8s.io/utils/exec"
)

// fakeContainers is what the runtime's streaming server runs, in process:
// exec of "echo CODE" copies stdin to stdout, writes "err" to stderr and
// exits CODE; a terminal's first size is written out as "size WxH";
// attach copies stdin to stdout; every forwarded port echoes.
type fakeContainers struct{}

func (fakeContainers) Exec(_ context.Context, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan rcserver.TerminalSize) error {
	if tty {
		size := <-resize
		fmt.Fprintf(out, "size %dx%d\n", size.Width, size.Height)
		return nil
	}
	if in != nil {
		_, _ = io.Copy(out, in)
	}
	if errw != nil {
		fmt.Fprintf(errw, "err from %s\n", id)
	}
	var code int
	if _, err := fmt.Sscanf(strings.Join(cmd, " "), "echo %d", &code); err != nil || code == 0 {
		return err
	}
	return utilexec.CodeExitError{Err: fmt.Errorf("exit %d", code), Code: code}
}

func (fakeContainers) Attach(_ context.Context, _ string, in io.Reader, out, _ io.WriteCloser, _ bool, _ <-chan rcserver.TerminalSize) error {
	_, err := io.Copy(out, in)
	return err
}

func (fakeContainers) PortForward(_ context.Context, _ string, _ int32, stream io.ReadWriteCloser) error {
	_, err := io.Copy(stream, stream)
	return err
}

// fakeRuntime is the CRI runtime: the streaming calls go to a real
// streaming server (cri-streaming's, as containerd's), ExecSync is faked.
type fakeRuntime struct {
	srv streaming.Server
	// lastPorts are the ports of the last PortForward.
	mu        sync.Mutex
	lastPorts []int32
}

func newFakeRuntime(t *testing.T) *fakeRuntime {
	t.Helper()
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	cfg := streaming.DefaultConfig
	cfg.BaseURL = &url.URL{Scheme: "http", Host: ts.Listener.Addr().String()}
	srv, err := streaming.NewServer(cfg, fakeContainers{})
	if err != nil {
		t.Fatal(err)
	}
	handler = srv
	return &fakeRuntime{srv: srv}
}

func (f *fakeRuntime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return f.srv.GetExec(req)
}

func (f *fakeRuntime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return f.srv.GetAttach(req)
}

func (f *fakeRuntime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	f.mu.Lock()
	f.lastPorts = req.GetPort()
	f.mu.Unlock()
	return f.srv.GetPortForward(req)
}

func (f *fakeRuntime) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	if cmd[0] == "false" {
		return nil, []byte("it failed\n"), utilexec.CodeExitError{Err: errors.New("exit 1"), Code: 1}
	}
	return []byte(id + ": " + strings.Join(cmd, "|") + "\n"), []byte("to stderr\n"), nil
}

// fakeTargets knows pod ns/web: container app runs (ID app-1), container
// tty runs with a terminal, container done does not run.
type fakeTargets struct{}

func (fakeTargets) RunningContainer(namespace, name string, uid types.UID, container string) (StreamContainer, error) {
	if namespace != "ns" || name != "web" || (uid != "" && uid != "uid-web") {
		return StreamContainer{}, fmt.Errorf("pod %s/%s: %w", namespace, name, ErrNotFound)
	}
	switch container {
	case "app":
		return StreamContainer{ID: "app-1"}, nil
	case "tty":
		return StreamContainer{ID: "tty-1", TTY: true}, nil
	case "done":
		return StreamContainer{}, fmt.Errorf("container done exited: %w", ErrNotRunning)
	}
	return StreamContainer{}, fmt.Errorf("container %q: %w", container, ErrNotFound)
}

func (fakeTargets) ReadySandbox(namespace, name string, uid types.UID) (string, error) {
	if _, err := (fakeTargets{}).RunningContainer(namespace, name, uid, "app"); err != nil {
		return "", err
	}
	return "sandbox-web", nil
}

// serveStreams serves the streaming endpoints against a fake runtime and
// returns the agent's base URL.
func serveStreams(t *testing.T) (string, *fakeRuntime) {
	t.Helper()
	rt := newFakeRuntime(t)
	return serveSocketMux(t, Config{Pods: fakePods{}, Stream: StreamConfig{
		Targets: fakeTargets{},
		Runtime: func() StreamRuntime { return rt },
	}}), rt
}

// serveSocketMux serves, over plain HTTP on loopback, the routes the
// agent's socket serves (every endpoint, no credentials): the handlers
// under test without the listeners, which server_test covers.
func serveSocketMux(t *testing.T, cfg Config) string {
	t.Helper()
	s := &Server{cfg: cfg}
	r := newRoutes(true)
	s.register(r)
	ts := httptest.NewServer(r.socket)
	t.Cleanup(ts.Close)
	return ts.URL
}

func streamQuery(stdin, tty bool, command ...string) url.Values {
	q := url.Values{"output": {"1"}}
	if stdin {
		q.Set("input", "1")
	}
	if tty {
		q.Set("tty", "1")
	} else {
		q.Set("error", "1")
	}
	for _, c := range command {
		q.Add("command", c)
	}
	return q
}

func mustURL(t *testing.T, base, path string, q url.Values) *url.URL {
	t.Helper()
	u, err := url.Parse(base + path + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// executor makes a client of each protocol kubectl speaks.
func executor(t *testing.T, base, protocol string, u *url.URL) remotecommand.Executor {
	t.Helper()
	cfg := &rest.Config{Host: base}
	var (
		ex  remotecommand.Executor
		err error
	)
	switch protocol {
	case "spdy":
		ex, err = remotecommand.NewSPDYExecutor(cfg, http.MethodPost, u)
	case "websocket-v5":
		ex, err = remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, u.String())
	case "websocket-v4":
		// The runtime speaks v4 itself: passed through untouched.
		ex, err = remotecommand.NewWebSocketExecutorForProtocols(cfg, http.MethodGet, u.String(), "v4.channel.k8s.io")
	}
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

type oneSize struct {
	once sync.Once
	size remotecommand.TerminalSize
}

func (o *oneSize) Next() *remotecommand.TerminalSize {
	var s *remotecommand.TerminalSize
	o.once.Do(func() { s = &o.size })
	return s
}

// Exec over each protocol: stdin in, stdout and stderr apart, the exit
// code back, a terminal's size through.
func TestStreamExec(t *testing.T) {
	base, _ := serveStreams(t)
	for _, protocol := range []string{"spdy", "websocket-v5", "websocket-v4"} {
		t.Run(protocol, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// Before v5, a WebSocket client cannot close its stdin: the
			// command would wait for its end.
			withStdin := protocol != "websocket-v4"
			ex := executor(t, base, protocol, mustURL(t, base, "/exec/ns/web/app", streamQuery(withStdin, false, "echo", "3")))
			var out, errOut bytes.Buffer
			opts := remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}
			wantOut := ""
			if withStdin {
				opts.Stdin, wantOut = strings.NewReader("some input\n"), "some input\n"
			}
			err := ex.StreamWithContext(ctx, opts)
			var code clientexec.CodeExitError
			if !errors.As(err, &code) || code.ExitStatus() != 3 {
				t.Errorf("err = %v, want exit code 3", err)
			}
			if out.String() != wantOut || errOut.String() != "err from app-1\n" {
				t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
			}

			// With the uid in the path, and exit 0.
			ex = executor(t, base, protocol, mustURL(t, base, "/exec/ns/web/uid-web/app", streamQuery(false, false, "echo", "0")))
			out.Reset()
			errOut.Reset()
			if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}); err != nil || errOut.String() != "err from app-1\n" {
				t.Errorf("exec with uid: %v, stderr %q", err, errOut.String())
			}

			ex = executor(t, base, protocol, mustURL(t, base, "/exec/ns/web/app", streamQuery(false, true, "sh")))
			out.Reset()
			err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{
				Stdout: &out, Tty: true,
				TerminalSizeQueue: &oneSize{size: remotecommand.TerminalSize{Width: 132, Height: 43}},
			})
			if err != nil || out.String() != "size 132x43\n" {
				t.Errorf("exec -t: %v, output %q, want the terminal's size", err, out.String())
			}
		})
	}
}

// Attach over SPDY and WebSocket carries stdin to the container and its
// output back.
func TestStreamAttach(t *testing.T) {
	base, _ := serveStreams(t)
	for _, protocol := range []string{"spdy", "websocket-v5"} {
		t.Run(protocol, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ex := executor(t, base, protocol, mustURL(t, base, "/attach/ns/web/app", streamQuery(true, false)))
			var out bytes.Buffer
			if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("to the main process\n"), Stdout: &out, Stderr: io.Discard}); err != nil {
				t.Fatal(err)
			}
			if out.String() != "to the main process\n" {
				t.Errorf("attach output %q", out.String())
			}
		})
	}
}

// Port-forward over SPDY and over SPDY in a WebSocket, several
// connections at once.
func TestStreamPortForward(t *testing.T) {
	base, rt := serveStreams(t)
	cfg := &rest.Config{Host: base}
	u := mustURL(t, base, "/portForward/ns/web", nil)
	dialers := map[string]func() (streamhttp.Dialer, error){
		"spdy": func() (streamhttp.Dialer, error) {
			tr, upgrader, err := spdy.RoundTripperFor(cfg)
			return spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: tr}, http.MethodPost, u), err
		},
		"websocket": func() (streamhttp.Dialer, error) { return portforward.NewSPDYOverWebsocketDialerForStreaming(u, cfg) },
	}
	for name, dial := range dialers {
		t.Run(name, func(t *testing.T) {
			d, err := dial()
			if err != nil {
				t.Fatal(err)
			}
			local := forwardPort(t, d, 8080)
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := echo(local, 256<<10); err != nil {
						t.Errorf("connection %d: %v", i, err)
					}
				}()
			}
			wg.Wait()
		})
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.lastPorts) != 0 {
		t.Errorf("SPDY port-forward asked the runtime for ports %v; SPDY clients name them in their streams", rt.lastPorts)
	}
}

// forwardPort forwards a local port to port through d and returns the
// local address; the test's cleanup stops it.
func forwardPort(t *testing.T, d streamhttp.Dialer, port int) string {
	t.Helper()
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewForStreaming(d, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("port-forward not ready after 10s")
	}
	ports, err := fw.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local)
}

// echo sends size random bytes to addr, which echoes them, and checks
// what comes back.
func echo(addr string, size int) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	sent := make([]byte, size)
	_, _ = rand.Read(sent)
	go func() {
		_, _ = conn.Write(sent)
	}()
	got := make([]byte, size)
	if _, err := io.ReadFull(conn, got); err != nil {
		return err
	}
	if !bytes.Equal(got, sent) {
		return errors.New("the bytes back are not the bytes sent")
	}
	return nil
}

func post(t *testing.T, u string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestStreamRun(t *testing.T) {
	base, _ := serveStreams(t)
	if code, body := post(t, base+"/run/ns/web/app?cmd=ls+-l++/", nil); code != http.StatusOK || body != "app-1: ls|-l|/\nto stderr\n" {
		t.Errorf("/run: %d %q", code, body)
	}
	if code, body := post(t, base+"/run/ns/web/app?cmd=false", nil); code != http.StatusInternalServerError || !strings.Contains(body, `command "false" in container "app" of pod ns/web exited with code 1: it failed`) {
		t.Errorf("/run false: %d %q", code, body)
	}
}

// Requests that cannot be served get the status and the cause.
func TestStreamErrors(t *testing.T) {
	base, _ := serveStreams(t)
	upgrade := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}}
	tests := []struct {
		name   string
		path   string
		header http.Header
		code   int
		want   string
	}{
		{"no upgrade", "/exec/ns/web/app?output=1&command=ls", nil, 400, "upgrade request required"},
		{"no command", "/exec/ns/web/app?output=1", upgrade, 400, "command: at least one"},
		{"no stream", "/exec/ns/web/app?command=ls", upgrade, 400, "at least 1 of stdin, stdout, stderr"},
		{"bad flag", "/exec/ns/web/app?command=ls&output=yes", upgrade, 400, `output="yes"`},
		{"unknown pod", "/exec/ns/nope/app?output=1&command=ls", upgrade, 404, "pod ns/nope"},
		{"wrong uid", "/attach/ns/web/uid-other/app?output=1", upgrade, 404, "pod ns/web"},
		{"unknown container", "/attach/ns/web/nope?output=1", upgrade, 404, `container "nope"`},
		{"not running", "/exec/ns/web/done?output=1&command=ls", upgrade, 400, "container done exited"},
		{"port-forward unknown pod", "/portForward/ns/nope", upgrade, 404, "pod ns/nope"},
		{"websocket port-forward without port", "/portForward/ns/web", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}, 400, `"port" is required`},
		{"websocket port-forward bad port", "/portForward/ns/web?port=70000", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}, 400, `"70000" is not a port`},
		{"run without cmd", "/run/ns/web/app", nil, 400, `"cmd" is required`},
		{"run bad timeout", "/run/ns/web/app?cmd=ls&timeout=soon", nil, 400, `timeout="soon"`},
		{"run in a container not running", "/run/ns/web/done?cmd=ls", nil, 400, "container done exited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := post(t, base+tt.path, tt.header)
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Errorf("%s: %d %q, want %d saying %q", tt.path, code, body, tt.code, tt.want)
			}
		})
	}
}

// Until the runtime has answered, the endpoints answer 503; without
// targets they are not served.
func TestStreamUnavailable(t *testing.T) {
	base := serveSocketMux(t, Config{Pods: fakePods{}, Stream: StreamConfig{
		Targets: fakeTargets{},
		Runtime: func() StreamRuntime { return nil },
	}})
	if code, body := post(t, base+"/run/ns/web/app?cmd=ls", nil); code != http.StatusServiceUnavailable {
		t.Errorf("/run before the runtime answered: %d %q, want 503", code, body)
	}
	base = serveSocketMux(t, Config{Pods: fakePods{}})
	if code, _ := post(t, base+"/run/ns/web/app?cmd=ls", nil); code != http.StatusNotFound {
		t.Errorf("/run without streaming targets: %d, want 404", code)
	}
}

func TestParseRun(t *testing.T) {
	tests := []struct {
		query   string
		cmd     []string
		timeout time.Duration
		err     string
	}{
		{query: "cmd=ls+-l", cmd: []string{"ls", "-l"}},
		{query: "cmd=ls&timeout=1500ms", cmd: []string{"ls"}, timeout: 2 * time.Second},
		{query: "cmd=ls&timeout=30", cmd: []string{"ls"}, timeout: 30 * time.Second},
		{query: "cmd=ls&timeout=-1s", err: "must not be negative"},
		{query: "cmd=+", err: `"cmd" is required`},
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		cmd, timeout, err := parseRun(q)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", tt.query, err, tt.err)
			}
			continue
		}
		if err != nil || strings.Join(cmd, "|") != strings.Join(tt.cmd, "|") || timeout != tt.timeout {
			t.Errorf("%s: %q %v %v, want %q %v", tt.query, cmd, timeout, err, tt.cmd, tt.timeout)
		}
	}
}

func TestParseStreamOptions(t *testing.T) {
	q, _ := url.ParseQuery("stdin=true&stdout=1&stderr=1&tty=1&command=sh")
	o, err := parseStreamOptions(q)
	if err != nil || !o.stdin || !o.stdout || o.stderr || !o.tty {
		t.Errorf("kubectl's names with a tty: %+v %v, want stdin, stdout, tty and no stderr", o, err)
	}
	q, _ = url.ParseQuery("port=80,8080&port=9090")
	ports, err := parsePorts(q)
	if err != nil || fmt.Sprint(ports) != "[80 8080 9090]" {
		t.Errorf("parsePorts: %v %v", ports, err)
	}
}
