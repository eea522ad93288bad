package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

func withEphemeral(pod *v1.Pod, names ...string) *v1.Pod {
	for _, n := range names {
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: n, Image: "img-" + n},
			TargetContainerName:      "app",
		})
	}
	return pod
}

// Ephemeral containers get statuses of their own, in spec order, never
// ready and with no started field, and count for neither the phase nor
// readiness.
func TestGenerateEphemeral(t *testing.T) {
	pod := withEphemeral(newPod(v1.RestartPolicyAlways, "app"), "debug", "done", "pulling", "gone")
	old := v1.PodStatus{EphemeralContainerStatuses: []v1.ContainerStatus{{
		Name:  "gone",
		Image: "img-gone",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 3, Reason: "Error", ContainerID: "containerd://gone-0"}},
	}}}
	st := Generate(GenerateInput{
		Pod: pod,
		Runtime: runtimeStatus(true, []string{"10.0.0.1"},
			ctr("app", running, 0, 0, 1), ctr("debug", running, 0, 0, 2), ctr("done", exited, 0, 0, 3)),
		Waiting:     map[string]kubecontainer.Waiting{"pulling": {Reason: "ErrImagePull", Message: "no such image"}},
		Old:         old,
		Now:         metav1.NewTime(t0),
		RuntimeName: "containerd",
	})
	if st.Phase != v1.PodRunning {
		t.Errorf("phase %s, want Running", st.Phase)
	}
	for _, c := range st.Conditions {
		if c.Type == v1.PodReady && c.Status != v1.ConditionTrue {
			t.Errorf("Ready %s (%s): ephemeral containers must not count", c.Status, c.Message)
		}
	}
	if len(st.ContainerStatuses) != 1 {
		t.Errorf("containerStatuses %+v: ephemeral containers go elsewhere", st.ContainerStatuses)
	}
	got := st.EphemeralContainerStatuses
	if len(got) != 4 {
		t.Fatalf("ephemeralContainerStatuses %+v, want 4", got)
	}
	for i, name := range []string{"debug", "done", "pulling", "gone"} {
		if got[i].Name != name || got[i].Ready || got[i].Started != nil {
			t.Errorf("status %d: name %q ready %v started %v; want %q, not ready, no started", i, got[i].Name, got[i].Ready, got[i].Started, name)
		}
	}
	if r := got[0].State.Running; r == nil || got[0].ContainerID != "containerd://debug-0" || got[0].Image != "img-debug" || got[0].ImageID != "sha256:debug" {
		t.Errorf("debug: %+v", got[0])
	}
	if term := got[1].State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Errorf("done: %+v", got[1].State)
	}
	if w := got[2].State.Waiting; w == nil || w.Reason != "ErrImagePull" || w.Message != "no such image" {
		t.Errorf("pulling: %+v", got[2].State)
	}
	if term := got[3].State.Terminated; term == nil || term.ExitCode != 3 || term.ContainerID != "containerd://gone-0" {
		t.Errorf("gone (no longer in the runtime): %+v, want the terminated state it had", got[3].State)
	}
}

func TestGenerateEphemeralNotCreated(t *testing.T) {
	pod := withEphemeral(newPod(v1.RestartPolicyAlways, "app"), "debug")
	st := Generate(GenerateInput{Pod: pod, Runtime: runtimeStatus(true, nil, ctr("app", running, 0, 0, 1)), Now: metav1.NewTime(t0)})
	if w := st.EphemeralContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ContainerCreating" {
		t.Errorf("state %+v, want waiting ContainerCreating", st.EphemeralContainerStatuses[0].State)
	}
}
