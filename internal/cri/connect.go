package cri

import (
	"context"
	"fmt"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	criclient "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Clients are the runtime and image services of one CRI endpoint.
type Clients struct {
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
	// RuntimeName and RuntimeVersion as the runtime reports them, e.g.
	// "containerd" and "v2.1.4".
	RuntimeName    string
	RuntimeVersion string
}

// Connect dials endpoint and checks that it serves CRI v1, retrying with
// backoff (250ms doubling to 10s) until it succeeds or ctx ends. Each failed
// attempt is logged with its cause. timeout bounds every later CRI call.
func Connect(ctx context.Context, clk clock.WithTicker, endpoint string, timeout time.Duration) (*Clients, error) {
	logger := klog.FromContext(ctx)
	delay := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		c, err := connectOnce(ctx, endpoint, timeout)
		if err == nil {
			logger.Info("Connected to container runtime", "endpoint", endpoint, "runtime", c.RuntimeName, "version", c.RuntimeVersion)
			return c, nil
		}
		logger.Error(err, "Container runtime is not reachable yet; retrying", "endpoint", endpoint, "attempt", attempt, "retryIn", delay)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to container runtime at %s: %w", endpoint, ctx.Err())
		case <-clk.After(delay):
		}
		delay = min(delay*2, 10*time.Second)
	}
}

func connectOnce(ctx context.Context, endpoint string, timeout time.Duration) (*Clients, error) {
	// Dialing validates the CRI v1 API, so a runtime that is not up yet
	// fails here rather than at the first call.
	dialCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rs, err := criclient.NewRemoteRuntimeService(dialCtx, endpoint, timeout, nil, false)
	if err != nil {
		return nil, fmt.Errorf("runtime service: %w", err)
	}
	is, err := criclient.NewRemoteImageService(dialCtx, endpoint, timeout, nil, false)
	if err != nil {
		_ = rs.Close(ctx)
		return nil, fmt.Errorf("image service: %w", err)
	}
	v, err := rs.Version(dialCtx, "v1")
	if err != nil {
		_ = rs.Close(ctx)
		_ = is.Close(ctx)
		return nil, fmt.Errorf("runtime version: %w", err)
	}
	return &Clients{Runtime: rs, Images: is, RuntimeName: v.RuntimeName, RuntimeVersion: v.RuntimeVersion}, nil
}
