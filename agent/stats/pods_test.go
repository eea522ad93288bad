package stats

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

type listedPods []*v1.Pod

func (l listedPods) List() []*v1.Pod { return l }

type cachedPods map[types.UID]*kubecontainer.PodStatus

func (c cachedPods) Get(uid types.UID) (*kubecontainer.PodStatus, error) { return c[uid], nil }

// namingCgroups finds the cgroups of the pods it has, under /kubepods.
type namingCgroups map[types.UID]string

func (f namingCgroups) PodCgroupParent(pod *v1.Pod) string { return "/kubepods/besteffort" }

func (f namingCgroups) FindPodCgroupOf(pod *v1.Pod) (string, bool) {
	p, ok := f[pod.UID]
	return p, ok
}

func (f namingCgroups) ContainerCgroup(parent, id string) string { return parent + "/" + id }

// countingCgroups counts the lookups of pods' cgroups.
type countingCgroups struct {
	namingCgroups
	finds int
}

func (f *countingCgroups) FindPodCgroupOf(pod *v1.Pod) (string, bool) {
	f.finds++
	return f.namingCgroups.FindPodCgroupOf(pod)
}

func TestPodLister(t *testing.T) {
	pod := func(name string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
	}
	web, stopped, unseen, flat := pod("web"), pod("stopped"), pod("unseen"), pod("flat")
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sandbox := func(id string, state runtimeapi.PodSandboxState) *runtimeapi.PodSandboxStatus {
		return &runtimeapi.PodSandboxStatus{Id: id, State: state, CreatedAt: created.UnixNano()}
	}
	running := func(id, sandbox string) *kubecontainer.ContainerStatus {
		return &kubecontainer.ContainerStatus{ID: id, Name: "app", Image: "busybox", SandboxID: sandbox, State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: created}
	}
	exited := running("c-exited", "sb2")
	exited.State = runtimeapi.ContainerState_CONTAINER_EXITED
	cg := &countingCgroups{namingCgroups: namingCgroups{web.UID: "/kubepods/burstable/podweb"}}
	runtime := cachedPods{}
	l := NewPodLister(PodListerDeps{
		Pods:    listedPods{web, stopped, unseen, flat},
		Runtime: runtime,
		Cgroups: cg,
	})
	for uid, st := range map[types.UID]*kubecontainer.PodStatus{
		// Newest sandbox first: the ready one is the pod's; a container
		// of the old sandbox, and one that exited, are not reported.
		web.UID: {
			Sandboxes:  []*runtimeapi.PodSandboxStatus{sandbox("sb2", runtimeapi.PodSandboxState_SANDBOX_READY), sandbox("sb1", runtimeapi.PodSandboxState_SANDBOX_NOTREADY)},
			Containers: []*kubecontainer.ContainerStatus{running("c2", "sb2"), running("c1", "sb1"), exited},
		},
		stopped.UID: {Sandboxes: []*runtimeapi.PodSandboxStatus{sandbox("sb3", runtimeapi.PodSandboxState_SANDBOX_NOTREADY)}},
		flat.UID: {
			Sandboxes:  []*runtimeapi.PodSandboxStatus{sandbox("sb4", runtimeapi.PodSandboxState_SANDBOX_READY)},
			Containers: []*kubecontainer.ContainerStatus{running("c4", "sb4")},
		},
	} {
		runtime[uid] = st
	}
	got := l.StatsPods()
	if len(got) != 2 {
		t.Fatalf("StatsPods = %+v, want web and flat", got)
	}
	w, f := got[0], got[1]
	if w.SandboxCgroup != "/kubepods/burstable/podweb/sb2" {
		t.Errorf("web's sandbox cgroup = %q, want its ready sandbox's", w.SandboxCgroup)
	}
	if w.UID != web.UID || w.Cgroup != "/kubepods/burstable/podweb" || !w.StartTime.Equal(created) ||
		len(w.Containers) != 1 || w.Containers[0].ID != "c2" || w.Containers[0].Cgroup != "/kubepods/burstable/podweb/c2" {
		t.Errorf("web = %+v, want its cgroup and only c2 below it", w)
	}
	// A pod whose cgroup is not found: no pod cgroup, containers below the
	// parent its spec gives.
	if f.UID != flat.UID || f.Cgroup != "" || len(f.Containers) != 1 || f.Containers[0].Cgroup != "/kubepods/besteffort/c4" {
		t.Errorf("flat = %+v, want no pod cgroup and c4 below the QoS parent", f)
	}
	// The web pod's cgroup was found once for its sandbox (flat's, not
	// found, is looked up at each call); a new sandbox looks again.
	if cg.finds != 2 {
		t.Errorf("%d lookups of pods' cgroups, want 2", cg.finds)
	}
	if again := l.StatsPods(); len(again) != 2 || again[0].Cgroup != w.Cgroup || cg.finds != 3 {
		t.Errorf("second StatsPods = %+v after %d lookups, want the same after 3", again, cg.finds)
	}
	// The same containers: the same list; one more: a new one.
	if again := l.StatsPods(); &again[0].Containers[0] != &w.Containers[0] {
		t.Errorf("web's containers made again while the same ran")
	}
	runtime[web.UID].Containers = append(runtime[web.UID].Containers, running("c3", "sb2"))
	if again := l.StatsPods(); len(again[0].Containers) != 2 || again[0].Containers[1].Cgroup != "/kubepods/burstable/podweb/c3" || again[0].SandboxCgroup != w.SandboxCgroup {
		t.Errorf("with a second container, web = %+v", again[0])
	}
	runtime[web.UID].Sandboxes = append([]*runtimeapi.PodSandboxStatus{sandbox("sb5", runtimeapi.PodSandboxState_SANDBOX_READY)}, runtime[web.UID].Sandboxes...)
	if again := l.StatsPods(); again[0].SandboxCgroup != "/kubepods/burstable/podweb/sb5" || len(again[0].Containers) != 0 || cg.finds != 7 {
		t.Errorf("with a new sandbox: %+v after %d lookups, want its cgroup looked up again (7)", again[0], cg.finds)
	}
	// A pod no longer listed is forgotten.
	l.deps.Pods = listedPods{flat}
	l.StatsPods()
	if len(l.found) != 0 {
		t.Errorf("cgroups found of %v kept, want none", l.found)
	}
}
