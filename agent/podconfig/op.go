package podconfig

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Op is what the syncLoop does with the pods of a PodUpdate.
type Op int

// The operations, as the kubelet names them. The zero Op is not valid.
const (
	// ADD: pods the source did not have before; start them.
	ADD Op = iota + 1
	// UPDATE: pods whose spec, labels, annotations, generation or deletion
	// fields changed; the PodUpdate carries the new objects.
	UPDATE
	// DELETE: pods whose deletionTimestamp was newly set; terminate them
	// gracefully within their deletion grace period.
	DELETE
	// REMOVE: pods the source no longer has; the PodUpdate carries the last
	// object the source sent. Terminate them and forget them.
	REMOVE
	// RECONCILE: pods of which only the status changed; the node is the
	// source of truth for status, so it only reconciles.
	RECONCILE
)

func (o Op) String() string {
	switch o {
	case ADD:
		return "ADD"
	case UPDATE:
		return "UPDATE"
	case DELETE:
		return "DELETE"
	case REMOVE:
		return "REMOVE"
	case RECONCILE:
		return "RECONCILE"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// PodUpdate is one operation on some pods of one source.
//
// Pods is never empty. The pods are shared with the Merger and with other
// PodUpdates: receivers must treat them as read-only (DeepCopy to change
// one).
type PodUpdate struct {
	Op     Op
	Source string
	Pods   []*v1.Pod
}
