package status

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/internal/qos"
)

// RejectedPrefix starts the message of a pod the node refused, as the
// kubelet writes it.
const RejectedPrefix = "Pod was rejected: "

// Reject records that the node refused pod at admission, as the kubelet's
// rejectPod does: its status is phase Failed with reason and the message
// "Pod was rejected: <message>", its QoS class and a start time, and
// nothing else (the pod never had a sandbox). The pod counts as terminated
// by the agent (IsTerminal): it is not started by an update, only when it
// is added anew (Forget), and its status outlives everything but Forget
// and ForgetTerminal. OnStatus is called, so node mode writes it to the
// apiserver. Safe for concurrent use.
func (m *Manager) Reject(pod *v1.Pod, reason, message string) {
	now := metav1.NewTime(m.cfg.Clock.Now())
	t := Terminal{Reason: reason, Message: RejectedPrefix + message}
	st := v1.PodStatus{
		Phase:     v1.PodFailed,
		Reason:    t.Reason,
		Message:   t.Message,
		QOSClass:  qos.Class(pod),
		StartTime: &now,
	}
	m.mu.Lock()
	if old, ok := m.statuses[pod.UID]; ok && old.StartTime != nil {
		st.StartTime = old.StartTime
	}
	m.terminal[pod.UID] = t
	m.statuses[pod.UID] = st
	m.wroteLocked(pod.UID)
	m.mu.Unlock()
	if m.cfg.OnStatus != nil {
		m.cfg.OnStatus(pod.UID, st)
	}
}
