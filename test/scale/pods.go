package scale

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// podImage is the image every pod names: the fake runtimes "pull" it.
const podImage = "registry.k8s.io/pause:3.10"

// podLabel marks the run's pods.
const podLabel = "minikubelet-scale"

// scalePod is one of the run's pods: a pause container, no volume (so
// that neither agent mounts anything), no service-account token.
func scalePod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{podLabel: "true"}},
		Spec: v1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []v1.Container{{Name: "pause", Image: podImage}},
		},
	}
}

// tracker records, per pod of a namespace, when its create and delete
// calls started and when the watch first showed it bound to a node
// (spec.nodeName set: the scheduler's part is over), Running and gone.
type tracker struct {
	mu                                     sync.Mutex
	created, bound, running, deleted, gone map[string]time.Time
}

func newTracker() *tracker {
	return &tracker{created: map[string]time.Time{}, bound: map[string]time.Time{}, running: map[string]time.Time{}, deleted: map[string]time.Time{}, gone: map[string]time.Time{}}
}

// mark records t for name in m unless it has a time already.
func (tr *tracker) mark(m map[string]time.Time, name string, t time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if _, ok := m[name]; !ok {
		m[name] = t
	}
}

// markGoneUnless marks gone at t each pod whose delete call started and
// that listed does not hold.
func (tr *tracker) markGoneUnless(listed map[string]bool, t time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for name := range tr.deleted {
		if _, ok := tr.gone[name]; !ok && !listed[name] {
			tr.gone[name] = t
		}
	}
}

// count is how many pods m holds.
func (tr *tracker) count(m map[string]time.Time) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(m)
}

// latencies are to[name]-from[name] for the pods in both.
func (tr *tracker) latencies(from, to map[string]time.Time) []time.Duration {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []time.Duration
	for name, t0 := range from {
		if t1, ok := to[name]; ok {
			out = append(out, max(t1.Sub(t0), 0))
		}
	}
	return out
}

// watchPods records Running and gone pods of ns until ctx ends, watching
// again from a fresh list when the watch closes.
func (tr *tracker) watchPods(ctx context.Context, client kubernetes.Interface, ns string, ready chan<- struct{}) {
	pods := client.CoreV1().Pods(ns)
	opts := metav1.ListOptions{LabelSelector: podLabel + "=true"}
	once := sync.OnceFunc(func() { close(ready) })
	for ctx.Err() == nil {
		list, err := pods.List(ctx, opts)
		if err != nil {
			sleepCtx(ctx, time.Second)
			continue
		}
		now := time.Now()
		listed := make(map[string]bool, len(list.Items))
		for i := range list.Items {
			listed[list.Items[i].Name] = true
			tr.seen(&list.Items[i], now)
		}
		// A pod deleted while no watch ran (the last one closed) is
		// gone by this list: counted gone now, a little late, rather
		// than never (which held a run for goneTimeout and failed it).
		tr.markGoneUnless(listed, now)
		w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: opts.LabelSelector, ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
		if err != nil {
			sleepCtx(ctx, time.Second)
			continue
		}
		once()
		tr.consume(ctx, w)
	}
}

// consume records the events of one watch until it closes or ctx ends.
func (tr *tracker) consume(ctx context.Context, w watch.Interface) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			p, isPod := ev.Object.(*v1.Pod)
			if !isPod {
				continue
			}
			now := time.Now()
			if ev.Type == watch.Deleted {
				tr.mark(tr.gone, p.Name, now)
				continue
			}
			tr.seen(p, now)
		}
	}
}

// seen records what a listed or watched pod shows at now: bound to a
// node, Running (and so bound: a pod first seen Running was bound no
// later than that).
func (tr *tracker) seen(p *v1.Pod, now time.Time) {
	if p.Spec.NodeName != "" {
		tr.mark(tr.bound, p.Name, now)
	}
	if p.Status.Phase == v1.PodRunning {
		tr.mark(tr.running, p.Name, now)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// forEach calls f for every name, parallel at a time; it returns the
// first error.
func forEach(ctx context.Context, names []string, parallel int, f func(ctx context.Context, name string) error) error {
	work := make(chan string) // closed once every name is handed out
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				if err := f(ctx, n); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, n := range names {
		if ctx.Err() != nil {
			break
		}
		work <- n
	}
	close(work)
	wg.Wait()
	return errors.Join(first, ctx.Err())
}

// createPods creates the pods, recording when each call started.
func (tr *tracker) createPods(ctx context.Context, client kubernetes.Interface, ns string, names []string, parallel int) error {
	return forEach(ctx, names, parallel, func(ctx context.Context, name string) error {
		tr.mark(tr.created, name, time.Now())
		if _, err := client.CoreV1().Pods(ns).Create(ctx, scalePod(name), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s/%s: %w", ns, name, err)
		}
		return nil
	})
}

// deletePods deletes the pods (with their grace period: the agent stops
// the container, then deletes the pod for good), recording when each call
// started.
func (tr *tracker) deletePods(ctx context.Context, client kubernetes.Interface, ns string, names []string, parallel int) error {
	return forEach(ctx, names, parallel, func(ctx context.Context, name string) error {
		tr.mark(tr.deleted, name, time.Now())
		err := client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s/%s: %w", ns, name, err)
		}
		return nil
	})
}

// waitCount polls until m holds want pods, timeout passes or broken
// returns an error; it returns how many it holds, and broken's error.
func (tr *tracker) waitCount(ctx context.Context, m map[string]time.Time, want int, timeout time.Duration, broken func() error) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		n := tr.count(m)
		if n >= want || time.Now().After(deadline) || ctx.Err() != nil {
			return n, nil
		}
		if err := broken(); err != nil {
			return n, err
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
}
