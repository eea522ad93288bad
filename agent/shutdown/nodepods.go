package shutdown

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/status"
	"github.com/minikubelet/minikubelet/podworkers"
)

// wantedPods are the pods the sources want (agent/podmanager).
type wantedPods interface {
	Get(uid types.UID) *v1.Pod
	List() []*v1.Pod
}

// podWorkers are the pod workers (podworkers.Workers).
type podWorkers interface {
	HoldStarts(hold bool)
	UpdatePod(ctx context.Context, o podworkers.UpdatePodOptions)
	IsTerminated(uid types.UID) bool
}

// podStatuses is the status manager (agent/status).
type podStatuses interface {
	Get(uid types.UID) (v1.PodStatus, bool)
	SetTerminal(uid types.UID, t status.Terminal)
	// IsTerminal reports a pod the agent ended for a reason of its own
	// (refused at admission, past its deadline): it must not start again.
	IsTerminal(uid types.UID) bool
	Forget(uid types.UID)
}

// NodePods is the agent's end of graceful node shutdown: the node as the
// Manager sees it. The Manager's requests travel to the syncLoop, which
// carries them out between its other events with Handle (DESIGN.md rule 1:
// it only dispatches, to pod workers).
type NodePods struct {
	pods    wantedPods
	workers podWorkers
	status  podStatuses
	// requests carries the manager's requests to the syncLoop. Unbuffered:
	// the manager's goroutine sends one and waits for its reply; the
	// syncLoop receives. Owned by NodePods, never closed.
	requests chan Request
	// killed are the pods terminated for the shutdown under way. Owned by
	// the syncLoop goroutine.
	killed map[types.UID]bool
}

var _ node = (*NodePods)(nil)

// NodePodsConfig configures NodePods. Every field is required.
type NodePodsConfig struct {
	Pods    wantedPods
	Workers podWorkers
	Status  podStatuses
}

// NewNodePods returns the node for a Manager (Config.Node); the syncLoop
// must serve its Requests.
func NewNodePods(cfg NodePodsConfig) *NodePods {
	return &NodePods{
		pods:     cfg.Pods,
		workers:  cfg.Workers,
		status:   cfg.Status,
		requests: make(chan Request),
		killed:   map[types.UID]bool{},
	}
}

type requestOp int

const (
	opStopAdmitting requestOp = iota
	opTerminate
	opResume
)

// Request is one request of the shutdown manager, for the syncLoop to
// carry out with NodePods.Handle.
type Request struct {
	op    requestOp
	kills []Kill
	// reply receives the running pods for opStopAdmitting, nil for the
	// others, once the request was carried out. Capacity 1: the syncLoop
	// never blocks on it. Written once, never closed.
	reply chan []*v1.Pod
}

// Requests is the channel the syncLoop selects on: nil, which blocks
// forever, when n is nil (graceful node shutdown is off).
func (n *NodePods) Requests() <-chan Request {
	if n == nil {
		return nil
	}
	return n.requests
}

// StopAdmitting implements the shutdown manager's node.
func (n *NodePods) StopAdmitting(ctx context.Context) ([]*v1.Pod, error) {
	return n.do(ctx, Request{op: opStopAdmitting})
}

// TerminatePods implements the shutdown manager's node.
func (n *NodePods) TerminatePods(ctx context.Context, kills []Kill) error {
	_, err := n.do(ctx, Request{op: opTerminate, kills: kills})
	return err
}

// Resume implements the shutdown manager's node.
func (n *NodePods) Resume(ctx context.Context) error {
	_, err := n.do(ctx, Request{op: opResume})
	return err
}

// Terminated implements the shutdown manager's node. It only reads the
// workers' state, which is safe from any goroutine.
func (n *NodePods) Terminated(uid types.UID) bool {
	return n.workers.IsTerminated(uid)
}

// do hands r to the syncLoop and waits until it was carried out.
func (n *NodePods) do(ctx context.Context, r Request) ([]*v1.Pod, error) {
	r.reply = make(chan []*v1.Pod, 1)
	select {
	case n.requests <- r:
	case <-ctx.Done():
		return nil, fmt.Errorf("hand the request to the sync loop: %w", ctx.Err())
	}
	select {
	case pods := <-r.reply:
		return pods, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the sync loop: %w", ctx.Err())
	}
}

// Handle carries out r; it runs in the syncLoop and only dispatches.
//
//   - stop admitting: no pod starts any more (podworkers.HoldStarts), and
//     the pods that run are listed: those of the sources not in a terminal
//     phase, as the kubelet's active pods.
//   - terminate: each pod's status is marked with the kill's reason, and its
//     worker told to kill it with the kill's grace period (which only
//     shrinks the pod's own).
//   - resume: pods may start again; the marked statuses are forgotten and
//     every pod of the sources is added again, which starts a new worker
//     for each pod killed (or restarts it once its termination is over);
//     not the pods the agent ended for reasons of their own (refused at
//     admission, past their deadline).
func (n *NodePods) Handle(ctx context.Context, logger klog.Logger, r Request) {
	var reply []*v1.Pod
	switch r.op {
	case opStopAdmitting:
		n.workers.HoldStarts(true)
		for _, pod := range n.pods.List() {
			if st, ok := n.status.Get(pod.UID); ok && (st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed) {
				continue
			}
			reply = append(reply, pod)
		}
		logger.V(2).Info("Node shutting down: no pod starts any more", "running", len(reply))
	case opTerminate:
		for _, k := range r.kills {
			pod := n.pods.Get(k.Pod.UID)
			if pod == nil {
				pod = k.Pod // gone from the sources meanwhile: being killed already
			}
			grace := k.GracePeriod
			n.killed[pod.UID] = true
			n.status.SetTerminal(pod.UID, status.Terminal{Reason: k.Reason, Message: k.Message, DisruptionTarget: true})
			n.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod, GracePeriod: &grace})
		}
	case opResume:
		n.workers.HoldStarts(false)
		for uid := range n.killed {
			n.status.Forget(uid)
		}
		n.killed = map[types.UID]bool{}
		for _, pod := range n.pods.List() {
			if pod.DeletionTimestamp != nil || n.status.IsTerminal(pod.UID) {
				continue
			}
			n.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Create, Pod: pod})
		}
		logger.V(2).Info("Node shutdown cancelled: pods start again")
	}
	r.reply <- reply
}
