package services

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/minikubelet/minikubelet/internal/kubeclient/kubeclienttest"
	"github.com/minikubelet/minikubelet/internal/polltest"
)

func TestLister(t *testing.T) {
	client := fake.NewClientset(
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1"}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.1.1"}},
	)
	l := New(kubeclienttest.Wrap(client))
	if got, synced := l.Services(); len(got) != 0 || synced {
		t.Fatalf("before Run: %d services, synced %v; want none, not synced", len(got), synced)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	polltest.Until(t, 10*time.Second, "the Services listed", func() (bool, string) {
		got, synced := l.Services()
		return synced && len(got) == 2, fmt.Sprintf("%d services, synced %v", len(got), synced)
	})
	if _, err := client.CoreV1().Services("team").Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	polltest.True(t, 10*time.Second, "a Service created after the list", func() bool {
		got, _ := l.Services()
		return len(got) == 3
	})
}
