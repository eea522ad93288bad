package containerlogs

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

type cachedPods map[types.UID]*kubecontainer.PodStatus

func (c cachedPods) ForEach(f func(types.UID, *kubecontainer.PodStatus)) {
	for uid, st := range c {
		f(uid, st)
	}
}

func TestRunningIn(t *testing.T) {
	running := runtimeapi.ContainerState_CONTAINER_RUNNING
	rt := cachedPods{"uid": {Containers: []*kubecontainer.ContainerStatus{
		{ID: "c1", State: running, LogPath: "/var/log/pods/ns_p_uid/app/0.log"},
		{ID: "c2", State: runtimeapi.ContainerState_CONTAINER_EXITED, LogPath: "/var/log/pods/ns_p_uid/app/1.log"},
		{ID: "c3", State: running, LogPath: "relative.log"},
		{ID: "c4", State: running},
	}}}
	var got []string
	for _, c := range RunningIn(rt)() {
		got = append(got, c.ID+" "+c.LogPath)
	}
	if want := []string{"c1 /var/log/pods/ns_p_uid/app/0.log"}; !slices.Equal(got, want) {
		t.Errorf("RunningIn = %q, want only the running container with an absolute log path %q", got, want)
	}
}
