package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the agent's metrics. The zero value is not usable; use New.
// All fields are safe for concurrent use.
type Metrics struct {
	registry *prometheus.Registry

	// ManifestErrors counts manifests refused, by source, once per
	// distinct refusal (a bad file counts again when it changes).
	ManifestErrors *prometheus.CounterVec
}

// New returns Metrics registered in a new registry, with the Go runtime
// and process collectors.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		ManifestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minikubelet_manifest_errors_total",
			Help: "Pod manifests refused (decode or validation errors, conflicts), by source, counted once per distinct refusal.",
		}, []string{"source"}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.ManifestErrors,
	)
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
