package podworkers

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cgroups"
)

// linuxResources converts a container's requests and limits into CRI
// resources as the kubelet does: cpu shares from the cpu request (or from
// the cpu limit when no request is given), a CFS quota from the cpu limit
// over a 100ms period, the memory limit, and hugepage limits.
//
// oomScoreAdj is the kubelet's, from the pod's QoS class
// (qos.OOMScoreAdj); on hosts without CAP_SYS_RESOURCE containerd's
// restrict_oom_score_adj raises a value below its own to its own.
func linuxResources(c *v1.Container, oomScoreAdj int64) *runtimeapi.LinuxContainerResources {
	cpuLimit := c.Resources.Limits.Cpu().MilliValue()
	var shares int64
	if req, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
		shares = int64(cgroups.MilliCPUToShares(req.MilliValue()))
	} else {
		// The API server defaults a missing request to the limit; the
		// kubelet repeats it for pods that did not pass through one.
		shares = int64(cgroups.MilliCPUToShares(cpuLimit))
	}
	return &runtimeapi.LinuxContainerResources{
		CpuShares:          shares,
		CpuPeriod:          cgroups.QuotaPeriod,
		CpuQuota:           cgroups.MilliCPUToQuota(cpuLimit, cgroups.QuotaPeriod),
		MemoryLimitInBytes: c.Resources.Limits.Memory().Value(),
		HugepageLimits:     hugepageLimits(c.Resources.Limits),
		OomScoreAdj:        oomScoreAdj,
	}
}

// hugepageLimits returns a limit per hugepages-<size> resource in limits,
// its page size written as runc expects it ("2MB", "1GB"), sorted by size.
// Unlike the kubelet it does not add a zero limit for every other page
// size the machine has (read from sysfs): that would make every container
// depend on the hugetlb controller, which hosts of this project's kind do
// not mount; only the pods that ask for hugepages should. A name that
// does not parse is skipped, as the kubelet skips it.
func hugepageLimits(limits v1.ResourceList) []*runtimeapi.HugepageLimit {
	type limit struct {
		size int64
		hl   *runtimeapi.HugepageLimit
	}
	var out []limit
	for name, q := range limits {
		sizeStr, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		size, err := resource.ParseQuantity(sizeStr)
		if err != nil || size.Value() <= 0 {
			continue
		}
		pageSize, err := hugePageUnitSize(size.Value())
		if err != nil {
			continue
		}
		out = append(out, limit{size.Value(), &runtimeapi.HugepageLimit{PageSize: pageSize, Limit: uint64(q.Value())}})
	}
	if len(out) == 0 {
		return nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].size < out[j].size })
	hls := make([]*runtimeapi.HugepageLimit, len(out))
	for i, l := range out {
		hls[i] = l.hl
	}
	return hls
}

// hugePageUnitSize writes a page size in bytes in the largest unit that
// divides it, as v1helper.HugePageUnitSizeFromByteSize: 2097152 is "2MB".
func hugePageUnitSize(size int64) (string, error) {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for size%1024 == 0 && i < len(units)-1 {
		size /= 1024
		i++
	}
	if size > 1024 && i < len(units)-1 {
		return "", fmt.Errorf("hugepage size %d%s is not a whole number of the largest unit", size, units[i])
	}
	return fmt.Sprintf("%d%s", size, units[i]), nil
}
