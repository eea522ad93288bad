package allocation

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// resizeConditions are one pod's resize conditions; nil when not set.
type resizeConditions struct {
	pending    *v1.PodCondition
	inProgress *v1.PodCondition
}

// SetResizePending sets pod uid's PodResizePending condition, as the
// kubelet's status manager does: a reason other than Infeasible becomes
// Deferred; the transition time changes with the reason. It reports
// whether the reason or the generation changed (the caller then records
// an event).
func (m *Manager) SetResizePending(uid types.UID, reason, message string, generation int64) bool {
	if reason != v1.PodReasonInfeasible {
		reason = v1.PodReasonDeferred
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.conditionsLocked(uid)
	old := c.pending
	c.pending = m.condition(v1.PodResizePending, old, reason, message, generation)
	return old == nil || old.Reason != reason || old.ObservedGeneration != generation
}

// ClearResizePending removes pod uid's PodResizePending condition.
func (m *Manager) ClearResizePending(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.conditions[uid]; c != nil {
		c.pending = nil
	}
}

// SetResizeInProgress sets pod uid's PodResizeInProgress condition, as
// the kubelet's status manager does: a condition already set keeps its
// generation (clear it first to change it) and, when reason and message
// are empty, its reason and message. It returns the condition's
// generation and whether it changed.
func (m *Manager) SetResizeInProgress(uid types.UID, reason, message string, generation int64) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.conditionsLocked(uid)
	old := c.inProgress
	if old != nil {
		if reason == "" && message == "" {
			reason, message = old.Reason, old.Message
		}
		generation = old.ObservedGeneration
	}
	c.inProgress = m.condition(v1.PodResizeInProgress, old, reason, message, generation)
	return generation, old == nil || old.Reason != reason || old.Message != message
}

// ClearResizeInProgress removes pod uid's PodResizeInProgress condition;
// it returns the generation of the condition it removed, and whether
// there was one.
func (m *Manager) ClearResizeInProgress(uid types.UID) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.conditions[uid]
	if c == nil || c.inProgress == nil {
		return 0, false
	}
	gen := c.inProgress.ObservedGeneration
	c.inProgress = nil
	return gen, true
}

// ResizeConditions returns pod uid's resize conditions (PodResizePending
// first), copies the caller may keep.
func (m *Manager) ResizeConditions(uid types.UID) []v1.PodCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.conditions[uid]
	if c == nil {
		return nil
	}
	var out []v1.PodCondition
	for _, cond := range []*v1.PodCondition{c.pending, c.inProgress} {
		if cond != nil {
			out = append(out, *cond.DeepCopy())
		}
	}
	return out
}

// deferredLocked lists the pods other than except whose resize is
// deferred; the caller holds mu.
func (m *Manager) deferredLocked(except types.UID) []types.UID {
	var out []types.UID
	for uid, c := range m.conditions {
		if uid != except && c.pending != nil && c.pending.Reason == v1.PodReasonDeferred {
			out = append(out, uid)
		}
	}
	return out
}

func (m *Manager) conditionsLocked(uid types.UID) *resizeConditions {
	c := m.conditions[uid]
	if c == nil {
		c = &resizeConditions{}
		m.conditions[uid] = c
	}
	return c
}

// condition is a resize condition of type t replacing old: its transition
// time is old's unless the reason changed.
func (m *Manager) condition(t v1.PodConditionType, old *v1.PodCondition, reason, message string, generation int64) *v1.PodCondition {
	now := metav1.NewTime(m.cfg.Clock.Now())
	transition := now
	if old != nil && old.Reason == reason {
		transition = old.LastTransitionTime
	}
	return &v1.PodCondition{
		Type:               t,
		Status:             v1.ConditionTrue,
		LastProbeTime:      now,
		LastTransitionTime: transition,
		ObservedGeneration: generation,
		Reason:             reason,
		Message:            message,
	}
}
