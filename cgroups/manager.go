package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/qos"
)

// DefaultMountRoot is where the cgroup hierarchies are mounted.
const DefaultMountRoot = "/sys/fs/cgroup"

// Config configures a Manager.
type Config struct {
	// Root is --cgroup-root: the cgroup below which the pods' cgroups
	// live; "/" by default. With the systemd driver it is "/" or a slice.
	// It is created when missing.
	Root string
	// Driver is DriverCgroupfs or DriverSystemd; it must match the
	// runtime's.
	Driver string
	// PerQOS is --cgroups-per-qos: each pod gets its own cgroup in a QoS
	// cgroup below Root/kubepods. Without it pods get no cgroup of their
	// own and their sandboxes' cgroup parent is Root.
	PerQOS bool
	// BlkioAccounting turns the kernel's block I/O accounting on for every
	// disk on cgroup v1, by writing a rule that limits nothing into the
	// agent's own blkio cgroup (doc.go says why and what it costs). It
	// does nothing on cgroup v2.
	BlkioAccounting bool
	// MountRoot is where the hierarchies are mounted; DefaultMountRoot
	// when empty. SysRoot is where sysfs is mounted ("/sys" when empty).
	// Tests point both at fake trees.
	MountRoot string
	SysRoot   string
	// Version is the cgroup version to drive: 1 or 2, or 0 to detect it
	// (v2 when /sys/fs/cgroup is cgroup2; v1 on legacy and hybrid hosts,
	// whose controllers live in the v1 hierarchies).
	Version int
	// Clock paces KillPodProcesses' wait for the processes it killed; the
	// real clock when nil.
	Clock clock.Clock
	// PodPidsLimit is --pod-max-pids: every pod cgroup's pids.max; 0 or
	// less leaves it unlimited.
	PodPidsLimit int64
}

// Manager creates, configures and removes the pods' cgroups and reads
// their statistics. Its methods are safe for concurrent use; calls for one
// pod must not overlap (the pod's worker makes them).
type Manager struct {
	cfg     Config
	version int
	root    name
	// subsystems are the v1 controllers and named hierarchies mounted,
	// for creating cgroups.
	subsystems []cgroup1.Subsystem

	// burstableMu serializes updateBurstable; taken before mu.
	burstableMu sync.Mutex

	mu sync.Mutex
	// applied is the configuration last written to each pod's cgroup, so
	// that a sync that changes nothing writes nothing. Guarded by mu.
	applied map[types.UID]ResourceConfig
	// burstable holds the cpu request (millicores) of each Burstable pod,
	// whose sum sets the burstable cgroup's shares. Guarded by mu.
	burstable map[types.UID]int64
	// blkioDone holds the disks ("MAJ:MIN") whose accounting is on.
	// Guarded by mu.
	blkioDone map[string]bool
	// burstableShares is the cpu.shares last written to the burstable QoS
	// cgroup, 0 before the first write. Guarded by mu.
	burstableShares uint64
}

// New checks cfg, detects the cgroup version and, with PerQOS, creates the
// QoS cgroups (Root/kubepods, .../burstable, .../besteffort); on cgroup v1
// with BlkioAccounting it turns block I/O accounting on. It is idempotent:
// an agent restarting finds what it made before.
func New(ctx context.Context, cfg Config) (*Manager, error) {
	if cfg.MountRoot == "" {
		cfg.MountRoot = DefaultMountRoot
	}
	if cfg.SysRoot == "" {
		cfg.SysRoot = "/sys"
	}
	if cfg.Driver == "" {
		cfg.Driver = DriverCgroupfs
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Driver != DriverCgroupfs && cfg.Driver != DriverSystemd {
		return nil, fmt.Errorf("--cgroup-driver: %q is not one of cgroupfs, systemd", cfg.Driver)
	}
	root, err := parseRoot(cfg.Root, cfg.Driver)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		cfg:       cfg,
		version:   cfg.Version,
		root:      root,
		applied:   map[types.UID]ResourceConfig{},
		burstable: map[types.UID]int64{},
		blkioDone: map[string]bool{},
	}
	if m.version == 0 {
		switch cgroups.Mode() {
		case cgroups.Unified:
			m.version = 2
		case cgroups.Legacy, cgroups.Hybrid:
			m.version = 1
		default:
			return nil, fmt.Errorf("no cgroup hierarchy is mounted at %s", DefaultMountRoot)
		}
	}
	if cfg.Driver == DriverSystemd {
		if err := m.checkSystemd(); err != nil {
			return nil, err
		}
	}
	if m.version == 1 {
		m.subsystems, _ = v1Subsystems(cfg.MountRoot)
		if len(m.subsystems) == 0 {
			return nil, fmt.Errorf("no cgroup v1 controller is mounted below %s", cfg.MountRoot)
		}
	}
	if err := m.create(ctx, root, nil); err != nil {
		return nil, fmt.Errorf("create cgroup root %s: %w", root.cgroupfs(), err)
	}
	if cfg.PerQOS {
		for _, q := range []struct {
			class v1.PodQOSClass
			res   *ResourceConfig
		}{
			{v1.PodQOSGuaranteed, nil},
			{v1.PodQOSBurstable, &ResourceConfig{CPUShares: MinShares, CPUQuota: -1, CPUPeriod: QuotaPeriod}},
			{v1.PodQOSBestEffort, &ResourceConfig{CPUShares: MinShares, CPUQuota: -1, CPUPeriod: QuotaPeriod}},
		} {
			n := qosName(root, q.class)
			if err := m.create(ctx, n, q.res); err != nil {
				return nil, fmt.Errorf("create QoS cgroup %s: %w", n.path(cfg.Driver), err)
			}
		}
	}
	m.enableBlkioAccounting(ctx)
	return m, nil
}

// checkSystemd refuses the systemd driver where it cannot work: it needs
// systemd as init (its D-Bus API creates the slices) and, here, cgroup v2.
func (m *Manager) checkSystemd() error {
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		comm, _ := os.ReadFile("/proc/1/comm")
		return fmt.Errorf("--cgroup-driver=systemd: systemd is not this host's init (PID 1 is %q); use --cgroup-driver=cgroupfs and configure the runtime the same way (containerd: SystemdCgroup = false)", strings.TrimSpace(string(comm)))
	}
	if m.version != 2 {
		return errors.New("--cgroup-driver=systemd: supported on cgroup v2 hosts only; use --cgroup-driver=cgroupfs on cgroup v1")
	}
	return nil
}

// Version is the cgroup version the manager drives: 1 or 2.
func (m *Manager) Version() int { return m.version }

// Driver is the cgroup driver: DriverCgroupfs or DriverSystemd.
func (m *Manager) Driver() string { return m.cfg.Driver }

// PodCgroupParent is what goes in the pod's CRI LinuxPodSandboxConfig
// CgroupParent: its pod cgroup (/kubepods/burstable/pod<uid> with
// cgroupfs, /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice
// with systemd), below Root; Root itself without PerQOS.
func (m *Manager) PodCgroupParent(pod *v1.Pod) string {
	if !m.cfg.PerQOS {
		return m.root.path(m.cfg.Driver)
	}
	return podName(m.root, qos.Class(pod), pod.UID).path(m.cfg.Driver)
}

// ContainerCgroup is where containerd puts the cgroup of the container
// (or sandbox) with id in a sandbox whose cgroup parent is parent.
func (m *Manager) ContainerCgroup(parent, id string) string {
	return containerPath(parent, id, m.cfg.Driver)
}

// PodsCgroup is the cgroup holding every pod: Root/kubepods with PerQOS,
// else Root.
func (m *Manager) PodsCgroup() string {
	if !m.cfg.PerQOS {
		return m.root.path(m.cfg.Driver)
	}
	return qosName(m.root, v1.PodQOSGuaranteed).path(m.cfg.Driver)
}

// FindPodCgroup returns the path of the cgroup of the pod with uid, looked
// up in every QoS cgroup (a pod whose QoS class changed keeps its sandbox,
// and so its cgroup, until the sandbox is recreated); ok is false when the
// pod has none.
func (m *Manager) FindPodCgroup(uid types.UID) (string, bool) {
	return m.findPodCgroup(uid, v1.PodQOSBurstable)
}

// FindPodCgroupOf is FindPodCgroup for pod, looking in the QoS cgroup of
// its class first (where it is unless its class changed): one stat call
// where FindPodCgroup may make three.
func (m *Manager) FindPodCgroupOf(pod *v1.Pod) (string, bool) {
	return m.findPodCgroup(pod.UID, qos.Class(pod))
}

func (m *Manager) findPodCgroup(uid types.UID, first v1.PodQOSClass) (string, bool) {
	if !m.cfg.PerQOS {
		return "", false
	}
	classes := [...]v1.PodQOSClass{first, v1.PodQOSBurstable, v1.PodQOSBestEffort, v1.PodQOSGuaranteed}
	for i, class := range classes {
		if i > 0 && class == first {
			continue
		}
		p := podName(m.root, class, uid).path(m.cfg.Driver)
		if m.exists(p) {
			return p, true
		}
	}
	return "", false
}

// EnsurePod creates the pod's cgroup with the limits of PodResources, or
// brings an existing one's limits up to date, and keeps the burstable QoS
// cgroup's cpu shares at the sum of the Burstable pods' requests. It is
// idempotent and cheap when nothing changed. A limit the kernel refuses
// (a memory limit below what the pod uses now) is an error; the caller may
// retry at its next sync. Without PerQOS it does nothing.
func (m *Manager) EnsurePod(ctx context.Context, pod *v1.Pod) error {
	return m.SetPod(ctx, pod, PodResources(pod))
}

// SetPod is EnsurePod writing res into the pod's cgroup rather than
// PodResources(pod): an in-place resize grows the pod's cgroup before its
// containers, and shrinks it to PodResources after them.
func (m *Manager) SetPod(ctx context.Context, pod *v1.Pod, res ResourceConfig) error {
	if !m.cfg.PerQOS {
		return nil
	}
	// Every pod's pids.max is the node's --pod-max-pids, whatever res says.
	res.Pids = max(m.cfg.PodPidsLimit, 0)
	class := qos.Class(pod)
	n := podName(m.root, class, pod.UID)
	m.mu.Lock()
	prev, known := m.applied[pod.UID]
	m.mu.Unlock()
	if known && prev == res && m.exists(n.path(m.cfg.Driver)) {
		return nil
	}
	created := !m.exists(n.path(m.cfg.Driver))
	if err := m.create(ctx, n, &res); err != nil {
		return fmt.Errorf("pod cgroup %s: %w", n.path(m.cfg.Driver), err)
	}
	m.mu.Lock()
	m.applied[pod.UID] = res
	delete(m.burstable, pod.UID)
	if class == v1.PodQOSBurstable {
		m.burstable[pod.UID] = PodCPURequest(pod)
	}
	m.mu.Unlock()
	if created {
		klog.FromContext(ctx).V(3).Info("Created pod cgroup", "cgroup", n.path(m.cfg.Driver), "cpuShares", res.CPUShares, "cpuQuota", res.CPUQuota, "memoryLimit", res.Memory)
		m.enableBlkioAccounting(ctx) // a disk may have appeared since
	}
	return m.updateBurstable(ctx)
}

// PodApplied returns the configuration last written to the cgroup of pod
// uid, and whether the manager wrote one since it started.
func (m *Manager) PodApplied(uid types.UID) (ResourceConfig, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	res, ok := m.applied[uid]
	return res, ok
}

// updateBurstable sets the burstable QoS cgroup's cpu shares to the sum of
// the Burstable pods' cpu requests, as the kubelet's QoS manager does.
//
// It writes only when the sum changed since its last write: a BestEffort
// or Guaranteed pod's sync, and a Burstable pod's that changes no request,
// leave the shared cgroup alone (cgroup writes take the kernel's cgroup
// lock, and a batch of new pods would otherwise rewrite it once each).
// Calls must not overlap for the check to hold; they are serialized here.
func (m *Manager) updateBurstable(ctx context.Context) error {
	m.burstableMu.Lock()
	defer m.burstableMu.Unlock()
	m.mu.Lock()
	var sum int64
	for _, req := range m.burstable {
		sum += req
	}
	shares := MilliCPUToShares(sum)
	unchanged := shares == m.burstableShares
	m.mu.Unlock()
	if unchanged {
		return nil
	}
	res := ResourceConfig{CPUShares: shares, CPUQuota: -1, CPUPeriod: QuotaPeriod}
	n := qosName(m.root, v1.PodQOSBurstable)
	if err := m.create(ctx, n, &res); err != nil {
		return fmt.Errorf("burstable QoS cgroup %s: %w", n.path(m.cfg.Driver), err)
	}
	m.mu.Lock()
	m.burstableShares = shares
	m.mu.Unlock()
	return nil
}

// RemovePod removes the cgroup of the pod with uid, from whichever QoS
// cgroup holds it, from every hierarchy (including, on hybrid hosts, the
// cgroup v2 one where runc also creates cgroups), children first. It is
// idempotent: a pod without a cgroup is no error. When processes remain in
// the pod's cgroups it removes nothing of what holds them and returns an
// error wrapping errdefs.ErrFailedPrecondition: the caller retries once
// they are gone.
func (m *Manager) RemovePod(ctx context.Context, uid types.UID) error {
	if !m.cfg.PerQOS {
		return nil
	}
	var errs []error
	for _, class := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		p := podName(m.root, class, uid).path(m.cfg.Driver)
		if err := m.remove(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.applied, uid)
	_, wasBurstable := m.burstable[uid]
	delete(m.burstable, uid)
	m.mu.Unlock()
	if wasBurstable {
		return m.updateBurstable(ctx)
	}
	return nil
}

// Cleanup removes the cgroups of pods keep does not want: what a pod whose
// removal failed, or an agent that died, left behind. A pod cgroup that
// still holds processes is never removed. keep is called for each pod
// cgroup found, just before it would be removed. Errors are joined; the
// next housekeeping tries again.
func (m *Manager) Cleanup(ctx context.Context, keep func(types.UID) bool) error {
	if !m.cfg.PerQOS {
		return nil
	}
	var errs []error
	for _, uid := range m.listPods() {
		if keep(uid) {
			continue
		}
		klog.FromContext(ctx).V(2).Info("Removing the cgroup of a pod the agent no longer runs", "podUID", uid)
		if err := m.RemovePod(ctx, uid); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// listPods returns the UIDs of the pod cgroups found in any hierarchy.
func (m *Manager) listPods() []types.UID {
	seen := map[types.UID]bool{}
	for _, h := range m.hierarchies() {
		for _, class := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
			dir := filepath.Join(h, qosName(m.root, class).path(m.cfg.Driver))
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if !e.IsDir() {
					continue
				}
				if uid, ok := uidFromPodDir(e.Name(), m.cfg.Driver); ok {
					seen[uid] = true
				}
			}
		}
	}
	out := make([]types.UID, 0, len(seen))
	for uid := range seen {
		out = append(out, uid)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// hierarchies are the directories of every mounted hierarchy: on v1 each
// controller's (cpu,cpuacct mounted together counts once: links to it are
// skipped) plus the v2 one of a hybrid host; on v2 the one mount.
func (m *Manager) hierarchies() []string {
	if m.version == 2 {
		return []string{m.cfg.MountRoot}
	}
	entries, err := os.ReadDir(m.cfg.MountRoot)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
			out = append(out, filepath.Join(m.cfg.MountRoot, e.Name()))
		}
	}
	return out
}

// exists reports whether the cgroup at p exists, looking in one hierarchy
// that always holds it (memory on v1).
func (m *Manager) exists(p string) bool {
	dir := filepath.Join(m.cfg.MountRoot, p)
	if m.version == 1 {
		dir = filepath.Join(m.cfg.MountRoot, string(cgroup1.Memory), p)
	}
	_, err := os.Stat(dir)
	return err == nil
}

// remove removes the cgroup at p and every cgroup below it from every
// hierarchy, deepest first. A cgroup holding processes is left with its
// ancestors, and reported with errdefs.ErrFailedPrecondition.
func (m *Manager) remove(ctx context.Context, p string) error {
	if m.cfg.Driver == DriverSystemd {
		if err := m.removeSystemd(ctx, p); err != nil {
			return err
		}
	}
	var busy []string
	var errs []error
	removed := 0
	for _, h := range m.hierarchies() {
		top := filepath.Join(h, p)
		var dirs []string
		err := filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// Deepest first: a walk lists parents before their children.
		for i := len(dirs) - 1; i >= 0; i-- {
			if procs := procsOf(dirs[i]); len(procs) > 0 {
				busy = append(busy, fmt.Sprintf("%s (%d processes)", dirs[i], len(procs)))
				continue
			}
			err := os.Remove(dirs[i])
			switch {
			case err == nil:
				removed++
			case errors.Is(err, os.ErrNotExist):
			case len(busy) > 0:
				// The ancestors of a busy cgroup cannot go; the busy
				// one is reported.
			default:
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
			}
		}
	}
	if len(busy) > 0 {
		errs = append(errs, fmt.Errorf("cgroup %s still holds processes in %s: %w", p, strings.Join(busy, ", "), errdefs.ErrFailedPrecondition))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if removed > 0 {
		klog.FromContext(ctx).V(3).Info("Removed cgroup", "cgroup", p, "directories", removed)
	}
	return nil
}
