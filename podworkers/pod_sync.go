package podworkers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/volumes"
)

// SyncPod brings the runtime in line with the pod's spec and reports the
// resulting status.
//
// The pod runs with the resources granted to it (allocate, resize.go):
// what it is reported and synced as from here on is pod as allocated. A
// running container whose granted resources differ from those applied to
// it is resized, in place or by the restart its resizePolicy asks for.
func (s *Syncer) SyncPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (SyncResult, error) {
	logger := klog.FromContext(ctx)
	remaining := func(c *v1.Container, cs *kubecontainer.ContainerStatus) time.Duration {
		return s.backOff.remaining(backOffKey(pod, c), cs.StartedAt, cs.FinishedAt)
	}
	if podTerminal(pod) {
		// Nothing will start: no volumes to refresh, no cgroup to size,
		// and its grant no longer counts against other pods' resizes.
		if err := s.cfg.Resources.Release(pod.UID); err != nil {
			logger.Error(err, "Forgetting the finished pod's resources failed; kept in memory")
		}
		actions := computePodActions(pod, status, remaining, s.cfg.Probes)
		return s.syncTerminal(ctx, pod, status, &actions)
	}
	pod = s.allocate(ctx, pod)
	s.adoptActuated(ctx, pod, status)
	actions := computePodResize(pod, status, remaining, s.cfg.Probes, func(name string) (v1.ResourceRequirements, bool) {
		return s.cfg.Resources.Actuated(pod.UID, name)
	})
	s.backOffEvents(pod, actions.Waiting)
	vols, err := s.setUpVolumes(ctx, pod)
	if err != nil {
		holdForVolumes(&actions, err)
		s.podEvent(pod, v1.EventTypeWarning, events.FailedMount, "%v", err)
		s.report(pod, status, actions.Waiting)
		return SyncResult{StatusTime: status.TimeStamp}, err
	}
	// Every sync, so that an edited pod's limits follow and a restarted
	// agent learns the Burstable pods' requests again; a pod being
	// resized has its cgroup resized with its containers (apply).
	if !actions.PodResize {
		if err := s.ensureCgroup(ctx, pod); err != nil {
			if actions.CreateSandbox {
				s.report(pod, status, actions.Waiting)
				return SyncResult{StatusTime: status.TimeStamp}, err
			}
			logger.Info("Updating the pod's cgroup failed; the next sync tries again", "err", err)
		}
	}
	if !actions.changesRuntime() {
		s.updateResizeStatus(ctx, pod, status)
		s.report(pod, status, actions.Waiting)
		return SyncResult{StatusTime: status.TimeStamp, RequeueAfter: actions.RequeueAfter}, nil
	}
	logger.V(3).Info("Syncing pod", "createSandbox", actions.CreateSandbox, "start", len(actions.ContainersToStart), "kill", len(actions.ContainersToKill))
	// Report what the runtime shows before acting on it: a container that
	// died is shown terminated now, not only once its replacement runs.
	s.report(pod, status, actions.Waiting)

	syncErr := s.apply(ctx, pod, status, &actions, vols)
	// What the sync did reaches the cache even when the pod was killed
	// meanwhile: else the next sync, the kill's, would have to wait for a
	// relist that started after now, which in evented mode comes only
	// with the safety relist (a minute). The containers resized in place
	// kept their state: their status is read again for its resources.
	fresh, err := s.refresh(uncancelled(ctx), pod.UID, status.Without(resizedIDs(actions.ContainersToResize)))
	if err != nil {
		// What this sync did is not in the cache: the next sync must wait
		// for a relist that started after now.
		return SyncResult{StatusTime: s.cfg.Clock.Now()}, errors.Join(syncErr, err)
	}
	s.updateResizeStatus(ctx, pod, fresh)
	s.report(pod, fresh, actions.Waiting)
	return SyncResult{StatusTime: fresh.TimeStamp, RequeueAfter: actions.RequeueAfter}, syncErr
}

// syncTerminal syncs a pod whose own status is terminal (podTerminal):
// it stops what still runs and removes the dead containers no status
// needs; the last instance of each container stays, with its log, until
// the pod is removed (SyncTerminatedPod).
func (s *Syncer) syncTerminal(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, actions *podActions) (SyncResult, error) {
	if !actions.changesRuntime() {
		s.report(pod, status, actions.Waiting)
		return SyncResult{StatusTime: status.TimeStamp}, nil
	}
	var syncErr error
	if actions.KillPod {
		if err := s.killPod(ctx, pod, status, podGracePeriod(pod)); err != nil {
			syncErr = fmt.Errorf("stop a pod that has finished: %w", err)
		}
	}
	s.removeDead(ctx, status, actions)
	fresh, err := s.refresh(uncancelled(ctx), pod.UID, status)
	if err != nil {
		return SyncResult{StatusTime: s.cfg.Clock.Now()}, errors.Join(syncErr, err)
	}
	s.report(pod, fresh, actions.Waiting)
	return SyncResult{StatusTime: fresh.TimeStamp}, syncErr
}

// apply carries out the actions. Containers that fail to start are recorded
// in actions.Waiting; the first error is returned so the worker retries.
// A resize is made once the containers it restarts are stopped and before
// any container starts; its failure is returned too.
func (s *Syncer) apply(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, actions *podActions, vols *volumes.PodVolumes) (err error) {
	grace := podGracePeriod(pod)
	if actions.KillPod {
		if err := s.killPod(ctx, pod, status, grace); err != nil {
			return fmt.Errorf("kill pod before recreating its sandbox: %w", err)
		}
	}
	if err := s.killContainers(ctx, pod, status, actions.ContainersToKill, grace); err != nil {
		return err
	}
	if actions.PodResize {
		if resizeErr := s.resizeInPlace(ctx, pod, actions.ContainersToResize); resizeErr != nil {
			defer func() { err = errors.Join(err, resizeErr) }()
		}
	}
	for _, id := range actions.ContainersToReplace {
		if err := s.removeNeverStarted(ctx, id); err != nil {
			// containerd can keep a task it refuses to delete after an
			// agent died mid-start; the container can never be started
			// again, so its replacement goes ahead, as with the kubelet.
			klog.FromContext(ctx).Error(err, "Removing a container that never started failed; replacing it anyway", "containerID", id)
		}
	}
	// Dead containers and sandboxes go after the starts: removing them
	// (a CRI call each) would otherwise delay a crashed container's
	// replacement.
	defer s.removeDead(ctx, status, actions)

	sandboxID := actions.SandboxID
	sandboxConfig := s.sandboxConfig(pod, actions.Attempt)
	if !actions.CreateSandbox {
		if newest := newestSandbox(status); newest != nil {
			sandboxConfig.Metadata.Attempt = newest.GetMetadata().GetAttempt()
		}
	}
	// Images are checked (and pulled) while the sandbox starts: the two
	// do not depend on each other, and both are slow.
	var handler string
	if actions.CreateSandbox {
		var err error
		if handler, err = s.runtimeHandler(ctx, pod); err != nil {
			holdForSandbox(actions, err)
			return err
		}
	}
	// The sandbox's and its containers' user namespace (hostUsers: false).
	userns, err := s.userNamespace(pod, handler, actions.CreateSandbox)
	if err != nil {
		holdForSandbox(actions, err)
		return err
	}
	sandboxConfig.Linux.SecurityContext.NamespaceOptions.UsernsOptions = userns
	if actions.CreateSandbox {
		if err := s.sandboxDNS(ctx, pod, sandboxConfig); err != nil {
			holdForSandbox(actions, err)
			return err
		}
	}
	images := s.prefetchImages(ctx, pod, actions.ContainersToStart, sandboxConfig)
	if actions.CreateSandbox {
		id, err := s.runSandbox(ctx, pod, sandboxConfig, handler, actions.SandboxReason)
		if err != nil {
			<-images.done
			holdForSandbox(actions, err)
			return err
		}
		sandboxID = id
	}
	<-images.done
	target := &startTarget{
		pod:           pod,
		sandboxID:     sandboxID,
		sandboxConfig: sandboxConfig,
		env:           podEnv{Downward: s.downward, Objects: readEnvObjects(ctx, s.cfg.Objects, pod)},
		volumes:       vols,
		imageVolumes:  images.volumeImages(pod),
	}
	if len(actions.ContainersToStart) > 0 {
		if needsPodIP(pod, actions.ContainersToStart) {
			target.env.PodIPs = s.sandboxIPs(ctx, sandboxID)
		}
		var err error
		if target.hostsFile, err = s.hostsFile(pod, target.env.PodIPs); err != nil {
			holdForSandbox(actions, err)
			return err
		}
		if target.env.Services, err = s.serviceEnv(pod); err != nil {
			for _, cts := range actions.ContainersToStart {
				actions.Waiting[cts.Container.Name] = kubecontainer.Waiting{Reason: "CreateContainerConfigError", Message: err.Error()}
			}
			return err
		}
	}

	var firstErr error
	for _, cts := range actions.ContainersToStart {
		img := images.results[cts.Container.Name]
		if held := images.heldByVolume(cts.Container); held != nil {
			img = *held // as the kubelet: before the container's own image
		}
		if img.retryAfter > 0 {
			// The pull failed or backs off: no error, the worker comes
			// back when the image may be pulled again.
			actions.Waiting[cts.Container.Name] = img.waiting
			if actions.RequeueAfter == 0 || img.retryAfter < actions.RequeueAfter {
				actions.RequeueAfter = img.retryAfter
			}
			continue
		}
		if w, err := s.startContainer(ctx, target, cts, img); err != nil {
			if w.Reason != "" {
				actions.Waiting[cts.Container.Name] = w
			} else {
				// It started, and failed after (its postStart hook).
				delete(actions.Waiting, cts.Container.Name)
				s.clearWaiting(pod.UID, cts.Container.Name)
			}
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		delete(actions.Waiting, cts.Container.Name)
		s.clearWaiting(pod.UID, cts.Container.Name)
	}
	return firstErr
}

// holdForSandbox records why the containers the sync would start wait when
// their sandbox (or the pod's log or data directory) cannot be made: they
// stay ContainerCreating, as with the kubelet, and the message says why
// (where the kubelet says it in a FailedCreatePodSandBox event), such as
// "create pod log directory: mkdir ...: no space left on device".
func holdForSandbox(actions *podActions, err error) {
	for _, cts := range actions.ContainersToStart {
		actions.Waiting[cts.Container.Name] = kubecontainer.Waiting{Reason: "ContainerCreating", Message: err.Error()}
	}
}

// needsPodIP reports whether the containers cs of pod, about to start, need
// the pod's IPs read from the runtime: always for a pod on its own network
// (its /etc/hosts, and a postStart httpGet without a host, go to them);
// for a host-network pod (whose hooks go to the node's IP) only when a
// container's env refers to them.
func needsPodIP(pod *v1.Pod, cs []containerToStart) bool {
	if !pod.Spec.HostNetwork {
		return true
	}
	for _, cts := range cs {
		for _, e := range cts.Container.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && strings.HasPrefix(e.ValueFrom.FieldRef.FieldPath, "status.podIP") {
				return true
			}
		}
	}
	return false
}

// ensureCgroup creates or updates the pod's cgroup. Its error matters only
// when a sandbox is about to be created in it: a running pod whose limits
// cannot change now (a memory limit below its usage) keeps running, and
// the next sync tries again.
func (s *Syncer) ensureCgroup(ctx context.Context, pod *v1.Pod) error {
	if s.cfg.Cgroups == nil {
		return nil
	}
	if err := s.cfg.Cgroups.EnsurePod(ctx, pod); err != nil {
		return fmt.Errorf("pod cgroup: %w", err)
	}
	return nil
}

// resizedIDs are the IDs of the containers resized in place.
func resizedIDs(rs []containerToResize) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}
