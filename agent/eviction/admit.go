package eviction

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/qos"
)

// Admit reports whether pod may start now, as the kubelet's eviction
// admission handler decides: any pod when the node is under no pressure,
// and a critical one always; under memory pressure alone, any pod but a
// BestEffort one that does not tolerate the memory-pressure taint; under
// disk or pid pressure, none. A refused pod gets reason Evicted and
// message "The node had condition: [...]. ". Safe for concurrent use.
func (m *Manager) Admit(pod *v1.Pod) (ok bool, reason, message string) {
	m.mu.RLock()
	conds := m.conditions
	m.mu.RUnlock()
	if len(conds) == 0 || m.critical(pod) {
		return true, "", ""
	}
	if len(conds) == 1 && conds[0] == v1.NodeMemoryPressure {
		if qos.Class(pod) != v1.PodQOSBestEffort {
			return true, "", ""
		}
		for _, t := range pod.Spec.Tolerations {
			if toleratesMemoryPressure(t) {
				return true, "", ""
			}
		}
	}
	return false, Reason, fmt.Sprintf(nodeConditionMessageFmt, conds)
}

// AdmitNew is Admit for a pod added to the node (the syncLoop's
// admission): a static pod it refuses is started again, as an evicted
// one, once the node admits it. Safe for concurrent use.
func (m *Manager) AdmitNew(pod *v1.Pod, _ []*v1.Pod) (ok bool, reason, message string) {
	ok, reason, message = m.Admit(pod)
	if !ok && isStatic(pod) {
		m.staticEvicted(pod, "", true)
	}
	return ok, reason, message
}

// toleratesMemoryPressure reports whether t tolerates the taint
// node.kubernetes.io/memory-pressure:NoSchedule, which has no value.
func toleratesMemoryPressure(t v1.Toleration) bool {
	if t.Effect != "" && t.Effect != v1.TaintEffectNoSchedule {
		return false
	}
	switch t.Operator {
	case v1.TolerationOpExists:
		return t.Key == "" || t.Key == v1.TaintNodeMemoryPressure
	case v1.TolerationOpEqual, "":
		return t.Key == v1.TaintNodeMemoryPressure && t.Value == ""
	}
	return false
}
