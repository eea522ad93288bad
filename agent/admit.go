package agent

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/admission"
	"github.com/minikubelet/minikubelet/agent/config"
	"github.com/minikubelet/minikubelet/internal/cri"
	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/podworkers"
)

// eventRecorder records the kubelet's events (agent/cluster/events); a
// standalone agent records none (events.Discard).
type eventRecorder interface {
	Eventf(ref *v1.ObjectReference, eventType, reason, messageFmt string, args ...any)
}

// podEvents is where the syncLoop records pod events: the apiserver in
// node mode, nowhere standalone.
func podEvents(b *baseParts) eventRecorder {
	if b.cluster == nil {
		return events.Discard{}
	}
	return b.cluster.Events()
}

// nodeHandlers are the admit handlers of the node's resources: the
// eviction manager's (no new pod under pressure but critical ones) and
// node allocatable's resource fit.
type nodeHandlers struct {
	pressure, fit admission.Handler
}

// newAdmission builds the node's admit handlers, asked in this order (the
// kubelet's, for those it has): the node's pressure (node.pressure), the
// sysctls (safe for the kernel of kernelRelease, or
// --allowed-unsafe-sysctls), supplementalGroupsPolicy Strict (where the
// runtime's features lack it), the pods capacity (--max-pods) and then
// the resources' (node.fit), AppArmor (appArmor is the host's support,
// apparmor.HostSupport), pod-level resources (not built), and on a
// standalone node any runtimeClassName
// (which it cannot resolve). Parts that refuse pods at admission append
// their handler here.
func newAdmission(cfg config.Config, kernelRelease string, features cri.Features, appArmor error, node nodeHandlers) (admission.Chain, error) {
	sysctls, err := admission.Sysctls(kernelRelease, cfg.AllowedUnsafeSysctls)
	if err != nil {
		return nil, fmt.Errorf("--allowed-unsafe-sysctls: %w", err)
	}
	chain := admission.Chain{
		node.pressure,
		sysctls,
		admission.SupplementalGroupsPolicy(features.SupplementalGroupsPolicy),
		admission.MaxPods(cfg.MaxPods),
		node.fit,
		admission.AppArmor(appArmor),
		admission.NoPodLevelResources(),
	}
	if cfg.Kubeconfig == "" {
		chain = append(chain, admission.NoRuntimeClasses())
	}
	return chain, nil
}

// kernelRelease is the running kernel's release, as the kubelet reads it;
// empty when it cannot be read (only the sysctls safe on every kernel are
// then allowed).
func kernelRelease(ctx context.Context) string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		klog.FromContext(ctx).Info("Could not read the kernel's release; the sysctls safe only on newer kernels are not allowed", "err", err)
	}
	return string(b)
}

// byCreation orders pods added together as the kubelet admits them: the
// oldest first (static pods, which have no creation time, keep the
// sources' order).
func byCreation(pods []*v1.Pod) []*v1.Pod {
	out := append([]*v1.Pod(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
	})
	return out
}

// admit runs the node's admission for pod, which a source has just added,
// and reports whether it may get a worker. As the kubelet: a pod already
// in a terminal phase is not admitted again (its worker only finishes it
// off); a refused pod is reported Failed with the handler's reason and
// message (status.Manager.Reject, written to the apiserver in node mode),
// a Warning event of that reason is recorded, and it never gets a worker.
func (l *syncLoop) admit(logger klog.Logger, pod *v1.Pod) bool {
	if isTerminalPhase(pod.Status.Phase) {
		return true
	}
	r := l.admission.Admit(pod, l.activePods(pod.UID))
	if r.Admit {
		return true
	}
	logger.Info("Pod admission denied", "pod", klog.KObj(pod), "podUID", pod.UID, "reason", r.Reason, "message", r.Message)
	l.events.Eventf(events.Pod(pod), v1.EventTypeWarning, r.Reason, "%s", r.Message)
	l.statuses.Reject(pod, r.Reason, r.Message)
	l.rejected(r.Reason)
	return false
}

// activePods are the pods admitted before that the node still runs, as the
// kubelet's GetActivePods sees them: every pod the sources want but
// except, less those that have finished (a terminal phase, in the API or
// in the agent's status: refused pods are among them) unless their worker
// is still terminating them, and less those whose worker has terminated
// them.
func (l *syncLoop) activePods(except types.UID) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range l.pods.List() {
		if p.UID == except || l.inactive(p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func (l *syncLoop) inactive(p *v1.Pod) bool {
	terminating := l.workers.IsTerminating(p.UID)
	if terminating && l.workers.IsTerminated(p.UID) {
		return true
	}
	terminal := isTerminalPhase(p.Status.Phase)
	if st, ok := l.statuses.Get(p.UID); ok && isTerminalPhase(st.Phase) {
		terminal = true
	}
	return terminal && !terminating
}

func isTerminalPhase(p v1.PodPhase) bool {
	return p == v1.PodSucceeded || p == v1.PodFailed
}

// endedAndGone reports whether the agent ended pod uid for a reason of its
// own (refused at admission, past its deadline) and nothing of it is left:
// no worker and nothing in the runtime. Such a pod needs no worker to
// terminate it when it is deleted or removed; starting one would only
// rewrite its status.
func (l *syncLoop) endedAndGone(uid types.UID) bool {
	return l.statuses.IsTerminal(uid) && !slices.Contains(l.workers.Known(), uid) && !l.runtimeHolds(uid)
}

// runtimeHolds reports whether the PLEG cache last saw a sandbox or a
// container of pod uid; true when it cannot tell.
func (l *syncLoop) runtimeHolds(uid types.UID) bool {
	st, err := l.cache.Get(uid)
	return err != nil || (st != nil && len(st.Sandboxes)+len(st.Containers) > 0)
}

// killRefusedLeftovers terminates what the runtime still holds of pods the
// agent ended and that have no worker: a pod refused at admission after
// the agent restarted (with a lower --max-pods, say) may have containers
// running from before, which the kubelet's housekeeping kills too. Only
// once the PLEG has seen the runtime.
func (l *syncLoop) killRefusedLeftovers(ctx context.Context, logger klog.Logger) {
	if l.pleg.LastSeen().IsZero() {
		return
	}
	workers := map[types.UID]bool{}
	for _, uid := range l.workers.Known() {
		workers[uid] = true
	}
	for _, pod := range l.pods.List() {
		if workers[pod.UID] || !l.statuses.IsTerminal(pod.UID) || !l.runtimeHolds(pod.UID) {
			continue
		}
		logger.Info("Terminating what the runtime holds of a pod the node refused", "pod", klog.KObj(pod), "podUID", pod.UID)
		l.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod})
	}
}
