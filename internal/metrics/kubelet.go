package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// The kubelet's buckets: the Prometheus defaults for syncs and relists,
// its own for pod starts and runtime calls.
var (
	podStartBuckets  = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	operationBuckets = prometheus.ExponentialBuckets(.005, 2.5, 14)
)

// kubeletMetrics are the metrics served under the kubelet's names, so that
// dashboards and alerting rules written for the kubelet (kube-prometheus'
// KubeletPodStartUpLatencyHigh, KubeletPlegDurationHigh,
// KubeletTooManyPods, ...) work on a minikubelet node.
type kubeletMetrics struct {
	// PodWorkerDuration observes each pod sync, by operation: create (a
	// pod's first sync), update or sync (the later ones), kill (stopping
	// and removing it).
	PodWorkerDuration *prometheus.HistogramVec
	// PodStartDuration observes, once per pod, the time from the agent
	// first seeing the pod to the pod running.
	PodStartDuration prometheus.Histogram
	// PLEGRelistInterval observes the time between the starts of two
	// relists.
	PLEGRelistInterval prometheus.Histogram
	// RuntimeOperations, RuntimeOperationsErrors and
	// RuntimeOperationsDuration count and time CRI calls by
	// operation_type (InstrumentRuntime).
	RuntimeOperations         *prometheus.CounterVec
	RuntimeOperationsErrors   *prometheus.CounterVec
	RuntimeOperationsDuration *prometheus.HistogramVec

	// relistMu guards lastRelist, the start of the last relist.
	relistMu   sync.Mutex
	lastRelist time.Time
}

func newKubeletMetrics() *kubeletMetrics {
	return &kubeletMetrics{
		PodWorkerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kubelet_pod_worker_duration_seconds",
			Help:    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
			Buckets: prometheus.DefBuckets,
		}, []string{"operation_type"}),
		PodStartDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pod_start_duration_seconds",
			Help:    "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
			Buckets: podStartBuckets,
		}),
		PLEGRelistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pleg_relist_interval_seconds",
			Help:    "Interval in seconds between relisting in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		RuntimeOperations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_runtime_operations_total",
			Help: "Cumulative number of runtime operations by operation type.",
		}, []string{"operation_type"}),
		RuntimeOperationsErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_runtime_operations_errors_total",
			Help: "Cumulative number of runtime operation errors by operation type.",
		}, []string{"operation_type"}),
		RuntimeOperationsDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kubelet_runtime_operations_duration_seconds",
			Help:    "Duration in seconds of runtime operations. Broken down by operation type.",
			Buckets: operationBuckets,
		}, []string{"operation_type"}),
	}
}

func (k *kubeletMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{k.PodWorkerDuration, k.PodStartDuration, k.PLEGRelistInterval, k.RuntimeOperations, k.RuntimeOperationsErrors, k.RuntimeOperationsDuration}
}

// ObserveRelist records a successful relist that started at start and
// took d: kubelet_pleg_relist_duration_seconds, and
// kubelet_pleg_relist_interval_seconds from the start of the one before.
func (m *Metrics) ObserveRelist(start time.Time, d time.Duration) {
	m.PLEGRelistDuration.Observe(d.Seconds())
	m.relistMu.Lock()
	last := m.lastRelist
	m.lastRelist = start
	m.relistMu.Unlock()
	if !last.IsZero() && start.After(last) {
		m.PLEGRelistInterval.Observe(start.Sub(last).Seconds())
	}
}

// ObserveRuntimeOperation records one CRI call of the kubelet's
// operation_type name (e.g. "list_podsandbox") that took d and returned
// err.
func (m *Metrics) ObserveRuntimeOperation(op string, d time.Duration, err error) {
	m.RuntimeOperations.WithLabelValues(op).Inc()
	m.RuntimeOperationsDuration.WithLabelValues(op).Observe(d.Seconds())
	if err != nil {
		m.RuntimeOperationsErrors.WithLabelValues(op).Inc()
	}
}

// RegisterNodeName adds kubelet_node_name{node="name"} 1, which the
// kubelet's alerting rules join on to name the node.
func (m *Metrics) RegisterNodeName(name string) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "kubelet_node_name",
		Help:        "The node's name. The count is always 1.",
		ConstLabels: prometheus.Labels{"node": name},
	}, func() float64 { return 1 }))
}

// RuntimePods is the runtime's view of the node's pods, as the PLEG
// cache holds it.
type RuntimePods interface {
	ForEach(f func(uid types.UID, status *kubecontainer.PodStatus))
}

// RegisterRunning adds kubelet_running_pods (pods with a ready sandbox)
// and kubelet_running_containers by container_state (created, running,
// exited, unknown), counted from pods at scrape time.
func (m *Metrics) RegisterRunning(pods RuntimePods) {
	m.registry.MustRegister(runningCollector{pods: pods})
}

var (
	runningPodsDesc = prometheus.NewDesc("kubelet_running_pods",
		"Number of pods that have a running pod sandbox", nil, nil)
	runningContainersDesc = prometheus.NewDesc("kubelet_running_containers",
		"Number of containers currently running", []string{"container_state"}, nil)
)

// runningCollector counts the runtime's pods and containers at scrape
// time.
type runningCollector struct {
	pods RuntimePods
}

func (c runningCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- runningPodsDesc
	ch <- runningContainersDesc
}

func (c runningCollector) Collect(ch chan<- prometheus.Metric) {
	pods := 0
	states := map[string]int{"created": 0, "running": 0, "exited": 0, "unknown": 0}
	c.pods.ForEach(func(_ types.UID, st *kubecontainer.PodStatus) {
		for _, sb := range st.Sandboxes {
			if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				pods++
				break
			}
		}
		for _, cs := range st.Containers {
			states[containerState(cs.State)]++
		}
	})
	ch <- prometheus.MustNewConstMetric(runningPodsDesc, prometheus.GaugeValue, float64(pods))
	for state, n := range states {
		ch <- prometheus.MustNewConstMetric(runningContainersDesc, prometheus.GaugeValue, float64(n), state)
	}
}

// containerState is the kubelet's container_state label of a CRI state.
func containerState(s runtimeapi.ContainerState) string {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return "created"
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return "running"
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return "exited"
	default:
		return "unknown"
	}
}
