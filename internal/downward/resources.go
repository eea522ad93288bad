package downward

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// defaultedLimits are the limits that read as the node's allocatable
// amount when a container does not set them (hugepages are never
// overcommitted, so they have no such default).
var defaultedLimits = [...]v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}

// resource is the value of a resourceFieldRef, as the kubelet computes it:
// the resource of the container ref names (of c when it names none; a
// regular or an init container), in units of the divisor (1 when unset),
// rounded up; cpu counts in millicores (250m with divisor 1 is "1"), the
// other resources in bytes. A limit the container does not set (or sets to
// 0) is the node's allocatable amount; a request it does not set is 0.
func (r *Resolver) resource(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName != "" {
		if c = kubecontainer.SpecOf(pod, ref.ContainerName); c == nil {
			return "", fmt.Errorf("resourceFieldRef %q: the pod has no container %q", ref.Resource, ref.ContainerName)
		}
	}
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef %q: containerName is required", ref.Resource)
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	rn := v1.ResourceName(name)
	var q resource.Quantity
	switch kind {
	case "limits":
		q = r.limit(c, rn)
	case "requests":
		q = c.Resources.Requests[rn]
	default:
		return "", fmt.Errorf("resourceFieldRef %q is not supported: use limits.<name> or requests.<name>", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	var amount, unit int64
	switch {
	case rn == v1.ResourceCPU:
		amount, unit = q.MilliValue(), divisor.MilliValue()
	case rn == v1.ResourceMemory, rn == v1.ResourceEphemeralStorage, strings.HasPrefix(name, v1.ResourceHugePagesPrefix):
		amount, unit = q.Value(), divisor.Value()
	default:
		return "", fmt.Errorf("resourceFieldRef %q is not supported: use cpu, memory, ephemeral-storage or hugepages-<size>", ref.Resource)
	}
	if unit <= 0 {
		return "", fmt.Errorf("resourceFieldRef %q: divisor %s is not a positive amount of %s", ref.Resource, divisor.String(), name)
	}
	return strconv.FormatInt(ceilDiv(amount, unit), 10), nil
}

// limit is c's limit of rn, or the node's allocatable amount when c sets
// none (or 0) and rn is one the kubelet defaults.
func (r *Resolver) limit(c *v1.Container, rn v1.ResourceName) resource.Quantity {
	if q, ok := c.Resources.Limits[rn]; ok && !q.IsZero() {
		return q
	}
	for _, d := range defaultedLimits {
		if d == rn {
			return r.Allocatable[rn]
		}
	}
	return resource.Quantity{}
}

// ceilDiv is a/b rounded towards positive infinity, for b > 0, without
// the overflow of (a+b-1)/b.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}
