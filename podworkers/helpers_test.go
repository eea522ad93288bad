package podworkers

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newPod returns a pod named name with the given containers (image
// "img-<name>") and restart policy Always; opts change it.
func newPod(name string, containers []string, opts ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{
			Name:            c,
			Image:           "img-" + c,
			ImagePullPolicy: v1.PullIfNotPresent,
		})
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withRestartPolicy(rp v1.RestartPolicy) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.RestartPolicy = rp }
}

func withHostNetwork() func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.HostNetwork = true }
}

func specOf(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// sandboxStatus is a sandbox of pod created at created, ready or not, that
// matches the pod's sandbox hash and has an IP.
func sandboxStatus(pod *v1.Pod, id string, attempt uint32, ready bool, created time.Time) *runtimeapi.PodSandboxStatus {
	state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		state = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &runtimeapi.PodSandboxStatus{
		Id:          id,
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		State:       state,
		CreatedAt:   created.UnixNano(),
		Network:     &runtimeapi.PodSandboxNetworkStatus{Ip: "10.1.2.3"},
		Labels:      kubecontainer.SandboxLabels(pod),
		Annotations: map[string]string{kubecontainer.AnnotationSandboxHash: kubecontainer.HashSandbox(pod)},
	}
}

// ctrStatus is a container of pod whose hash matches its spec (when the
// spec has it).
func ctrStatus(pod *v1.Pod, name, id string, state runtimeapi.ContainerState, restarts int, exitCode int32, created time.Time) *kubecontainer.ContainerStatus {
	cs := &kubecontainer.ContainerStatus{
		ID:           id,
		Name:         name,
		State:        state,
		CreatedAt:    created,
		StartedAt:    created.Add(time.Second),
		ExitCode:     exitCode,
		RestartCount: restarts,
		Image:        "img-" + name,
	}
	if state == runtimeapi.ContainerState_CONTAINER_EXITED {
		cs.FinishedAt = created.Add(2 * time.Second)
	}
	if c := specOf(pod, name); c != nil {
		cs.Hash = kubecontainer.HashContainer(c)
	}
	return cs
}

func podStatus(pod *v1.Pod, sandboxes []*runtimeapi.PodSandboxStatus, containers ...*kubecontainer.ContainerStatus) *kubecontainer.PodStatus {
	st := &kubecontainer.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, Sandboxes: sandboxes, Containers: containers, TimeStamp: t0}
	if len(sandboxes) > 0 {
		st.IPs = kubecontainer.SandboxIPs(sandboxes[0])
	}
	return st
}
