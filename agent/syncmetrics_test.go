package agent

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/metrics"
	"github.com/minikubelet/minikubelet/podworkers"
)

// phaseSyncer is a syncer whose syncs take 2s of the fake clock and set
// the pod's phase to the next of phases.
type phaseSyncer struct {
	clock    *clocktesting.FakeClock
	statuses map[types.UID]v1.PodStatus
	phases   []v1.PodPhase
}

func (s *phaseSyncer) Get(uid types.UID) (v1.PodStatus, bool) {
	st, ok := s.statuses[uid]
	return st, ok
}

func (s *phaseSyncer) SyncPod(_ context.Context, pod *v1.Pod, _ *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	s.clock.Step(2 * time.Second)
	s.statuses[pod.UID] = v1.PodStatus{Phase: s.phases[0]}
	s.phases = s.phases[1:]
	return podworkers.SyncResult{}, nil
}

func (s *phaseSyncer) SyncTerminatingPod(context.Context, *v1.Pod, *kubecontainer.PodStatus, int64) (podworkers.SyncResult, error) {
	s.clock.Step(time.Second)
	return podworkers.SyncResult{}, nil
}

func (s *phaseSyncer) SyncTerminatedPod(context.Context, *v1.Pod, *kubecontainer.PodStatus) (podworkers.SyncResult, error) {
	return podworkers.SyncResult{}, nil
}

// The pod worker and pod start durations under the kubelet's names: a
// pod seen 5s before its first sync starts running at its second (4s
// later): one start of 9s, observed once.
func TestMeasuredSyncer(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	inner := &phaseSyncer{clock: clk, statuses: map[types.UID]v1.PodStatus{}, phases: []v1.PodPhase{v1.PodPending, v1.PodRunning, v1.PodRunning}}
	m := metrics.New()
	s := newMeasuredSyncer(inner, m, inner, clk)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Annotations: map[string]string{
		manifest.AnnotationConfigSeen: clk.Now().Add(-5 * time.Second).Format(time.RFC3339Nano),
	}}}
	ctx := context.Background()
	for range 3 {
		if _, err := s.SyncPod(ctx, pod, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SyncTerminatingPod(ctx, pod, nil, 30); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, l := range []string{
		`kubelet_pod_worker_duration_seconds_count{operation_type="create"} 1`,
		`kubelet_pod_worker_duration_seconds_count{operation_type="sync"} 2`,
		`kubelet_pod_worker_duration_seconds_sum{operation_type="sync"} 4`,
		`kubelet_pod_worker_duration_seconds_count{operation_type="kill"} 1`,
		`kubelet_pod_start_duration_seconds_count 1`,
		`kubelet_pod_start_duration_seconds_sum 9`,
	} {
		if !strings.Contains(string(body), "\n"+l+"\n") {
			t.Errorf("no line %q in:\n%s", l, body)
		}
	}
}
