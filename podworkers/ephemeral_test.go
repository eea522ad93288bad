package podworkers

import (
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

// withEphemeral adds an ephemeral container called name (image
// "img-<name>") that targets target ("" for none).
func withEphemeral(name, target string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: "img-" + name, ImagePullPolicy: v1.PullIfNotPresent},
			TargetContainerName:      target,
		})
	}
}

func withInit(name string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: name, Image: "img-" + name})
	}
}

func TestComputePodActionsEphemeral(t *testing.T) {
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	web := newPod("web", []string{"app"}, withEphemeral("debug", "app"))
	untargeted := newPod("web", []string{"app"}, withEphemeral("debug", ""))
	never := newPod("web", []string{"app"}, withRestartPolicy(v1.RestartPolicyNever), withEphemeral("debug", "app"))
	initPod := newPod("web", []string{"app"}, withInit("setup"), withEphemeral("debug", ""))
	ready := func(p *v1.Pod) []*runtimeapi.PodSandboxStatus {
		return []*runtimeapi.PodSandboxStatus{sandboxStatus(p, "sb1", 0, true, t0)}
	}
	// A debug container recorded in the API status, whose instance the
	// runtime no longer holds (its sandbox was removed).
	recorded := newPod("web", []string{"app"}, withEphemeral("debug", "app"))
	recorded.Status.EphemeralContainerStatuses = []v1.ContainerStatus{{
		Name:        "debug",
		ContainerID: "containerd://debug-0",
		State:       v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}},
	}}
	// Added to the spec, never created: the API shows it waiting.
	waitingInAPI := newPod("web", []string{"app"}, withEphemeral("debug", "app"))
	waitingInAPI.Status.EphemeralContainerStatuses = []v1.ContainerStatus{{
		Name:  "debug",
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}},
	}}

	tests := []struct {
		name   string
		pod    *v1.Pod
		status *kubecontainer.PodStatus
		want   actionSummary
		target string // TargetID of the started ephemeral container
	}{
		{
			name:   "new in a running pod: started, in the target's PID namespace",
			pod:    web,
			status: podStatus(web, ready(web), ctrStatus(web, "app", "app-0", running, 0, 0, at(1))),
			want:   actionSummary{SandboxID: "sb1", Start: []string{"debug#0"}, Waiting: map[string]string{"debug": "ContainerCreating"}},
			target: "app-0",
		},
		{
			name:   "no target: started in a PID namespace of its own",
			pod:    untargeted,
			status: podStatus(untargeted, ready(untargeted), ctrStatus(untargeted, "app", "app-0", running, 0, 0, at(1))),
			want:   actionSummary{SandboxID: "sb1", Start: []string{"debug#0"}, Waiting: map[string]string{"debug": "ContainerCreating"}},
		},
		{
			name: "started before the regular containers of the same sync",
			pod:  web,
			status: podStatus(web, ready(web),
				ctrStatus(web, "app", "app-0", exited, 0, 1, at(1))),
			want:   actionSummary{SandboxID: "sb1", Start: []string{"debug#0", "app#1"}, Waiting: map[string]string{"debug": "ContainerCreating"}},
			target: "app-0",
		},
		{
			name: "running: kept, not killed as not in spec",
			pod:  web,
			status: podStatus(web, ready(web),
				ctrStatus(web, "debug", "debug-0", running, 0, 0, at(2)),
				ctrStatus(web, "app", "app-0", running, 0, 0, at(1))),
			want: actionSummary{SandboxID: "sb1"},
		},
		{
			name: "exited: never restarted, its last instance kept",
			pod:  web,
			status: podStatus(web, ready(web),
				ctrStatus(web, "debug", "debug-0", exited, 0, 1, at(2)),
				ctrStatus(web, "app", "app-0", running, 0, 0, at(1))),
			want: actionSummary{SandboxID: "sb1"},
		},
		{
			name: "created and never started: not replaced",
			pod:  web,
			status: podStatus(web, ready(web),
				ctrStatus(web, "debug", "debug-0", created, 0, 0, at(2)),
				ctrStatus(web, "app", "app-0", running, 0, 0, at(1))),
			want: actionSummary{SandboxID: "sb1"},
		},
		{
			name:   "gone from the runtime, recorded in the API status: never again",
			pod:    recorded,
			status: podStatus(recorded, ready(recorded), ctrStatus(recorded, "app", "app-0", running, 0, 0, at(1))),
			want:   actionSummary{SandboxID: "sb1"},
		},
		{
			name:   "waiting in the API status: started",
			pod:    waitingInAPI,
			status: podStatus(waitingInAPI, ready(waitingInAPI), ctrStatus(waitingInAPI, "app", "app-0", running, 0, 0, at(1))),
			want:   actionSummary{SandboxID: "sb1", Start: []string{"debug#0"}, Waiting: map[string]string{"debug": "ContainerCreating"}},
			target: "app-0",
		},
		{
			name:   "target never ran: waits with CreateContainerConfigError",
			pod:    web,
			status: podStatus(web, ready(web)),
			want:   actionSummary{SandboxID: "sb1", Start: []string{"app#0"}, Waiting: map[string]string{"app": "ContainerCreating", "debug": "CreateContainerConfigError"}},
		},
		{
			name:   "no sandbox: not started in the sandbox being created",
			pod:    web,
			status: podStatus(web, nil),
			want:   actionSummary{CreateSandbox: true, Start: []string{"app#0"}, Waiting: map[string]string{"app": "ContainerCreating"}},
		},
		{
			name: "while init containers run",
			pod:  initPod,
			status: podStatus(initPod, ready(initPod),
				inSandbox(ctrStatus(initPod, "setup", "setup-0", running, 0, 0, at(1)), "sb1")),
			want: actionSummary{SandboxID: "sb1", Start: []string{"debug#0"}, Waiting: map[string]string{"app": "PodInitializing", "debug": "ContainerCreating"}},
		},
		{
			name: "pod finished: the running one is killed with the pod, none started",
			pod:  newPod("web", []string{"app"}, withRestartPolicy(v1.RestartPolicyNever), withEphemeral("debug", "app"), withEphemeral("late", "")),
			status: podStatus(never, ready(never),
				ctrStatus(never, "debug", "debug-0", running, 0, 0, at(2)),
				ctrStatus(never, "app", "app-0", exited, 0, 0, at(1))),
			want: actionSummary{SandboxID: "sb1", KillPod: true},
		},
		{
			name: "removed from the spec (not possible in the API): killed",
			pod:  newPod("web", []string{"app"}),
			status: podStatus(web, ready(web),
				ctrStatus(web, "debug", "debug-0", running, 0, 0, at(2)),
				ctrStatus(web, "app", "app-0", running, 0, 0, at(1))),
			want: actionSummary{SandboxID: "sb1", Kill: map[string]string{"debug-0": "not in spec"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := computePodActions(tt.pod, tt.status, noBackOff, nil)
			if got := summarize(a); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			for _, cts := range a.ContainersToStart {
				if cts.Container.Name == "debug" && cts.TargetID != tt.target {
					t.Errorf("target ID %q, want %q", cts.TargetID, tt.target)
				}
			}
		})
	}
}

// An exited ephemeral container is kept by the container GC (one dead
// instance per name, as for the others); older ones go.
func TestDeadContainersToRemoveEphemeral(t *testing.T) {
	pod := newPod("web", []string{"app"}, withEphemeral("debug", ""))
	status := podStatus(pod, nil,
		ctrStatus(pod, "debug", "debug-1", exited, 0, 0, t0.Add(2*time.Second)),
		ctrStatus(pod, "debug", "debug-0", exited, 0, 0, t0.Add(time.Second)),
		ctrStatus(pod, "app", "app-0", running, 0, 0, t0))
	if got, want := deadContainersToRemove(pod, status), []string{"debug-0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("removed %v, want %v", got, want)
	}
}

func TestShareTargetPID(t *testing.T) {
	tests := []struct {
		name     string
		pod      *v1.Pod
		targetID string
		want     *runtimeapi.NamespaceOption
	}{
		{
			name:     "own PID namespace: joins the target's",
			pod:      newPod("web", []string{"app"}),
			targetID: "app-0",
			want:     &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_TARGET, Ipc: runtimeapi.NamespaceMode_POD, TargetId: "app-0"},
		},
		{
			name: "no target: unchanged",
			pod:  newPod("web", []string{"app"}),
			want: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
		},
		{
			name:     "shareProcessNamespace: the pod's, already shared with the target",
			pod:      newPod("web", []string{"app"}, func(p *v1.Pod) { p.Spec.ShareProcessNamespace = ptr.To(true) }),
			targetID: "app-0",
			want:     &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_POD, Ipc: runtimeapi.NamespaceMode_POD},
		},
		{
			name:     "hostPID: the node's",
			pod:      newPod("web", []string{"app"}, func(p *v1.Pod) { p.Spec.HostPID = true }),
			targetID: "app-0",
			want:     &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_POD},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &tt.pod.Spec.Containers[0]
			cfg, err := containerConfig(tt.pod, c, containerOpts{ImageRef: "sha256:x"})
			if err != nil {
				t.Fatal(err)
			}
			shareTargetPID(cfg, tt.targetID)
			if got := cfg.Linux.SecurityContext.NamespaceOptions; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("namespace options %+v, want %+v", got, tt.want)
			}
		})
	}
}

// An ephemeral container added to a running pod is created once, with its
// labels, log path and the target's PID namespace, and not again after it
// exits; killing the pod stops it.
func TestSyncPodEphemeral(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app", "img-side", "img-debug"})
	pod := webPod()
	f.mustSync(t, pod)

	updated := pod.DeepCopy()
	withEphemeral("debug", "app")(updated)
	f.resetCalls()
	f.mustSync(t, updated)
	if got, want := f.changes(), []string{"CreateContainer", "StartContainer"}; !slices.Equal(got, want) {
		t.Fatalf("runtime changes = %v, want %v", got, want)
	}
	created := f.createdConfigs()
	cfg := created[len(created)-1]
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if cfg.Metadata.Name != "debug" || cfg.Labels[kubecontainer.LabelContainerName] != "debug" || cfg.LogPath != "debug/0.log" {
		t.Errorf("debug's config: metadata %v, labels %v, log path %q", cfg.Metadata, cfg.Labels, cfg.LogPath)
	}
	if app := containerID(pod, 0, "app", 0); ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != app {
		t.Errorf("debug's PID namespace %v, target %q; want TARGET %q", ns.GetPid(), ns.GetTargetId(), app)
	}
	if got := runningNames(f.cached(t, updated)); !slices.Equal(got, []string{"app", "debug", "side"}) {
		t.Errorf("running containers = %v", got)
	}
	var events []string
	for _, e := range f.events.take() {
		if strings.Contains(e, " spec.ephemeralContainers{debug}: ") {
			events = append(events, strings.Fields(e)[1])
		}
	}
	if !slices.Contains(events, "Created") || !slices.Contains(events, "Started") {
		t.Errorf("events about debug: %v", events)
	}

	debugID := containerID(pod, 0, "debug", 0)
	f.exit(t, debugID, 0, t0, t0.Add(time.Second))
	f.observe(t, updated)
	f.resetCalls()
	f.mustSync(t, updated)
	if got := f.changes(); len(got) != 0 {
		t.Errorf("runtime changes after debug exited = %v, want none (never restarted)", got)
	}

	f.resetCalls()
	if _, err := f.s.SyncTerminatingPod(f.ctx, updated, f.cached(t, updated), 1); err != nil {
		t.Fatal(err)
	}
	if got := runningNames(f.cached(t, updated)); len(got) != 0 {
		t.Errorf("running after the pod was killed: %v", got)
	}
}
