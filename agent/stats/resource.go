package stats

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The kubelet's resource metrics (/metrics/resource), which
// metrics-server scrapes for `kubectl top` and the autoscalers: names,
// help texts and labels as the kubelet serves them.
var (
	nodeCPUDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemoryDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"Current working set of the node in bytes", nil, nil)
	containerStartDesc = prometheus.NewDesc("container_start_time_seconds",
		"Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	containerCPUDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	containerMemoryDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	podCPUDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	podMemoryDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	scrapeErrorDesc = prometheus.NewDesc("scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	resourceScrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// ResourceHandler serves GET /metrics/resource: the CPU and memory
// figures of the node, its pods and their containers from the Summary
// API's snapshot (Summary with only CPU and memory), each sample carrying
// the time it was read, as the kubelet serves them. No swap figures: the
// cgroup reader has none.
func (p *Provider) ResourceHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap := p.snapshot(r.Context())
		reg := prometheus.NewRegistry()
		reg.MustRegister(resourceCollector{summary: p.summaryOf(snap, true), errors: snap.errors})
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
	})
}

// resourceCollector turns one summary into resource metrics; unchecked,
// as its series follow the pods.
type resourceCollector struct {
	summary *statsapi.Summary
	errors  int
}

func (resourceCollector) Describe(chan<- *prometheus.Desc) {}

func (c resourceCollector) Collect(ch chan<- prometheus.Metric) {
	sample := func(desc *prometheus.Desc, typ prometheus.ValueType, at time.Time, v float64, labels ...string) {
		ch <- prometheus.NewMetricWithTimestamp(at, prometheus.MustNewConstMetric(desc, typ, v, labels...))
	}
	cpu := func(desc *prometheus.Desc, s *statsapi.CPUStats, labels ...string) {
		if s != nil && s.UsageCoreNanoSeconds != nil {
			sample(desc, prometheus.CounterValue, s.Time.Time, float64(*s.UsageCoreNanoSeconds)/nanos, labels...)
		}
	}
	memory := func(desc *prometheus.Desc, s *statsapi.MemoryStats, labels ...string) {
		if s != nil && s.WorkingSetBytes != nil {
			sample(desc, prometheus.GaugeValue, s.Time.Time, float64(*s.WorkingSetBytes), labels...)
		}
	}
	n := c.summary.Node
	cpu(nodeCPUDesc, n.CPU)
	memory(nodeMemoryDesc, n.Memory)
	for i := range c.summary.Pods {
		pod := &c.summary.Pods[i]
		name, ns := pod.PodRef.Name, pod.PodRef.Namespace
		for j := range pod.Containers {
			ctr := &pod.Containers[j]
			if ctr.StartTime.Unix() > 0 {
				ch <- prometheus.MustNewConstMetric(containerStartDesc, prometheus.GaugeValue, unix(ctr.StartTime.Time), ctr.Name, name, ns)
			}
			cpu(containerCPUDesc, ctr.CPU, ctr.Name, name, ns)
			memory(containerMemoryDesc, ctr.Memory, ctr.Name, name, ns)
		}
		cpu(podCPUDesc, pod.CPU, name, ns)
		memory(podMemoryDesc, pod.Memory, name, ns)
	}
	failed := 0.0
	if c.errors > 0 {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, failed)
	ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, failed)
}
