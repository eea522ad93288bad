package containerlogs

import (
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// runtimePods is what the runtime holds, as the PLEG cache last saw it.
type runtimePods interface {
	ForEach(f func(uid types.UID, st *kubecontainer.PodStatus))
}

// RunningIn returns a Config.Running that lists the running containers
// of rt, the PLEG cache, that have an absolute log path.
func RunningIn(rt runtimePods) func() []Container {
	return func() []Container {
		var out []Container
		rt.ForEach(func(_ types.UID, st *kubecontainer.PodStatus) {
			for _, cs := range st.Containers {
				if cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING && filepath.IsAbs(cs.LogPath) {
					out = append(out, Container{ID: cs.ID, LogPath: cs.LogPath})
				}
			}
		})
		return out
	}
}
