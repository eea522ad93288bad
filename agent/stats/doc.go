// Package stats serves the resource usage of the node and of the pods the
// agent runs: GET /stats/summary in the kubelet's Summary API shape
// (k8s.io/kubelet/pkg/apis/stats/v1alpha1) and GET /metrics/cadvisor under
// the metric names and labels of cAdvisor, which the kubelet serves and
// dashboards read.
//
// Data enters through the Config's interfaces: the pods to report, each
// with its cgroup, its sandbox's and its running containers' (PodLister
// reads them from the agent's pods, the PLEG cache and the cgroup
// manager), and a cgroup reader (cgroups.Manager, and cgroups.StatsFiles,
// which keeps the statistics files open between reads) for cpu, memory,
// pids and block I/O. A pod's network figures come from
// /proc/<pid>/net/dev of one of its processes (its sandbox's when it can,
// whose file is kept open), which sees the pod's network namespace; the
// same file of procfs gives the node's. Files kept open between reads are
// closed with their pod, and all of them once nothing has read for a
// minute (Run), so that a pod gone holds no kernel object for longer. Data leaves as JSON (Summary) and the Prometheus text format
// 0.0.4, written directly (promtext.go).
//
// What is read, and how often: each request reads only what it serves (a
// need): /metrics/resource and only_cpu_and_memory the cpu and memory
// files of each cgroup (3 on v1 and v2), the Summary those, the memory
// limit and the pods' processes and network, /metrics/cadvisor every cgroup figure and the network. A
// snapshot records what it holds and is shared by every request within
// Config.MaxAge that needs no more; a CPU rate spans at least MaxAge.
// Slower figures are read at most every Config.FsMaxAge: the runtime's
// filesystems (image filesystem, writable layers; refreshed in the
// background by Run, so that no request waits for the runtime), the pods'
// log and volume directories, and the cgroups' limits and cpu spec
// (memory and pids limits, cpu shares, quota and period: a change, such
// as an in-place resize, shows within FsMaxAge; cAdvisor's spec is up to
// 5 s old, and its statistics up to its housekeeping interval, 10-15 s in
// the kubelet).
//
// Idle cgroups cost less: a cgroup whose CPU usage reads as at its last
// read has run no task since, and the figures that move only while its
// tasks run are taken from its last read of them from the files, for up
// to a minute after it (keptFor): on /metrics/cadvisor OOM kills, the
// pids count and on v1 the CPU time by mode, block I/O and, once idle for
// 3 s, the CFS counters (cgroups.StatsFiles.ReadStatsAfter); on the
// Summary a pod's process count. Memory, which reclaim moves without the
// cgroup's tasks, is read each time. On this project's hosts a cgroup
// file costs some 4 us a read, most of it the system call's, and a pod
// that sleeps between two scrapes (its pause process, most sidecars) is
// read in 3 files a cgroup instead of 8 or 9.
//
// The Summary has the node's rlimit (min(pid_max, threads-max) and the
// tasks of /proc/loadavg), which pid.available is computed from.
//
// Departures from the kubelet: no PSI figures; /metrics/cadvisor's root
// cgroup has the filesystem of the root dir only (cAdvisor lists every
// filesystem of the host there) and no container_fs_* I/O time series;
// the node's system containers list
// only "pods"; pod figures are read from the pod's cgroup, so that they
// include its sandbox's pause process; page faults are counted over the
// cgroup's whole hierarchy; a host-network pod reports no network; the
// pause container gets no series of its own on /metrics/cadvisor; block
// I/O is on /metrics/cadvisor only (the Summary API has no field for it).
package stats
