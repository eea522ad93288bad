package status

import (
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

var shutdown = Terminal{Reason: "Terminated", Message: "Pod was terminated in response to imminent node shutdown.", DisruptionTarget: true}

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

// A pod the agent ends for its deadline gets phase Failed and the reason,
// without the DisruptionTarget condition the node's own reasons add; it
// stays terminal after RemovePod until ForgetTerminal finds it gone.
func TestManagerTerminalWithoutDisruption(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	m := NewManager(Config{Clock: clk})
	pod := newPod(v1.RestartPolicyAlways, "app")
	m.SetPodStatus(pod, runtimeStatus(true, nil, ctr("app", running, 0, 0, 1)), nil)
	m.SetTerminal(pod.UID, Terminal{Reason: "DeadlineExceeded", Message: "past"})
	if !m.IsTerminal(pod.UID) {
		t.Fatal("IsTerminal = false after SetTerminal")
	}
	st, _ := m.Get(pod.UID)
	if st.Phase != v1.PodFailed || st.Reason != "DeadlineExceeded" || st.Message != "past" {
		t.Errorf("status %s %q %q, want Failed DeadlineExceeded", st.Phase, st.Reason, st.Message)
	}
	for _, c := range st.Conditions {
		if c.Type == v1.DisruptionTarget {
			t.Errorf("DisruptionTarget condition on a pod past its deadline: %+v", c)
		}
	}
	m.RemovePod(pod.UID)
	m.ForgetTerminal(func(types.UID) bool { return true })
	if !m.IsTerminal(pod.UID) {
		t.Error("terminal forgotten though the pod is still known")
	}
	m.ForgetTerminal(func(types.UID) bool { return false })
	if _, ok := m.Get(pod.UID); ok || m.IsTerminal(pod.UID) {
		t.Error("terminal status kept after ForgetTerminal found the pod gone")
	}
}

// TestSetTerminalRacingSetPodStatus: a status generated from what the
// manager held before SetTerminal is not stored over the terminal one;
// however the writes interleave, the last status is terminal.
func TestSetTerminalRacingSetPodStatus(t *testing.T) {
	for round := range 50 {
		m := NewManager(Config{Clock: testingclock.NewFakeClock(t0)})
		pod := newPod(v1.RestartPolicyAlways, "app")
		pod.UID = types.UID(fmt.Sprintf("uid-%d", round))
		rs := runtimeStatus(true, nil, ctr("app", running, 0, 0, 1))
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 20 {
					m.SetPodStatus(pod, rs, nil)
				}
			})
		}
		wg.Go(func() { m.SetTerminal(pod.UID, shutdown) })
		wg.Wait()
		st, _ := m.Get(pod.UID)
		if st.Phase != v1.PodFailed || st.Reason != shutdown.Reason {
			t.Fatalf("round %d: phase %s reason %q after SetTerminal raced SetPodStatus, want Failed %q", round, st.Phase, st.Reason, shutdown.Reason)
		}
	}
}
