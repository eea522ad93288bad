package agent

import (
	"context"
	"net/http"
	"runtime"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/stats"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

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

// statsPods lists, for the stats provider, the pods the sources want that
// have a ready sandbox, with their running containers and cgroups.
type statsPods struct {
	a  *Agent
	cg *cgroups.Manager
}

func (s statsPods) StatsPods() []stats.Pod {
	var out []stats.Pod
	for _, pod := range s.a.pods.List() {
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
