// Package qos holds the kubelet's quality-of-service rules for pods: a
// pod's QoS class (Guaranteed, Burstable, BestEffort) from its containers'
// requests and limits, a container's OOM score adjustment from its pod's
// class, its memory request and the node's memory, and a pod's priority
// and whether it is critical by it (the system priority classes resolved
// by name for static pods).
//
// Data enters as a v1 Pod (and the node's memory capacity) and leaves as a
// class or a score; nothing here does I/O. The cgroups package puts pods
// in the QoS cgroup of their class, the pod worker gives containers their
// score, and the status reports the class.
package qos
