package api

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/internal/kubeclient/kubeclienttest"
)

func pod(name string, mutate func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: k8stypes.UID("uid-" + name), ResourceVersion: "1"}, Spec: v1.PodSpec{NodeName: "n1"}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestSourceSnapshot(t *testing.T) {
	client := fake.NewClientset(
		pod("run", func(p *v1.Pod) {
			p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate}}
		}),
		pod("mirror", func(p *v1.Pod) { p.Annotations = map[string]string{manifest.AnnotationMirror: "h"} }),
		pod("done", func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }),
	)
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := New(Config{Client: kubeclienttest.Wrap(client), NodeName: "n1", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan sources.Update, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, out)
	}()
	var u sources.Update
	select {
	case u = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot")
	}
	// Sorted by UID; the finished pod stays the node's, the mirror pod is
	// not.
	if u.Source != sources.API || u.Incomplete || len(u.Pods) != 2 || u.Pods[0].Name != "done" || u.Pods[1].Name != "run" {
		t.Fatalf("snapshot = %+v, want pods done and run", u)
	}
	if a := u.Pods[1].Annotations; a[manifest.AnnotationConfigSource] != sources.API || a[manifest.AnnotationConfigSeen] == "" {
		t.Errorf("annotations = %v", a)
	}
	// The informer keeps no managedFields, and the pod sent is the
	// informer's own, not a copy.
	if cached, ok := s.PodByUID("uid-run"); !ok {
		t.Error("PodByUID does not find the pod")
	} else if cached.ManagedFields != nil || cached != u.Pods[1] {
		t.Errorf("managedFields kept (%v), or the pod sent (%p) is not the cache's (%p)", cached.ManagedFields, u.Pods[1], cached)
	}
	first := u
	if mp, ok := s.PodByUID("uid-mirror"); !ok {
		t.Error("PodByUID does not find the mirror pod")
	} else if _, annotated := mp.Annotations[manifest.AnnotationConfigSource]; annotated {
		t.Errorf("the mirror pod was annotated: %v", mp.Annotations)
	}
	if got := s.MirrorPods(); len(got) != 1 {
		t.Errorf("MirrorPods = %d pods, want 1", len(got))
	}
	// A pod bound later arrives in the next snapshot.
	if _, err := client.CoreV1().Pods("ns").Create(ctx, pod("later", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case u = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("no second snapshot")
	}
	if len(u.Pods) != 3 {
		t.Fatalf("second snapshot has %d pods, want 3", len(u.Pods))
	}
	// The pods that did not change are the first snapshot's.
	if u.Pods[0] != first.Pods[0] || u.Pods[2] != first.Pods[1] {
		t.Errorf("the second snapshot copied the pods that did not change")
	}
	// A pod changed (a new resourceVersion) is the new object, with the
	// time it was first seen.
	clock.Step(time.Minute)
	changed := pod("run", func(p *v1.Pod) { p.ResourceVersion, p.Labels = "2", map[string]string{"a": "b"} })
	if _, err := client.CoreV1().Pods("ns").Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case u = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("no third snapshot")
	}
	if len(u.Pods) != 3 || u.Pods[2] == first.Pods[1] || u.Pods[2].Labels["a"] != "b" || u.Pods[2].Annotations[manifest.AnnotationConfigSeen] != first.Pods[1].Annotations[manifest.AnnotationConfigSeen] {
		t.Errorf("after an update, the pod sent is %+v; want the new object with the label and the first seen time", u.Pods[2].ObjectMeta)
	}
	// A pod deleted is forgotten: one of the same name created again (a
	// new UID) is seen anew.
	if err := client.CoreV1().Pods("ns").Delete(ctx, "run", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case u = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot after the delete")
	}
	s.mu.Lock()
	_, remembered := s.seen["uid-run"]
	s.mu.Unlock()
	if len(u.Pods) != 2 || remembered {
		t.Errorf("after the delete: %d pods sent, first-seen time kept: %v", len(u.Pods), remembered)
	}
	if first.Pods[1].Labels["a"] != "" {
		t.Errorf("the copy sent first changed: %v", first.Pods[1].Labels)
	}
	cancel()
	<-done
}
