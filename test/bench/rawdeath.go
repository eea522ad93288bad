package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// rawDeath is the floor under the agent's death-to-replacement figure,
// measured on the same runtime with no agent: a host-network pod's
// container is SIGKILLed and timed to the runtime's CONTAINER_STOPPED
// event on GetContainerEvents (detect), then a replacement container is
// created and started in the same sandbox (replace = detect + create +
// start). Any agent's evented PLEG sits on these calls.
func rawDeath(ctx context.Context, rt *ctrdtest.Containerd, image, base string, n int) (detect, replace []time.Duration, err error) {
	uid := fmt.Sprintf("bench-rawdeath-%d", os.Getpid())
	name := "rawdeath"
	logDir := filepath.Join(base, "rawlogs", uid)
	if err := os.MkdirAll(filepath.Join(logDir, "main"), 0o755); err != nil {
		return nil, nil, err
	}
	labels := map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": uid}
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
	sbConfig := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		LogDirectory: logDir,
		Labels:       labels,
		Linux:        &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: ns}},
	}
	img, err := rt.Images().ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image}, false)
	if err != nil {
		return nil, nil, fmt.Errorf("image %s: %w", image, err)
	}
	if img.GetImage() == nil {
		return nil, nil, fmt.Errorf("image %s is not in the runtime", image)
	}
	sb, err := rt.Runtime().RunPodSandbox(ctx, sbConfig, "")
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		_ = rt.Runtime().StopPodSandbox(context.Background(), sb)
		_ = rt.Runtime().RemovePodSandbox(context.Background(), sb)
	}()
	ctrLabels := map[string]string{"io.kubernetes.container.name": "main"}
	for k, v := range labels {
		ctrLabels[k] = v
	}
	createStart := func(attempt uint32) (string, error) {
		id, err := rt.Runtime().CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "main", Attempt: attempt},
			Image:    &runtimeapi.ImageSpec{Image: img.Image.Id, UserSpecifiedImage: image},
			Command:  []string{"sleep", "3600"},
			Labels:   ctrLabels,
			LogPath:  "main/" + strconv.Itoa(int(attempt)) + ".log",
			Linux:    &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns}},
		}, sbConfig)
		if err != nil {
			return "", err
		}
		return id, rt.Runtime().StartContainer(ctx, id)
	}

	evCtx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	events := make(chan *runtimeapi.ContainerEventResponse, 64)
	connected := make(chan struct{})
	go func() {
		_ = rt.Runtime().GetContainerEvents(evCtx, events, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(connected) })
	}()
	select {
	case <-connected:
	case <-time.After(10 * time.Second):
		return nil, nil, fmt.Errorf("%s: no GetContainerEvents stream", rt.Name())
	}

	id, err := createStart(0)
	if err != nil {
		return nil, nil, err
	}
	for i := 1; i <= n; i++ {
		pid, err := rt.ContainerPID(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		time.Sleep(time.Duration(rand.Int64N(int64(500 * time.Millisecond))))
		drain(events)
		start := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return nil, nil, fmt.Errorf("kill pid %d: %w", pid, err)
		}
		if err := awaitStopped(events, id, 30*time.Second); err != nil {
			return nil, nil, err
		}
		detect = append(detect, time.Since(start))
		if id, err = createStart(uint32(i)); err != nil {
			return nil, nil, err
		}
		replace = append(replace, time.Since(start))
	}
	return detect, replace, nil
}

func drain(ch chan *runtimeapi.ContainerEventResponse) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// awaitStopped waits for the runtime's CONTAINER_STOPPED event of id.
func awaitStopped(events chan *runtimeapi.ContainerEventResponse, id string, d time.Duration) error {
	timeout := time.After(d)
	for {
		select {
		case ev := <-events:
			if ev.GetContainerId() == id && ev.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("no CONTAINER_STOPPED event for %s within %v", id, d)
		}
	}
}
