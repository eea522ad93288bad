package podview

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/server"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// The streaming endpoints reach the newest instance of a container that
// runs, and the ready sandbox; anything else is an error of the kind the
// server answers with the right status.
func TestRunningContainerAndSandbox(t *testing.T) {
	p := pod("ns", "web")
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "term", TTY: true}, v1.Container{Name: "done"}, v1.Container{Name: "later"})
	p.Spec.InitContainers = []v1.Container{{Name: "init"}}
	p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Stdin: true, TTY: true}}}
	v := New(Config{Pods: fakePods{p}, Statuses: fakeStatuses{}, Runtime: fakeRuntime{p.UID: {
		Sandboxes: []*runtimeapi.PodSandboxStatus{
			{Id: "sb-2", State: runtimeapi.PodSandboxState_SANDBOX_READY},
			{Id: "sb-1", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY},
		},
		Containers: []*kubecontainer.ContainerStatus{
			{ID: "app-2", Name: "app", State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			{ID: "app-1", Name: "app", State: runtimeapi.ContainerState_CONTAINER_EXITED},
			{ID: "term-1", Name: "term", State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			{ID: "done-1", Name: "done", State: runtimeapi.ContainerState_CONTAINER_EXITED, ExitCode: 2, Reason: "Error"},
			{ID: "init-1", Name: "init", State: runtimeapi.ContainerState_CONTAINER_EXITED},
			{ID: "debug-1", Name: "debug", State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		},
	}}})

	if c, err := v.RunningContainer("ns", "web", "", "app"); err != nil || c.ID != "app-2" || c.TTY {
		t.Errorf("app: %+v %v, want app-2 without a terminal", c, err)
	}
	if c, err := v.RunningContainer("ns", "web", p.UID, "term"); err != nil || c.ID != "term-1" || !c.TTY {
		t.Errorf("term: %+v %v, want term-1 with its terminal", c, err)
	}
	if c, err := v.RunningContainer("ns", "web", "", "debug"); err != nil || c.ID != "debug-1" || !c.TTY {
		t.Errorf("ephemeral debug: %+v %v, want debug-1 with its terminal", c, err)
	}
	if id, err := v.ReadySandbox("ns", "web", ""); err != nil || id != "sb-2" {
		t.Errorf("ReadySandbox: %q %v, want sb-2", id, err)
	}
	tests := []struct {
		name, pod, container string
		uid                  types.UID
		kind                 error
		want                 string
	}{
		{"unknown pod", "nope", "app", "", server.ErrNotFound, "pod ns/nope is not on this node"},
		{"other uid", "web", "app", "other", server.ErrNotFound, "has UID uid-web, not other"},
		{"unknown container", "web", "nope", "", server.ErrNotFound, `container "nope" is not valid for pod ns/web (it has init, app, term, done, later, debug)`},
		{"exited", "web", "done", "", server.ErrNotRunning, `container "done" of pod ns/web is not running (exited with code 2, Error)`},
		{"init done", "web", "init", "", server.ErrNotRunning, "exited with code 0"},
		{"not created", "web", "later", "", server.ErrNotRunning, "has not been created yet"},
	}
	for _, tt := range tests {
		_, err := v.RunningContainer("ns", tt.pod, tt.uid, tt.container)
		if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %v saying %q", tt.name, err, tt.kind, tt.want)
		}
	}

	q := pod("ns", "queued")
	v = New(Config{Pods: fakePods{q}, Statuses: fakeStatuses{}, Runtime: fakeRuntime{}})
	if _, err := v.ReadySandbox("ns", "queued", ""); !errors.Is(err, server.ErrNotRunning) || !strings.Contains(err.Error(), "no running sandbox") {
		t.Errorf("ReadySandbox of a pod without a sandbox: %v", err)
	}
}
