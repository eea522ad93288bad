package server

import "net/http"

// Stats serves the stats endpoints (agent/stats.Provider).
type Stats interface {
	// SummaryHandler serves /stats/summary.
	SummaryHandler() http.Handler
	// CadvisorHandler serves /metrics/cadvisor.
	CadvisorHandler() http.Handler
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
