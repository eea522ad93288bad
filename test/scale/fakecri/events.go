package fakecri

import (
	"context"
	"sync"
	"sync/atomic"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// broadcaster fans events out to the GetContainerEvents subscribers. A
// subscriber more than its buffer behind loses the next events (counted in
// dropped), as a runtime's event queue would; an agent's periodic relist
// catches up.
type broadcaster struct {
	buffer  int
	dropped atomic.Uint64

	mu sync.Mutex
	// subs are the subscribers' channels, each buffered by buffer, written
	// only by publish under mu and never closed: a subscriber's stream
	// ends on its context.
	subs map[chan *runtimeapi.ContainerEventResponse]struct{}
}

func newBroadcaster(buffer int) *broadcaster {
	return &broadcaster{buffer: buffer, subs: map[chan *runtimeapi.ContainerEventResponse]struct{}{}}
}

// subscribe adds a subscriber; cancel removes it.
func (b *broadcaster) subscribe() (ch <-chan *runtimeapi.ContainerEventResponse, cancel func()) {
	c := make(chan *runtimeapi.ContainerEventResponse, b.buffer)
	b.mu.Lock()
	b.subs[c] = struct{}{}
	b.mu.Unlock()
	return c, func() {
		b.mu.Lock()
		delete(b.subs, c)
		b.mu.Unlock()
	}
}

// publish sends ev to every subscriber without blocking.
func (b *broadcaster) publish(ev *runtimeapi.ContainerEventResponse) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.subs {
		select {
		case c <- ev:
		default:
			b.dropped.Add(1)
		}
	}
}

// GetContainerEvents streams every event published from now on until the
// client goes away.
func (r *runtimeServer) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream runtimeapi.RuntimeService_GetContainerEventsServer) error {
	ch, cancel := r.s.events.subscribe()
	defer cancel()
	ctx := stream.Context()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-ch:
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
	}
}

// publishSandbox publishes an event about sandbox id (or, with
// containerID, about that container of it) carrying the sandbox's status
// and those of its containers as they are now. A sandbox that is gone
// publishes nothing: its deletion is published by RemovePodSandbox from
// the status it read before. Call with s.mu held.
func (s *Server) publishSandbox(ctx context.Context, sandboxID, containerID string, t runtimeapi.ContainerEventType) {
	sb, ctrs, err := s.sandboxState(ctx, sandboxID)
	if err != nil {
		return
	}
	s.publish(sb, ctrs, containerID, t)
}

// publish publishes one event of type t about containerID (the sandbox's
// own ID for the sandbox) at the clock's time.
func (s *Server) publish(sb *runtimeapi.PodSandboxStatus, ctrs []*runtimeapi.ContainerStatus, containerID string, t runtimeapi.ContainerEventType) {
	if containerID == "" {
		containerID = sb.GetId()
	}
	s.events.publish(&runtimeapi.ContainerEventResponse{
		ContainerId:        containerID,
		ContainerEventType: t,
		CreatedAt:          s.cfg.Clock.Now().UnixNano(),
		PodSandboxStatus:   sb,
		ContainersStatuses: ctrs,
	})
}

// sandboxState reads a sandbox's status and those of its containers.
func (s *Server) sandboxState(ctx context.Context, sandboxID string) (*runtimeapi.PodSandboxStatus, []*runtimeapi.ContainerStatus, error) {
	resp, err := s.rt.PodSandboxStatus(ctx, sandboxID, false)
	if err != nil {
		return nil, nil, err
	}
	list, err := s.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sandboxID})
	if err != nil {
		return nil, nil, err
	}
	ctrs := make([]*runtimeapi.ContainerStatus, 0, len(list))
	for _, c := range list {
		st, err := s.rt.ContainerStatus(ctx, c.GetId(), false)
		if err != nil {
			continue // removed meanwhile
		}
		ctrs = append(ctrs, st.GetStatus())
	}
	return resp.GetStatus(), ctrs, nil
}
