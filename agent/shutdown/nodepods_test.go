package shutdown

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

	"github.com/minikubelet/minikubelet/agent/podmanager"
	"github.com/minikubelet/minikubelet/agent/status"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/pleg"
	"github.com/minikubelet/minikubelet/podworkers"
)

// fakeSyncer runs pods in memory: a synced pod runs one container, a
// terminated one is removed, and each reports to the status manager as the
// real syncer does.
type fakeSyncer struct {
	status *status.Manager

	mu    sync.Mutex
	calls []string
}

func (f *fakeSyncer) record(pod *v1.Pod, what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, pod.Name+" "+what)
}

func (f *fakeSyncer) get() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func runtimeStatus(pod *v1.Pod, state runtimeapi.ContainerState, exitCode int32) *kubecontainer.PodStatus {
	return &kubecontainer.PodStatus{
		ID:         pod.UID,
		Sandboxes:  []*runtimeapi.PodSandboxStatus{{Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_READY}},
		Containers: []*kubecontainer.ContainerStatus{{ID: "c", Name: "app", State: state, ExitCode: exitCode}},
	}
}

func (f *fakeSyncer) SyncPod(_ context.Context, pod *v1.Pod, _ *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	f.record(pod, "sync")
	if pod.Spec.RestartPolicy == v1.RestartPolicyNever {
		f.status.SetPodStatus(pod, runtimeStatus(pod, runtimeapi.ContainerState_CONTAINER_EXITED, 0), nil)
	} else {
		f.status.SetPodStatus(pod, runtimeStatus(pod, runtimeapi.ContainerState_CONTAINER_RUNNING, 0), nil)
	}
	return podworkers.SyncResult{}, nil
}

func (f *fakeSyncer) SyncTerminatingPod(_ context.Context, pod *v1.Pod, _ *kubecontainer.PodStatus, grace int64) (podworkers.SyncResult, error) {
	f.record(pod, fmt.Sprintf("terminating(%d)", grace))
	f.status.SetPodStatus(pod, runtimeStatus(pod, runtimeapi.ContainerState_CONTAINER_EXITED, 143), nil)
	return podworkers.SyncResult{}, nil
}

func (f *fakeSyncer) SyncTerminatedPod(_ context.Context, pod *v1.Pod, _ *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	f.record(pod, "terminated")
	f.status.RemovePod(pod.UID)
	return podworkers.SyncResult{}, nil
}

func staticPod(name string, policy v1.RestartPolicy) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{RestartPolicy: policy, Containers: []v1.Container{{Name: "app"}}},
	}
}

// The shutdown manager's requests, as the syncLoop carries them out with
// real pod workers: stop admitting lists the running pods and holds every
// start; terminate kills with the given grace and marks the statuses, which
// outlive the pods' removal; a new pod does not start meanwhile; resume
// starts every pod again, afresh.
func TestNodePodsRequests(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	clk := testingclock.NewFakeClock(t0)
	statuses := status.NewManager(status.Config{Clock: clk})
	syncer := &fakeSyncer{status: statuses}
	cache := pleg.NewCache()
	cache.UpdateTime(t0)
	workers := podworkers.New(podworkers.Config{Syncer: syncer, Cache: cache, Clock: clk})
	defer func() {
		cancel()
		workers.Wait()
	}()
	pods := podmanager.New()
	n := NewNodePods(NodePodsConfig{Pods: pods, Workers: workers, Status: statuses})
	logger := klog.FromContext(ctx)
	do := func(r Request) []*v1.Pod {
		t.Helper()
		r.reply = make(chan []*v1.Pod, 1)
		n.Handle(ctx, logger, r)
		return <-r.reply
	}

	web, job := staticPod("web", v1.RestartPolicyAlways), staticPod("job", v1.RestartPolicyNever)
	for _, p := range []*v1.Pod{web, job} {
		pods.Set(p)
		workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Create, Pod: p})
	}
	polltest.True(t, 5*time.Second, "both pods synced", func() bool {
		a, _ := statuses.Get(web.UID)
		b, _ := statuses.Get(job.UID)
		return a.Phase == v1.PodRunning && b.Phase == v1.PodSucceeded
	})

	running := do(Request{op: opStopAdmitting})
	if len(running) != 1 || running[0].UID != web.UID {
		t.Fatalf("running pods = %v, want only web (job succeeded)", running)
	}
	do(Request{op: opTerminate, kills: []Kill{{Pod: web, GracePeriod: 15, Reason: Reason, Message: Message}}})
	if st, _ := statuses.Get(web.UID); st.Phase != v1.PodFailed || st.Reason != "Terminated" {
		t.Errorf("web at once: phase %s reason %q, want Failed, Terminated", st.Phase, st.Reason)
	}
	polltest.True(t, 5*time.Second, "web terminated", func() bool { return n.Terminated(web.UID) && !slices.Contains(workers.Known(), web.UID) })
	if st, ok := statuses.Get(web.UID); !ok || st.Phase != v1.PodFailed || st.Message != Message {
		t.Errorf("web after removal: %v phase %s message %q", ok, st.Phase, st.Message)
	}

	// A pod added while the node shuts down does not start, nor does a
	// sync bring the killed one back.
	late := staticPod("late", v1.RestartPolicyAlways)
	pods.Set(late)
	workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Create, Pod: late})
	workers.UpdatePod(ctx, podworkers.UpdatePodOptions{Type: podworkers.Sync, Pod: web})
	if got := workers.Known(); !slices.Equal(got, []types.UID{job.UID}) {
		t.Errorf("workers while shutting down = %v, want only job's", got)
	}

	do(Request{op: opResume})
	polltest.True(t, 5*time.Second, "web and late running again", func() bool {
		a, _ := statuses.Get(web.UID)
		b, _ := statuses.Get(late.UID)
		return a.Phase == v1.PodRunning && b.Phase == v1.PodRunning
	})
	if st, _ := statuses.Get(web.UID); st.Reason != "" {
		t.Errorf("web started again still says reason %q", st.Reason)
	}
	want := []string{"web sync", "web terminating(15)", "web terminated", "web sync"}
	var got []string
	for _, c := range syncer.get() {
		if c[:3] == "web" {
			got = append(got, c)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("web's syncs = %q, want %q", got, want)
	}
}
