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
