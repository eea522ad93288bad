package objects

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// kind is what the watches of one resource need to know of it.
type kind struct {
	resource schema.GroupResource
	// newObject returns an empty object of the resource's type.
	newObject func() runtime.Object
	// list and watch are the namespace's list and watch calls; opts always
	// carry the field selector metadata.name=<name>.
	list  func(ctx context.Context, namespace string, opts metav1.ListOptions) (runtime.Object, error)
	watch func(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error)
	// immutable says whether an object can no longer change.
	immutable func(runtime.Object) bool
	// client is the clientset list and watch use: the reflector streams
	// its first list in a watch (WatchList) unless the client says it
	// cannot (client-go's fake clientset).
	client any
}

// watches keeps the objects of one resource that the node's pods refer
// to, each fetched and watched on its own: a list and a watch with the
// field selector metadata.name=<name> in its namespace, which the Node
// authorizer grants a node for the objects its pods refer to. It is the
// kubelet's watch-based manager:
//
//   - an object is watched from its first reference (addRef) until its
//     last one is dropped (dropRef), then forgotten at once;
//   - an object nobody read (get) for maxIdle stops being watched; the
//     next get watches it again, and waits for the new watch's list;
//   - an immutable object is not watched any more once read.
//
// Reflectors run only between begin and end (Cache.Run); objects referred
// to before begin are watched from begin on. Safe for concurrent use.
type watches struct {
	kind    kind
	clock   clock.PassiveClock
	maxIdle time.Duration
	// wg counts the reflectors' goroutines; end waits for them.
	wg sync.WaitGroup

	mu sync.Mutex
	// items are the objects referred to, by namespace/name; guarded by mu,
	// as are the fields of each item.
	items map[string]*watched
	// running is set by begin and cleared by end; ended is set by end.
	running, ended bool
}

// watched is one object and its watch.
type watched struct {
	namespace, name string
	// refs counts the pods that refer to the object.
	refs int
	// store and synced are the current (or next) watch's: each watch has
	// its own, so that a stopped reflector still finishing cannot write
	// into a newer one's. An immutable object's stay after its watch
	// stopped. synced is closed once the watch has listed.
	store  cache.Store
	synced chan struct{}
	// stop, when not nil, is the running reflector's stop channel, closed
	// to stop it.
	stop chan struct{}
	// lastUsed is when get last asked for the object.
	lastUsed time.Time
	// immutable is set once an immutable object was read: it is not
	// watched again.
	immutable bool
	// listErr is the last error of the current watch's list or watch
	// call, nil once one succeeded.
	listErr error
}

func newWatches(k kind, clk clock.PassiveClock, maxIdle time.Duration) *watches {
	return &watches{kind: k, clock: clk, maxIdle: maxIdle, items: map[string]*watched{}}
}

func key(namespace, name string) string { return namespace + "/" + name }

// addRef records one more pod's reference to namespace/name and, on the
// first one, starts watching it (once running).
func (w *watches) addRef(namespace, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := key(namespace, name)
	it, ok := w.items[k]
	if !ok {
		it = &watched{
			namespace: namespace,
			name:      name,
			store:     cache.NewStore(cache.MetaNamespaceKeyFunc),
			synced:    make(chan struct{}),
			lastUsed:  w.clock.Now(),
		}
		w.items[k] = it
		w.startLocked(it)
	}
	it.refs++
}

// dropRef records that one pod less refers to namespace/name; with the
// last reference gone it stops watching and forgets the object.
func (w *watches) dropRef(namespace, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := key(namespace, name)
	it, ok := w.items[k]
	if !ok {
		return
	}
	if it.refs--; it.refs > 0 {
		return
	}
	stopLocked(it)
	delete(w.items, k)
}

// startLocked starts it's reflector unless it runs, is immutable or the
// watches are not running.
func (w *watches) startLocked(it *watched) {
	if !w.running || it.stop != nil || it.immutable {
		return
	}
	stop := make(chan struct{})
	it.stop = stop
	it.listErr = nil
	synced := it.synced
	var once sync.Once
	// The field selector is what makes this a watch of one object.
	selector := fields.OneTermEqualSelector("metadata.name", it.name).String()
	namespace := it.namespace
	record := func(err error) {
		w.mu.Lock()
		if it.stop == stop {
			it.listErr = err
		}
		w.mu.Unlock()
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			obj, err := w.kind.list(ctx, namespace, opts)
			record(err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			wi, err := w.kind.watch(ctx, namespace, opts)
			record(err)
			return wi, err
		},
	}
	store := &listedStore{Store: it.store, listed: func() { once.Do(func() { close(synced) }) }}
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, w.kind.client), w.kind.newObject(), store, cache.ReflectorOptions{
		Name:            fmt.Sprintf("%s %s/%s", w.kind.resource, namespace, it.name),
		TypeDescription: w.kind.resource.String(),
	})
	w.wg.Go(func() { r.RunWithContext(wait.ContextForChannel(stop)) })
}

// stopLocked stops it's reflector, if it runs; a mutable object's next
// get then waits for a new watch's list.
func stopLocked(it *watched) {
	if it.stop == nil {
		return
	}
	close(it.stop)
	it.stop = nil
	if !it.immutable {
		it.store, it.synced = cache.NewStore(cache.MetaNamespaceKeyFunc), make(chan struct{})
	}
}

// begin starts watching every object referred to so far, and those
// referred to later.
func (w *watches) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	w.running = true
	for _, it := range w.items {
		w.startLocked(it)
	}
}

// end stops every watch and waits for the reflectors to return; no watch
// starts after it.
func (w *watches) end() {
	w.mu.Lock()
	w.running, w.ended = false, true
	for _, it := range w.items {
		stopLocked(it)
	}
	w.mu.Unlock()
	w.wg.Wait()
}

// stopIdle stops watching the objects no get asked for within maxIdle
// whose watch has listed (stopping a list in progress would waste it);
// it returns how many it stopped.
func (w *watches) stopIdle(logger klog.Logger) int {
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, it := range w.items {
		if it.stop == nil || !closed(it.synced) || now.Sub(it.lastUsed) < w.maxIdle {
			continue
		}
		stopLocked(it)
		n++
		logger.V(4).Info("Stopped watching an object not read for a while", "resource", w.kind.resource, "object", klog.KRef(it.namespace, it.name), "maxIdle", w.maxIdle)
	}
	return n
}

// get returns namespace/name as last seen by its watch, waiting for the
// watch's first list, at most until ctx is done. An object no pod refers
// to is an error; one that does not exist is a NotFound error.
func (w *watches) get(ctx context.Context, namespace, name string) (runtime.Object, error) {
	w.mu.Lock()
	it, ok := w.items[key(namespace, name)]
	if !ok {
		w.mu.Unlock()
		return nil, fmt.Errorf("%s %s/%s: no pod of this node refers to it, so the node may not read it", w.kind.resource, namespace, name)
	}
	it.lastUsed = w.clock.Now()
	w.startLocked(it)
	synced, store := it.synced, it.store
	w.mu.Unlock()

	select {
	case <-synced:
	case <-ctx.Done():
		w.mu.Lock()
		listErr := it.listErr
		w.mu.Unlock()
		if listErr != nil {
			return nil, fmt.Errorf("%s %s/%s: not fetched from the apiserver: %w", w.kind.resource, namespace, name, listErr)
		}
		return nil, fmt.Errorf("%s %s/%s: not fetched from the apiserver: %w", w.kind.resource, namespace, name, ctx.Err())
	}
	obj, exists, err := store.GetByKey(key(namespace, name))
	if err != nil {
		return nil, fmt.Errorf("read %s %s/%s from its watch: %w", w.kind.resource, namespace, name, err)
	}
	if !exists {
		return nil, apierrors.NewNotFound(w.kind.resource, name)
	}
	o, ok := obj.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("watch of %s %s/%s holds a %T", w.kind.resource, namespace, name, obj)
	}
	if w.kind.immutable(o) {
		w.mu.Lock()
		if !it.immutable {
			it.immutable = true
			stopLocked(it)
			klog.FromContext(ctx).V(4).Info("Stopped watching an immutable object", "resource", w.kind.resource, "object", klog.KRef(namespace, name))
		}
		w.mu.Unlock()
	}
	return o, nil
}

// listedStore is a reflector's store that says when a list replaced its
// content.
type listedStore struct {
	cache.Store
	listed func()
}

func (s *listedStore) Replace(list []any, resourceVersion string) error {
	if err := s.Store.Replace(list, resourceVersion); err != nil {
		return err
	}
	s.listed()
	return nil
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
