package agent

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/podmanager"
	"github.com/minikubelet/minikubelet/agent/shutdown"
	"github.com/minikubelet/minikubelet/agent/status"
	"github.com/minikubelet/minikubelet/podworkers"
)

// nodeShutdown is the agent's end of graceful node shutdown: the node as the
// shutdown manager (agent/shutdown) sees it. The manager's requests travel
// to the syncLoop, which carries them out between its other events with
// handle (DESIGN.md rule 1: it only dispatches, to pod workers).
type nodeShutdown struct {
	pods    *podmanager.Manager
	workers *podworkers.Workers
	status  *status.Manager
	// requests carries the manager's requests to the syncLoop. Unbuffered:
	// the manager's goroutine sends one and waits for its reply; the
	// syncLoop receives. Owned by nodeShutdown, never closed.
	requests chan shutdownRequest
	// killed are the pods terminated for the shutdown under way. Owned by
	// the syncLoop goroutine.
	killed map[types.UID]bool
}

var _ interface {
	StopAdmitting(ctx context.Context) ([]*v1.Pod, error)
	TerminatePods(ctx context.Context, kills []shutdown.Kill) error
	Terminated(uid types.UID) bool
	Resume(ctx context.Context) error
} = (*nodeShutdown)(nil)

type shutdownOp int

const (
	opStopAdmitting shutdownOp = iota
	opTerminate
	opResume
)

// shutdownRequest is one request of the shutdown manager.
type shutdownRequest struct {
	op    shutdownOp
	kills []shutdown.Kill
	// reply receives the running pods for opStopAdmitting, nil for the
	// others, once the request was carried out. Capacity 1: the syncLoop
	// never blocks on it. Written once, never closed.
	reply chan []*v1.Pod
}

// startNodeShutdown starts the shutdown manager when --shutdown-grace-period
// is set, with run; it returns nil otherwise. The syncLoop must run for the
// manager's requests to be served.
func (a *Agent) startNodeShutdown(run func(func(context.Context)), statusManager *status.Manager) *nodeShutdown {
	if a.cfg.ShutdownGracePeriod <= 0 {
		return nil
	}
	n := &nodeShutdown{
		pods:     a.pods,
		workers:  a.workers,
		status:   statusManager,
		requests: make(chan shutdownRequest),
		killed:   map[types.UID]bool{},
	}
	m := shutdown.New(shutdown.Config{
		GracePeriod:             a.cfg.ShutdownGracePeriod,
		CriticalPodsGracePeriod: a.cfg.ShutdownGracePeriodCriticalPods,
		Node:                    n,
		LogindConfDir:           a.cfg.LogindConfDir,
		Clock:                   a.clock,
	})
	run(m.Run)
	return n
}

// requestsCh is the channel the syncLoop selects on: nil, which blocks
// forever, when graceful node shutdown is off.
func (n *nodeShutdown) requestsCh() <-chan shutdownRequest {
	if n == nil {
		return nil
	}
	return n.requests
}

// StopAdmitting implements the shutdown manager's node.
func (n *nodeShutdown) StopAdmitting(ctx context.Context) ([]*v1.Pod, error) {
	return n.do(ctx, shutdownRequest{op: opStopAdmitting})
}

// TerminatePods implements the shutdown manager's node.
func (n *nodeShutdown) TerminatePods(ctx context.Context, kills []shutdown.Kill) error {
	_, err := n.do(ctx, shutdownRequest{op: opTerminate, kills: kills})
	return err
}

// Resume implements the shutdown manager's node.
func (n *nodeShutdown) Resume(ctx context.Context) error {
	_, err := n.do(ctx, shutdownRequest{op: opResume})
	return err
}

// Terminated implements the shutdown manager's node. It only reads the
// workers' state, which is safe from any goroutine.
func (n *nodeShutdown) Terminated(uid types.UID) bool {
	return n.workers.IsTerminated(uid)
}

// do hands r to the syncLoop and waits until it was carried out.
func (n *nodeShutdown) do(ctx context.Context, r shutdownRequest) ([]*v1.Pod, error) {
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

// handle carries out r; it runs in the syncLoop and only dispatches.
//
//   - stop admitting: no pod starts any more (podworkers.HoldStarts), and
//     the pods that run are listed: those of the sources not in a terminal
//     phase, as the kubelet's active pods.
//   - terminate: each pod's status is marked with the kill's reason, and its
//     worker told to kill it with the kill's grace period (which only
//     shrinks the pod's own).
//   - resume: pods may start again; the marked statuses are forgotten and
//     every pod of the sources is added again, which starts a new worker
//     for each pod killed (or restarts it once its termination is over).
func (n *nodeShutdown) handle(ctx context.Context, logger klog.Logger, r shutdownRequest) {
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
			n.status.SetTerminal(pod.UID, status.Terminal{Reason: k.Reason, Message: k.Message})
			n.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Kill, Pod: pod, GracePeriod: &grace})
		}
	case opResume:
		n.workers.HoldStarts(false)
		for uid := range n.killed {
			n.status.Forget(uid)
		}
		n.killed = map[types.UID]bool{}
		for _, pod := range n.pods.List() {
			if pod.DeletionTimestamp != nil {
				continue
			}
			n.workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Create, Pod: pod})
		}
		logger.V(2).Info("Node shutdown cancelled: pods start again")
	}
	r.reply <- reply
}
