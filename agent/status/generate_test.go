package status

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
	created = runtimeapi.ContainerState_CONTAINER_CREATED
)

func newPod(policy v1.RestartPolicy, names ...string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-web"},
		Spec:       v1.PodSpec{RestartPolicy: policy},
	}
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "img-" + n})
	}
	return p
}

// ctr is a runtime container; at orders containers (larger is newer).
func ctr(name string, state runtimeapi.ContainerState, exitCode int32, restarts, at int) *kubecontainer.ContainerStatus {
	base := t0.Add(time.Duration(at) * time.Minute)
	cs := &kubecontainer.ContainerStatus{
		ID:           fmt.Sprintf("%s-%d", name, restarts),
		Name:         name,
		State:        state,
		CreatedAt:    base,
		StartedAt:    base.Add(time.Second),
		ExitCode:     exitCode,
		RestartCount: restarts,
		ImageRef:     "sha256:" + name,
	}
	if state == exited {
		cs.FinishedAt = base.Add(2 * time.Second)
	}
	return cs
}

// runtimeStatus sorts containers newest first, as GetPodStatus does.
func runtimeStatus(sandboxReady bool, ips []string, containers ...*kubecontainer.ContainerStatus) *kubecontainer.PodStatus {
	slices.SortStableFunc(containers, func(a, b *kubecontainer.ContainerStatus) int { return b.CreatedAt.Compare(a.CreatedAt) })
	state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if sandboxReady {
		state = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &kubecontainer.PodStatus{
		ID:         "uid-web",
		IPs:        ips,
		Sandboxes:  []*runtimeapi.PodSandboxStatus{{Id: "sb", State: state}},
		Containers: containers,
	}
}

func crashLoop(names ...string) map[string]kubecontainer.Waiting {
	out := map[string]kubecontainer.Waiting{}
	for _, n := range names {
		out[n] = kubecontainer.Waiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=" + n}
	}
	return out
}

func TestGeneratePhase(t *testing.T) {
	tests := []struct {
		name       string
		pod        *v1.Pod
		containers []*kubecontainer.ContainerStatus
		waiting    map[string]kubecontainer.Waiting
		want       v1.PodPhase
	}{
		{"no containers yet", newPod(v1.RestartPolicyAlways, "app"), nil, nil, v1.PodPending},
		{"image pull failing", newPod(v1.RestartPolicyAlways, "app"), nil,
			map[string]kubecontainer.Waiting{"app": {Reason: "ErrImagePull"}}, v1.PodPending},
		{"created, not started", newPod(v1.RestartPolicyAlways, "app"), []*kubecontainer.ContainerStatus{ctr("app", created, 0, 0, 1)}, nil, v1.PodPending},
		{"one running, one still waiting", newPod(v1.RestartPolicyAlways, "app", "side"),
			[]*kubecontainer.ContainerStatus{ctr("app", running, 0, 0, 1)}, nil, v1.PodPending},
		{"all running", newPod(v1.RestartPolicyAlways, "app", "side"),
			[]*kubecontainer.ContainerStatus{ctr("app", running, 0, 0, 1), ctr("side", running, 0, 0, 2)}, nil, v1.PodRunning},
		{"Always, all exited", newPod(v1.RestartPolicyAlways, "app", "side"),
			[]*kubecontainer.ContainerStatus{ctr("app", exited, 0, 0, 1), ctr("side", exited, 1, 0, 2)}, nil, v1.PodRunning},
		{"Always, all succeeded", newPod(v1.RestartPolicyAlways, "app"),
			[]*kubecontainer.ContainerStatus{ctr("app", exited, 0, 0, 1)}, nil, v1.PodRunning},
		{"Always, crash looping", newPod(v1.RestartPolicyAlways, "app"),
			[]*kubecontainer.ContainerStatus{ctr("app", exited, 1, 3, 1)}, crashLoop("app"), v1.PodRunning},
		{"Never, all succeeded", newPod(v1.RestartPolicyNever, "app", "side"),
			[]*kubecontainer.ContainerStatus{ctr("app", exited, 0, 0, 1), ctr("side", exited, 0, 0, 2)}, nil, v1.PodSucceeded},
		{"Never, one failed", newPod(v1.RestartPolicyNever, "app", "side"),
			[]*kubecontainer.ContainerStatus{ctr("app", exited, 0, 0, 1), ctr("side", exited, 2, 0, 2)}, nil, v1.PodFailed},
		{"Never, one still running", newPod(v1.RestartPolicyNever, "app", "side"),
			[]*kubecontainer.ContainerStatus{ctr("app", exited, 1, 0, 1), ctr("side", running, 0, 0, 2)}, nil, v1.PodRunning},
		{"OnFailure, failed and backing off", newPod(v1.RestartPolicyOnFailure, "app"),
			[]*kubecontainer.ContainerStatus{ctr("app", exited, 1, 1, 1)}, crashLoop("app"), v1.PodRunning},
		{"OnFailure, failed", newPod(v1.RestartPolicyOnFailure, "app"),
			[]*kubecontainer.ContainerStatus{ctr("app", exited, 1, 1, 1)}, nil, v1.PodRunning},
		{"OnFailure, all succeeded", newPod(v1.RestartPolicyOnFailure, "app", "side"),
			[]*kubecontainer.ContainerStatus{ctr("app", exited, 0, 0, 1), ctr("side", exited, 0, 2, 2)}, nil, v1.PodSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Generate(GenerateInput{
				Pod:     tt.pod,
				Runtime: runtimeStatus(true, []string{"10.0.0.1"}, tt.containers...),
				Waiting: tt.waiting,
				Now:     metav1.NewTime(t0),
			})
			if st.Phase != tt.want {
				t.Errorf("phase = %s, want %s", st.Phase, tt.want)
			}
		})
	}
}

func TestGenerateTerminalPhaseSticks(t *testing.T) {
	pod := newPod(v1.RestartPolicyNever, "app")
	for _, terminal := range []v1.PodPhase{v1.PodSucceeded, v1.PodFailed} {
		t.Run(string(terminal), func(t *testing.T) {
			for _, rs := range []*kubecontainer.PodStatus{
				runtimeStatus(true, nil, ctr("app", running, 0, 0, 1)),
				runtimeStatus(true, nil),
				runtimeStatus(false, nil, ctr("app", exited, 1, 0, 1)),
				runtimeStatus(false, nil, ctr("app", exited, 0, 0, 1)),
			} {
				st := Generate(GenerateInput{Pod: pod, Runtime: rs, Old: v1.PodStatus{Phase: terminal}, Now: metav1.NewTime(t0)})
				if st.Phase != terminal {
					t.Errorf("phase = %s after %s with runtime %v, want %s", st.Phase, terminal, rs.Containers, terminal)
				}
			}
		})
	}
	// A non-terminal phase does not stick.
	st := Generate(GenerateInput{Pod: pod, Runtime: runtimeStatus(true, nil, ctr("app", running, 0, 0, 1)), Old: v1.PodStatus{Phase: v1.PodPending}})
	if st.Phase != v1.PodRunning {
		t.Errorf("phase = %s after Pending, want Running", st.Phase)
	}
}

func TestGenerateContainerStates(t *testing.T) {
	started, notStarted := true, false
	at := func(min int, sec int) metav1.Time {
		return metav1.NewTime(t0.Add(time.Duration(min)*time.Minute + time.Duration(sec)*time.Second))
	}
	oom := ctr("app", exited, 137, 0, 1)
	oom.Reason, oom.Message = "OOMKilled", "out of memory"
	tests := []struct {
		name        string
		runtimeName string
		containers  []*kubecontainer.ContainerStatus
		waiting     map[string]kubecontainer.Waiting
		want        v1.ContainerStatus
	}{
		{
			name:       "running",
			containers: []*kubecontainer.ContainerStatus{ctr("app", running, 0, 2, 1)},
			want: v1.ContainerStatus{
				Name: "app", Image: "img-app", ImageID: "sha256:app", ContainerID: "containerd://app-2",
				RestartCount: 2, Ready: true, Started: &started,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at(1, 1)}},
			},
		},
		{
			name:        "running, runtime named, with the previous exit as last state",
			runtimeName: "cri-o",
			containers:  []*kubecontainer.ContainerStatus{ctr("app", running, 0, 1, 2), ctr("app", exited, 1, 0, 1)},
			want: v1.ContainerStatus{
				Name: "app", Image: "img-app", ImageID: "sha256:app", ContainerID: "cri-o://app-1",
				RestartCount: 1, Ready: true, Started: &started,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at(2, 1)}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					ExitCode: 1, Reason: "Error", StartedAt: at(1, 1), FinishedAt: at(1, 2), ContainerID: "cri-o://app-0",
				}},
			},
		},
		{
			name:       "completed",
			containers: []*kubecontainer.ContainerStatus{ctr("app", exited, 0, 0, 1)},
			want: v1.ContainerStatus{
				Name: "app", Image: "img-app", ImageID: "sha256:app", ContainerID: "containerd://app-0", Started: &notStarted,
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					ExitCode: 0, Reason: "Completed", StartedAt: at(1, 1), FinishedAt: at(1, 2), ContainerID: "containerd://app-0",
				}},
			},
		},
		{
			name:       "error, with the exit before as last state",
			containers: []*kubecontainer.ContainerStatus{ctr("app", exited, 3, 1, 2), ctr("app", exited, 0, 0, 1)},
			want: v1.ContainerStatus{
				Name: "app", Image: "img-app", ImageID: "sha256:app", ContainerID: "containerd://app-1", RestartCount: 1, Started: &notStarted,
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					ExitCode: 3, Reason: "Error", StartedAt: at(2, 1), FinishedAt: at(2, 2), ContainerID: "containerd://app-1",
				}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					ExitCode: 0, Reason: "Completed", StartedAt: at(1, 1), FinishedAt: at(1, 2), ContainerID: "containerd://app-0",
				}},
			},
		},
		{
			name:       "runtime's reason and message kept",
			containers: []*kubecontainer.ContainerStatus{oom},
			want: v1.ContainerStatus{
				Name: "app", Image: "img-app", ImageID: "sha256:app", ContainerID: "containerd://app-0", Started: &notStarted,
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					ExitCode: 137, Reason: "OOMKilled", Message: "out of memory", StartedAt: at(1, 1), FinishedAt: at(1, 2), ContainerID: "containerd://app-0",
				}},
			},
		},
		{
			name:       "crash loop: waiting, the exit is the last state",
			containers: []*kubecontainer.ContainerStatus{ctr("app", exited, 1, 4, 1)},
			waiting:    crashLoop("app"),
			want: v1.ContainerStatus{
				Name: "app", Image: "img-app", ImageID: "sha256:app", ContainerID: "containerd://app-4", RestartCount: 4, Started: &notStarted,
				State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=app"}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					ExitCode: 1, Reason: "Error", StartedAt: at(1, 1), FinishedAt: at(1, 2), ContainerID: "containerd://app-4",
				}},
			},
		},
		{
			name: "never created",
			want: v1.ContainerStatus{
				Name: "app", Image: "img-app",
				State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			},
		},
		{
			name:    "never created, held back by an error",
			waiting: map[string]kubecontainer.Waiting{"app": {Reason: "ErrImagePull", Message: "pull failed"}},
			want: v1.ContainerStatus{
				Name: "app", Image: "img-app",
				State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "pull failed"}},
			},
		},
		{
			name:       "created, not started",
			containers: []*kubecontainer.ContainerStatus{ctr("app", created, 0, 0, 1)},
			want: v1.ContainerStatus{
				Name: "app", Image: "img-app", ImageID: "sha256:app", ContainerID: "containerd://app-0",
				State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			},
		},
		{
			name:       "running wins over a stale waiting reason",
			containers: []*kubecontainer.ContainerStatus{ctr("app", running, 0, 0, 1)},
			waiting:    map[string]kubecontainer.Waiting{"app": {Reason: "ErrImagePull"}},
			want: v1.ContainerStatus{
				Name: "app", Image: "img-app", ImageID: "sha256:app", ContainerID: "containerd://app-0", Ready: true, Started: &started,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at(1, 1)}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod(v1.RestartPolicyAlways, "app")
			st := Generate(GenerateInput{
				Pod:         pod,
				Runtime:     runtimeStatus(true, nil, tt.containers...),
				Waiting:     tt.waiting,
				RuntimeName: tt.runtimeName,
				Now:         metav1.NewTime(t0),
			})
			if len(st.ContainerStatuses) != 1 {
				t.Fatalf("%d container statuses, want 1", len(st.ContainerStatuses))
			}
			got := st.ContainerStatuses[0]
			if len(tt.containers) > 0 {
				// A container the runtime has shows the resources it
				// runs with: none, in a pod that sets none.
				tt.want.Resources = &v1.ResourceRequirements{}
			}
			if !equalContainerStatus(got, tt.want) {
				t.Errorf("container status:\n got %s\nwant %s", got.String(), tt.want.String())
			}
		})
	}
}

func equalContainerStatus(a, b v1.ContainerStatus) bool {
	// String() of the generated type covers every field, pointers included.
	return a.String() == b.String()
}

func TestGenerateContainerOrderFollowsSpec(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "b", "a", "c")
	st := Generate(GenerateInput{Pod: pod, Runtime: runtimeStatus(true, nil, ctr("a", running, 0, 0, 1), ctr("c", running, 0, 0, 2), ctr("gone", running, 0, 0, 3))})
	var names []string
	for _, cs := range st.ContainerStatuses {
		names = append(names, cs.Name)
	}
	if !slices.Equal(names, []string{"b", "a", "c"}) {
		t.Errorf("container statuses for %v, want b, a, c (spec order, runtime-only containers left out)", names)
	}
}

func TestGenerateIPs(t *testing.T) {
	tests := []struct {
		name        string
		hostNetwork bool
		hostIP      string
		runtimeIPs  []string
		wantPodIP   string
		wantPodIPs  []string
		wantHostIPs []string
	}{
		{"pod network", false, "192.0.2.1", []string{"10.0.0.1", "fd00::1"}, "10.0.0.1", []string{"10.0.0.1", "fd00::1"}, []string{"192.0.2.1"}},
		{"pod network, no IP yet", false, "192.0.2.1", nil, "", nil, []string{"192.0.2.1"}},
		{"host network", true, "192.0.2.1", nil, "192.0.2.1", []string{"192.0.2.1"}, []string{"192.0.2.1"}},
		{"host network, runtime reports an IP", true, "192.0.2.1", []string{"10.0.0.1"}, "192.0.2.1", []string{"192.0.2.1"}, []string{"192.0.2.1"}},
		{"host network, host IP unknown", true, "", nil, "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod(v1.RestartPolicyAlways, "app")
			pod.Spec.HostNetwork = tt.hostNetwork
			st := Generate(GenerateInput{Pod: pod, Runtime: runtimeStatus(true, tt.runtimeIPs), HostIP: tt.hostIP})
			var podIPs, hostIPs []string
			for _, ip := range st.PodIPs {
				podIPs = append(podIPs, ip.IP)
			}
			for _, ip := range st.HostIPs {
				hostIPs = append(hostIPs, ip.IP)
			}
			if st.PodIP != tt.wantPodIP || !slices.Equal(podIPs, tt.wantPodIPs) {
				t.Errorf("podIP %q podIPs %v, want %q %v", st.PodIP, podIPs, tt.wantPodIP, tt.wantPodIPs)
			}
			if st.HostIP != tt.hostIP || !slices.Equal(hostIPs, tt.wantHostIPs) {
				t.Errorf("hostIP %q hostIPs %v, want %q %v", st.HostIP, hostIPs, tt.hostIP, tt.wantHostIPs)
			}
		})
	}
}

type cond struct {
	status v1.ConditionStatus
	at     time.Time
}

func conditionsOf(st v1.PodStatus) (map[v1.PodConditionType]cond, []v1.PodConditionType) {
	out := map[v1.PodConditionType]cond{}
	var order []v1.PodConditionType
	for _, c := range st.Conditions {
		out[c.Type] = cond{c.Status, c.LastTransitionTime.Time}
		order = append(order, c.Type)
	}
	return out, order
}

func TestGenerateConditions(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app", "side")
	now1 := metav1.NewTime(t0)
	st1 := Generate(GenerateInput{
		Pod:     pod,
		Runtime: runtimeStatus(true, []string{"10.0.0.1"}, ctr("app", running, 0, 0, 1)),
		Now:     now1,
	})
	c1, order := conditionsOf(st1)
	wantOrder := []v1.PodConditionType{v1.PodScheduled, v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady}
	if !slices.Equal(order, wantOrder) {
		t.Errorf("conditions %v, want %v", order, wantOrder)
	}
	want1 := map[v1.PodConditionType]v1.ConditionStatus{
		v1.PodScheduled: v1.ConditionTrue, v1.PodReadyToStartContainers: v1.ConditionTrue, v1.PodInitialized: v1.ConditionTrue,
		v1.ContainersReady: v1.ConditionFalse, v1.PodReady: v1.ConditionFalse,
	}
	for typ, s := range want1 {
		if c1[typ].status != s || !c1[typ].at.Equal(t0) {
			t.Errorf("%s = %+v, want %s at %v", typ, c1[typ], s, t0)
		}
	}
	for _, c := range st1.Conditions {
		if (c.Type == v1.PodReady || c.Type == v1.ContainersReady) && c.Reason != "ContainersNotReady" {
			t.Errorf("%s false with reason %q, want ContainersNotReady", c.Type, c.Reason)
		}
	}

	// Later, both run: Ready flips and gets the new time; the rest keep
	// theirs.
	now2 := metav1.NewTime(t0.Add(time.Minute))
	st2 := Generate(GenerateInput{
		Pod:     pod,
		Runtime: runtimeStatus(true, []string{"10.0.0.1"}, ctr("app", running, 0, 0, 1), ctr("side", running, 0, 0, 2)),
		Old:     st1,
		Now:     now2,
	})
	c2, _ := conditionsOf(st2)
	for typ, want := range map[v1.PodConditionType]cond{
		v1.PodScheduled:              {v1.ConditionTrue, t0},
		v1.PodReadyToStartContainers: {v1.ConditionTrue, t0},
		v1.PodInitialized:            {v1.ConditionTrue, t0},
		v1.ContainersReady:           {v1.ConditionTrue, now2.Time},
		v1.PodReady:                  {v1.ConditionTrue, now2.Time},
	} {
		if c2[typ].status != want.status || !c2[typ].at.Equal(want.at) {
			t.Errorf("%s = %+v, want %+v", typ, c2[typ], want)
		}
	}
	for _, c := range st2.Conditions {
		if c.Reason != "" {
			t.Errorf("%s true with reason %q", c.Type, c.Reason)
		}
	}

	// Unchanged: every time is kept.
	st3 := Generate(GenerateInput{
		Pod:     pod,
		Runtime: runtimeStatus(true, []string{"10.0.0.1"}, ctr("app", running, 0, 0, 1), ctr("side", running, 0, 0, 2)),
		Old:     st2,
		Now:     metav1.NewTime(t0.Add(time.Hour)),
	})
	c3, _ := conditionsOf(st3)
	for typ := range c2 {
		if c3[typ] != c2[typ] {
			t.Errorf("%s changed from %+v to %+v with nothing changed", typ, c2[typ], c3[typ])
		}
	}

	// The sandbox goes away: ReadyToStartContainers and Ready turn false
	// now.
	now4 := metav1.NewTime(t0.Add(2 * time.Hour))
	st4 := Generate(GenerateInput{
		Pod:     pod,
		Runtime: runtimeStatus(false, nil, ctr("app", exited, 0, 0, 1), ctr("side", exited, 0, 0, 2)),
		Old:     st3,
		Now:     now4,
	})
	c4, _ := conditionsOf(st4)
	for typ, want := range map[v1.PodConditionType]cond{
		v1.PodScheduled:              {v1.ConditionTrue, t0},
		v1.PodReadyToStartContainers: {v1.ConditionFalse, now4.Time},
		v1.ContainersReady:           {v1.ConditionFalse, now4.Time},
		v1.PodReady:                  {v1.ConditionFalse, now4.Time},
	} {
		if c4[typ] != want {
			t.Errorf("%s = %+v, want %+v", typ, c4[typ], want)
		}
	}
}

func TestGenerateSucceededPodIsNotReady(t *testing.T) {
	pod := newPod(v1.RestartPolicyNever, "app")
	st := Generate(GenerateInput{Pod: pod, Runtime: runtimeStatus(true, nil, ctr("app", exited, 0, 0, 1)), Now: metav1.NewTime(t0)})
	if st.Phase != v1.PodSucceeded {
		t.Fatalf("phase = %s", st.Phase)
	}
	c, _ := conditionsOf(st)
	if c[v1.PodReady].status != v1.ConditionFalse || c[v1.ContainersReady].status != v1.ConditionFalse {
		t.Errorf("conditions of a succeeded pod: %+v", c)
	}
}

func TestGenerateStartTimeAndQOS(t *testing.T) {
	start := metav1.NewTime(t0.Add(-time.Hour))
	st := Generate(GenerateInput{
		Pod:     newPod(v1.RestartPolicyAlways, "app"),
		Runtime: runtimeStatus(true, nil),
		Old:     v1.PodStatus{StartTime: &start},
		Now:     metav1.NewTime(t0),
	})
	if st.StartTime == nil || !st.StartTime.Equal(&start) {
		t.Errorf("StartTime = %v, want the old %v", st.StartTime, start)
	}
	if st.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("QOSClass = %s, want BestEffort", st.QOSClass)
	}
}

func TestGenerateInitContainers(t *testing.T) {
	withInit := func(rp v1.RestartPolicy) *v1.Pod {
		p := newPod(rp, "app")
		p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "img-init"}}
		return p
	}
	tests := []struct {
		name            string
		pod             *v1.Pod
		containers      []*kubecontainer.ContainerStatus
		waiting         map[string]kubecontainer.Waiting
		wantPhase       v1.PodPhase
		wantInitialized v1.ConditionStatus
		wantInit        string // state of the init container
		wantApp         string // reason of app's waiting state, or its state
		wantInitReady   bool
	}{
		{"init not created", withInit(v1.RestartPolicyAlways), nil,
			map[string]kubecontainer.Waiting{"app": {Reason: "PodInitializing"}},
			v1.PodPending, v1.ConditionFalse, "waiting:PodInitializing", "waiting:PodInitializing", false},
		{"init running", withInit(v1.RestartPolicyAlways), []*kubecontainer.ContainerStatus{ctr("init", running, 0, 0, 1)},
			map[string]kubecontainer.Waiting{"app": {Reason: "PodInitializing"}},
			v1.PodPending, v1.ConditionFalse, "running", "waiting:PodInitializing", false},
		{"init crash looping", withInit(v1.RestartPolicyOnFailure), []*kubecontainer.ContainerStatus{ctr("init", exited, 1, 2, 1)},
			map[string]kubecontainer.Waiting{"app": {Reason: "PodInitializing"}, "init": {Reason: "CrashLoopBackOff"}},
			v1.PodPending, v1.ConditionFalse, "waiting:CrashLoopBackOff", "waiting:PodInitializing", false},
		{"init failed under Never", withInit(v1.RestartPolicyNever), []*kubecontainer.ContainerStatus{ctr("init", exited, 1, 0, 1)},
			map[string]kubecontainer.Waiting{"app": {Reason: "PodInitializing"}},
			v1.PodFailed, v1.ConditionFalse, "terminated:Error", "waiting:PodInitializing", false},
		{"initialized, app running", withInit(v1.RestartPolicyAlways),
			[]*kubecontainer.ContainerStatus{ctr("init", exited, 0, 0, 1), ctr("app", running, 0, 0, 2)}, nil,
			v1.PodRunning, v1.ConditionTrue, "terminated:Completed", "running", true},
		// Not created and nothing holds them back (no sync yet): both wait
		// as PodInitializing, as the kubelet reports a pod with init
		// containers.
		{"nothing created yet", withInit(v1.RestartPolicyNever), nil, nil,
			v1.PodPending, v1.ConditionFalse, "waiting:PodInitializing", "waiting:PodInitializing", false},
	}
	state := func(cs v1.ContainerStatus) string {
		switch {
		case cs.State.Running != nil:
			return "running"
		case cs.State.Terminated != nil:
			return "terminated:" + cs.State.Terminated.Reason
		case cs.State.Waiting != nil:
			return "waiting:" + cs.State.Waiting.Reason
		}
		return ""
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Generate(GenerateInput{Pod: tt.pod, Runtime: runtimeStatus(true, nil, tt.containers...), Waiting: tt.waiting, Now: metav1.NewTime(t0)})
			if st.Phase != tt.wantPhase {
				t.Errorf("phase = %s, want %s", st.Phase, tt.wantPhase)
			}
			if c, _ := conditionsOf(st); c[v1.PodInitialized].status != tt.wantInitialized {
				t.Errorf("Initialized = %s, want %s", c[v1.PodInitialized].status, tt.wantInitialized)
			}
			if len(st.InitContainerStatuses) != 1 || len(st.ContainerStatuses) != 1 {
				t.Fatalf("%d init and %d regular statuses, want 1 and 1", len(st.InitContainerStatuses), len(st.ContainerStatuses))
			}
			if got := state(st.InitContainerStatuses[0]); got != tt.wantInit {
				t.Errorf("init container %s, want %s", got, tt.wantInit)
			}
			if got := state(st.ContainerStatuses[0]); got != tt.wantApp {
				t.Errorf("app %s, want %s", got, tt.wantApp)
			}
			if got := st.InitContainerStatuses[0].Ready; got != tt.wantInitReady {
				t.Errorf("init container ready = %v, want %v", got, tt.wantInitReady)
			}
		})
	}
}

func TestGenerateSidecars(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		RestartPolicy:  v1.RestartPolicyNever,
		InitContainers: []v1.Container{{Name: "setup", Image: "img"}, {Name: "proxy", Image: "img", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app", Image: "img"}},
	}}
	sb := &runtimeapi.PodSandboxStatus{Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_READY, Metadata: &runtimeapi.PodSandboxMetadata{}}
	now := metav1.NewTime(time.Unix(100, 0))
	ctr := func(name string, state runtimeapi.ContainerState, exit int32) *kubecontainer.ContainerStatus {
		return &kubecontainer.ContainerStatus{ID: name + "-id", Name: name, State: state, ExitCode: exit, CreatedAt: time.Unix(50, 0), StartedAt: time.Unix(51, 0)}
	}
	gen := func(cs ...*kubecontainer.ContainerStatus) v1.PodStatus {
		return Generate(GenerateInput{Pod: pod, Runtime: &kubecontainer.PodStatus{Sandboxes: []*runtimeapi.PodSandboxStatus{sb}, Containers: cs}, Now: now})
	}
	cond := func(st v1.PodStatus, typ v1.PodConditionType) v1.ConditionStatus {
		for _, c := range st.Conditions {
			if c.Type == typ {
				return c.Status
			}
		}
		return ""
	}

	// The sidecar runs and the app runs: initialized, running, ready.
	st := gen(ctr("app", runtimeapi.ContainerState_CONTAINER_RUNNING, 0), ctr("proxy", runtimeapi.ContainerState_CONTAINER_RUNNING, 0), ctr("setup", runtimeapi.ContainerState_CONTAINER_EXITED, 0))
	if st.Phase != v1.PodRunning || cond(st, v1.PodInitialized) != v1.ConditionTrue || cond(st, v1.PodReady) != v1.ConditionTrue {
		t.Errorf("phase %s initialized %s ready %s, want Running True True", st.Phase, cond(st, v1.PodInitialized), cond(st, v1.PodReady))
	}
	// The sidecar runs but has not passed its startup probe: still
	// initializing, as the kubelet reports it.
	notStarted := Generate(GenerateInput{Pod: pod, Now: now, Probes: probes{started: map[string]bool{}},
		Runtime: &kubecontainer.PodStatus{Sandboxes: []*runtimeapi.PodSandboxStatus{sb}, Containers: []*kubecontainer.ContainerStatus{
			ctr("proxy", runtimeapi.ContainerState_CONTAINER_RUNNING, 0), ctr("setup", runtimeapi.ContainerState_CONTAINER_EXITED, 0),
		}}})
	if notStarted.Phase != v1.PodPending || cond(notStarted, v1.PodInitialized) != v1.ConditionFalse {
		t.Errorf("sidecar running, startup probe not passed: phase %s initialized %s, want Pending False", notStarted.Phase, cond(notStarted, v1.PodInitialized))
	}
	// The sidecar not yet started: still initializing.
	st = gen(ctr("setup", runtimeapi.ContainerState_CONTAINER_EXITED, 0))
	if st.Phase != v1.PodPending || cond(st, v1.PodInitialized) != v1.ConditionFalse {
		t.Errorf("before the sidecar: phase %s initialized %s, want Pending False", st.Phase, cond(st, v1.PodInitialized))
	}
	// The app succeeded under Never while the sidecar runs: Succeeded; a
	// sidecar's exit never fails the pod.
	st = gen(ctr("app", runtimeapi.ContainerState_CONTAINER_EXITED, 0), ctr("proxy", runtimeapi.ContainerState_CONTAINER_EXITED, 137), ctr("setup", runtimeapi.ContainerState_CONTAINER_EXITED, 0))
	if st.Phase != v1.PodSucceeded {
		t.Errorf("app done, sidecar killed: phase %s, want Succeeded", st.Phase)
	}
}

// probes answers Started and Ready from sets of container IDs.
type probes struct{ started, ready map[string]bool }

func (p probes) Started(_ *v1.Container, id string) bool { return p.started[id] }
func (p probes) Ready(_ *v1.Container, id string) bool   { return p.ready[id] }

func TestGenerateReadinessFromProbes(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "a", "b")
	rs := runtimeStatus(true, []string{"10.0.0.2"}, ctr("a", running, 0, 0, 1), ctr("b", running, 0, 0, 2))
	tests := []struct {
		name             string
		probes           probes
		wantA, wantReady bool
		wantStartedA     bool
	}{
		{"both ready", probes{started: map[string]bool{"a-0": true, "b-0": true}, ready: map[string]bool{"a-0": true, "b-0": true}}, true, true, true},
		{"one not ready", probes{started: map[string]bool{"a-0": true, "b-0": true}, ready: map[string]bool{"b-0": true}}, false, false, true},
		{"not started", probes{started: map[string]bool{"b-0": true}, ready: map[string]bool{"b-0": true}}, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Generate(GenerateInput{Pod: pod, Runtime: rs, Now: metav1.NewTime(t0), Probes: tt.probes})
			a := st.ContainerStatuses[0]
			if a.Ready != tt.wantA || *a.Started != tt.wantStartedA {
				t.Errorf("container a: ready %v started %v; want %v %v", a.Ready, *a.Started, tt.wantA, tt.wantStartedA)
			}
			conds, _ := conditionsOf(st)
			for _, ct := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
				if got := conds[ct].status == v1.ConditionTrue; got != tt.wantReady {
					t.Errorf("%s = %v; want %v", ct, got, tt.wantReady)
				}
			}
			if st.Phase != v1.PodRunning {
				t.Errorf("phase %s; readiness must not change it", st.Phase)
			}
		})
	}
}

// The status says which generation of the spec it was computed from, and
// so does each condition the agent owns.
func TestGenerateObservedGeneration(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app")
	pod.Generation = 7
	st := Generate(GenerateInput{Pod: pod, Runtime: runtimeStatus(true, nil, ctr("app", running, 0, 0, 1)), Now: metav1.NewTime(t0)})
	if st.ObservedGeneration != 7 {
		t.Errorf("observedGeneration = %d, want 7", st.ObservedGeneration)
	}
	if len(st.Conditions) == 0 {
		t.Fatal("no conditions")
	}
	for _, c := range st.Conditions {
		if c.ObservedGeneration != 7 {
			t.Errorf("condition %s observedGeneration = %d, want 7", c.Type, c.ObservedGeneration)
		}
	}
}

// The conditions carry the kubelet's reasons and messages, which the
// conformance tests compare.
func TestGenerateConditionReasons(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app", "side")
	pod.Spec.InitContainers = []v1.Container{{Name: "init1", Image: "img"}, {Name: "init2", Image: "img"}}
	tests := []struct {
		name                string
		containers          []*kubecontainer.ContainerStatus
		restart             v1.RestartPolicy
		wantInit, wantReady string // "status reason message"
		wantPhase           v1.PodPhase
	}{
		{"first init failing", []*kubecontainer.ContainerStatus{ctr("init1", exited, 1, 1, 1)}, v1.RestartPolicyAlways,
			"False ContainersNotInitialized containers with incomplete status: [init1 init2]",
			"False ContainersNotReady containers with unready status: [app side]", v1.PodPending},
		{"second init failed under Never", []*kubecontainer.ContainerStatus{ctr("init1", exited, 0, 0, 1), ctr("init2", exited, 1, 0, 2)}, v1.RestartPolicyNever,
			"False ContainersNotInitialized containers with incomplete status: [init2]",
			"False PodFailed ", v1.PodFailed},
		{"one app container not ready", []*kubecontainer.ContainerStatus{ctr("init1", exited, 0, 0, 1), ctr("init2", exited, 0, 0, 2), ctr("app", running, 0, 0, 3)}, v1.RestartPolicyAlways,
			"True  ",
			"False ContainersNotReady containers with unready status: [side]", v1.PodPending},
		{"succeeded", []*kubecontainer.ContainerStatus{ctr("init1", exited, 0, 0, 1), ctr("init2", exited, 0, 0, 2), ctr("app", exited, 0, 0, 3), ctr("side", exited, 0, 0, 4)}, v1.RestartPolicyNever,
			"True PodCompleted ",
			"False PodCompleted ", v1.PodSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pod.DeepCopy()
			p.Spec.RestartPolicy = tt.restart
			st := Generate(GenerateInput{Pod: p, Runtime: runtimeStatus(true, nil, tt.containers...), Now: metav1.NewTime(t0)})
			if st.Phase != tt.wantPhase {
				t.Errorf("phase %s, want %s", st.Phase, tt.wantPhase)
			}
			got := map[v1.PodConditionType]string{}
			for _, c := range st.Conditions {
				got[c.Type] = string(c.Status) + " " + c.Reason + " " + c.Message
			}
			if got[v1.PodInitialized] != tt.wantInit {
				t.Errorf("Initialized %q, want %q", got[v1.PodInitialized], tt.wantInit)
			}
			if got[v1.ContainersReady] != tt.wantReady || got[v1.PodReady] != tt.wantReady {
				t.Errorf("ContainersReady %q, Ready %q, want %q", got[v1.ContainersReady], got[v1.PodReady], tt.wantReady)
			}
		})
	}
}
