package status

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Terminal is why the agent itself terminates a pod, as the kubelet reports
// it in the pod's status (node shutdown: reason "Terminated"; past its
// activeDeadlineSeconds: "DeadlineExceeded").
type Terminal struct {
	Reason  string
	Message string
	// DisruptionTarget adds the DisruptionTarget condition, as the
	// kubelet sets it when the node, not the pod, ends the pod (node
	// shutdown, eviction); not for a pod past its deadline.
	DisruptionTarget bool
}

// SetTerminal records that the agent terminates the pod for t. From now on
// the pod's status has phase Failed (Succeeded stays), t's reason and
// message, and with t.DisruptionTarget a DisruptionTarget condition, as the
// kubelet's node shutdown manager sets them; and the status outlives the
// pod's removal from the runtime (RemovePod), until Forget or
// ForgetTerminal. The status is handed to Config.OnStatus. Idempotent;
// safe for concurrent use.
func (m *Manager) SetTerminal(uid types.UID, t Terminal) {
	now := metav1.NewTime(m.cfg.Clock.Now())
	m.mu.Lock()
	m.terminal[uid] = t
	old := m.statuses[uid]
	st := *old.DeepCopy()
	applyTerminal(&st, old, t, now)
	m.statuses[uid] = st
	m.wroteLocked(uid)
	m.mu.Unlock()
	// Node mode reports it at once: a pod refused at admission has no
	// worker to store a status later.
	if m.cfg.OnStatus != nil {
		m.cfg.OnStatus(uid, st)
	}
}

// Forget drops the pod's status and terminal reason, if any: the pod starts
// over (a node shutdown was cancelled).
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.terminal, uid)
	delete(m.statuses, uid)
	delete(m.written, uid)
}

// IsTerminal reports whether the agent terminated the pod for a reason of
// its own (SetTerminal) and has not forgotten it: the pod must not start
// again.
func (m *Manager) IsTerminal(uid types.UID) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.terminal[uid]
	return ok
}

// ForgetTerminal drops the terminal reason and status of each pod
// terminated by the agent for which keep is false: pods that are gone from
// the node and its sources, whose status nobody reads any more.
func (m *Manager) ForgetTerminal(keep func(types.UID) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.terminal {
		if !keep(uid) {
			delete(m.terminal, uid)
			delete(m.statuses, uid)
			delete(m.written, uid)
		}
	}
}

// applyTerminal makes st the status of a pod terminated for t. The
// DisruptionTarget condition keeps its transition time from old.
func applyTerminal(st *v1.PodStatus, old v1.PodStatus, t Terminal, now metav1.Time) {
	if st.Phase != v1.PodSucceeded {
		st.Phase = v1.PodFailed
	}
	st.Reason, st.Message = t.Reason, t.Message
	if !t.DisruptionTarget {
		return
	}
	cond := v1.PodCondition{
		Type:               v1.DisruptionTarget,
		Status:             v1.ConditionTrue,
		Reason:             v1.PodReasonTerminationByKubelet,
		Message:            t.Message,
		LastTransitionTime: now,
	}
	for _, c := range old.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue {
			cond.LastTransitionTime = c.LastTransitionTime
		}
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == v1.DisruptionTarget {
			st.Conditions[i] = cond
			return
		}
	}
	st.Conditions = append(st.Conditions, cond)
}
