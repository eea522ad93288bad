package fakecri

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version answers the fake's name and version (fakeRuntime 0.1.0, as a
// kubemark hollow node reports).
func (r *runtimeServer) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	defer r.s.forget()
	resp, err := r.s.rt.Version(ctx, req.GetVersion())
	return resp, grpcError(err)
}

// Status answers the runtime and the network ready, and the default
// runtime handler, with no optional feature.
func (r *runtimeServer) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	defer r.s.forget()
	resp, err := r.s.rt.Status(ctx, req.GetVerbose())
	if err != nil {
		return nil, grpcError(err)
	}
	resp.RuntimeHandlers = []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{}}}
	return resp, nil
}

// RuntimeConfig answers the cgroupfs driver.
func (r *runtimeServer) RuntimeConfig(ctx context.Context, _ *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	defer r.s.forget()
	resp, err := r.s.rt.RuntimeConfig(ctx)
	return resp, grpcError(err)
}

// UpdateRuntimeConfig accepts the node's pod CIDR and ignores it.
func (r *runtimeServer) UpdateRuntimeConfig(context.Context, *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}

// errNoProcesses answers the streaming verbs: nothing runs to stream from.
var errNoProcesses = status.Error(codes.Unimplemented, "fakecri runs no processes")

// Exec is not served.
func (r *runtimeServer) Exec(context.Context, *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return nil, errNoProcesses
}

// Attach is not served.
func (r *runtimeServer) Attach(context.Context, *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return nil, errNoProcesses
}

// PortForward is not served.
func (r *runtimeServer) PortForward(context.Context, *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return nil, errNoProcesses
}

// errNotFound is the fakes' "not found" error, which grpcError turns into
// NotFound.
func errNotFound(kind, id string) error { return fmt.Errorf("%s %q not found", kind, id) }
