package scale

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// A pod deleted while the tracker's watch is down (closed by the
// apiserver, say) is counted gone by the list that starts the next watch.
func TestTrackerCountsPodsGoneBetweenWatches(t *testing.T) {
	client := fake.NewClientset()
	var mu sync.Mutex
	var watches []*watch.FakeWatcher
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		w := watch.NewFake()
		watches = append(watches, w)
		return true, w, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := newTracker()
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() { tr.watchPods(ctx, client, "ns", ready); close(done) }()
	defer func() { cancel(); <-done }()
	<-ready
	for _, name := range []string{"a", "b"} {
		p := scalePod(name)
		p.Namespace = "ns"
		if _, err := client.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Both delete calls start; a's deletion is seen by the watch, b's
	// happens while no watch runs.
	tr.mark(tr.deleted, "a", time.Now())
	tr.mark(tr.deleted, "b", time.Now())
	if err := client.CoreV1().Pods("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	first := watches[0]
	mu.Unlock()
	first.Delete(scalePod("a"))
	polltest.Until(t, 10*time.Second, "a seen gone", func() (bool, string) {
		return tr.count(tr.gone) == 1, fmt.Sprintf("%d gone", tr.count(tr.gone))
	})
	if err := client.CoreV1().Pods("ns").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	first.Stop()
	polltest.Until(t, 10*time.Second, "b counted gone after the watch closed", func() (bool, string) {
		return tr.count(tr.gone) == 2, fmt.Sprintf("%d gone", tr.count(tr.gone))
	})
	// The relist that counts b gone comes before the watch it starts:
	// wait for that second watch rather than read the count at once.
	polltest.Until(t, 10*time.Second, "a second watch after the first closed", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(watches) >= 2, fmt.Sprintf("%d watches", len(watches))
	})
}

// The watch marks a pod bound when it first shows spec.nodeName, Running
// when it first shows phase Running; a pod first seen Running is bound
// then too.
func TestTrackerMarksBoundThenRunning(t *testing.T) {
	tr := newTracker()
	t0 := time.Date(2026, 12, 7, 19, 0, 0, 0, time.UTC)
	p := scalePod("a")
	tr.seen(p, t0) // created, not bound
	p.Spec.NodeName = "n1"
	tr.seen(p, t0.Add(2*time.Second))
	tr.seen(p, t0.Add(3*time.Second)) // bound again: the first time stays
	p.Status.Phase = v1.PodRunning
	tr.seen(p, t0.Add(3500*time.Millisecond))
	q := scalePod("b")
	q.Spec.NodeName, q.Status.Phase = "n2", v1.PodRunning
	tr.seen(q, t0.Add(4*time.Second))
	tr.mark(tr.created, "a", t0)
	tr.mark(tr.created, "b", t0)

	got := map[time.Duration]int{}
	for _, d := range tr.latencies(tr.bound, tr.running) {
		got[d]++
	}
	want := map[time.Duration]int{1500 * time.Millisecond: 1, 0: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bound -> Running latencies %v, want %v", got, want)
	}
	if n := len(tr.latencies(tr.created, tr.bound)); n != 2 {
		t.Errorf("%d pods bound, want 2", n)
	}
}
