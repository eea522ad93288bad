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
		pod("run", nil),
		pod("mirror", func(p *v1.Pod) { p.Annotations = map[string]string{manifest.AnnotationMirror: "h"} }),
		pod("done", func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }),
	)
	s, err := New(Config{Client: kubeclienttest.Wrap(client), NodeName: "n1", Clock: clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
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
	if _, ok := s.PodByUID("uid-mirror"); !ok {
		t.Error("PodByUID does not find the mirror pod")
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
		t.Errorf("second snapshot has %d pods, want 3", len(u.Pods))
	}
	cancel()
	<-done
}
