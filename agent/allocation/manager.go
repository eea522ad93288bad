package allocation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/atomicfile"
)

// StateFile is the checkpoint's name in the agent's root dir.
const StateFile = "pod_resources_state.json"

// cleanupPeriod is how often Run forgets pods no longer in use.
const cleanupPeriod = time.Minute

// Config configures a Manager.
type Config struct {
	// Path is the checkpoint file; empty keeps the state in memory only.
	Path string
	// InUse reports whether the node still has the pod (a source, a
	// worker or the runtime holds it): only such pods' allocations count
	// against another pod's resize, and Run forgets the others. Nil
	// counts every pod recorded.
	InUse func(types.UID) bool
	// OnFreed, if set, is called outside the Manager's lock with the pods
	// whose resize is deferred, when an allocation shrank or was
	// released: their resize may fit now. It must not block.
	OnFreed func(uids []types.UID)
	// Clock stamps the conditions and paces Run; the real clock when nil.
	Clock clock.WithTicker
}

// Manager holds the pods' allocated and actuated resources and resize
// conditions. Safe for concurrent use; its setters write the checkpoint
// before they return.
//
// Writes are committed in groups: a setter changes the state under mu and
// numbers the change (gen), then, outside mu, waits for a write that
// covers it (save). One write runs at a time (saveMu) and takes the state
// as it is when it starts, so the setters that waited behind it find
// their change written by the next one and return without a write of
// their own: a batch of 110 new pods makes a few writes, not 110 fsyncs
// in a row under the lock every worker and reader takes.
type Manager struct {
	cfg Config

	// saveMu serializes the checkpoint's writes; taken before mu.
	saveMu sync.Mutex

	mu sync.Mutex
	// pods is the checkpointed state by pod UID. Guarded by mu.
	pods map[types.UID]*podState
	// conditions are the pods' resize conditions. Guarded by mu.
	conditions map[types.UID]*resizeConditions
	// gen numbers the changes of pods; saved is the last one a write
	// covered. Guarded by mu.
	gen, saved uint64
}

// podState is one pod's entry in the checkpoint.
type podState struct {
	// Allocated holds each container's granted resources, by name.
	Allocated map[string]v1.ResourceRequirements `json:"allocated,omitempty"`
	// Requests are the pod's cpu and memory requests as allocated.
	Requests v1.ResourceList `json:"requests,omitempty"`
	// Actuated holds each container's applied resources, by name.
	Actuated map[string]v1.ResourceRequirements `json:"actuated,omitempty"`
}

// checkpoint is the file's content.
type checkpoint struct {
	Version int                     `json:"version"`
	Pods    map[types.UID]*podState `json:"pods"`
}

const checkpointVersion = 1

// New returns a Manager with the state of cfg.Path, if it holds one.
func New(ctx context.Context, cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	m := &Manager{cfg: cfg, pods: map[types.UID]*podState{}, conditions: map[types.UID]*resizeConditions{}}
	if cfg.Path == "" {
		return m
	}
	logger := klog.FromContext(ctx)
	pods, err := load(cfg.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		bad := cfg.Path + ".bad"
		renameErr := os.Rename(cfg.Path, bad)
		logger.Error(err, "Cannot read the pods' resource state; starting from the pods' specs", "path", cfg.Path, "setAsideAs", bad, "renameErr", renameErr)
	default:
		m.pods = pods
		logger.V(2).Info("Read the pods' resource state", "path", cfg.Path, "pods", len(pods))
	}
	return m
}

func load(path string) (map[types.UID]*podState, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the agent's own state file in its root dir
	if err != nil {
		return nil, err
	}
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cp.Version != checkpointVersion {
		return nil, fmt.Errorf("%s: version %d, want %d", path, cp.Version, checkpointVersion)
	}
	if cp.Pods == nil {
		cp.Pods = map[types.UID]*podState{}
	}
	for uid, p := range cp.Pods {
		if p == nil {
			delete(cp.Pods, uid)
		}
	}
	return cp.Pods, nil
}

// changedLocked numbers a change of the state, to be passed to save once
// mu is released; the caller holds mu.
func (m *Manager) changedLocked() uint64 {
	m.gen++
	return m.gen
}

// save returns once the checkpoint holds change gen (changedLocked) or a
// later state: at once when a write since covered it, else after a write
// of the state as it is now. The caller must not hold mu.
func (m *Manager) save(gen uint64) error {
	if m.cfg.Path == "" {
		return nil
	}
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	m.mu.Lock()
	if m.saved >= gen {
		m.mu.Unlock()
		return nil
	}
	cur := m.gen
	b, err := json.Marshal(checkpoint{Version: checkpointVersion, Pods: m.pods})
	m.mu.Unlock()
	if err != nil {
		return fmt.Errorf("encode the pods' resource state: %w", err)
	}
	// The root dir of a new node may not exist yet.
	if err := os.MkdirAll(filepath.Dir(m.cfg.Path), 0o750); err != nil {
		return fmt.Errorf("write the pods' resource state: %w", err)
	}
	if err := atomicfile.WriteFile(m.cfg.Path, b, 0o600); err != nil {
		return err
	}
	m.mu.Lock()
	m.saved = max(m.saved, cur)
	m.mu.Unlock()
	return nil
}

// Allocated returns the resources granted to the containers of pod uid,
// by container name (the caller must not modify them), and whether the
// pod has an allocation.
func (m *Manager) Allocated(uid types.UID) (map[string]v1.ResourceRequirements, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pods[uid]
	if p == nil || p.Allocated == nil {
		return nil, false
	}
	return p.Allocated, true
}

// SetAllocated records the resources granted to the containers of pod
// uid and the pod's cpu and memory requests as granted, and returns once
// the checkpoint holds them. The state is kept even when the checkpoint
// cannot be written; the error says so.
func (m *Manager) SetAllocated(uid types.UID, containers map[string]v1.ResourceRequirements, requests v1.ResourceList) error {
	return m.Grant(uid, containers, requests)()
}

// Grant is SetAllocated in two steps: the grant is recorded at once (the
// calls that follow see it), and commit returns once the checkpoint holds
// it, with the write's error. A caller that decides grants one at a time
// under a lock of its own commits after releasing it, so that the
// decisions do not wait on the disk in turn. The commit of a grant that
// changes the state also covers every grant recorded before it.
func (m *Manager) Grant(uid types.UID, containers map[string]v1.ResourceRequirements, requests v1.ResourceList) (commit func() error) {
	m.mu.Lock()
	p := m.pods[uid]
	if p == nil {
		p = &podState{}
		m.pods[uid] = p
	}
	if apiequality.Semantic.DeepEqual(p.Allocated, containers) && apiequality.Semantic.DeepEqual(p.Requests, requests) {
		m.mu.Unlock()
		return func() error { return nil }
	}
	shrank := p.Requests != nil && (less(requests, p.Requests, v1.ResourceCPU) || less(requests, p.Requests, v1.ResourceMemory))
	p.Allocated = cloneResources(containers)
	p.Requests = requests.DeepCopy()
	gen := m.changedLocked()
	var deferred []types.UID
	if shrank {
		deferred = m.deferredLocked(uid)
	}
	m.mu.Unlock()
	m.freed(deferred)
	return func() error { return m.save(gen) }
}

// Requested is the sum of the cpu and memory requests allocated to the
// pods in use other than except.
func (m *Manager) Requested(except types.UID) v1.ResourceList {
	m.mu.Lock()
	defer m.mu.Unlock()
	cpu, mem := resource.Quantity{}, resource.Quantity{}
	for uid, p := range m.pods {
		if uid == except || p.Requests == nil || !m.inUse(uid) {
			continue
		}
		cpu.Add(p.Requests[v1.ResourceCPU])
		mem.Add(p.Requests[v1.ResourceMemory])
	}
	return v1.ResourceList{v1.ResourceCPU: cpu, v1.ResourceMemory: mem}
}

// Actuated returns the resources last applied to container name of pod
// uid, and whether any were recorded.
func (m *Manager) Actuated(uid types.UID, name string) (v1.ResourceRequirements, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pods[uid]
	if p == nil {
		return v1.ResourceRequirements{}, false
	}
	r, ok := p.Actuated[name]
	return r, ok
}

// SetActuated records the resources applied to container name of pod uid
// (when it was created, or updated in place). Writing the same resources
// again writes nothing.
func (m *Manager) SetActuated(uid types.UID, name string, r v1.ResourceRequirements) error {
	m.mu.Lock()
	p := m.pods[uid]
	if p == nil {
		p = &podState{}
		m.pods[uid] = p
	}
	if old, ok := p.Actuated[name]; ok && apiequality.Semantic.DeepEqual(old, r) {
		m.mu.Unlock()
		return nil
	}
	if p.Actuated == nil {
		p.Actuated = map[string]v1.ResourceRequirements{}
	}
	p.Actuated[name] = *r.DeepCopy()
	gen := m.changedLocked()
	m.mu.Unlock()
	return m.save(gen)
}

// Release forgets pod uid: its allocation no longer counts against other
// pods' resizes (it has terminated or finished), and the pods whose resize
// was deferred are told (Config.OnFreed).
func (m *Manager) Release(uid types.UID) error {
	m.mu.Lock()
	_, had := m.pods[uid]
	delete(m.pods, uid)
	delete(m.conditions, uid)
	var gen uint64
	var deferred []types.UID
	if had {
		gen = m.changedLocked()
		deferred = m.deferredLocked(uid)
	}
	m.mu.Unlock()
	var err error
	if had {
		err = m.save(gen)
	}
	m.freed(deferred)
	return err
}

// Run forgets, every minute until ctx is done, the pods Config.InUse no
// longer reports.
func (m *Manager) Run(ctx context.Context) {
	if m.cfg.InUse == nil {
		return
	}
	ticker := m.cfg.Clock.NewTicker(cleanupPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		if err := m.cleanup(); err != nil {
			klog.FromContext(ctx).Error(err, "Writing the pods' resource state failed; the next change tries again")
		}
	}
}

// cleanup forgets the pods not in use.
func (m *Manager) cleanup() error {
	m.mu.Lock()
	gone := false
	for uid := range m.pods {
		if !m.cfg.InUse(uid) {
			delete(m.pods, uid)
			delete(m.conditions, uid)
			gone = true
		}
	}
	if !gone {
		m.mu.Unlock()
		return nil
	}
	gen := m.changedLocked()
	m.mu.Unlock()
	return m.save(gen)
}

func (m *Manager) inUse(uid types.UID) bool {
	return m.cfg.InUse == nil || m.cfg.InUse(uid)
}

// freed tells Config.OnFreed of the deferred pods, if any.
func (m *Manager) freed(deferred []types.UID) {
	if len(deferred) > 0 && m.cfg.OnFreed != nil {
		m.cfg.OnFreed(deferred)
	}
}

// less reports whether a's quantity of name is smaller than b's.
func less(a, b v1.ResourceList, name v1.ResourceName) bool {
	qa, qb := a[name], b[name]
	return qa.Cmp(qb) < 0
}

func cloneResources(in map[string]v1.ResourceRequirements) map[string]v1.ResourceRequirements {
	out := make(map[string]v1.ResourceRequirements, len(in))
	for name, r := range maps.All(in) {
		out[name] = *r.DeepCopy()
	}
	return out
}
