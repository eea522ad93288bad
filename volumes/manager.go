package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// objectSource serves the API objects that configMap, secret and projected
// volumes project. Node mode implements it over the apiserver; in
// standalone mode there is none.
//
// Its methods are called at every sync of a pod that uses such a volume,
// from several pod workers at once: an implementation must be safe for
// concurrent use and should answer from a cache (a watch or an informer)
// rather than ask the apiserver each time. An object that does not exist
// must yield an error for which k8s.io/apimachinery/pkg/api/errors.IsNotFound
// is true (what client-go returns), so that an optional source may be
// skipped.
type objectSource interface {
	// GetConfigMap returns the configMap namespace/name.
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	// GetSecret returns the secret namespace/name.
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	// GetServiceAccountToken returns a token of the service account
	// namespace/name bound as req asks (audiences, expiry, the pod), in
	// the returned request's status. The implementation keeps tokens and
	// renews them as the kubelet's token manager does (once 80% of their
	// life or 24h has passed); the volume is rewritten when the token
	// returned changes.
	GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// Config configures a Manager.
type Config struct {
	// RootDir is the agent's --root-dir: a pod's volumes live under
	// <RootDir>/pods/<uid>/volumes. Required.
	RootDir string
	// Objects serves configMap, secret and serviceAccountToken content.
	// Nil in standalone mode: such volumes then fail with an error that
	// says they need an apiserver.
	Objects objectSource
	// NodeAllocatable is the node's allocatable resources: a downwardAPI
	// resourceFieldRef reports it for a limit the container does not set,
	// and it bounds memory-backed volumes. May be nil.
	NodeAllocatable v1.ResourceList
	// Clock names the atomic writer's timestamped directories. Nil means
	// the real clock.
	Clock clock.Clock
	// ImageVolumes is what the container runtime does with image volumes;
	// the zero value refuses them.
	ImageVolumes ImageVolumeSupport
}

// Manager sets up the volumes of pods before their containers start, gives
// their containers CRI mounts, and tears the volumes down after the pods'
// last containers are gone. Its methods are safe for concurrent use; calls
// for one pod (SetUpPod, PodVolumes.Mounts, TearDownPod) must come from
// that pod's worker, one at a time. CleanupOrphans may run at any time: it
// never touches a pod set up since it was last torn down.
type Manager struct {
	cfg     Config
	plugins plugins
	// locks serialise the work on one pod's directory between its worker
	// and CleanupOrphans.
	locks podLocks

	mu sync.Mutex
	// active holds the pods set up and not torn down since. Guarded by mu.
	active map[types.UID]bool
}

// New returns a Manager. It does no I/O; a relative RootDir is made
// absolute against the working directory (the runtime needs absolute
// host paths).
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if abs, err := filepath.Abs(cfg.RootDir); err == nil {
		cfg.RootDir = abs
	}
	m := &Manager{cfg: cfg, active: map[types.UID]bool{}}
	m.plugins = newPlugins(&m.cfg)
	return m
}

// PodDir is <root-dir>/pods/<uid>, where a pod's volumes and other files
// live.
func (m *Manager) PodDir(uid types.UID) string {
	return filepath.Join(m.cfg.RootDir, "pods", string(uid))
}

// SetUpPod makes every volume of pod ready under its pod directory and
// returns what its containers' mounts are made from. It is idempotent and
// meant to be called at every sync of the pod: a volume already set up
// costs a few stat calls, except that downwardAPI, configMap, secret and
// projected volumes are computed again and rewritten (atomically, see
// atomicWriter) when their content changed, so label and annotation edits
// reach running containers. It sets up every volume it can and reports
// all that failed in one error, each part naming its volume, for example
// `volume "data": hostPath type Directory: /x does not exist`. On error
// no PodVolumes is returned: no container of the pod may start.
func (m *Manager) SetUpPod(ctx context.Context, pod *v1.Pod) (*PodVolumes, error) {
	unlock := m.locks.lock(pod.UID)
	defer unlock()
	m.mu.Lock()
	m.active[pod.UID] = true
	m.mu.Unlock()

	logger := klog.FromContext(ctx)
	podDir := m.PodDir(pod.UID)
	pv := &PodVolumes{m: m, pod: pod, podDir: podDir, volumes: make(map[string]volume, len(pod.Spec.Volumes))}
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		v, err := m.setUpVolume(ctx, pod, podDir, vol)
		if err != nil {
			errs = append(errs, fmt.Errorf("volume %q: %w", vol.Name, err))
			continue
		}
		pv.volumes[vol.Name] = v
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	logger.V(5).Info("Volumes set up", "volumes", len(pv.volumes))
	return pv, nil
}

func (m *Manager) setUpVolume(ctx context.Context, pod *v1.Pod, podDir string, vol *v1.Volume) (volume, error) {
	p, err := m.plugins.forVolume(&vol.VolumeSource)
	if err != nil {
		return volume{}, err
	}
	dir := ""
	if name := p.dirName(); name != "" {
		dir = filepath.Join(podDir, "volumes", name, vol.Name)
	}
	return p.setUp(ctx, setUpRequest{pod: pod, vol: vol, dir: dir})
}

// TearDownPod removes everything the agent keeps for the pod on disk, once
// its last container and sandbox are gone: it unmounts every mount under
// <root-dir>/pods/<uid> (memory-backed volumes, subPath bind mounts), then
// removes that directory. It never deletes through a mount: it fails,
// leaving the directory, if a mount cannot be removed. hostPath volumes
// are not under the pod directory and are never touched. It is
// idempotent: a pod with no directory is torn down already.
func (m *Manager) TearDownPod(ctx context.Context, uid types.UID) error {
	unlock := m.locks.lock(uid)
	defer unlock()
	if err := tearDownDir(ctx, m.PodDir(uid)); err != nil {
		return fmt.Errorf("tear down volumes of pod %s: %w", uid, err)
	}
	m.mu.Lock()
	delete(m.active, uid)
	m.mu.Unlock()
	return nil
}

// CleanupOrphans tears down (as TearDownPod) every pod directory under
// <root-dir>/pods whose UID keep does not keep, and that was not set up
// since it was last torn down. keep must keep every pod the agent knows
// and every pod the runtime still holds a sandbox or container of: those
// may still use their volumes. It is meant for housekeeping, and removes
// what a crash or an earlier agent left behind. It returns the errors of
// the pods it could not clean, and tries the others; ctx ends it early.
func (m *Manager) CleanupOrphans(ctx context.Context, keep func(types.UID) bool) error {
	podsDir := filepath.Join(m.cfg.RootDir, "pods")
	entries, err := os.ReadDir(podsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list pod directories: %w", err)
	}
	logger := klog.FromContext(ctx)
	var errs []error
	for _, e := range entries {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		uid := types.UID(e.Name())
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || keep(uid) {
			continue
		}
		if err := m.cleanupOrphan(ctx, uid); err != nil {
			errs = append(errs, err)
			continue
		}
	}
	if len(errs) > 0 {
		return joinErrors(errs)
	}
	logger.V(5).Info("Orphaned pod directories cleaned up")
	return nil
}

func (m *Manager) cleanupOrphan(ctx context.Context, uid types.UID) error {
	unlock := m.locks.lock(uid)
	defer unlock()
	m.mu.Lock()
	active := m.active[uid]
	m.mu.Unlock()
	if active {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Removing the directory of an orphaned pod", "podUID", uid)
	if err := tearDownDir(ctx, m.PodDir(uid)); err != nil {
		return fmt.Errorf("clean up orphaned pod %s: %w", uid, err)
	}
	return nil
}

// podLocks is a lock per pod UID, made on demand and dropped when unused.
type podLocks struct {
	mu sync.Mutex
	// m holds the locks in use. Guarded by mu.
	m map[types.UID]*podLock
}

type podLock struct {
	sync.Mutex
	// refs counts holders and waiters. Guarded by podLocks.mu.
	refs int
}

// lock locks uid and returns the unlock function.
func (l *podLocks) lock(uid types.UID) func() {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[types.UID]*podLock{}
	}
	pl := l.m[uid]
	if pl == nil {
		pl = &podLock{}
		l.m[uid] = pl
	}
	pl.refs++
	l.mu.Unlock()
	pl.Lock()
	return func() {
		pl.Unlock()
		l.mu.Lock()
		pl.refs--
		if pl.refs == 0 {
			delete(l.m, uid)
		}
		l.mu.Unlock()
	}
}

// multiError joins errors with "; " on one line, so that it reads well as
// a container's waiting message, and unwraps to each of them.
type multiError []error

func (e multiError) Error() string {
	parts := make([]string, len(e))
	for i, err := range e {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

func (e multiError) Unwrap() []error { return e }

func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return multiError(errs)
}
