package podview

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/server"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

type fakePods []*v1.Pod

func (f fakePods) List() []*v1.Pod { return f }

type fakeStatuses map[types.UID]v1.PodStatus

func (f fakeStatuses) Get(uid types.UID) (v1.PodStatus, bool) {
	st, ok := f[uid]
	return st, ok
}

type fakeRuntime map[types.UID]*kubecontainer.PodStatus

func (f fakeRuntime) Get(uid types.UID) (*kubecontainer.PodStatus, error) { return f[uid], nil }

func (f fakeRuntime) ForEach(fn func(types.UID, *kubecontainer.PodStatus)) {
	for uid, st := range f {
		fn(uid, st)
	}
}

func pod(namespace, name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
	}
}

func TestPodsWithStatus(t *testing.T) {
	web, db := pod("ns", "web"), pod("ns", "db")
	v := New(Config{
		Pods:     fakePods{db, web},
		Statuses: fakeStatuses{web.UID: {Phase: v1.PodRunning}},
		Runtime:  fakeRuntime{},
	})
	got := v.PodsWithStatus()
	if len(got) != 2 || got[0].Status.Phase != v1.PodPending || got[1].Status.Phase != v1.PodRunning {
		t.Fatalf("PodsWithStatus = %+v, want db Pending (no status yet), web Running", got)
	}
	got[1].Status.Phase = v1.PodFailed
	if web.Status.Phase != "" {
		t.Error("PodsWithStatus handed out the pod itself, not a copy")
	}
}

// The instance whose log is served is chosen from the pod's status, as the
// kubelet chooses it.
func TestContainerLog(t *testing.T) {
	p := pod("ns", "web")
	terminated := func(id string) *v1.ContainerStateTerminated {
		return &v1.ContainerStateTerminated{ContainerID: "containerd://" + id}
	}
	status := func(cs v1.ContainerStatus) fakeStatuses {
		cs.Name = "app"
		return fakeStatuses{p.UID: {ContainerStatuses: []v1.ContainerStatus{cs}}}
	}
	running := v1.ContainerStatus{ContainerID: "containerd://c2", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}, LastTerminationState: v1.ContainerState{Terminated: terminated("c1")}}
	rt := fakeRuntime{p.UID: {Containers: []*kubecontainer.ContainerStatus{
		{ID: "c2", Name: "app", State: runtimeapi.ContainerState_CONTAINER_RUNNING, LogPath: "/logs/app/1.log"},
		{ID: "c1", Name: "app", State: runtimeapi.ContainerState_CONTAINER_EXITED, LogPath: "/logs/app/0.log"},
		{ID: "c0", Name: "app", State: runtimeapi.ContainerState_CONTAINER_EXITED, LogPath: ""},
	}}}
	tests := []struct {
		name      string
		namespace string
		pod       string
		container string
		previous  bool
		statuses  fakeStatuses
		wantPath  string
		wantRun   bool
		notFound  bool
		wantErr   string
	}{
		{name: "running", statuses: status(running), wantPath: "/logs/app/1.log", wantRun: true},
		{name: "previous", previous: true, statuses: status(running), wantPath: "/logs/app/0.log"},
		{name: "terminated", statuses: status(v1.ContainerStatus{State: v1.ContainerState{Terminated: terminated("c1")}}), wantPath: "/logs/app/0.log"},
		{name: "waiting to restart: the last run's", statuses: status(v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}, LastTerminationState: v1.ContainerState{Terminated: terminated("c1")}}), wantPath: "/logs/app/0.log"},
		{name: "no previous", previous: true, statuses: status(v1.ContainerStatus{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}, ContainerID: "containerd://c2"}), wantErr: "previous terminated container"},
		{name: "no status yet", statuses: fakeStatuses{}, wantErr: "waiting to start"},
		{name: "log file gone", statuses: status(v1.ContainerStatus{State: v1.ContainerState{Terminated: terminated("c0")}}), wantErr: "no log file"},
		{name: "unknown pod", pod: "nope", statuses: status(running), notFound: true},
		{name: "other namespace", namespace: "other", statuses: status(running), notFound: true},
		{name: "unknown container", container: "sidecar", statuses: status(running), notFound: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, name, container := "ns", "web", "app"
			if tt.namespace != "" {
				ns = tt.namespace
			}
			if tt.pod != "" {
				name = tt.pod
			}
			if tt.container != "" {
				container = tt.container
			}
			v := New(Config{Pods: fakePods{p}, Statuses: tt.statuses, Runtime: rt})
			lf, err := v.ContainerLog(ns, name, container, tt.previous)
			switch {
			case tt.notFound:
				if !errors.Is(err, server.ErrNotFound) {
					t.Errorf("err = %v, want ErrNotFound", err)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want one saying %q", err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("ContainerLog: %v", err)
			case lf.Path != tt.wantPath || lf.Running() != tt.wantRun:
				t.Errorf("log %s running %v, want %s running %v", lf.Path, lf.Running(), tt.wantPath, tt.wantRun)
			}
		})
	}
}

func TestRunningPods(t *testing.T) {
	v := New(Config{Pods: fakePods{}, Statuses: fakeStatuses{}, Runtime: fakeRuntime{
		"uid-b": {Name: "b", Namespace: "ns", Containers: []*kubecontainer.ContainerStatus{
			{ID: "c1", Name: "app", Image: "busybox", State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			{ID: "c0", Name: "old", Image: "busybox", State: runtimeapi.ContainerState_CONTAINER_EXITED},
		}},
		"uid-a": {Name: "a", Namespace: "ns", Containers: []*kubecontainer.ContainerStatus{
			{ID: "c2", Name: "app", Image: "nginx", State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		}},
		"uid-stopped": {Name: "stopped", Namespace: "ns"},
	}})
	got := v.RunningPods()
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("RunningPods = %+v, want a and b, sorted, without the stopped pod", got)
	}
	if cs := got[1].Status.ContainerStatuses; len(cs) != 1 || cs[0].ContainerID != "containerd://c1" || got[1].Spec.Containers[0].Image != "busybox" {
		t.Errorf("b = %+v, want only its running container", got[1])
	}
}

// An ephemeral container's log is found through the pod's
// ephemeralContainerStatuses.
func TestContainerLogEphemeral(t *testing.T) {
	p := pod("ns", "web")
	p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
	statuses := fakeStatuses{p.UID: {EphemeralContainerStatuses: []v1.ContainerStatus{{
		Name:        "debug",
		ContainerID: "containerd://d1",
		State:       v1.ContainerState{Running: &v1.ContainerStateRunning{}},
	}}}}
	rt := fakeRuntime{p.UID: {Containers: []*kubecontainer.ContainerStatus{
		{ID: "d1", Name: "debug", State: runtimeapi.ContainerState_CONTAINER_RUNNING, LogPath: "/logs/debug/0.log"},
	}}}
	v := New(Config{Pods: fakePods{p}, Statuses: statuses, Runtime: rt})
	lf, err := v.ContainerLog("ns", "web", "debug", false)
	if err != nil || lf.Path != "/logs/debug/0.log" || !lf.Running() {
		t.Errorf("ContainerLog: %+v %v, want /logs/debug/0.log, running", lf, err)
	}
}

// BenchmarkPodsWithStatus is what /pods asks of the view at 110 pods, each
// with a running container's status.
func BenchmarkPodsWithStatus(b *testing.B) {
	var pods fakePods
	statuses := fakeStatuses{}
	now := metav1.Now()
	for i := range 110 {
		p := pod("default", "web-"+strconv.Itoa(i))
		p.Annotations = map[string]string{"kubernetes.io/config.source": "file", "kubernetes.io/config.hash": "abc"}
		pods = append(pods, p)
		statuses[p.UID] = v1.PodStatus{Phase: v1.PodRunning, StartTime: &now,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}, {Type: v1.ContainersReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true, ContainerID: "containerd://0123",
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}}}}
	}
	v := New(Config{Pods: pods, Statuses: statuses, Runtime: fakeRuntime{}})
	b.ReportAllocs()
	for b.Loop() {
		if got := v.PodsWithStatus(); len(got) != len(pods) {
			b.Fatalf("%d pods, want %d", len(got), len(pods))
		}
	}
}
