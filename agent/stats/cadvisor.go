package stats

import (
	"net/http"
	"sort"
	"sync"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/cgroups"
)

// CadvisorHandler serves GET /metrics/cadvisor: the cAdvisor metrics that
// dashboards read, under cAdvisor's names and labels. Each series carries
// container, id (the cgroup path), image, name (the container ID),
// namespace and pod; a pod's own cgroup is the series with container=""
// (which carries the pod's network figures, as the network belongs to the
// pod), and the node's root cgroup the one with id="/". A container's
// filesystem series are its writable layer's (usage from the runtime,
// limit and inodes of the filesystem it is on); the root's are the node's
// filesystem (the root dir's). The cpu spec series (shares, quota,
// period) are read from the cgroups at most FsMaxAge ago (see snapshot).
// The body is written as it is made, in the text format (promtext.go).
func (p *Provider) CadvisorHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		c := &collector{p: p, snap: p.snapshot(ctx, needCadvisor), fs: p.cachedFs(ctx)}
		rows := c.rows(p.rowBufs.get(func() []row { return nil }))
		defer func() {
			clear(rows) // holds nothing of the snapshot while kept
			p.rowBufs.put(rows[:0])
		}()
		out, end := metricsResponse(w, r, p.gzip)
		defer end()
		t := newTextWriter(out, p.textBufs)
		defer t.release(p.textBufs)
		c.write(t, rows)
		_ = t.flush() // a client gone
	})
}

// collector turns one snapshot into metrics.
type collector struct {
	p    *Provider
	snap *snapshot
	fs   *fsSnapshot
}

// baseLabels are the labels of every per-cgroup series, sorted.
var baseLabels = [...]string{"container", "id", "image", "name", "namespace", "pod"}

// row is one cgroup's series: base label pairs, figures, and the
// network of the pod when the row is a pod's.
type row struct {
	// pairs are the base labels' pairs, in baseLabels' order.
	pairs   *[len(baseLabels)]string
	path    string
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
	// devicePair, ioPairs and netPairs are the label pairs of device, of
	// each entry of stats.IO (device) and of net (interface).
	devicePair        string
	ioPairs, netPairs []string
}

// labelCache keeps the label pairs of the rows and interfaces of the
// last /metrics/cadvisor, which do not change between scrapes (a
// cgroup's path names one container or pod), so that a scrape does not
// make again the some 2,000 strings of 100 pods. Safe for concurrent use.
type labelCache struct {
	mu sync.Mutex
	// rows holds each cgroup's row pairs, with the values they were made
	// of, and ifs each interface's pair; gen counts the scrapes, and a
	// row not used by the last one is dropped. Guarded by mu.
	rows map[string]*rowLabels
	ifs  map[string]string
	gen  uint64
}

type rowLabels struct {
	values [len(baseLabels)]string
	pairs  [len(baseLabels)]string
	gen    uint64
}

func newLabelCache() *labelCache {
	return &labelCache{rows: map[string]*rowLabels{}, ifs: map[string]string{}}
}

// rowPairs returns the pairs of baseLabels with values, made again if the
// row at path had other values; they are not changed after. l.mu must be
// held.
func (l *labelCache) rowPairs(path string, values [len(baseLabels)]string) *[len(baseLabels)]string {
	e := l.rows[path]
	if e == nil || e.values != values {
		e = &rowLabels{values: values}
		for i, v := range values {
			e.pairs[i] = pair(baseLabels[i], v)
		}
		l.rows[path] = e
	}
	e.gen = l.gen
	return &e.pairs
}

// interfacePair is the interface label pair of name. l.mu must be held.
func (l *labelCache) interfacePair(name string) string {
	p, ok := l.ifs[name]
	if !ok {
		p = pair("interface", name)
		l.ifs[name] = p
	}
	return p
}

// rows returns the rows of the snapshot, appended to buf.
func (c *collector) rows(buf []row) []row {
	l := c.p.labels
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	out := buf[:0]
	add := func(path string, values ...string) *row {
		var v [len(baseLabels)]string
		copy(v[:], values)
		out = append(out, row{path: path, pairs: l.rowPairs(path, v)})
		return &out[len(out)-1]
	}
	if s := c.snap.node; s != nil {
		r := add(s.path, "", s.path, "", "", "", "")
		r.stats, r.spec, r.start, r.fs, r.device = s.stats, s.spec, unix(c.p.bootTime), c.fs.node, c.fs.nodeDevice
	}
	if s := c.snap.pods; s != nil && s.path != c.snap.node.pathOr("") {
		r := add(s.path, "", s.path, "", "", "", "")
		r.stats, r.spec, r.start = s.stats, s.spec, unix(c.p.bootTime)
	}
	for _, ps := range c.snap.podList {
		if ps.own != nil {
			r := add(ps.own.path, "", ps.own.path, "", "", ps.pod.Namespace, ps.pod.Name)
			r.stats, r.spec, r.net, r.start = ps.own.stats, ps.own.spec, ps.net, unix(ps.pod.StartTime)
		}
		for _, cs := range ps.containers {
			r := add(cs.s.path, cs.c.Name, cs.s.path, cs.c.Image, cs.c.ID, ps.pod.Namespace, ps.pod.Name)
			r.stats, r.spec, r.start, r.isChild = cs.s.stats, cs.s.spec, unix(cs.c.StartTime), true
			r.fs, r.device = c.fs.rootfs[cs.c.ID], c.fs.rootfsDevice[cs.c.ID]
		}
	}
	for i := range out {
		r := &out[i]
		if r.fs != nil {
			r.devicePair = c.p.devicePairOf(r.device)
		}
		if len(r.stats.IO) > 0 {
			r.ioPairs = make([]string, len(r.stats.IO))
			for j, d := range r.stats.IO {
				r.ioPairs[j] = c.p.devicePair(d.Major, d.Minor)
			}
		}
		if len(r.net) > 0 {
			r.netPairs = make([]string, len(r.net))
			for j, n := range r.net {
				r.netPairs[j] = l.interfacePair(n.Name)
			}
		}
	}
	l.prune()
	return out
}

// prune drops the rows not used since gen was last counted, and the
// interfaces' pairs once they are many. l.mu must be held.
func (l *labelCache) prune() {
	for path, e := range l.rows {
		if e.gen != l.gen {
			delete(l.rows, path)
		}
	}
	if len(l.ifs) > 64 { // names of interfaces gone
		clear(l.ifs)
	}
}

func (s *sample) pathOr(def string) string {
	if s == nil {
		return def
	}
	return s.path
}

// emitter writes the samples of one metric and row.
type emitter struct {
	t *textWriter
	m *metric
	r *row
}

// emit writes one sample: its value and the pairs of its extra labels
// (metric.extra), "" past those.
func (e *emitter) emit(v float64, extra1, extra2 string) {
	t := e.t
	extra := [2]string{extra1, extra2}
	t.series()
	b := append(t.buf, '{')
	for i, o := range e.m.order {
		if i > 0 {
			b = append(b, ',')
		}
		if o < len(baseLabels) {
			b = append(b, e.r.pairs[o]...)
		} else {
			b = append(b, extra[o-len(baseLabels)]...)
		}
	}
	t.buf = append(b, '}')
	t.value(v, -1)
}

// metric is one cAdvisor metric family: its name, help, type and extra
// labels, and either the samples of a row (each) or, for a family of the
// machine with no labels, its one value (machine).
type metric struct {
	name, help string
	typ        metricType
	extra      []string
	each       func(r *row, e *emitter)
	machine    func(c *collector) (float64, bool)
	// order is the order in which a sample's label pairs are written:
	// i < len(baseLabels) for base pair i, else extra pair
	// i-len(baseLabels); set by cadvisorMetrics.
	order []int
}

const nanos = 1e9

// Label pairs that do not vary.
var (
	cpuTotalPair       = pair("cpu", "total")
	pgfaultPair        = pair("failure_type", "pgfault")
	pgmajfaultPair     = pair("failure_type", "pgmajfault")
	hierarchyScopePair = pair("scope", "hierarchy")
	containerScopePair = pair("scope", "container")
)

// cadvisorMetrics lists what is served, with cAdvisor's help texts, sorted
// by name (the order of the output).
func cadvisorMetrics() []metric {
	one := func(f func(r *row) float64) func(*row, *emitter) {
		return func(r *row, e *emitter) { e.emit(f(r), "", "") }
	}
	cpu := func(f func(*cgroups.CPUStats) float64) func(*row, *emitter) {
		return one(func(r *row) float64 { return f(&r.stats.CPU) })
	}
	// CFS figures exist only for cgroups with a quota, as cAdvisor's.
	cfs := func(f func(*cgroups.CPUStats) float64) func(*row, *emitter) {
		return func(r *row, e *emitter) {
			if r.stats.CPU.Periods != 0 {
				e.emit(f(&r.stats.CPU), "", "")
			}
		}
	}
	mem := func(f func(*cgroups.MemoryStats) float64) func(*row, *emitter) {
		return one(func(r *row) float64 { return f(&r.stats.Memory) })
	}
	io := func(f func(*cgroups.IOStats) float64) func(*row, *emitter) {
		return func(r *row, e *emitter) {
			for i := range r.stats.IO {
				e.emit(f(&r.stats.IO[i]), r.ioPairs[i], "")
			}
		}
	}
	network := func(f func(*netInterface) float64) func(*row, *emitter) {
		return func(r *row, e *emitter) {
			for i := range r.net {
				e.emit(f(&r.net[i]), r.netPairs[i], "")
			}
		}
	}
	// The spec figures cAdvisor has for every cgroup (shares) or for
	// those that set them (period, quota).
	spec := func(f func(*cgroups.CPUSpec) uint64, always bool) func(*row, *emitter) {
		return func(r *row, e *emitter) {
			if r.spec != nil && (always || f(r.spec) != 0) {
				e.emit(float64(f(r.spec)), "", "")
			}
		}
	}
	fsFigure := func(f func(*statsapi.FsStats) *uint64) func(*row, *emitter) {
		return func(r *row, e *emitter) {
			if r.fs != nil && f(r.fs) != nil {
				e.emit(float64(*f(r.fs)), r.devicePair, "")
			}
		}
	}
	ms := []metric{
		{name: "container_spec_cpu_shares", help: "CPU share of the container.", typ: gauge,
			each: spec(func(s *cgroups.CPUSpec) uint64 { return s.Shares }, true)},
		{name: "container_spec_cpu_period", help: "CPU period of the container.", typ: gauge,
			each: spec(func(s *cgroups.CPUSpec) uint64 { return s.PeriodMicros }, false)},
		{name: "container_spec_cpu_quota", help: "CPU quota of the container.", typ: gauge,
			each: spec(func(s *cgroups.CPUSpec) uint64 { return s.QuotaMicros }, false)},
		{name: "container_fs_usage_bytes", help: "Number of bytes that are consumed by the container on this filesystem.", typ: gauge, extra: []string{"device"},
			each: fsFigure(func(s *statsapi.FsStats) *uint64 { return s.UsedBytes })},
		{name: "container_fs_limit_bytes", help: "Number of bytes that can be consumed by the container on this filesystem.", typ: gauge, extra: []string{"device"},
			each: fsFigure(func(s *statsapi.FsStats) *uint64 { return s.CapacityBytes })},
		{name: "container_fs_inodes_free", help: "Number of available Inodes", typ: gauge, extra: []string{"device"},
			each: fsFigure(func(s *statsapi.FsStats) *uint64 { return s.InodesFree })},
		{name: "container_fs_inodes_total", help: "Number of Inodes", typ: gauge, extra: []string{"device"},
			each: fsFigure(func(s *statsapi.FsStats) *uint64 { return s.Inodes })},
		{name: "container_cpu_usage_seconds_total", help: "Cumulative cpu time consumed in seconds.", typ: counter, extra: []string{"cpu"},
			each: func(r *row, e *emitter) { e.emit(float64(r.stats.CPU.UsageNanos)/nanos, cpuTotalPair, "") }},
		{name: "container_cpu_user_seconds_total", help: "Cumulative user cpu time consumed in seconds.", typ: counter,
			each: cpu(func(s *cgroups.CPUStats) float64 { return float64(s.UserNanos) / nanos })},
		{name: "container_cpu_system_seconds_total", help: "Cumulative system cpu time consumed in seconds.", typ: counter,
			each: cpu(func(s *cgroups.CPUStats) float64 { return float64(s.SystemNanos) / nanos })},
		{name: "container_cpu_cfs_periods_total", help: "Number of elapsed enforcement period intervals.", typ: counter,
			each: cfs(func(s *cgroups.CPUStats) float64 { return float64(s.Periods) })},
		{name: "container_cpu_cfs_throttled_periods_total", help: "Number of throttled period intervals.", typ: counter,
			each: cfs(func(s *cgroups.CPUStats) float64 { return float64(s.ThrottledPeriods) })},
		{name: "container_cpu_cfs_throttled_seconds_total", help: "Total time duration the container has been throttled.", typ: counter,
			each: cfs(func(s *cgroups.CPUStats) float64 { return float64(s.ThrottledNanos) / nanos })},
		{name: "container_memory_usage_bytes", help: "Current memory usage in bytes, including all memory regardless of when it was accessed", typ: gauge,
			each: mem(func(s *cgroups.MemoryStats) float64 { return float64(s.Usage) })},
		{name: "container_memory_working_set_bytes", help: "Current working set in bytes.", typ: gauge,
			each: mem(func(s *cgroups.MemoryStats) float64 { return float64(s.WorkingSet) })},
		{name: "container_memory_rss", help: "Size of RSS in bytes.", typ: gauge,
			each: mem(func(s *cgroups.MemoryStats) float64 { return float64(s.RSS) })},
		{name: "container_memory_cache", help: "Number of bytes of page cache memory.", typ: gauge,
			each: mem(func(s *cgroups.MemoryStats) float64 { return float64(s.Cache) })},
		{name: "container_memory_failures_total", help: "Cumulative count of memory allocation failures.", typ: counter, extra: []string{"failure_type", "scope"},
			each: func(r *row, e *emitter) {
				m := &r.stats.Memory
				e.emit(float64(m.PageFaults), pgfaultPair, hierarchyScopePair)
				e.emit(float64(m.MajorPageFaults), pgmajfaultPair, hierarchyScopePair)
				if r.isChild { // a container's own figures are its hierarchy's
					e.emit(float64(m.PageFaults), pgfaultPair, containerScopePair)
					e.emit(float64(m.MajorPageFaults), pgmajfaultPair, containerScopePair)
				}
			}},
		{name: "container_spec_memory_limit_bytes", help: "Memory limit for the container.", typ: gauge,
			each: mem(func(s *cgroups.MemoryStats) float64 { return float64(s.Limit) })},
		{name: "container_oom_events_total", help: "Count of out of memory events observed for the container", typ: counter,
			each: mem(func(s *cgroups.MemoryStats) float64 { return float64(s.OOMKills) })},
		{name: "container_fs_reads_bytes_total", help: "Cumulative count of bytes read", typ: counter, extra: []string{"device"},
			each: io(func(d *cgroups.IOStats) float64 { return float64(d.ReadBytes) })},
		{name: "container_fs_writes_bytes_total", help: "Cumulative count of bytes written", typ: counter, extra: []string{"device"},
			each: io(func(d *cgroups.IOStats) float64 { return float64(d.WriteBytes) })},
		{name: "container_fs_reads_total", help: "Cumulative count of reads completed", typ: counter, extra: []string{"device"},
			each: io(func(d *cgroups.IOStats) float64 { return float64(d.ReadOps) })},
		{name: "container_fs_writes_total", help: "Cumulative count of writes completed", typ: counter, extra: []string{"device"},
			each: io(func(d *cgroups.IOStats) float64 { return float64(d.WriteOps) })},
		{name: "container_network_receive_bytes_total", help: "Cumulative count of bytes received", typ: counter, extra: []string{"interface"},
			each: network(func(i *netInterface) float64 { return float64(i.RxBytes) })},
		{name: "container_network_receive_packets_total", help: "Cumulative count of packets received", typ: counter, extra: []string{"interface"},
			each: network(func(i *netInterface) float64 { return float64(i.RxPackets) })},
		{name: "container_network_receive_packets_dropped_total", help: "Cumulative count of packets dropped while receiving", typ: counter, extra: []string{"interface"},
			each: network(func(i *netInterface) float64 { return float64(i.RxDropped) })},
		{name: "container_network_receive_errors_total", help: "Cumulative count of errors encountered while receiving", typ: counter, extra: []string{"interface"},
			each: network(func(i *netInterface) float64 { return float64(i.RxErrors) })},
		{name: "container_network_transmit_bytes_total", help: "Cumulative count of bytes transmitted", typ: counter, extra: []string{"interface"},
			each: network(func(i *netInterface) float64 { return float64(i.TxBytes) })},
		{name: "container_network_transmit_packets_total", help: "Cumulative count of packets transmitted", typ: counter, extra: []string{"interface"},
			each: network(func(i *netInterface) float64 { return float64(i.TxPackets) })},
		{name: "container_network_transmit_packets_dropped_total", help: "Cumulative count of packets dropped while transmitting", typ: counter, extra: []string{"interface"},
			each: network(func(i *netInterface) float64 { return float64(i.TxDropped) })},
		{name: "container_network_transmit_errors_total", help: "Cumulative count of errors encountered while transmitting", typ: counter, extra: []string{"interface"},
			each: network(func(i *netInterface) float64 { return float64(i.TxErrors) })},
		// pids.current counts tasks, which are threads.
		{name: "container_threads", help: "Number of threads running inside the container", typ: gauge,
			each: one(func(r *row) float64 { return float64(r.stats.Pids.Current) })},
		{name: "container_threads_max", help: "Maximum number of threads allowed inside the container, infinity if value is zero", typ: gauge,
			each: one(func(r *row) float64 { return float64(r.stats.Pids.Limit) })},
		{name: "container_start_time_seconds", help: "Start time of the container since unix epoch in seconds.", typ: gauge,
			each: func(r *row, e *emitter) {
				if r.start != 0 {
					e.emit(r.start, "", "")
				}
			}},
		{name: "machine_cpu_cores", help: "Number of logical CPU cores.", typ: gauge,
			machine: func(c *collector) (float64, bool) {
				return float64(c.p.cfg.MachineCores), c.p.cfg.MachineCores > 0
			}},
		{name: "machine_memory_bytes", help: "Amount of memory installed on the machine.", typ: gauge,
			machine: func(c *collector) (float64, bool) {
				return float64(c.p.cfg.MachineMemory), c.p.cfg.MachineMemory > 0
			}},
		{name: "container_scrape_error", help: "1 if there was an error while getting container metrics, 0 otherwise", typ: gauge,
			machine: func(c *collector) (float64, bool) {
				if c.snap.errors > 0 {
					return 1, true
				}
				return 0, true
			}},
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	for i := range ms {
		ms[i].order = labelOrder(ms[i].extra)
	}
	return ms
}

// labelOrder merges baseLabels and extra (each sorted) into the order of
// a sample's label pairs (see metric.order).
func labelOrder(extra []string) []int {
	order := make([]int, 0, len(baseLabels)+len(extra))
	b, e := 0, 0
	for b < len(baseLabels) || e < len(extra) {
		if e == len(extra) || (b < len(baseLabels) && baseLabels[b] < extra[e]) {
			order = append(order, b)
			b++
		} else {
			order = append(order, len(baseLabels)+e)
			e++
		}
	}
	return order
}

// write writes every family of the snapshot's rows to t.
func (c *collector) write(t *textWriter, rows []row) {
	for mi := range c.p.cadvisor {
		m := &c.p.cadvisor[mi]
		t.family(m.name, m.help, m.typ)
		if m.machine != nil {
			if v, ok := m.machine(c); ok {
				t.sample(v, -1)
			}
			continue
		}
		e := emitter{t: t, m: m}
		for ri := range rows {
			e.r = &rows[ri]
			m.each(e.r, &e)
			if t.err != nil {
				return
			}
		}
	}
}

// devicePair is the device label pair of a block device (deviceName).
func (p *Provider) devicePair(major, minor uint64) string {
	p.devMu.Lock()
	dp, ok := p.devicePairs[[2]uint64{major, minor}]
	p.devMu.Unlock()
	if !ok {
		dp = pair("device", p.deviceName(major, minor))
		p.devMu.Lock()
		p.devicePairs[[2]uint64{major, minor}] = dp
		p.devMu.Unlock()
	}
	return dp
}

// devicePairOf is the device label pair of a device named name.
func (p *Provider) devicePairOf(name string) string {
	p.devMu.Lock()
	defer p.devMu.Unlock()
	dp, ok := p.namedDevicePairs[name]
	if !ok {
		dp = pair("device", name)
		p.namedDevicePairs[name] = dp
	}
	return dp
}
