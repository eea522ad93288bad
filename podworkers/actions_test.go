package podworkers

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
	created = runtimeapi.ContainerState_CONTAINER_CREATED
	unknown = runtimeapi.ContainerState_CONTAINER_UNKNOWN
)

// actionSummary is podActions in a form that compares well.
type actionSummary struct {
	KillPod         bool
	CreateSandbox   bool
	Attempt         uint32
	SandboxID       string
	Start           []string          // "name#restartCount", spec order
	Kill            map[string]string // container ID -> reason
	Remove          []string          // sorted
	Replace         []string          // removed before their replacement starts
	RemoveSandboxes []string          // sorted
	Waiting         map[string]string // name -> reason
	RequeueAfter    time.Duration
}

func summarize(a podActions) actionSummary {
	s := actionSummary{
		KillPod:       a.KillPod,
		CreateSandbox: a.CreateSandbox,
		Attempt:       a.Attempt,
		SandboxID:     a.SandboxID,
		Kill:          map[string]string{},
		Waiting:       map[string]string{},
		RequeueAfter:  a.RequeueAfter,
	}
	for _, c := range a.ContainersToStart {
		s.Start = append(s.Start, fmt.Sprintf("%s#%d", c.Container.Name, c.RestartCount))
	}
	for id, k := range a.ContainersToKill {
		s.Kill[id] = k.Reason
	}
	s.Remove = slices.Sorted(slices.Values(a.ContainersToRemove))
	s.Replace = a.ContainersToReplace
	s.RemoveSandboxes = slices.Sorted(slices.Values(a.SandboxesToRemove))
	for name, w := range a.Waiting {
		s.Waiting[name] = w.Reason
	}
	if len(s.Kill) == 0 {
		s.Kill = nil
	}
	if len(s.Waiting) == 0 {
		s.Waiting = nil
	}
	return s
}

func noBackOff(*v1.Container, *kubecontainer.ContainerStatus) time.Duration { return 0 }

func TestComputePodActions(t *testing.T) {
	web := newPod("web", []string{"app", "side"})
	never := newPod("web", []string{"app", "side"}, withRestartPolicy(v1.RestartPolicyNever))
	onFailure := newPod("web", []string{"app", "side"}, withRestartPolicy(v1.RestartPolicyOnFailure))
	hostNet := newPod("web", []string{"app"}, withHostNetwork())

	ready := func(p *v1.Pod) []*runtimeapi.PodSandboxStatus {
		return []*runtimeapi.PodSandboxStatus{sandboxStatus(p, "sb1", 0, true, t0)}
	}
	notReady := func(p *v1.Pod, attempt uint32) []*runtimeapi.PodSandboxStatus {
		return []*runtimeapi.PodSandboxStatus{sandboxStatus(p, "sb1", attempt, false, t0)}
	}
	staleHash := ready(web)
	staleHash[0].Annotations[kubecontainer.AnnotationSandboxHash] = "stale"
	noIP := ready(web)
	noIP[0].Network = nil
	hostNetNoIP := ready(hostNet)
	hostNetNoIP[0].Network = nil
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	changedHash := ctrStatus(web, "app", "app-2", running, 2, 0, at(10))
	changedHash.Hash = "old"

	creating := map[string]string{"app": "ContainerCreating", "side": "ContainerCreating"}
	tests := []struct {
		name      string
		pod       *v1.Pod
		status    *kubecontainer.PodStatus
		remaining func(*v1.Container, *kubecontainer.ContainerStatus) time.Duration
		want      actionSummary
	}{
		{
			name:   "no sandbox: create it and start every container",
			pod:    web,
			status: podStatus(web, nil),
			want:   actionSummary{CreateSandbox: true, Start: []string{"app#0", "side#0"}, Waiting: creating},
		},
		{
			name:   "sandbox not ready, nothing running: new sandbox with attempt+1",
			pod:    web,
			status: podStatus(web, notReady(web, 2), ctrStatus(web, "app", "app-3", exited, 3, 1, at(10)), ctrStatus(web, "side", "side-0", exited, 0, 0, at(9))),
			want:   actionSummary{CreateSandbox: true, Attempt: 3, Start: []string{"app#4", "side#1"}, Waiting: creating},
		},
		{
			name:   "sandbox not ready, a container still running: kill the pod first",
			pod:    web,
			status: podStatus(web, notReady(web, 0), ctrStatus(web, "app", "app-0", running, 0, 0, at(10))),
			want:   actionSummary{KillPod: true, CreateSandbox: true, Attempt: 1, Start: []string{"app#1", "side#0"}, Waiting: creating},
		},
		{
			name:   "sandbox hash changed: recreate",
			pod:    web,
			status: podStatus(web, staleHash, ctrStatus(web, "app", "app-0", running, 0, 0, at(10)), ctrStatus(web, "side", "side-0", running, 0, 0, at(9))),
			want:   actionSummary{KillPod: true, CreateSandbox: true, Attempt: 1, Start: []string{"app#1", "side#1"}, Waiting: creating},
		},
		{
			name:   "sandbox without IP: recreate",
			pod:    web,
			status: podStatus(web, noIP, ctrStatus(web, "app", "app-0", running, 0, 0, at(10)), ctrStatus(web, "side", "side-0", running, 0, 0, at(9))),
			want:   actionSummary{KillPod: true, CreateSandbox: true, Attempt: 1, Start: []string{"app#1", "side#1"}, Waiting: creating},
		},
		{
			name:   "host-network sandbox without IP: keep",
			pod:    hostNet,
			status: podStatus(hostNet, hostNetNoIP, ctrStatus(hostNet, "app", "app-0", running, 0, 0, at(10))),
			want:   actionSummary{SandboxID: "sb1"},
		},
		{
			name:   "Never pod whose sandbox died after its containers ran: nothing",
			pod:    never,
			status: podStatus(never, notReady(never, 0), ctrStatus(never, "app", "app-0", exited, 0, 0, at(10)), ctrStatus(never, "side", "side-0", exited, 0, 1, at(9))),
			want:   actionSummary{Attempt: 1},
		},
		{
			name:   "Never pod whose sandbox died before any container: new sandbox",
			pod:    never,
			status: podStatus(never, notReady(never, 0)),
			want:   actionSummary{CreateSandbox: true, Attempt: 1, Start: []string{"app#0", "side#0"}, Waiting: creating},
		},
		{
			name:   "OnFailure pod whose sandbox died: only the failed container comes back",
			pod:    onFailure,
			status: podStatus(onFailure, notReady(onFailure, 0), ctrStatus(onFailure, "app", "app-0", exited, 0, 0, at(10)), ctrStatus(onFailure, "side", "side-0", exited, 0, 2, at(9))),
			want:   actionSummary{CreateSandbox: true, Attempt: 1, Start: []string{"side#1"}, Waiting: map[string]string{"side": "ContainerCreating"}},
		},
		{
			name:   "running container with changed hash: kill and start with restartCount+1",
			pod:    web,
			status: podStatus(web, ready(web), changedHash, ctrStatus(web, "side", "side-0", running, 0, 0, at(9))),
			want:   actionSummary{SandboxID: "sb1", Start: []string{"app#3"}, Kill: map[string]string{"app-2": "spec changed"}},
		},
		{
			name:   "created but never started (agent died between create and start): removed, then replaced",
			pod:    web,
			status: podStatus(web, ready(web), ctrStatus(web, "app", "app-0", created, 0, 0, at(10)), ctrStatus(web, "side", "side-0", running, 0, 0, at(9))),
			want:   actionSummary{SandboxID: "sb1", Start: []string{"app#1"}, Replace: []string{"app-0"}},
		},
		{
			name:   "unknown state: stopped, removed, then replaced",
			pod:    web,
			status: podStatus(web, ready(web), ctrStatus(web, "app", "app-0", unknown, 0, 0, at(10)), ctrStatus(web, "side", "side-0", running, 0, 0, at(9))),
			want:   actionSummary{SandboxID: "sb1", Start: []string{"app#1"}, Replace: []string{"app-0"}, Kill: map[string]string{"app-0": "unknown state"}},
		},
		{
			name:   "everything running and unchanged: nothing",
			pod:    web,
			status: podStatus(web, ready(web), ctrStatus(web, "app", "app-0", running, 0, 0, at(10)), ctrStatus(web, "side", "side-0", running, 0, 0, at(9))),
			want:   actionSummary{SandboxID: "sb1"},
		},
		{
			name:   "container missing from a ready sandbox: start it",
			pod:    web,
			status: podStatus(web, ready(web), ctrStatus(web, "app", "app-0", running, 0, 0, at(10))),
			want:   actionSummary{SandboxID: "sb1", Start: []string{"side#0"}, Waiting: map[string]string{"side": "ContainerCreating"}},
		},
		{
			name: "back-off left: CrashLoopBackOff and requeue at the soonest",
			pod:  web,
			status: podStatus(web, ready(web),
				ctrStatus(web, "app", "app-2", exited, 2, 1, at(10)), ctrStatus(web, "side", "side-4", exited, 4, 1, at(9))),
			remaining: func(c *v1.Container, _ *kubecontainer.ContainerStatus) time.Duration {
				if c.Name == "app" {
					return 7 * time.Second
				}
				return 3 * time.Second
			},
			want: actionSummary{SandboxID: "sb1", Waiting: map[string]string{"app": "CrashLoopBackOff", "side": "CrashLoopBackOff"}, RequeueAfter: 3 * time.Second},
		},
		{
			name: "back-off over for one container only",
			pod:  web,
			status: podStatus(web, ready(web),
				ctrStatus(web, "app", "app-2", exited, 2, 1, at(10)), ctrStatus(web, "side", "side-4", exited, 4, 1, at(9))),
			remaining: func(c *v1.Container, _ *kubecontainer.ContainerStatus) time.Duration {
				if c.Name == "app" {
					return 7 * time.Second
				}
				return 0
			},
			want: actionSummary{SandboxID: "sb1", Start: []string{"side#5"}, Waiting: map[string]string{"app": "CrashLoopBackOff"}, RequeueAfter: 7 * time.Second},
		},
		{
			name: "running container not in spec: kill; dead one not in spec: remove",
			pod:  newPod("web", []string{"app"}),
			status: podStatus(web, ready(web),
				ctrStatus(web, "app", "app-0", running, 0, 0, at(10)),
				ctrStatus(web, "side", "side-1", running, 1, 0, at(9)),
				ctrStatus(web, "side", "side-0", exited, 0, 0, at(8)),
				ctrStatus(web, "gone", "gone-0", exited, 0, 0, at(7))),
			want: actionSummary{SandboxID: "sb1", Kill: map[string]string{"side-1": "not in spec"}, Remove: []string{"gone-0", "side-0"}},
		},
		{
			name: "dead containers pruned to one per name, the newest",
			pod:  web,
			status: podStatus(web, ready(web),
				ctrStatus(web, "side", "side-2", exited, 2, 0, at(30)),
				ctrStatus(web, "app", "app-3", running, 3, 0, at(20)),
				ctrStatus(web, "side", "side-1", exited, 1, 0, at(19)),
				ctrStatus(web, "app", "app-2", exited, 2, 1, at(15)),
				ctrStatus(web, "side", "side-0", exited, 0, 0, at(14)),
				ctrStatus(web, "app", "app-1", exited, 1, 1, at(10)),
				ctrStatus(web, "app", "app-0", exited, 0, 1, at(5))),
			want: actionSummary{SandboxID: "sb1", Start: []string{"side#3"}, Remove: []string{"app-0", "app-1", "side-0", "side-1"}},
		},
		{
			name: "stale sandboxes removed, the newest kept",
			pod:  web,
			status: podStatus(web, []*runtimeapi.PodSandboxStatus{
				sandboxStatus(web, "sb3", 2, true, at(30)),
				sandboxStatus(web, "sb2", 1, false, at(20)),
				sandboxStatus(web, "sb1", 0, false, at(10)),
			}, ctrStatus(web, "app", "app-0", running, 0, 0, at(31)), ctrStatus(web, "side", "side-0", running, 0, 0, at(32))),
			want: actionSummary{SandboxID: "sb3", RemoveSandboxes: []string{"sb1", "sb2"}},
		},
		{
			name: "newest sandbox dead: kept while a new one is made, older ones removed",
			pod:  web,
			status: podStatus(web, []*runtimeapi.PodSandboxStatus{
				sandboxStatus(web, "sb2", 1, false, at(20)),
				sandboxStatus(web, "sb1", 0, false, at(10)),
			}),
			want: actionSummary{CreateSandbox: true, Attempt: 2, Start: []string{"app#0", "side#0"}, Waiting: creating, RemoveSandboxes: []string{"sb1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			remaining := tt.remaining
			if remaining == nil {
				remaining = noBackOff
			}
			got := computePodActions(tt.pod, tt.status, remaining, nil)
			if s := summarize(got); !reflect.DeepEqual(s, tt.want) {
				t.Errorf("actions:\n got %+v\nwant %+v", s, tt.want)
			}
			wantChange := tt.want.KillPod || tt.want.CreateSandbox || len(tt.want.Start) > 0 || len(tt.want.Kill) > 0 ||
				len(tt.want.Remove) > 0 || len(tt.want.RemoveSandboxes) > 0
			if got.changesRuntime() != wantChange {
				t.Errorf("changesRuntime = %v, want %v", got.changesRuntime(), wantChange)
			}
		})
	}
}

func inSandbox(cs *kubecontainer.ContainerStatus, sandboxID string) *kubecontainer.ContainerStatus {
	cs.SandboxID = sandboxID
	return cs
}

func TestComputePodActionsInitContainers(t *testing.T) {
	withInits := func(rp v1.RestartPolicy) *v1.Pod {
		return newPod("web", []string{"app"}, withRestartPolicy(rp), func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init0", Image: "img-init0"}, {Name: "init1", Image: "img-init1"}}
		})
	}
	always := withInits(v1.RestartPolicyAlways)
	never := withInits(v1.RestartPolicyNever)
	ready := func(p *v1.Pod) []*runtimeapi.PodSandboxStatus {
		return []*runtimeapi.PodSandboxStatus{sandboxStatus(p, "sb2", 1, true, t0)}
	}
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	initializing := map[string]string{"app": "PodInitializing"}
	tests := []struct {
		name      string
		pod       *v1.Pod
		status    *kubecontainer.PodStatus
		remaining time.Duration
		want      actionSummary
	}{
		{
			name:   "no sandbox: new sandbox, first init container only",
			pod:    always,
			status: podStatus(always, nil),
			want:   actionSummary{CreateSandbox: true, Start: []string{"init0#0"}, Waiting: initializing},
		},
		{
			name: "sandbox died: init containers start over",
			pod:  always,
			status: podStatus(always, []*runtimeapi.PodSandboxStatus{sandboxStatus(always, "sb1", 0, false, t0)},
				inSandbox(ctrStatus(always, "app", "app-0", exited, 0, 1, at(30)), "sb1"),
				inSandbox(ctrStatus(always, "init1", "init1-0", exited, 0, 0, at(20)), "sb1"),
				inSandbox(ctrStatus(always, "init0", "init0-0", exited, 0, 0, at(10)), "sb1")),
			want: actionSummary{CreateSandbox: true, Attempt: 1, Start: []string{"init0#1"}, Waiting: initializing},
		},
		{
			name:   "ready sandbox, first init container not created",
			pod:    always,
			status: podStatus(always, ready(always)),
			want:   actionSummary{SandboxID: "sb2", Start: []string{"init0#0"}, Waiting: initializing},
		},
		{
			name:   "init container running: wait",
			pod:    always,
			status: podStatus(always, ready(always), inSandbox(ctrStatus(always, "init0", "init0-0", running, 0, 0, at(10)), "sb2")),
			want:   actionSummary{SandboxID: "sb2", Waiting: initializing},
		},
		{
			name:   "first succeeded: start the second",
			pod:    always,
			status: podStatus(always, ready(always), inSandbox(ctrStatus(always, "init0", "init0-0", exited, 0, 0, at(10)), "sb2")),
			want:   actionSummary{SandboxID: "sb2", Start: []string{"init1#0"}, Waiting: initializing},
		},
		{
			name: "succeeded only in the old sandbox: run again in this one",
			pod:  always,
			status: podStatus(always, ready(always),
				inSandbox(ctrStatus(always, "init0", "init0-0", exited, 0, 0, at(10)), "sb1")),
			want: actionSummary{SandboxID: "sb2", Start: []string{"init0#1"}, Waiting: initializing},
		},
		{
			name:   "failed under Always: restarted",
			pod:    always,
			status: podStatus(always, ready(always), inSandbox(ctrStatus(always, "init0", "init0-2", exited, 2, 1, at(10)), "sb2")),
			want:   actionSummary{SandboxID: "sb2", Start: []string{"init0#3"}, Waiting: initializing},
		},
		{
			name:      "failed under Always, backing off",
			pod:       always,
			status:    podStatus(always, ready(always), inSandbox(ctrStatus(always, "init0", "init0-2", exited, 2, 1, at(10)), "sb2")),
			remaining: 4 * time.Second,
			want:      actionSummary{SandboxID: "sb2", Waiting: map[string]string{"app": "PodInitializing", "init0": "CrashLoopBackOff"}, RequeueAfter: 4 * time.Second},
		},
		{
			name:   "failed under Never: the pod is finished, its sandbox stops",
			pod:    never,
			status: podStatus(never, ready(never), inSandbox(ctrStatus(never, "init0", "init0-0", exited, 0, 1, at(10)), "sb2")),
			want:   actionSummary{KillPod: true, SandboxID: "sb2", Waiting: initializing},
		},
		{
			name: "all succeeded: regular containers start; init containers are kept",
			pod:  always,
			status: podStatus(always, ready(always),
				inSandbox(ctrStatus(always, "init1", "init1-0", exited, 0, 0, at(20)), "sb2"),
				inSandbox(ctrStatus(always, "init0", "init0-0", exited, 0, 0, at(10)), "sb2")),
			want: actionSummary{SandboxID: "sb2", Start: []string{"app#0"}, Waiting: map[string]string{"app": "ContainerCreating"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := computePodActions(tt.pod, tt.status, func(*v1.Container, *kubecontainer.ContainerStatus) time.Duration { return tt.remaining }, nil)
			if s := summarize(got); !reflect.DeepEqual(s, tt.want) {
				t.Errorf("actions:\n got %+v\nwant %+v", s, tt.want)
			}
		})
	}
}

// An OnFailure pod whose containers all succeeded has nothing to run: the
// kubelet does not make a new sandbox for it when its sandbox dies (node
// reboot, runtime restart) - "We should not create a sandbox for a Pod if
// initialization is done and there is no container to start". Making one
// leaves an empty sandbox (with an IP) running until the pod is removed.
func TestComputePodActionsNoSandboxForFinishedOnFailurePod(t *testing.T) {
	pod := newPod("job", []string{"app", "side"}, withRestartPolicy(v1.RestartPolicyOnFailure))
	status := podStatus(pod, []*runtimeapi.PodSandboxStatus{sandboxStatus(pod, "sb1", 0, false, t0)},
		ctrStatus(pod, "app", "app-0", exited, 0, 0, t0.Add(2*time.Second)),
		ctrStatus(pod, "side", "side-1", exited, 1, 0, t0.Add(time.Second)))
	got := computePodActions(pod, status, noBackOff, nil)
	if got.CreateSandbox || len(got.ContainersToStart) != 0 || got.changesRuntime() {
		t.Errorf("actions = %+v, want nothing (no container to start, so no sandbox)", summarize(got))
	}
}

// A pod whose own status is terminal (the API says it finished) never
// runs again, whatever the runtime holds: it only has what still runs
// stopped and the dead containers beyond the last of each name removed.
func TestComputePodActionsTerminalPod(t *testing.T) {
	for _, phase := range []v1.PodPhase{v1.PodSucceeded, v1.PodFailed} {
		pod := newPod("job", []string{"app"}, withRestartPolicy(v1.RestartPolicyOnFailure))
		pod.Status.Phase = phase
		tests := []struct {
			name   string
			status *kubecontainer.PodStatus
			want   actionSummary
		}{
			{"nothing left in the runtime: no new sandbox", podStatus(pod, nil), actionSummary{}},
			{"last containers kept, older ones removed",
				podStatus(pod, []*runtimeapi.PodSandboxStatus{sandboxStatus(pod, "sb1", 0, false, t0)},
					ctrStatus(pod, "app", "app-2", exited, 2, 0, t0.Add(3*time.Second)),
					ctrStatus(pod, "app", "app-1", exited, 1, 1, t0.Add(2*time.Second))),
				actionSummary{Remove: []string{"app-1"}}},
			{"still running: stopped",
				podStatus(pod, []*runtimeapi.PodSandboxStatus{sandboxStatus(pod, "sb1", 0, true, t0)},
					ctrStatus(pod, "app", "app-0", running, 0, 0, t0)),
				actionSummary{KillPod: true}},
		}
		for _, tt := range tests {
			t.Run(string(phase)+": "+tt.name, func(t *testing.T) {
				if got := summarize(computePodActions(pod, tt.status, noBackOff, nil)); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("actions:\n got %+v\nwant %+v", got, tt.want)
				}
			})
		}
	}
}

func TestComputePodActionsExitedByRestartPolicy(t *testing.T) {
	tests := []struct {
		policy   v1.RestartPolicy
		exitCode int32
		restart  bool
	}{
		{v1.RestartPolicyAlways, 0, true},
		{v1.RestartPolicyAlways, 1, true},
		{v1.RestartPolicyOnFailure, 0, false},
		{v1.RestartPolicyOnFailure, 137, true},
		{v1.RestartPolicyNever, 0, false},
		{v1.RestartPolicyNever, 1, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s exit %d", tt.policy, tt.exitCode), func(t *testing.T) {
			pod := newPod("web", []string{"app"}, withRestartPolicy(tt.policy))
			status := podStatus(pod, []*runtimeapi.PodSandboxStatus{sandboxStatus(pod, "sb1", 0, true, t0)},
				ctrStatus(pod, "app", "app-4", exited, 4, tt.exitCode, t0))
			var asked bool
			got := summarize(computePodActions(pod, status, func(c *v1.Container, cs *kubecontainer.ContainerStatus) time.Duration {
				asked = true
				if c.Name != "app" || cs.ID != "app-4" {
					t.Errorf("remaining asked about %s/%s", c.Name, cs.ID)
				}
				return 0
			}, nil))
			want := actionSummary{SandboxID: "sb1"}
			if tt.restart {
				want.Start = []string{"app#5"}
			} else {
				// Nothing runs or will run again: the pod is finished
				// and its sandbox is stopped, as the kubelet does.
				want.KillPod = true
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("actions:\n got %+v\nwant %+v", got, want)
			}
			if asked != tt.restart {
				t.Errorf("back-off consulted = %v, want %v", asked, tt.restart)
			}
		})
	}
}

func TestComputePodActionsBackOffMessage(t *testing.T) {
	pod := newPod("web", []string{"app"})
	status := podStatus(pod, []*runtimeapi.PodSandboxStatus{sandboxStatus(pod, "sb1", 0, true, t0)},
		ctrStatus(pod, "app", "app-1", exited, 1, 2, t0))
	a := computePodActions(pod, status, func(*v1.Container, *kubecontainer.ContainerStatus) time.Duration {
		return 19*time.Second + 600*time.Millisecond
	}, nil)
	w := a.Waiting["app"]
	want := "back-off 20s restarting failed container=app pod=web_ns(uid-web)"
	if w.Reason != "CrashLoopBackOff" || w.Message != want {
		t.Errorf("waiting = %+v, want CrashLoopBackOff %q", w, want)
	}
	if !strings.Contains(w.Message, "container=app") {
		t.Errorf("message %q does not name the container", w.Message)
	}
}

func TestComputePodActionsSidecars(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := newPod("web", []string{"app"}, withRestartPolicy(v1.RestartPolicyNever), func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{
			{Name: "setup", Image: "img"},
			{Name: "proxy", Image: "img", RestartPolicy: &always},
			{Name: "late", Image: "img"},
		}
	})
	ready := []*runtimeapi.PodSandboxStatus{sandboxStatus(pod, "sb1", 0, true, t0)}
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	in := func(cs *kubecontainer.ContainerStatus) *kubecontainer.ContainerStatus { return inSandbox(cs, "sb1") }
	initializing := map[string]string{"app": "PodInitializing"}
	tests := []struct {
		name      string
		status    *kubecontainer.PodStatus
		remaining time.Duration
		want      actionSummary
	}{
		{
			name:   "after the first init container, the sidecar starts",
			status: podStatus(pod, ready, in(ctrStatus(pod, "setup", "setup-0", exited, 0, 0, at(10)))),
			want:   actionSummary{SandboxID: "sb1", Start: []string{"proxy#0"}, Waiting: initializing},
		},
		{
			name: "a running sidecar lets the next init container start",
			status: podStatus(pod, ready, in(ctrStatus(pod, "proxy", "proxy-0", running, 0, 0, at(20))),
				in(ctrStatus(pod, "setup", "setup-0", exited, 0, 0, at(10)))),
			want: actionSummary{SandboxID: "sb1", Start: []string{"late#0"}, Waiting: initializing},
		},
		{
			name: "init done: the regular containers start beside the sidecar",
			status: podStatus(pod, ready, in(ctrStatus(pod, "late", "late-0", exited, 0, 0, at(30))),
				in(ctrStatus(pod, "proxy", "proxy-0", running, 0, 0, at(20))),
				in(ctrStatus(pod, "setup", "setup-0", exited, 0, 0, at(10)))),
			want: actionSummary{SandboxID: "sb1", Start: []string{"app#0"}, Waiting: map[string]string{"app": "ContainerCreating"}},
		},
		{
			name: "a sidecar that exits is restarted even under restartPolicy Never",
			status: podStatus(pod, ready, in(ctrStatus(pod, "app", "app-0", running, 0, 0, at(40))),
				in(ctrStatus(pod, "late", "late-0", exited, 0, 0, at(30))),
				in(ctrStatus(pod, "proxy", "proxy-0", exited, 0, 0, at(20))),
				in(ctrStatus(pod, "setup", "setup-0", exited, 0, 0, at(10)))),
			want: actionSummary{SandboxID: "sb1", Start: []string{"proxy#1"}},
		},
		{
			name: "the app finished under Never: the pod is done, the sidecar is not restarted, the sandbox stops",
			status: podStatus(pod, ready, in(ctrStatus(pod, "app", "app-0", exited, 0, 0, at(40))),
				in(ctrStatus(pod, "late", "late-0", exited, 0, 0, at(30))),
				in(ctrStatus(pod, "proxy", "proxy-0", running, 0, 0, at(20))),
				in(ctrStatus(pod, "setup", "setup-0", exited, 0, 0, at(10)))),
			want: actionSummary{KillPod: true, SandboxID: "sb1"},
		},
		{
			name: "a crashing sidecar waits out its back-off",
			status: podStatus(pod, ready, in(ctrStatus(pod, "app", "app-0", running, 0, 0, at(40))),
				in(ctrStatus(pod, "late", "late-0", exited, 0, 0, at(30))),
				in(ctrStatus(pod, "proxy", "proxy-3", exited, 3, 1, at(20))),
				in(ctrStatus(pod, "setup", "setup-0", exited, 0, 0, at(10)))),
			remaining: 10 * time.Second,
			want:      actionSummary{SandboxID: "sb1", Waiting: map[string]string{"proxy": "CrashLoopBackOff"}, RequeueAfter: 10 * time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarize(computePodActions(pod, tt.status, func(*v1.Container, *kubecontainer.ContainerStatus) time.Duration { return tt.remaining }, nil))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("actions:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// fakeProbes answers for the prober: unhealthy maps a container ID to the
// probe it failed; notStarted lists container IDs whose startup probe has
// not passed.
type fakeProbes struct {
	unhealthy  map[string]string
	notStarted map[string]bool
}

func (f fakeProbes) Unhealthy(id string) (string, bool) {
	p, ok := f.unhealthy[id]
	return p, ok
}

func (f fakeProbes) Started(_ *v1.Container, id string) bool { return !f.notStarted[id] }

func TestComputePodActionsProbeFailures(t *testing.T) {
	pod := newPod("web", []string{"app", "other"})
	specOf(pod, "app").LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: ptr.To[int64](3)}
	specOf(pod, "other").StartupProbe = &v1.Probe{}
	ready := []*runtimeapi.PodSandboxStatus{sandboxStatus(pod, "sb1", 0, true, t0)}
	status := podStatus(pod, ready,
		inSandbox(ctrStatus(pod, "app", "app-0", running, 0, 0, t0), "sb1"),
		inSandbox(ctrStatus(pod, "other", "other-0", running, 0, 0, t0), "sb1"))

	got := computePodActions(pod, status, noBackOff, fakeProbes{unhealthy: map[string]string{"app-0": "Liveness", "other-0": "Startup"}})
	want := actionSummary{SandboxID: "sb1", Start: []string{"app#1", "other#1"}, Kill: map[string]string{"app-0": "Liveness probe failed", "other-0": "Startup probe failed"}}
	if s := summarize(got); !reflect.DeepEqual(s, want) {
		t.Fatalf("actions:\n got %+v\nwant %+v", s, want)
	}
	if g := got.ContainersToKill["app-0"].Grace; g == nil || *g != 3 {
		t.Errorf("liveness kill grace = %v; want the probe's 3s", g)
	}
	if g := got.ContainersToKill["other-0"].Grace; g != nil {
		t.Errorf("startup kill grace = %v; want the pod's", *g)
	}

	never := pod.DeepCopy()
	never.Spec.RestartPolicy = v1.RestartPolicyNever
	if s := summarize(computePodActions(never, status, noBackOff, fakeProbes{unhealthy: map[string]string{"app-0": "Liveness"}})); len(s.Start) != 0 || len(s.Kill) != 1 {
		t.Errorf("restartPolicy Never: %+v; want the container killed, not restarted", s)
	}

	healthy := computePodActions(pod, status, noBackOff, fakeProbes{})
	if healthy.changesRuntime() {
		t.Errorf("healthy containers: %+v", summarize(healthy))
	}
}

func TestComputePodActionsSidecarWaitsForItsStartupProbe(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "proxy", Image: "img", RestartPolicy: &always, StartupProbe: &v1.Probe{}}}
	})
	ready := []*runtimeapi.PodSandboxStatus{sandboxStatus(pod, "sb1", 0, true, t0)}
	status := podStatus(pod, ready, inSandbox(ctrStatus(pod, "proxy", "proxy-0", running, 0, 0, t0), "sb1"))

	waiting := computePodActions(pod, status, noBackOff, fakeProbes{notStarted: map[string]bool{"proxy-0": true}})
	want := actionSummary{SandboxID: "sb1", Waiting: map[string]string{"app": "PodInitializing"}}
	if s := summarize(waiting); !reflect.DeepEqual(s, want) {
		t.Fatalf("sidecar not started:\n got %+v\nwant %+v", s, want)
	}
	started := computePodActions(pod, status, noBackOff, fakeProbes{})
	if s := summarize(started); !reflect.DeepEqual(s.Start, []string{"app#0"}) {
		t.Fatalf("sidecar started: %+v; want app started", s)
	}
}
