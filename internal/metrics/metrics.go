package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/minikubelet/minikubelet/internal/probe"
)

// Metrics are the agent's metrics. The zero value is not usable; use New.
// All fields are safe for concurrent use.
type Metrics struct {
	registry *prometheus.Registry
	*kubeletMetrics
	// Probes are /metrics/probes' metrics, in a registry of their own.
	Probes *Probes

	// ManifestErrors counts manifests refused, by source, once per
	// distinct refusal (a bad file counts again when it changes).
	ManifestErrors *prometheus.CounterVec
	// PLEGRelistDuration observes each successful relist (ObserveRelist),
	// as the kubelet's kubelet_pleg_relist_duration_seconds.
	PLEGRelistDuration prometheus.Histogram
	// EventedPLEGConnectionErrors counts failed or broken event streams,
	// as the kubelet's kubelet_evented_pleg_connection_error_count.
	EventedPLEGConnectionErrors prometheus.Counter
	// ProbeTotal counts probe runs by probe_type (Liveness, Readiness,
	// Startup) and result (successful, failed, unknown), as the kubelet's
	// prober_probe_total.
	ProbeTotal *prometheus.CounterVec
	// ProbeDuration observes how long each probe run took, by probe_type.
	ProbeDuration *prometheus.HistogramVec
	// ImageGarbageCollected counts images removed by image garbage
	// collection, by reason ("space": the disk was over the high
	// threshold), as the kubelet's image_garbage_collected_total.
	ImageGarbageCollected *prometheus.CounterVec
	// Evictions counts the pods evicted under node pressure or for their
	// local storage limits, by eviction_signal (memory.available,
	// emptydirfs.limit, ...), as the kubelet's kubelet_evictions.
	Evictions *prometheus.CounterVec
	// AdmissionRejections counts pods the node refused at admission, by
	// the refusal's reason (OutOfpods, SysctlForbidden, ...), as the
	// kubelet's kubelet_admission_rejections_total.
	AdmissionRejections *prometheus.CounterVec
}

// PLEGState is what the PLEG metrics read at scrape time.
type PLEGState interface {
	// Mode is "evented" or "relist".
	Mode() string
	// LastSeen is when the PLEG last relisted or handled an event.
	LastSeen() time.Time
	// Dropped counts events dropped on a full channel.
	Dropped() uint64
}

// RegisterPLEG adds the metrics read from the running PLEG:
// minikubelet_pleg_mode{mode}, minikubelet_pleg_last_seen_seconds and
// minikubelet_pleg_discard_events_total. Call it once.
func (m *Metrics) RegisterPLEG(p PLEGState) {
	for _, mode := range []string{"evented", "relist"} {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "minikubelet_pleg_mode",
			Help:        "1 for the mode the PLEG runs in now (evented or relist), 0 for the other.",
			ConstLabels: prometheus.Labels{"mode": mode},
		}, func() float64 {
			if p.Mode() == mode {
				return 1
			}
			return 0
		}))
	}
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "minikubelet_pleg_last_seen_seconds",
			Help: "Unix time at which the PLEG last relisted or handled a runtime event.",
		}, func() float64 {
			if t := p.LastSeen(); !t.IsZero() {
				return float64(t.UnixNano()) / 1e9
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "minikubelet_pleg_discard_events_total",
			Help: "PLEG events dropped because the syncLoop's event channel was full.",
		}, func() float64 { return float64(p.Dropped()) }),
	)
}

// New returns Metrics registered in a new registry, with the Go runtime
// and process collectors. RegisterNodeName, RegisterRunning and
// RegisterPLEG add the metrics read at scrape time.
func New() *Metrics {
	m := &Metrics{
		registry:       prometheus.NewRegistry(),
		kubeletMetrics: newKubeletMetrics(),
		Probes:         NewProbes(),
		ManifestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minikubelet_manifest_errors_total",
			Help: "Pod manifests refused (decode or validation errors, conflicts), by source, counted once per distinct refusal.",
		}, []string{"source"}),
		PLEGRelistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pleg_relist_duration_seconds",
			Help:    "Duration in seconds for relisting pods in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		EventedPLEGConnectionErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubelet_evented_pleg_connection_error_count",
			Help: "The number of errors encountered during the establishment of streaming connection with the CRI runtime.",
		}),
		ProbeTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minikubelet_prober_probe_total",
			Help: "Probe runs, by probe type and result (successful, failed, unknown: the check could not be made).",
		}, []string{"probe_type", "result"}),
		ProbeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "minikubelet_prober_probe_duration_seconds",
			Help:    "Duration of a probe run, by probe type.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"probe_type"}),
		ImageGarbageCollected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_image_garbage_collected_total",
			Help: "Total number of images garbage collected by the kubelet, whether through disk usage (reason space: the image filesystem was over --image-gc-high-threshold) or image age.",
		}, []string{"reason"}),
		Evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_evictions",
			Help: "Cumulative number of pod evictions by eviction signal",
		}, []string{"eviction_signal"}),
		AdmissionRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_admission_rejections_total",
			Help: "Cumulative number of pod admission rejections by the node, by reason.",
		}, []string{"reason"}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.ManifestErrors,
		m.PLEGRelistDuration,
		m.EventedPLEGConnectionErrors,
		m.ProbeTotal,
		m.ProbeDuration,
		m.ImageGarbageCollected,
		m.Evictions,
		m.AdmissionRejections,
	)
	m.registry.MustRegister(m.collectors()...)
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// ObserveProbe records one probe run of type probeType (Liveness,
// Readiness, Startup) with its result.
func (m *Metrics) ObserveProbe(probeType string, r probe.Result, d time.Duration) {
	m.ProbeTotal.WithLabelValues(probeType, probeResult(r)).Inc()
	m.ProbeDuration.WithLabelValues(probeType).Observe(d.Seconds())
}
