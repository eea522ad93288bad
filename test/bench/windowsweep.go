package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// windowSweep is the experiment behind the agent's window of sandbox
// starts (podworkers/sandbox_window.go), with direct CRI calls and no
// agent: n pods, each with its pod cgroup, started at once, one goroutine
// each, with at most par RunPodSandbox calls in flight (all n for none),
// for each par in pars; it prints when the median and the last pod's
// StartContainer returned, then removes the pods (untimed).
func windowSweep(ctx context.Context, rt *ctrdtest.Containerd, image, base string, n int, network runtimeapi.NamespaceMode, pars []int, rounds int) error {
	for round := range rounds {
		for _, par := range pars {
			med, last, err := windowedBatch(ctx, rt, image, base, n, network, par, round)
			if err != nil {
				return err
			}
			fmt.Printf("  %d pods, %2d sandboxes at a time, round %d: median pod running after %6.0f ms, all after %6.0f ms\n", n, par, round+1, ms(med), ms(last))
		}
	}
	return nil
}

func windowedBatch(ctx context.Context, rt *ctrdtest.Containerd, image, base string, n int, network runtimeapi.NamespaceMode, par, round int) (med, last time.Duration, err error) {
	imageID, err := rawImageID(ctx, rt, image)
	if err != nil {
		return 0, 0, err
	}
	turns := make(chan struct{}, par)
	took := make([]time.Duration, n)
	errs := make([]error, n)
	sandboxes := make([]string, n)
	rmCgroups := make([]func(), n)
	defer func() {
		var wg sync.WaitGroup
		for _, sb := range sandboxes {
			if sb != "" {
				wg.Go(func() {
					_ = rt.Runtime().StopPodSandbox(context.Background(), sb)
					_ = rt.Runtime().RemovePodSandbox(context.Background(), sb)
				})
			}
		}
		wg.Wait()
		for _, rm := range rmCgroups {
			if rm != nil {
				rm()
			}
		}
	}()
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		wg.Go(func() {
			defer func() { took[i] = time.Since(t0) }()
			name := fmt.Sprintf("window-%d-%d-%d", par, round, i)
			p, err := newRawPod(base, name, fmt.Sprintf("bench-%s-%d", name, os.Getpid()), network)
			if err != nil {
				errs[i] = err
				return
			}
			cg, rm, err := rawCgroup(rt.CgroupParent(), "raw-"+p.sandbox.Metadata.Uid)
			if err != nil {
				errs[i] = err
				return
			}
			rmCgroups[i] = rm
			p.sandbox.Linux.CgroupParent = cg
			turns <- struct{}{}
			sandboxes[i], err = rt.Runtime().RunPodSandbox(ctx, p.sandbox, "")
			<-turns
			if err != nil {
				errs[i] = err
				return
			}
			id, err := rt.Runtime().CreateContainer(ctx, sandboxes[i], p.container(imageID, image, 0), p.sandbox)
			if err == nil {
				err = rt.Runtime().StartContainer(ctx, id)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, fmt.Errorf("%d pods, %d sandboxes at a time: %w", n, par, err)
	}
	slices.Sort(took)
	return median(took), took[n-1], nil
}
