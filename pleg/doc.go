// Package pleg is the pod lifecycle event generator: it watches the container
// runtime and tells the agent which pods changed, and it owns the pod status
// cache that pod workers sync against.
//
// Generic relists the runtime every period (one ListPodSandbox and one
// ListContainers call), diffs against the previous relist, refreshes the
// cache entry of every pod that changed and emits one event per change on
// the channel Watch returns.
//
// Data enters from the runtime (CRI list and status calls) and from pod
// workers, which write the status they read right after acting on a pod
// (Cache.Set); it leaves as events (Watch) and as cached statuses
// (Cache.GetNewerThan). Invariant (DESIGN.md rule 3): a cache entry is only
// ever replaced by a status with a newer timestamp, so a worker never syncs
// against a state older than one it has already seen.
package pleg
