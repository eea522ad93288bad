package kubecontainer

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// IsNotFound reports whether a CRI call failed because its object is gone.
// containerd answers NotFound for removed sandboxes and containers.
func IsNotFound(err error) bool {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code() == codes.NotFound
	}
	return false
}

// IsUnimplemented reports whether the runtime does not serve a CRI call.
func IsUnimplemented(err error) bool {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code() == codes.Unimplemented
	}
	return false
}

// RuntimeMessage is what the runtime said when a CRI call failed: the gRPC
// status's message, as the kubelet reports it in a container's waiting
// message (CreateContainerError, RunContainerError) and its Failed event,
// without the "rpc error: code = ... desc = " of the error's text; the
// error's text when it carries no gRPC status.
func RuntimeMessage(err error) string {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Message()
	}
	return err.Error()
}
