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

// rawPod is a pod of one container, "main" running sleep, made with direct
// CRI calls and no agent: the floor the bench measures the agent against.
type rawPod struct {
	sandbox *runtimeapi.PodSandboxConfig
}

// newRawPod makes the sandbox config of pod name with uid, on the node's
// network or its own (NamespaceMode_NODE or _POD), and its log directory
// under base.
func newRawPod(base, name, uid string, network runtimeapi.NamespaceMode) (*rawPod, error) {
	logDir := filepath.Join(base, "rawlogs", uid)
	if err := os.MkdirAll(filepath.Join(logDir, "main"), 0o755); err != nil {
		return nil, err
	}
	sb := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		LogDirectory: logDir,
		Labels:       map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": uid},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: network, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
			// Every sandbox the kubelet (and minikubelet) makes runs pause
			// under the runtime's default seccomp profile; runc compiling
			// it is part of any pod's start (16 ms of the median here, 12
			// runs with and without).
			Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
		}},
	}
	if network != runtimeapi.NamespaceMode_NODE {
		sb.Hostname = name // runc refuses a hostname without a UTS namespace of its own
	}
	return &rawPod{sandbox: sb}, nil
}

// rawImageID asks the runtime for image, as an agent checks an image
// before using it, and returns its ID.
func rawImageID(ctx context.Context, rt *ctrdtest.Containerd, image string) (string, error) {
	img, err := rt.Images().ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image}, false)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", image, err)
	}
	if img.GetImage() == nil {
		return "", fmt.Errorf("image %s is not in the runtime", image)
	}
	return img.GetImage().GetId(), nil
}

// container is the config of the pod's container at restart attempt.
func (p *rawPod) container(imageID, image string, attempt uint32) *runtimeapi.ContainerConfig {
	labels := map[string]string{"io.kubernetes.container.name": "main"}
	for k, v := range p.sandbox.Labels {
		labels[k] = v
	}
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "main", Attempt: attempt},
		Image:    &runtimeapi.ImageSpec{Image: imageID, UserSpecifiedImage: image},
		Command:  []string{"sleep", "3600"},
		Labels:   labels,
		LogPath:  "main/" + strconv.Itoa(int(attempt)) + ".log",
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: p.sandbox.Linux.SecurityContext.NamespaceOptions,
		}},
	}
}

// rawDeath is the floor under the agent's death-to-replacement figure,
// measured on the same runtime with no agent: a host-network pod's
// container is SIGKILLed and timed to the runtime's CONTAINER_STOPPED
// event on GetContainerEvents (detect), then a replacement container is
// created and started in the same sandbox (replace = detect + create +
// start). Any agent's evented PLEG sits on these calls.
func rawDeath(ctx context.Context, rt *ctrdtest.Containerd, image, base string, n int) (detect, replace []time.Duration, err error) {
	p, err := newRawPod(base, "rawdeath", fmt.Sprintf("bench-rawdeath-%d", os.Getpid()), runtimeapi.NamespaceMode_NODE)
	if err != nil {
		return nil, nil, err
	}
	imageID, err := rawImageID(ctx, rt, image)
	if err != nil {
		return nil, nil, err
	}
	sb, err := rt.Runtime().RunPodSandbox(ctx, p.sandbox, "")
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		_ = rt.Runtime().StopPodSandbox(context.Background(), sb)
		_ = rt.Runtime().RemovePodSandbox(context.Background(), sb)
	}()
	createStart := func(attempt uint32) (string, error) {
		id, err := rt.Runtime().CreateContainer(ctx, sb, p.container(imageID, image, attempt), p.sandbox)
		if err != nil {
			return "", err
		}
		return id, rt.Runtime().StartContainer(ctx, id)
	}

	evCtx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	events, err := containerEvents(evCtx, rt)
	if err != nil {
		return nil, nil, err
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
		drainEvents(events)
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

// drainEvents drops the events already received.
func drainEvents(ch <-chan *runtimeapi.ContainerEventResponse) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// awaitStopped waits for the runtime's CONTAINER_STOPPED event of id.
func awaitStopped(events <-chan *runtimeapi.ContainerEventResponse, id string, d time.Duration) error {
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
