// Package cgroups owns what the agent knows about control groups: the pod
// and QoS cgroups (created, limited, removed; a pod's QoS class comes from
// internal/qos) and the cpu, memory, pids and block I/O statistics read
// from cgroups. It drives the kernel through
// github.com/containerd/cgroups/v3, on cgroup v1, hybrid (v1 controllers
// with a v2 mount beside them, driven as v1) and v2 hosts.
//
// # Layout
//
// With --cgroups-per-qos (Config.PerQOS, the default) the agent makes the
// kubelet's tree below --cgroup-root (Config.Root):
//
//	<root>/kubepods                     Guaranteed pods; node allocatable's limits (SetPodsLimits)
//	<root>/kubepods/pod<uid>            a Guaranteed pod
//	<root>/kubepods/burstable           cpu.shares = sum of its pods' cpu requests
//	<root>/kubepods/burstable/pod<uid>
//	<root>/kubepods/besteffort          cpu.shares = 2
//	<root>/kubepods/besteffort/pod<uid>
//
// and each pod's sandbox gets its pod cgroup as CRI cgroup parent
// (Manager.PodCgroupParent); containerd puts every container of the pod,
// the sandbox's pause container included, at <pod cgroup>/<container id>
// with the cgroupfs driver (confirmed on containerd 1.6 and 2.1 from the
// runtime spec's linux.cgroupsPath), and at
// <pod slice>/cri-containerd-<id>.scope with systemd. A pod cgroup is
// limited by PodResources (the kubelet's ResourceConfigForPod): cpu shares
// from the requests, a CFS quota and a memory limit from the limits where
// every container has one, and pids.max from --pod-max-pids
// (Config.PodPidsLimit). With the systemd driver the same tree is made
// of slices (kubepods.slice, kubepods-burstable.slice,
// kubepods-burstable-pod<uid with _ for ->.slice) through systemd's D-Bus
// API; it needs systemd as init and cgroup v2, and New refuses it
// elsewhere. The hosts this project is tested on run neither (PID 1 is not
// systemd), so the systemd driver is tested on its names only.
//
// Data enters as v1 pods (EnsurePod before the pod's sandbox is created,
// and at each sync so that an edited pod's limits follow; SetPod with a
// configuration of the caller's while a pod is resized in place, grown
// to hold the old and new limits before its containers change) and pod UIDs
// (RemovePod once the pod is terminated, Cleanup from housekeeping); it
// leaves as cgroup parents for the runtime, files in the cgroup
// hierarchies, and statistics: ReadStats (the figures asked for, each file
// opened and closed), StatsFiles (the same through files kept open between
// reads, for the stats endpoints' repeated reads) and WalkProcs (also
// through StatsFiles, relative to directories kept open).
//
// # Invariants
//
//   - A cgroup that holds a process is never removed: RemovePod and
//     Cleanup leave it and report errdefs.ErrFailedPrecondition, and the
//     caller tries again later. Only KillPodProcesses kills what is in a
//     pod's cgroups, for a pod the runtime holds nothing of any more. Removal covers every hierarchy mounted
//     (on a hybrid host, the v2 one where runc also makes cgroups),
//     deepest first.
//   - The manager writes only below Config.Root.
//
// # Block I/O accounting on cgroup v1 (measured on this project's hosts)
//
// On Linux 6.10 and later the v1 blkio controller keeps the per-cgroup
// counters that cAdvisor and the kubelet read
// (blkio.throttle.io_service_bytes and io_serviced) only for disks on
// which block throttling has been set up, which the kernel now does only
// when a throttle rule is first written for the disk. Measured on kernel
// 6.18 (Debian 12, virtio disk vda 254:0, scheduler mq-deadline):
//
//   - dd of 20 MiB with oflag=direct in a fresh blkio cgroup: the cgroup's
//     blkio.throttle.io_service_bytes reads "Total 0", while the writer's
//     /proc/<pid>/io says write_bytes 20979712. The blkio.bfq.* files stay
//     0 too (they count only under the bfq scheduler).
//   - On a loop device (7:0), so as to leave the host's disks alone:
//     the same dd read 0 before any rule; after writing "7:0 0" to
//     blkio.throttle.write_bps_device of a parent cgroup (0 means no
//     limit; the rule is not even listed afterwards), 8 MiB of direct
//     writes and 4 MiB of direct reads read exactly "7:0 Write 8388608"
//     and "7:0 Read 4194304" (16 and 8 operations). From then on every
//     cgroup on that disk counts, including cgroups outside the one the
//     rule was written to and cgroups made after every experiment cgroup
//     was removed: the switch is per disk and stays on until the disk goes
//     away (or a reboot). The _recursive files of a parent sum its
//     children.
//   - Buffered writes are charged to the writing cgroup only when the
//     writer itself flushes them (dd conv=fsync: 8 MiB counted); written
//     back later by the kernel's flusher threads they count nowhere in the
//     container (cgroup v1 has no writeback accounting). Cold buffered
//     reads are counted.
//   - /proc/<pid>/io counts per process, with no device and no operation
//     count; a reaped child's bytes move into its parent's figure, and are
//     lost when the parent is outside the cgroup (an exec'd process, an
//     orphan reparented to the shim) or when the process that holds them
//     exits: summed over a cgroup's processes it can go down, which a
//     Prometheus counter must not.
//
// The design: with Config.BlkioAccounting (--cgroup-v1-blkio-accounting,
// default true) the manager, on cgroup v1 only, writes "MAJ:MIN 0" to
// blkio.throttle.read_bps_device of the cgroup holding every pod
// (<root>/kubepods, or the root without PerQOS) for each whole disk of
// /sys/block with a non-zero size, at start and whenever it creates a pod
// cgroup (so a disk attached later is picked up); each disk is written
// once and logged. Stats then reads the recursive throttle files, which
// for a pod's cgroup sum its containers (the non-recursive files that
// containerd/cgroups reads stay 0 for a pod: its own cgroup holds no
// process). The default is on because without it the block I/O figures of
// /metrics/cadvisor read 0 on every modern kernel with cgroup v1, silently;
// the rule limits nothing; the state it turns on is the one every kernel
// before 6.10 was always in; and its cost is the throttle layer's per-bio
// lookup, which finds no limit. What it changes beyond the agent's own
// cgroups: the accounting is on for the whole disk, for every cgroup, until
// the disk is removed or the host reboots, and it cannot be turned off;
// whoever must not have that sets the flag to false and gets zeros.
// /proc/<pid>/io was rejected as a source for the reasons measured above.
// cgroup v2's io.stat has none of these limits and is read as it is.
package cgroups
