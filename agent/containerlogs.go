package agent

import (
	"context"
	"path/filepath"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/containerlogs"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// reopener is the CRI call log rotation needs.
type reopener interface {
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// newLogRotation rotates the logs of the running containers the PLEG cache
// knows, at --container-log-max-size keeping --container-log-max-files.
func (a *Agent) newLogRotation(rt reopener) *containerlogs.Manager {
	// Validate checked the quantity.
	size := resource.MustParse(a.cfg.ContainerLogMaxSize)
	return containerlogs.New(containerlogs.Config{
		Runtime:  rt,
		MaxSize:  size.Value(),
		MaxFiles: a.cfg.ContainerLogMaxFiles,
		Interval: a.cfg.ContainerLogMonitorInterval,
		Clock:    a.clock,
		Running: func() []containerlogs.Container {
			var out []containerlogs.Container
			a.cache.ForEach(func(_ types.UID, st *kubecontainer.PodStatus) {
				for _, cs := range st.Containers {
					if cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING && filepath.IsAbs(cs.LogPath) {
						out = append(out, containerlogs.Container{ID: cs.ID, LogPath: cs.LogPath})
					}
				}
			})
			return out
		},
	})
}
