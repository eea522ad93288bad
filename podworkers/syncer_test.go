package podworkers

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/allocation"
	"github.com/minikubelet/minikubelet/agent/status"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/pleg"
)

// spyRuntime is the fake runtime with what the fake does not keep recorded:
// stop timeouts and container configs. onStart, when set, runs after a
// successful StartContainer (to let a container exit at once); beforeStart
// runs at the start of StartContainer, with its context.
type spyRuntime struct {
	*critest.FakeRuntimeService
	mu          sync.Mutex
	stops       map[string]int64
	created     []*runtimeapi.ContainerConfig
	onStart     func(id string)
	beforeStart func(ctx context.Context)
	// resized are the UpdateContainerResources calls (resize_test.go).
	resized []resizeCall
}

var _ runtimeService = (*spyRuntime)(nil)

func (s *spyRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	s.mu.Lock()
	s.stops[id] = timeout
	s.mu.Unlock()
	return s.FakeRuntimeService.StopContainer(ctx, id, timeout)
}

func (s *spyRuntime) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	s.mu.Lock()
	s.created = append(s.created, cfg)
	s.mu.Unlock()
	return s.FakeRuntimeService.CreateContainer(ctx, sandboxID, cfg, sbCfg)
}

// ListPodSandbox fails once ctx is done, as a gRPC call does.
func (s *spyRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.FakeRuntimeService.ListPodSandbox(ctx, filter)
}

func (s *spyRuntime) StartContainer(ctx context.Context, id string) error {
	s.mu.Lock()
	before := s.beforeStart
	s.mu.Unlock()
	if before != nil {
		before(ctx)
	}
	if err := s.FakeRuntimeService.StartContainer(ctx, id); err != nil {
		return err
	}
	s.mu.Lock()
	hook := s.onStart
	s.mu.Unlock()
	if hook != nil {
		hook(id)
	}
	return nil
}

// statusSet is one SetPodStatus call.
type statusSet struct {
	pod     *v1.Pod
	status  *kubecontainer.PodStatus
	waiting map[string]kubecontainer.Waiting
}

type recordingStatus struct {
	mu      sync.Mutex
	sets    []statusSet
	removed []types.UID
}

var _ statusSetter = (*recordingStatus)(nil)

func (r *recordingStatus) SetPodStatus(pod *v1.Pod, status *kubecontainer.PodStatus, waiting map[string]kubecontainer.Waiting) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sets = append(r.sets, statusSet{pod, status, maps.Clone(waiting)})
}

func (r *recordingStatus) RemovePod(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = append(r.removed, uid)
}

func (r *recordingStatus) last(t *testing.T) statusSet {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sets) == 0 {
		t.Fatal("no status was reported")
	}
	return r.sets[len(r.sets)-1]
}

type syncerFixture struct {
	rt     *spyRuntime
	img    *critest.FakeImageService
	cache  *pleg.Cache
	status *recordingStatus
	clock  *testingclock.FakeClock
	events *recordedEvents
	s      *Syncer
	root   string
	logs   string
	ctx    context.Context
}

func newSyncer(t *testing.T) *syncerFixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	f := &syncerFixture{
		rt:     &spyRuntime{FakeRuntimeService: critest.NewFakeRuntimeService(), stops: map[string]int64{}},
		img:    critest.NewFakeImageService(),
		cache:  pleg.NewCache(),
		status: &recordingStatus{},
		clock:  testingclock.NewFakeClock(t0),
		events: &recordedEvents{},
		root:   t.TempDir(),
		logs:   t.TempDir(),
		ctx:    ctx,
	}
	f.cache.UpdateTime(t0.Add(-time.Second)) // as if a relist had run
	f.s = NewSyncer(SyncerConfig{
		Events:         f.events,
		Runtime:        f.rt,
		Images:         f.img,
		Cache:          f.cache,
		Status:         f.status,
		Clock:          f.clock,
		NodeName:       "node1",
		HostIP:         "192.0.2.1",
		RootDir:        f.root,
		PodLogsDir:     f.logs,
		BackOffInitial: 10 * time.Second,
		BackOffMax:     5 * time.Minute,
		BackOffReset:   10 * time.Minute,
		Resources:      allocation.New(ctx, allocation.Config{Path: filepath.Join(f.root, allocation.StateFile), Clock: f.clock}),
	})
	return f
}

// cached returns the cache's status of pod, as a worker would get it.
func (f *syncerFixture) cached(t *testing.T, pod *v1.Pod) *kubecontainer.PodStatus {
	t.Helper()
	st, err := f.cache.Get(pod.UID)
	if err != nil {
		t.Fatalf("cache.Get: %v", err)
	}
	return st
}

// observe reads the runtime into the cache, as a relist would.
func (f *syncerFixture) observe(t *testing.T, pod *v1.Pod) {
	t.Helper()
	f.clock.Step(time.Millisecond)
	now := f.clock.Now()
	st, err := kubecontainer.GetPodStatus(f.ctx, f.rt, pod.UID, now)
	if err != nil {
		t.Fatalf("GetPodStatus: %v", err)
	}
	f.cache.Set(pod.UID, st, nil, now)
}

// sync runs SyncPod against the cached status, a little later than the last
// call so that the status it writes is newer.
func (f *syncerFixture) sync(t *testing.T, pod *v1.Pod) (SyncResult, error) {
	t.Helper()
	f.clock.Step(time.Second)
	return f.s.SyncPod(f.ctx, pod, f.cached(t, pod))
}

func (f *syncerFixture) mustSync(t *testing.T, pod *v1.Pod) SyncResult {
	t.Helper()
	res, err := f.sync(t, pod)
	if err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	return res
}

func (f *syncerFixture) resetCalls() {
	f.rt.Lock()
	f.rt.Called = nil
	f.rt.Unlock()
	f.img.Lock()
	f.img.Called = nil
	f.img.Unlock()
}

var mutatingCalls = []string{"RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "CreateContainer", "StartContainer", "StopContainer", "RemoveContainer"}

// changes returns the runtime calls that change something, in order.
func (f *syncerFixture) changes() []string {
	out := []string{}
	for _, c := range f.rt.GetCalls() {
		if slices.Contains(mutatingCalls, c) {
			out = append(out, c)
		}
	}
	return out
}

func (f *syncerFixture) imageCalls() []string {
	f.img.Lock()
	defer f.img.Unlock()
	return slices.Clone(f.img.Called)
}

// exit makes a container exit with code, after running from started to
// finished.
func (f *syncerFixture) exit(t *testing.T, id string, code int32, started, finished time.Time) {
	t.Helper()
	f.rt.Lock()
	defer f.rt.Unlock()
	c, ok := f.rt.Containers[id]
	if !ok {
		t.Fatalf("no container %s", id)
	}
	c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.ExitCode = code
	c.StartedAt = started.UnixNano()
	c.FinishedAt = finished.UnixNano()
}

func (f *syncerFixture) containerIDs() []string {
	f.rt.Lock()
	defer f.rt.Unlock()
	return slices.Sorted(maps.Keys(f.rt.Containers))
}

func (f *syncerFixture) sandboxIDs() []string {
	f.rt.Lock()
	defer f.rt.Unlock()
	return slices.Sorted(maps.Keys(f.rt.Sandboxes))
}

func sandboxID(pod *v1.Pod, attempt uint32) string {
	return critest.BuildSandboxName(&runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt})
}

func containerID(pod *v1.Pod, sandboxAttempt uint32, name string, restarts uint32) string {
	return critest.BuildContainerName(&runtimeapi.ContainerMetadata{Name: name, Attempt: restarts}, sandboxID(pod, sandboxAttempt))
}

func runningNames(st *kubecontainer.PodStatus) []string {
	var out []string
	for _, c := range st.Containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func webPod(opts ...func(*v1.Pod)) *v1.Pod {
	pod := newPod("web", []string{"app", "side"}, opts...)
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	return pod
}

func TestSyncPodNewPod(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app", "img-side"})
	pod := webPod()

	res := f.mustSync(t, pod)
	want := []string{"RunPodSandbox", "CreateContainer", "StartContainer", "CreateContainer", "StartContainer"}
	if got := f.changes(); !slices.Equal(got, want) {
		t.Errorf("runtime changes = %v, want %v", got, want)
	}
	st := f.cached(t, pod)
	if !st.TimeStamp.Equal(f.clock.Now()) || !res.StatusTime.Equal(st.TimeStamp) {
		t.Errorf("cache entry at %v, StatusTime %v; want both at %v", st.TimeStamp, res.StatusTime, f.clock.Now())
	}
	if len(st.Sandboxes) != 1 || st.Sandboxes[0].State != runtimeapi.PodSandboxState_SANDBOX_READY || st.Sandboxes[0].Id != sandboxID(pod, 0) {
		t.Errorf("sandboxes = %v", st.Sandboxes)
	}
	if got := runningNames(st); !slices.Equal(got, []string{"app", "side"}) {
		t.Errorf("running containers = %v, want app and side", got)
	}
	for _, c := range st.Containers {
		if c.SandboxID != sandboxID(pod, 0) || c.Hash != kubecontainer.HashContainer(specOf(pod, c.Name)) || c.RestartCount != 0 {
			t.Errorf("container %s: sandbox %s, hash %s, restarts %d", c.Name, c.SandboxID, c.Hash, c.RestartCount)
		}
	}
	if hash := st.Sandboxes[0].Annotations[kubecontainer.AnnotationSandboxHash]; hash != kubecontainer.HashSandbox(pod) {
		t.Errorf("sandbox hash annotation = %q", hash)
	}

	last := f.status.last(t)
	if last.pod != pod || last.status != st || len(last.waiting) != 0 {
		t.Errorf("reported %v with waiting %v; want the cached status and nothing waiting", last.status, last.waiting)
	}
	podLogs := PodLogsDir(f.logs, pod)
	for _, dir := range []string{podLogs, filepath.Join(podLogs, "app"), filepath.Join(podLogs, "side"), filepath.Join(f.root, "pods", string(pod.UID))} {
		if !exists(dir) {
			t.Errorf("%s was not created", dir)
		}
	}
	// Env that refers to the pod IP sees the new sandbox's.
	f.rt.mu.Lock()
	cfg := f.rt.created[0]
	f.rt.mu.Unlock()
	if cfg.Metadata.Name != "app" || len(cfg.Envs) != 1 || string(cfg.Envs[0].Value) != critest.FakePodSandboxIPs[0] {
		t.Errorf("app's env = %v, want POD_IP=%s", cfg.Envs, critest.FakePodSandboxIPs[0])
	}
	if calls := f.imageCalls(); slices.Contains(calls, "PullImage") {
		t.Errorf("present images were pulled: %v", calls)
	}

	// In sync: a second SyncPod changes nothing and reads nothing.
	f.resetCalls()
	res, err := f.sync(t, pod)
	if err != nil {
		t.Fatalf("second SyncPod: %v", err)
	}
	if calls := f.rt.GetCalls(); len(calls) != 0 {
		t.Errorf("second SyncPod made runtime calls %v, want none", calls)
	}
	if calls := f.imageCalls(); len(calls) != 0 {
		t.Errorf("second SyncPod made image calls %v, want none", calls)
	}
	if !res.StatusTime.Equal(st.TimeStamp) || res.RequeueAfter != 0 {
		t.Errorf("second SyncPod result = %+v, want StatusTime %v", res, st.TimeStamp)
	}
	if f.status.last(t).status != st {
		t.Error("second SyncPod did not report the status it synced against")
	}
}

func TestSyncPodImages(t *testing.T) {
	tests := []struct {
		name      string
		policy    v1.PullPolicy
		present   bool
		wantPull  bool
		wantStart bool
		wantWait  string
	}{
		{"IfNotPresent, present", v1.PullIfNotPresent, true, false, true, ""},
		{"IfNotPresent, missing", v1.PullIfNotPresent, false, true, true, ""},
		{"Always, present", v1.PullAlways, true, true, true, ""},
		{"Always, missing", v1.PullAlways, false, true, true, ""},
		{"Never, present", v1.PullNever, true, false, true, ""},
		{"Never, missing", v1.PullNever, false, false, false, "ErrImageNeverPull"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSyncer(t)
			if tt.present {
				f.img.SetFakeImages([]string{"img-app"})
			}
			pod := newPod("web", []string{"app"})
			pod.Spec.Containers[0].ImagePullPolicy = tt.policy
			_, err := f.sync(t, pod)
			if (err == nil) != tt.wantStart {
				t.Errorf("SyncPod error = %v, want error: %v", err, !tt.wantStart)
			}
			if pulled := slices.Contains(f.imageCalls(), "PullImage"); pulled != tt.wantPull {
				t.Errorf("pulled = %v, want %v", pulled, tt.wantPull)
			}
			if got := runningNames(f.cached(t, pod)); slices.Equal(got, []string{"app"}) != tt.wantStart {
				t.Errorf("running = %v, want app running: %v", got, tt.wantStart)
			}
			if w := f.status.last(t).waiting["app"]; w.Reason != tt.wantWait {
				t.Errorf("waiting = %+v, want reason %q", w, tt.wantWait)
			}
			if tt.wantStart {
				f.rt.mu.Lock()
				img := f.rt.created[0].Image
				f.rt.mu.Unlock()
				if img.GetImage() != "img-app" || img.GetUserSpecifiedImage() != "img-app" {
					t.Errorf("container created from %v", img)
				}
			}
		})
	}
}

func TestSyncPodPullFailure(t *testing.T) {
	f := newSyncer(t)
	pod := newPod("web", []string{"app"})
	boom := errors.New("registry down")
	f.img.InjectError("PullImage", boom)

	// A failed pull is no sync error: the pull backs off and the worker
	// comes back when it ends (images_test.go tests the back-off).
	res, err := f.sync(t, pod)
	if err != nil || res.RequeueAfter != 10*time.Second {
		t.Fatalf("SyncPod = %+v, %v; want no error and a requeue after the 10s pull back-off", res, err)
	}
	if got := f.changes(); !slices.Equal(got, []string{"RunPodSandbox"}) {
		t.Errorf("runtime changes = %v, want only the sandbox", got)
	}
	w := f.status.last(t).waiting["app"]
	if w.Reason != "ErrImagePull" || !strings.Contains(w.Message, "registry down") || !strings.Contains(w.Message, "img-app") {
		t.Errorf("waiting = %+v, want ErrImagePull naming the image and the cause", w)
	}

	// A retry after the back-off that fails again reports the error again.
	f.resetCalls()
	f.img.InjectError("PullImage", boom)
	f.clock.Step(10 * time.Second)
	_, _ = f.sync(t, pod) // fails as above
	if w := f.status.last(t).waiting["app"]; w.Reason != "ErrImagePull" {
		t.Errorf("second failure: waiting = %+v", w)
	}

	// Once the pull works the container runs and the error is gone.
	f.clock.Step(20 * time.Second) // the second back-off
	f.mustSync(t, pod)
	if got := runningNames(f.cached(t, pod)); !slices.Equal(got, []string{"app"}) {
		t.Errorf("running = %v", got)
	}
	if w, ok := f.status.last(t).waiting["app"]; ok {
		t.Errorf("waiting after a successful start = %+v", w)
	}
	if got := f.sandboxIDs(); len(got) != 1 {
		t.Errorf("sandboxes = %v, want the one made by the first sync", got)
	}
}

// A container that exits before the status is read back (a short job) must
// not be reported with the pull error of an earlier attempt: the error is
// stale once the container started.
func TestSyncPodStaleWaitingAfterFastExit(t *testing.T) {
	f := newSyncer(t)
	pod := newPod("job", []string{"app"}, withRestartPolicy(v1.RestartPolicyNever))
	f.img.InjectError("PullImage", errors.New("registry down"))
	_, _ = f.sync(t, pod) // the pull fails
	if w := f.status.last(t).waiting["app"]; w.Reason != "ErrImagePull" {
		t.Fatalf("waiting after the failed pull = %+v", w)
	}

	f.rt.onStart = func(id string) {
		now := f.clock.Now()
		f.exit(t, id, 0, now, now)
	}
	f.clock.Step(10 * time.Second) // the pull back-off
	f.mustSync(t, pod)
	st := f.cached(t, pod)
	if cs := st.FindContainer("app"); cs == nil || cs.State != runtimeapi.ContainerState_CONTAINER_EXITED || cs.ExitCode != 0 {
		t.Fatalf("app = %+v, want exited 0", cs)
	}
	if w, ok := f.status.last(t).waiting["app"]; ok {
		t.Errorf("container ran and succeeded, but is still reported waiting with %+v", w)
	}
	// Nor do later syncs.
	f.mustSync(t, pod)
	last := f.status.last(t)
	if w, ok := last.waiting["app"]; ok {
		t.Errorf("next sync: still reported waiting with %+v", w)
	}
	// What a user sees: the job that succeeded is reported Failed, for
	// good (a terminal phase sticks).
	api := status.Generate(status.GenerateInput{Pod: pod, Runtime: last.status, Waiting: last.waiting})
	if api.Phase != v1.PodSucceeded {
		t.Errorf("API phase = %s, want Succeeded", api.Phase)
	}
}

func TestSyncPodSandboxFailure(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app"})
	pod := newPod("web", []string{"app"})
	boom := errors.New("cni failed")
	f.rt.InjectError("RunPodSandbox", boom)
	_, err := f.sync(t, pod)
	if !errors.Is(err, boom) {
		t.Fatalf("SyncPod error = %v, want %v", err, boom)
	}
	if got := f.changes(); !slices.Equal(got, []string{"RunPodSandbox"}) {
		t.Errorf("runtime changes = %v", got)
	}
	if w := f.status.last(t).waiting["app"]; w.Reason != "ContainerCreating" || !strings.Contains(w.Message, "cni failed") {
		t.Errorf("waiting = %+v, want ContainerCreating saying why", w)
	}
	// While the next attempt runs, and fails again, the reason stays.
	f.status.mu.Lock()
	from := len(f.status.sets)
	f.status.mu.Unlock()
	f.rt.InjectError("RunPodSandbox", boom)
	if _, err := f.sync(t, pod); !errors.Is(err, boom) {
		t.Fatalf("second SyncPod error = %v, want %v", err, boom)
	}
	f.status.mu.Lock()
	for _, set := range f.status.sets[from:] {
		if w := set.waiting["app"]; !strings.Contains(w.Message, "cni failed") {
			t.Errorf("reported during the retry: %+v, want the last failure's reason", w)
		}
	}
	f.status.mu.Unlock()
	f.mustSync(t, pod)
	if got := runningNames(f.cached(t, pod)); !slices.Equal(got, []string{"app"}) {
		t.Errorf("after retry running = %v", got)
	}
	if w, ok := f.status.last(t).waiting["app"]; ok {
		t.Errorf("waiting %+v once the container runs", w)
	}
}

// A pod killed while one of its containers starts: the StartContainer call
// is not cancelled (containerd 2.1 cancelled mid-start keeps a task it
// cannot delete), the container it started is left to the termination, the
// sync creates no further container once it sees the kill, and what it did
// is in the cache, so that the kill's sync need not wait for a relist.
func TestSyncPodKilledDuringStart(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app", "img-side"})
	pod := newPod("web", []string{"app", "side"})
	ctx, kill := context.WithCancel(f.ctx)
	var startCtxErr error
	f.rt.mu.Lock()
	f.rt.beforeStart = func(startCtx context.Context) {
		kill() // the pod is killed while its first container starts
		startCtxErr = startCtx.Err()
	}
	f.rt.mu.Unlock()
	f.clock.Step(time.Second)
	res, err := f.s.SyncPod(ctx, pod, f.cached(t, pod))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("SyncPod error = %v, want context.Canceled", err)
	}
	if st := f.cached(t, pod); !res.StatusTime.Equal(st.TimeStamp) || !slices.Equal(runningNames(st), []string{"app"}) {
		t.Errorf("after the killed sync: StatusTime %v, cache at %v running %v; want the cache to hold what the sync did", res.StatusTime, st.TimeStamp, runningNames(st))
	}
	if startCtxErr != nil {
		t.Errorf("StartContainer's context was cancelled by the kill: %v", startCtxErr)
	}
	want := []string{"RunPodSandbox", "CreateContainer", "StartContainer"}
	if got := f.changes(); !slices.Equal(got, want) {
		t.Errorf("runtime changes = %v, want %v (nothing more after the kill)", got, want)
	}
}

func TestSyncPodRestartAndBackOff(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app"})
	pod := newPod("web", []string{"app"})
	f.mustSync(t, pod)
	c0 := containerID(pod, 0, "app", 0)

	// First exit: restarted at once, with restartCount 1.
	now := f.clock.Now()
	f.exit(t, c0, 1, now.Add(-5*time.Second), now)
	f.observe(t, pod)
	f.resetCalls()
	f.mustSync(t, pod)
	if got := f.changes(); !slices.Equal(got, []string{"CreateContainer", "StartContainer"}) {
		t.Errorf("after the first exit: changes = %v", got)
	}
	c1 := containerID(pod, 0, "app", 1)
	st := f.cached(t, pod)
	if cs := st.FindContainer("app"); cs == nil || cs.ID != c1 || cs.RestartCount != 1 || cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("app after restart = %+v, want %s running with restartCount 1", cs, c1)
	}
	f.rt.mu.Lock()
	logPath := f.rt.created[len(f.rt.created)-1].LogPath
	f.rt.mu.Unlock()
	if logPath != "app/1.log" {
		t.Errorf("LogPath = %q, want app/1.log", logPath)
	}

	// Second exit: CrashLoopBackOff for 10s.
	now = f.clock.Now()
	f.exit(t, c1, 1, now.Add(-5*time.Second), now)
	f.observe(t, pod)
	f.resetCalls()
	res := f.mustSync(t, pod) // 1s after the exit
	// Only container GC: the first instance goes, one dead one stays.
	if got := f.changes(); !slices.Equal(got, []string{"RemoveContainer"}) {
		t.Errorf("in back-off: changes = %v, want the oldest dead container removed", got)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > 10*time.Second {
		t.Errorf("RequeueAfter = %v, want the back-off left (at most 10s)", res.RequeueAfter)
	}
	if w := f.status.last(t).waiting["app"]; w.Reason != "CrashLoopBackOff" {
		t.Errorf("waiting = %+v, want CrashLoopBackOff", w)
	}

	// After the back-off: restarted with restartCount 2.
	f.clock.Step(res.RequeueAfter)
	f.resetCalls()
	f.mustSync(t, pod)
	if got := f.changes(); !slices.Equal(got, []string{"CreateContainer", "StartContainer"}) {
		t.Errorf("after the back-off: changes = %v", got)
	}
	if cs := f.cached(t, pod).FindContainer("app"); cs == nil || cs.RestartCount != 2 {
		t.Errorf("app = %+v, want restartCount 2", cs)
	}
	if w, ok := f.status.last(t).waiting["app"]; ok {
		t.Errorf("still waiting after the restart: %+v", w)
	}
}

func TestSyncPodSpecChange(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app", "img-side", "img-app2"})
	pod := webPod()
	f.mustSync(t, pod)

	edited := pod.DeepCopy()
	edited.Spec.Containers[0].Image = "img-app2"
	f.resetCalls()
	f.mustSync(t, edited)
	if got := f.changes(); !slices.Equal(got, []string{"StopContainer", "CreateContainer", "StartContainer"}) {
		t.Errorf("changes = %v, want app stopped and started again", got)
	}
	f.rt.mu.Lock()
	grace, stopped := f.rt.stops[containerID(pod, 0, "app", 0)]
	f.rt.mu.Unlock()
	if !stopped || grace != 30 {
		t.Errorf("old app stopped = %v with grace %d, want 30", stopped, grace)
	}
	st := f.cached(t, edited)
	if cs := st.FindContainer("app"); cs == nil || cs.RestartCount != 1 || cs.Image != "img-app2" || cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("app = %+v, want img-app2 running with restartCount 1", cs)
	}
	if cs := st.FindContainer("side"); cs == nil || cs.ID != containerID(pod, 0, "side", 0) || cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("side = %+v, want the original still running", cs)
	}
}

func TestSyncPodSandboxChange(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app"})
	pod := newPod("web", []string{"app"})
	f.mustSync(t, pod)

	edited := pod.DeepCopy()
	edited.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
	f.resetCalls()
	f.mustSync(t, edited)
	want := []string{"StopContainer", "StopPodSandbox", "RunPodSandbox", "CreateContainer", "StartContainer"}
	if got := f.changes(); !slices.Equal(got, want) {
		t.Errorf("changes = %v, want %v", got, want)
	}
	st := f.cached(t, edited)
	if len(st.Sandboxes) != 2 || st.Sandboxes[0].Id != sandboxID(pod, 1) || st.Sandboxes[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandboxes = %v, want attempt 1 ready first", st.Sandboxes)
	}
	if cs := st.FindContainer("app"); cs == nil || cs.SandboxID != sandboxID(pod, 1) || cs.RestartCount != 1 {
		t.Errorf("app = %+v, want restartCount 1 in the new sandbox", cs)
	}

	// The next sync stops and removes the old sandbox and nothing else.
	f.resetCalls()
	f.mustSync(t, edited)
	if got := f.changes(); !slices.Equal(got, []string{"StopPodSandbox", "RemovePodSandbox"}) {
		t.Errorf("changes = %v, want the stale sandbox removed", got)
	}
	if got := f.sandboxIDs(); !slices.Equal(got, []string{sandboxID(pod, 1)}) {
		t.Errorf("sandboxes left = %v", got)
	}
}

func TestSyncTerminatingAndTerminatedPod(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app", "img-side"})
	pod := webPod()
	f.mustSync(t, pod)

	f.resetCalls()
	f.clock.Step(time.Second)
	res, err := f.s.SyncTerminatingPod(f.ctx, pod, f.cached(t, pod), 7)
	if err != nil {
		t.Fatalf("SyncTerminatingPod: %v", err)
	}
	if got, want := f.changes(), []string{"StopContainer", "StopContainer", "StopPodSandbox"}; !slices.Equal(got, want) {
		t.Errorf("changes = %v, want %v", got, want)
	}
	f.rt.mu.Lock()
	stops := maps.Clone(f.rt.stops)
	f.rt.mu.Unlock()
	wantStops := map[string]int64{containerID(pod, 0, "app", 0): 7, containerID(pod, 0, "side", 0): 7}
	if !maps.Equal(stops, wantStops) {
		t.Errorf("stop timeouts = %v, want %v", stops, wantStops)
	}
	st := f.cached(t, pod)
	if !res.StatusTime.Equal(st.TimeStamp) || !st.TimeStamp.Equal(f.clock.Now()) {
		t.Errorf("StatusTime %v, cache at %v; want %v", res.StatusTime, st.TimeStamp, f.clock.Now())
	}
	if got := runningNames(st); len(got) != 0 || st.Sandboxes[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("after terminating: running %v, sandbox %v", got, st.Sandboxes[0].State)
	}
	if last := f.status.last(t); last.status != st || len(last.waiting) != 0 {
		t.Errorf("reported status %v waiting %v", last.status, last.waiting)
	}

	podLogs := PodLogsDir(f.logs, pod)
	podDir := filepath.Join(f.root, "pods", string(pod.UID))
	if err := os.WriteFile(filepath.Join(podLogs, "app", "0.log"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.resetCalls()
	f.clock.Step(time.Second)
	if _, err := f.s.SyncTerminatedPod(f.ctx, pod, f.cached(t, pod)); err != nil {
		t.Fatalf("SyncTerminatedPod: %v", err)
	}
	if got, want := f.changes(), []string{"RemoveContainer", "RemoveContainer", "RemovePodSandbox"}; !slices.Equal(got, want) {
		t.Errorf("changes = %v, want %v", got, want)
	}
	if ids := f.containerIDs(); len(ids) != 0 {
		t.Errorf("containers left: %v", ids)
	}
	if ids := f.sandboxIDs(); len(ids) != 0 {
		t.Errorf("sandboxes left: %v", ids)
	}
	for _, dir := range []string{podLogs, podDir} {
		if exists(dir) {
			t.Errorf("%s is still there", dir)
		}
	}
	if !exists(f.logs) || !exists(f.root) {
		t.Error("the roots themselves were removed")
	}
	f.status.mu.Lock()
	removed := slices.Clone(f.status.removed)
	f.status.mu.Unlock()
	if !slices.Equal(removed, []types.UID{pod.UID}) {
		t.Errorf("RemovePod calls = %v, want [%s]", removed, pod.UID)
	}
	if st := f.cached(t, pod); len(st.Sandboxes) != 0 || len(st.Containers) != 0 {
		t.Errorf("cache after removal = %+v, want empty", st)
	}
}

func TestSyncTerminatingPodStopFailure(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app"})
	pod := newPod("web", []string{"app"})
	f.mustSync(t, pod)
	boom := errors.New("stuck")
	f.rt.InjectError("StopContainer", boom)
	f.resetCalls()
	f.clock.Step(time.Second)
	if _, err := f.s.SyncTerminatingPod(f.ctx, pod, f.cached(t, pod), 1); !errors.Is(err, boom) {
		t.Fatalf("SyncTerminatingPod error = %v, want %v", err, boom)
	}
	if got := f.changes(); slices.Contains(got, "StopPodSandbox") {
		t.Errorf("sandbox stopped while a container could not be: %v", got)
	}
}

func TestSyncTerminatedPodRemoveFailure(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app"})
	pod := newPod("web", []string{"app"})
	f.mustSync(t, pod)
	f.clock.Step(time.Second)
	if _, err := f.s.SyncTerminatingPod(f.ctx, pod, f.cached(t, pod), 1); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("busy")
	f.rt.InjectError("RemoveContainer", boom)
	f.clock.Step(time.Second)
	if _, err := f.s.SyncTerminatedPod(f.ctx, pod, f.cached(t, pod)); !errors.Is(err, boom) {
		t.Fatalf("SyncTerminatedPod error = %v, want %v", err, boom)
	}
	if !exists(PodLogsDir(f.logs, pod)) || !exists(filepath.Join(f.root, "pods", string(pod.UID))) {
		t.Error("directories removed although the runtime still holds the pod")
	}
	f.status.mu.Lock()
	removed := len(f.status.removed)
	f.status.mu.Unlock()
	if removed != 0 {
		t.Error("RemovePod called although the runtime still holds the pod")
	}
	// The retry finishes the job.
	f.clock.Step(time.Second)
	if _, err := f.s.SyncTerminatedPod(f.ctx, pod, f.cached(t, pod)); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if ids := f.containerIDs(); len(ids) != 0 {
		t.Errorf("containers left: %v", ids)
	}
}

// The real pieces together: Workers drive the Syncer through create, kill
// and removal.
func TestWorkersWithSyncer(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app", "img-side"})
	w := New(Config{Syncer: f.s, Cache: f.cache, Clock: f.clock})
	ctx, cancel := context.WithCancel(f.ctx)
	defer func() {
		cancel()
		w.Wait()
	}()
	pod := webPod()
	w.UpdatePod(ctx, UpdatePodOptions{Type: Create, Pod: pod})
	polltest.True(t, 5*time.Second, "both containers to run", func() bool {
		st, _ := f.cache.Get(pod.UID)
		return slices.Equal(runningNames(st), []string{"app", "side"})
	})
	f.clock.Step(time.Second)
	w.UpdatePod(ctx, UpdatePodOptions{Type: Kill, Pod: pod, GracePeriod: int64p(2)})
	polltest.True(t, 5*time.Second, "the worker to end", func() bool { return len(w.Known()) == 0 })
	if ids := f.containerIDs(); len(ids) != 0 {
		t.Errorf("containers left: %v", ids)
	}
	if ids := f.sandboxIDs(); len(ids) != 0 {
		t.Errorf("sandboxes left: %v", ids)
	}
	f.rt.mu.Lock()
	defer f.rt.mu.Unlock()
	for id, grace := range f.rt.stops {
		if grace != 2 {
			t.Errorf("%s stopped with grace %d, want 2", id, grace)
		}
	}
	if len(f.rt.stops) != 2 {
		t.Errorf("stops = %v, want both containers", f.rt.stops)
	}
}
