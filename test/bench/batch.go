package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// batchPollInterval is how often a batch's progress is read: it adds at
// most that to figures of seconds.
const batchPollInterval = 50 * time.Millisecond

// batchStart writes n host-network pods into the manifest directory at
// once (each written aside and renamed in, as a config tool does) and
// times until /pods shows all of them running; then removes their
// manifests and times until the runtime holds none of their sandboxes.
func (a *agentProc) batchStart(ctx context.Context, rt *ctrdtest.Containerd, image string, n int) (start, remove time.Duration, err error) {
	for i := 0; i < n; i++ {
		m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: batch-%d\nspec:\n  hostNetwork: true\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: main\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", i, image)
		if err := os.WriteFile(filepath.Join(a.manifest, fmt.Sprintf(".batch-%d.tmp", i)), []byte(m), 0o644); err != nil {
			return 0, 0, err
		}
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if err := os.Rename(filepath.Join(a.manifest, fmt.Sprintf(".batch-%d.tmp", i)), filepath.Join(a.manifest, fmt.Sprintf("batch-%d.yaml", i))); err != nil {
			return 0, 0, err
		}
	}
	// /pods of n pods is not cheap to serve: polled every 50ms (at 5ms the
	// bench's own polling took a good part of a core from the agent).
	for deadline := t0.Add(10 * time.Minute); ; time.Sleep(batchPollInterval) {
		pods, err := a.pods()
		up := 0
		if err == nil {
			for i := range pods {
				if running(pods[i:i+1], pods[i].Name) {
					up++
				}
			}
		}
		if up >= n {
			start = time.Since(t0)
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("only %d of %d pods running after 10 minutes", up, n)
		}
	}
	t1 := time.Now()
	for i := 0; i < n; i++ {
		_ = os.Remove(filepath.Join(a.manifest, fmt.Sprintf("batch-%d.yaml", i)))
	}
	for deadline := t1.Add(5 * time.Minute); ; time.Sleep(batchPollInterval) {
		sandboxes, err := rt.Runtime().ListPodSandbox(ctx, nil)
		if err != nil {
			return 0, 0, err
		}
		left := 0
		for _, sb := range sandboxes {
			if strings.HasPrefix(sb.GetMetadata().GetName(), "batch-") && strings.HasSuffix(sb.GetMetadata().GetName(), "-"+a.node) {
				left++
			}
		}
		if left == 0 {
			remove = time.Since(t1)
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("%d of %d sandboxes still in the runtime 5 minutes after their manifests were removed", left, n)
		}
	}
	return start, remove, a.drain(ctx, rt)
}

// graceKill runs a container that ignores SIGTERM with a 2s grace period,
// deletes its manifest, and measures how long after the grace deadline
// (delete + 2s) the runtime says the container finished; n times.
func (a *agentProc) graceKill(ctx context.Context, rt *ctrdtest.Containerd, image string, n int) ([]time.Duration, error) {
	const grace = 2 * time.Second
	var out []time.Duration
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("stubborn-%d", i)
		m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  hostNetwork: true\n  terminationGracePeriodSeconds: %d\n  containers:\n  - name: main\n    image: %s\n    command: [\"sh\", \"-c\", \"trap '' TERM; while true; do sleep 1; done\"]\n", name, int(grace.Seconds()), image)
		file := filepath.Join(a.manifest, name+".yaml")
		if err := os.WriteFile(file, []byte(m), 0o644); err != nil {
			return nil, err
		}
		podName := name + "-" + a.node
		var id string
		for deadline := time.Now().Add(time.Minute); id == ""; time.Sleep(pollInterval) {
			ctrs, err := rt.Runtime().ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}, LabelSelector: map[string]string{"io.kubernetes.pod.name": podName}})
			if err == nil && len(ctrs) == 1 {
				id = ctrs[0].Id
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%s not running within a minute", podName)
			}
		}
		time.Sleep(500 * time.Millisecond) // let the shell set its trap
		deleted := time.Now()
		if err := os.Remove(file); err != nil {
			return nil, err
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			st, err := rt.Runtime().ContainerStatus(ctx, id, false)
			if err != nil || st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
				finished := time.Now()
				if err == nil {
					finished = time.Unix(0, st.GetStatus().GetFinishedAt())
				}
				out = append(out, finished.Sub(deleted.Add(grace)))
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%s still running a minute after its manifest went", podName)
			}
		}
		if err := a.drain(ctx, rt); err != nil {
			return nil, err
		}
	}
	return out, nil
}
