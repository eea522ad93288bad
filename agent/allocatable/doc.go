// Package allocatable is node allocatable, as the kubelet computes and
// enforces it: what the node offers pods once --kube-reserved,
// --system-reserved and the hard eviction thresholds are set aside, the
// limits of the cgroup holding every pod (--enforce-node-allocatable), and
// the admission check that refuses a pod whose requests do not fit
// (OutOfcpu, OutOfmemory, OutOfephemeral-storage).
//
//	capacity     cpu, memory, ephemeral-storage (the root dir's
//	             filesystem) and pid (min(pid_max, threads-max))
//	allocatable  capacity - kube-reserved - system-reserved - hard
//	             eviction thresholds (memory.available for memory,
//	             nodefs.available for ephemeral-storage); the Node's
//	             status.allocatable, what downwardAPI limits default to
//	pods cgroup  with "pods" enforced: cpu shares of allocatable cpu, a
//	             memory limit of capacity - reserved (not the eviction
//	             threshold: eviction acts first) and, when pid is
//	             reserved, a pids limit; without it, cpu shares of the
//	             capacity and no limit
//
// Data enters as the machine's capacity, the reservations (ParseReserved)
// and the eviction thresholds; it leaves as ResourceLists and an
// admission handler (Fit). Nothing here does I/O.
package allocatable
