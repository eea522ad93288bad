package podworkers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// killContainers stops the given containers concurrently, each after its
// preStop hook, within grace seconds in all.
func (s *Syncer) killContainers(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, kill map[string]containerToKill, grace int64) error {
	if len(kill) == 0 {
		return nil
	}
	deadline := s.cfg.Clock.Now().Add(time.Duration(grace) * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, len(kill))
	for id, k := range kill {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := deadline
			if k.Grace != nil {
				// A failed probe's own grace period replaces the pod's.
				deadline = s.cfg.Clock.Now().Add(time.Duration(*k.Grace) * time.Second)
			}
			if err := s.killContainer(ctx, pod, status, containerKill{id: id, containerToKill: k, deadline: deadline}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// containerKill is one container to stop: which (its ID), its name and
// why, and when what is left of its grace period ends.
type containerKill struct {
	id string
	containerToKill
	deadline time.Time
}

// killContainer runs the container's preStop hook, then stops it (SIGTERM,
// SIGKILL after what is left of the grace period until k.deadline). Grace
// periods only shrink: the hook's time is taken from the container's.
// status, when not nil, gives the hook the pod's IPs.
func (s *Syncer) killContainer(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, k containerKill) error {
	id, deadline := k.id, k.deadline
	logger := klog.FromContext(ctx).WithValues("container", k.Name, "containerID", id)
	if c := kubecontainer.SpecOf(pod, k.Name); c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if left := deadline.Sub(s.cfg.Clock.Now()); left > 0 {
			var ips []string
			if status != nil {
				ips = status.IPs
			}
			if err := s.hooks.run(ctx, hookTarget{pod: pod, container: c, containerID: id, podIPs: ips}, c.Lifecycle.PreStop, left); err != nil {
				logger.Info("FailedPreStopHook", "err", err)
				s.containerEvent(pod, c, v1.EventTypeWarning, events.FailedPreStop, "PreStopHook failed: %v", err)
			}
		}
	}
	grace := int64(0)
	if left := deadline.Sub(s.cfg.Clock.Now()); left > 0 {
		grace = int64((left + time.Second - 1) / time.Second)
	}
	logger.Info("Killing container", "reason", k.Reason, "gracePeriod", grace)
	if c := kubecontainer.SpecOf(pod, k.Name); c != nil {
		s.containerEvent(pod, c, v1.EventTypeNormal, events.Killing, "Stopping container %s", k.Name)
	}
	if err := s.cfg.Runtime.StopContainer(ctx, id, grace); err != nil && !kubecontainer.IsNotFound(err) {
		return fmt.Errorf("stop container %q (%s): %w", k.Name, id, err)
	}
	return nil
}
