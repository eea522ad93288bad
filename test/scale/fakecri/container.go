package fakecri

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CreateContainer makes a created container in an existing sandbox, with
// the log path the agent asked for, and publishes its created event.
func (r *runtimeServer) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	s := r.s
	defer s.forget()
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.GetConfig().GetMetadata() == nil || req.GetConfig().GetImage() == nil {
		return nil, status.Error(codes.InvalidArgument, "container config has no metadata or image")
	}
	sandboxID := req.GetPodSandboxId()
	if _, err := s.rt.PodSandboxStatus(ctx, sandboxID, false); err != nil {
		return nil, grpcError(err)
	}
	id, err := s.rt.CreateContainer(ctx, sandboxID, req.GetConfig(), req.GetSandboxConfig())
	if err != nil {
		return nil, grpcError(err)
	}
	if dir, name := req.GetSandboxConfig().GetLogDirectory(), req.GetConfig().GetLogPath(); dir != "" && name != "" {
		s.rt.Lock()
		if c := s.rt.Containers[id]; c != nil {
			c.LogPath = filepath.Join(dir, name)
		}
		s.rt.Unlock()
	}
	s.publishSandbox(ctx, sandboxID, id, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

// StartContainer creates the container's log file, as containerd does (a
// missing log directory fails the start), marks it running and publishes
// its started event.
func (r *runtimeServer) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	s := r.s
	defer s.forget()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := req.GetContainerId()
	st, err := s.rt.ContainerStatus(ctx, id, false)
	if err != nil {
		return nil, grpcError(err)
	}
	if st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is in state %v, not created", id, st.GetStatus().GetState())
	}
	if p := st.GetStatus().GetLogPath(); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
		if err != nil {
			return nil, status.Error(codes.Unknown, fmt.Sprintf("create container log file: %v", err))
		}
		f.Close()
	}
	if err := s.rt.StartContainer(ctx, id); err != nil {
		return nil, grpcError(err)
	}
	s.publishContainer(ctx, id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	return &runtimeapi.StartContainerResponse{}, nil
}

// StopContainer marks a running container exited (code 0: nothing ran to
// be killed) and publishes its stopped event; stopping one that is not
// running changes nothing.
func (r *runtimeServer) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	s := r.s
	defer s.forget()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := req.GetContainerId()
	st, err := s.rt.ContainerStatus(ctx, id, false)
	if err != nil {
		return nil, grpcError(err)
	}
	if st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return &runtimeapi.StopContainerResponse{}, nil
	}
	if err := s.rt.StopContainer(ctx, id, req.GetTimeout()); err != nil {
		return nil, grpcError(err)
	}
	s.publishContainer(ctx, id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	return &runtimeapi.StopContainerResponse{}, nil
}

// RemoveContainer removes a container and publishes its deleted event;
// removing one that is not there succeeds, as CRI asks.
func (r *runtimeServer) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	s := r.s
	defer s.forget()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := req.GetContainerId()
	s.rt.Lock()
	c := s.rt.Containers[id]
	s.rt.Unlock()
	if c == nil {
		return &runtimeapi.RemoveContainerResponse{}, nil
	}
	if err := s.rt.RemoveContainer(ctx, id); err != nil {
		return nil, grpcError(err)
	}
	s.publishSandbox(ctx, c.SandboxID, id, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// publishContainer publishes an event about container id with its
// sandbox's state. Call with s.mu held.
func (s *Server) publishContainer(ctx context.Context, id string, t runtimeapi.ContainerEventType) {
	s.rt.Lock()
	c := s.rt.Containers[id]
	s.rt.Unlock()
	if c != nil {
		s.publishSandbox(ctx, c.SandboxID, id, t)
	}
}

// ListContainers lists the containers the filter selects.
func (r *runtimeServer) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	defer r.s.forget()
	items, err := r.s.rt.ListContainers(ctx, req.GetFilter())
	if err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.ListContainersResponse{Containers: items}, nil
}

// ContainerStatus answers a container's status.
func (r *runtimeServer) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	defer r.s.forget()
	resp, err := r.s.rt.ContainerStatus(ctx, req.GetContainerId(), req.GetVerbose())
	return resp, grpcError(err)
}

// UpdateContainerResources accepts new resources of an existing container.
func (r *runtimeServer) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	defer r.s.forget()
	if _, err := r.s.rt.ContainerStatus(ctx, req.GetContainerId(), false); err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// UpdatePodSandboxResources accepts new resources of a sandbox.
func (r *runtimeServer) UpdatePodSandboxResources(context.Context, *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}

// ReopenContainerLog succeeds for a running container, as after a log
// rotation.
func (r *runtimeServer) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	defer r.s.forget()
	st, err := r.s.rt.ContainerStatus(ctx, req.GetContainerId(), false)
	if err != nil {
		return nil, grpcError(err)
	}
	if st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not running", req.GetContainerId())
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

// ExecSync succeeds with no output in a running container: exec probes
// pass.
func (r *runtimeServer) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	defer r.s.forget()
	st, err := r.s.rt.ContainerStatus(ctx, req.GetContainerId(), false)
	if err != nil {
		return nil, grpcError(err)
	}
	if st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not running", req.GetContainerId())
	}
	return &runtimeapi.ExecSyncResponse{ExitCode: 0}, nil
}
