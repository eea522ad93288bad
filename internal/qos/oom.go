package qos

import (
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// The kubelet's OOM score adjustments (pkg/kubelet/qos/policy.go).
const (
	guaranteedOOMScoreAdj = -997
	bestEffortOOMScoreAdj = 1000
	// systemNodeCritical is the priority class of pods the node needs.
	systemNodeCritical = "system-node-critical"
	// criticalPriority is the lowest priority of system-critical pods
	// (scheduling.SystemCriticalPriority).
	criticalPriority = 2000000000
)

// OOMScoreAdj is the oom_score_adj of a container, by the kubelet's rules:
// node-critical pods and Guaranteed pods -997, BestEffort pods 1000, and a
// Burstable container 1000 - 1000*memoryRequest/memoryCapacity, clamped to
// [3, 999] so that it always ranks between the two; a sidecar gets no more
// than the pod's regular container with the smallest memory request.
// memoryCapacity is the node's memory in bytes; with 0 the Burstable rule
// cannot be applied and 999 is returned.
//
// The runtime may raise a value below its own adjustment (containerd's
// restrict_oom_score_adj, which hosts without CAP_SYS_RESOURCE need).
func OOMScoreAdj(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int {
	if isNodeCritical(pod) {
		return guaranteedOOMScoreAdj
	}
	switch Class(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return bestEffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return bestEffortOOMScoreAdj - 1
	}
	adj := burstableAdj(memoryRequest(c), memoryCapacity)
	if isSidecarOf(pod, c) {
		if least := leastRegularMemoryRequest(pod); least > 0 {
			adj = min(adj, burstableAdj(least, memoryCapacity))
		}
	}
	// A Guaranteed pod using all the memory can score 3; Burstable
	// containers must score above it, and below BestEffort ones.
	switch {
	case adj < 1000+guaranteedOOMScoreAdj:
		return 1000 + guaranteedOOMScoreAdj
	case adj >= bestEffortOOMScoreAdj:
		return bestEffortOOMScoreAdj - 1
	}
	return int(adj)
}

func burstableAdj(memoryRequest, memoryCapacity int64) int64 {
	return 1000 - (1000*memoryRequest)/memoryCapacity
}

// isNodeCritical is the kubelet's IsNodeCriticalPod: a critical pod (static,
// or of system-critical priority) of priority class system-node-critical.
func isNodeCritical(pod *v1.Pod) bool {
	if pod.Spec.PriorityClassName != systemNodeCritical {
		return false
	}
	// kubernetes.io/config.source: "api" for pods of the API server, a
	// file or URL source for static pods.
	if src := kubecontainer.PodSource(pod); src != "" && src != "api" {
		return true // a static pod
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= criticalPriority
}

func isSidecarOf(pod *v1.Pod, c *v1.Container) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return kubecontainer.IsSidecar(&pod.Spec.InitContainers[i])
		}
	}
	return false
}

// leastRegularMemoryRequest is the smallest memory request among the pod's
// regular containers; 0 when one of them has none.
func leastRegularMemoryRequest(pod *v1.Pod) int64 {
	var least int64
	for i := range pod.Spec.Containers {
		r := memoryRequest(&pod.Spec.Containers[i])
		if r == 0 {
			return 0
		}
		if least == 0 || r < least {
			least = r
		}
	}
	return least
}

// memoryRequest is c's memory request in bytes: its limit when it sets no
// request (as the API server defaults it), 0 when it sets neither.
func memoryRequest(c *v1.Container) int64 {
	q, ok := c.Resources.Requests[v1.ResourceMemory]
	if !ok {
		q = c.Resources.Limits[v1.ResourceMemory]
	}
	return q.Value()
}
