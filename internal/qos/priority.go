package qos

import v1 "k8s.io/api/core/v1"

// The scheduling API's system priority classes and their values
// (scheduling.SystemClusterCritical, SystemNodeCritical).
const (
	SystemClusterCritical = "system-cluster-critical"
	SystemNodeCritical    = "system-node-critical"
	// SystemCriticalPriority is the lowest priority of a system-critical
	// pod (scheduling.SystemCriticalPriority).
	SystemCriticalPriority = int32(criticalPriority)
	// systemNodeCriticalPriority is system-node-critical's value.
	systemNodeCriticalPriority = SystemCriticalPriority + 1000
)

// Priority is the pod's scheduling priority: spec.priority, which an API
// server's admission resolves from spec.priorityClassName; for a pod none
// resolved (a static pod) the value of the system class it names, else 0.
func Priority(pod *v1.Pod) int32 {
	if p := pod.Spec.Priority; p != nil {
		return *p
	}
	switch pod.Spec.PriorityClassName {
	case SystemNodeCritical:
		return systemNodeCriticalPriority
	case SystemClusterCritical:
		return SystemCriticalPriority
	}
	return 0
}

// IsCriticalPriority reports whether the pod is critical by its priority
// (the kubelet's IsCriticalPodBasedOnPriority), by value or by the system
// class it names: the node's eviction and shutdown treat such pods last or
// never.
func IsCriticalPriority(pod *v1.Pod) bool {
	return Priority(pod) >= SystemCriticalPriority
}
