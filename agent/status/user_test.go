package status

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// containerStatuses[].user is what the runtime reports of the newest
// container, as the kubelet copies it; nothing when the runtime says
// nothing (containerd 1.6).
func TestGenerateContainerUser(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app", "old")
	app := ctr("app", running, 0, 0, 1)
	app.User = &runtimeapi.ContainerUser{Linux: &runtimeapi.LinuxContainerUser{Uid: 1000, Gid: 3000, SupplementalGroups: []int64{3000, 4000}}}
	st := Generate(GenerateInput{Pod: pod, Runtime: runtimeStatus(true, nil, app, ctr("old", running, 0, 0, 1)), Now: metav1.NewTime(t0)})
	want := &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000}}}
	if got := st.ContainerStatuses[0].User; !reflect.DeepEqual(got, want) {
		t.Errorf("user of app = %+v, want %+v", got, want)
	}
	if got := st.ContainerStatuses[1].User; got != nil {
		t.Errorf("user of a container the runtime reports none of = %+v", got)
	}
}
