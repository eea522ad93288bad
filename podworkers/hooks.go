package podworkers

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/probe"
)

// execer runs a command in a container (CRI ExecSync).
type execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
}

// hookRunner runs a container's lifecycle handlers (postStart, preStop):
// exec in the container, an HTTP GET, or a sleep. Safe for concurrent use.
type hookRunner struct {
	exec   execer
	http   *probe.HTTP
	clock  clock.Clock
	hostIP string
}

func newHookRunner(exec execer, c clock.Clock, hostIP string) *hookRunner {
	return &hookRunner{
		exec:  exec,
		clock: c,
		// As for probes: follow redirects only to the same host.
		http:   probe.NewHTTP(probe.HookUserAgent()),
		hostIP: hostIP,
	}
}

// hookTarget is the container a lifecycle handler runs for: container
// of pod, running as containerID. podIPs are the pod's addresses (empty
// for a host-network pod).
type hookTarget struct {
	pod         *v1.Pod
	container   *v1.Container
	containerID string
	podIPs      []string
}

// run runs handler for t, and gives up after timeout.
func (h *hookRunner) run(ctx context.Context, t hookTarget, handler *v1.LifecycleHandler, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case handler.Exec != nil:
		stdout, stderr, err := h.exec.ExecSync(ctx, t.containerID, handler.Exec.Command, timeout)
		if err != nil {
			return fmt.Errorf("exec %q: %w (output: %s)", handler.Exec.Command, err, probe.Clip(append(stdout, stderr...)))
		}
		return nil
	case handler.HTTPGet != nil:
		return h.httpGet(ctx, t, handler.HTTPGet)
	case handler.Sleep != nil:
		select {
		case <-h.clock.After(time.Duration(handler.Sleep.Seconds) * time.Second):
			return nil
		case <-ctx.Done():
			return fmt.Errorf("sleep %ds: %w", handler.Sleep.Seconds, ctx.Err())
		}
	case handler.TCPSocket != nil:
		return errors.New("tcpSocket is not a supported lifecycle handler")
	default:
		return errors.New("lifecycle handler has no action")
	}
}

func (h *hookRunner) httpGet(ctx context.Context, t hookTarget, get *v1.HTTPGetAction) error {
	host := h.hostIP
	if !t.pod.Spec.HostNetwork && len(t.podIPs) > 0 {
		host = t.podIPs[0]
	}
	port, err := probe.ResolvePort(get.Port, t.container)
	if err != nil {
		return err
	}
	result, detail, err := h.http.Get(ctx, get, host, port)
	if err != nil {
		return err
	}
	if result != probe.Success {
		return errors.New(detail)
	}
	return nil
}
