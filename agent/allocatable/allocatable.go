package allocatable

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/agent/eviction"
)

// ResourcePID is the pid resource that --kube-reserved and
// --system-reserved may reserve, as the kubelet's pidlimit.PIDs.
const ResourcePID v1.ResourceName = "pid"

// ParseReserved parses --kube-reserved or --system-reserved: resource to
// quantity, for cpu, memory, ephemeral-storage and pid. Its errors name
// the resource.
func ParseReserved(m map[string]string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		name := v1.ResourceName(strings.TrimSpace(k))
		switch name {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, ResourcePID:
		default:
			errs = append(errs, fmt.Errorf("%q cannot be reserved: want cpu, memory, ephemeral-storage or pid", k))
			continue
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(m[k]))
		if err != nil || q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a quantity such as 100m, 1Gi or 1000", k, m[k]))
			continue
		}
		out[name] = q
	}
	return out, errors.Join(errs...)
}

// Config is node allocatable's inputs.
type Config struct {
	// Capacity is the machine's: cpu, memory, ephemeral-storage and pid.
	Capacity v1.ResourceList
	// KubeReserved and SystemReserved are --kube-reserved and
	// --system-reserved.
	KubeReserved, SystemReserved v1.ResourceList
	// HardEviction are the hard eviction thresholds: memory.available's
	// and nodefs.available's are set aside too.
	HardEviction []eviction.Threshold
}

// Allocatable is what the node offers pods: capacity less the
// reservations and the hard eviction thresholds, never below zero, for
// cpu, memory and ephemeral-storage (the Node reports no pid).
func (c Config) Allocatable() v1.ResourceList {
	out := v1.ResourceList{}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		q, ok := c.Capacity[name]
		if !ok {
			continue
		}
		q = q.DeepCopy()
		q.Sub(c.reserved(name))
		if ev := c.evictionReserved(name); ev != nil {
			q.Sub(*ev)
		}
		if q.Sign() < 0 {
			q = *resource.NewQuantity(0, q.Format)
		}
		out[name] = q
	}
	return out
}

// PodsLimits is what the cgroup holding every pod is given, as the
// kubelet's enforceNodeAllocatableCgroups: with enforcePods, capacity
// less the reservations (cpu, memory, and pid when reserved); else the
// cpu capacity alone, so that pods' cpu shares are not starved.
func (c Config) PodsLimits(enforcePods bool) v1.ResourceList {
	out := v1.ResourceList{}
	if q, ok := c.Capacity[v1.ResourceCPU]; ok {
		out[v1.ResourceCPU] = q.DeepCopy()
	}
	if !enforcePods {
		return out
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, ResourcePID} {
		q, ok := c.Capacity[name]
		if r := c.reserved(name); !ok || (name == ResourcePID && r.IsZero()) {
			continue
		}
		q = q.DeepCopy()
		q.Sub(c.reserved(name))
		if q.Sign() <= 0 {
			continue
		}
		out[name] = q
	}
	return out
}

// reserved is the sum of the reservations of name.
func (c Config) reserved(name v1.ResourceName) resource.Quantity {
	var q resource.Quantity
	q.Add(c.KubeReserved[name])
	q.Add(c.SystemReserved[name])
	return q
}

// evictionReserved is what the hard eviction threshold of name's signal
// sets aside, as the kubelet's hardEvictionReservation; nil without one.
func (c Config) evictionReserved(name v1.ResourceName) *resource.Quantity {
	signal := eviction.SignalMemoryAvailable
	if name == v1.ResourceEphemeralStorage {
		signal = eviction.SignalNodeFsAvailable
	} else if name != v1.ResourceMemory {
		return nil
	}
	capacity := c.Capacity[name]
	for _, t := range c.HardEviction {
		if t.Signal == signal && t.GracePeriod == 0 {
			q := t.Value.Amount(capacity.Value())
			return &q
		}
	}
	return nil
}
