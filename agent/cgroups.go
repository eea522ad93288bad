package agent

import (
	"context"
	"runtime"

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
		Pods:          stats.PodLister{Pods: a.pods, Runtime: a.cache, Cgroups: cg},
		Cgroups:       cg,
		Clock:         a.clock,
		PodsCgroup:    cg.PodsCgroup(),
		MachineCores:  runtime.NumCPU(),
		MachineMemory: uint64(a.memoryCapacity),
	}))
	return cg, nil
}
