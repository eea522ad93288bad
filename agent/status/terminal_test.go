package status

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

var shutdown = Terminal{Reason: "Terminated", Message: "Pod was terminated in response to imminent node shutdown."}

func TestManagerTerminal(t *testing.T) {
	tests := []struct {
		name   string
		policy v1.RestartPolicy
		// before is the runtime status reported before SetTerminal; nil
		// for a pod never reported.
		before *kubecontainer.PodStatus
		// after is reported once the pod's containers stopped.
		after     *kubecontainer.PodStatus
		wantPhase v1.PodPhase
	}{
		{
			name:      "running pod",
			policy:    v1.RestartPolicyAlways,
			before:    runtimeStatus(true, nil, ctr("app", running, 0, 0, 1)),
			after:     runtimeStatus(false, nil, ctr("app", exited, 143, 0, 1)),
			wantPhase: v1.PodFailed,
		},
		{
			name:      "pod never reported",
			policy:    v1.RestartPolicyAlways,
			after:     runtimeStatus(false, nil),
			wantPhase: v1.PodFailed,
		},
		{
			name:      "succeeded pod stays succeeded",
			policy:    v1.RestartPolicyNever,
			before:    runtimeStatus(true, nil, ctr("app", exited, 0, 0, 1)),
			after:     runtimeStatus(false, nil, ctr("app", exited, 0, 0, 1)),
			wantPhase: v1.PodSucceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(t0)
			m := NewManager(Config{Clock: clk})
			pod := newPod(tt.policy, "app")
			if tt.before != nil {
				m.SetPodStatus(pod, tt.before, nil)
			}
			clk.Step(time.Minute)
			marked := clk.Now()
			m.SetTerminal(pod.UID, shutdown)
			m.SetTerminal(pod.UID, shutdown) // idempotent
			check := func(when string) {
				t.Helper()
				st, ok := m.Get(pod.UID)
				if !ok {
					t.Fatalf("%s: no status", when)
				}
				if st.Phase != tt.wantPhase || st.Reason != shutdown.Reason || st.Message != shutdown.Message {
					t.Errorf("%s: phase %s reason %q message %q, want %s %q %q", when, st.Phase, st.Reason, st.Message, tt.wantPhase, shutdown.Reason, shutdown.Message)
				}
				var found bool
				for _, c := range st.Conditions {
					if c.Type != v1.DisruptionTarget {
						continue
					}
					found = true
					if c.Status != v1.ConditionTrue || c.Reason != "TerminationByKubelet" || c.Message != shutdown.Message || !c.LastTransitionTime.Time.Equal(marked) {
						t.Errorf("%s: DisruptionTarget = %+v, want True, TerminationByKubelet, since %v", when, c, marked)
					}
				}
				if !found {
					t.Errorf("%s: no DisruptionTarget condition in %+v", when, st.Conditions)
				}
			}
			check("after SetTerminal")

			clk.Step(time.Minute)
			m.SetPodStatus(pod, tt.after, nil)
			check("after the containers stopped")
			m.RemovePod(pod.UID)
			check("after RemovePod")

			m.Forget(pod.UID)
			if _, ok := m.Get(pod.UID); ok {
				t.Fatal("status kept after Forget")
			}
			m.SetPodStatus(pod, runtimeStatus(true, nil, ctr("app", running, 0, 0, 5)), nil)
			if st, _ := m.Get(pod.UID); st.Phase != v1.PodRunning || st.Reason != "" {
				t.Errorf("started again after Forget: phase %s reason %q, want Running and no reason", st.Phase, st.Reason)
			}
			m.RemovePod(pod.UID)
			if _, ok := m.Get(pod.UID); ok {
				t.Error("status kept after RemovePod once forgotten")
			}
		})
	}
}
