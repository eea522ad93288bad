package podworkers

import (
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// eventRecorder records the kubelet's events (agent/cluster/events).
type eventRecorder interface {
	Eventf(ref *v1.ObjectReference, eventType, reason, messageFmt string, args ...any)
}

// containerEvent records an event about container c of pod.
func (s *Syncer) containerEvent(pod *v1.Pod, c *v1.Container, eventType, reason, messageFmt string, args ...any) {
	s.cfg.Events.Eventf(events.Container(pod, c), eventType, reason, messageFmt, args...)
}

// podEvent records an event about pod.
func (s *Syncer) podEvent(pod *v1.Pod, eventType, reason, messageFmt string, args ...any) {
	s.cfg.Events.Eventf(events.Pod(pod), eventType, reason, messageFmt, args...)
}

// backOffEvents records BackOff for each container whose restart backs off
// (CrashLoopBackOff), as the kubelet does at each sync that skips it.
func (s *Syncer) backOffEvents(pod *v1.Pod, waiting map[string]kubecontainer.Waiting) {
	for name, w := range waiting {
		if w.Reason != "CrashLoopBackOff" {
			continue
		}
		if c := kubecontainer.SpecOf(pod, name); c != nil {
			s.containerEvent(pod, c, v1.EventTypeWarning, events.BackOff, "Back-off restarting failed container %s in pod %s_%s(%s)", name, pod.Name, pod.Namespace, pod.UID)
		}
	}
}
