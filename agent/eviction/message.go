package eviction

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Reason is the reason of an evicted pod's status, of its event and of a
// pod refused at admission under pressure, as the kubelet's.
const Reason = "Evicted"

// The kubelet's messages (pkg/kubelet/eviction/helpers.go).
const (
	nodeLowMessageFmt                   = "The node was low on resource: %v. "
	nodeConditionMessageFmt             = "The node had condition: %v. "
	thresholdMetMessageFmt              = "Threshold quantity: %v, available: %v. "
	containerMessageFmt                 = "Container %s was using %s, request is %s, has larger consumption of %v. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
)

// The keys of an eviction event's annotations, as the kubelet's.
const (
	annotationOffendingContainers      = "offending_containers"
	annotationOffendingContainersUsage = "offending_containers_usage"
	annotationStarvedResource          = "starved_resource"
)

// evictionMessage says why pod is evicted to reclaim resourceName: the
// resource, the threshold met and what was available, and each container
// using more than it requests, with what it uses; and the event's
// annotations, as the kubelet's evictionMessage.
func evictionMessage(resourceName v1.ResourceName, pod *v1.Pod, stats statsFunc, met []Threshold, obs observations) (string, map[string]string) {
	var b strings.Builder
	annotations := map[string]string{}
	fmt.Fprintf(&b, nodeLowMessageFmt, resourceName)
	for _, t := range met {
		o, ok := obs[t.Signal]
		if signalResource[t.Signal] != resourceName || !ok {
			continue
		}
		q, avail := t.Value.Amount(o.capacity), o.availableQuantity()
		fmt.Fprintf(&b, thresholdMetMessageFmt, &q, &avail)
		break
	}
	s, ok := stats(pod)
	if !ok {
		return b.String(), annotations
	}
	containers := append(append([]v1.Container(nil), pod.Spec.Containers...), pod.Spec.InitContainers...)
	var names, usages []string
	for _, cs := range s.Containers {
		for _, c := range containers {
			if c.Name != cs.Name {
				continue
			}
			request := c.Resources.Requests[resourceName]
			var usage *resource.Quantity
			switch resourceName {
			case v1.ResourceEphemeralStorage:
				if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil && cs.Logs != nil && cs.Logs.UsedBytes != nil {
					usage = resource.NewQuantity(int64(*cs.Rootfs.UsedBytes+*cs.Logs.UsedBytes), resource.BinarySI)
				}
			case v1.ResourceMemory:
				if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
					usage = resource.NewQuantity(int64(*cs.Memory.WorkingSetBytes), resource.BinarySI)
				}
			}
			if usage != nil && usage.Cmp(request) > 0 {
				fmt.Fprintf(&b, containerMessageFmt, c.Name, usage.String(), request.String(), resourceName)
				names = append(names, c.Name)
				usages = append(usages, usage.String())
			}
			break
		}
	}
	annotations[annotationOffendingContainers] = strings.Join(names, ",")
	annotations[annotationOffendingContainersUsage] = strings.Join(usages, ",")
	annotations[annotationStarvedResource] = string(resourceName)
	return b.String(), annotations
}
