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
// its source and UID, and one source's Update never touches another's pods.
package podconfig
