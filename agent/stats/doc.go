// Package stats serves the resource usage of the node and of the pods the
// agent runs: GET /stats/summary in the kubelet's Summary API shape
// (k8s.io/kubelet/pkg/apis/stats/v1alpha1) and GET /metrics/cadvisor under
// the metric names and labels of cAdvisor, which the kubelet serves and
// dashboards read.
//
// Data enters through the Config's interfaces: the pods to report, each
// with its cgroup and its running containers' (PodLister reads them from
// the agent's pods, the PLEG cache and the cgroup manager), and a cgroup reader (cgroups.Manager) for cpu, memory,
// pids and block I/O. A pod's network figures come from
// /proc/<pid>/net/dev of one of its processes, which sees the pod's
// network namespace; the same file of procfs gives the node's. Data leaves
// as JSON and Prometheus text, from one snapshot shared by every request
// within Config.MaxAge.
//
// Departures from the kubelet: no filesystem (rootfs, logs, volumes,
// ephemeral storage) or PSI figures; the node's system containers list
// only "pods"; pod figures are read from the pod's cgroup, so that they
// include its sandbox's pause process; page faults are counted over the
// cgroup's whole hierarchy; a host-network pod reports no network; the
// pause container gets no series of its own on /metrics/cadvisor; block
// I/O is on /metrics/cadvisor only (the Summary API has no field for it).
package stats
