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
	Cgroup     string
	Containers []Container
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

// cgroupReader reads cgroups; *cgroups.Manager is one. Stats of a cgroup
// that is gone fails with errdefs.ErrNotFound.
type cgroupReader interface {
	Stats(path string) (*cgroups.Stats, error)
	Procs(path string) []int
	DeviceName(major, minor uint64) string
}

var _ cgroupReader = (*cgroups.Manager)(nil)

// Config configures a Provider.
type Config struct {
	NodeName string
	Pods     podSource
	Cgroups  cgroupReader
	Clock    clock.PassiveClock
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
}

// Provider reads the node's and the pods' usage from cgroups and procfs
// and serves it as the kubelet's Summary API and cAdvisor metrics. It is
// safe for concurrent use.
//
// Reads are made on demand, at most once per MaxAge: every request within
// MaxAge of the last read gets the same snapshot. A CPU rate (usageNanoCores)
// is the usage between a cgroup's two latest reads; a cgroup read for the
// first time has none, as with the kubelet.
type Provider struct {
	cfg      Config
	bootTime time.Time

	mu sync.Mutex
	// last is the newest snapshot; guarded by mu, which is held while a
	// snapshot is read, so that concurrent requests share one read.
	last *snapshot
	// prevCPU holds each cgroup's previous cpu usage, for rates; guarded
	// by mu. Entries of cgroups not seen in a snapshot are dropped.
	prevCPU map[string]cpuSample
	// devices caches block device names by "major:minor"; guarded by
	// devMu, apart from mu so that naming does not wait for a read.
	devMu   sync.Mutex
	devices map[string]string
}

type cpuSample struct {
	usage uint64
	at    time.Time
}

// New returns a Provider; it reads the node's boot time from procfs.
func New(cfg Config) *Provider {
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.NodeCgroup == "" {
		cfg.NodeCgroup = "/"
	}
	return &Provider{cfg: cfg, bootTime: bootTime(cfg.ProcRoot), prevCPU: map[string]cpuSample{}, devices: map[string]string{}}
}

// snapshot is everything read at one instant. Immutable once made.
type snapshot struct {
	at      time.Time
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

// snapshot returns a snapshot at most MaxAge old, reading one if needed.
func (p *Provider) snapshot(ctx context.Context) *snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Clock.Now()
	if p.last != nil && now.Sub(p.last.at) < p.cfg.MaxAge {
		return p.last
	}
	logger := klog.FromContext(ctx)
	snap := &snapshot{at: now}
	seen := map[string]bool{}
	read := func(path string) *sample {
		st, err := p.cfg.Cgroups.Stats(path)
		if err != nil {
			if !errors.Is(err, errdefs.ErrNotFound) {
				snap.errors++
				logger.V(2).Info("Reading a cgroup failed", "cgroup", path, "err", err)
			}
			return nil
		}
		seen[path] = true
		return &sample{path: path, stats: st, nanoCores: p.rate(path, st.CPU.UsageNanos, now)}
	}
	snap.node = read(p.cfg.NodeCgroup)
	if p.cfg.PodsCgroup != "" {
		snap.pods = read(p.cfg.PodsCgroup)
	}
	if ifs, err := readNetDev(filepath.Join(p.cfg.ProcRoot, "net", "dev")); err == nil {
		snap.nodeNet = ifs
	}
	for _, pod := range p.cfg.Pods.StatsPods() {
		ps := podSample{pod: pod}
		if pod.Cgroup != "" {
			ps.own = read(pod.Cgroup)
			if ps.own == nil {
				continue // the pod is gone, or going
			}
			procs := p.cfg.Cgroups.Procs(pod.Cgroup)
			ps.procs = len(procs)
			if !pod.HostNetwork {
				ps.net = p.podNetwork(procs)
			}
		}
		for _, c := range pod.Containers {
			if s := read(c.Cgroup); s != nil {
				ps.containers = append(ps.containers, containerSample{c: c, s: s})
			}
		}
		if pod.Cgroup == "" && !pod.HostNetwork {
			var procs []int
			for _, cs := range ps.containers {
				procs = append(procs, p.cfg.Cgroups.Procs(cs.s.path)...)
			}
			ps.procs = len(procs)
			ps.net = p.podNetwork(procs)
		}
		snap.podList = append(snap.podList, ps)
	}
	for path := range p.prevCPU {
		if !seen[path] {
			delete(p.prevCPU, path)
		}
	}
	p.last = snap
	return snap
}

// rate records usage at now for path and returns the CPU rate in
// nanocores since the previous record; nil for a first record or when the
// usage went down (a new cgroup at the same path). p.mu must be held.
func (p *Provider) rate(path string, usage uint64, now time.Time) *uint64 {
	prev, ok := p.prevCPU[path]
	p.prevCPU[path] = cpuSample{usage: usage, at: now}
	if !ok || usage < prev.usage || !now.After(prev.at) {
		return nil
	}
	r := uint64(float64(usage-prev.usage) / now.Sub(prev.at).Seconds())
	return &r
}

// podNetwork reads the network interfaces of the pod's network namespace
// through the first of its processes whose /proc entry can be read.
func (p *Provider) podNetwork(procs []int) []netInterface {
	for _, pid := range procs {
		ifs, err := readNetDev(filepath.Join(p.cfg.ProcRoot, strconv.Itoa(pid), "net", "dev"))
		if err == nil {
			return ifs
		}
	}
	return nil
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
