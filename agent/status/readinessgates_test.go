package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func condition(st v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

// Ready follows the readiness gates as the kubelet computes it: with every
// container ready, it is False (ReadinessGatesNotReady, the kubelet's
// message) until each gate's condition, set by others in the API status,
// is True; ContainersReady does not wait for the gates; a pod whose
// containers are not ready says so, whatever the gates.
func TestGenerateReadinessGates(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app")
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	gen := func(pod *v1.Pod, isRunning bool) v1.PodStatus {
		c := ctr("app", exited, 1, 0, 1)
		if isRunning {
			c = ctr("app", running, 0, 0, 1)
		}
		return Generate(GenerateInput{Pod: pod, Runtime: runtimeStatus(true, []string{"10.0.0.5"}, c), Now: metav1.NewTime(t0)})
	}

	st := gen(pod, true)
	ready := condition(st, v1.PodReady)
	want := `corresponding condition of pod readiness gate "example.com/lb" does not exist., corresponding condition of pod readiness gate "example.com/dns" does not exist.`
	if ready.Status != v1.ConditionFalse || ready.Reason != "ReadinessGatesNotReady" || ready.Message != want {
		t.Errorf("no gate conditions: Ready = %+v", ready)
	}
	if c := condition(st, v1.ContainersReady); c.Status != v1.ConditionTrue {
		t.Errorf("ContainersReady = %+v, want True", c)
	}

	pod.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}, {Type: "example.com/dns", Status: v1.ConditionFalse}}
	ready = condition(gen(pod, true), v1.PodReady)
	if ready.Status != v1.ConditionFalse || ready.Message != `the status of pod readiness gate "example.com/dns" is not "True", but False` {
		t.Errorf("one gate False: Ready = %+v", ready)
	}

	pod.Status.Conditions[1].Status = v1.ConditionTrue
	if ready = condition(gen(pod, true), v1.PodReady); ready.Status != v1.ConditionTrue || ready.Reason != "" {
		t.Errorf("both gates True: Ready = %+v", ready)
	}
	if ready = condition(gen(pod, false), v1.PodReady); ready.Status != v1.ConditionFalse || ready.Reason != "ContainersNotReady" {
		t.Errorf("container not running, gates True: Ready = %+v", ready)
	}
}

// A gate's condition changing in the API calls for a sync only when the
// Ready condition shown no longer matches, as the kubelet decides.
func TestNeedsReadinessSync(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app")
	pod.Status = gen1(pod)
	if NeedsReadinessSync(pod) {
		t.Errorf("a pod without readiness gates needs a sync")
	}
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	pod.Status = gen1(pod) // Ready False: the gate's condition does not exist
	if NeedsReadinessSync(pod) {
		t.Errorf("nothing changed, yet a sync is needed")
	}
	pod.Status.Conditions = append(pod.Status.Conditions, v1.PodCondition{Type: "example.com/lb", Status: v1.ConditionTrue})
	if !NeedsReadinessSync(pod) {
		t.Errorf("the gate turned True, yet no sync is needed")
	}
}

func gen1(pod *v1.Pod) v1.PodStatus {
	return Generate(GenerateInput{Pod: pod, Runtime: runtimeStatus(true, []string{"10.0.0.5"}, ctr("app", running, 0, 0, 1)), Now: metav1.NewTime(t0)})
}
