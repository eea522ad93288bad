package metrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// scrape returns what m serves on /metrics.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantLines(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(body, "\n"+l+"\n") {
			t.Errorf("no line %q in:\n%s", l, body)
		}
	}
}

type podStatuses []*kubecontainer.PodStatus

func (p podStatuses) ForEach(f func(types.UID, *kubecontainer.PodStatus)) {
	for _, st := range p {
		f(st.ID, st)
	}
}

func TestKubeletNodeAndRunning(t *testing.T) {
	m := New()
	m.RegisterNodeName("node-1")
	sandbox := func(s runtimeapi.PodSandboxState) *runtimeapi.PodSandboxStatus {
		return &runtimeapi.PodSandboxStatus{State: s}
	}
	ctr := func(s runtimeapi.ContainerState) *kubecontainer.ContainerStatus {
		return &kubecontainer.ContainerStatus{State: s}
	}
	m.RegisterRunning(podStatuses{
		{ID: "a", Sandboxes: []*runtimeapi.PodSandboxStatus{sandbox(runtimeapi.PodSandboxState_SANDBOX_READY), sandbox(runtimeapi.PodSandboxState_SANDBOX_NOTREADY)},
			Containers: []*kubecontainer.ContainerStatus{ctr(runtimeapi.ContainerState_CONTAINER_RUNNING), ctr(runtimeapi.ContainerState_CONTAINER_EXITED), ctr(runtimeapi.ContainerState_CONTAINER_RUNNING)}},
		{ID: "b", Sandboxes: []*runtimeapi.PodSandboxStatus{sandbox(runtimeapi.PodSandboxState_SANDBOX_NOTREADY)},
			Containers: []*kubecontainer.ContainerStatus{ctr(runtimeapi.ContainerState_CONTAINER_EXITED), ctr(runtimeapi.ContainerState_CONTAINER_CREATED)}},
		{ID: "c"},
	})
	wantLines(t, scrape(t, m),
		`kubelet_node_name{node="node-1"} 1`,
		`kubelet_running_pods 1`,
		`kubelet_running_containers{container_state="running"} 2`,
		`kubelet_running_containers{container_state="exited"} 2`,
		`kubelet_running_containers{container_state="created"} 1`,
		`kubelet_running_containers{container_state="unknown"} 0`,
	)
}

func TestObserveRelist(t *testing.T) {
	m := New()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.ObserveRelist(t0, 20*time.Millisecond)
	m.ObserveRelist(t0.Add(time.Second), 30*time.Millisecond)
	m.ObserveRelist(t0.Add(3*time.Second), 50*time.Millisecond)
	wantLines(t, scrape(t, m),
		`kubelet_pleg_relist_duration_seconds_count 3`,
		`kubelet_pleg_relist_duration_seconds_sum 0.1`,
		// Two intervals: 1s and 2s.
		`kubelet_pleg_relist_interval_seconds_count 2`,
		`kubelet_pleg_relist_interval_seconds_sum 3`,
		`kubelet_pleg_relist_interval_seconds_bucket{le="1"} 1`,
	)
}

// stepRuntime is a fake runtime whose calls take a second of the fake
// clock each.
type stepRuntime struct {
	*critest.FakeRuntimeService
	clock *clocktesting.FakeClock
}

func (r stepRuntime) StartContainer(ctx context.Context, id string) error {
	r.clock.Step(time.Second)
	return r.FakeRuntimeService.StartContainer(ctx, id)
}

func TestInstrumentRuntime(t *testing.T) {
	m := New()
	clk := clocktesting.NewFakeClock(time.Now())
	fake := critest.NewFakeRuntimeService()
	fake.InjectError("StartContainer", errors.New("boom"))
	rs, is := m.InstrumentRuntime(clk, stepRuntime{FakeRuntimeService: fake, clock: clk}, critest.NewFakeImageService())
	ctx := context.Background()
	if _, err := rs.ListPodSandbox(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.ListPodSandbox(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := rs.StartContainer(ctx, "x"); err == nil {
		t.Fatal("StartContainer: the injected error was lost")
	}
	if _, _, err := rs.ExecSync(ctx, "x", []string{"true"}, time.Second); err != nil {
		t.Logf("ExecSync: %v", err)
	}
	if _, err := is.ListImages(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := fake.AssertCalls([]string{"ListPodSandbox", "ListPodSandbox", "StartContainer", "ExecSync"}); err != nil {
		t.Error(err)
	}
	wantLines(t, scrape(t, m),
		`kubelet_runtime_operations_total{operation_type="list_podsandbox"} 2`,
		`kubelet_runtime_operations_total{operation_type="start_container"} 1`,
		`kubelet_runtime_operations_total{operation_type="exec_sync"} 1`,
		`kubelet_runtime_operations_total{operation_type="list_images"} 1`,
		`kubelet_runtime_operations_errors_total{operation_type="start_container"} 1`,
		`kubelet_runtime_operations_duration_seconds_sum{operation_type="start_container"} 1`,
		`kubelet_runtime_operations_duration_seconds_sum{operation_type="list_podsandbox"} 0`,
	)
	if body := scrape(t, m); strings.Contains(body, `kubelet_runtime_operations_errors_total{operation_type="list_podsandbox"}`) {
		t.Error("errors counted for calls that succeeded")
	}
}
