package status

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// A refused pod's status is the kubelet's rejectPod status; it is written
// out (OnStatus), it is terminal, and a later runtime status keeps it
// Failed with the refusal's reason and message.
func TestReject(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := testingclock.NewFakeClock(t0)
	var notified []types.UID
	m := NewManager(Config{Clock: clk, OnStatus: func(uid types.UID, _ v1.PodStatus) { notified = append(notified, uid) }})
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
		}}}},
	}
	m.Reject(pod, "OutOfpods", "Node didn't have enough resource: pods")
	st, ok := m.Get(pod.UID)
	if !ok || st.Phase != v1.PodFailed || st.Reason != "OutOfpods" || st.Message != "Pod was rejected: Node didn't have enough resource: pods" ||
		st.QOSClass != v1.PodQOSBurstable || st.StartTime == nil || !st.StartTime.Time.Equal(t0) || len(st.Conditions) != 0 {
		t.Fatalf("status = %+v", st)
	}
	if !m.IsTerminal(pod.UID) || len(notified) != 1 {
		t.Errorf("terminal %v, notified %v", m.IsTerminal(pod.UID), notified)
	}
	m.RemovePod(pod.UID)
	if _, ok := m.Get(pod.UID); !ok {
		t.Errorf("RemovePod dropped a refused pod's status")
	}
	m.SetPodStatus(pod, &kubecontainer.PodStatus{ID: pod.UID, Sandboxes: []*runtimeapi.PodSandboxStatus{}}, nil)
	if st, _ := m.Get(pod.UID); st.Phase != v1.PodFailed || st.Reason != "OutOfpods" || st.Message != "Pod was rejected: Node didn't have enough resource: pods" {
		t.Errorf("after a runtime status: %s %q %q", st.Phase, st.Reason, st.Message)
	}
	m.Forget(pod.UID)
	if _, ok := m.Get(pod.UID); ok || m.IsTerminal(pod.UID) {
		t.Errorf("Forget kept the refusal")
	}
}
