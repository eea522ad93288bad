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

// observabilityRoutes registers the logs, metrics and stats endpoints on
// mux: /metrics (Config.Metrics), /metrics/probes (Config.ProbeMetrics),
// /metrics/cadvisor, /metrics/resource and /stats/summary (Config.Stats;
// 503 until the runtime has answered), and with withLogs
// /containerLogs/{namespace}/{pod}/{container}. The kubelet serves all
// but the logs on its read-only port too; the logs need authentication
// (DESIGN.md rule 10).
func (s *Server) observabilityRoutes(mux *http.ServeMux, withLogs bool) {
	if withLogs {
		mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.containerLog)
	}
	if s.cfg.Metrics != nil {
		mux.Handle("GET /metrics", s.cfg.Metrics)
	}
	if s.cfg.ProbeMetrics != nil {
		mux.Handle("GET /metrics/probes", s.cfg.ProbeMetrics)
	}
	if s.cfg.Stats != nil {
		mux.Handle("GET /stats/summary", s.stats(Stats.SummaryHandler))
		mux.Handle("GET /metrics/cadvisor", s.stats(Stats.CadvisorHandler))
		mux.Handle("GET /metrics/resource", s.stats(Stats.ResourceHandler))
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
