package fakecri

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
)

// stopGrace is how long Serve lets calls in flight finish once ctx ends.
const stopGrace = 2 * time.Second

// Serve serves s on a Unix socket at path (a stale socket there is
// replaced) until ctx ends, then stops and removes the socket. It returns
// an error only when it cannot listen or the server fails.
func (s *Server) Serve(ctx context.Context, path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	srv := grpc.NewServer()
	s.Register(srv)
	klog.FromContext(ctx).Info("Serving CRI", "socket", path, "podCIDR", s.cfg.PodCIDR)
	served := make(chan error, 1) // written once by the serving goroutine
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve CRI on %s: %w", path, err)
	case <-ctx.Done():
	}
	stopped := make(chan struct{}) // closed once GracefulStop returns
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(stopGrace):
		srv.Stop()
	}
	// Serve returns nil after a stop; anything else is worth a line.
	if err := <-served; err != nil {
		klog.FromContext(ctx).Info("Serving CRI ended", "err", err)
	}
	if n := s.Dropped(); n > 0 {
		klog.FromContext(ctx).Info("Events dropped for slow subscribers", "count", n)
	}
	return nil
}
