package stats

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/minikubelet/minikubelet/cgroups"
)

// CadvisorHandler serves GET /metrics/cadvisor: the cAdvisor metrics that
// dashboards read, under cAdvisor's names and labels. Each series carries
// container, id (the cgroup path), image, name (the container ID),
// namespace and pod; a pod's own cgroup is the series with container=""
// (which carries the pod's network figures, as the network belongs to the
// pod), and the node's root cgroup the one with id="/". Each request
// gathers a snapshot into a registry of its own.
func (p *Provider) CadvisorHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(&collector{p: p, snap: p.snapshot(r.Context())})
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
	})
}

// collector turns one snapshot into metrics. It describes nothing up front
// (an unchecked collector): its series depend on the pods running.
type collector struct {
	p    *Provider
	snap *snapshot
}

func (c *collector) Describe(chan<- *prometheus.Desc) {}

// row is one cgroup's series: base label values, figures, and the
// network of the pod when the row is a pod's.
type row struct {
	labels  []string // container, id, image, name, namespace, pod
	stats   *cgroups.Stats
	net     []netInterface
	start   float64 // seconds since the epoch; 0 when unknown
	isChild bool    // a container: its own figures are its hierarchy's
}

func (c *collector) rows() []row {
	var out []row
	if s := c.snap.node; s != nil {
		out = append(out, row{labels: []string{"", s.path, "", "", "", ""}, stats: s.stats, start: unix(c.p.bootTime)})
	}
	if s := c.snap.pods; s != nil && s.path != c.snap.node.pathOr("") {
		out = append(out, row{labels: []string{"", s.path, "", "", "", ""}, stats: s.stats, start: unix(c.p.bootTime)})
	}
	for _, ps := range c.snap.podList {
		if ps.own != nil {
			out = append(out, row{
				labels: []string{"", ps.own.path, "", "", ps.pod.Namespace, ps.pod.Name},
				stats:  ps.own.stats, net: ps.net, start: unix(ps.pod.StartTime),
			})
		}
		for _, cs := range ps.containers {
			out = append(out, row{
				labels: []string{cs.c.Name, cs.s.path, cs.c.Image, cs.c.ID, ps.pod.Namespace, ps.pod.Name},
				stats:  cs.s.stats, start: unix(cs.c.StartTime), isChild: true,
			})
		}
	}
	return out
}

func (s *sample) pathOr(def string) string {
	if s == nil {
		return def
	}
	return s.path
}

// metric is one cAdvisor metric: its name, help, type, extra labels, and
// the values of a row.
type metric struct {
	name, help string
	typ        prometheus.ValueType
	extra      []string
	values     func(c *collector, r *row) []value
}

type value struct {
	v      float64
	labels []string
}

func one(v float64, labels ...string) []value { return []value{{v: v, labels: labels}} }

const nanos = 1e9

// cadvisorMetrics lists what is served, with cAdvisor's help texts.
func cadvisorMetrics() []metric {
	cpu := func(f func(*cgroups.CPUStats) float64) func(*collector, *row) []value {
		return func(_ *collector, r *row) []value { return one(f(&r.stats.CPU)) }
	}
	// CFS figures exist only for cgroups with a quota, as cAdvisor's.
	cfs := func(f func(*cgroups.CPUStats) float64) func(*collector, *row) []value {
		return func(_ *collector, r *row) []value {
			if r.stats.CPU.Periods == 0 {
				return nil
			}
			return one(f(&r.stats.CPU))
		}
	}
	mem := func(f func(*cgroups.MemoryStats) float64) func(*collector, *row) []value {
		return func(_ *collector, r *row) []value { return one(f(&r.stats.Memory)) }
	}
	io := func(f func(*cgroups.IOStats) float64) func(*collector, *row) []value {
		return func(c *collector, r *row) []value {
			out := make([]value, 0, len(r.stats.IO))
			for i := range r.stats.IO {
				d := &r.stats.IO[i]
				out = append(out, value{v: f(d), labels: []string{c.p.deviceName(d.Major, d.Minor)}})
			}
			return out
		}
	}
	network := func(f func(*netInterface) float64) func(*collector, *row) []value {
		return func(_ *collector, r *row) []value {
			out := make([]value, 0, len(r.net))
			for i := range r.net {
				out = append(out, value{v: f(&r.net[i]), labels: []string{r.net[i].Name}})
			}
			return out
		}
	}
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	return []metric{
		{"container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", counter, []string{"cpu"},
			func(_ *collector, r *row) []value { return one(float64(r.stats.CPU.UsageNanos)/nanos, "total") }},
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
			func(_ *collector, r *row) []value {
				m := &r.stats.Memory
				out := []value{
					{v: float64(m.PageFaults), labels: []string{"pgfault", "hierarchy"}},
					{v: float64(m.MajorPageFaults), labels: []string{"pgmajfault", "hierarchy"}},
				}
				if r.isChild { // a container's own figures are its hierarchy's
					out = append(out,
						value{v: float64(m.PageFaults), labels: []string{"pgfault", "container"}},
						value{v: float64(m.MajorPageFaults), labels: []string{"pgmajfault", "container"}})
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
			func(_ *collector, r *row) []value { return one(float64(r.stats.Pids.Current)) }},
		{"container_threads_max", "Maximum number of threads allowed inside the container, infinity if value is zero", gauge, nil,
			func(_ *collector, r *row) []value { return one(float64(r.stats.Pids.Limit)) }},
		{"container_start_time_seconds", "Start time of the container since unix epoch in seconds.", gauge, nil,
			func(_ *collector, r *row) []value {
				if r.start == 0 {
					return nil
				}
				return one(r.start)
			}},
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	base := []string{"container", "id", "image", "name", "namespace", "pod"}
	rows := c.rows()
	for _, m := range cadvisorMetrics() {
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
