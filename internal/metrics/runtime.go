package metrics

import (
	"context"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// InstrumentRuntime returns rs and is wrapped to count and time every CRI call
// in kubelet_runtime_operations_total, kubelet_runtime_operations_errors_total
// and kubelet_runtime_operations_duration_seconds, by the kubelet's
// operation_type names. GetContainerEvents, a stream that lasts as long
// as the connection, is timed to its end, as the kubelet times it; Close
// is not counted.
func (m *Metrics) InstrumentRuntime(clk clock.PassiveClock, rs internalapi.RuntimeService, is internalapi.ImageManagerService) (internalapi.RuntimeService, internalapi.ImageManagerService) {
	o := operations{m: m, clock: clk}
	return &instrumentedRuntime{RuntimeService: rs, o: o}, &instrumentedImages{ImageManagerService: is, o: o}
}

// operations records CRI calls.
type operations struct {
	m     *Metrics
	clock clock.PassiveClock
}

func (o operations) do(op string, f func() error) error {
	start := o.clock.Now()
	err := f()
	o.m.ObserveRuntimeOperation(op, o.clock.Since(start), err)
	return err
}

func observed[T any](o operations, op string, f func() (T, error)) (T, error) {
	var v T
	err := o.do(op, func() error {
		var err error
		v, err = f()
		return err
	})
	return v, err
}

// instrumentedRuntime is a RuntimeService whose calls are recorded.
type instrumentedRuntime struct {
	internalapi.RuntimeService
	o operations
}

// instrumentedImages is an ImageManagerService whose calls are recorded.
type instrumentedImages struct {
	internalapi.ImageManagerService
	o operations
}

func (r *instrumentedRuntime) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error) {
	err = r.o.do("exec_sync", func() error {
		var err error
		stdout, stderr, err = r.RuntimeService.ExecSync(ctx, containerID, cmd, timeout)
		return err
	})
	return stdout, stderr, err
}

func (r *instrumentedRuntime) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	return r.o.do("get_container_events", func() error { return r.RuntimeService.GetContainerEvents(ctx, ch, established) })
}

func (r *instrumentedRuntime) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	return observed(r.o, "version", func() (*runtimeapi.VersionResponse, error) { return r.RuntimeService.Version(ctx, apiVersion) })
}

func (r *instrumentedRuntime) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	return observed(r.o, "create_container", func() (string, error) {
		return r.RuntimeService.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
	})
}

func (r *instrumentedRuntime) StartContainer(ctx context.Context, containerID string) error {
	return r.o.do("start_container", func() error { return r.RuntimeService.StartContainer(ctx, containerID) })
}

func (r *instrumentedRuntime) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	return r.o.do("stop_container", func() error { return r.RuntimeService.StopContainer(ctx, containerID, timeout) })
}

func (r *instrumentedRuntime) RemoveContainer(ctx context.Context, containerID string) error {
	return r.o.do("remove_container", func() error { return r.RuntimeService.RemoveContainer(ctx, containerID) })
}

func (r *instrumentedRuntime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return observed(r.o, "list_containers", func() ([]*runtimeapi.Container, error) { return r.RuntimeService.ListContainers(ctx, filter) })
}

func (r *instrumentedRuntime) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	return observed(r.o, "container_status", func() (*runtimeapi.ContainerStatusResponse, error) {
		return r.RuntimeService.ContainerStatus(ctx, containerID, verbose)
	})
}

func (r *instrumentedRuntime) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	return r.o.do("update_container", func() error { return r.RuntimeService.UpdateContainerResources(ctx, containerID, resources) })
}

func (r *instrumentedRuntime) Exec(ctx context.Context, request *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return observed(r.o, "exec", func() (*runtimeapi.ExecResponse, error) { return r.RuntimeService.Exec(ctx, request) })
}

func (r *instrumentedRuntime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return observed(r.o, "attach", func() (*runtimeapi.AttachResponse, error) { return r.RuntimeService.Attach(ctx, req) })
}

func (r *instrumentedRuntime) ReopenContainerLog(ctx context.Context, containerID string) error {
	return r.o.do("reopen_container_log", func() error { return r.RuntimeService.ReopenContainerLog(ctx, containerID) })
}

func (r *instrumentedRuntime) CheckpointContainer(ctx context.Context, options *runtimeapi.CheckpointContainerRequest) error {
	return r.o.do("checkpoint_container", func() error { return r.RuntimeService.CheckpointContainer(ctx, options) })
}

func (r *instrumentedRuntime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	return observed(r.o, "run_podsandbox", func() (string, error) { return r.RuntimeService.RunPodSandbox(ctx, config, runtimeHandler) })
}

func (r *instrumentedRuntime) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	return r.o.do("stop_podsandbox", func() error { return r.RuntimeService.StopPodSandbox(ctx, podSandboxID) })
}

func (r *instrumentedRuntime) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	return r.o.do("remove_podsandbox", func() error { return r.RuntimeService.RemovePodSandbox(ctx, podSandboxID) })
}

func (r *instrumentedRuntime) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return observed(r.o, "podsandbox_status", func() (*runtimeapi.PodSandboxStatusResponse, error) {
		return r.RuntimeService.PodSandboxStatus(ctx, podSandboxID, verbose)
	})
}

func (r *instrumentedRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return observed(r.o, "list_podsandbox", func() ([]*runtimeapi.PodSandbox, error) { return r.RuntimeService.ListPodSandbox(ctx, filter) })
}

func (r *instrumentedRuntime) PortForward(ctx context.Context, request *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return observed(r.o, "port_forward", func() (*runtimeapi.PortForwardResponse, error) { return r.RuntimeService.PortForward(ctx, request) })
}

func (r *instrumentedRuntime) UpdatePodSandboxResources(ctx context.Context, request *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return observed(r.o, "update_podsandbox_resources", func() (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
		return r.RuntimeService.UpdatePodSandboxResources(ctx, request)
	})
}

func (r *instrumentedRuntime) ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error) {
	return observed(r.o, "container_stats", func() (*runtimeapi.ContainerStats, error) { return r.RuntimeService.ContainerStats(ctx, containerID) })
}

func (r *instrumentedRuntime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return observed(r.o, "list_container_stats", func() ([]*runtimeapi.ContainerStats, error) { return r.RuntimeService.ListContainerStats(ctx, filter) })
}

func (r *instrumentedRuntime) PodSandboxStats(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStats, error) {
	return observed(r.o, "podsandbox_stats", func() (*runtimeapi.PodSandboxStats, error) {
		return r.RuntimeService.PodSandboxStats(ctx, podSandboxID)
	})
}

func (r *instrumentedRuntime) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return observed(r.o, "list_podsandbox_stats", func() ([]*runtimeapi.PodSandboxStats, error) {
		return r.RuntimeService.ListPodSandboxStats(ctx, filter)
	})
}

func (r *instrumentedRuntime) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	return observed(r.o, "list_metric_descriptors", func() ([]*runtimeapi.MetricDescriptor, error) { return r.RuntimeService.ListMetricDescriptors(ctx) })
}

func (r *instrumentedRuntime) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	return observed(r.o, "list_podsandbox_metrics", func() ([]*runtimeapi.PodSandboxMetrics, error) { return r.RuntimeService.ListPodSandboxMetrics(ctx) })
}

func (r *instrumentedRuntime) UpdateRuntimeConfig(ctx context.Context, runtimeConfig *runtimeapi.RuntimeConfig) error {
	return r.o.do("update_runtime_config", func() error { return r.RuntimeService.UpdateRuntimeConfig(ctx, runtimeConfig) })
}

func (r *instrumentedRuntime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	return observed(r.o, "status", func() (*runtimeapi.StatusResponse, error) { return r.RuntimeService.Status(ctx, verbose) })
}

func (r *instrumentedRuntime) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return observed(r.o, "runtime_config", func() (*runtimeapi.RuntimeConfigResponse, error) { return r.RuntimeService.RuntimeConfig(ctx) })
}

func (r *instrumentedImages) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return observed(r.o, "list_images", func() ([]*runtimeapi.Image, error) { return r.ImageManagerService.ListImages(ctx, filter) })
}

func (r *instrumentedImages) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return observed(r.o, "image_status", func() (*runtimeapi.ImageStatusResponse, error) {
		return r.ImageManagerService.ImageStatus(ctx, image, verbose)
	})
}

func (r *instrumentedImages) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	return observed(r.o, "pull_image", func() (string, error) { return r.ImageManagerService.PullImage(ctx, image, auth, podSandboxConfig) })
}

func (r *instrumentedImages) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	return r.o.do("remove_image", func() error { return r.ImageManagerService.RemoveImage(ctx, image) })
}

func (r *instrumentedImages) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return observed(r.o, "image_fs_info", func() (*runtimeapi.ImageFsInfoResponse, error) { return r.ImageManagerService.ImageFsInfo(ctx) })
}
