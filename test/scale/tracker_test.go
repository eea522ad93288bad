package scale

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

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
	mu.Lock()
	n := len(watches)
	mu.Unlock()
	if n < 2 {
		t.Errorf("%d watches, want a second after the first closed", n)
	}
}
