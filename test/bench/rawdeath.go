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
	// bestEffort: its containers get a BestEffort container's CPU shares
	// and OOM score, as the agent gives them.
	bestEffort bool
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
	c := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "main", Attempt: attempt},
		Image:    &runtimeapi.ImageSpec{Image: imageID, UserSpecifiedImage: image},
		Command:  []string{"sleep", "3600"},
		Labels:   labels,
		LogPath:  "main/" + strconv.Itoa(int(attempt)) + ".log",
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: p.sandbox.Linux.SecurityContext.NamespaceOptions,
		}},
	}
	if p.bestEffort {
		c.Linux.Resources = &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000}
	}
	return c
}

// rawKiller is the floor under the agent's death-to-replacement figure,
// measured on the same runtime by direct CRI calls: a host-network pod's
// container is SIGKILLed and timed to the runtime's CONTAINER_STOPPED
// event on GetContainerEvents (detect), then a replacement container is
// created and started in the same sandbox (replace = detect + create +
// start). Any agent's evented PLEG sits on these calls. Its pod carries no
// node label, so an agent on the same runtime leaves it alone, and the
// bench can take its kills in turn with the agent's, in the same minutes.
type rawKiller struct {
	rt       *ctrdtest.Containerd
	pod      *rawPod
	sandbox  string
	imageID  string
	image    string
	id       string // the running container
	attempt  uint32
	watch    *startWatch
	rmCgroup func()
}

// newRawKiller makes the pod and starts its first container; close
// removes it. Its kills are timed by the runtime's events, which watch
// follows.
func newRawKiller(ctx context.Context, rt *ctrdtest.Containerd, watch *startWatch, image, base string) (_ *rawKiller, err error) {
	p, err := newRawPod(base, "rawdeath", fmt.Sprintf("bench-rawdeath-%d", os.Getpid()), runtimeapi.NamespaceMode_NODE)
	if err != nil {
		return nil, err
	}
	imageID, err := rawImageID(ctx, rt, image)
	if err != nil {
		return nil, err
	}
	k := &rawKiller{rt: rt, pod: p, imageID: imageID, image: image, watch: watch}
	// The agent's victims are BestEffort pods: their cgroups, and so
	// their processes (runc init while a container starts, the dying
	// process while it exits), get cpu.shares 2. The floor's pod gets the
	// same, or it would be measured with a priority the agent's pods do
	// not have whenever anything else wants the CPU.
	cg, rmCgroup, err := rawCgroup(rt.CgroupParent(), "rawdeath-"+p.sandbox.Metadata.Uid)
	if err != nil {
		return nil, err
	}
	k.rmCgroup = rmCgroup
	if err := bestEffortCPU(cg); err != nil {
		rmCgroup()
		return nil, err
	}
	p.sandbox.Linux.CgroupParent = cg
	p.bestEffort = true
	if k.sandbox, err = rt.Runtime().RunPodSandbox(ctx, p.sandbox, ""); err != nil {
		rmCgroup()
		return nil, err
	}
	defer func() {
		if err != nil {
			k.close()
		}
	}()
	if k.id, err = k.createStart(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *rawKiller) createStart(ctx context.Context) (string, error) {
	id, err := k.rt.Runtime().CreateContainer(ctx, k.sandbox, k.pod.container(k.imageID, k.image, k.attempt), k.pod.sandbox)
	if err != nil {
		return "", err
	}
	return id, k.rt.Runtime().StartContainer(ctx, id)
}

// kill SIGKILLs the running container at a random moment of the next
// half second, waits for the runtime's CONTAINER_STOPPED event (detect),
// and then creates and starts the replacement, timed to its
// CONTAINER_STARTED event (replace), as the agent's are.
func (k *rawKiller) kill(ctx context.Context) (detect, replace time.Duration, err error) {
	pid, err := k.rt.ContainerPID(ctx, k.id)
	if err != nil {
		return 0, 0, err
	}
	time.Sleep(time.Duration(rand.Int64N(int64(500 * time.Millisecond))))
	name := k.pod.sandbox.Metadata.Name
	stopped := k.watch.expectEvent(name, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		k.watch.forget(name)
		return 0, 0, fmt.Errorf("kill pid %d: %w", pid, err)
	}
	at, err := k.watch.await(name, stopped, "CONTAINER_STOPPED", eventWait)
	if err != nil {
		return 0, 0, err
	}
	detect = at.Sub(start)
	k.attempt++
	started := k.watch.expect(name)
	if k.id, err = k.createStart(ctx); err != nil {
		k.watch.forget(name)
		return 0, 0, err
	}
	if at, err = k.watch.await(name, started, "CONTAINER_STARTED", eventWait); err != nil {
		return 0, 0, err
	}
	return detect, at.Sub(start), nil
}

// close removes the pod.
func (k *rawKiller) close() {
	_ = k.rt.Runtime().StopPodSandbox(context.Background(), k.sandbox)
	_ = k.rt.Runtime().RemovePodSandbox(context.Background(), k.sandbox)
	if k.rmCgroup != nil {
		k.rmCgroup()
	}
}

// bestEffortCPU gives cgroup path (under every hierarchy) the CPU weight
// of a BestEffort pod's cgroup: cpu.shares 2 on v1, cpu.weight 1 on v2.
func bestEffortCPU(path string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		d := filepath.Join(m, path)
		for file, v := range map[string]string{"cpu.shares": "2", "cpu.weight": "1"} {
			f := filepath.Join(d, file)
			if _, err := os.Stat(f); err != nil {
				continue
			}
			if err := os.WriteFile(f, []byte(v), 0o644); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
	}
	return nil
}
