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
	// countError is WithErrorCounter's function, or nil.
	countError func(source string)

	mu sync.Mutex
	// bySource is the last state each source reported; guarded by mu.
	bySource map[string]*sourceState
	// complete holds the sources that have sent a complete Update;
	// guarded by mu.
	complete map[string]bool
	// owners maps the full name (namespace/name) of every admitted pod to
	// the pod holding it; guarded by mu. At most one pod of a name runs.
	owners map[string]owner
}

// owner identifies an admitted pod.
type owner struct {
	source string
	uid    types.UID
	origin string
}

// sourceState is what one source last sent.
type sourceState struct {
	// pods are the admitted pods by UID, as last stored (with the first
	// config.seen kept).
	pods map[types.UID]*v1.Pod
	// errors are the source's own errors, then its refused pods'.
	errors []sources.ManifestError
	// last is the source's last Update, merged again when a pod it had
	// refused may now be admitted.
	last sources.Update
	// refused holds, by UID, the conflict error last logged for each pod
	// of the source that is refused.
	refused map[types.UID]string
}

// New returns a Merger for the given configured sources (sources.File,
// sources.HTTP, sources.API). Updates from sources not in the list are
// merged all the same, but AllSourcesSeen does not wait for them.
func New(configured []string, opts ...Option) *Merger {
	c := slices.Clone(configured)
	slices.Sort(c)
	m := &Merger{
		configured: slices.Compact(c),
		bySource:   map[string]*sourceState{},
		complete:   map[string]bool{},
		owners:     map[string]owner{},
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Option configures a Merger.
type Option func(*Merger)

// WithErrorCounter calls count with the source's name once for every
// distinct refusal a source reports (a manifest error, or a conflict): an
// error reported again in the next Update is not counted again, one that
// changed is. count runs on Run's goroutine and must not block.
func WithErrorCounter(count func(source string)) Option {
	return func(m *Merger) { m.countError = count }
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
// one complete Update (one that is not Incomplete: a source whose URL fails
// at start has not reported its pods yet). Once true it stays true.
func (m *Merger) AllSourcesSeen() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.configured {
		if !m.complete[s] {
			return false
		}
	}
	return true
}

// Errors returns the manifests the sources currently refuse, from every
// source's last Update, and the pods the Merger refuses because a pod of the
// same full name came first (a *ConflictError each, with the full name as
// Origin), sorted by source and origin. The slice is the caller's.
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

// Pods returns the merged set of every source's admitted pods (not those
// refused for a conflict), sorted by source, namespace, name and UID. The
// slice is the caller's; the pods are shared and read-only.
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
// that lead from the old state to the new one: for u.Source in the order
// REMOVE, ADD, UPDATE, DELETE, RECONCILE, leaving out empty ones, then the
// ADDs of pods of other sources that u let in (see mergeSource).
func (m *Merger) merge(logger klog.Logger, u sources.Update) []PodUpdate {
	m.mu.Lock()
	defer m.mu.Unlock()

	if !u.Incomplete {
		m.complete[u.Source] = true
	}
	ops := m.mergeSource(logger, u)
	// A pod u removed frees its name for pods of other sources refused
	// because of it: admit them now, not at their source's next Update.
	for _, src := range m.waiting() {
		if src != u.Source {
			ops = append(ops, m.mergeSource(logger, m.bySource[src].last)...)
		}
	}
	return ops
}

// waiting returns, sorted, the sources with a refused pod whose name no
// admitted pod holds.
func (m *Merger) waiting() []string {
	var srcs []string
	for src, st := range m.bySource {
		for _, p := range st.last.Pods {
			if _, refused := st.refused[p.UID]; !refused {
				continue
			}
			if _, taken := m.owners[fullName(p)]; !taken {
				srcs = append(srcs, src)
				break
			}
		}
	}
	slices.Sort(srcs)
	return srcs
}

// mergeSource replaces the state of u.Source with u and returns the
// operations that lead from the old state to the new one, in the order
// REMOVE, ADD, UPDATE, DELETE, RECONCILE, leaving out empty ones.
//
// A pod is admitted only if no admitted pod has its full name: the first
// one seen keeps running, the later one is refused, reported among the
// source's errors as a *ConflictError and logged once. The pods the source
// had admitted claim their names before its new ones.
func (m *Merger) mergeSource(logger klog.Logger, u sources.Update) []PodUpdate {
	old := m.bySource[u.Source]
	if old == nil {
		old = &sourceState{pods: map[types.UID]*v1.Pod{}}
	}
	for uid, p := range old.pods {
		if name := fullName(p); m.owners[name].source == u.Source && m.owners[name].uid == uid {
			delete(m.owners, name)
		}
	}
	next := &sourceState{
		pods:    make(map[types.UID]*v1.Pod, len(u.Pods)),
		errors:  slices.Clone(u.Errors),
		last:    u,
		refused: map[types.UID]string{},
	}

	pods := make([]*v1.Pod, 0, len(u.Pods))
	uids := map[types.UID]bool{}
	for _, p := range u.Pods {
		if uids[p.UID] {
			logger.Error(nil, "Source sent two pods with one UID, keeping the first", "source", u.Source, "pod", klog.KObj(p), "podUID", p.UID)
			continue
		}
		uids[p.UID] = true
		pods = append(pods, p)
	}
	slices.SortStableFunc(pods, func(a, b *v1.Pod) int {
		_, aOld := old.pods[a.UID]
		_, bOld := old.pods[b.UID]
		switch {
		case aOld == bOld:
			return 0
		case aOld:
			return -1
		}
		return 1
	})

	byOp := map[Op][]*v1.Pod{}
	for _, p := range pods {
		name := fullName(p)
		if o, taken := m.owners[name]; taken {
			origin := u.Origins[p.UID]
			err := &ConflictError{Pod: name, Source: u.Source, Origin: origin, UID: p.UID, KeptSource: o.source, KeptOrigin: o.origin, KeptUID: o.uid}
			if origin == "" {
				origin = name
			}
			next.errors = append(next.errors, sources.ManifestError{Source: u.Source, Origin: origin, Err: err})
			if msg := err.Error(); old.refused[p.UID] != msg {
				logger.Error(err, "Refusing pod", "source", u.Source, "pod", klog.KObj(p), "podUID", p.UID)
			}
			next.refused[p.UID] = err.Error()
			continue
		}
		m.owners[name] = owner{source: u.Source, uid: p.UID, origin: u.Origins[p.UID]}
		if _, wasRefused := old.refused[p.UID]; wasRefused {
			logger.Info("Admitting pod: the pod of the same name it was refused for is gone", "source", u.Source, "pod", klog.KObj(p), "podUID", p.UID)
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
	m.countNewErrors(u.Source, old.errors, next.errors)

	var ops []PodUpdate
	for _, op := range []Op{REMOVE, ADD, UPDATE, DELETE, RECONCILE} {
		if pods := byOp[op]; len(pods) > 0 {
			ops = append(ops, PodUpdate{Op: op, Source: u.Source, Pods: pods})
		}
	}
	return ops
}

// fullName is the name by which at most one pod runs: namespace/name.
func fullName(p *v1.Pod) string {
	return p.Namespace + "/" + p.Name
}

// classify says what the change from prev to next of one pod (same UID)
// means to the node, and false when the node need not act.
func classify(prev, next *v1.Pod) (Op, bool) {
	if prev == next {
		// The same read-only pod sent again (the apiserver source sends
		// the copy of a pod whose resourceVersion did not change): the
		// comparisons below were a third of the agent's CPU in a batch of
		// 50 pods on a node of 60, for each snapshot compared every pod.
		return 0, false
	}
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

// countNewErrors counts the errors in next that were not in old.
func (m *Merger) countNewErrors(source string, old, next []sources.ManifestError) {
	if m.countError == nil {
		return
	}
	seen := make(map[string]bool, len(old))
	for _, e := range old {
		seen[e.Origin+"\x00"+e.Err.Error()] = true
	}
	for _, e := range next {
		if !seen[e.Origin+"\x00"+e.Err.Error()] {
			m.countError(source)
		}
	}
}
