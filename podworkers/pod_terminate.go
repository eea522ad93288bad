package podworkers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// killPod stops every running container, then every ready sandbox, within
// grace seconds. Sidecars are stopped after the other containers have
// exited, one after another in reverse order, with what is left of the
// grace period.
func (s *Syncer) killPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, grace int64) error {
	deadline := s.cfg.Clock.Now().Add(time.Duration(grace) * time.Second)
	sidecarOrder := map[string]int{}
	for i := range pod.Spec.InitContainers {
		if kubecontainer.IsSidecar(&pod.Spec.InitContainers[i]) {
			sidecarOrder[pod.Spec.InitContainers[i].Name] = i + 1
		}
	}
	kill := map[string]containerToKill{}
	var sidecars []*kubecontainer.ContainerStatus
	for _, cs := range status.Containers {
		if cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if sidecarOrder[cs.Name] > 0 {
			sidecars = append(sidecars, cs)
			continue
		}
		kill[cs.ID] = containerToKill{Name: cs.Name, Reason: "pod terminating"}
	}
	if err := s.killContainers(ctx, pod, status, kill, grace); err != nil {
		return err
	}
	sort.Slice(sidecars, func(i, j int) bool { return sidecarOrder[sidecars[i].Name] > sidecarOrder[sidecars[j].Name] })
	for _, cs := range sidecars {
		if err := s.killContainer(ctx, pod, status, containerKill{id: cs.ID, containerToKill: containerToKill{Name: cs.Name, Reason: "pod terminating (sidecar)"}, deadline: deadline}); err != nil {
			return err
		}
	}
	for _, sb := range status.Sandboxes {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if err := s.cfg.Runtime.StopPodSandbox(ctx, sb.Id); err != nil && !kubecontainer.IsNotFound(err) {
			return fmt.Errorf("stop sandbox %s: %w", sb.Id, err)
		}
	}
	return nil
}

// SyncTerminatingPod stops the pod's containers with gracePeriod, then its
// sandboxes.
func (s *Syncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, gracePeriod int64) (SyncResult, error) {
	klog.FromContext(ctx).Info("Terminating pod", "gracePeriod", gracePeriod)
	killErr := s.killPod(ctx, pod, status, gracePeriod)
	fresh, err := s.refresh(ctx, pod.UID, status)
	if err != nil {
		return SyncResult{}, errors.Join(killErr, err)
	}
	s.report(pod, fresh, nil)
	return SyncResult{StatusTime: fresh.TimeStamp}, killErr
}
