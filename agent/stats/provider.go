package stats

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/cgroups"
)

// Pod is one pod whose usage is reported.
type Pod struct {
	Name      string
	Namespace string
	UID       types.UID
	// StartTime is when its sandbox was created.
	StartTime time.Time
	// HostNetwork pods share the node's network; no network stats are
	// reported for them.
	HostNetwork bool
	// Cgroup is the pod's cgroup; "" when pods have none of their own
	// (no --cgroups-per-qos), and the pod's figures are then the sum of
	// its containers'.
	Cgroup string
	// SandboxCgroup is the cgroup of the pod's sandbox container, whose
	// process holds the pod's network namespace; "" when not known.
	SandboxCgroup string
	Containers    []Container
}

// Container is one running container of a pod.
type Container struct {
	Name      string
	ID        string
	Image     string
	StartTime time.Time
	Cgroup    string
}

// podSource lists the pods to report: those the agent runs, each with its
// running containers. Called once per fresh snapshot; it must be safe for
// concurrent use and must not block on the runtime.
type podSource interface {
	StatsPods() []Pod
}

// cgroupReader reads cgroups; *cgroups.Manager is one. ReadStats and
// CPUSpec of a cgroup that is gone fail with errdefs.ErrNotFound.
type cgroupReader interface {
	ReadStats(path string, fig cgroups.Figures) (*cgroups.Stats, error)
	CPUSpec(path string) (cgroups.CPUSpec, error)
	WalkProcs(path string, known []string, each func(pid int) bool)
	DeviceName(major, minor uint64) string
}

var _ cgroupReader = (*cgroups.Manager)(nil)

// openFiles reads cgroups' statistics, and walks them, through files it
// keeps open between reads; *cgroups.StatsFiles is one. Not safe for
// concurrent use.
type openFiles interface {
	ReadStats(path string, fig cgroups.Figures) (*cgroups.Stats, error)
	// ReadStatsAfter is ReadStats given an earlier read with Detail, whose
	// figures that move only while the cgroup's tasks run it takes when
	// none has run since (reused).
	ReadStatsAfter(path string, fig cgroups.Figures, prev *cgroups.Earlier) (s *cgroups.Stats, reused bool, err error)
	CPUSpec(path string) (cgroups.CPUSpec, error)
	WalkProcs(path string, known []string, each func(pid int) bool)
	// CountProcs counts what WalkProcs would walk, with ok false when it
	// cannot tell without the walk.
	CountProcs(path string, known []string) (n int, ok bool)
	// Retain closes the files of the cgroups for which keep is false.
	Retain(keep func(cgroup string) bool)
	// Close closes every file.
	Close()
}

var _ openFiles = (*cgroups.StatsFiles)(nil)

// Config configures a Provider.
type Config struct {
	NodeName string
	Pods     podSource
	Cgroups  cgroupReader
	// Files, if set, reads the cgroups' statistics and walks their
	// processes instead of Cgroups, keeping their files open between
	// snapshots (a fifth of the cost of a read, for some 4 KiB of kernel
	// memory a file; half the cost of a walk, for a descriptor of each
	// directory walked: see cgroups.StatsFiles); the Provider closes
	// those of cgroups it no longer reports after each snapshot, and all
	// of them when Run ends or finds it idle (keepIdle).
	Files openFiles
	// Clock tells the time of reads, and paces Run's checks for idleness.
	Clock clock.WithTicker
	// NodeCgroup is the cgroup whose figures are the node's ("/");
	// PodsCgroup the one holding every pod, reported as the system
	// container "pods" ("" to leave it out).
	NodeCgroup string
	PodsCgroup string
	// ProcRoot is where procfs is mounted; "/proc" when empty.
	ProcRoot string
	// MaxAge: a snapshot younger than this is served again rather than
	// read afresh, which bounds the cost of scrapers polling in a burst
	// and the shortest window of a CPU rate. One second when zero.
	MaxAge time.Duration
	// MachineCores and MachineMemory are the node's CPU count and memory
	// in bytes (machine_cpu_cores, machine_memory_bytes, and the node's
	// available memory).
	MachineCores  int
	MachineMemory uint64
	// Fs locates the filesystems of the Summary's fs figures.
	Fs FsConfig
	// FsMaxAge: the Summary and /metrics/cadvisor serve the runtime's
	// filesystem figures (the image filesystem, the containers' writable
	// layers, which containerd's CRI measures about every 10 s) and the
	// node's read at most this long ago when Run runs, so that a request
	// does not wait for the runtime, and the cgroups' cpu spec read at
	// most this long ago. 10 s when zero. See cachedFs and snapshot.
	FsMaxAge time.Duration
}

// Provider reads the node's and the pods' usage from cgroups and procfs
// and serves it as the kubelet's Summary API and cAdvisor metrics. It is
// safe for concurrent use.
//
// Reads are made on demand, and only of what the request needs (see
// need): every request within MaxAge of the last read gets the same
// snapshot if it holds what the request needs; one that needs more reads
// afresh. A CPU rate (usageNanoCores) is the usage between a cgroup's
// latest read and an earlier one at least MaxAge older; a cgroup read for
// the first time has none, as with the kubelet.
//
// Run refreshes the filesystem figures in the background; without it they
// are read when a request finds them too old (see cachedFs).
type Provider struct {
	cfg      Config
	bootTime time.Time
	// cadvisor is the table of /metrics/cadvisor's families; read-only.
	cadvisor []metric
	// gzip keeps the writers of compressed metrics responses, textBufs
	// and jsonBufs the buffers of metrics and Summary responses, rowBufs
	// those of /metrics/cadvisor's rows.
	gzip               *gzipWriters
	textBufs, jsonBufs *kept[[]byte]
	rowBufs            *kept[[]row]

	mu sync.Mutex
	// last is the newest snapshot; guarded by mu, which is held while a
	// snapshot is read, so that concurrent requests share one read.
	last *snapshot
	// cpuHist holds each cgroup's earlier cpu usage, for rates; guarded
	// by mu. Entries of cgroups not seen in a snapshot are dropped.
	cpuHist map[string]cpuHistory
	// netBuf is the buffer net/dev files are read into; guarded by mu.
	netBuf []byte
	// seen and listed are the sets snapshot makes of the cgroups read and
	// the sandboxes listed, kept to be used again; guarded by mu.
	seen, listed map[string]bool
	// sandboxes holds the net/dev file each pod's network is read
	// through, by its sandbox's cgroup; guarded by mu. Entries of
	// sandboxes not seen in a snapshot are dropped, and all of them when
	// Run ends or finds the Provider idle.
	sandboxes map[string]*sandboxNetDev
	// limits holds each cgroup's limits as read at most FsMaxAge ago;
	// guarded by mu. Entries of cgroups not seen in a snapshot are
	// dropped.
	limits map[string]limitsEntry
	// specs holds each cgroup's cpu spec as read at most FsMaxAge ago;
	// guarded by mu. Entries of cgroups not seen in a snapshot are
	// dropped.
	specs map[string]specEntry
	// detail holds each cgroup's last read of every Detail figure from
	// its files, made less than keptFor ago, which the next reads take
	// those figures from while the cgroup's tasks do not run (see
	// cgroups.StatsFiles.ReadStatsAfter); guarded by mu. Entries of
	// cgroups not seen in a snapshot are dropped.
	detail map[string]statsEntry
	// counts holds each pod cgroup's process count as counted less than
	// keptFor ago, with its CPU usage then; guarded by mu. A pod whose
	// usage has not moved since has not forked nor ended a process, and
	// is not counted again (see walkPod). Entries of cgroups not seen in
	// a snapshot are dropped.
	counts map[string]countEntry
	// devices caches block device names by "major:minor", devicePairs
	// their device label pairs by number and namedDevicePairs by name;
	// guarded by devMu, apart from mu so that naming does not wait for a
	// read. They keep every device seen: the machine's disks.
	devMu            sync.Mutex
	devices          map[string]string
	devicePairs      map[[2]uint64]string
	namedDevicePairs map[string]string
	// labels and resourceLabels keep /metrics/cadvisor's and
	// /metrics/resource's label pairs between scrapes.
	labels, resourceLabels *labelCache
	// fsLast is the newest filesystem read of /metrics/cadvisor and
	// fsAt when it was made; guarded by fsMu, apart from mu so that a
	// slow runtime does not hold up the cgroup figures.
	fsMu   sync.Mutex
	fsLast *fsSnapshot
	fsAt   time.Time
	// dirs holds the measures of the pods' log and volume directories by
	// pod UID (podDirs), and dirsGen counts the Summaries that used them;
	// guarded by dirsMu.
	dirsMu  sync.Mutex
	dirs    map[string]*podDirsEntry
	dirsGen uint64
	// fsReadMu is held while the filesystems are read, so that one read
	// serves every request waiting for it.
	fsReadMu sync.Mutex
	// fsWanted asks Run for a filesystem read; buffer 1, so that asking
	// never blocks and asks made while one is pending collapse into it.
	// Written by cachedFs, read by Run; never closed.
	fsWanted chan struct{}
}

type cpuSample struct {
	usage uint64
	at    time.Time
}

// specEntry is a cgroup's cpu spec as read at at.
type specEntry struct {
	spec cgroups.CPUSpec
	at   time.Time
}

// keptFor is how long the figures of a cgroup's last read from its files
// (detail) and a pod's last process count (counts) serve while its tasks
// do not run. Past it the cgroup is read afresh whatever its CPU usage,
// which bounds how long a figure that moved without a task running (see
// cgroups.StatsFiles.ReadStatsAfter) can be missed; a minute, so that of
// the reads of a scraper every 15 or 30 s most idle cgroups' are spared.
const keptFor = time.Minute

// statsEntry is a cgroup's figures as read from its files at at; its CPU
// usage has read as in stats since since.
type statsEntry struct {
	stats     *cgroups.Stats
	at, since time.Time
}

// countEntry is a pod's process count as counted at at, when its cgroup's
// CPU usage read usage.
type countEntry struct {
	procs int
	usage uint64
	at    time.Time
}

// limitsEntry is a cgroup's memory and pids limits as read at at.
type limitsEntry struct {
	memory, pids uint64
	at           time.Time
}

// cpuHistory is a cgroup's last two cpu samples kept for rates: cur, and
// old, at least MaxAge before cur (zero until there is one).
type cpuHistory struct {
	cur, old cpuSample
}

// New returns a Provider; it reads the node's boot time from procfs.
func New(cfg Config) *Provider {
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = time.Second
	}
	if cfg.FsMaxAge <= 0 {
		cfg.FsMaxAge = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.NodeCgroup == "" {
		cfg.NodeCgroup = "/"
	}
	return &Provider{
		cfg: cfg, bootTime: bootTime(cfg.ProcRoot), cadvisor: cadvisorMetrics(),
		cpuHist: map[string]cpuHistory{}, specs: map[string]specEntry{}, detail: map[string]statsEntry{}, counts: map[string]countEntry{}, devices: map[string]string{},
		devicePairs: map[[2]uint64]string{}, namedDevicePairs: map[string]string{}, labels: newLabelCache(), resourceLabels: newLabelCache(),
		dirs: map[string]*podDirsEntry{}, limits: map[string]limitsEntry{}, sandboxes: map[string]*sandboxNetDev{},
		seen: map[string]bool{}, listed: map[string]bool{},
		fsWanted: make(chan struct{}, 1), gzip: newGzipWriters(2),
		textBufs: newKept[[]byte](2), jsonBufs: newKept[[]byte](2), rowBufs: newKept[[]row](2),
	}
}

// need is what a request needs of a snapshot.
type need struct {
	// figures are the cgroup figures.
	figures cgroups.Figures
	// procs: the pods' process counts (a walk of each pod's cgroups).
	procs bool
	// net: the pods' and the node's network (/proc/<pid>/net/dev of one
	// process of each pod: the walk stops at the first that has one).
	net bool
	// spec: the cgroups' cpu spec.
	spec bool
}

var (
	// needResource is what /metrics/resource and a Summary with
	// only_cpu_and_memory need.
	needResource = need{figures: cgroups.CPUMemory}
	// needSummary is what the Summary needs: the memory limit too, for
	// the available memory.
	needSummary = need{figures: cgroups.CPUMemory | cgroups.LimitFigures, procs: true, net: true}
	// needCadvisor is what /metrics/cadvisor needs: every cgroup figure
	// and the network.
	needCadvisor = need{figures: cgroups.AllFigures, net: true, spec: true}
)

// covers reports whether a snapshot read for h holds what n needs.
func (h need) covers(n need) bool {
	return h.figures&n.figures == n.figures && (h.procs || !n.procs) && (h.net || !n.net) && (h.spec || !n.spec)
}

// snapshot is everything read at one instant. Immutable once made.
type snapshot struct {
	at time.Time
	// has is what was read; the figures it does not cover read 0.
	has     need
	node    *sample // the node cgroup
	pods    *sample // the pods cgroup; nil when not configured
	nodeNet []netInterface
	podList []podSample
	// errors counts reads that failed other than for a vanished cgroup.
	errors int
}

type sample struct {
	path  string
	stats *cgroups.Stats
	// spec is the cgroup's cpu spec, when needed and read.
	spec *cgroups.CPUSpec
	// nanoCores is the CPU rate since the previous read; nil for a first read.
	nanoCores *uint64
}

type podSample struct {
	pod        Pod
	own        *sample // nil without a pod cgroup
	procs      int
	net        []netInterface
	containers []containerSample
}

type containerSample struct {
	c Container
	s *sample
}

// snapshot returns a snapshot at most MaxAge old that holds what n needs,
// reading one (of what n needs) if the last does not.
func (p *Provider) snapshot(ctx context.Context, n need) *snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Clock.Now()
	if p.last != nil && now.Sub(p.last.at) < p.cfg.MaxAge && p.last.has.covers(n) {
		return p.last
	}
	logger := klog.FromContext(ctx)
	snap := &snapshot{at: now, has: n}
	// seen holds the cgroups read or walked, sandboxes the sandboxes
	// listed: the maps of the last snapshot, emptied.
	seen, sandboxes := p.seen, p.listed
	clear(seen)
	clear(sandboxes)
	readStats, cpuSpec := p.cfg.Cgroups.ReadStats, p.cfg.Cgroups.CPUSpec
	if p.cfg.Files != nil {
		readStats, cpuSpec = p.cfg.Files.ReadStats, p.cfg.Files.CPUSpec
	}
	read := func(path string) *sample {
		// The limits change only with the pod's resources (an edit, an
		// in-place resize): read at most every FsMaxAge, as the cpu spec.
		fig := n.figures
		cached, haveLimits := p.limits[path]
		haveLimits = haveLimits && fig&cgroups.LimitFigures != 0 && now.Sub(cached.at) < p.cfg.FsMaxAge && !now.Before(cached.at)
		if haveLimits {
			fig &^= cgroups.LimitFigures
		}
		var st *cgroups.Stats
		var err error
		reused, detail := false, fig&cgroups.Detail != 0 && p.cfg.Files != nil
		kept, haveKept := p.detail[path]
		if detail {
			// The figures kept of the cgroup's last read from the files,
			// while they are younger than keptFor (see detail).
			var prev *cgroups.Earlier
			if haveKept && now.Sub(kept.at) < keptFor && !now.Before(kept.at) {
				prev = &cgroups.Earlier{Stats: kept.stats, IdleFor: now.Sub(kept.since)}
			}
			st, reused, err = p.cfg.Files.ReadStatsAfter(path, fig, prev)
		} else {
			st, err = readStats(path, fig)
		}
		if err != nil {
			if !errors.Is(err, errdefs.ErrNotFound) {
				snap.errors++
				logger.V(2).Info("Reading a cgroup failed", "cgroup", path, "err", err)
			}
			return nil
		}
		seen[path] = true
		if detail && !reused {
			since := now
			if haveKept && kept.stats.CPU.UsageNanos == st.CPU.UsageNanos && !now.Before(kept.since) {
				since = kept.since
			}
			p.detail[path] = statsEntry{stats: st, at: now, since: since}
		}
		switch {
		case haveLimits:
			st.Memory.Limit, st.Pids.Limit = cached.memory, cached.pids
		case fig&cgroups.LimitFigures != 0:
			p.limits[path] = limitsEntry{memory: st.Memory.Limit, pids: st.Pids.Limit, at: now}
		}
		s := &sample{path: path, stats: st, nanoCores: p.rate(path, st.CPU.UsageNanos, now)}
		if n.spec {
			e, ok := p.specs[path]
			if !ok || now.Sub(e.at) >= p.cfg.FsMaxAge || now.Before(e.at) {
				spec, err := cpuSpec(path)
				if err != nil {
					delete(p.specs, path)
					return s
				}
				e = specEntry{spec: spec, at: now}
				p.specs[path] = e
			}
			s.spec = &e.spec
		}
		return s
	}
	snap.node = read(p.cfg.NodeCgroup)
	if p.cfg.PodsCgroup != "" {
		snap.pods = read(p.cfg.PodsCgroup)
	}
	if n.net {
		if ifs, err := p.readNetDev(filepath.Join(p.cfg.ProcRoot, "net", "dev")); err == nil {
			snap.nodeNet = ifs
		}
	}
	pods := p.cfg.Pods.StatsPods()
	snap.podList = make([]podSample, 0, len(pods))
	for _, pod := range pods {
		sandboxes[pod.SandboxCgroup] = true
		ps := podSample{pod: pod, containers: make([]containerSample, 0, len(pod.Containers))}
		if pod.Cgroup != "" {
			ps.own = read(pod.Cgroup)
			if ps.own == nil {
				continue // the pod is gone, or going
			}
		}
		for _, c := range pod.Containers {
			if s := read(c.Cgroup); s != nil {
				ps.containers = append(ps.containers, containerSample{c: c, s: s})
			}
		}
		if n.procs || (n.net && !pod.HostNetwork) {
			p.walkPod(&ps, n, seen)
		}
		snap.podList = append(snap.podList, ps)
	}
	for path := range p.cpuHist {
		if !seen[path] {
			delete(p.cpuHist, path)
		}
	}
	for path := range p.limits {
		if !seen[path] {
			delete(p.limits, path)
		}
	}
	for path := range p.specs {
		if !seen[path] {
			delete(p.specs, path)
		}
	}
	for path := range p.detail {
		if !seen[path] {
			delete(p.detail, path)
		}
	}
	for path := range p.counts {
		if !seen[path] {
			delete(p.counts, path)
		}
	}
	for path := range p.sandboxes {
		if !sandboxes[path] {
			p.forgetSandbox(path)
		}
	}
	if p.cfg.Files != nil {
		// A listed pod's sandbox cgroup keeps its files (what walks and
		// counts use) through snapshots that did neither, such as
		// /metrics/cadvisor's between two Summaries.
		p.cfg.Files.Retain(func(path string) bool { return seen[path] || sandboxes[path] })
	}
	p.last = snap
	return snap
}

// rate records usage at now for path and returns the CPU rate in
// nanocores over at least MaxAge: since the previous record if it is
// that old (which then becomes the one rates are taken against), else
// since the one before it, kept for this (a request that needed more
// than the last snapshot held reads again within MaxAge). Nil for a
// first record, or when the usage went down (a new cgroup at the same
// path). p.mu must be held.
func (p *Provider) rate(path string, usage uint64, now time.Time) *uint64 {
	h, ok := p.cpuHist[path]
	sample := cpuSample{usage: usage, at: now}
	switch {
	case !ok || usage < h.cur.usage || usage < h.old.usage:
		p.cpuHist[path] = cpuHistory{cur: sample}
		return nil
	case now.Sub(h.cur.at) >= p.cfg.MaxAge:
		h.old, h.cur = h.cur, sample
	}
	p.cpuHist[path] = h
	if h.old.at.IsZero() || !now.After(h.old.at) {
		return nil
	}
	r := uint64(float64(usage-h.old.usage) / now.Sub(h.old.at).Seconds())
	return &r
}

// walkPod counts the processes of the pod (n.procs) and reads its
// network through the first of them whose /proc entry can be read
// (n.net, unless it is on the host's network), walking its cgroup, or
// without one its containers'. The walk ends once it has what n needs.
// The cgroups walked are added to seen. p.mu must be held.
func (p *Provider) walkPod(ps *podSample, n need, seen map[string]bool) {
	// The files kept open of a cgroup walked or counted are its
	// directory's and its pids.current.
	keep := func(path string, known []string) {
		seen[path] = true
		for _, k := range known {
			seen[k] = true
		}
	}
	walkProcs := p.cfg.Cgroups.WalkProcs
	if p.cfg.Files != nil {
		walkProcs = func(path string, known []string, each func(pid int) bool) {
			keep(path, known)
			p.cfg.Files.WalkProcs(path, known, each)
		}
	}
	wantNet := n.net && !ps.pod.HostNetwork
	// The sandbox's process is the one to ask for the network (its file
	// kept between snapshots, see sandboxNetDev); without one, the first
	// process of the walk.
	if wantNet && ps.pod.SandboxCgroup != "" {
		if ifs, ok := p.sandboxNet(ps.pod.SandboxCgroup, walkProcs); ok {
			ps.net, wantNet = ifs, false
		}
	}
	if !n.procs && !wantNet {
		return
	}
	each := func(pid int) bool {
		ps.procs++
		if wantNet {
			if ifs, err := p.readNetDev(filepath.Join(p.cfg.ProcRoot, strconv.Itoa(pid), "net", "dev")); err == nil {
				ps.net, wantNet = ifs, false
			}
		}
		return n.procs || wantNet
	}
	if ps.pod.Cgroup != "" {
		// The pod's cgroup holds its sandbox's and its containers'.
		var known []string
		if ps.pod.SandboxCgroup != "" {
			known = make([]string, 0, 1+len(ps.pod.Containers))
			known = append(known, ps.pod.SandboxCgroup)
			for _, c := range ps.pod.Containers {
				known = append(known, c.Cgroup)
			}
		}
		if !wantNet && p.cfg.Files != nil {
			// Counting alone: as last counted if none of the pod's tasks
			// has run since, else from the task counts, where they tell.
			if count, ok := p.countKept(ps); ok {
				keep(ps.pod.Cgroup, known)
				ps.procs = count
				return
			}
			if count, ok := p.cfg.Files.CountProcs(ps.pod.Cgroup, known); ok {
				keep(ps.pod.Cgroup, known)
				ps.procs = count
				p.keepCount(ps)
				return
			}
		}
		walkProcs(ps.pod.Cgroup, known, each)
		if n.procs {
			p.keepCount(ps)
		}
	} else {
		for _, cs := range ps.containers {
			if !n.procs && !wantNet {
				break
			}
			walkProcs(cs.s.path, nil, each)
		}
	}
	if !n.procs {
		ps.procs = 0
	}
}

// countKept returns the pod's process count as last counted if its
// cgroup's CPU usage has not moved since, and that count is younger than
// keptFor. Processes are made and ended only by tasks that run (fork,
// exit) and the usage, counted to the nanosecond, grows whenever a task
// of the pod is on a CPU, so the count has not changed; a process moved
// in or out by another one is the exception, which the age bounds. A
// usage of 0 (a cgroup made anew) tells nothing. p.mu must be held.
func (p *Provider) countKept(ps *podSample) (int, bool) {
	e, ok := p.counts[ps.pod.Cgroup]
	if !ok || ps.own == nil || ps.own.stats.CPU.UsageNanos == 0 || ps.own.stats.CPU.UsageNanos != e.usage {
		return 0, false
	}
	now := p.cfg.Clock.Now()
	if now.Sub(e.at) >= keptFor || now.Before(e.at) {
		return 0, false
	}
	return e.procs, true
}

// keepCount records the pod's process count just counted. p.mu must be
// held.
func (p *Provider) keepCount(ps *podSample) {
	if ps.own != nil {
		p.counts[ps.pod.Cgroup] = countEntry{procs: ps.procs, usage: ps.own.stats.CPU.UsageNanos, at: p.cfg.Clock.Now()}
	}
}

// deviceName names a block device, caching the answer.
func (p *Provider) deviceName(major, minor uint64) string {
	key := fmt.Sprintf("%d:%d", major, minor)
	p.devMu.Lock()
	defer p.devMu.Unlock()
	if n, ok := p.devices[key]; ok {
		return n
	}
	n := p.cfg.Cgroups.DeviceName(major, minor)
	if n == "" {
		n = key // as cAdvisor, which falls back to the numbers
	}
	p.devices[key] = n
	return n
}

// bootTime reads the node's boot time (btime in /proc/stat); zero when it
// cannot.
func bootTime(procRoot string) time.Time {
	f, err := os.Open(filepath.Join(procRoot, "stat")) //nolint:gosec // G304: procfs
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(secs, 0)
			}
		}
	}
	return time.Time{}
}

// unix is t in seconds since the epoch; 0 for the zero time.
func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
