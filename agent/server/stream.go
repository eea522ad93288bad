package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	utilexec "k8s.io/utils/exec"
)

// ErrNotRunning marks a container, or a pod's sandbox, that exists but
// does not run: the server answers 400 with the error's text.
var ErrNotRunning = errors.New("not running")

// StreamContainer is the running container a streaming request is about.
type StreamContainer struct {
	// ID is the container's CRI ID.
	ID string
	// TTY is the container spec's tty: an attach must use the container's.
	TTY bool
}

// streamTargets finds what a streaming request names, among the pods the
// node runs (agent/podview).
type streamTargets interface {
	// RunningContainer returns the running instance of a container of
	// the pod namespace/name; uid, when not empty, must be the pod's.
	// Unknown pods and containers are errors wrapping ErrNotFound; a
	// container that does not run now, ErrNotRunning.
	RunningContainer(namespace, name string, uid types.UID, container string) (StreamContainer, error)
	// ReadySandbox returns the CRI ID of the pod's ready sandbox, with the
	// same errors.
	ReadySandbox(namespace, name string, uid types.UID) (string, error)
}

// StreamRuntime is the part of the CRI runtime service the streaming
// endpoints call (k8s.io/cri-client's RuntimeService).
type StreamRuntime interface {
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
	// ExecSync runs cmd in the container and returns its output; a
	// non-zero exit is an error (k8s.io/utils/exec.ExitError).
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)
}

// StreamConfig backs /exec, /attach, /portForward and /run.
type StreamConfig struct {
	// Targets finds the pods and containers; nil leaves the endpoints out.
	Targets streamTargets
	// Runtime returns the CRI runtime, or nil while it has not answered
	// (the endpoints answer 503 then).
	Runtime func() StreamRuntime
}

// streamingRoutes registers the kubelet's streaming endpoints: exec,
// attach and port-forward through the runtime's streaming server (CRI
// Exec, Attach, PortForward), and /run through CRI ExecSync. Every one of
// them exposes the node's pods: as the kubelet, they are debugging
// handlers, served on the kubelet port (authenticated and authorized,
// DESIGN.md rule 10) and the root-only socket, never on the read-only
// port.
func (s *Server) streamingRoutes(r *routes) {
	if s.cfg.Stream.Targets == nil {
		return
	}
	handle := func(pattern string, h http.HandlerFunc) { r.handleFunc(exposeDebugging, pattern, h) }
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		handle(method+" /exec/{namespace}/{pod}/{container}", s.exec)
		handle(method+" /exec/{namespace}/{pod}/{uid}/{container}", s.exec)
		handle(method+" /attach/{namespace}/{pod}/{container}", s.attach)
		handle(method+" /attach/{namespace}/{pod}/{uid}/{container}", s.attach)
		handle(method+" /portForward/{namespace}/{pod}", s.portForward)
		handle(method+" /portForward/{namespace}/{pod}/{uid}", s.portForward)
	}
	handle("POST /run/{namespace}/{pod}/{container}", s.run)
	handle("POST /run/{namespace}/{pod}/{uid}/{container}", s.run)
}

// streamTarget is the pod, and for exec, attach and run the container, a
// request's path names.
type streamTarget struct {
	namespace, pod string
	uid            types.UID
	container      string
}

func targetOf(r *http.Request) streamTarget {
	return streamTarget{
		namespace: r.PathValue("namespace"),
		pod:       r.PathValue("pod"),
		uid:       types.UID(r.PathValue("uid")),
		container: r.PathValue("container"),
	}
}

// runtimeOr503 returns the runtime, or answers 503 and returns nil.
func (s *Server) runtimeOr503(w http.ResponseWriter) StreamRuntime {
	var rt StreamRuntime
	if s.cfg.Stream.Runtime != nil {
		rt = s.cfg.Stream.Runtime()
	}
	if rt == nil {
		http.Error(w, "the container runtime has not answered yet", http.StatusServiceUnavailable)
	}
	return rt
}

// container finds the running container of a request, or answers the
// error and returns false.
func (s *Server) container(w http.ResponseWriter, t streamTarget) (StreamContainer, bool) {
	c, err := s.cfg.Stream.Targets.RunningContainer(t.namespace, t.pod, t.uid, t.container)
	if err != nil {
		writeTargetError(w, err)
		return StreamContainer{}, false
	}
	return c, true
}

func writeTargetError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
	case errors.Is(err, ErrNotRunning):
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// exec serves /exec/{namespace}/{pod}[/{uid}]/{container}: CRI Exec, then
// the client's upgraded connection carried to the runtime's streaming
// server.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	rt, c, opts, ok := s.streamRequest(w, r, true)
	if !ok {
		return
	}
	resp, err := rt.Exec(r.Context(), &runtimeapi.ExecRequest{
		ContainerId: c.ID,
		Cmd:         opts.command,
		Tty:         opts.tty,
		Stdin:       opts.stdin,
		Stdout:      opts.stdout,
		Stderr:      opts.stderr,
	})
	if err != nil {
		writeRuntimeError(w, "exec", err)
		return
	}
	s.serveStream(w, r, resp.GetUrl(), opts)
}

// attach serves /attach/{namespace}/{pod}[/{uid}]/{container}, as exec
// but with CRI Attach. The terminal is the container's: the request's tty
// is ignored for the runtime, as the kubelet ignores it.
func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	rt, c, opts, ok := s.streamRequest(w, r, false)
	if !ok {
		return
	}
	opts.tty = c.TTY
	if opts.tty {
		// A terminal has one output stream.
		opts.stderr = false
	}
	resp, err := rt.Attach(r.Context(), &runtimeapi.AttachRequest{
		ContainerId: c.ID,
		Tty:         opts.tty,
		Stdin:       opts.stdin,
		Stdout:      opts.stdout,
		Stderr:      opts.stderr,
	})
	if err != nil {
		writeRuntimeError(w, "attach", err)
		return
	}
	s.serveStream(w, r, resp.GetUrl(), opts)
}

// streamRequest reads an exec (withCommand) or attach request and finds
// the runtime and the running container it is for. When it cannot, it
// has answered the client, and ok is false.
func (s *Server) streamRequest(w http.ResponseWriter, r *http.Request, withCommand bool) (rt StreamRuntime, c StreamContainer, opts streamOptions, ok bool) {
	opts, err := parseStreamOptions(r.URL.Query())
	if err == nil && withCommand && len(opts.command) == 0 {
		err = errors.New("query parameter command: at least one is required")
	}
	if err == nil {
		err = requireUpgrade(r)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, c, opts, false
	}
	if rt = s.runtimeOr503(w); rt == nil {
		return nil, c, opts, false
	}
	c, ok = s.container(w, targetOf(r))
	return rt, c, opts, ok
}

// portForward serves /portForward/{namespace}/{pod}[/{uid}]: CRI
// PortForward for the pod's sandbox, then the upgraded connection carried
// to the runtime. SPDY clients name the ports in their streams; WebSocket
// clients in the port query parameter.
func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	err := requireUpgrade(r)
	var ports []int32
	if err == nil && !isTunnelingRequest(r) && isWebSocketRequest(r) {
		ports, err = parsePorts(r.URL.Query())
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rt := s.runtimeOr503(w)
	if rt == nil {
		return
	}
	t := targetOf(r)
	sandbox, err := s.cfg.Stream.Targets.ReadySandbox(t.namespace, t.pod, t.uid)
	if err != nil {
		writeTargetError(w, err)
		return
	}
	resp, err := rt.PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sandbox, Port: ports})
	if err != nil {
		writeRuntimeError(w, "port-forward", err)
		return
	}
	target, err := streamURL(resp.GetUrl())
	if err != nil {
		writeRuntimeError(w, "port-forward", err)
		return
	}
	if isTunnelingRequest(r) {
		tunnelPortForward(w, r, target)
		return
	}
	proxyUpgrade(w, r, target)
}

// serveStream carries an exec or attach request to the runtime's
// streaming server at rawURL: a v5 WebSocket client's streams are
// translated to SPDY, every other protocol (SPDY, older WebSocket ones)
// passes through as the client and the runtime negotiate it.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, rawURL string, opts streamOptions) {
	target, err := streamURL(rawURL)
	if err != nil {
		writeRuntimeError(w, "stream", err)
		return
	}
	if isV5WebSocketRequest(r) {
		translateV5(w, r, target, opts)
		return
	}
	proxyUpgrade(w, r, target)
}

// streamURL checks the URL the runtime answered with.
func streamURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the runtime's streaming URL %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the runtime's streaming URL %q is not an absolute http(s) URL", raw)
	}
	return u, nil
}

// writeRuntimeError answers a failed CRI call: 500 with what the runtime
// said, as the kubelet answers it.
func writeRuntimeError(w http.ResponseWriter, verb string, err error) {
	http.Error(w, fmt.Sprintf("%s: %v", verb, err), http.StatusInternalServerError)
}

// run serves POST /run/{namespace}/{pod}[/{uid}]/{container}?cmd=...: the
// command (cmd split at spaces, as the kubelet splits it) run with CRI
// ExecSync; the answer is its stdout then its stderr. A command that
// fails or exits non-zero gets 500 with the runtime's message. timeout
// (a Go duration or seconds; not the kubelet's) bounds the command; by
// default it runs as long as the client waits.
func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	cmd, timeout, err := parseRun(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rt := s.runtimeOr503(w)
	if rt == nil {
		return
	}
	t := targetOf(r)
	c, ok := s.container(w, t)
	if !ok {
		return
	}
	stdout, stderr, err := rt.ExecSync(r.Context(), c.ID, cmd, timeout)
	if err != nil {
		var exitErr utilexec.ExitError
		if errors.As(err, &exitErr) {
			http.Error(w, fmt.Sprintf("command %q in container %q of pod %s/%s exited with code %d: %s", strings.Join(cmd, " "), t.container, t.namespace, t.pod, exitErr.ExitStatus(), strings.TrimSpace(string(stderr))), http.StatusInternalServerError)
			return
		}
		klog.FromContext(r.Context()).V(2).Info("Run failed", "pod", t.namespace+"/"+t.pod, "container", t.container, "err", err)
		writeRuntimeError(w, "run", err)
		return
	}
	// The kubelet labels the output JSON, whatever it is; nosniff keeps a
	// browser from rendering it.
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(append(stdout, stderr...)) //nolint:gosec // G705: the command's output, answered as the kubelet answers it
}
