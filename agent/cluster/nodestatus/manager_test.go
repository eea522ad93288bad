package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/kubeclient/kubeclienttest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestConditions(t *testing.T) {
	old := []v1.NodeCondition{
		{Type: v1.NodeReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
		{Type: "NetworkUnavailable", Status: v1.ConditionFalse},
	}
	now := t0.Add(time.Minute)
	tests := []struct {
		name       string
		ready      error
		p          Pressure
		want       map[v1.NodeConditionType]v1.ConditionStatus
		wantReadyT time.Time
	}{
		{
			name:       "ready, no pressure: transition time kept",
			want:       map[v1.NodeConditionType]v1.ConditionStatus{v1.NodeReady: v1.ConditionTrue, v1.NodeMemoryPressure: v1.ConditionFalse, v1.NodeDiskPressure: v1.ConditionFalse, v1.NodePIDPressure: v1.ConditionFalse, "NetworkUnavailable": v1.ConditionFalse},
			wantReadyT: t0,
		},
		{
			name:       "not ready, memory pressure",
			ready:      errors.New("pleg not started"),
			p:          Pressure{Memory: true},
			want:       map[v1.NodeConditionType]v1.ConditionStatus{v1.NodeReady: v1.ConditionFalse, v1.NodeMemoryPressure: v1.ConditionTrue, v1.NodeDiskPressure: v1.ConditionFalse, v1.NodePIDPressure: v1.ConditionFalse},
			wantReadyT: now,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Conditions(old, tt.ready, tt.p, now)
			for _, c := range got {
				if want, ok := tt.want[c.Type]; ok && c.Status != want {
					t.Errorf("%s = %s, want %s", c.Type, c.Status, want)
				}
				if c.Type == v1.NodeReady {
					if !c.LastTransitionTime.Time.Equal(tt.wantReadyT) {
						t.Errorf("Ready transition = %v, want %v", c.LastTransitionTime, tt.wantReadyT)
					}
					if tt.ready != nil && c.Message != tt.ready.Error() {
						t.Errorf("Ready message = %q", c.Message)
					}
				}
			}
		})
	}
}

func TestRegisterLeaseStatus(t *testing.T) {
	tests := []struct {
		name     string
		existing *v1.Node
	}{
		{name: "new node"},
		{name: "existing node gets the labels", existing: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"keep": "me"}},
			Status: v1.NodeStatus{DeclaredFeatures: []string{"DeclaredByAnEarlierAgent"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tt.existing != nil {
				client = fake.NewClientset(tt.existing)
			}
			clk := clocktesting.NewFakeClock(t0)
			m := New(Config{
				Client:           kubeclienttest.Wrap(client),
				NodeName:         "n1",
				Labels:           map[string]string{"role": "edge"},
				Taints:           []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}},
				Capacity:         v1.ResourceList{v1.ResourcePods: resource.MustParse("110")},
				Allocatable:      v1.ResourceList{v1.ResourcePods: resource.MustParse("110")},
				NodeInfo:         v1.NodeSystemInfo{ContainerRuntimeVersion: "containerd://2.1.4", OperatingSystem: "linux"},
				KubeletPort:      10250,
				DeclaredFeatures: []string{"ExtendWebSocketsToKubelet"},
				Clock:            clk,
			})
			ctx := context.Background()
			if err := m.register(ctx); err != nil {
				t.Fatal(err)
			}
			if err := m.updateStatus(ctx); err != nil {
				t.Fatal(err)
			}
			if err := m.renewLease(ctx); err != nil {
				t.Fatal(err)
			}
			n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n.Labels["role"] != "edge" {
				t.Errorf("labels = %v", n.Labels)
			}
			if tt.existing != nil && n.Labels["keep"] != "me" {
				t.Errorf("existing labels lost: %v", n.Labels)
			}
			if tt.existing == nil && len(n.Spec.Taints) != 1 {
				t.Errorf("taints = %v", n.Spec.Taints)
			}
			if n.Status.NodeInfo.ContainerRuntimeVersion != "containerd://2.1.4" || n.Status.Capacity.Pods().Value() != 110 || n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
				t.Errorf("status = %+v", n.Status)
			}
			if !slices.Equal(n.Status.DeclaredFeatures, []string{"ExtendWebSocketsToKubelet"}) {
				t.Errorf("declaredFeatures = %q, want [ExtendWebSocketsToKubelet]", n.Status.DeclaredFeatures)
			}
			l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *l.Spec.HolderIdentity != "n1" || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(t0) {
				t.Errorf("lease = %+v", l.Spec)
			}
			clk.Step(10 * time.Second)
			if err := m.renewLease(ctx); err != nil {
				t.Fatal(err)
			}
			l, _ = client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, "n1", metav1.GetOptions{})
			if !l.Spec.RenewTime.Time.Equal(t0.Add(10 * time.Second)) {
				t.Errorf("lease not renewed: %v", l.Spec.RenewTime)
			}
			// Nothing changed and no report is due: no patch.
			client.ClearActions()
			if err := m.updateStatus(ctx); err != nil {
				t.Fatal(err)
			}
			for _, a := range client.Actions() {
				if a.GetVerb() == "patch" {
					t.Errorf("status patched though nothing changed: %v", a)
				}
			}
		})
	}
}

type nodeEvents struct{ got []string }

func (e *nodeEvents) Eventf(ref *v1.ObjectReference, eventType, reason, messageFmt string, args ...any) {
	e.got = append(e.got, ref.Kind+"/"+ref.Name+" "+reason+": "+fmt.Sprintf(messageFmt, args...))
}

// Each condition's change is told once in the kubelet's event, and only
// when it changes.
func TestConditionEvents(t *testing.T) {
	client := fake.NewClientset()
	ev := &nodeEvents{}
	var notReady error
	m := New(Config{Client: kubeclienttest.Wrap(client), NodeName: "n1", Clock: clocktesting.NewFakeClock(t0), Events: ev, Ready: func() error { return notReady }})
	ctx := context.Background()
	if err := m.register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.updateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Node/n1 NodeHasSufficientMemory: Node n1 status is now: NodeHasSufficientMemory",
		"Node/n1 NodeHasNoDiskPressure: Node n1 status is now: NodeHasNoDiskPressure",
		"Node/n1 NodeHasSufficientPID: Node n1 status is now: NodeHasSufficientPID",
		"Node/n1 NodeReady: Node n1 status is now: NodeReady",
	}
	if !slices.Equal(ev.got, want) {
		t.Errorf("first status events:\n%s\nwant:\n%s", strings.Join(ev.got, "\n"), strings.Join(want, "\n"))
	}
	ev.got = nil
	if err := m.updateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if len(ev.got) != 0 {
		t.Errorf("events without a change: %v", ev.got)
	}
	notReady = errors.New("runtime down")
	if err := m.updateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ev.got, []string{"Node/n1 NodeNotReady: Node n1 status is now: NodeNotReady"}) {
		t.Errorf("events when the node turns not ready: %v", ev.got)
	}
}
