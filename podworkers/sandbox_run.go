package podworkers

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// runSandbox makes the pod's log and data directories and runs its sandbox
// from cfg with the runtime handler handler ("" for the default); when the
// runtime keeps the sandbox's name reserved, it moves on to the next
// attempt numbers (cfg.Metadata.Attempt says which it used).
// The call is not cut short when ctx is cancelled (see uncancelled); the
// wait for its turn in the window of sandbox starts is (sandbox_window.go).
// reason says why the pod needs a sandbox, for the log.
func (s *Syncer) runSandbox(ctx context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig, handler, reason string) (string, error) {
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		return "", fmt.Errorf("create pod log directory: %w", err)
	}
	if err := os.MkdirAll(s.podDir(pod.UID), 0o750); err != nil {
		return "", fmt.Errorf("create pod directory: %w", err)
	}
	leave, err := s.sandboxes.enter(ctx)
	if err != nil {
		return "", fmt.Errorf("waiting to run the sandbox: %w", err)
	}
	defer leave()
	id, err := s.cfg.Runtime.RunPodSandbox(uncancelled(ctx), cfg, handler)
	for tries := 0; err != nil && nameReserved(err) && tries < maxNameReservedTries && ctx.Err() == nil; tries++ {
		// containerd keeps the name of a sandbox it could not remove (after
		// an agent died mid-start) reserved: as the kubelet, move on to the
		// next attempt number instead of failing on this one forever.
		cfg.Metadata.Attempt++
		id, err = s.cfg.Runtime.RunPodSandbox(uncancelled(ctx), cfg, handler)
	}
	if err != nil {
		s.podEvent(pod, v1.EventTypeWarning, events.FailedCreatePodSandBox, "Failed to create pod sandbox: %v", err)
		return "", fmt.Errorf("run sandbox (attempt %d): %w", cfg.Metadata.Attempt, err)
	}
	if logger := klog.FromContext(ctx); cfg.Metadata.Attempt > 0 {
		// A pod restarted as a whole: operators want to know, and why.
		logger.Info("Started a new sandbox for the pod", "sandboxID", id, "attempt", cfg.Metadata.Attempt, "reason", reason)
		s.podEvent(pod, v1.EventTypeNormal, events.SandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
	} else {
		logger.V(2).Info("Started sandbox", "sandboxID", id)
	}
	return id, nil
}

// sandboxIPs are the sandbox's IPs, the primary one first; none when its
// status cannot be read.
func (s *Syncer) sandboxIPs(ctx context.Context, sandboxID string) []string {
	resp, err := s.cfg.Runtime.PodSandboxStatus(ctx, sandboxID, false)
	if err != nil {
		return nil
	}
	return kubecontainer.SandboxIPs(resp.GetStatus())
}
