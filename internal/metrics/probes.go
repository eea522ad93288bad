package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/minikubelet/minikubelet/internal/probe"
)

// Probes are the metrics of /metrics/probes, as the kubelet serves them:
// prober_probe_total and prober_probe_duration_seconds for each probe of
// each container, in a registry of their own. A probe's series go when
// its worker stops (Forget). Safe for concurrent use; use NewProbes.
type Probes struct {
	registry *prometheus.Registry
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// ProbeTarget names the probed container.
type ProbeTarget struct {
	Namespace, Pod, PodUID, Container string
	// Type is Liveness, Readiness or Startup.
	Type string
}

// NewProbes returns the probe metrics in a new registry.
func NewProbes() *Probes {
	p := &Probes{
		registry: prometheus.NewRegistry(),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "prober_probe_total",
			Help: "Cumulative number of a liveness, readiness or startup probe for a container by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "prober_probe_duration_seconds",
			Help:    "Duration in seconds for a probe response.",
			Buckets: prometheus.DefBuckets,
		}, []string{"probe_type", "container", "pod", "namespace"}),
	}
	p.registry.MustRegister(p.total, p.duration)
	return p
}

// Handler serves /metrics/probes.
func (p *Probes) Handler() http.Handler {
	return promhttp.HandlerFor(p.registry, promhttp.HandlerOpts{})
}

// Observe records one run of the probe with its result (the kubelet's
// result labels: successful, failed, unknown when the check could not be
// made) and how long it took.
func (p *Probes) Observe(t ProbeTarget, r probe.Result, d time.Duration) {
	p.total.WithLabelValues(t.Type, probeResult(r), t.Container, t.Pod, t.Namespace, t.PodUID).Inc()
	p.duration.WithLabelValues(t.Type, t.Container, t.Pod, t.Namespace).Observe(d.Seconds())
}

// Forget drops the probe's series.
func (p *Probes) Forget(t ProbeTarget) {
	for _, result := range []string{"successful", "failed", "unknown"} {
		p.total.DeleteLabelValues(t.Type, result, t.Container, t.Pod, t.Namespace, t.PodUID)
	}
	p.duration.DeleteLabelValues(t.Type, t.Container, t.Pod, t.Namespace)
}

func probeResult(r probe.Result) string {
	switch r {
	case probe.Success:
		return "successful"
	case probe.Failure:
		return "failed"
	default:
		return "unknown"
	}
}
