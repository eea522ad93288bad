package agent

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/admission"
	"github.com/minikubelet/minikubelet/agent/allocatable"
	"github.com/minikubelet/minikubelet/agent/config"
	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/machine"
	"github.com/minikubelet/minikubelet/cgroups"
)

// nodeAllocatable is node allocatable's inputs: the machine's capacity
// (its cpus, memory, root dir's filesystem and task limit), the
// reservations and the hard eviction thresholds.
func nodeAllocatable(cfg config.Config, memoryCapacity int64) (allocatable.Config, error) {
	kube, err := allocatable.ParseReserved(cfg.KubeReserved)
	if err != nil {
		return allocatable.Config{}, fmt.Errorf("--kube-reserved: %w", err)
	}
	system, err := allocatable.ParseReserved(cfg.SystemReserved)
	if err != nil {
		return allocatable.Config{}, fmt.Errorf("--system-reserved: %w", err)
	}
	thresholds, err := eviction.ParseThresholds(cfg.EvictionSettings(cfg.EnforcePods()))
	if err != nil {
		return allocatable.Config{}, err
	}
	capacity := machine.Capacity(cfg.RootDir, memoryCapacity)
	if pids := machine.PIDCapacity(); pids > 0 {
		capacity[allocatable.ResourcePID] = *resource.NewQuantity(pids, resource.DecimalSI)
	}
	return allocatable.Config{Capacity: capacity, KubeReserved: kube, SystemReserved: system, HardEviction: thresholds}, nil
}

// enforceAllocatable writes node allocatable's limits as
// --enforce-node-allocatable says, as the kubelet's
// enforceNodeAllocatableCgroups: the pods cgroup always gets its cpu
// shares (of allocatable with "pods", of the capacity without), and with
// "pods" its memory and pids limits; a reserved cgroup named by an
// enforcement gets its reservation. A pods limit the kernel refuses (the
// pods use more memory now) is logged, and eviction brings their use
// down; a reserved cgroup that cannot be limited (it does not exist)
// stops the start, as with the kubelet.
func enforceAllocatable(ctx context.Context, cfg config.Config, cg *cgroups.Manager, na allocatable.Config) error {
	logger := klog.FromContext(ctx)
	enforcePods := cfg.EnforcePods()
	pods := limitsOf(na.PodsLimits(enforcePods))
	if err := cg.SetPodsLimits(ctx, pods); err != nil {
		logger.Error(err, "Setting node allocatable's limits on the pods cgroup failed; pods may use more than allocatable until eviction brings them down", "cgroup", cg.PodsCgroup())
	} else {
		logger.Info("Node allocatable enforced", "cgroup", cg.PodsCgroup(), "enforcePods", enforcePods, "cpuShares", pods.CPUShares, "memoryLimit", pods.Memory, "pidsLimit", pods.Pids)
	}
	for _, r := range []struct {
		levels   []string
		cgroup   string
		reserved v1.ResourceList
	}{
		{[]string{config.EnforceKubeReserved, config.EnforceKubeReservedCompressible}, cfg.KubeReservedCgroup, na.KubeReserved},
		{[]string{config.EnforceSystemReserved, config.EnforceSystemReservedCompress}, cfg.SystemReservedCgroup, na.SystemReserved},
	} {
		full, compressible := slices.Contains(cfg.EnforceNodeAllocatable, r.levels[0]), slices.Contains(cfg.EnforceNodeAllocatable, r.levels[1])
		if !full && !compressible {
			continue
		}
		if err := cg.LimitReserved(ctx, r.cgroup, limitsOf(r.reserved), compressible); err != nil {
			return fmt.Errorf("--enforce-node-allocatable=%s: %w", r.levels[0], err)
		}
		logger.Info("Reservation enforced", "cgroup", r.cgroup, "reserved", r.reserved, "cpuOnly", compressible)
	}
	return nil
}

// resultOf makes an admit handler (agent/admission) of a check that says
// ok, or the reason and message of its refusal.
func resultOf(check func(pod *v1.Pod, others []*v1.Pod) (ok bool, reason, message string)) admission.Handler {
	return func(pod *v1.Pod, others []*v1.Pod) admission.Result {
		ok, reason, msg := check(pod, others)
		return admission.Result{Admit: ok, Reason: reason, Message: msg}
	}
}

// limitsOf turns a ResourceList into cgroup limits.
func limitsOf(rl v1.ResourceList) cgroups.Limits {
	l := cgroups.Limits{Memory: rl.Memory().Value(), Pids: rl.Name(allocatable.ResourcePID, resource.DecimalSI).Value()}
	if cpu, ok := rl[v1.ResourceCPU]; ok {
		l.CPUShares = cgroups.MilliCPUToShares(cpu.MilliValue())
	}
	return l
}
