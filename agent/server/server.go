package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/internal/cleanup"
	"github.com/minikubelet/minikubelet/internal/localsock"
)

// podLister lists the pods the node runs, with their current status.
type podLister interface {
	PodsWithStatus() []*v1.Pod
}

// runningPods lists what the runtime runs, for /runningpods/.
type runningPods interface {
	RunningPods() []*v1.Pod
}

// manifestErrors lists the manifests the sources refuse right now.
type manifestErrors interface {
	Errors() []sources.ManifestError
}

// Check is one named health check; Check returns nil when healthy.
type Check struct {
	Name  string
	Check func() error
}

// Config configures the endpoints.
type Config struct {
	// NodeName is the node's name: the name of the nodes/<subresource>
	// the kubelet port authorizes.
	NodeName string
	// Address is where the kubelet port and the read-only port listen.
	Address string
	// Port is the kubelet port: HTTPS, every request authenticated and
	// authorized (Auth). 0 disables it.
	Port int
	// ReadOnlyPort serves what the kubelet's read-only port serves,
	// without TLS or authentication; 0 disables it.
	ReadOnlyPort int
	// HealthzAddress and HealthzPort of /healthz; port 0 disables it.
	HealthzAddress string
	HealthzPort    int
	// SocketPath is the local Unix socket, which serves every endpoint to
	// root without credentials (package localsock); "" disables it.
	SocketPath string
	// TLS gives the kubelet port's serving certificate.
	TLS TLS
	// Auth says who may use the kubelet port.
	Auth AuthConfig
	// EnableDebuggingHandlers serves logs, the streaming endpoints,
	// /runningpods/, /configz and pprof on the kubelet port; without it
	// they answer 405 there, as the kubelet's. The socket always serves
	// them.
	EnableDebuggingHandlers bool
	// Configz is served on /configz as the kubelet serves it:
	// {"kubeletconfig": Configz}.
	Configz any

	Pods   podLister
	Checks []Check
	// ManifestErrors backs /manifests/errors.
	ManifestErrors manifestErrors
	// Metrics serves /metrics.
	Metrics http.Handler
	// Logs backs /containerLogs/{namespace}/{pod}/{container}.
	Logs containerLogs
	// Running backs /runningpods/.
	Running runningPods
	// Stats returns what serves /stats/summary, /metrics/cadvisor and
	// /metrics/resource, or
	// nil while there is nothing yet (the container runtime has not
	// answered): they answer 503 then. Nil Stats leaves them out (404).
	Stats func() Stats
	// Clock times log follows, sinceSeconds, certificate checks and the
	// webhooks' caches; the real clock when nil.
	Clock clock.Clock
	// Stream backs /exec, /attach, /portForward and /run (stream.go).
	Stream StreamConfig

	// m18 (observability.go, logs.go).
	// ProbeMetrics serves /metrics/probes.
	ProbeMetrics http.Handler
	// SplitLogStreams honours /containerLogs' stream parameter, as the
	// kubelet's PodLogsQuerySplitStreams feature gate.
	SplitLogStreams bool
}

// Server serves the endpoints on the kubelet port, the read-only port,
// the healthz port and the local socket.
type Server struct {
	cfg Config
	// Listeners; nil when not served.
	portLn, readOnlyLn, healthzLn net.Listener
	socketLn                      *localsock.Listener
	// auth guards the kubelet port; nil when it is not served.
	auth *auth
}

// Listen checks the kubelet port's certificate and authentication files,
// makes the self-signed certificate if it needs one, and binds every
// enabled listener, so that a port in use is reported at start-up. Serve
// then serves them. The kubelet port needs a way to authenticate
// (AuthConfig): a caller that has none disables the port.
func Listen(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	s := &Server{cfg: cfg}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if cfg.Port != 0 {
		if s.auth, err = newAuth(cfg.Auth, cfg.NodeName, cfg.Clock); err != nil {
			return nil, err
		}
		if !s.auth.authn.configured() {
			return nil, fmt.Errorf("kubelet port %d: no way to authenticate clients (client CA, tokens, TokenReview or anonymous)", cfg.Port)
		}
		current, err := cfg.TLS.certificateSource(klog.FromContext(ctx), cfg.Clock)
		if err != nil {
			return nil, err
		}
		if s.portLn, err = listenTCP(cfg.Address, cfg.Port); err != nil {
			return nil, err
		}
		s.portLn = tls.NewListener(s.portLn, tlsConfig(current))
	}
	if cfg.ReadOnlyPort != 0 {
		if s.readOnlyLn, err = listenTCP(cfg.Address, cfg.ReadOnlyPort); err != nil {
			return nil, err
		}
	}
	if cfg.HealthzPort != 0 {
		if s.healthzLn, err = listenTCP(cfg.HealthzAddress, cfg.HealthzPort); err != nil {
			return nil, err
		}
	}
	if cfg.SocketPath != "" {
		if s.socketLn, err = localsock.Listen(cfg.SocketPath); err != nil {
			return nil, fmt.Errorf("--socket: %w", err)
		}
	}
	return s, nil
}

func listenTCP(address string, port int) (net.Listener, error) {
	addr := net.JoinHostPort(address, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

func (s *Server) close() {
	for _, ln := range []net.Listener{s.portLn, s.readOnlyLn, s.healthzLn} {
		if ln != nil {
			_ = ln.Close()
		}
	}
	if s.socketLn != nil {
		_ = s.socketLn.Close()
	}
}

// exposure says which listeners serve a route.
type exposure int

const (
	// exposeReadOnly routes are what the kubelet's read-only port serves:
	// the read-only port, the kubelet port and the socket serve them.
	exposeReadOnly exposure = iota + 1
	// exposeAuthenticated routes are served on the kubelet port and the
	// socket.
	exposeAuthenticated
	// exposeDebugging routes are the kubelet's debugging handlers (logs,
	// exec, attach, port-forward, run, /runningpods/, /configz, pprof):
	// served on the socket, and on the kubelet port only with
	// EnableDebuggingHandlers (405 otherwise, as the kubelet answers).
	exposeDebugging
)

// routes registers endpoints on the listeners that serve them. Each file
// of this package that serves endpoints registers them in one function
// taking *routes, which Server.register calls. Patterns are
// net/http.ServeMux's ("GET /pods", "POST /exec/{namespace}/{pod}/{container}");
// a pattern may be registered once.
type routes struct {
	readOnly, port, socket *http.ServeMux
	// debugging is EnableDebuggingHandlers.
	debugging bool
}

func newRoutes(debugging bool) *routes {
	return &routes{readOnly: http.NewServeMux(), port: http.NewServeMux(), socket: http.NewServeMux(), debugging: debugging}
}

// handle serves h at pattern on the listeners of e.
func (r *routes) handle(e exposure, pattern string, h http.Handler) {
	r.socket.Handle(pattern, h)
	switch {
	case e == exposeDebugging && !r.debugging:
		r.port.Handle(pattern, debuggingDisabled)
	default:
		r.port.Handle(pattern, h)
	}
	if e == exposeReadOnly {
		r.readOnly.Handle(pattern, h)
	}
}

func (r *routes) handleFunc(e exposure, pattern string, h http.HandlerFunc) { r.handle(e, pattern, h) }

// debuggingDisabled answers a debugging endpoint when the debugging
// handlers are off, with the kubelet's answer.
var debuggingDisabled = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "Debug endpoints are disabled.", http.StatusMethodNotAllowed)
})

// register registers every endpoint. Other files' endpoints are registered
// by their own function, called from here.
func (s *Server) register(r *routes) {
	r.handleFunc(exposeReadOnly, "GET /pods", s.pods)
	r.handleFunc(exposeReadOnly, "GET /healthz", s.healthz)
	// minikubelet's own: a refused manifest's error may quote the file.
	r.handleFunc(exposeAuthenticated, "GET /manifests/errors", s.manifestErrors)
	r.handleFunc(exposeDebugging, "GET /runningpods/", s.runningPods)
	r.handleFunc(exposeDebugging, "GET /configz", s.configz)
	// Profiling, as the kubelet serves it (its enableProfilingHandler).
	r.handleFunc(exposeDebugging, "GET /debug/pprof/", pprof.Index)
	r.handleFunc(exposeDebugging, "GET /debug/pprof/cmdline", pprof.Cmdline)
	r.handleFunc(exposeDebugging, "GET /debug/pprof/profile", pprof.Profile)
	r.handleFunc(exposeDebugging, "GET /debug/pprof/symbol", pprof.Symbol)
	r.handleFunc(exposeDebugging, "POST /debug/pprof/symbol", pprof.Symbol)
	r.handleFunc(exposeDebugging, "GET /debug/pprof/trace", pprof.Trace)
	s.observabilityRoutes(r)
	s.streamingRoutes(r)
}

// Serve serves until ctx is done, then shuts the servers down.
func (s *Server) Serve(ctx context.Context) error {
	r := newRoutes(s.cfg.EnableDebuggingHandlers)
	s.register(r)
	healthz := http.NewServeMux()
	healthz.HandleFunc("GET /healthz", s.healthz)

	type listener struct {
		ln      net.Listener
		handler http.Handler
		name    string
	}
	var all []listener
	if s.portLn != nil {
		all = append(all, listener{s.portLn, s.auth.filter(r.port), "kubelet port (HTTPS)"})
	}
	if s.readOnlyLn != nil {
		all = append(all, listener{s.readOnlyLn, r.readOnly, "read-only port"})
	}
	if s.healthzLn != nil {
		all = append(all, listener{s.healthzLn, healthz, "healthz port"})
	}
	if s.socketLn != nil {
		all = append(all, listener{s.socketLn, localsock.RootOnly(r.socket), "local socket"})
	}
	logger := klog.FromContext(ctx)
	errs := make(chan error, len(all))
	servers := make([]*http.Server, 0, len(all))
	for _, l := range all {
		srv := &http.Server{
			Handler:           l.handler,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       90 * time.Second,
			MaxHeaderBytes:    1 << 20,
			ConnContext:       localsock.ConnContext,
			BaseContext:       func(net.Listener) context.Context { return ctx },
			// TLS handshake failures and the like, at verbosity 3.
			ErrorLog: log.New(logWriter{logger.V(3).WithValues("endpoint", l.name)}, "", 0),
		}
		servers = append(servers, srv)
		logger.Info("Serving", "endpoint", l.name, "address", l.ln.Addr().String())
		go func() { errs <- srv.Serve(l.ln) }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	shutdownCtx, cancel := cleanup.Context(ctx, 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		if srv.Shutdown(shutdownCtx) != nil {
			// Requests that outlive the grace (log follows, streams)
			// end here.
			_ = srv.Close()
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// logWriter writes an http.Server's error log lines to a klog logger.
type logWriter struct{ logger klog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.logger.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (s *Server) pods(w http.ResponseWriter, _ *http.Request) {
	writePodList(w, s.cfg.Pods.PodsWithStatus())
}

func (s *Server) runningPods(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Running == nil {
		writePodList(w, nil)
		return
	}
	writePodList(w, s.cfg.Running.RunningPods())
}

// writePodList writes pods as a v1 PodList.
func writePodList(w http.ResponseWriter, pods []*v1.Pod) {
	list := v1.PodList{}
	list.Kind, list.APIVersion = "PodList", "v1"
	for _, p := range pods {
		list.Items = append(list.Items, *p)
	}
	if list.Items == nil {
		list.Items = []v1.Pod{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&list)
}

// manifestError is one refused manifest on /manifests/errors.
type manifestError struct {
	Source string `json:"source"`
	Origin string `json:"origin"`
	Error  string `json:"error"`
}

func (s *Server) manifestErrors(w http.ResponseWriter, _ *http.Request) {
	out := struct {
		Errors []manifestError `json:"errors"`
	}{Errors: []manifestError{}}
	if s.cfg.ManifestErrors != nil {
		for _, e := range s.cfg.ManifestErrors.Errors() {
			out.Errors = append(out.Errors, manifestError{Source: e.Source, Origin: e.Origin, Error: e.Err.Error()})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&out)
}

// configz serves the configuration in effect, as the kubelet's /configz.
func (s *Server) configz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"kubeletconfig": s.cfg.Configz})
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	var failed []error
	for _, c := range s.cfg.Checks {
		if err := c.Check(); err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", c.Name, err))
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if len(failed) > 0 {
		w.WriteHeader(http.StatusInternalServerError)
		for _, err := range failed {
			fmt.Fprintf(w, "[-] %v\n", err)
		}
		return
	}
	_, _ = w.Write([]byte("ok"))
}
