package fakecri

import (
	"context"
	"net/netip"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RunPodSandbox makes a ready sandbox with an address of the pod network
// (none on the host's network) and publishes its created and started
// events.
func (r *runtimeServer) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	s := r.s
	defer s.forget()
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.GetConfig().GetMetadata() == nil {
		return nil, status.Error(codes.InvalidArgument, "sandbox config has no metadata")
	}
	var ip netip.Addr
	hostNetwork := req.GetConfig().GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
	if !hostNetwork {
		var err error
		if ip, err = s.ips.get(); err != nil {
			return nil, status.Error(codes.ResourceExhausted, err.Error())
		}
	}
	id, err := s.rt.RunPodSandbox(ctx, req.GetConfig(), req.GetRuntimeHandler())
	if err != nil {
		if ip.IsValid() {
			s.ips.put(ip)
		}
		return nil, grpcError(err)
	}
	s.rt.Lock()
	if sb := s.rt.Sandboxes[id]; sb != nil {
		sb.Network = nil
		if ip.IsValid() {
			sb.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: ip.String()}
		}
	}
	s.rt.Unlock()
	s.publishSandbox(ctx, id, "", runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	s.publishSandbox(ctx, id, "", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

// StopPodSandbox stops the sandbox's running containers, then the sandbox,
// publishing a stopped event for each.
func (r *runtimeServer) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	s := r.s
	defer s.forget()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := req.GetPodSandboxId()
	running, err := s.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
		PodSandboxId: id,
		State:        &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return nil, grpcError(err)
	}
	for _, c := range running {
		if err := s.rt.StopContainer(ctx, c.GetId(), 0); err == nil {
			s.publishSandbox(ctx, id, c.GetId(), runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
		}
	}
	if err := s.rt.StopPodSandbox(ctx, id); err != nil {
		return nil, grpcError(err)
	}
	s.publishSandbox(ctx, id, "", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox removes the sandbox's containers, then the sandbox, and
// releases its address, publishing a deleted event for each. Removing a
// sandbox that is not there succeeds, as CRI asks.
func (r *runtimeServer) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	s := r.s
	defer s.forget()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := req.GetPodSandboxId()
	sb, ctrs, err := s.sandboxState(ctx, id)
	if err != nil {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	for i, c := range ctrs {
		if err := s.rt.RemoveContainer(ctx, c.GetId()); err != nil {
			return nil, grpcError(err)
		}
		s.publish(sb, ctrs[i+1:], c.GetId(), runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	}
	if err := s.rt.RemovePodSandbox(ctx, id); err != nil {
		return nil, grpcError(err)
	}
	if ip, err := netip.ParseAddr(sb.GetNetwork().GetIp()); err == nil {
		s.ips.put(ip)
	}
	s.publish(sb, nil, id, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus answers the sandbox's status with its containers'
// statuses and the time they were read, as runtimes do for evented PLEGs.
func (r *runtimeServer) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	s := r.s
	defer s.forget()
	now := s.cfg.Clock.Now()
	sb, ctrs, err := s.sandboxState(ctx, req.GetPodSandboxId())
	if err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: sb, ContainersStatuses: ctrs, Timestamp: now.UnixNano()}, nil
}

// ListPodSandbox lists the sandboxes the filter selects.
func (r *runtimeServer) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	defer r.s.forget()
	items, err := r.s.rt.ListPodSandbox(ctx, req.GetFilter())
	if err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}
