package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// startWatch follows the runtime's container events (CRI
// GetContainerEvents) so that a pod start is timed to its container
// running without polling anything while the pod starts. A poller is not
// free on a 2-core machine: with /pods read every 5 ms alongside the raw
// CRI calls too, the agent's ratio to them fell from 1.16x to 1.07x
// (2026-12-07, 20 runs each); the CPU the poll takes (the agent encoding
// /pods, the bench decoding it, or containerd listing containers) is taken
// from the runtime calls being timed, and only the agent's runs had it.
type startWatch struct {
	mu      sync.Mutex
	waiting map[watchKey]chan time.Time
	stop    context.CancelFunc
	done    chan struct{}
}

// watchStarts subscribes to rt's container events. It fails if the
// runtime does not serve them (containerd 1.6).
func watchStarts(ctx context.Context, rt *ctrdtest.Containerd) (*startWatch, error) {
	ctx, stop := context.WithCancel(ctx)
	events, err := containerEvents(ctx, rt)
	if err != nil {
		stop()
		return nil, err
	}
	w := &startWatch{waiting: map[watchKey]chan time.Time{}, stop: stop, done: make(chan struct{})}
	go w.follow(ctx, events)
	return w, nil
}

// containerEvents subscribes to rt's container events (CRI
// GetContainerEvents) until ctx ends, and waits for the stream to be up:
// the events that follow are all delivered. It fails if the runtime does
// not serve them (containerd 1.6) or the stream is not up within 10s.
func containerEvents(ctx context.Context, rt *ctrdtest.Containerd) (<-chan *runtimeapi.ContainerEventResponse, error) {
	events := make(chan *runtimeapi.ContainerEventResponse, 64)
	connected := make(chan struct{})
	failed := make(chan error, 1)
	go func() {
		failed <- rt.Runtime().GetContainerEvents(ctx, events, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(connected) })
	}()
	select {
	case <-connected:
		return events, nil
	case err := <-failed:
		return nil, fmt.Errorf("%s: GetContainerEvents: %w", rt.Name(), err)
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("%s: no GetContainerEvents stream within 10s", rt.Name())
	}
}

// watchKey is an awaited event: its type, in the pod whose sandbox is
// named pod.
type watchKey struct {
	pod string
	t   runtimeapi.ContainerEventType
}

// follow stamps the first awaited event of an app container (not the
// sandbox's own) of each pod with the time it arrived.
func (w *startWatch) follow(ctx context.Context, events <-chan *runtimeapi.ContainerEventResponse) {
	defer close(w.done)
	for {
		select {
		case ev := <-events:
			sb := ev.GetPodSandboxStatus()
			if ev.GetContainerId() == sb.GetId() {
				continue
			}
			at := time.Now()
			k := watchKey{pod: sb.GetMetadata().GetName(), t: ev.GetContainerEventType()}
			w.mu.Lock()
			if ch, ok := w.waiting[k]; ok {
				ch <- at
				delete(w.waiting, k)
			}
			w.mu.Unlock()
		case <-ctx.Done():
			return
		}
	}
}

// expect returns a channel that receives when a container of the pod
// whose sandbox is named pod starts; call it before the pod is written.
func (w *startWatch) expect(pod string) <-chan time.Time {
	return w.expectEvent(pod, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
}

// expectEvent returns a channel that receives when the runtime next sends
// an event of type t for an app container of the pod whose sandbox is
// named pod.
func (w *startWatch) expectEvent(pod string, t runtimeapi.ContainerEventType) <-chan time.Time {
	ch := make(chan time.Time, 1)
	w.mu.Lock()
	w.waiting[watchKey{pod, t}] = ch
	w.mu.Unlock()
	return ch
}

// forget drops pod's waits (its start failed or timed out).
func (w *startWatch) forget(pod string) {
	w.mu.Lock()
	for k := range w.waiting {
		if k.pod == pod {
			delete(w.waiting, k)
		}
	}
	w.mu.Unlock()
}

// await waits up to within for the stamp of an event expected of pod (ch,
// from expect or expectEvent); on a timeout the pod's waits are dropped.
func (w *startWatch) await(pod string, ch <-chan time.Time, what string, within time.Duration) (time.Time, error) {
	select {
	case at := <-ch:
		return at, nil
	case <-time.After(within):
		w.forget(pod)
		return time.Time{}, fmt.Errorf("pod %s: no %s event from the runtime within %v", pod, what, within)
	}
}

// eventWait bounds the wait for a killed container's events.
const eventWait = 30 * time.Second

func (w *startWatch) close() {
	w.stop()
	<-w.done
}
