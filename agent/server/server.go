package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/internal/cleanup"
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
	// Address and ReadOnlyPort of the read-only endpoints; port 0
	// disables them.
	Address      string
	ReadOnlyPort int
	// HealthzAddress and HealthzPort of /healthz; port 0 disables it.
	HealthzAddress string
	HealthzPort    int
	Pods           podLister
	Checks         []Check
	// ManifestErrors backs /manifests/errors.
	ManifestErrors manifestErrors
	// Metrics serves /metrics.
	Metrics http.Handler
	// Logs backs /containerLogs/{namespace}/{pod}/{container}.
	Logs containerLogs
	// Auth protects the read-only endpoints when Address is not loopback.
	Auth Auth
	// Running backs /runningpods/.
	Running runningPods
	// Stats returns what serves /stats/summary, /metrics/cadvisor and
	// /metrics/resource, or
	// nil while there is nothing yet (the container runtime has not
	// answered): they answer 503 then. Nil Stats leaves them out (404).
	Stats func() Stats
	// Clock times log follows and sinceSeconds; the real clock when nil.
	Clock clock.Clock

	// m18 (observability.go, logs.go).
	// ProbeMetrics serves /metrics/probes.
	ProbeMetrics http.Handler
	// SplitLogStreams honours /containerLogs' stream parameter, as the
	// kubelet's PodLogsQuerySplitStreams feature gate.
	SplitLogStreams bool
}

// Server serves the endpoints.
type Server struct {
	cfg       Config
	listeners []net.Listener
	// auth checks requests to the read-only endpoints; nil on loopback.
	auth *authenticator
}

// Listen binds every enabled port, so that a port in use is reported at
// start-up. Serve then serves them.
func Listen(cfg Config) (*Server, error) {
	if cfg.ReadOnlyPort != 0 {
		if err := cfg.Auth.Validate(cfg.Address); err != nil {
			return nil, err
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	s := &Server{cfg: cfg}
	var tlsCfg *tls.Config
	if cfg.ReadOnlyPort != 0 && !IsLoopback(cfg.Address) {
		var err error
		if tlsCfg, s.auth, err = cfg.Auth.tlsConfig(); err != nil {
			return nil, err
		}
	}
	for i, l := range []struct {
		addr string
		port int
	}{{cfg.Address, cfg.ReadOnlyPort}, {cfg.HealthzAddress, cfg.HealthzPort}} {
		if l.port == 0 {
			s.listeners = append(s.listeners, nil)
			continue
		}
		addr := net.JoinHostPort(l.addr, strconv.Itoa(l.port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
		if i == 0 && tlsCfg != nil {
			ln = tls.NewListener(ln, tlsCfg)
		}
		s.listeners = append(s.listeners, ln)
	}
	return s, nil
}

func (s *Server) close() {
	for _, ln := range s.listeners {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// Serve serves until ctx is done, then shuts the servers down.
func (s *Server) Serve(ctx context.Context) error {
	readOnly := http.NewServeMux()
	readOnly.HandleFunc("GET /pods", s.pods)
	readOnly.HandleFunc("GET /runningpods/", s.runningPods)
	readOnly.HandleFunc("GET /healthz", s.healthz)
	readOnly.HandleFunc("GET /manifests/errors", s.manifestErrors)
	// Profiling, as the kubelet serves it (its enableProfilingHandler).
	readOnly.HandleFunc("GET /debug/pprof/", pprof.Index)
	readOnly.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	readOnly.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	readOnly.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	readOnly.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	// m18: the kubelet port gets withLogs=true, the read-only port false,
	// once there is a kubelet port (s18).
	s.observabilityRoutes(readOnly, true)
	healthz := http.NewServeMux()
	healthz.HandleFunc("GET /healthz", s.healthz)

	errs := make(chan error, 2)
	var servers []*http.Server
	var readOnlyHandler http.Handler = readOnly
	if s.auth != nil {
		readOnlyHandler = s.auth.wrap(readOnly)
	}
	for i, h := range []http.Handler{readOnlyHandler, healthz} {
		ln := s.listeners[i]
		if ln == nil {
			continue
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		klog.FromContext(ctx).Info("Serving HTTP", "address", ln.Addr().String())
		go func() { errs <- srv.Serve(ln) }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	shutdownCtx, cancel := cleanup.Context(ctx, 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(shutdownCtx)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
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
