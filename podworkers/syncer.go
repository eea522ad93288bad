package podworkers

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/internal/downward"
	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// runtimeService is the part of the CRI runtime service the syncer drives.
type runtimeService interface {
	kubecontainer.Lister
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	RemoveContainer(ctx context.Context, containerID string) error
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
	UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error
}

// imageService is the part of the CRI image service the syncer uses.
type imageService interface {
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
}

// statusSetter receives the runtime status of a pod after each sync.
type statusSetter interface {
	// SetPodStatus records pod's runtime status; waiting says why
	// containers that do not run yet are held back.
	SetPodStatus(pod *v1.Pod, status *kubecontainer.PodStatus, waiting map[string]kubecontainer.Waiting)
	// RemovePod forgets a pod that is gone from the runtime.
	RemovePod(uid types.UID)
}

// podCgroups manages the pods' cgroups (cgroups.Manager). Calls for one
// pod do not overlap.
type podCgroups interface {
	// PodCgroupParent is the sandbox's CRI cgroup parent.
	PodCgroupParent(pod *v1.Pod) string
	// EnsurePod creates the pod's cgroup, or updates its limits;
	// idempotent.
	EnsurePod(ctx context.Context, pod *v1.Pod) error
	// RemovePod removes the pod's cgroup; it fails while processes remain,
	// with an error wrapping errdefs.ErrFailedPrecondition.
	RemovePod(ctx context.Context, uid types.UID) error
	// KillPodProcesses kills what is left in the pod's cgroup and returns
	// the PIDs it killed; only for a pod the runtime holds nothing of.
	KillPodProcesses(ctx context.Context, uid types.UID) ([]int, error)
	// SetPod is EnsurePod with the given configuration (a resize grows
	// the pod's cgroup before its containers); PodApplied returns what
	// was last written, if anything since the agent started.
	SetPod(ctx context.Context, pod *v1.Pod, res cgroups.ResourceConfig) error
	PodApplied(uid types.UID) (cgroups.ResourceConfig, bool)
	// FindPodCgroup, ContainerCgroup and Stats read the memory a pod and
	// its containers use, which a resize's new limits must exceed.
	FindPodCgroup(uid types.UID) (string, bool)
	ContainerCgroup(parent, id string) string
	Stats(path string) (*cgroups.Stats, error)
}

// cacheWriter is where the syncer stores the status it reads after acting.
type cacheWriter interface {
	Set(uid types.UID, status *kubecontainer.PodStatus, err error, ts time.Time) bool
}

// SyncerConfig configures a Syncer.
type SyncerConfig struct {
	// Events records the kubelet's events about pods and containers
	// (node mode); nil records none.
	Events  eventRecorder
	Runtime runtimeService
	Images  imageService
	Cache   cacheWriter
	Status  statusSetter
	Clock   clock.Clock
	// Volumes sets up pods' volumes before their containers start and
	// removes pods' directories at the end. Nil: pods run without their
	// volumes, and their directories are removed as they are.
	Volumes volumeManager
	// NodeName and HostIP are what env fieldRefs see; NodeAllocatable is
	// what an env resourceFieldRef reads for a limit the container does
	// not set (may be nil: it then reads 0).
	NodeName        string
	HostIP          string
	NodeAllocatable v1.ResourceList
	// RootDir holds <RootDir>/pods/<uid>; PodLogsDir holds container logs.
	RootDir    string
	PodLogsDir string
	// Restart backoff: BackOffInitial doubling to BackOffMax; a container
	// that ran BackOffReset or longer starts over.
	BackOffInitial time.Duration
	BackOffMax     time.Duration
	BackOffReset   time.Duration
	// Probes, if set, tells which containers failed their liveness or
	// startup probe (they are killed) and which have started.
	Probes probeResults
	// Image pull back-off: after a failed pull of an image for a pod, the
	// next waits ImagePullBackOffInitial, doubling to ImagePullBackOffMax.
	// Zero means the kubelet's 10s and 5m. Registry credentials are read
	// from <RootDir>/config.json (see images.go).
	ImagePullBackOffInitial time.Duration
	ImagePullBackOffMax     time.Duration
	// Cgroups, when set, gives each pod a cgroup (made before its sandbox,
	// removed once it is terminated) as its sandbox's cgroup parent.
	Cgroups podCgroups
	// MemoryCapacity is the node's memory in bytes; when set, containers
	// get the kubelet's OOM score adjustment for their QoS class.
	MemoryCapacity int64
	// Objects serves the configMaps and secrets of env valueFrom, envFrom
	// and imagePullSecrets; nil in standalone mode, where they fail.
	Objects objectSource
	// DNS makes sandboxes' DNS configuration; nil leaves it to the
	// runtime.
	DNS dnsConfigurer
	// ClusterDomain is the domain of pods' hostnames in /etc/hosts
	// (<subdomain>.<namespace>.svc.<ClusterDomain>).
	ClusterDomain string
	// HostsFile is the host's hosts file, what host-network pods'
	// /etc/hosts starts with; empty: /etc/hosts.
	HostsFile string
	// Services lists the Services whose env vars containers get; nil in
	// standalone mode, where they get none.
	Services serviceLister
	// RuntimeClasses resolves runtimeClassName to the runtime handler a
	// sandbox runs with; nil in standalone mode, where admission refuses
	// pods naming a class.
	RuntimeClasses runtimeClasses
	// UserNamespaces hands out the ID ranges of pods with hostUsers:
	// false, where UsernsSupport says the runtime handler can give a pod
	// a user namespace; nil: no pod gets one (such pods never start).
	UserNamespaces userNamespaces
	UsernsSupport  usernsSupport
	// Resources keeps the resources granted to and applied to each pod's
	// containers, and the resize conditions (agent/allocation). Required:
	// pods run with what it grants, and a resize is made through it
	// (resize.go).
	Resources resourceState
	// MaxParallelSandboxStarts is how many RunPodSandbox calls run at
	// once (sandbox_window.go); 0 or less: all of them.
	MaxParallelSandboxStarts int
}

// sandboxStuckAfter is how long a RunPodSandbox call keeps its turn in
// the window: far beyond the second or so a sandbox takes on a loaded
// 2-core machine, far below the runtime request timeout.
const sandboxStuckAfter = 10 * time.Second

// Syncer does the runtime work of pod workers. It is safe for concurrent
// use by different pods; calls for one pod must not overlap (Workers
// guarantees it).
type Syncer struct {
	cfg     SyncerConfig
	backOff *backOff
	pulls   *pullBackOff
	// waiting remembers, per pod, why containers could not start at the
	// last sync (image pull and create errors) so the status shows it.
	mu      sync.Mutex
	waiting map[types.UID]map[string]kubecontainer.Waiting
	// messages holds the termination messages read for exited containers.
	messages terminationMessages
	// hooks runs lifecycle handlers.
	hooks *hookRunner
	// downward resolves env fieldRefs and resourceFieldRefs.
	downward downward.Resolver
	// resizeMu makes the pods' resize decisions one at a time, so that
	// two resizes never both take the same free resources.
	resizeMu sync.Mutex
	// sandboxes is the window of RunPodSandbox calls.
	sandboxes *sandboxWindow
}

var _ podSyncer = (*Syncer)(nil)

// NewSyncer returns a Syncer.
func NewSyncer(cfg SyncerConfig) *Syncer {
	if cfg.Events == nil {
		cfg.Events = events.Discard{}
	}
	return &Syncer{
		cfg:       cfg,
		backOff:   newBackOff(cfg.Clock, cfg.BackOffInitial, cfg.BackOffMax, cfg.BackOffReset),
		pulls:     newPullBackOff(cfg.Clock, cfg.ImagePullBackOffInitial, cfg.ImagePullBackOffMax),
		waiting:   map[types.UID]map[string]kubecontainer.Waiting{},
		hooks:     newHookRunner(cfg.Runtime, cfg.Clock, cfg.HostIP),
		sandboxes: newSandboxWindow(cfg.MaxParallelSandboxStarts, sandboxStuckAfter, cfg.Clock),
		downward: downward.Resolver{
			NodeName:    cfg.NodeName,
			HostIP:      cfg.HostIP,
			Allocatable: cfg.NodeAllocatable,
		},
	}
}

// uncancelled is ctx without its cancellation, for the CRI calls that make
// runtime objects (RunPodSandbox, CreateContainer, StartContainer): once
// sent, they run to their end even when the pod is killed meanwhile, and
// the kill waits for them. containerd (2.1, and 1.6 too when the client
// goes away) cancelled in the middle of a StartContainer keeps a container
// whose task it can neither start nor delete ("cannot delete running
// task": containerd/containerd#11037), and with it the pod's sandbox,
// cgroup and directories, for good. The CRI
// client's per-call timeout (--runtime-request-timeout) still bounds each
// call. An agent killed by SIGKILL in the middle of a start still cuts the
// call short; nothing in the agent can prevent that.
func uncancelled(ctx context.Context) context.Context {
	return context.WithoutCancel(ctx)
}

// maxNameReservedTries bounds how many attempt numbers a start skips past
// names the runtime keeps reserved.
const maxNameReservedTries = 5

// nameReserved reports whether the runtime refused a sandbox or container
// name because an object it could not remove still holds it.
func nameReserved(err error) bool {
	return strings.Contains(err.Error(), "is reserved for")
}

// refresh reads the pod's status from the runtime and stores it in the
// cache, so the next sync sees what this one did without waiting for a
// relist. What prev, the status the sync started from, holds of objects
// whose state did not change is reused rather than asked for again.
func (s *Syncer) refresh(ctx context.Context, uid types.UID, prev *kubecontainer.PodStatus) (*kubecontainer.PodStatus, error) {
	ts := s.cfg.Clock.Now()
	st, err := kubecontainer.RefreshPodStatus(ctx, s.cfg.Runtime, uid, prev, ts)
	if err != nil {
		return nil, fmt.Errorf("read pod status after sync: %w", err)
	}
	s.cfg.Cache.Set(uid, st, nil, ts)
	return st, nil
}

// report hands the status to the status setter, together with the waiting
// reasons of containers that failed to start at an earlier sync and have
// not started since.
func (s *Syncer) report(pod *v1.Pod, status *kubecontainer.PodStatus, waiting map[string]kubecontainer.Waiting) {
	s.mu.Lock()
	prev := s.waiting[pod.UID]
	merged := make(map[string]kubecontainer.Waiting, len(waiting)+len(prev))
	for name, w := range prev {
		if cs := status.FindContainer(name); cs == nil || cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			merged[name] = w
		}
	}
	for name, w := range waiting {
		if _, failed := merged[name]; failed && w.Reason == "ContainerCreating" && w.Message == "" {
			// Still being created: the container keeps saying why its
			// last attempt failed, rather than flickering to a bare
			// ContainerCreating while the next attempt runs.
			continue
		}
		merged[name] = w
	}
	// Remember only the errors (a ContainerCreating with a message is
	// one: a volume or the sandbox could not be made); a bare
	// ContainerCreating and back-off are derived again at every sync.
	keep := map[string]kubecontainer.Waiting{}
	for name, w := range merged {
		if (w.Reason != "ContainerCreating" || w.Message != "") && w.Reason != "CrashLoopBackOff" && w.Reason != "PodInitializing" {
			keep[name] = w
		}
	}
	s.waiting[pod.UID] = keep
	s.mu.Unlock()
	status = s.messages.fill(pod, status, s.podDir(pod.UID), PodLogsDir(s.cfg.PodLogsDir, pod))
	s.cfg.Status.SetPodStatus(pod, status, merged)
}

// clearWaiting forgets the start error remembered for a container that has
// now started: it may exit before the next status read, and must then be
// reported as exited, not as still failing to start.
func (s *Syncer) clearWaiting(uid types.UID, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiting[uid], name)
}

// podDir is the pod's data directory, <RootDir>/pods/<uid>.
func (s *Syncer) podDir(uid types.UID) string {
	return filepath.Join(s.cfg.RootDir, "pods", string(uid))
}

// backOffKey identifies a container's restart backoff: a new spec starts a
// new backoff.
func backOffKey(pod *v1.Pod, c *v1.Container) string {
	return string(pod.UID) + "/" + c.Name + "/" + kubecontainer.HashContainer(c)
}
