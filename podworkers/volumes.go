package podworkers

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/volumes"
)

// volumeManager sets up and tears down pods' volumes.
type volumeManager interface {
	// SetUpPod makes the pod's volumes ready; it is idempotent and cheap,
	// and is called at every sync of the pod (it refreshes downwardAPI and
	// API object content). An error names each volume that failed.
	SetUpPod(ctx context.Context, pod *v1.Pod) (*volumes.PodVolumes, error)
	// TearDownPod unmounts and removes the pod's directory once its
	// containers and sandboxes are gone; idempotent.
	TearDownPod(ctx context.Context, uid types.UID) error
}

var _ volumeManager = (*volumes.Manager)(nil)

// setUpVolumes sets up the pod's volumes before anything of the sync runs;
// nil and no error when the syncer has no volume manager.
func (s *Syncer) setUpVolumes(ctx context.Context, pod *v1.Pod) (*volumes.PodVolumes, error) {
	if s.cfg.Volumes == nil {
		return nil, nil
	}
	vols, err := s.cfg.Volumes.SetUpPod(ctx, pod)
	if err != nil {
		return nil, fmt.Errorf("set up volumes: %w", err)
	}
	return vols, nil
}

// holdForVolumes records why the containers the sync would start wait: as
// with the kubelet, a pod whose volumes cannot be set up starts nothing,
// and its containers stay ContainerCreating; the message says which
// volume failed and why.
func holdForVolumes(actions *podActions, err error) {
	for _, cts := range actions.ContainersToStart {
		actions.Waiting[cts.Container.Name] = kubecontainer.Waiting{Reason: "ContainerCreating", Message: err.Error()}
	}
}

// addVolumeMounts adds the CRI mounts of c's volumeMounts to cfg, before
// the mounts already there. env is the container's resolved environment,
// which subPathExpr refers to. A mount that cannot be made (a subPath
// leaving its volume, say) is a configError.
func addVolumeMounts(ctx context.Context, cfg *runtimeapi.ContainerConfig, vols *volumes.PodVolumes, c *v1.Container) error {
	if vols == nil || len(c.VolumeMounts) == 0 {
		return nil
	}
	env := make(map[string]string, len(cfg.Envs))
	for _, kv := range cfg.Envs {
		env[kv.Key] = string(kv.Value)
	}
	mounts, err := vols.Mounts(ctx, c, env)
	if err != nil {
		return &configError{msg: err.Error()}
	}
	cfg.Mounts = append(mounts, cfg.Mounts...)
	return nil
}

// removePodDir removes <root-dir>/pods/<uid>: through the volume manager,
// which unmounts what is mounted there first, when there is one.
func (s *Syncer) removePodDir(ctx context.Context, uid types.UID) error {
	if s.cfg.Volumes != nil {
		return s.cfg.Volumes.TearDownPod(ctx, uid)
	}
	if err := os.RemoveAll(s.podDir(uid)); err != nil {
		return fmt.Errorf("remove %s: %w", s.podDir(uid), err)
	}
	return nil
}
