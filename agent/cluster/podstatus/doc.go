// Package podstatus writes the status of the node's pods to the apiserver,
// and does the final delete of pods deleted in the API once they are gone
// from the node: the apiserver half of the kubelet's status manager.
//
// Data enters through Syncer.Notify (the agent's status manager calls it,
// by pod UID, whenever it stores a new status) and through a periodic
// resync of every pod of the node; it leaves as PATCHes of pods' status
// subresource and DELETEs with grace period 0. A pod's status is patched
// with a strategic merge patch of only the fields that changed, computed
// against the pod as the informer last saw it; conditions the agent does
// not own (set by others) are kept. A static pod's status goes to its
// mirror pod. Work goes through a rate-limited work queue, one pod at a
// time per pod; a failed patch or delete is retried with per-pod
// exponential back-off (200ms to 30s), and the periodic resync catches up
// everything after the apiserver was unreachable.
package podstatus
