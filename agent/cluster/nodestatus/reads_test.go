package nodestatus

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/kubeclient/kubeclienttest"
)

// actions lists a fake clientset's calls as "verb resource", watches left
// out.
func actions(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "watch" || a.GetVerb() == "list" {
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

// At steady state, as the kubelet, the agent renews its Lease and checks
// its Node's status without reading either from the apiserver: the Lease
// as it last wrote it, the Node from its watch. A renewal that fails (a
// conflict: someone else wrote the Lease) reads the Lease and renews that
// at once; a status update that fails reads the Node at the next one.
func TestSteadyStateReadsNothing(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(t0)
	m := New(Config{Client: kubeclienttest.Wrap(client), NodeName: "n1", Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := m.register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.renewLease(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.updateStatus(ctx); err != nil { // the first report
		t.Fatal(err)
	}
	done := make(chan struct{}) // closed when the informer stops
	go func() {
		defer close(done)
		m.informer.RunWithContext(ctx)
	}()
	defer func() { cancel(); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), m.informer.HasSynced) {
		t.Fatal("the Node's informer did not sync")
	}
	client.ClearActions()
	for i := 0; i < 3; i++ {
		clk.Step(10 * time.Second)
		if err := m.renewLease(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.updateStatus(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := actions(client), []string{"update leases", "update leases", "update leases"}; !slices.Equal(got, want) {
		t.Errorf("calls at steady state %q, want %q", got, want)
	}
	l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !l.Spec.RenewTime.Time.Equal(t0.Add(30 * time.Second)) {
		t.Errorf("lease renewed at %v, want %v", l.Spec.RenewTime, t0.Add(30*time.Second))
	}

	// A conflict: the Lease is read and renewed again.
	conflicts := 1
	client.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "n1", nil)
	})
	client.ClearActions()
	clk.Step(10 * time.Second)
	if err := m.renewLease(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := actions(client), []string{"update leases", "get leases", "update leases"}; !slices.Equal(got, want) {
		t.Errorf("calls of a renewal that met a conflict %q, want %q", got, want)
	}

	// A failed status patch: the next update reads the Node.
	fail := true
	client.PrependReactor("patch", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		if !fail {
			return false, nil, nil
		}
		fail = false
		return true, nil, apierrors.NewServiceUnavailable("apiserver overloaded")
	})
	clk.Step(6 * time.Minute) // a report is due: the update patches
	if err := m.updateStatus(ctx); err == nil {
		t.Fatal("a failed patch: no error")
	}
	client.ClearActions()
	if err := m.updateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := actions(client), []string{"get nodes", "patch nodes"}; !slices.Equal(got, want) {
		t.Errorf("calls of the update after a failed one %q, want %q", got, want)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady && !c.LastHeartbeatTime.Time.Equal(clk.Now()) {
			t.Errorf("Ready heartbeat %v, want %v", c.LastHeartbeatTime, clk.Now())
		}
	}
}
