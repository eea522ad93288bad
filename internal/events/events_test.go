package events

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Container events carry the field path kubectl describe shows, by the
// kind of container.
func TestContainerFieldPath(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers:      []v1.Container{{Name: "init"}},
		Containers:          []v1.Container{{Name: "app"}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
	}}
	pod.Name, pod.Namespace, pod.UID = "web", "ns", "uid-1"
	for name, want := range map[string]string{"init": "spec.initContainers{init}", "app": "spec.containers{app}", "debug": "spec.ephemeralContainers{debug}"} {
		ref := Container(pod, &v1.Container{Name: name})
		if ref.FieldPath != want || ref.Kind != "Pod" || ref.Name != "web" || ref.Namespace != "ns" || ref.UID != "uid-1" {
			t.Errorf("Container(%s) = %+v, want field path %s of pod ns/web", name, ref, want)
		}
	}
	if n := Node("n1"); n.Kind != "Node" || n.Name != "n1" || n.UID != "n1" {
		t.Errorf("Node(n1) = %+v", n)
	}
}
