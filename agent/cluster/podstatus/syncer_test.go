package podstatus

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/kubeclient/kubeclienttest"
)

var t0 = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func TestMerge(t *testing.T) {
	tests := []struct {
		name      string
		api, st   v1.PodStatus
		wantPhase v1.PodPhase
		wantConds []v1.PodConditionType
	}{
		{
			name:      "others' conditions kept",
			api:       v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: v1.ConditionFalse}}},
			st:        v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
			wantPhase: v1.PodRunning,
			wantConds: []v1.PodConditionType{v1.PodReady, v1.DisruptionTarget},
		},
		{
			name:      "readiness gates' conditions kept",
			api:       v1.PodStatus{Conditions: []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: v1.ConditionFalse}}},
			st:        v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
			wantPhase: v1.PodRunning,
			wantConds: []v1.PodConditionType{v1.PodReady, "example.com/lb"},
		},
		{
			name: "a resize condition the agent cleared goes",
			api: v1.PodStatus{Conditions: []v1.PodCondition{
				{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue},
				{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonDeferred},
			}},
			st:        v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
			wantPhase: v1.PodRunning,
			wantConds: []v1.PodConditionType{v1.PodReady},
		},
		{
			name:      "terminal phase never turned back",
			api:       v1.PodStatus{Phase: v1.PodSucceeded},
			st:        v1.PodStatus{Phase: v1.PodRunning},
			wantPhase: v1.PodSucceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Merge(tt.api, tt.st)
			if got.Phase != tt.wantPhase {
				t.Errorf("phase = %s, want %s", got.Phase, tt.wantPhase)
			}
			var conds []v1.PodConditionType
			for _, c := range got.Conditions {
				conds = append(conds, c.Type)
			}
			if strings.Join(condStrings(conds), ",") != strings.Join(condStrings(tt.wantConds), ",") {
				t.Errorf("conditions = %v, want %v", conds, tt.wantConds)
			}
		})
	}
}

func condStrings(cs []v1.PodConditionType) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

func TestPatch(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Status: v1.PodStatus{Phase: v1.PodPending, StartTime: &t0}}
	tests := []struct {
		name     string
		st       v1.PodStatus
		wantNil  bool
		contains []string
		absent   []string
	}{
		{name: "unchanged", st: v1.PodStatus{Phase: v1.PodPending, StartTime: &t0}, wantNil: true},
		{
			name:     "only what changed, with the UID precondition",
			st:       v1.PodStatus{Phase: v1.PodRunning, StartTime: &t0, PodIP: "10.0.0.5"},
			contains: []string{`"phase":"Running"`, `"podIP":"10.0.0.5"`, `"uid":"u1"`},
			absent:   []string{"startTime"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Patch(pod, tt.st)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantNil != (got == nil) {
				t.Fatalf("patch = %s, want nil: %v", got, tt.wantNil)
			}
			for _, s := range tt.contains {
				if !strings.Contains(string(got), s) {
					t.Errorf("patch %s lacks %s", got, s)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(string(got), s) {
					t.Errorf("patch %s has %s", got, s)
				}
			}
		})
	}
}

type fakeStatuses map[types.UID]v1.PodStatus

func (f fakeStatuses) Get(uid types.UID) (v1.PodStatus, bool) { st, ok := f[uid]; return st, ok }

type fakePods map[types.UID]*v1.Pod

func (f fakePods) APIPod(uid types.UID) (*v1.Pod, bool, bool) { p, ok := f[uid]; return p, false, ok }
func (f fakePods) UIDs() []types.UID {
	var out []types.UID
	for uid := range f {
		out = append(out, uid)
	}
	return out
}
func (f fakePods) Deleted() []types.UID { return nil }

func TestSync(t *testing.T) {
	deleted := metav1.NewTime(t0.Add(time.Minute))
	tests := []struct {
		name        string
		pod         *v1.Pod
		status      *v1.PodStatus
		gone        bool
		wantActions []string
	}{
		{
			name:        "status changed: patched",
			pod:         &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}},
			status:      &v1.PodStatus{Phase: v1.PodRunning},
			wantActions: []string{"patch:status"},
		},
		{
			name:   "status unchanged: nothing",
			pod:    &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Status: v1.PodStatus{Phase: v1.PodRunning}},
			status: &v1.PodStatus{Phase: v1.PodRunning},
		},
		{
			name: "deleted but still on the node: no delete",
			pod:  &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", DeletionTimestamp: &deleted}},
		},
		{
			name:        "deleted and gone: final delete",
			pod:         &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", DeletionTimestamp: &deleted}},
			gone:        true,
			wantActions: []string{"delete:"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.pod)
			client.ClearActions()
			statuses := fakeStatuses{}
			if tt.status != nil {
				statuses[tt.pod.UID] = *tt.status
			}
			s := New(Config{
				Client:   kubeclienttest.Wrap(client),
				Statuses: statuses,
				Pods:     fakePods{tt.pod.UID: tt.pod},
				Gone:     func(types.UID) bool { return tt.gone },
				Clock:    clocktesting.NewFakeClock(t0.Time),
			})
			if err := s.sync(context.Background(), tt.pod.UID); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range client.Actions() {
				got = append(got, a.GetVerb()+":"+a.GetSubresource())
				if d, ok := a.(clienttesting.DeleteAction); ok {
					if g := d.GetDeleteOptions().GracePeriodSeconds; g == nil || *g != 0 {
						t.Errorf("final delete with grace %v, want 0", g)
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.wantActions, ",") {
				t.Errorf("actions = %v, want %v", got, tt.wantActions)
			}
		})
	}
}

// TestNoWriteAfterFinalDelete: once the Syncer has deleted a pod from the
// API, a status stored or a resync before the node's view of the API
// drops the pod writes nothing (a patch or a second delete would only get
// 404); a pod of the same UID seen again after it was dropped is written.
func TestNoWriteAfterFinalDelete(t *testing.T) {
	deleted := metav1.NewTime(t0.Add(time.Minute))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", DeletionTimestamp: &deleted}}
	client := fake.NewClientset(pod)
	statuses := fakeStatuses{pod.UID: v1.PodStatus{Phase: v1.PodSucceeded}}
	pods := fakePods{pod.UID: pod}
	s := New(Config{
		Client:   kubeclienttest.Wrap(client),
		Statuses: statuses,
		Pods:     pods,
		Gone:     func(types.UID) bool { return true },
		Clock:    clocktesting.NewFakeClock(t0.Time),
	})
	verbs := func() string {
		var got []string
		for _, a := range client.Actions() {
			got = append(got, a.GetVerb()+":"+a.GetSubresource())
		}
		client.ClearActions()
		return strings.Join(got, ",")
	}
	client.ClearActions()
	if err := s.sync(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if got := verbs(); got != "patch:status,delete:" {
		t.Fatalf("first sync: %s, want the final status and the delete", got)
	}
	// The informer still shows the pod; a new status comes.
	statuses[pod.UID] = v1.PodStatus{Phase: v1.PodFailed}
	if err := s.sync(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if got := verbs(); got != "" {
		t.Errorf("sync after the final delete: %s, want nothing", got)
	}
	delete(pods, pod.UID)
	if err := s.sync(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if s.finalDeleted[pod.UID] {
		t.Error("the final delete is remembered after the pod left the API")
	}
}
