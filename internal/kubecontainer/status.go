package kubecontainer

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodStatus is what the runtime says about one pod at TimeStamp. It is
// immutable once stored in a cache: callers that need to change it copy it.
type PodStatus struct {
	ID        types.UID
	Name      string
	Namespace string
	// IPs of the newest ready sandbox, primary first. Empty for host-network
	// pods (their IP is the node's).
	IPs []string
	// Sandboxes, newest first.
	Sandboxes []*runtimeapi.PodSandboxStatus
	// Containers, newest first.
	Containers []*ContainerStatus
	// TimeStamp is a time taken before the runtime was asked: the status
	// reflects every runtime change that happened before it.
	TimeStamp time.Time
}

// ContainerStatus is one container's CRI status with the kubelet's labels
// and annotations decoded.
type ContainerStatus struct {
	ID           string
	Name         string
	State        runtimeapi.ContainerState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int32
	Reason       string
	Message      string
	Image        string
	ImageRef     string
	Hash         string
	RestartCount int
	SandboxID    string
	// PodTerminationGrace is the pod's grace period, in seconds, when the
	// container was created; -1 when unknown.
	PodTerminationGrace int64
	// LogPath is the container's log file, as the runtime reports it.
	LogPath string
	// User is the identity the container's process runs with, as the
	// runtime reports it (containerd 2.x); nil when it does not.
	User *runtimeapi.ContainerUser
	// Resources are the container's cpu and memory settings as the
	// runtime reports them (CRI ContainerStatus.resources); nil when it
	// does not.
	Resources *runtimeapi.LinuxContainerResources
}

// FindContainer returns the newest status of the container called name, or
// nil when there is none.
func (s *PodStatus) FindContainer(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.Containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// ContainersNamed returns every status of the container called name, newest
// first.
func (s *PodStatus) ContainersNamed(name string) []*ContainerStatus {
	var out []*ContainerStatus
	if s == nil {
		return out
	}
	for _, c := range s.Containers {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// Lister is the part of the CRI runtime service that reads pod state.
type Lister interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// GetPodStatus asks the runtime for everything it holds of the pod with uid.
// The returned status's TimeStamp is now, which must be taken before the
// first call. A sandbox or container removed between the list and the
// status call is skipped.
func GetPodStatus(ctx context.Context, rt Lister, uid types.UID, now time.Time) (*PodStatus, error) {
	return RefreshPodStatus(ctx, rt, uid, nil, now)
}

// RefreshPodStatus is GetPodStatus reusing what prev (an earlier status of
// the pod, or nil) holds of the sandboxes and containers whose state has
// not changed since, as a relist does: after a sync that started one
// container, it costs the two list calls, made together, and that
// container's status call.
func RefreshPodStatus(ctx context.Context, rt Lister, uid types.UID, prev *PodStatus, now time.Time) (*PodStatus, error) {
	uidFilter := map[string]string{LabelPodUID: string(uid)}
	var (
		sandboxes []*runtimeapi.PodSandbox
		sbErr     error
		listed    = make(chan struct{})
	)
	go func() {
		defer close(listed)
		sandboxes, sbErr = rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: uidFilter})
	}()
	containers, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: uidFilter})
	<-listed
	if sbErr != nil {
		return nil, fmt.Errorf("list sandboxes of pod %s: %w", uid, sbErr)
	}
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	return InspectPod(ctx, rt, Listed{UID: uid, Sandboxes: sandboxes, Containers: containers, At: now}, prev)
}

// Listed is what the runtime's list calls returned for one pod, and when.
type Listed struct {
	UID        types.UID
	Sandboxes  []*runtimeapi.PodSandbox
	Containers []*runtimeapi.Container
	// At is when the lists were taken (before the first call); it is the
	// TimeStamp of the status built from them.
	At time.Time
}

// InspectPod builds the status of the pod listed.UID from the sandboxes
// and containers a list call returned for it. It asks the runtime for the
// status of an object only when prev does not already hold it in the
// state the list shows, so that a relist costs no status call for what
// did not change. prev may be nil.
func InspectPod(ctx context.Context, rt Lister, listed Listed, prev *PodStatus) (*PodStatus, error) {
	st := &PodStatus{ID: listed.UID, TimeStamp: listed.At}
	for _, sb := range listed.Sandboxes {
		if old := prev.sandbox(sb.Id); old != nil && old.State == sb.State {
			st.Sandboxes = append(st.Sandboxes, old)
			continue
		}
		resp, err := rt.PodSandboxStatus(ctx, sb.Id, false)
		if err != nil {
			if IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("status of sandbox %s: %w", sb.Id, err)
		}
		st.Sandboxes = append(st.Sandboxes, resp.Status)
	}
	sort.SliceStable(st.Sandboxes, func(i, j int) bool {
		return st.Sandboxes[i].CreatedAt > st.Sandboxes[j].CreatedAt
	})
	if len(st.Sandboxes) > 0 {
		md := st.Sandboxes[0].Metadata
		st.Name, st.Namespace = md.GetName(), md.GetNamespace()
		st.IPs = SandboxIPs(st.Sandboxes[0])
	}
	for _, c := range listed.Containers {
		if old := prev.container(c.Id); old != nil && old.State == c.State {
			st.Containers = append(st.Containers, old)
			continue
		}
		resp, err := rt.ContainerStatus(ctx, c.Id, false)
		if err != nil {
			if IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("status of container %s: %w", c.Id, err)
		}
		st.Containers = append(st.Containers, FromCRIStatus(resp.Status, c.PodSandboxId))
	}
	sort.SliceStable(st.Containers, func(i, j int) bool {
		return st.Containers[i].CreatedAt.After(st.Containers[j].CreatedAt)
	})
	return st, nil
}

// Without returns a copy of s without the containers of the given IDs:
// passed as RefreshPodStatus's prev, it has those containers' status asked
// for again even though their state did not change (their resources did).
func (s *PodStatus) Without(ids []string) *PodStatus {
	if s == nil || len(ids) == 0 {
		return s
	}
	out := *s
	out.Containers = nil
	for _, c := range s.Containers {
		if !slices.Contains(ids, c.ID) {
			out.Containers = append(out.Containers, c)
		}
	}
	return &out
}

func (s *PodStatus) sandbox(id string) *runtimeapi.PodSandboxStatus {
	if s == nil {
		return nil
	}
	for _, sb := range s.Sandboxes {
		if sb.Id == id {
			return sb
		}
	}
	return nil
}

func (s *PodStatus) container(id string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.Containers {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// SandboxIPs returns a ready sandbox's IPs, primary first.
func SandboxIPs(sb *runtimeapi.PodSandboxStatus) []string {
	if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || sb.GetNetwork() == nil {
		return nil
	}
	var ips []string
	if ip := sb.Network.Ip; ip != "" {
		ips = append(ips, ip)
	}
	for _, extra := range sb.Network.AdditionalIps {
		if extra.GetIp() != "" {
			ips = append(ips, extra.Ip)
		}
	}
	return ips
}

// FromCRIStatus converts a CRI container status.
func FromCRIStatus(s *runtimeapi.ContainerStatus, sandboxID string) *ContainerStatus {
	return &ContainerStatus{
		ID:           s.Id,
		Name:         s.GetMetadata().GetName(),
		State:        s.State,
		CreatedAt:    unixNano(s.CreatedAt),
		StartedAt:    unixNano(s.StartedAt),
		FinishedAt:   unixNano(s.FinishedAt),
		ExitCode:     s.ExitCode,
		Reason:       s.Reason,
		Message:      s.Message,
		Image:        s.GetImage().GetImage(),
		ImageRef:     s.ImageRef,
		Hash:         s.Annotations[AnnotationContainerHash],
		RestartCount: RestartCountFromAnnotations(s.Annotations),
		SandboxID:    sandboxID,

		PodTerminationGrace: graceFromAnnotations(s.Annotations),
		LogPath:             s.LogPath,
		User:                s.User,
		Resources:           s.GetResources().GetLinux(),
	}
}

func graceFromAnnotations(annotations map[string]string) int64 {
	g, err := strconv.ParseInt(annotations[AnnotationPodTerminationGrace], 10, 64)
	if err != nil || g < 0 {
		return -1
	}
	return g
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Waiting says why a container is not running yet, as the kubelet reports it
// (ContainerCreating, CrashLoopBackOff, ErrImagePull, ...).
type Waiting struct {
	Reason  string
	Message string
}
