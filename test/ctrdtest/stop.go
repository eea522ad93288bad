package ctrdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	internalapi "k8s.io/cri-api/pkg/apis"
)

// Stop removes every pod sandbox and container through CRI (bounded by
// ctx), closes the CRI clients, then tears the instance down exactly like
// Cleanup. The teardown always runs to completion under its own bounded
// context, even when ctx is already cancelled (as after a failed test), so
// Stop is safe in t.Cleanup. It is idempotent: later calls return the
// first call's result. If Cleanup already tore the instance down, Stop
// only waits for the daemon process to be reaped.
func (c *Containerd) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() { c.stopErr = c.stop(ctx) })
	return c.stopErr
}

func (c *Containerd) stop(ctx context.Context) error {
	var errs []error
	if c.runtime != nil && c.running() && ctx.Err() == nil {
		errs = append(errs, removeAllPods(ctx, c.runtime))
	}
	if c.runtime != nil {
		errs = append(errs, c.runtime.Close(ctx))
	}
	if c.images != nil {
		errs = append(errs, c.images.Close(ctx))
	}
	cctx, cancel := cleanupContext()
	defer cancel()
	// If Cleanup already removed the instance, its slot may belong to a new
	// instance by now: tearing down by our in-memory record would delete
	// that instance's bridge and cgroups.
	if _, err := os.Stat(filepath.Join(c.inst.Dir, stateFile)); err == nil {
		errs = append(errs, teardown(cctx, c.inst))
	} else if !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("stat instance record: %w", err))
	}
	if exited := c.exitedCh(); exited != nil {
		select {
		case <-exited:
		case <-cctx.Done():
			errs = append(errs, fmt.Errorf("containerd %d of %q not reaped: %w", c.PID(), c.inst.Dir, cctx.Err()))
		}
	}
	return errors.Join(errs...)
}

// running reports whether the daemon process has not exited.
func (c *Containerd) running() bool {
	exited := c.exitedCh()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// removeAllPods stops and removes every pod sandbox, then removes any
// container left outside a sandbox. It keeps going after errors.
func removeAllPods(ctx context.Context, rs internalapi.RuntimeService) error {
	var errs []error
	pods, err := rs.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	for _, p := range pods {
		if err := rs.StopPodSandbox(ctx, p.GetId()); err != nil {
			errs = append(errs, fmt.Errorf("stop pod sandbox %q: %w", p.GetId(), err))
		}
		if err := rs.RemovePodSandbox(ctx, p.GetId()); err != nil {
			errs = append(errs, fmt.Errorf("remove pod sandbox %q: %w", p.GetId(), err))
		}
	}
	ctrs, err := rs.ListContainers(ctx, nil)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list containers: %w", err))...)
	}
	for _, ct := range ctrs {
		if err := rs.RemoveContainer(ctx, ct.GetId()); err != nil {
			errs = append(errs, fmt.Errorf("remove container %q: %w", ct.GetId(), err))
		}
	}
	return errors.Join(errs...)
}
