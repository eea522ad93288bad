package podworkers

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The pod's IP is read from the runtime when its containers need it: in a
// pod on its own network always (its /etc/hosts, and a postStart httpGet
// without a host, which goes to the pod's IP as the kubelet sends it); in a
// host-network pod only for env from status.podIP(s), its hooks going to
// the node's IP.
func TestNeedsPodIP(t *testing.T) {
	hook := func(host string) *v1.Lifecycle {
		return &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: host, Port: intstr.FromInt32(8080)}}}
	}
	envIP := []v1.EnvVar{{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}}}
	tests := []struct {
		name        string
		hostNetwork bool
		c           v1.Container
		want        bool
	}{
		{"pod network: nothing", false, v1.Container{Name: "c"}, true},
		{"pod network: postStart httpGet to the pod", false, v1.Container{Name: "c", Lifecycle: hook("")}, true},
		{"host network: nothing", true, v1.Container{Name: "c"}, false},
		{"host network: env status.podIP", true, v1.Container{Name: "c", Env: envIP}, true},
		{"host network: postStart httpGet (to the node)", true, v1.Container{Name: "c", Lifecycle: hook("")}, false},
		{"host network: postStart httpGet to a host", true, v1.Container{Name: "c", Lifecycle: hook("10.0.0.9")}, false},
		{"host network: postStart exec", true, v1.Container{Name: "c", Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: tt.hostNetwork}}
			if got := needsPodIP(pod, []containerToStart{{Container: &tt.c}}); got != tt.want {
				t.Errorf("needsPodIP = %v, want %v", got, tt.want)
			}
		})
	}
}
