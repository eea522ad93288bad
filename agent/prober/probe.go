package prober

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/internal/probe"
)

// probe runs the check once, within the probe's timeout. The host of
// network checks is the pod's IP, or the node's for a pod without one of
// its own (host network).
func (w *worker) probe(ctx context.Context, st v1.PodStatus) probe.Result {
	start := w.m.cfg.Clock.Now()
	r, detail, err := w.check(ctx, st)
	if w.m.cfg.Observe != nil {
		w.m.cfg.Observe(Run{Pod: w.pod, Container: w.key.container, Type: w.key.t, Result: r, Duration: w.m.cfg.Clock.Since(start)})
	}
	logger := klog.FromContext(ctx)
	switch {
	case err != nil:
		logger.V(2).Info("Probe could not be run", "containerID", w.containerID, "err", err)
	case r == probe.Failure:
		logger.V(1).Info("Probe failed", "containerID", w.containerID, "output", detail)
		w.m.cfg.Events.Eventf(events.Container(w.pod, w.container), v1.EventTypeWarning, events.Unhealthy, "%s probe failed: %s", w.key.t, detail)
	default:
		logger.V(5).Info("Probe succeeded", "containerID", w.containerID)
	}
	return r
}

func (w *worker) check(ctx context.Context, st v1.PodStatus) (probe.Result, string, error) {
	timeout := w.timeout()
	h := w.spec.ProbeHandler
	if h.Exec != nil {
		// The runtime enforces the timeout and reports it.
		return probe.Exec(ctx, w.m.cfg.Runtime, w.containerID, h.Exec.Command, timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host := st.PodIP
	if host == "" {
		host = w.m.cfg.HostIP
	}
	switch {
	case h.HTTPGet != nil:
		port, err := probe.ResolvePort(h.HTTPGet.Port, w.container)
		if err != nil {
			return probe.Unknown, "", err
		}
		return w.m.http.Get(ctx, h.HTTPGet, host, port)
	case h.TCPSocket != nil:
		port, err := probe.ResolvePort(h.TCPSocket.Port, w.container)
		if err != nil {
			return probe.Unknown, "", err
		}
		if h.TCPSocket.Host != "" {
			host = h.TCPSocket.Host
		}
		r, detail := probe.TCP(ctx, host, port)
		return r, detail, nil
	case h.GRPC != nil:
		service := ""
		if h.GRPC.Service != nil {
			service = *h.GRPC.Service
		}
		r, detail := probe.GRPC(ctx, host, int(h.GRPC.Port), service, probe.UserAgent())
		return r, detail, nil
	}
	return probe.Unknown, "", errNoHandler
}

// errNoHandler: validation refuses such probes.
var errNoHandler = errors.New("probe has no handler")
