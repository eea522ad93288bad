package podconfig

import (
	"cmp"
	"context"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/sources"
)

// Merger turns consecutive source Updates into PodUpdates and keeps the
// merged state. Create it with New; Run must be called at most once. Pods,
// Errors and AllSourcesSeen are safe to call from any goroutine, at any time.
type Merger struct {
	// configured holds the sources AllSourcesSeen waits for; fixed by New.
	configured []string

	mu sync.Mutex
	// bySource is the last state each source reported; guarded by mu.
	bySource map[string]*sourceState
}

// sourceState is what one source last sent.
type sourceState struct {
	// pods by UID, as last stored (with the first config.seen kept).
	pods   map[types.UID]*v1.Pod
	errors []sources.ManifestError
}

// New returns a Merger for the given configured sources (sources.File,
// sources.HTTP, sources.API). Updates from sources not in the list are
// merged all the same, but AllSourcesSeen does not wait for them.
func New(configured []string) *Merger {
	c := slices.Clone(configured)
	slices.Sort(c)
	return &Merger{
		configured: slices.Compact(c),
		bySource:   map[string]*sourceState{},
	}
}

// Run merges every Update from in and sends the resulting PodUpdates to out,
// blocking on out (the syncLoop is expected to keep up; a blocked send
// delays the next Update, never drops an operation). It returns when ctx is
// done or in is closed. Run owns neither channel and closes neither.
func (m *Merger) Run(ctx context.Context, in <-chan sources.Update, out chan<- PodUpdate) {
	logger := klog.FromContext(ctx)
	for {
		var u sources.Update
		var ok bool
		select {
		case <-ctx.Done():
			return
		case u, ok = <-in:
			if !ok {
				return
			}
		}
		for _, op := range m.merge(logger, u) {
			logger.V(2).Info("Pod config changed", "source", op.Source, "op", op.Op, "pods", klog.KObjSlice(op.Pods))
			select {
			case out <- op:
			case <-ctx.Done():
				return
			}
		}
	}
}

// AllSourcesSeen reports whether every configured source has sent at least
// one Update. Once true it stays true.
func (m *Merger) AllSourcesSeen() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.configured {
		if m.bySource[s] == nil {
			return false
		}
	}
	return true
}

// Errors returns the manifests the sources currently refuse, from every
// source's last Update, sorted by source and origin. The slice is the
// caller's.
func (m *Merger) Errors() []sources.ManifestError {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []sources.ManifestError
	for _, st := range m.bySource {
		errs = append(errs, st.errors...)
	}
	slices.SortStableFunc(errs, func(a, b sources.ManifestError) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Origin, b.Origin))
	})
	return errs
}

// Pods returns the merged set of every source's pods, sorted by source,
// namespace, name and UID. The slice is the caller's; the pods are shared
// and read-only.
func (m *Merger) Pods() []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	type entry struct {
		source string
		pod    *v1.Pod
	}
	var all []entry
	for s, st := range m.bySource {
		for _, p := range st.pods {
			all = append(all, entry{s, p})
		}
	}
	slices.SortFunc(all, func(a, b entry) int {
		return cmp.Or(
			cmp.Compare(a.source, b.source),
			cmp.Compare(a.pod.Namespace, b.pod.Namespace),
			cmp.Compare(a.pod.Name, b.pod.Name),
			cmp.Compare(a.pod.UID, b.pod.UID),
		)
	})
	pods := make([]*v1.Pod, len(all))
	for i, e := range all {
		pods[i] = e.pod
	}
	return pods
}

// merge replaces the state of u.Source with u and returns the operations
// that lead from the old state to the new one, in the order REMOVE, ADD,
// UPDATE, DELETE, RECONCILE, leaving out empty ones.
func (m *Merger) merge(logger klog.Logger, u sources.Update) []PodUpdate {
	m.mu.Lock()
	defer m.mu.Unlock()

	old := m.bySource[u.Source]
	if old == nil {
		old = &sourceState{pods: map[types.UID]*v1.Pod{}}
	}
	next := &sourceState{
		pods:   make(map[types.UID]*v1.Pod, len(u.Pods)),
		errors: slices.Clone(u.Errors),
	}
	byOp := map[Op][]*v1.Pod{}
	for _, p := range u.Pods {
		if _, dup := next.pods[p.UID]; dup {
			logger.Error(nil, "Source sent two pods with one UID, keeping the first", "source", u.Source, "pod", klog.KObj(p), "podUID", p.UID)
			continue
		}
		prev, ok := old.pods[p.UID]
		if !ok {
			next.pods[p.UID] = p
			byOp[ADD] = append(byOp[ADD], p)
			continue
		}
		p = keepFirstSeen(prev, p)
		next.pods[p.UID] = p
		if op, ok := classify(prev, p); ok {
			byOp[op] = append(byOp[op], p)
		}
	}
	for uid, p := range old.pods {
		if _, ok := next.pods[uid]; !ok {
			byOp[REMOVE] = append(byOp[REMOVE], p)
		}
	}
	slices.SortFunc(byOp[REMOVE], func(a, b *v1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	})
	m.bySource[u.Source] = next

	var ops []PodUpdate
	for _, op := range []Op{REMOVE, ADD, UPDATE, DELETE, RECONCILE} {
		if pods := byOp[op]; len(pods) > 0 {
			ops = append(ops, PodUpdate{Op: op, Source: u.Source, Pods: pods})
		}
	}
	return ops
}

// classify says what the change from prev to next of one pod (same UID)
// means to the node, and false when the node need not act.
func classify(prev, next *v1.Pod) (Op, bool) {
	if differSemantically(prev, next) {
		if next.DeletionTimestamp != nil && prev.DeletionTimestamp == nil {
			return DELETE, true
		}
		return UPDATE, true
	}
	if !equality.Semantic.DeepEqual(prev.Status, next.Status) {
		return RECONCILE, true
	}
	return 0, false
}

// differSemantically reports whether the node must act on the change from a
// to b: spec, labels, annotations other than config.seen, generation, or the
// deletion fields.
func differSemantically(a, b *v1.Pod) bool {
	return !equality.Semantic.DeepEqual(a.Spec, b.Spec) ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!annotationsEqual(a.Annotations, b.Annotations) ||
		a.Generation != b.Generation ||
		!equality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds)
}

// annotationsEqual compares annotations, ignoring config.seen: the time a
// source read a manifest is not a change of the pod.
func annotationsEqual(a, b map[string]string) bool {
	count := func(m map[string]string) int {
		n := len(m)
		if _, ok := m[manifest.AnnotationConfigSeen]; ok {
			n--
		}
		return n
	}
	if count(a) != count(b) {
		return false
	}
	for k, v := range a {
		if k == manifest.AnnotationConfigSeen {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// keepFirstSeen returns next with the config.seen annotation of prev, as
// the kubelet keeps the time it first saw a pod across updates. next itself
// is not modified: it belongs to the source.
func keepFirstSeen(prev, next *v1.Pod) *v1.Pod {
	first, ok := prev.Annotations[manifest.AnnotationConfigSeen]
	if !ok || next.Annotations[manifest.AnnotationConfigSeen] == first {
		return next
	}
	next = next.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[manifest.AnnotationConfigSeen] = first
	return next
}
