package podview

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/server"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// RunningContainer finds the running instance of a container of a pod the
// node runs, for /exec, /attach and /run: the pod among the pods the
// sources want (uid, if given, must be its UID), the container in its spec
// (containers, init and ephemeral containers), its newest instance in the
// runtime as the PLEG cache last saw it. A pod or container the node does
// not have is an error wrapping server.ErrNotFound; one that does not run
// now, server.ErrNotRunning, saying how it is.
func (v *View) RunningContainer(namespace, name string, uid types.UID, container string) (server.StreamContainer, error) {
	pod, err := v.findPod(namespace, name, uid)
	if err != nil {
		return server.StreamContainer{}, err
	}
	spec := kubecontainer.SpecOf(pod, container)
	if spec == nil {
		return server.StreamContainer{}, kindError(server.ErrNotFound, "container %q is not valid for pod %s/%s (it has %s)", container, namespace, name, containerNames(pod))
	}
	st, err := v.cfg.Runtime.Get(pod.UID)
	if err != nil {
		return server.StreamContainer{}, fmt.Errorf("status of pod %s/%s: %w", namespace, name, err)
	}
	cs := st.FindContainer(container)
	switch {
	case cs == nil:
		return server.StreamContainer{}, kindError(server.ErrNotRunning, "container %q of pod %s/%s has not been created yet", container, namespace, name)
	case cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING:
		return server.StreamContainer{}, kindError(server.ErrNotRunning, "container %q of pod %s/%s is not running (%s)", container, namespace, name, describeState(cs))
	}
	return server.StreamContainer{ID: cs.ID, TTY: spec.TTY}, nil
}

// ReadySandbox finds the ready sandbox of a pod the node runs, for
// /portForward, with RunningContainer's errors.
func (v *View) ReadySandbox(namespace, name string, uid types.UID) (string, error) {
	pod, err := v.findPod(namespace, name, uid)
	if err != nil {
		return "", err
	}
	st, err := v.cfg.Runtime.Get(pod.UID)
	if err != nil {
		return "", fmt.Errorf("status of pod %s/%s: %w", namespace, name, err)
	}
	if st != nil {
		for _, sb := range st.Sandboxes {
			if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				return sb.GetId(), nil
			}
		}
	}
	return "", kindError(server.ErrNotRunning, "pod %s/%s has no running sandbox", namespace, name)
}

// findPod finds the pod namespace/name among the pods the sources want.
func (v *View) findPod(namespace, name string, uid types.UID) (*v1.Pod, error) {
	for _, p := range v.cfg.Pods.List() {
		if p.Namespace != namespace || p.Name != name {
			continue
		}
		if uid != "" && p.UID != uid {
			return nil, kindError(server.ErrNotFound, "pod %s/%s on this node has UID %s, not %s", namespace, name, p.UID, uid)
		}
		return p, nil
	}
	return nil, kindError(server.ErrNotFound, "pod %s/%s is not on this node", namespace, name)
}

func containerNames(pod *v1.Pod) string {
	var names []string
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			names = append(names, c.Name)
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	if len(names) == 0 {
		return "no containers"
	}
	return strings.Join(names, ", ")
}

// describeState says how a container that does not run is.
func describeState(cs *kubecontainer.ContainerStatus) string {
	switch cs.State {
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		s := fmt.Sprintf("exited with code %d", cs.ExitCode)
		if cs.Reason != "" {
			s += ", " + cs.Reason
		}
		if !cs.FinishedAt.IsZero() {
			s += " at " + cs.FinishedAt.UTC().Format(time.RFC3339)
		}
		return s
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return "created, not started"
	default:
		return "state unknown"
	}
}

// kindErr is an error of a kind (server.ErrNotFound, server.ErrNotRunning)
// whose text is only its message.
type kindErr struct {
	msg  string
	kind error
}

func kindError(kind error, format string, args ...any) error {
	return &kindErr{msg: fmt.Sprintf(format, args...), kind: kind}
}

func (e *kindErr) Error() string { return e.msg }
func (e *kindErr) Unwrap() error { return e.kind }
