package stats

// The reference the text writer is checked against: /metrics/cadvisor
// and /metrics/resource as they were served through client_golang
// before promtext.go, kept here unchanged but for names.

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/cgroups"
)

// refCadvisorHandler is CadvisorHandler as it was.
func (p *Provider) refCadvisorHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(&refCollector{p: p, snap: p.snapshot(r.Context(), needCadvisor), fs: p.cachedFs(r.Context())})
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
	})
}

// refResourceHandler is ResourceHandler as it was.
func (p *Provider) refResourceHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap := p.snapshot(r.Context(), needResource)
		reg := prometheus.NewRegistry()
		reg.MustRegister(refResourceCollector{summary: p.summaryOf(snap, true), errors: snap.errors})
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
	})
}

// refCollector turns one snapshot into metrics. It describes nothing up front
// (an unchecked refCollector): its series depend on the pods running.
type refCollector struct {
	p    *Provider
	snap *snapshot
	fs   *fsSnapshot
}

func (c *refCollector) Describe(chan<- *prometheus.Desc) {}

// row is one cgroup's series: base label values, figures, and the
// network of the pod when the row is a pod's.
type refRow struct {
	labels  []string // container, id, image, name, namespace, pod
	stats   *cgroups.Stats
	net     []netInterface
	start   float64 // seconds since the epoch; 0 when unknown
	isChild bool    // a container: its own figures are its hierarchy's
	// spec is the cgroup's cpu configuration; nil when it cannot be read.
	spec *cgroups.CPUSpec
	// fs is the row's filesystem (a container's writable layer, the
	// node's root filesystem) on device; nil for none.
	fs     *statsapi.FsStats
	device string
}

func (c *refCollector) rows() []refRow {
	var out []refRow
	if s := c.snap.node; s != nil {
		out = append(out, refRow{labels: []string{"", s.path, "", "", "", ""}, stats: s.stats, start: unix(c.p.bootTime),
			fs: c.fs.node, device: c.fs.nodeDevice})
	}
	if s := c.snap.pods; s != nil && s.path != c.snap.node.pathOr("") {
		out = append(out, refRow{labels: []string{"", s.path, "", "", "", ""}, stats: s.stats, start: unix(c.p.bootTime)})
	}
	for _, ps := range c.snap.podList {
		if ps.own != nil {
			out = append(out, refRow{
				labels: []string{"", ps.own.path, "", "", ps.pod.Namespace, ps.pod.Name},
				stats:  ps.own.stats, net: ps.net, start: unix(ps.pod.StartTime),
			})
		}
		for _, cs := range ps.containers {
			out = append(out, refRow{
				labels: []string{cs.c.Name, cs.s.path, cs.c.Image, cs.c.ID, ps.pod.Namespace, ps.pod.Name},
				stats:  cs.s.stats, start: unix(cs.c.StartTime), isChild: true,
				fs: c.fs.rootfs[cs.c.ID], device: c.fs.rootfsDevice[cs.c.ID],
			})
		}
	}
	for i := range out {
		if spec, err := c.p.cfg.Cgroups.CPUSpec(out[i].labels[1]); err == nil {
			out[i].spec = &spec
		}
	}
	return out
}

// metric is one cAdvisor metric: its name, help, type, extra labels, and
// the values of a row.
type refMetric struct {
	name, help string
	typ        prometheus.ValueType
	extra      []string
	values     func(c *refCollector, r *refRow) []refValue
}

type refValue struct {
	v      float64
	labels []string
}

func refOne(v float64, labels ...string) []refValue { return []refValue{{v: v, labels: labels}} }

// refCadvisorMetrics lists what is served, with cAdvisor's help texts.
func refCadvisorMetrics() []refMetric {
	cpu := func(f func(*cgroups.CPUStats) float64) func(*refCollector, *refRow) []refValue {
		return func(_ *refCollector, r *refRow) []refValue { return refOne(f(&r.stats.CPU)) }
	}
	// CFS figures exist only for cgroups with a quota, as cAdvisor's.
	cfs := func(f func(*cgroups.CPUStats) float64) func(*refCollector, *refRow) []refValue {
		return func(_ *refCollector, r *refRow) []refValue {
			if r.stats.CPU.Periods == 0 {
				return nil
			}
			return refOne(f(&r.stats.CPU))
		}
	}
	mem := func(f func(*cgroups.MemoryStats) float64) func(*refCollector, *refRow) []refValue {
		return func(_ *refCollector, r *refRow) []refValue { return refOne(f(&r.stats.Memory)) }
	}
	io := func(f func(*cgroups.IOStats) float64) func(*refCollector, *refRow) []refValue {
		return func(c *refCollector, r *refRow) []refValue {
			out := make([]refValue, 0, len(r.stats.IO))
			for i := range r.stats.IO {
				d := &r.stats.IO[i]
				out = append(out, refValue{v: f(d), labels: []string{c.p.deviceName(d.Major, d.Minor)}})
			}
			return out
		}
	}
	network := func(f func(*netInterface) float64) func(*refCollector, *refRow) []refValue {
		return func(_ *refCollector, r *refRow) []refValue {
			out := make([]refValue, 0, len(r.net))
			for i := range r.net {
				out = append(out, refValue{v: f(&r.net[i]), labels: []string{r.net[i].Name}})
			}
			return out
		}
	}
	// The spec figures cAdvisor has for every cgroup (shares) or for
	// those that set them (period, quota).
	spec := func(f func(*cgroups.CPUSpec) uint64, always bool) func(*refCollector, *refRow) []refValue {
		return func(_ *refCollector, r *refRow) []refValue {
			if r.spec == nil || (!always && f(r.spec) == 0) {
				return nil
			}
			return refOne(float64(f(r.spec)))
		}
	}
	fsFigure := func(f func(*statsapi.FsStats) *uint64) func(*refCollector, *refRow) []refValue {
		return func(_ *refCollector, r *refRow) []refValue {
			if r.fs == nil || f(r.fs) == nil {
				return nil
			}
			return refOne(float64(*f(r.fs)), r.device)
		}
	}
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	return []refMetric{
		{"container_spec_cpu_shares", "CPU share of the container.", gauge, nil,
			spec(func(s *cgroups.CPUSpec) uint64 { return s.Shares }, true)},
		{"container_spec_cpu_period", "CPU period of the container.", gauge, nil,
			spec(func(s *cgroups.CPUSpec) uint64 { return s.PeriodMicros }, false)},
		{"container_spec_cpu_quota", "CPU quota of the container.", gauge, nil,
			spec(func(s *cgroups.CPUSpec) uint64 { return s.QuotaMicros }, false)},
		{"container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", gauge, []string{"device"},
			fsFigure(func(s *statsapi.FsStats) *uint64 { return s.UsedBytes })},
		{"container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", gauge, []string{"device"},
			fsFigure(func(s *statsapi.FsStats) *uint64 { return s.CapacityBytes })},
		{"container_fs_inodes_free", "Number of available Inodes", gauge, []string{"device"},
			fsFigure(func(s *statsapi.FsStats) *uint64 { return s.InodesFree })},
		{"container_fs_inodes_total", "Number of Inodes", gauge, []string{"device"},
			fsFigure(func(s *statsapi.FsStats) *uint64 { return s.Inodes })},
		{"container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", counter, []string{"cpu"},
			func(_ *refCollector, r *refRow) []refValue {
				return refOne(float64(r.stats.CPU.UsageNanos)/nanos, "total")
			}},
		{"container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", counter, nil,
			cpu(func(s *cgroups.CPUStats) float64 { return float64(s.UserNanos) / nanos })},
		{"container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", counter, nil,
			cpu(func(s *cgroups.CPUStats) float64 { return float64(s.SystemNanos) / nanos })},
		{"container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", counter, nil,
			cfs(func(s *cgroups.CPUStats) float64 { return float64(s.Periods) })},
		{"container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", counter, nil,
			cfs(func(s *cgroups.CPUStats) float64 { return float64(s.ThrottledPeriods) })},
		{"container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.", counter, nil,
			cfs(func(s *cgroups.CPUStats) float64 { return float64(s.ThrottledNanos) / nanos })},
		{"container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", gauge, nil,
			mem(func(s *cgroups.MemoryStats) float64 { return float64(s.Usage) })},
		{"container_memory_working_set_bytes", "Current working set in bytes.", gauge, nil,
			mem(func(s *cgroups.MemoryStats) float64 { return float64(s.WorkingSet) })},
		{"container_memory_rss", "Size of RSS in bytes.", gauge, nil,
			mem(func(s *cgroups.MemoryStats) float64 { return float64(s.RSS) })},
		{"container_memory_cache", "Number of bytes of page cache memory.", gauge, nil,
			mem(func(s *cgroups.MemoryStats) float64 { return float64(s.Cache) })},
		{"container_memory_failures_total", "Cumulative count of memory allocation failures.", counter, []string{"failure_type", "scope"},
			func(_ *refCollector, r *refRow) []refValue {
				m := &r.stats.Memory
				out := []refValue{
					{v: float64(m.PageFaults), labels: []string{"pgfault", "hierarchy"}},
					{v: float64(m.MajorPageFaults), labels: []string{"pgmajfault", "hierarchy"}},
				}
				if r.isChild { // a container's own figures are its hierarchy's
					out = append(out,
						refValue{v: float64(m.PageFaults), labels: []string{"pgfault", "container"}},
						refValue{v: float64(m.MajorPageFaults), labels: []string{"pgmajfault", "container"}})
				}
				return out
			}},
		{"container_spec_memory_limit_bytes", "Memory limit for the container.", gauge, nil,
			mem(func(s *cgroups.MemoryStats) float64 { return float64(s.Limit) })},
		{"container_oom_events_total", "Count of out of memory events observed for the container", counter, nil,
			mem(func(s *cgroups.MemoryStats) float64 { return float64(s.OOMKills) })},
		{"container_fs_reads_bytes_total", "Cumulative count of bytes read", counter, []string{"device"},
			io(func(d *cgroups.IOStats) float64 { return float64(d.ReadBytes) })},
		{"container_fs_writes_bytes_total", "Cumulative count of bytes written", counter, []string{"device"},
			io(func(d *cgroups.IOStats) float64 { return float64(d.WriteBytes) })},
		{"container_fs_reads_total", "Cumulative count of reads completed", counter, []string{"device"},
			io(func(d *cgroups.IOStats) float64 { return float64(d.ReadOps) })},
		{"container_fs_writes_total", "Cumulative count of writes completed", counter, []string{"device"},
			io(func(d *cgroups.IOStats) float64 { return float64(d.WriteOps) })},
		{"container_network_receive_bytes_total", "Cumulative count of bytes received", counter, []string{"interface"},
			network(func(i *netInterface) float64 { return float64(i.RxBytes) })},
		{"container_network_receive_packets_total", "Cumulative count of packets received", counter, []string{"interface"},
			network(func(i *netInterface) float64 { return float64(i.RxPackets) })},
		{"container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", counter, []string{"interface"},
			network(func(i *netInterface) float64 { return float64(i.RxDropped) })},
		{"container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", counter, []string{"interface"},
			network(func(i *netInterface) float64 { return float64(i.RxErrors) })},
		{"container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", counter, []string{"interface"},
			network(func(i *netInterface) float64 { return float64(i.TxBytes) })},
		{"container_network_transmit_packets_total", "Cumulative count of packets transmitted", counter, []string{"interface"},
			network(func(i *netInterface) float64 { return float64(i.TxPackets) })},
		{"container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", counter, []string{"interface"},
			network(func(i *netInterface) float64 { return float64(i.TxDropped) })},
		{"container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", counter, []string{"interface"},
			network(func(i *netInterface) float64 { return float64(i.TxErrors) })},
		// pids.current counts tasks, which are threads.
		{"container_threads", "Number of threads running inside the container", gauge, nil,
			func(_ *refCollector, r *refRow) []refValue { return refOne(float64(r.stats.Pids.Current)) }},
		{"container_threads_max", "Maximum number of threads allowed inside the container, infinity if value is zero", gauge, nil,
			func(_ *refCollector, r *refRow) []refValue { return refOne(float64(r.stats.Pids.Limit)) }},
		{"container_start_time_seconds", "Start time of the container since unix epoch in seconds.", gauge, nil,
			func(_ *refCollector, r *refRow) []refValue {
				if r.start == 0 {
					return nil
				}
				return refOne(r.start)
			}},
	}
}

func (c *refCollector) Collect(ch chan<- prometheus.Metric) {
	base := []string{"container", "id", "image", "name", "namespace", "pod"}
	rows := c.rows()
	for _, m := range refCadvisorMetrics() {
		desc := prometheus.NewDesc(m.name, m.help, append(append([]string{}, base...), m.extra...), nil)
		for i := range rows {
			for _, v := range m.values(c, &rows[i]) {
				labels := append(append([]string{}, rows[i].labels...), v.labels...)
				ch <- prometheus.MustNewConstMetric(desc, m.typ, v.v, labels...)
			}
		}
	}
	if c.p.cfg.MachineCores > 0 {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("machine_cpu_cores", "Number of logical CPU cores.", nil, nil),
			prometheus.GaugeValue, float64(c.p.cfg.MachineCores))
	}
	if c.p.cfg.MachineMemory > 0 {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("machine_memory_bytes", "Amount of memory installed on the machine.", nil, nil),
			prometheus.GaugeValue, float64(c.p.cfg.MachineMemory))
	}
	scrapeErr := 0.0
	if c.snap.errors > 0 {
		scrapeErr = 1
	}
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("container_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil),
		prometheus.GaugeValue, scrapeErr)
}

var (
	refNodeCPUDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	refNodeMemoryDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"Current working set of the node in bytes", nil, nil)
	refContainerStartDesc = prometheus.NewDesc("container_start_time_seconds",
		"Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	refContainerCPUDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	refContainerMemoryDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	refPodCPUDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	refPodMemoryDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	refScrapeErrorDesc = prometheus.NewDesc("scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	refResourceScrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// refResourceCollector turns one summary into resource metrics; unchecked,
// as its series follow the pods.
type refResourceCollector struct {
	summary *statsapi.Summary
	errors  int
}

func (refResourceCollector) Describe(chan<- *prometheus.Desc) {}

func (c refResourceCollector) Collect(ch chan<- prometheus.Metric) {
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
	cpu(refNodeCPUDesc, n.CPU)
	memory(refNodeMemoryDesc, n.Memory)
	for i := range c.summary.Pods {
		pod := &c.summary.Pods[i]
		name, ns := pod.PodRef.Name, pod.PodRef.Namespace
		for j := range pod.Containers {
			ctr := &pod.Containers[j]
			if ctr.StartTime.Unix() > 0 {
				ch <- prometheus.MustNewConstMetric(refContainerStartDesc, prometheus.GaugeValue, unix(ctr.StartTime.Time), ctr.Name, name, ns)
			}
			cpu(refContainerCPUDesc, ctr.CPU, ctr.Name, name, ns)
			memory(refContainerMemoryDesc, ctr.Memory, ctr.Name, name, ns)
		}
		cpu(refPodCPUDesc, pod.CPU, name, ns)
		memory(refPodMemoryDesc, pod.Memory, name, ns)
	}
	failed := 0.0
	if c.errors > 0 {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(refScrapeErrorDesc, prometheus.GaugeValue, failed)
	ch <- prometheus.MustNewConstMetric(refResourceScrapeErrorDesc, prometheus.GaugeValue, failed)
}
