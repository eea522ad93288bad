package main

import (
	"context"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestStartWatchStampsAppContainerOnly(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	w := &startWatch{waiting: map[watchKey]chan time.Time{}, stop: stop, done: make(chan struct{})}
	events := make(chan *runtimeapi.ContainerEventResponse)
	go w.follow(ctx, events)
	defer w.close()

	ev := func(typ runtimeapi.ContainerEventType, id, sandbox, pod string) *runtimeapi.ContainerEventResponse {
		return &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: typ,
			PodSandboxStatus: &runtimeapi.PodSandboxStatus{Id: sandbox, Metadata: &runtimeapi.PodSandboxMetadata{Name: pod}}}
	}
	a, b := w.expect("a"), w.expect("b")
	before := time.Now()
	events <- ev(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, "sa", "sa", "a") // a's sandbox
	events <- ev(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, "ca", "sa", "a") // created, not started
	events <- ev(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, "cx", "sx", "x") // a pod nobody awaits
	notStamped(t, a, "pod a, before its container started")
	events <- ev(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, "ca", "sa", "a")
	at, err := w.await("a", a, "CONTAINER_STARTED", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if at.Before(before) {
		t.Errorf("pod a stamped %v, before the events were sent (%v)", at, before)
	}
	// A stop is awaited on its own: a start of the same pod does not
	// stamp it, nor does the sandbox's own stop.
	stopped := w.expectEvent("a", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	events <- ev(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, "ca2", "sa", "a")
	events <- ev(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, "sa", "sa", "a")
	notStamped(t, stopped, "pod a's stop, by a start or the sandbox's stop")
	events <- ev(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, "ca2", "sa", "a")
	if _, err := w.await("a", stopped, "CONTAINER_STOPPED", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	w.forget("b")
	events <- ev(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, "cb", "sb", "b")
	// follow has taken the event (the channel is unbuffered) and b was
	// forgotten: nothing may arrive.
	w.mu.Lock()
	left := len(w.waiting)
	w.mu.Unlock()
	if left != 0 {
		t.Errorf("%d pods still awaited, want none", left)
	}
	notStamped(t, b, "forgotten pod b")
}

// notStamped fails the test if ch already holds a stamp.
func notStamped(t *testing.T, ch <-chan time.Time, what string) {
	t.Helper()
	select {
	case at := <-ch:
		t.Fatalf("%s: stamped at %v", what, at)
	default:
	}
}

func TestSplitAtContainerStart(t *testing.T) {
	w := &startWatch{waiting: map[watchKey]chan time.Time{}}
	created := time.Date(2026, 12, 7, 19, 0, 0, 0, time.UTC)
	running := created.Add(500 * time.Millisecond)

	started := w.expect("p")
	started2 := make(chan time.Time, 1)
	started2 <- created.Add(420 * time.Millisecond)
	toStarted, toRunning, err := split(w, "p", started2, running, running.Sub(created), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if toStarted != 420*time.Millisecond || toRunning != 80*time.Millisecond {
		t.Errorf("split 500ms at +420ms: got %v + %v, want 420ms + 80ms", toStarted, toRunning)
	}

	// No event: an error naming the pod, and the pod is no longer awaited.
	_, _, err = split(w, "p", started, running, running.Sub(created), 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "pod p:") {
		t.Errorf("no event: got error %v, want one naming pod p", err)
	}
	if len(w.waiting) != 0 {
		t.Errorf("pod p still awaited after the split gave up: %v", w.waiting)
	}
}
