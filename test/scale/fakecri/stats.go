package fakecri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The stats of a runtime that runs nothing: every container and sandbox
// uses no CPU, memory or disk, as of the call.

// ContainerStats answers one container's stats.
func (r *runtimeServer) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	defer r.s.forget()
	items, err := r.s.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: req.GetContainerId()})
	if err != nil {
		return nil, grpcError(err)
	}
	if len(items) == 0 {
		return nil, grpcError(errNotFound("container", req.GetContainerId()))
	}
	return &runtimeapi.ContainerStatsResponse{Stats: r.s.containerStats(items[0])}, nil
}

// ListContainerStats answers the stats of the containers the filter
// selects.
func (r *runtimeServer) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	defer r.s.forget()
	f := req.GetFilter()
	items, err := r.s.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: f.GetId(), PodSandboxId: f.GetPodSandboxId(), LabelSelector: f.GetLabelSelector()})
	if err != nil {
		return nil, grpcError(err)
	}
	out := make([]*runtimeapi.ContainerStats, 0, len(items))
	for _, c := range items {
		out = append(out, r.s.containerStats(c))
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: out}, nil
}

// PodSandboxStats answers one sandbox's stats.
func (r *runtimeServer) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	defer r.s.forget()
	items, err := r.s.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: req.GetPodSandboxId()})
	if err != nil {
		return nil, grpcError(err)
	}
	if len(items) == 0 {
		return nil, grpcError(errNotFound("pod sandbox", req.GetPodSandboxId()))
	}
	st, err := r.s.sandboxStats(ctx, items[0])
	if err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: st}, nil
}

// ListPodSandboxStats answers the stats of the sandboxes the filter
// selects.
func (r *runtimeServer) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	defer r.s.forget()
	f := req.GetFilter()
	items, err := r.s.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: f.GetId(), LabelSelector: f.GetLabelSelector()})
	if err != nil {
		return nil, grpcError(err)
	}
	out := make([]*runtimeapi.PodSandboxStats, 0, len(items))
	for _, sb := range items {
		st, err := r.s.sandboxStats(ctx, sb)
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, st)
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: out}, nil
}

// ListMetricDescriptors answers none: the runtime has no metrics of its
// own.
func (r *runtimeServer) ListMetricDescriptors(context.Context, *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	return &runtimeapi.ListMetricDescriptorsResponse{}, nil
}

// ListPodSandboxMetrics answers none.
func (r *runtimeServer) ListPodSandboxMetrics(context.Context, *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	return &runtimeapi.ListPodSandboxMetricsResponse{}, nil
}

func (s *Server) containerStats(c *runtimeapi.Container) *runtimeapi.ContainerStats {
	now := s.cfg.Clock.Now().UnixNano()
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{
			Id:          c.GetId(),
			Metadata:    c.GetMetadata(),
			Labels:      c.GetLabels(),
			Annotations: c.GetAnnotations(),
		},
		Cpu:    &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{}, UsageNanoCores: &runtimeapi.UInt64Value{}},
		Memory: &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: &runtimeapi.UInt64Value{}, UsageBytes: &runtimeapi.UInt64Value{}, RssBytes: &runtimeapi.UInt64Value{}},
		WritableLayer: &runtimeapi.FilesystemUsage{
			Timestamp: now, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: s.cfg.StateDir},
			UsedBytes: &runtimeapi.UInt64Value{}, InodesUsed: &runtimeapi.UInt64Value{},
		},
	}
}

func (s *Server) sandboxStats(ctx context.Context, sb *runtimeapi.PodSandbox) (*runtimeapi.PodSandboxStats, error) {
	ctrs, err := s.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sb.GetId()})
	if err != nil {
		return nil, err
	}
	now := s.cfg.Clock.Now().UnixNano()
	linux := &runtimeapi.LinuxPodSandboxStats{
		Cpu:     &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{}, UsageNanoCores: &runtimeapi.UInt64Value{}},
		Memory:  &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: &runtimeapi.UInt64Value{}, UsageBytes: &runtimeapi.UInt64Value{}, RssBytes: &runtimeapi.UInt64Value{}},
		Network: &runtimeapi.NetworkUsage{Timestamp: now},
		Process: &runtimeapi.ProcessUsage{Timestamp: now, ProcessCount: &runtimeapi.UInt64Value{}},
	}
	for _, c := range ctrs {
		linux.Containers = append(linux.Containers, s.containerStats(c))
	}
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id:          sb.GetId(),
			Metadata:    sb.GetMetadata(),
			Labels:      sb.GetLabels(),
			Annotations: sb.GetAnnotations(),
		},
		Linux: linux,
	}, nil
}
