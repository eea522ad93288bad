package services

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minikubelet/minikubelet/internal/kubeclient"
)

// Lister holds every namespace's Services. Create it with New and start
// it with Run; Services is safe for concurrent use, before Run (it then
// answers nothing, not synced) and after it ended.
type Lister struct {
	informer cache.SharedIndexInformer
	lister   corelisters.ServiceLister
}

// New returns a Lister of client's Services; it contacts no apiserver
// until Run.
func New(client kubeclient.Interface) *Lister {
	informer := kubeclient.Informer(client, client.Services(""), &v1.Service{}, nil, 0, nil)
	return &Lister{informer: informer, lister: corelisters.NewServiceLister(informer.GetIndexer())}
}

// Run lists and watches the Services until ctx is done.
func (l *Lister) Run(ctx context.Context) {
	l.informer.RunWithContext(ctx)
}

// Services returns the Services known (shared with the cache: not to be
// modified), and whether they have been listed from the apiserver once.
func (l *Lister) Services() ([]*v1.Service, bool) {
	all, err := l.lister.List(labels.Everything())
	if err != nil {
		// The cache's List does not fail for Everything.
		return nil, false
	}
	return all, l.informer.HasSynced()
}
