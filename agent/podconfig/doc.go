// Package podconfig merges the pod sets its sources send into the operations
// the agent's syncLoop dispatches, as the kubelet's pkg/kubelet/config does.
//
// Data enters as sources.Update values on one channel: each is the complete
// set of one source's pods plus the manifests that source currently refuses.
// The Merger keeps, per source, the last set it saw, keyed by pod UID, and
// leaves as PodUpdate values on one channel, per Update in the order
// REMOVE, ADD, UPDATE, DELETE, RECONCILE, each only when it has pods:
//
//	new UID                                               -> ADD
//	spec, labels, annotations (but config.seen),
//	  generation or deletion fields changed                -> UPDATE
//	  ... and deletionTimestamp newly set                  -> DELETE
//	only status changed                                    -> RECONCILE
//	UID no longer in the set                               -> REMOVE
//	nothing the node acts on changed                       -> nothing
//
// Between Updates, Pods, Errors and AllSourcesSeen report the merged state
// to any goroutine. Sources are merged independently: a pod is identified by
// its source and UID, and one source's Update never changes another's pods,
// with one exception. At most one pod of a full name (namespace/name) runs:
// when two sources (or two pods of one source) define the same full name,
// the first one seen keeps running and the later one is refused, reported in
// Errors as a *ConflictError (Origin: the full name) and logged once. When
// the first one goes away, the refused one is admitted at once: the Update
// that removed the first also yields the ADD of the other source's pod.
//
// The merger does not know which file or URL a pod came from (a
// sources.Update carries one source name for all its pods), so a conflict
// names the two sources and UIDs.
package podconfig
