package probe

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// GRPC asks the standard gRPC health service at host:port about service
// ("" for the whole server), in plain text as the kubelet does. SERVING is
// Success; another status, an error or no answer before ctx ends is
// Failure.
func GRPC(ctx context.Context, host string, port int, service, userAgent string) (Result, string) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(userAgent),
	)
	if err != nil {
		return Failure, fmt.Sprintf("grpc %s: %v", addr, err)
	}
	defer func() { _ = conn.Close() }()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(false))
	switch {
	case status.Code(err) == codes.Unimplemented:
		return Failure, fmt.Sprintf("grpc %s: the server does not implement the grpc health protocol (grpc.health.v1.Health)", addr)
	case status.Code(err) == codes.DeadlineExceeded:
		return Failure, fmt.Sprintf("grpc %s: timed out", addr)
	case err != nil:
		return Failure, fmt.Sprintf("grpc %s: %v", addr, err)
	case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		return Failure, fmt.Sprintf("grpc %s: service %q is %s", addr, service, resp.GetStatus())
	}
	return Success, ""
}
