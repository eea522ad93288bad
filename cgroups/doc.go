// Package cgroups owns what the agent knows about control groups: the QoS
// class of a pod (Guaranteed, Burstable, BestEffort, by the Kubernetes
// rules), and, as the node's resource side grows, the pod and QoS cgroups
// and the cpu, memory, pids and block I/O statistics read from them.
//
// Data enters as v1 pods; it leaves as a QoS class today, and later as
// cgroup parents handed to the runtime and stats handed to the agent's
// endpoints.
package cgroups
