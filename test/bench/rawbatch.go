package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// rawCgroup makes a pod cgroup as any agent must (issue 21 item 4): the
// directory parent/name in every cgroup hierarchy mounted under
// /sys/fs/cgroup, which the sandbox then names as its cgroup parent. It
// returns the cgroupfs path and a func that removes the directories (once
// the pod's containers are gone).
func rawCgroup(parent, name string) (string, func(), error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return "", nil, err
	}
	path := parent + "/" + name
	var made []string
	remove := func() {
		for _, d := range made {
			_ = os.Remove(d)
		}
	}
	for _, m := range mounts {
		d := filepath.Join(m, path)
		if err := os.MkdirAll(d, 0o755); err != nil {
			remove()
			return "", nil, err
		}
		made = append(made, d)
	}
	return path, remove, nil
}

// cgroupMounts are the cgroup file systems (v1 hierarchies, the v2 one)
// mounted under /sys/fs/cgroup.
func cgroupMounts() ([]string, error) {
	all, err := ctrdtest.CgroupMounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range all {
		if strings.HasPrefix(m, "/sys/fs/cgroup") {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no cgroup file system mounted under /sys/fs/cgroup")
	}
	return out, nil
}

// rawBatch is the floor under the agent's batch figure: n host-network
// pods, each with its pod cgroup, started with direct CRI calls all at
// once (one goroutine per pod, as the agent has one worker per pod:
// ImageStatus, RunPodSandbox, CreateContainer, StartContainer), timed
// until the last StartContainer returned; then removed the same way
// (StopContainer with no grace, StopPodSandbox, RemovePodSandbox), timed
// until the last returned.
func rawBatch(ctx context.Context, rt *ctrdtest.Containerd, image, base string, n int) (start, remove time.Duration, err error) {
	type pod struct {
		p        *rawPod
		rmCgroup func()
		sb, ctr  string
	}
	pods := make([]*pod, n)
	defer func() {
		for _, p := range pods {
			if p != nil && p.rmCgroup != nil {
				p.rmCgroup()
			}
		}
	}()
	for i := range pods {
		name := fmt.Sprintf("rawbatch-%d", i)
		p, err := newRawPod(base, name, fmt.Sprintf("bench-rawbatch-%d-%d", os.Getpid(), i), runtimeapi.NamespaceMode_NODE)
		if err != nil {
			return 0, 0, err
		}
		pods[i] = &pod{p: p}
	}
	each := func(f func(p *pod) error) error {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, p := range pods {
			wg.Go(func() { errs[i] = f(p) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	t0 := time.Now()
	err = each(func(p *pod) error {
		cg, rm, err := rawCgroup(rt.CgroupParent(), "raw-"+p.p.sandbox.Metadata.Uid)
		if err != nil {
			return err
		}
		p.rmCgroup = rm
		p.p.sandbox.Linux.CgroupParent = cg
		imageID, err := rawImageID(ctx, rt, image)
		if err != nil {
			return err
		}
		if p.sb, err = rt.Runtime().RunPodSandbox(ctx, p.p.sandbox, ""); err != nil {
			return err
		}
		if p.ctr, err = rt.Runtime().CreateContainer(ctx, p.sb, p.p.container(imageID, image, 0), p.p.sandbox); err != nil {
			return err
		}
		return rt.Runtime().StartContainer(ctx, p.ctr)
	})
	start = time.Since(t0)
	t1 := time.Now()
	rmErr := each(func(p *pod) error {
		if p.sb == "" {
			return nil
		}
		if p.ctr != "" {
			if err := rt.Runtime().StopContainer(ctx, p.ctr, 0); err != nil {
				return err
			}
		}
		if err := rt.Runtime().StopPodSandbox(ctx, p.sb); err != nil {
			return err
		}
		return rt.Runtime().RemovePodSandbox(ctx, p.sb)
	})
	remove = time.Since(t1)
	if err = errors.Join(err, rmErr); err != nil {
		return 0, 0, fmt.Errorf("raw batch of %d: %w", n, err)
	}
	return start, remove, nil
}
