package podworkers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/qos"
	"github.com/minikubelet/minikubelet/volumes"
)

// startTarget is what the containers one sync starts share: their pod,
// the sandbox they go into, what their env may refer to and the pod's
// volumes.
type startTarget struct {
	pod           *v1.Pod
	sandboxID     string
	sandboxConfig *runtimeapi.PodSandboxConfig
	env           podEnv
	volumes       *volumes.PodVolumes
	// imageVolumes maps the reference of each image volume whose image
	// was ensured to the image the runtime mounts.
	imageVolumes map[string]string
	// hostsFile is mounted at /etc/hosts; empty: none.
	hostsFile string
}

// startContainer creates one container of t's pod from the image img (or
// reports why img could not be had) and starts it, then runs its postStart
// hook. On failure it returns the waiting reason to report; a zero one
// when the container started and its hook failed.
func (s *Syncer) startContainer(ctx context.Context, t *startTarget, cts containerToStart, img imageResult) (kubecontainer.Waiting, error) {
	pod, sandboxID, sandboxConfig := t.pod, t.sandboxID, t.sandboxConfig
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
		Env:          t.env,
		SeccompRoot:  filepath.Join(s.cfg.RootDir, "seccomp"),
		OOMScoreAdj:  s.oomScoreAdj(pod, c),
	})
	if err != nil {
		return kubecontainer.Waiting{Reason: "CreateContainerConfigError", Message: err.Error()}, err
	}
	// The container shares its sandbox's user namespace, if any.
	cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = sandboxConfig.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	shareTargetPID(cfg, cts.TargetID)
	if err := addVolumeMounts(ctx, cfg, t.volumes, c); err != nil {
		return kubecontainer.Waiting{Reason: "CreateContainerConfigError", Message: err.Error()}, err
	}
	if err := volumes.ResolveImageMounts(cfg.Mounts, t.imageVolumes); err != nil {
		return kubecontainer.Waiting{Reason: "CreateContainerConfigError", Message: err.Error()}, fmt.Errorf("container %q: %w", c.Name, err)
	}
	addHostsMount(cfg, t.hostsFile, c)
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
		// As the kubelet: the runtime's own words (a Localhost seccomp
		// profile that is not there: "failed to generate seccomp spec
		// opts: cannot load seccomp profile ...").
		msg := kubecontainer.RuntimeMessage(err)
		s.containerEvent(pod, c, v1.EventTypeWarning, events.Failed, "Error: %s", msg)
		return kubecontainer.Waiting{Reason: "CreateContainerError", Message: msg}, fmt.Errorf("create container %q: %w", c.Name, err)
	}
	s.containerEvent(pod, c, v1.EventTypeNormal, events.Created, "Created container: %s", c.Name)
	if err := s.cfg.Resources.SetActuated(pod.UID, c.Name, c.Resources); err != nil {
		logger.Error(err, "Recording the container's applied resources failed; kept in memory")
	}
	if err := ctx.Err(); err != nil {
		// Killed meanwhile: a created container runs nothing, and the
		// termination removes it.
		return kubecontainer.Waiting{Reason: "ContainerCreating"}, fmt.Errorf("start container %q (%s): %w", c.Name, id, err)
	}
	if err := s.cfg.Runtime.StartContainer(uncancelled(ctx), id); err != nil {
		msg := kubecontainer.RuntimeMessage(err)
		s.containerEvent(pod, c, v1.EventTypeWarning, events.Failed, "Error: %s", msg)
		return kubecontainer.Waiting{Reason: "RunContainerError", Message: msg}, fmt.Errorf("start container %q (%s): %w", c.Name, id, err)
	}
	s.containerEvent(pod, c, v1.EventTypeNormal, events.Started, "Started container %s", c.Name)
	if cts.RestartCount == 0 {
		logger.Info("Started container", "containerID", id)
	} else {
		logger.Info("Restarted container", "containerID", id, "restartCount", cts.RestartCount)
	}
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		if err := s.hooks.run(ctx, hookTarget{pod: pod, container: c, containerID: id, podIPs: t.env.PodIPs}, c.Lifecycle.PostStart, postStartTimeout); err != nil {
			// As the kubelet: a failed postStart hook kills the container;
			// the restart policy decides the rest.
			logger.Info("FailedPostStartHook: killing the container", "containerID", id, "err", err)
			s.containerEvent(pod, c, v1.EventTypeWarning, events.FailedPostStart, "PostStartHook failed: %v", err)
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

// postStartTimeout bounds a postStart hook, which the kubelet does not
// bound at all: a hook that hangs must not hang the pod's worker forever.
const postStartTimeout = 2 * time.Minute

// oomScoreAdj is the container's OOM score adjustment by the kubelet's
// rules; 0 (the runtime's choice) when the node's memory is not known.
func (s *Syncer) oomScoreAdj(pod *v1.Pod, c *v1.Container) int64 {
	if s.cfg.MemoryCapacity <= 0 {
		return 0
	}
	return int64(qos.OOMScoreAdj(pod, c, s.cfg.MemoryCapacity))
}
