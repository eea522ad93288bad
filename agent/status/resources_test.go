package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func list(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// criResources are the cgroup values the kubelet's rules make of cpu
// request req and limit lim (millicores) and memory limit mem (bytes).
func criResources(req, lim, mem int64) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuQuota: -1, CpuShares: max(2, req*1024/1000), MemoryLimitInBytes: mem}
	if lim > 0 {
		r.CpuQuota = max(1000, lim*100)
	}
	return r
}

// The status of a container shows the resources allocated to it
// (allocatedResources: its requests) and those it runs with, as the
// kubelet derives them from the runtime's report, what was applied and
// the previous status.
func TestGenerateContainerResources(t *testing.T) {
	mi := int64(1 << 20)
	tests := []struct {
		name      string
		resources v1.ResourceRequirements
		state     runtimeapi.ContainerState
		runtime   *runtimeapi.LinuxContainerResources
		actuated  *v1.ResourceRequirements
		old       *v1.ResourceRequirements // the previous status, same container, running
		want      v1.ResourceRequirements
	}{
		{
			name:      "guaranteed, as the runtime reports it",
			resources: v1.ResourceRequirements{Requests: list("cpu", "20m", "memory", "35Mi"), Limits: list("cpu", "20m", "memory", "35Mi")},
			state:     running,
			runtime:   criResources(20, 20, 35*mi),
			actuated:  &v1.ResourceRequirements{Requests: list("cpu", "20m", "memory", "35Mi"), Limits: list("cpu", "20m", "memory", "35Mi")},
			want:      v1.ResourceRequirements{Requests: list("cpu", "20m", "memory", "35Mi"), Limits: list("cpu", "20m", "memory", "35Mi")},
		},
		{
			name:      "resize under way: the runtime's new cpu, the applied memory request",
			resources: v1.ResourceRequirements{Requests: list("cpu", "25m", "memory", "40Mi"), Limits: list("cpu", "35m", "memory", "50Mi")},
			state:     running,
			runtime:   criResources(20, 30, 45*mi),
			actuated:  &v1.ResourceRequirements{Requests: list("cpu", "20m", "memory", "35Mi"), Limits: list("cpu", "30m", "memory", "45Mi")},
			want:      v1.ResourceRequirements{Requests: list("cpu", "20m", "memory", "35Mi"), Limits: list("cpu", "30m", "memory", "45Mi")},
		},
		{
			name:      "memory request only: the runtime's minimum shares add no cpu",
			resources: v1.ResourceRequirements{Requests: list("memory", "35Mi")},
			state:     running,
			runtime:   criResources(0, 0, 0),
			actuated:  &v1.ResourceRequirements{Requests: list("memory", "35Mi")},
			want:      v1.ResourceRequirements{Requests: list("memory", "35Mi")},
		},
		{
			name:      "below what cgroups tell apart: the allocated values",
			resources: v1.ResourceRequirements{Requests: list("cpu", "1m"), Limits: list("cpu", "5m")},
			state:     running,
			runtime:   criResources(2, 10, 0),
			actuated:  &v1.ResourceRequirements{Requests: list("cpu", "2m"), Limits: list("cpu", "10m")},
			want:      v1.ResourceRequirements{Requests: list("cpu", "1m"), Limits: list("cpu", "5m")},
		},
		{
			name:      "the runtime reports nothing: what was applied",
			resources: v1.ResourceRequirements{Requests: list("cpu", "25m", "memory", "40Mi"), Limits: list("cpu", "35m", "memory", "50Mi")},
			state:     running,
			actuated:  &v1.ResourceRequirements{Requests: list("cpu", "20m", "memory", "35Mi"), Limits: list("cpu", "30m", "memory", "45Mi")},
			want:      v1.ResourceRequirements{Requests: list("cpu", "20m", "memory", "35Mi"), Limits: list("cpu", "30m", "memory", "45Mi")},
		},
		{
			name:      "the runtime misses the memory limit: the previous status's",
			resources: v1.ResourceRequirements{Limits: list("cpu", "30m", "memory", "50Mi")},
			state:     running,
			runtime:   &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuQuota: 3000, CpuShares: 30},
			old:       &v1.ResourceRequirements{Limits: list("cpu", "30m", "memory", "45Mi")},
			want:      v1.ResourceRequirements{Limits: list("cpu", "30m", "memory", "45Mi")},
		},
		{
			name:      "not running: the allocated values",
			resources: v1.ResourceRequirements{Requests: list("cpu", "25m"), Limits: list("cpu", "35m")},
			state:     exited,
			runtime:   criResources(20, 30, 0),
			want:      v1.ResourceRequirements{Requests: list("cpu", "25m"), Limits: list("cpu", "35m")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod(v1.RestartPolicyAlways, "app")
			pod.Spec.Containers[0].Resources = tt.resources
			c := ctr("app", tt.state, 0, 0, 1)
			c.Resources = tt.runtime
			in := GenerateInput{Pod: pod, Runtime: runtimeStatus(true, nil, c), Now: metav1.NewTime(t0)}
			if tt.actuated != nil {
				in.Actuated = func(name string) (v1.ResourceRequirements, bool) { return *tt.actuated, name == "app" }
			}
			if tt.old != nil {
				in.Old.ContainerStatuses = []v1.ContainerStatus{{
					Name: "app", ContainerID: "containerd://app-0", Resources: tt.old,
					State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
				}}
			}
			got := Generate(in).ContainerStatuses[0]
			if got.Resources == nil {
				t.Fatal("no resources in the status")
			}
			if !apiequality.Semantic.DeepEqual(tt.want, *got.Resources) {
				t.Errorf("resources = %s, want %s", got.Resources, &tt.want)
			}
			// e2e.test compares with go-cmp, where no list and an empty
			// one differ.
			if (got.Resources.Limits == nil) != (tt.want.Limits == nil) || (got.Resources.Requests == nil) != (tt.want.Requests == nil) {
				t.Errorf("resources = %#v: a list that should be missing is there, or the other way round", got.Resources)
			}
			if !apiequality.Semantic.DeepEqual(tt.resources.Requests, got.AllocatedResources) {
				t.Errorf("allocatedResources = %v, want %v", got.AllocatedResources, tt.resources.Requests)
			}
		})
	}
}

// A container the runtime has not made yet shows no resources, as with
// the kubelet.
func TestGenerateNoResourcesBeforeCreation(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].Resources.Requests = list("cpu", "100m")
	cs := Generate(GenerateInput{Pod: pod, Runtime: runtimeStatus(true, nil)}).ContainerStatuses[0]
	if cs.Resources != nil || cs.AllocatedResources != nil {
		t.Errorf("resources = %v, allocatedResources = %v; want none", cs.Resources, cs.AllocatedResources)
	}
}

// The resize conditions are reported after the others, until the pod has
// finished.
func TestGenerateResizeConditions(t *testing.T) {
	pod := newPod(v1.RestartPolicyNever, "app")
	pending := v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonDeferred, ObservedGeneration: 3}
	st := Generate(GenerateInput{Pod: pod, Runtime: runtimeStatus(true, nil, ctr("app", running, 0, 0, 1)), ResizeConditions: []v1.PodCondition{pending}})
	if last := st.Conditions[len(st.Conditions)-1]; last.Type != v1.PodResizePending || last.Reason != v1.PodReasonDeferred || last.ObservedGeneration != 3 {
		t.Errorf("last condition = %+v, want the PodResizePending given", last)
	}
	done := Generate(GenerateInput{Pod: pod, Runtime: runtimeStatus(true, nil, ctr("app", exited, 0, 0, 1)), ResizeConditions: []v1.PodCondition{pending}})
	for _, c := range done.Conditions {
		if c.Type == v1.PodResizePending {
			t.Errorf("a finished pod (%s) reports %s", done.Phase, c.Type)
		}
	}
}
