package eviction

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// Op is what a Request asks of the syncLoop.
type Op int

// The requests' operations.
const (
	// OpEvict kills the pod with Request.GracePeriod: it ends with phase
	// Failed, reason Evicted and Request.Message, and its source's updates
	// do not start it again.
	OpEvict Op = iota
	// OpRestart starts again a static pod that was evicted.
	OpRestart
	// OpRetire removes what is left in the runtime of a pod that has
	// finished (phase Succeeded or Failed), keeping its last status: its
	// dead containers, their writable layers and logs.
	OpRetire
)

func (o Op) String() string {
	switch o {
	case OpRestart:
		return "restart"
	case OpRetire:
		return "retire"
	}
	return "evict"
}

// Request is what the manager asks of the agent's syncLoop, which alone
// hands work to the pods' workers (DESIGN.md rule 1). The syncLoop reads
// requests from Manager.Requests and answers each with Done.
type Request struct {
	Op  Op
	Pod *v1.Pod
	// GracePeriod is the grace period of OpEvict's kill, in seconds.
	GracePeriod int64
	// Message is OpEvict's status message.
	Message string
	// done carries the answer: capacity 1, made by the manager, written
	// once by Done.
	done chan bool
}

// Done answers the request: acted is false when the syncLoop did nothing
// (the pod is gone, or already ended). Call it exactly once.
func (r Request) Done(acted bool) {
	r.done <- acted
}

// NewRequest makes a request as the manager does, for tests of what
// answers it.
func NewRequest(op Op, pod *v1.Pod, grace int64, message string) Request {
	return Request{Op: op, Pod: pod, GracePeriod: grace, Message: message, done: make(chan bool, 1)}
}

// Answer returns the answer Done gave; false if none was given.
func (r Request) Answer() bool {
	select {
	case acted := <-r.done:
		return acted
	default:
		return false
	}
}

// ask sends r to the syncLoop and waits for its answer; false when ctx
// ends first.
func (m *Manager) ask(ctx context.Context, r Request) bool {
	r.done = make(chan bool, 1)
	select {
	case m.requests <- r:
	case <-ctx.Done():
		return false
	}
	select {
	case acted := <-r.done:
		return acted
	case <-ctx.Done():
		return false
	}
}
