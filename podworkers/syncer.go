package podworkers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/internal/downward"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/volumes"
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
}

// cacheWriter is where the syncer stores the status it reads after acting.
type cacheWriter interface {
	Set(uid types.UID, status *kubecontainer.PodStatus, err error, ts time.Time) bool
}

// SyncerConfig configures a Syncer.
type SyncerConfig struct {
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
}

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
}

var _ podSyncer = (*Syncer)(nil)

// NewSyncer returns a Syncer.
func NewSyncer(cfg SyncerConfig) *Syncer {
	return &Syncer{
		cfg:     cfg,
		backOff: newBackOff(cfg.Clock, cfg.BackOffInitial, cfg.BackOffMax, cfg.BackOffReset),
		pulls:   newPullBackOff(cfg.Clock, cfg.ImagePullBackOffInitial, cfg.ImagePullBackOffMax),
		waiting: map[types.UID]map[string]kubecontainer.Waiting{},
		hooks:   newHookRunner(cfg.Runtime, cfg.Clock, cfg.HostIP),
		downward: downward.Resolver{
			NodeName:    cfg.NodeName,
			HostIP:      cfg.HostIP,
			Allocatable: cfg.NodeAllocatable,
		},
	}
}

// SyncPod brings the runtime in line with the pod's spec and reports the
// resulting status.
func (s *Syncer) SyncPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (SyncResult, error) {
	logger := klog.FromContext(ctx)
	actions := computePodActions(pod, status, func(c *v1.Container, cs *kubecontainer.ContainerStatus) time.Duration {
		return s.backOff.remaining(backOffKey(pod, c), cs.StartedAt, cs.FinishedAt)
	}, s.cfg.Probes)
	vols, err := s.setUpVolumes(ctx, pod)
	if err != nil {
		holdForVolumes(&actions, err)
		s.report(pod, status, actions.Waiting)
		return SyncResult{StatusTime: status.TimeStamp}, err
	}
	// Every sync, so that an edited pod's limits follow and a restarted
	// agent learns the Burstable pods' requests again.
	if err := s.ensureCgroup(ctx, pod); err != nil {
		if actions.CreateSandbox {
			s.report(pod, status, actions.Waiting)
			return SyncResult{StatusTime: status.TimeStamp}, err
		}
		logger.Info("Updating the pod's cgroup failed; the next sync tries again", "err", err)
	}
	if !actions.changesRuntime() {
		s.report(pod, status, actions.Waiting)
		return SyncResult{StatusTime: status.TimeStamp, RequeueAfter: actions.RequeueAfter}, nil
	}
	logger.V(3).Info("Syncing pod", "createSandbox", actions.CreateSandbox, "start", len(actions.ContainersToStart), "kill", len(actions.ContainersToKill))
	// Report what the runtime shows before acting on it: a container that
	// died is shown terminated now, not only once its replacement runs.
	s.report(pod, status, actions.Waiting)

	syncErr := s.apply(ctx, pod, status, &actions, vols)
	// What the sync did reaches the cache even when the pod was killed
	// meanwhile: else the next sync, the kill's, would have to wait for a
	// relist that started after now, which in evented mode comes only
	// with the safety relist (a minute).
	fresh, err := s.refresh(uncancelled(ctx), pod.UID, status)
	if err != nil {
		// What this sync did is not in the cache: the next sync must wait
		// for a relist that started after now.
		return SyncResult{StatusTime: s.cfg.Clock.Now()}, errors.Join(syncErr, err)
	}
	s.report(pod, fresh, actions.Waiting)
	return SyncResult{StatusTime: fresh.TimeStamp, RequeueAfter: actions.RequeueAfter}, syncErr
}

// apply carries out the actions. Containers that fail to start are recorded
// in actions.Waiting; the first error is returned so the worker retries.
func (s *Syncer) apply(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, actions *podActions, vols *volumes.PodVolumes) error {
	grace := podGracePeriod(pod)
	if actions.KillPod {
		if err := s.killPod(ctx, pod, status, grace); err != nil {
			return fmt.Errorf("kill pod before recreating its sandbox: %w", err)
		}
	}
	if err := s.killContainers(ctx, pod, status, actions.ContainersToKill, grace); err != nil {
		return err
	}
	for _, id := range actions.ContainersToReplace {
		if err := s.removeNeverStarted(ctx, id); err != nil {
			// containerd can keep a task it refuses to delete after an
			// agent died mid-start; the container can never be started
			// again, so its replacement goes ahead, as with the kubelet.
			klog.FromContext(ctx).Error(err, "Removing a container that never started failed; replacing it anyway", "containerID", id)
		}
	}
	// Dead containers and sandboxes go after the starts: removing them
	// (a CRI call each) would otherwise delay a crashed container's
	// replacement.
	defer s.removeDead(ctx, status, actions)

	sandboxID := actions.SandboxID
	sandboxConfig := s.sandboxConfig(pod, actions.Attempt)
	if !actions.CreateSandbox {
		if newest := newestSandbox(status); newest != nil {
			sandboxConfig.Metadata.Attempt = newest.GetMetadata().GetAttempt()
		}
	}
	// Images are checked (and pulled) while the sandbox starts: the two
	// do not depend on each other, and both are slow.
	images := s.prefetchImages(ctx, pod, actions.ContainersToStart, sandboxConfig)
	if actions.CreateSandbox {
		id, err := s.runSandbox(ctx, pod, sandboxConfig)
		if err != nil {
			<-images.done
			holdForSandbox(actions, err)
			return err
		}
		sandboxID = id
	}
	<-images.done
	penv := podEnv{Downward: s.downward, Objects: readEnvObjects(ctx, s.cfg.Objects, pod)}
	if needsPodIP(actions.ContainersToStart) {
		penv.PodIPs = s.sandboxIPs(ctx, sandboxID)
	}

	var firstErr error
	for _, cts := range actions.ContainersToStart {
		img := images.results[cts.Container.Name]
		if img.retryAfter > 0 {
			// The pull failed or backs off: no error, the worker comes
			// back when the image may be pulled again.
			actions.Waiting[cts.Container.Name] = img.waiting
			if actions.RequeueAfter == 0 || img.retryAfter < actions.RequeueAfter {
				actions.RequeueAfter = img.retryAfter
			}
			continue
		}
		if w, err := s.startContainer(ctx, pod, cts, sandboxID, sandboxConfig, penv, img, vols); err != nil {
			if w.Reason != "" {
				actions.Waiting[cts.Container.Name] = w
			} else {
				// It started, and failed after (its postStart hook).
				delete(actions.Waiting, cts.Container.Name)
				s.clearWaiting(pod.UID, cts.Container.Name)
			}
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		delete(actions.Waiting, cts.Container.Name)
		s.clearWaiting(pod.UID, cts.Container.Name)
	}
	return firstErr
}

// holdForSandbox records why the containers the sync would start wait when
// their sandbox (or the pod's log or data directory) cannot be made: they
// stay ContainerCreating, as with the kubelet, and the message says why
// (where the kubelet says it in a FailedCreatePodSandBox event), such as
// "create pod log directory: mkdir ...: no space left on device".
func holdForSandbox(actions *podActions, err error) {
	for _, cts := range actions.ContainersToStart {
		actions.Waiting[cts.Container.Name] = kubecontainer.Waiting{Reason: "ContainerCreating", Message: err.Error()}
	}
}

func (s *Syncer) runSandbox(ctx context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) (string, error) {
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		return "", fmt.Errorf("create pod log directory: %w", err)
	}
	if err := os.MkdirAll(s.podDir(pod.UID), 0o750); err != nil {
		return "", fmt.Errorf("create pod directory: %w", err)
	}
	id, err := s.cfg.Runtime.RunPodSandbox(uncancelled(ctx), cfg, "")
	for tries := 0; err != nil && nameReserved(err) && tries < maxNameReservedTries && ctx.Err() == nil; tries++ {
		// containerd keeps the name of a sandbox it could not remove (after
		// an agent died mid-start) reserved: as the kubelet, move on to the
		// next attempt number instead of failing on this one forever.
		cfg.Metadata.Attempt++
		id, err = s.cfg.Runtime.RunPodSandbox(uncancelled(ctx), cfg, "")
	}
	if err != nil {
		return "", fmt.Errorf("run sandbox (attempt %d): %w", cfg.Metadata.Attempt, err)
	}
	klog.FromContext(ctx).V(2).Info("Started sandbox", "sandboxID", id, "attempt", cfg.Metadata.Attempt)
	return id, nil
}

func (s *Syncer) sandboxIPs(ctx context.Context, sandboxID string) []string {
	resp, err := s.cfg.Runtime.PodSandboxStatus(ctx, sandboxID, false)
	if err != nil {
		return nil
	}
	return kubecontainer.SandboxIPs(resp.GetStatus())
}

// startContainer makes sure the image is there, then creates and starts one
// container. On failure it returns the waiting reason to report.
func (s *Syncer) startContainer(ctx context.Context, pod *v1.Pod, cts containerToStart, sandboxID string, sandboxConfig *runtimeapi.PodSandboxConfig, penv podEnv, img imageResult, vols *volumes.PodVolumes) (kubecontainer.Waiting, error) {
	c := cts.Container
	logger := klog.FromContext(ctx).WithValues("container", c.Name)
	if img.err != nil {
		return img.waiting, img.err
	}
	user := imageUserOf(img.image)
	if img.image == nil {
		// Pulled just now: ask the runtime for the image's user.
		var err error
		if user, err = s.imageUser(ctx, img.ref); err != nil {
			return kubecontainer.Waiting{Reason: "CreateContainerConfigError", Message: err.Error()}, err
		}
	}
	cfg, err := containerConfig(pod, c, containerOpts{
		RestartCount: cts.RestartCount,
		ImageRef:     img.ref,
		ImageUser:    user,
		Env:          penv,
		SeccompRoot:  filepath.Join(s.cfg.RootDir, "seccomp"),
		OOMScoreAdj:  s.oomScoreAdj(pod, c),
	})
	if err != nil {
		return kubecontainer.Waiting{Reason: "CreateContainerConfigError", Message: err.Error()}, err
	}
	if err := addVolumeMounts(ctx, cfg, vols, c); err != nil {
		return kubecontainer.Waiting{Reason: "CreateContainerConfigError", Message: err.Error()}, err
	}
	if err := os.MkdirAll(filepath.Join(sandboxConfig.LogDirectory, c.Name), 0o755); err != nil {
		return kubecontainer.Waiting{Reason: "CreateContainerError", Message: err.Error()}, fmt.Errorf("create log directory of container %q: %w", c.Name, err)
	}
	if err := addTerminationMessageMount(cfg, s.podDir(pod.UID), c, cts.RestartCount); err != nil {
		return kubecontainer.Waiting{Reason: "CreateContainerError", Message: err.Error()}, err
	}
	if err := ctx.Err(); err != nil {
		return kubecontainer.Waiting{Reason: "ContainerCreating"}, fmt.Errorf("create container %q: %w", c.Name, err)
	}
	id, err := s.cfg.Runtime.CreateContainer(uncancelled(ctx), sandboxID, cfg, sandboxConfig)
	for tries := 0; err != nil && nameReserved(err) && tries < maxNameReservedTries && ctx.Err() == nil; tries++ {
		// A container the runtime could not remove keeps this name (and
		// restart count) reserved: count one more restart and retry.
		cfg.Metadata.Attempt++
		n := int(cfg.Metadata.Attempt)
		cfg.Annotations[kubecontainer.AnnotationRestartCount] = strconv.Itoa(n)
		cfg.LogPath = ContainerLogPath(c.Name, n)
		id, err = s.cfg.Runtime.CreateContainer(uncancelled(ctx), sandboxID, cfg, sandboxConfig)
	}
	if err != nil {
		return kubecontainer.Waiting{Reason: "CreateContainerError", Message: err.Error()}, fmt.Errorf("create container %q: %w", c.Name, err)
	}
	if err := ctx.Err(); err != nil {
		// Killed meanwhile: a created container runs nothing, and the
		// termination removes it.
		return kubecontainer.Waiting{Reason: "ContainerCreating"}, fmt.Errorf("start container %q (%s): %w", c.Name, id, err)
	}
	if err := s.cfg.Runtime.StartContainer(uncancelled(ctx), id); err != nil {
		return kubecontainer.Waiting{Reason: "RunContainerError", Message: err.Error()}, fmt.Errorf("start container %q (%s): %w", c.Name, id, err)
	}
	logger.V(2).Info("Started container", "containerID", id, "restartCount", cts.RestartCount)
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		if err := s.hooks.run(ctx, pod, c, id, c.Lifecycle.PostStart, penv.PodIPs, postStartTimeout); err != nil {
			// As the kubelet: a failed postStart hook kills the container;
			// the restart policy decides the rest.
			logger.Info("FailedPostStartHook: killing the container", "containerID", id, "err", err)
			if stopErr := s.cfg.Runtime.StopContainer(ctx, id, podGracePeriod(pod)); stopErr != nil && !kubecontainer.IsNotFound(stopErr) {
				err = errors.Join(err, stopErr)
			}
			// The container ran: its status is its own (terminated, then
			// per the restart policy), not a waiting reason.
			return kubecontainer.Waiting{}, fmt.Errorf("postStart hook of container %q: %w", c.Name, err)
		}
	}
	return kubecontainer.Waiting{}, nil
}

// removeNeverStarted removes a container that was created but never
// started (or is in an unknown state), stopping it first if the runtime
// says it has a task.
func (s *Syncer) removeNeverStarted(ctx context.Context, id string) error {
	err := s.cfg.Runtime.RemoveContainer(ctx, id)
	if err == nil || kubecontainer.IsNotFound(err) {
		return nil
	}
	if stopErr := s.cfg.Runtime.StopContainer(ctx, id, 0); stopErr != nil && !kubecontainer.IsNotFound(stopErr) {
		return errors.Join(err, stopErr)
	}
	if err := s.cfg.Runtime.RemoveContainer(ctx, id); err != nil && !kubecontainer.IsNotFound(err) {
		return fmt.Errorf("remove container %s before replacing it: %w", id, err)
	}
	return nil
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

// postStartTimeout bounds a postStart hook, which the kubelet does not
// bound at all: a hook that hangs must not hang the pod's worker forever.
const postStartTimeout = 2 * time.Minute

// imageResult is the outcome of ensureImage for one container: the image
// to create it from, or why it waits. retryAfter > 0 means the image's
// pull failed or backs off: not an error, the pod is synced again then.
type imageResult struct {
	ref        string
	waiting    kubecontainer.Waiting
	err        error
	retryAfter time.Duration
	// image is the image's status when it was present and not pulled
	// again; it saves asking the runtime for the image's user.
	image *runtimeapi.Image
}

// imagePrefetch holds the images of the containers to start; results is
// written by the prefetching goroutine and may be read once done is closed.
type imagePrefetch struct {
	done    chan struct{}
	results map[string]imageResult
}

// prefetchImages ensures, in one goroutine, the image of every container to
// start, in order.
func (s *Syncer) prefetchImages(ctx context.Context, pod *v1.Pod, cs []containerToStart, sandboxConfig *runtimeapi.PodSandboxConfig) *imagePrefetch {
	p := &imagePrefetch{done: make(chan struct{}), results: make(map[string]imageResult, len(cs))}
	go func() {
		defer close(p.done)
		for _, cts := range cs {
			p.results[cts.Container.Name] = s.ensureImage(ctx, pod, cts.Container, sandboxConfig)
		}
	}()
	return p
}

// needsPodIP reports whether a container's env refers to the pod's IP.
func needsPodIP(cs []containerToStart) bool {
	for _, cts := range cs {
		for _, e := range cts.Container.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && strings.HasPrefix(e.ValueFrom.FieldRef.FieldPath, "status.podIP") {
				return true
			}
		}
	}
	return false
}

// killContainers stops the given containers concurrently, each after its
// preStop hook, within grace seconds in all.
func (s *Syncer) killContainers(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, kill map[string]containerToKill, grace int64) error {
	if len(kill) == 0 {
		return nil
	}
	deadline := s.cfg.Clock.Now().Add(time.Duration(grace) * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, len(kill))
	for id, k := range kill {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := deadline
			if k.Grace != nil {
				// A failed probe's own grace period replaces the pod's.
				deadline = s.cfg.Clock.Now().Add(time.Duration(*k.Grace) * time.Second)
			}
			if err := s.killContainer(ctx, pod, status, id, k, deadline); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// killContainer runs the container's preStop hook, then stops it (SIGTERM,
// SIGKILL after what is left of the grace period until deadline). Grace
// periods only shrink: the hook's time is taken from the container's.
func (s *Syncer) killContainer(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, id string, k containerToKill, deadline time.Time) error {
	logger := klog.FromContext(ctx).WithValues("container", k.Name, "containerID", id)
	if c := kubecontainer.SpecOf(pod, k.Name); c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if left := deadline.Sub(s.cfg.Clock.Now()); left > 0 {
			var ips []string
			if status != nil {
				ips = status.IPs
			}
			if err := s.hooks.run(ctx, pod, c, id, c.Lifecycle.PreStop, ips, left); err != nil {
				logger.Info("FailedPreStopHook", "err", err)
			}
		}
	}
	grace := int64(0)
	if left := deadline.Sub(s.cfg.Clock.Now()); left > 0 {
		grace = int64((left + time.Second - 1) / time.Second)
	}
	logger.V(2).Info("Killing container", "reason", k.Reason, "gracePeriod", grace)
	if err := s.cfg.Runtime.StopContainer(ctx, id, grace); err != nil && !kubecontainer.IsNotFound(err) {
		return fmt.Errorf("stop container %q (%s): %w", k.Name, id, err)
	}
	return nil
}

// killPod stops every running container, then every ready sandbox, within
// grace seconds. Sidecars are stopped after the other containers have
// exited, one after another in reverse order, with what is left of the
// grace period.
func (s *Syncer) killPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, grace int64) error {
	deadline := s.cfg.Clock.Now().Add(time.Duration(grace) * time.Second)
	sidecarOrder := map[string]int{}
	for i := range pod.Spec.InitContainers {
		if kubecontainer.IsSidecar(&pod.Spec.InitContainers[i]) {
			sidecarOrder[pod.Spec.InitContainers[i].Name] = i + 1
		}
	}
	kill := map[string]containerToKill{}
	var sidecars []*kubecontainer.ContainerStatus
	for _, cs := range status.Containers {
		if cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if sidecarOrder[cs.Name] > 0 {
			sidecars = append(sidecars, cs)
			continue
		}
		kill[cs.ID] = containerToKill{Name: cs.Name, Reason: "pod terminating"}
	}
	if err := s.killContainers(ctx, pod, status, kill, grace); err != nil {
		return err
	}
	sort.Slice(sidecars, func(i, j int) bool { return sidecarOrder[sidecars[i].Name] > sidecarOrder[sidecars[j].Name] })
	for _, cs := range sidecars {
		if err := s.killContainer(ctx, pod, status, cs.ID, containerToKill{Name: cs.Name, Reason: "pod terminating (sidecar)"}, deadline); err != nil {
			return err
		}
	}
	for _, sb := range status.Sandboxes {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if err := s.cfg.Runtime.StopPodSandbox(ctx, sb.Id); err != nil && !kubecontainer.IsNotFound(err) {
			return fmt.Errorf("stop sandbox %s: %w", sb.Id, err)
		}
	}
	return nil
}

// removeDead removes containers and sandboxes no status needs, and the
// containers' log files (the runtime leaves them, as the kubelet's GC
// removes them); failures are only logged, the next sync tries again.
func (s *Syncer) removeDead(ctx context.Context, status *kubecontainer.PodStatus, actions *podActions) {
	logger := klog.FromContext(ctx)
	for _, id := range actions.ContainersToRemove {
		if err := s.cfg.Runtime.RemoveContainer(ctx, id); err != nil && !kubecontainer.IsNotFound(err) {
			logger.V(2).Info("Removing dead container failed", "containerID", id, "err", err)
			continue
		}
		for _, cs := range status.Containers {
			if cs.ID == id && filepath.IsAbs(cs.LogPath) {
				// The log and its rotated files ("<log>.<timestamp>[.gz]").
				rotated, _ := filepath.Glob(cs.LogPath + ".*")
				for _, f := range append(rotated, cs.LogPath) {
					if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
						logger.V(2).Info("Removing a dead container's log failed", "containerID", id, "path", f, "err", err)
					}
				}
			}
		}
	}
	for _, id := range actions.SandboxesToRemove {
		// A sandbox must be stopped before it can be removed.
		if err := s.cfg.Runtime.StopPodSandbox(ctx, id); err != nil && !kubecontainer.IsNotFound(err) {
			logger.V(2).Info("Stopping old sandbox failed", "sandboxID", id, "err", err)
			continue
		}
		if err := s.cfg.Runtime.RemovePodSandbox(ctx, id); err != nil && !kubecontainer.IsNotFound(err) {
			logger.V(2).Info("Removing dead sandbox failed", "sandboxID", id, "err", err)
		}
	}
}

// SyncTerminatingPod stops the pod's containers with gracePeriod, then its
// sandboxes.
func (s *Syncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus, gracePeriod int64) (SyncResult, error) {
	klog.FromContext(ctx).V(2).Info("Terminating pod", "gracePeriod", gracePeriod)
	killErr := s.killPod(ctx, pod, status, gracePeriod)
	fresh, err := s.refresh(ctx, pod.UID, status)
	if err != nil {
		return SyncResult{}, errors.Join(killErr, err)
	}
	s.report(pod, fresh, nil)
	return SyncResult{StatusTime: fresh.TimeStamp}, killErr
}

// SyncTerminatedPod removes the pod's containers and sandboxes from the
// runtime, and its log and data directories from disk.
func (s *Syncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *kubecontainer.PodStatus) (SyncResult, error) {
	var errs []error
	for _, cs := range status.Containers {
		if err := s.cfg.Runtime.RemoveContainer(ctx, cs.ID); err != nil && !kubecontainer.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %q (%s): %w", cs.Name, cs.ID, err))
		}
	}
	for _, sb := range status.Sandboxes {
		if err := s.cfg.Runtime.RemovePodSandbox(ctx, sb.Id); err != nil && !kubecontainer.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", sb.Id, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return SyncResult{}, err
	}
	fresh, err := s.refresh(ctx, pod.UID, status)
	if err != nil {
		return SyncResult{}, err
	}
	if len(fresh.Sandboxes) > 0 || len(fresh.Containers) > 0 {
		return SyncResult{StatusTime: fresh.TimeStamp}, fmt.Errorf("pod still has %d sandboxes and %d containers after removal", len(fresh.Sandboxes), len(fresh.Containers))
	}
	logsDir := PodLogsDir(s.cfg.PodLogsDir, pod)
	if err := os.RemoveAll(logsDir); err != nil {
		return SyncResult{StatusTime: fresh.TimeStamp}, fmt.Errorf("remove %s: %w", logsDir, err)
	}
	if err := s.removePodDir(ctx, pod.UID); err != nil {
		return SyncResult{StatusTime: fresh.TimeStamp}, err
	}
	if s.cfg.Cgroups != nil {
		if err := s.removePodCgroup(ctx, pod.UID); err != nil {
			return SyncResult{StatusTime: fresh.TimeStamp}, fmt.Errorf("remove pod cgroup: %w", err)
		}
	}
	s.backOff.forget(string(pod.UID) + "/")
	s.pulls.forget(pod.UID)
	s.mu.Lock()
	delete(s.waiting, pod.UID)
	s.mu.Unlock()
	s.messages.forget(pod.UID)
	s.cfg.Status.RemovePod(pod.UID)
	klog.FromContext(ctx).V(2).Info("Pod removed from the runtime")
	return SyncResult{StatusTime: fresh.TimeStamp}, nil
}

// removePodCgroup removes the cgroup of a pod the runtime holds nothing
// of any more (SyncTerminatedPod has just seen so). A process still in it
// then is one no one else will ever stop, such as the init process of a
// sandbox whose RunPodSandbox an agent SIGKILL cut short, which containerd
// 2.1 forgets without killing it: as the kubelet does before it removes a
// pod's cgroup, such processes are killed, and the removal tried again.
func (s *Syncer) removePodCgroup(ctx context.Context, uid types.UID) error {
	err := s.cfg.Cgroups.RemovePod(ctx, uid)
	if !errors.Is(err, errdefs.ErrFailedPrecondition) {
		return err
	}
	kctx, cancel := context.WithTimeout(ctx, killStraysTimeout)
	defer cancel()
	pids, kerr := s.cfg.Cgroups.KillPodProcesses(kctx, uid)
	if len(pids) > 0 {
		klog.FromContext(ctx).Info("Killed processes left in the cgroup of a pod the runtime holds nothing of any more", "pids", pids)
	}
	if kerr != nil {
		return errors.Join(err, kerr)
	}
	return s.cfg.Cgroups.RemovePod(ctx, uid)
}

// killStraysTimeout bounds the wait for killed stray processes to go.
const killStraysTimeout = 5 * time.Second

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

func (s *Syncer) podDir(uid types.UID) string {
	return filepath.Join(s.cfg.RootDir, "pods", string(uid))
}

// backOffKey identifies a container's restart backoff: a new spec starts a
// new backoff.
func backOffKey(pod *v1.Pod, c *v1.Container) string {
	return string(pod.UID) + "/" + c.Name + "/" + kubecontainer.HashContainer(c)
}

// ensureCgroup creates or updates the pod's cgroup. Its error matters only
// when a sandbox is about to be created in it: a running pod whose limits
// cannot change now (a memory limit below its usage) keeps running, and
// the next sync tries again.
func (s *Syncer) ensureCgroup(ctx context.Context, pod *v1.Pod) error {
	if s.cfg.Cgroups == nil {
		return nil
	}
	if err := s.cfg.Cgroups.EnsurePod(ctx, pod); err != nil {
		return fmt.Errorf("pod cgroup: %w", err)
	}
	return nil
}

// oomScoreAdj is the container's OOM score adjustment by the kubelet's
// rules; 0 (the runtime's choice) when the node's memory is not known.
func (s *Syncer) oomScoreAdj(pod *v1.Pod, c *v1.Container) int64 {
	if s.cfg.MemoryCapacity <= 0 {
		return 0
	}
	return int64(cgroups.OOMScoreAdj(pod, c, s.cfg.MemoryCapacity))
}
