package status

import (
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

func TestManager(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	m := NewManager(Config{Clock: clk, HostIP: "192.0.2.1", RuntimeName: "containerd"})
	pod := newPod(v1.RestartPolicyNever, "app")

	if _, ok := m.Get(pod.UID); ok {
		t.Fatal("Get of an unknown pod reports a status")
	}
	m.SetPodStatus(pod, runtimeStatus(true, []string{"10.0.0.1"}), nil)
	st, ok := m.Get(pod.UID)
	if !ok {
		t.Fatal("no status after SetPodStatus")
	}
	if st.StartTime == nil || !st.StartTime.Time.Equal(t0) {
		t.Errorf("StartTime = %v, want the first report's %v", st.StartTime, t0)
	}
	if st.Phase != v1.PodPending || st.HostIP != "192.0.2.1" || st.PodIP != "10.0.0.1" {
		t.Errorf("phase %s hostIP %s podIP %s", st.Phase, st.HostIP, st.PodIP)
	}

	clk.Step(time.Minute)
	m.SetPodStatus(pod, runtimeStatus(true, []string{"10.0.0.1"}, ctr("app", running, 0, 0, 1)), nil)
	st, _ = m.Get(pod.UID)
	if !st.StartTime.Time.Equal(t0) {
		t.Errorf("StartTime moved to %v", st.StartTime)
	}
	if st.Phase != v1.PodRunning || st.ContainerStatuses[0].ContainerID != "containerd://app-0" {
		t.Errorf("phase %s, container %+v", st.Phase, st.ContainerStatuses[0])
	}
	c, _ := conditionsOf(st)
	if c[v1.PodScheduled].at != t0 || c[v1.PodReady].at != t0.Add(time.Minute) {
		t.Errorf("condition times: scheduled %v, ready %v", c[v1.PodScheduled].at, c[v1.PodReady].at)
	}

	// Succeeded sticks even if the runtime later shows nothing.
	clk.Step(time.Minute)
	m.SetPodStatus(pod, runtimeStatus(false, nil, ctr("app", exited, 0, 0, 1)), nil)
	clk.Step(time.Minute)
	m.SetPodStatus(pod, runtimeStatus(false, nil), nil)
	if st, _ := m.Get(pod.UID); st.Phase != v1.PodSucceeded {
		t.Errorf("phase = %s, want Succeeded to stick", st.Phase)
	}

	m.RemovePod(pod.UID)
	if _, ok := m.Get(pod.UID); ok {
		t.Error("status kept after RemovePod")
	}
	// A pod re-added afterwards starts afresh.
	clk.Step(time.Minute)
	m.SetPodStatus(pod, runtimeStatus(true, nil, ctr("app", running, 0, 0, 5)), nil)
	st, _ = m.Get(pod.UID)
	if st.Phase != v1.PodRunning || !st.StartTime.Time.Equal(clk.Now()) {
		t.Errorf("after re-add: phase %s start %v", st.Phase, st.StartTime)
	}
}

func TestManagerConcurrentUse(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	m := NewManager(Config{Clock: clk})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod := newPod(v1.RestartPolicyAlways, "app")
			pod.UID += types.UID([...]string{"-a", "-b"}[i%2])
			for range 100 {
				m.SetPodStatus(pod, runtimeStatus(true, nil, ctr("app", running, 0, 0, 1)), map[string]kubecontainer.Waiting{})
				m.Get(pod.UID)
			}
			m.RemovePod(pod.UID)
		}()
	}
	wg.Wait()
}
