package server

import "net/http"

// Stats serves the stats endpoints (agent/stats.Provider).
type Stats interface {
	// SummaryHandler serves /stats/summary.
	SummaryHandler() http.Handler
	// CadvisorHandler serves /metrics/cadvisor.
	CadvisorHandler() http.Handler
	// ResourceHandler serves /metrics/resource.
	ResourceHandler() http.Handler
}

// observabilityRoutes registers the logs, metrics and stats endpoints:
// /metrics (Config.Metrics), /metrics/probes (Config.ProbeMetrics),
// /metrics/cadvisor, /metrics/resource and /stats/summary (Config.Stats;
// 503 until the runtime has answered), which the kubelet serves on its
// read-only port too, and /containerLogs/{namespace}/{pod}/{container}, a
// debugging handler (authenticated: DESIGN.md rule 10).
func (s *Server) observabilityRoutes(r *routes) {
	r.handleFunc(exposeDebugging, "GET /containerLogs/{namespace}/{pod}/{container}", s.containerLog)
	if s.cfg.Metrics != nil {
		r.handle(exposeReadOnly, "GET /metrics", s.cfg.Metrics)
	}
	if s.cfg.ProbeMetrics != nil {
		r.handle(exposeReadOnly, "GET /metrics/probes", s.cfg.ProbeMetrics)
	}
	if s.cfg.Stats != nil {
		r.handle(exposeReadOnly, "GET /stats/summary", s.stats(Stats.SummaryHandler))
		r.handle(exposeReadOnly, "GET /metrics/cadvisor", s.stats(Stats.CadvisorHandler))
		r.handle(exposeReadOnly, "GET /metrics/resource", s.stats(Stats.ResourceHandler))
	}
}

// stats serves a stats endpoint with the handler that pick chooses of
// Config.Stats, and 503 until there is one.
func (s *Server) stats(pick func(Stats) http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p := s.cfg.Stats(); p != nil {
			pick(p).ServeHTTP(w, r)
			return
		}
		http.Error(w, "stats are not available until the container runtime has answered", http.StatusServiceUnavailable)
	}
}
