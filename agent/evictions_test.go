package agent

import (
	"context"
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
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/admission"
	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/podconfig"
	"github.com/minikubelet/minikubelet/agent/podmanager"
	"github.com/minikubelet/minikubelet/agent/prober"
	"github.com/minikubelet/minikubelet/agent/status"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/pleg"
	"github.com/minikubelet/minikubelet/podworkers"
)

// recordingSyncer records the syncs of each pod and reports each synced
// pod's containers as exitCode says (running when absent).
type recordingSyncer struct {
	mu       sync.Mutex
	calls    []string
	statuses *status.Manager
	exitCode map[types.UID]int32
}

func (s *recordingSyncer) record(c string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

func (s *recordingSyncer) has(c string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.calls, c)
}

func (s *recordingSyncer) count(c string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, x := range s.calls {
		if x == c {
			n++
		}
	}
	return n
}

func (s *recordingSyncer) SyncPod(_ context.Context, pod *v1.Pod, _ *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	s.record("sync " + pod.Name)
	s.mu.Lock()
	code, exited := s.exitCode[pod.UID]
	s.mu.Unlock()
	cs := &kubecontainer.ContainerStatus{ID: "c-" + pod.Name, Name: "main", State: runtimeapi.ContainerState_CONTAINER_RUNNING, StartedAt: time.Unix(1, 0)}
	if exited {
		cs.State, cs.ExitCode, cs.FinishedAt = runtimeapi.ContainerState_CONTAINER_EXITED, code, time.Unix(2, 0)
	}
	s.statuses.SetPodStatus(pod, &kubecontainer.PodStatus{ID: pod.UID, Containers: []*kubecontainer.ContainerStatus{cs},
		Sandboxes: []*runtimeapi.PodSandboxStatus{{Id: "s-" + pod.Name, State: runtimeapi.PodSandboxState_SANDBOX_READY}}}, nil)
	return podworkers.SyncResult{}, nil
}

func (s *recordingSyncer) SyncTerminatingPod(_ context.Context, pod *v1.Pod, _ *kubecontainer.PodStatus, grace int64) (podworkers.SyncResult, error) {
	s.record("kill " + pod.Name + " grace " + string(rune('0'+grace)))
	return podworkers.SyncResult{}, nil
}

func (s *recordingSyncer) SyncTerminatedPod(_ context.Context, pod *v1.Pod, _ *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	s.record("remove " + pod.Name)
	return podworkers.SyncResult{}, nil
}

type recordedEvents struct {
	mu     sync.Mutex
	events []string
}

func (r *recordedEvents) Eventf(ref *v1.ObjectReference, eventType, reason, _ string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ref.Name+" "+eventType+" "+reason)
}

// testLoop is a syncLoop with real pods, workers and statuses around a
// recording syncer, and the given admission.
func testLoop(t *testing.T, handlers ...admission.Handler) (*syncLoop, *recordingSyncer, *recordedEvents, context.Context) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	statuses := status.NewManager(status.Config{Clock: clk})
	syncer := &recordingSyncer{statuses: statuses, exitCode: map[types.UID]int32{}}
	cache := pleg.NewCache()
	cache.UpdateTime(clk.Now())
	workers := podworkers.New(podworkers.Config{Syncer: syncer, Cache: cache, Clock: clk})
	t.Cleanup(func() {
		cancel()
		workers.Wait()
	})
	pods := podmanager.New()
	ev := &recordedEvents{}
	l := &syncLoop{
		clock:     clk,
		pods:      pods,
		cache:     cache,
		workers:   workers,
		probes:    prober.New(prober.Config{Clock: clk}),
		statuses:  statuses,
		admission: handlers,
		events:    ev,
		rejected:  func(string) {},
	}
	return l, syncer, ev, ctx
}

func staticPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Annotations: map[string]string{kubecontainer.AnnotationConfigSource: "file"}},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{{Name: "main", Image: "busybox"}}},
	}
}

// ask sends r through handleEviction and returns its answer.
func ask(ctx context.Context, l *syncLoop, op eviction.Op, pod *v1.Pod, msg string) bool {
	r := eviction.NewRequest(op, pod, 0, msg)
	l.handleEviction(ctx, klog.FromContext(ctx), r)
	return r.Answer()
}

// The syncLoop carries out the eviction manager's requests: an evicted
// pod ends Failed/Evicted, killed with the grace asked, and is started
// again only when asked; a finished pod is retired, its last status
// kept.
func TestHandleEviction(t *testing.T) {
	// Pods refused while the node is under pressure; not when asked to
	// start again.
	underPressure := true
	l, syncer, ev, ctx := testLoop(t, func(pod *v1.Pod, _ []*v1.Pod) admission.Result {
		if underPressure && pod.Name == "refused" {
			return admission.Result{Reason: "Evicted", Message: "The node had condition: [MemoryPressure]. "}
		}
		return admission.Admitted
	})
	p := staticPod("p")
	l.handlePodUpdate(ctx, klog.FromContext(ctx), podconfig.PodUpdate{Op: podconfig.ADD, Pods: []*v1.Pod{p}})
	polltest.True(t, 10*time.Second, "p synced", func() bool { return syncer.has("sync p") })

	if !ask(ctx, l, eviction.OpEvict, p, "The node was low on resource: memory. ") {
		t.Fatal("eviction of a running pod not carried out")
	}
	polltest.True(t, 10*time.Second, "p killed with no grace and removed", func() bool { return syncer.has("kill p grace 0") && syncer.has("remove p") })
	st, _ := l.statuses.Get(p.UID)
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" || st.Message != "The node was low on resource: memory. " || len(st.Conditions) == 0 {
		t.Errorf("evicted pod's status %+v", st)
	}
	if ask(ctx, l, eviction.OpEvict, p, "again") {
		t.Error("an evicted pod evicted again")
	}
	// An update does not start it again; a restart request does.
	l.handlePodUpdate(ctx, klog.FromContext(ctx), podconfig.PodUpdate{Op: podconfig.UPDATE, Pods: []*v1.Pod{p}})
	if syncer.count("sync p") != 1 {
		t.Error("an update started the evicted pod")
	}
	if !ask(ctx, l, eviction.OpRestart, p, "") {
		t.Fatal("restart not carried out")
	}
	polltest.True(t, 10*time.Second, "p started again", func() bool { return syncer.count("sync p") == 2 })
	if st, _ := l.statuses.Get(p.UID); st.Phase == v1.PodFailed || st.Reason == "Evicted" {
		t.Errorf("restarted pod's status %+v", st)
	}
	if ask(ctx, l, eviction.OpRetire, p, "") {
		t.Error("a running pod retired")
	}

	// A finished pod is retired: its containers go, its status stays.
	done := staticPod("done")
	syncer.exitCode[done.UID] = 0
	l.handlePodUpdate(ctx, klog.FromContext(ctx), podconfig.PodUpdate{Op: podconfig.ADD, Pods: []*v1.Pod{done}})
	polltest.True(t, 10*time.Second, "done finished", func() bool {
		st, _ := l.statuses.Get(done.UID)
		return st.Phase == v1.PodSucceeded
	})
	if !ask(ctx, l, eviction.OpRetire, done, "") {
		t.Fatal("retire not carried out")
	}
	polltest.True(t, 10*time.Second, "done removed", func() bool { return syncer.has("remove done") })
	if st, _ := l.statuses.Get(done.UID); st.Phase != v1.PodSucceeded || len(st.ContainerStatuses) != 1 {
		t.Errorf("retired pod's status %+v, want the last one", st)
	}

	// A static pod refused under pressure starts when asked to, through
	// admission again.
	refused := staticPod("refused")
	l.handlePodUpdate(ctx, klog.FromContext(ctx), podconfig.PodUpdate{Op: podconfig.ADD, Pods: []*v1.Pod{refused}})
	if st, _ := l.statuses.Get(refused.UID); st.Reason != "Evicted" || !slices.Contains(ev.events, "refused Warning Evicted") {
		t.Fatalf("refused pod's status %+v, events %v", st, ev.events)
	}
	if !ask(ctx, l, eviction.OpRestart, refused, "") {
		t.Fatal("restart of a pod refused at admission not carried out")
	}
	if st, _ := l.statuses.Get(refused.UID); st.Reason != "Evicted" || syncer.has("sync refused") {
		t.Errorf("a pod refused anew started: %+v", st)
	}
	underPressure = false
	if !ask(ctx, l, eviction.OpRestart, refused, "") {
		t.Fatal("restart not carried out")
	}
	polltest.True(t, 10*time.Second, "the refused pod started", func() bool { return syncer.has("sync refused") })
}
