// Package pleg is the pod lifecycle event generator: it watches the container
// runtime and tells the agent which pods changed, and it owns the pod status
// cache that pod workers sync against.
//
// Generic relists the runtime every period (one ListPodSandbox and one
// ListContainers call), diffs against the previous relist, refreshes the
// cache entry of every pod that changed (asking the runtime only about the
// sandboxes and containers whose state changed) and emits one event per
// change on the channel Watch returns.
//
// Evented consumes the runtime's CRI event stream (GetContainerEvents): each
// event's sandbox and container statuses are merged into the pod's cache
// entry, stamped with the event's own time, and an event is emitted at once.
// It drives a Generic for a slow safety-net relist (containerd 1.7 shares one
// event stream among subscribers, so events can be stolen), relists after
// every reconnect, and relists at the normal period while the stream is down
// or has failed five times in a row; a runtime that does not serve events
// (containerd 1.6) gets plain relisting. All relists and event handling run
// on one goroutine.
//
// Data enters from the runtime (CRI list, status and event calls) and from
// pod workers, which write the status they read right after acting on a pod
// (Cache.Set); it leaves as events (Watch) and as cached statuses
// (Cache.GetNewerThan). Invariant (DESIGN.md rule 3): a cache entry is only
// ever replaced by a status with a newer timestamp, so a worker never syncs
// against a state older than one it has already seen; and before the
// runtime was observed at all, GetNewerThan waits.
package pleg
