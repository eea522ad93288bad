package podworkers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// removeNeverStarted removes a container that was created but never
// started (or is in an unknown state), stopping it first if the runtime
// says it has a task.
func (s *Syncer) removeNeverStarted(ctx context.Context, id string) error {
	err := s.cfg.Runtime.RemoveContainer(ctx, id)
	if err == nil || kubecontainer.IsNotFound(err) {
		return nil
	}
	if stopErr := s.cfg.Runtime.StopContainer(ctx, id, 0); stopErr != nil && !kubecontainer.IsNotFound(stopErr) {
		return errors.Join(err, stopErr)
	}
	if err := s.cfg.Runtime.RemoveContainer(ctx, id); err != nil && !kubecontainer.IsNotFound(err) {
		return fmt.Errorf("remove container %s before replacing it: %w", id, err)
	}
	return nil
}

// removeDead removes containers and sandboxes no status needs, and the
// containers' log files (the runtime leaves them, as the kubelet's GC
// removes them); failures are only logged, the next sync tries again.
func (s *Syncer) removeDead(ctx context.Context, status *kubecontainer.PodStatus, actions *podActions) {
	logger := klog.FromContext(ctx)
	for _, id := range actions.ContainersToRemove {
		if err := s.cfg.Runtime.RemoveContainer(ctx, id); err != nil && !kubecontainer.IsNotFound(err) {
			logger.V(2).Info("Removing dead container failed", "containerID", id, "err", err)
			continue
		}
		for _, cs := range status.Containers {
			if cs.ID == id && filepath.IsAbs(cs.LogPath) {
				// The log and its rotated files ("<log>.<timestamp>[.gz]").
				rotated, _ := filepath.Glob(cs.LogPath + ".*")
				for _, f := range append(rotated, cs.LogPath) {
					if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
						logger.V(2).Info("Removing a dead container's log failed", "containerID", id, "path", f, "err", err)
					}
				}
			}
		}
	}
	for _, id := range actions.SandboxesToRemove {
		// A sandbox must be stopped before it can be removed.
		if err := s.cfg.Runtime.StopPodSandbox(ctx, id); err != nil && !kubecontainer.IsNotFound(err) {
			logger.V(2).Info("Stopping old sandbox failed", "sandboxID", id, "err", err)
			continue
		}
		if err := s.cfg.Runtime.RemovePodSandbox(ctx, id); err != nil && !kubecontainer.IsNotFound(err) {
			logger.V(2).Info("Removing dead sandbox failed", "sandboxID", id, "err", err)
		}
	}
}
