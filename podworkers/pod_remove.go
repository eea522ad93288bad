package podworkers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// SyncTerminatedPod removes the pod's containers and sandboxes from the
// runtime, and its log and data directories from disk.
func (s *Syncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (SyncResult, error) {
	var errs []error
	for _, cs := range status.Containers {
		if err := s.cfg.Runtime.RemoveContainer(ctx, cs.ID); err != nil && !kubecontainer.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %q (%s): %w", cs.Name, cs.ID, err))
		}
	}
	for _, sb := range status.Sandboxes {
		if err := s.cfg.Runtime.RemovePodSandbox(ctx, sb.Id); err != nil && !kubecontainer.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", sb.Id, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return SyncResult{}, err
	}
	fresh, err := s.refresh(ctx, pod.UID, status)
	if err != nil {
		return SyncResult{}, err
	}
	if len(fresh.Sandboxes) > 0 || len(fresh.Containers) > 0 {
		return SyncResult{StatusTime: fresh.TimeStamp}, fmt.Errorf("pod still has %d sandboxes and %d containers after removal", len(fresh.Sandboxes), len(fresh.Containers))
	}
	logsDir := PodLogsDir(s.cfg.PodLogsDir, pod)
	if err := os.RemoveAll(logsDir); err != nil {
		return SyncResult{StatusTime: fresh.TimeStamp}, fmt.Errorf("remove %s: %w", logsDir, err)
	}
	if err := s.removePodDir(ctx, pod.UID); err != nil {
		return SyncResult{StatusTime: fresh.TimeStamp}, err
	}
	s.releaseUserNamespace(pod.UID)
	if s.cfg.Cgroups != nil {
		if err := s.removePodCgroup(ctx, pod.UID); err != nil {
			return SyncResult{StatusTime: fresh.TimeStamp}, fmt.Errorf("remove pod cgroup: %w", err)
		}
	}
	s.backOff.forget(string(pod.UID) + "/")
	s.pulls.forget(pod.UID)
	s.mu.Lock()
	delete(s.waiting, pod.UID)
	s.mu.Unlock()
	s.messages.forget(pod.UID)
	if err := s.cfg.Resources.Release(pod.UID); err != nil {
		klog.FromContext(ctx).Error(err, "Forgetting the pod's resources failed; kept in memory")
	}
	s.cfg.Status.RemovePod(pod.UID)
	klog.FromContext(ctx).Info("Pod terminated: its sandbox, volumes and cgroup are gone")
	return SyncResult{StatusTime: fresh.TimeStamp}, nil
}

// removePodCgroup removes the cgroup of a pod the runtime holds nothing
// of any more (SyncTerminatedPod has just seen so). A process still in it
// then is one no one else will ever stop, such as the init process of a
// sandbox whose RunPodSandbox an agent SIGKILL cut short, which containerd
// 2.1 forgets without killing it: as the kubelet does before it removes a
// pod's cgroup, such processes are killed, and the removal tried again.
func (s *Syncer) removePodCgroup(ctx context.Context, uid types.UID) error {
	err := s.cfg.Cgroups.RemovePod(ctx, uid)
	if !errors.Is(err, errdefs.ErrFailedPrecondition) {
		return err
	}
	kctx, cancel := context.WithTimeout(ctx, killStraysTimeout)
	defer cancel()
	pids, kerr := s.cfg.Cgroups.KillPodProcesses(kctx, uid)
	if len(pids) > 0 {
		klog.FromContext(ctx).Info("Killed processes left in the cgroup of a pod the runtime holds nothing of any more", "pids", pids)
	}
	if kerr != nil {
		return errors.Join(err, kerr)
	}
	return s.cfg.Cgroups.RemovePod(ctx, uid)
}

// killStraysTimeout bounds the wait for killed stray processes to go.
const killStraysTimeout = 5 * time.Second
