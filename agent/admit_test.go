package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/admission"
	"github.com/minikubelet/minikubelet/agent/podconfig"
	"github.com/minikubelet/minikubelet/agent/podmanager"
	"github.com/minikubelet/minikubelet/agent/prober"
	"github.com/minikubelet/minikubelet/agent/status"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/pleg"
	"github.com/minikubelet/minikubelet/podworkers"
)

var admitT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// runningSyncer runs each synced pod in memory (one running container, or
// one that exited 0 with restartPolicy Never) and reports it as the real
// syncer does; it records which pods it synced.
type runningSyncer struct {
	status *status.Manager
	mu     sync.Mutex
	synced map[types.UID]int
	// held, while set, keeps the containers of restartPolicy Never pods
	// running; else they exit at their first sync.
	held bool
}

// release lets the containers of restartPolicy Never pods exit at their
// next sync.
func (f *runningSyncer) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held = false
}

func (f *runningSyncer) SyncPod(_ context.Context, pod *v1.Pod, _ *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	f.mu.Lock()
	f.synced[pod.UID]++
	held := f.held
	f.mu.Unlock()
	state := runtimeapi.ContainerState_CONTAINER_RUNNING
	if pod.Spec.RestartPolicy == v1.RestartPolicyNever && !held {
		state = runtimeapi.ContainerState_CONTAINER_EXITED
	}
	f.status.SetPodStatus(pod, &kubecontainer.PodStatus{
		ID:         pod.UID,
		Sandboxes:  []*runtimeapi.PodSandboxStatus{{Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_READY}},
		Containers: []*kubecontainer.ContainerStatus{{ID: "c-" + string(pod.UID), Name: "app", State: state}},
	}, nil)
	return podworkers.SyncResult{}, nil
}

func (f *runningSyncer) SyncTerminatingPod(context.Context, *v1.Pod, *kubecontainer.PodStatus, int64) (podworkers.SyncResult, error) {
	return podworkers.SyncResult{}, nil
}

func (f *runningSyncer) SyncTerminatedPod(_ context.Context, pod *v1.Pod, _ *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	f.status.RemovePod(pod.UID)
	return podworkers.SyncResult{}, nil
}

func (f *runningSyncer) syncs(uid types.UID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.synced[uid]
}

type recordedEvent struct{ ref, kind, reason, message string }

type eventLog struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (e *eventLog) Eventf(ref *v1.ObjectReference, eventType, reason, messageFmt string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, recordedEvent{ref.Namespace + "/" + ref.Name, eventType, reason, fmt.Sprintf(messageFmt, args...)})
}

type noPLEG struct{}

func (noPLEG) Watch() <-chan *pleg.Event { return nil }
func (noPLEG) LastSeen() time.Time       { return admitT0 }

// admitLoop is a syncLoop with real pod workers over runningSyncer and the
// given admit handlers.
type admitLoop struct {
	*syncLoop
	// ctx ends the workers when the test ends.
	ctx      context.Context
	syncer   *runningSyncer
	statuses *status.Manager
	events   *eventLog
	rejected []string
}

func newAdmitLoop(t *testing.T, ctx context.Context, chain admission.Chain) *admitLoop {
	clk := testingclock.NewFakeClock(admitT0)
	statuses := status.NewManager(status.Config{Clock: clk})
	syncer := &runningSyncer{status: statuses, synced: map[types.UID]int{}}
	cache := pleg.NewCache()
	cache.UpdateTime(admitT0)
	ctx, cancel := context.WithCancel(ctx)
	workers := podworkers.New(podworkers.Config{Syncer: syncer, Cache: cache, Clock: clk})
	t.Cleanup(func() {
		cancel()
		workers.Wait()
	})
	a := &admitLoop{ctx: ctx, syncer: syncer, statuses: statuses, events: &eventLog{}}
	a.syncLoop = &syncLoop{
		clock:     clk,
		pods:      podmanager.New(),
		cache:     cache,
		workers:   workers,
		probes:    prober.New(prober.Config{Clock: clk, Results: make(chan prober.Result, 1)}),
		statuses:  statuses,
		pleg:      noPLEG{},
		admission: chain,
		events:    a.events,
		rejected:  func(reason string) { a.rejected = append(a.rejected, reason) },
	}
	return a
}

func (a *admitLoop) do(op podconfig.Op, pods ...*v1.Pod) {
	a.handlePodUpdate(a.ctx, klog.FromContext(a.ctx), podconfig.PodUpdate{Op: op, Source: "file", Pods: pods})
}

func admitPod(name string, created int, policy v1.RestartPolicy) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(admitT0.Add(time.Duration(created) * time.Second))},
		Spec: v1.PodSpec{RestartPolicy: policy, Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	}
}

// --max-pods 2: of three pods added at once, the two oldest are admitted
// and run; the third never gets a worker, reports Failed with the
// kubelet's reason and message and a Warning event, and stays refused
// through updates and PLEG events. Once it is removed and added anew
// after another pod has finished, it is admitted.
func TestAdmissionMaxPods(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	a := newAdmitLoop(t, ctx, admission.Chain{admission.MaxPods(2)})
	// b runs until released: finished before c is admitted, it would no
	// longer count, and c would be admitted, rightly.
	a.syncer.mu.Lock()
	a.syncer.held = true
	a.syncer.mu.Unlock()
	// Given newest first: admission goes by creation time.
	c, b, first := admitPod("c", 3, v1.RestartPolicyAlways), admitPod("b", 2, v1.RestartPolicyNever), admitPod("a", 1, v1.RestartPolicyAlways)
	a.do(podconfig.ADD, c, b, first)

	polltest.True(t, 5*time.Second, "a and b synced", func() bool { return a.syncer.syncs(first.UID) > 0 && a.syncer.syncs(b.UID) > 0 })
	if slices.Contains(a.workers.Known(), c.UID) || a.syncer.syncs(c.UID) != 0 {
		t.Fatalf("refused pod c has a worker")
	}
	st, ok := a.statuses.Get(c.UID)
	wantMsg := "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
	if !ok || st.Phase != v1.PodFailed || st.Reason != "OutOfpods" || st.Message != wantMsg {
		t.Fatalf("status of c = %v %s %q %q, want Failed OutOfpods %q", ok, st.Phase, st.Reason, st.Message, wantMsg)
	}
	if st.QOSClass != v1.PodQOSBestEffort || st.StartTime == nil || len(st.Conditions)+len(st.ContainerStatuses) != 0 {
		t.Errorf("status of c = %+v, want only the QoS class and a start time besides the refusal", st)
	}
	want := []recordedEvent{{"default/c", v1.EventTypeWarning, "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"}}
	if !slices.Equal(a.events.events, want) || !slices.Equal(a.rejected, []string{"OutOfpods"}) {
		t.Errorf("events %v, rejections %v; want %v, [OutOfpods]", a.events.events, a.rejected, want)
	}

	// Updates and runtime events do not start it.
	c2 := c.DeepCopy()
	c2.Spec.Containers[0].Image = "busybox:2"
	a.do(podconfig.UPDATE, c2)
	a.handlePLEGEvent(a.ctx, klog.FromContext(a.ctx), &pleg.Event{ID: c.UID, Type: pleg.ContainerStarted})
	if slices.Contains(a.workers.Known(), c.UID) {
		t.Fatalf("an update or PLEG event started the refused pod")
	}

	// b finishes (restartPolicy Never): it no longer counts, but c stays
	// refused until it is added anew.
	a.syncer.release()
	a.handlePLEGEvent(a.ctx, klog.FromContext(a.ctx), &pleg.Event{ID: b.UID, Type: pleg.ContainerDied})
	polltest.True(t, 5*time.Second, "b succeeded", func() bool { st, _ := a.statuses.Get(b.UID); return st.Phase == v1.PodSucceeded })
	if got := len(a.activePods("")); got != 1 {
		t.Errorf("active pods with b finished = %d, want 1", got)
	}
	a.do(podconfig.REMOVE, c)
	if slices.Contains(a.workers.Known(), c.UID) {
		t.Errorf("removing the refused pod started a worker for it")
	}
	if _, ok := a.statuses.Get(c.UID); ok {
		t.Errorf("the refused pod's status outlived its removal")
	}
	a.do(podconfig.ADD, c)
	// The worker stores c's status after its sync returns, so the phase
	// is waited for, not read once the sync is counted.
	polltest.True(t, 5*time.Second, "c synced and Running once added anew", func() bool {
		st, _ := a.statuses.Get(c.UID)
		return a.syncer.syncs(c.UID) > 0 && st.Phase == v1.PodRunning
	})
}

// A pod the API already shows in a terminal phase is not admitted again
// (its worker only finishes it off), and a pod being deleted that was
// refused is not given a worker to terminate it.
func TestAdmissionSkipsTerminalAndDeletedRefusedPods(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	refuseAll := func(*v1.Pod, []*v1.Pod) admission.Result {
		return admission.Result{Reason: "Nope", Message: "never"}
	}
	a := newAdmitLoop(t, ctx, admission.Chain{refuseAll})
	done := admitPod("done", 1, v1.RestartPolicyNever)
	done.Status.Phase = v1.PodSucceeded
	a.do(podconfig.ADD, done)
	if !slices.Contains(a.workers.Known(), done.UID) {
		t.Errorf("a pod already Succeeded in the API went through admission")
	}

	api := admitPod("api", 2, v1.RestartPolicyAlways)
	a.do(podconfig.ADD, api)
	if st, _ := a.statuses.Get(api.UID); st.Reason != "Nope" || st.Message != "Pod was rejected: never" {
		t.Fatalf("refused pod status %+v", st)
	}
	deleted := api.DeepCopy()
	now := metav1.NewTime(admitT0)
	deleted.DeletionTimestamp = &now
	a.do(podconfig.DELETE, deleted)
	if slices.Contains(a.workers.Known(), api.UID) {
		t.Errorf("deleting a refused pod that holds nothing started a worker")
	}
	if st, _ := a.statuses.Get(api.UID); st.Phase != v1.PodFailed || len(st.ContainerStatuses) != 0 {
		t.Errorf("refused pod status after its deletion = %+v", st)
	}
}
