package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/internal/kubeclient"
)

// uidIndex is the informer index of pods by UID.
const uidIndex = "uid"

// Config configures a Source.
type Config struct {
	// Client talks to the apiserver. Required.
	Client kubeclient.Interface
	// NodeName selects the pods: spec.nodeName=NodeName. Required.
	NodeName string
	// Clock stamps kubernetes.io/config.seen. Nil means the real clock.
	Clock clock.PassiveClock
	// ResyncPeriod is the informer's resync; 0 means none.
	ResyncPeriod time.Duration
}

// Source is the apiserver pod source. Create it with New; Run must be
// called once. PodByUID, MirrorPod, HasSynced and the lookups are safe for
// concurrent use at any time.
type Source struct {
	cfg      Config
	informer cache.SharedIndexInformer
	// changed wakes Run when the informer's store changed; capacity 1 so
	// that a burst of events collapses into one snapshot. Written by the
	// informer's handlers without blocking, read by Run, never closed.
	changed chan struct{}

	mu sync.Mutex
	// seen is when each pod in the informer's cache was first seen (its
	// config.seen), by UID: set by the transform, removed when the pod
	// leaves the cache. Guarded by mu.
	seen map[types.UID]string
}

// New returns a Source whose informer is set up but not started.
func New(cfg Config) (*Source, error) {
	if cfg.Client == nil || cfg.NodeName == "" {
		return nil, fmt.Errorf("apiserver pod source: a client and a node name are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	informer := kubeclient.Informer(cfg.Client, cfg.Client.Pods(""), &v1.Pod{},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
		}, cfg.ResyncPeriod, cache.Indexers{uidIndex: func(obj any) ([]string, error) {
			if p, ok := obj.(*v1.Pod); ok {
				return []string{string(p.UID)}, nil
			}
			return nil, nil
		}})
	s := &Source{
		cfg:      cfg,
		informer: informer,
		changed:  make(chan struct{}, 1),
		seen:     map[types.UID]string{},
	}
	if err := informer.SetTransform(s.annotate); err != nil {
		return nil, fmt.Errorf("apiserver pod source: set transform: %w", err)
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.wake() },
		UpdateFunc: func(_, _ any) { s.wake() },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if p, ok := obj.(*v1.Pod); ok {
				s.mu.Lock()
				delete(s.seen, p.UID)
				s.mu.Unlock()
			}
			s.wake()
		},
	}); err != nil {
		return nil, fmt.Errorf("apiserver pod source: add event handler: %w", err)
	}
	return s, nil
}

// annotate is the informer's transform, applied to each pod the informer
// decodes before it is stored: managedFields are dropped
// (kubeclient.DropManagedFields) and a pod the node runs (not a mirror
// pod) gets the annotations every source sets, config.source "api" and
// config.seen, the time it was first seen, kept across its updates. The
// cache's pods are then the pods sent, read-only to their receivers (see
// sources.Update), so each pod is held once: a copy annotated at each
// snapshot was a second copy of every pod, and the batch's snapshots
// copied some n² of them.
func (s *Source) annotate(obj any) (any, error) {
	obj, err := kubeclient.DropManagedFields(obj)
	p, ok := obj.(*v1.Pod)
	if err != nil || !ok || isMirror(p) {
		return obj, err
	}
	s.mu.Lock()
	seen, ok := s.seen[p.UID]
	if !ok {
		seen = s.cfg.Clock.Now().UTC().Format(time.RFC3339Nano)
		s.seen[p.UID] = seen
	}
	s.mu.Unlock()
	if p.Annotations == nil {
		p.Annotations = make(map[string]string, 2)
	}
	p.Annotations[manifest.AnnotationConfigSource] = sources.API
	p.Annotations[manifest.AnnotationConfigSeen] = seen
	return p, nil
}

func (s *Source) wake() {
	select {
	case s.changed <- struct{}{}:
	default: // a snapshot is already due; it will see this change
	}
}

// Run starts the informer and sends snapshots to out until ctx is done.
// The first one is sent once the informer has synced; until then the merge
// deletes nothing it does not know of. A send never blocks Run for long: a
// snapshot waiting to be sent is replaced by a newer one.
func (s *Source) Run(ctx context.Context, out chan<- sources.Update) {
	logger := klog.FromContext(ctx).WithName("apisource")
	var informerDone sync.WaitGroup
	informerDone.Go(func() { s.informer.RunWithContext(ctx) })
	defer informerDone.Wait()
	if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
		return
	}
	logger.Info("Apiserver pod source synced", "node", s.cfg.NodeName)
	var box sources.Outbox
	s.wake()
	for {
		var send chan<- sources.Update
		pending, ok := box.Pending()
		if ok {
			send = out
		}
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
			u, key := s.snapshot()
			box.Offer(u, key)
		case send <- pending:
			logger.V(2).Info("Sent apiserver pods", "pods", len(pending.Pods))
			box.Sent()
		}
	}
}

// HasSynced reports whether the informer has listed the node's pods once.
func (s *Source) HasSynced() bool { return s.informer.HasSynced() }

// snapshot returns the pods the node must run, the informer's own
// (annotated by annotate), and a key of their content.
func (s *Source) snapshot() (sources.Update, string) {
	objs := s.informer.GetStore().List()
	pods := make([]*v1.Pod, 0, len(objs))
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		p, ok := o.(*v1.Pod)
		if !ok || isMirror(p) {
			continue
		}
		pods = append(pods, p)
		keys = append(keys, string(p.UID)+"@"+p.ResourceVersion)
	}
	slices.SortFunc(pods, func(a, b *v1.Pod) int { return strings.Compare(string(a.UID), string(b.UID)) })
	slices.Sort(keys)
	return sources.Update{Source: sources.API, Pods: pods}, strings.Join(keys, ",")
}

// isMirror reports whether p is a mirror pod, which stands for a static
// pod and is not run. Pods in a terminal phase are the node's pods: as the
// kubelet keeps them, their last containers and logs stay (kubectl logs
// reads them) until the pod is deleted; the pod workers never start them
// again.
func isMirror(p *v1.Pod) bool {
	_, mirror := p.Annotations[manifest.AnnotationMirror]
	return mirror
}

// PodByUID returns the API's pod of that UID from the informer's cache, a
// mirror pod included. The pod is shared: the caller must not modify it.
func (s *Source) PodByUID(uid types.UID) (*v1.Pod, bool) {
	objs, err := s.informer.GetIndexer().ByIndex(uidIndex, string(uid))
	if err != nil || len(objs) == 0 {
		return nil, false
	}
	p, ok := objs[0].(*v1.Pod)
	return p, ok
}

// PodByName returns the API's pod namespace/name bound to this node, if
// the informer's cache holds one. The pod is shared: read only.
func (s *Source) PodByName(namespace, name string) (*v1.Pod, bool) {
	obj, ok, err := s.informer.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	p, ok := obj.(*v1.Pod)
	return p, ok
}

// MirrorPods returns the mirror pods bound to this node. Shared: read only.
func (s *Source) MirrorPods() []*v1.Pod {
	var out []*v1.Pod
	for _, o := range s.informer.GetStore().List() {
		if p, ok := o.(*v1.Pod); ok {
			if _, mirror := p.Annotations[manifest.AnnotationMirror]; mirror {
				out = append(out, p)
			}
		}
	}
	return out
}

// Pods returns every pod bound to this node, mirror pods included.
// Shared: read only.
func (s *Source) Pods() []*v1.Pod {
	var out []*v1.Pod
	for _, o := range s.informer.GetStore().List() {
		if p, ok := o.(*v1.Pod); ok {
			out = append(out, p)
		}
	}
	return out
}

// AddChangeHandler calls f (which must not block) whenever a pod bound to
// this node is added, changed or deleted. Call it before Run.
func (s *Source) AddChangeHandler(f func()) error {
	_, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { f() },
		UpdateFunc: func(_, _ any) { f() },
		DeleteFunc: func(any) { f() },
	})
	if err != nil {
		return fmt.Errorf("apiserver pod source: add change handler: %w", err)
	}
	return nil
}
