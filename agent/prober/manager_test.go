package prober

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	utilexec "k8s.io/utils/exec"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// execCall is one ExecSync the fake runtime received; the test answers it.
type execCall struct {
	containerID string
	cmd         string
	reply       chan error
}

// fakeRuntime hands every ExecSync to the test and waits for its answer.
type fakeRuntime struct{ calls chan execCall }

func (f *fakeRuntime) ExecSync(ctx context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	c := execCall{containerID: id, cmd: cmd[0], reply: make(chan error, 1)}
	select {
	case f.calls <- c:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	select {
	case err := <-c.reply:
		return nil, nil, err
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

var (
	exitFailure  = utilexec.CodeExitError{Err: errors.New("exit 1"), Code: 1}
	runtimeError = status.Error(codes.Unavailable, "runtime down")
)

type harness struct {
	t       *testing.T
	ctx     context.Context
	clock   *clocktesting.FakeClock
	rt      *fakeRuntime
	results chan Result
	m       *Manager
}

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func newHarness(t *testing.T) *harness {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := &harness{
		t:       t,
		ctx:     ctx,
		clock:   clocktesting.NewFakeClock(t0),
		rt:      &fakeRuntime{calls: make(chan execCall)},
		results: make(chan Result, 16),
	}
	h.m = New(Config{Runtime: h.rt, Clock: h.clock, Results: h.results})
	return h
}

// expectProbe waits for the next exec probe, checks what it runs, and
// answers it with err (nil: exit 0). It then waits until the worker has
// armed its timer for the next one, if it will.
func (h *harness) expectProbe(cmd, containerID string, err error) {
	h.t.Helper()
	select {
	case c := <-h.rt.calls:
		if c.cmd != cmd || c.containerID != containerID {
			h.t.Fatalf("probe ran %q in %q; want %q in %q", c.cmd, c.containerID, cmd, containerID)
		}
		c.reply <- err
	case <-time.After(waitLimit):
		h.t.Fatalf("no %q probe of %s ran", cmd, containerID)
	}
}

// expectNoProbe checks that no probe runs for a while (real time: the
// workers have nothing to wait for but the fake clock).
func (h *harness) expectNoProbe() {
	h.t.Helper()
	select {
	case c := <-h.rt.calls:
		h.t.Fatalf("unexpected %q probe of %s", c.cmd, c.containerID)
	case <-time.After(150 * time.Millisecond):
	}
}

// step advances the fake clock once every worker has armed its timer.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	polltest.True(h.t, waitLimit, "a worker to wait on the clock", h.clock.HasWaiters)
	h.clock.Step(d)
}

func (h *harness) expectResult(want Result) {
	h.t.Helper()
	select {
	case got := <-h.results:
		if got != want {
			h.t.Fatalf("result %+v; want %+v", got, want)
		}
	case <-time.After(waitLimit):
		h.t.Fatalf("no result; want %+v", want)
	}
}

func (h *harness) expectNoResult() {
	h.t.Helper()
	select {
	case got := <-h.results:
		h.t.Fatalf("unexpected result %+v", got)
	default:
	}
}

const uid = types.UID("pod-1")

// waitLimit bounds the real time a test waits for a worker to do what the
// fake clock made due. It is long because CI runs these tests beside the
// integration suite on two busy cores under the race detector (a 5 s
// limit failed there once); a passing test never waits for it.
const waitLimit = 30 * time.Second

func testPod(c v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: uid},
		Spec:       v1.PodSpec{Containers: []v1.Container{c}},
	}
}

func execProbe(cmd string, period, success, failure int32) *v1.Probe {
	return &v1.Probe{
		ProbeHandler:     v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{cmd}}},
		PeriodSeconds:    period,
		TimeoutSeconds:   1,
		SuccessThreshold: success,
		FailureThreshold: failure,
	}
}

// running pushes a status in which the container runs as id since
// startedAt.
func (h *harness) running(id string, startedAt time.Time) {
	h.m.SetPodStatus(uid, v1.PodStatus{
		PodIP: "10.0.0.2",
		ContainerStatuses: []v1.ContainerStatus{{
			Name:        "app",
			ContainerID: "containerd://" + id,
			State:       v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}},
		}},
	})
}

func TestLivenessFailureThresholdAndHold(t *testing.T) {
	h := newHarness(t)
	pod := testPod(v1.Container{Name: "app", LivenessProbe: execProbe("live", 10, 1, 3)})
	h.m.AddPod(h.ctx, pod)
	h.running("c1", t0)

	h.expectProbe("live", "c1", exitFailure)
	h.step(10 * time.Second)
	h.expectProbe("live", "c1", exitFailure)
	if _, failed := h.m.Unhealthy("c1"); failed {
		t.Fatal("unhealthy after 2 of 3 failures")
	}
	h.step(10 * time.Second)
	h.expectProbe("live", "c1", exitFailure)
	h.expectResult(Result{PodUID: uid, ContainerName: "app", ContainerID: "c1", Type: Liveness, Success: false})
	if probe, failed := h.m.Unhealthy("c1"); !failed || probe != "Liveness" {
		t.Fatalf("Unhealthy = %q, %v; want Liveness, true", probe, failed)
	}

	// On hold: the container is being killed.
	h.clock.Step(30 * time.Second)
	h.expectNoProbe()

	// Its replacement is probed from scratch; a passing liveness probe
	// is the initial state and sends nothing.
	h.running("c2", h.clock.Now())
	h.expectProbe("live", "c2", nil)
	if _, failed := h.m.Unhealthy("c2"); failed {
		t.Fatal("replacement unhealthy")
	}
	if _, failed := h.m.Unhealthy("c1"); failed {
		t.Fatal("result of the replaced container kept")
	}
	h.expectNoResult()
}

func TestReadinessThresholds(t *testing.T) {
	h := newHarness(t)
	c := v1.Container{Name: "app", ReadinessProbe: execProbe("ready", 5, 2, 1)}
	h.m.AddPod(h.ctx, testPod(c))
	h.running("c1", t0)

	h.expectProbe("ready", "c1", nil)
	if h.m.Ready(&c, "c1") {
		t.Fatal("ready after 1 of 2 successes")
	}
	h.step(5 * time.Second)
	h.expectProbe("ready", "c1", nil)
	h.expectResult(Result{PodUID: uid, ContainerName: "app", ContainerID: "c1", Type: Readiness, Success: true})
	if !h.m.Ready(&c, "c1") {
		t.Fatal("not ready after 2 successes")
	}
	h.step(5 * time.Second)
	h.expectProbe("ready", "c1", exitFailure)
	h.expectResult(Result{PodUID: uid, ContainerName: "app", ContainerID: "c1", Type: Readiness, Success: false})
	if h.m.Ready(&c, "c1") {
		t.Fatal("ready after a failure with failureThreshold 1")
	}
	// Readiness failures do not hold the worker: it goes on probing.
	h.step(5 * time.Second)
	h.expectProbe("ready", "c1", nil)
}

func TestInitialDelayCountsFromContainerStart(t *testing.T) {
	h := newHarness(t)
	p := execProbe("live", 10, 1, 3)
	p.InitialDelaySeconds = 30
	h.m.AddPod(h.ctx, testPod(v1.Container{Name: "app", LivenessProbe: p}))
	h.clock.Step(5 * time.Second)
	h.running("c1", t0.Add(time.Second)) // started 4s ago
	h.step(25 * time.Second)             // 1s before the delay ends
	h.expectNoProbe()
	h.step(time.Second)
	h.expectProbe("live", "c1", nil)
}

func TestStartupProbeGatesLivenessAndReadiness(t *testing.T) {
	h := newHarness(t)
	c := v1.Container{
		Name:           "app",
		StartupProbe:   execProbe("startup", 1, 1, 30),
		ReadinessProbe: execProbe("ready", 1, 1, 3),
	}
	h.m.AddPod(h.ctx, testPod(c))
	h.running("c1", t0)

	h.expectProbe("startup", "c1", exitFailure)
	if h.m.Started(&c, "c1") || h.m.Ready(&c, "c1") {
		t.Fatal("started or ready before the startup probe passed")
	}
	h.step(time.Second)
	h.expectProbe("startup", "c1", nil) // no readiness probe in between
	h.expectResult(Result{PodUID: uid, ContainerName: "app", ContainerID: "c1", Type: Startup, Success: true})
	if !h.m.Started(&c, "c1") {
		t.Fatal("not started after the startup probe passed")
	}
	// The status that says so wakes the readiness worker.
	h.running("c1", t0)
	h.expectProbe("ready", "c1", nil)
	h.expectResult(Result{PodUID: uid, ContainerName: "app", ContainerID: "c1", Type: Readiness, Success: true})
	if !h.m.Ready(&c, "c1") {
		t.Fatal("not ready")
	}
	// The startup probe is done; only readiness goes on.
	h.step(time.Second)
	h.expectProbe("ready", "c1", nil)
	h.expectNoProbe()
}

func TestStartupFailureIsUnhealthy(t *testing.T) {
	h := newHarness(t)
	h.m.AddPod(h.ctx, testPod(v1.Container{Name: "app", StartupProbe: execProbe("startup", 1, 1, 2)}))
	h.running("c1", t0)
	h.expectProbe("startup", "c1", exitFailure)
	h.step(time.Second)
	h.expectProbe("startup", "c1", exitFailure)
	h.expectResult(Result{PodUID: uid, ContainerName: "app", ContainerID: "c1", Type: Startup, Success: false})
	if probe, failed := h.m.Unhealthy("c1"); !failed || probe != "Startup" {
		t.Fatalf("Unhealthy = %q, %v", probe, failed)
	}
}

func TestRuntimeErrorsChangeNothing(t *testing.T) {
	h := newHarness(t)
	h.m.AddPod(h.ctx, testPod(v1.Container{Name: "app", LivenessProbe: execProbe("live", 1, 1, 1)}))
	h.running("c1", t0)
	for range 3 {
		h.expectProbe("live", "c1", runtimeError)
		h.step(time.Second)
	}
	if _, failed := h.m.Unhealthy("c1"); failed {
		t.Fatal("runtime errors counted as probe failures")
	}
	h.expectProbe("live", "c1", exitFailure)
	h.expectResult(Result{PodUID: uid, ContainerName: "app", ContainerID: "c1", Type: Liveness, Success: false})
}

func TestStoppedContainerIsNotProbed(t *testing.T) {
	h := newHarness(t)
	c := v1.Container{Name: "app", ReadinessProbe: execProbe("ready", 1, 1, 1)}
	h.m.AddPod(h.ctx, testPod(c))
	h.running("c1", t0)
	h.expectProbe("ready", "c1", nil)
	h.expectResult(Result{PodUID: uid, ContainerName: "app", ContainerID: "c1", Type: Readiness, Success: true})
	h.m.SetPodStatus(uid, v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
		Name:        "app",
		ContainerID: "containerd://c1",
		State:       v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}},
	}}})
	h.clock.Step(5 * time.Second)
	h.expectNoProbe()
	if h.m.Ready(&c, "c1") {
		t.Fatal("a stopped container keeps its readiness")
	}
}

func TestContainersRunningBeforeTheAgentAreSpread(t *testing.T) {
	h := newHarness(t)
	h.m.AddPod(h.ctx, testPod(v1.Container{Name: "app", LivenessProbe: execProbe("live", 10, 1, 3)}))
	h.running("c1", t0.Add(-time.Hour))
	h.expectNoProbe() // not at once: somewhere in the first period
	h.step(10 * time.Second)
	h.expectProbe("live", "c1", nil)
}

func TestAddPodKeepsUnchangedWorkersAndRemovePodStopsThem(t *testing.T) {
	h := newHarness(t)
	pod := testPod(v1.Container{Name: "app", ReadinessProbe: execProbe("ready", 10, 1, 1)})
	h.m.AddPod(h.ctx, pod)
	h.running("c1", t0)
	h.expectProbe("ready", "c1", nil)
	h.expectResult(Result{PodUID: uid, ContainerName: "app", ContainerID: "c1", Type: Readiness, Success: true})

	h.m.AddPod(h.ctx, pod.DeepCopy()) // same probes: nothing restarts
	h.expectNoProbe()

	changed := pod.DeepCopy()
	changed.Spec.Containers[0].ReadinessProbe = execProbe("ready2", 10, 1, 1)
	h.m.AddPod(h.ctx, changed)
	h.running("c1", t0) // the new worker learns of the container
	h.expectProbe("ready2", "c1", nil)

	h.m.RemovePod(uid)
	h.clock.Step(time.Minute)
	h.expectNoProbe()
	if h.m.Ready(&changed.Spec.Containers[0], "c1") {
		t.Fatal("results of a removed pod kept")
	}
}

func TestStopLivenessAndStartupKeepsReadiness(t *testing.T) {
	h := newHarness(t)
	pod := testPod(v1.Container{Name: "app", LivenessProbe: execProbe("live", 10, 1, 1), ReadinessProbe: execProbe("ready", 10, 1, 1)})
	pod.Spec.Containers[0].LivenessProbe.InitialDelaySeconds = 5
	h.m.AddPod(h.ctx, pod)
	h.running("c1", t0)
	h.expectProbe("ready", "c1", nil)
	h.m.StopLivenessAndStartup(uid)
	h.step(10 * time.Second)
	h.expectProbe("ready", "c1", nil)
	h.expectNoProbe()
}
