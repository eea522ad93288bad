package agent

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/stats"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// cgroupCleanupPeriod is how often the cgroups of pods the agent no longer
// runs are looked for and removed.
const cgroupCleanupPeriod = 10 * time.Second

// runtimeConfigReader is the CRI call that says the runtime's cgroup
// driver (containerd 2.x answers it; 1.6 answers Unimplemented).
type runtimeConfigReader interface {
	RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error)
}

// cgroupDriver is the runtime's cgroup driver when it says, else
// --cgroup-driver, as the kubelet chooses it.
func (a *Agent) cgroupDriver(ctx context.Context, rt runtimeConfigReader) string {
	logger := klog.FromContext(ctx)
	flag := a.cfg.CgroupDriver
	resp, err := rt.RuntimeConfig(ctx)
	if err != nil {
		if !kubecontainer.IsUnimplemented(err) {
			logger.Info("Could not ask the runtime for its cgroup driver; using --cgroup-driver", "driver", flag, "err", err)
		}
		return flag
	}
	if resp.GetLinux() == nil {
		return flag
	}
	driver := cgroups.DriverCgroupfs
	if resp.GetLinux().GetCgroupDriver() == runtimeapi.CgroupDriver_SYSTEMD {
		driver = cgroups.DriverSystemd
	}
	if driver != flag {
		logger.Info("Using the container runtime's cgroup driver rather than --cgroup-driver", "runtime", driver, "flag", flag)
	}
	return driver
}

// setupCgroups makes the cgroup manager (with the QoS cgroups) and the
// stats provider once the runtime has answered.
func (a *Agent) setupCgroups(ctx context.Context, rt runtimeConfigReader) (*cgroups.Manager, error) {
	cg, err := cgroups.New(ctx, cgroups.Config{
		Root:            a.cfg.CgroupRoot,
		Driver:          a.cgroupDriver(ctx, rt),
		PerQOS:          a.cfg.CgroupsPerQOS,
		BlkioAccounting: a.cfg.CgroupV1BlkioAccounting,
		Clock:           a.clock,
	})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Cgroups ready", "version", cg.Version(), "driver", cg.Driver(), "root", a.cfg.CgroupRoot, "perQOS", a.cfg.CgroupsPerQOS)
	a.stats.Store(stats.New(stats.Config{
		NodeName:      a.nodeName,
		Pods:          statsPods{a: a, cg: cg},
		Cgroups:       cg,
		Clock:         a.clock,
		PodsCgroup:    cg.PodsCgroup(),
		MachineCores:  runtime.NumCPU(),
		MachineMemory: uint64(a.memoryCapacity),
	}))
	return cg, nil
}

// cleanupCgroups removes, every cgroupCleanupPeriod, the cgroups of pods
// that neither the sources, nor a worker, nor the runtime hold any more:
// what a removal that failed or an agent that died left. Ends with ctx.
func (a *Agent) cleanupCgroups(ctx context.Context, cg *cgroups.Manager) {
	logger := klog.FromContext(ctx)
	ticker := a.clock.NewTicker(cgroupCleanupPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		keep := func(uid types.UID) bool {
			if a.pods.get(uid) != nil {
				return true
			}
			for _, known := range a.workers.Known() {
				if known == uid {
					return true
				}
			}
			st, _ := a.cache.Get(uid)
			return st != nil && len(st.Sandboxes)+len(st.Containers) > 0
		}
		if err := cg.Cleanup(ctx, keep); err != nil {
			logger.V(2).Info("Removing leftover pod cgroups failed; will retry", "err", err)
		}
	}
}

// statsPods lists, for the stats provider, the pods the sources want that
// have a ready sandbox, with their running containers and cgroups.
type statsPods struct {
	a  *Agent
	cg *cgroups.Manager
}

func (s statsPods) StatsPods() []stats.Pod {
	var out []stats.Pod
	for _, pod := range s.a.pods.list() {
		st, _ := s.a.cache.Get(pod.UID)
		if st == nil {
			continue
		}
		var sb *runtimeapi.PodSandboxStatus
		for _, candidate := range st.Sandboxes { // newest first
			if candidate.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				sb = candidate
				break
			}
		}
		if sb == nil {
			continue
		}
		out = append(out, s.statsPod(pod, st, sb))
	}
	return out
}

func (s statsPods) statsPod(pod *v1.Pod, st *kubecontainer.PodStatus, sb *runtimeapi.PodSandboxStatus) stats.Pod {
	sp := stats.Pod{
		Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
		StartTime:   time.Unix(0, sb.GetCreatedAt()),
		HostNetwork: pod.Spec.HostNetwork,
	}
	// The pod's cgroup is looked up rather than derived from its spec: a
	// sandbox stays in the QoS cgroup it was made in.
	parent := s.cg.PodCgroupParent(pod)
	if p, ok := s.cg.FindPodCgroup(pod.UID); ok {
		sp.Cgroup, parent = p, p
	}
	for _, c := range st.Containers {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING || c.SandboxID != sb.GetId() {
			continue
		}
		sp.Containers = append(sp.Containers, stats.Container{
			Name: c.Name, ID: c.ID, Image: c.Image, StartTime: c.CreatedAt,
			Cgroup: s.cg.ContainerCgroup(parent, c.ID),
		})
	}
	return sp
}

// serveStatsSummary and serveCadvisor answer 503 until the runtime has
// answered and the provider exists.
func (a *Agent) serveStatsSummary(w http.ResponseWriter, r *http.Request) {
	if p := a.stats.Load(); p != nil {
		p.SummaryHandler().ServeHTTP(w, r)
		return
	}
	http.Error(w, "stats are not available until the container runtime has answered", http.StatusServiceUnavailable)
}

func (a *Agent) serveCadvisor(w http.ResponseWriter, r *http.Request) {
	if p := a.stats.Load(); p != nil {
		p.CadvisorHandler().ServeHTTP(w, r)
		return
	}
	http.Error(w, "stats are not available until the container runtime has answered", http.StatusServiceUnavailable)
}

// machineMemory is the node's memory in bytes (MemTotal of /proc/meminfo);
// 0 when it cannot be read.
func machineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}
