// Package housekeeping cleans up after pods the node no longer runs: what
// a pod's own worker did not remove because the agent was down, crashed
// or failed at the time.
//
//   - Orphans finds the pods the runtime runs for this node that no
//     source wants any more; the syncLoop hands them to workers to
//     terminate.
//   - PodDirs removes the directories and mounts under <root-dir>/pods and
//     the log directories under --pod-logs-dir of pods not in use, in a
//     goroutine of its own, when the syncLoop requests it.
//   - Cgroups removes the cgroups of pods not in use, periodically.
//
// Data enters through small interfaces over the agent's state (the
// sources' pods, the pod workers, the PLEG cache, the merge), combined in
// Usage, which says which pods the node still uses. It leaves as pods to
// terminate (Orphans) and as removals on disk and in the cgroup tree.
// Nothing here calls the runtime.
package housekeeping
