package kubecontainer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func fakeSandbox(id string, uid types.UID, state runtimeapi.PodSandboxState, created time.Time, attempt uint32, ip string) *critest.FakePodSandbox {
	sb := &critest.FakePodSandbox{PodSandboxStatus: runtimeapi.PodSandboxStatus{
		Id:        id,
		Metadata:  &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "ns", Uid: string(uid), Attempt: attempt},
		State:     state,
		CreatedAt: created.UnixNano(),
		Labels:    map[string]string{LabelPodUID: string(uid), LabelPodName: "web", LabelPodNamespace: "ns"},
	}}
	if ip != "" {
		sb.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: ip}
	}
	return sb
}

func fakeContainer(id, sandboxID string, uid types.UID, name string, state runtimeapi.ContainerState, created time.Time, restarts int) *critest.FakeContainer {
	return &critest.FakeContainer{
		SandboxID: sandboxID,
		ContainerStatus: runtimeapi.ContainerStatus{
			Id:        id,
			Metadata:  &runtimeapi.ContainerMetadata{Name: name, Attempt: uint32(restarts)},
			State:     state,
			CreatedAt: created.UnixNano(),
			StartedAt: created.Add(time.Second).UnixNano(),
			Image:     &runtimeapi.ImageSpec{Image: "nginx:1"},
			ImageRef:  "sha256:abc",
			Labels:    map[string]string{LabelPodUID: string(uid), LabelContainerName: name},
			Annotations: map[string]string{
				AnnotationContainerHash: "hash-" + name,
				AnnotationRestartCount:  fmt.Sprint(restarts),
			},
		},
	}
}

// vanishing answers NotFound, as containerd does, for the status of the
// objects named in gone: they were removed between the list and the status
// call.
type vanishing struct {
	*critest.FakeRuntimeService
	gone map[string]bool
}

func (v *vanishing) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	if v.gone[id] {
		return nil, grpcstatus.Errorf(codes.NotFound, "sandbox %s not found", id)
	}
	return v.FakeRuntimeService.PodSandboxStatus(ctx, id, verbose)
}

func (v *vanishing) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	if v.gone[id] {
		return nil, fmt.Errorf("wrapped: %w", grpcstatus.Errorf(codes.NotFound, "container %s not found", id))
	}
	return v.FakeRuntimeService.ContainerStatus(ctx, id, verbose)
}

func newRuntime() *critest.FakeRuntimeService {
	rt := critest.NewFakeRuntimeService()
	rt.SetFakeSandboxes([]*critest.FakePodSandbox{
		fakeSandbox("sb-old", "uid-1", runtimeapi.PodSandboxState_SANDBOX_NOTREADY, t0, 0, ""),
		fakeSandbox("sb-new", "uid-1", runtimeapi.PodSandboxState_SANDBOX_READY, t0.Add(time.Minute), 1, "10.0.0.5"),
		fakeSandbox("sb-mid", "uid-1", runtimeapi.PodSandboxState_SANDBOX_NOTREADY, t0.Add(30*time.Second), 0, ""),
		fakeSandbox("sb-other", "uid-2", runtimeapi.PodSandboxState_SANDBOX_READY, t0.Add(time.Hour), 0, "10.0.0.9"),
	})
	rt.SetFakeContainers([]*critest.FakeContainer{
		fakeContainer("c-app-0", "sb-old", "uid-1", "app", runtimeapi.ContainerState_CONTAINER_EXITED, t0.Add(time.Second), 0),
		fakeContainer("c-app-2", "sb-new", "uid-1", "app", runtimeapi.ContainerState_CONTAINER_RUNNING, t0.Add(61*time.Second), 2),
		fakeContainer("c-app-1", "sb-mid", "uid-1", "app", runtimeapi.ContainerState_CONTAINER_EXITED, t0.Add(31*time.Second), 1),
		fakeContainer("c-side", "sb-new", "uid-1", "side", runtimeapi.ContainerState_CONTAINER_RUNNING, t0.Add(62*time.Second), 0),
		fakeContainer("c-other", "sb-other", "uid-2", "app", runtimeapi.ContainerState_CONTAINER_RUNNING, t0.Add(time.Hour), 0),
	})
	return rt
}

func sandboxIDs(st *PodStatus) []string {
	var out []string
	for _, sb := range st.Sandboxes {
		out = append(out, sb.Id)
	}
	return out
}

func containerIDs(st *PodStatus) []string {
	var out []string
	for _, c := range st.Containers {
		out = append(out, c.ID)
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestGetPodStatus(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	tests := []struct {
		name           string
		gone           []string
		wantSandboxes  []string
		wantContainers []string
		wantIPs        []string
		wantName       string
	}{
		{
			name:           "sorted newest first, other pods left out",
			wantSandboxes:  []string{"sb-new", "sb-mid", "sb-old"},
			wantContainers: []string{"c-side", "c-app-2", "c-app-1", "c-app-0"},
			wantIPs:        []string{"10.0.0.5"},
			wantName:       "web",
		},
		{
			name:           "objects removed between list and status are skipped",
			gone:           []string{"sb-mid", "c-app-1", "c-side"},
			wantSandboxes:  []string{"sb-new", "sb-old"},
			wantContainers: []string{"c-app-2", "c-app-0"},
			wantIPs:        []string{"10.0.0.5"},
			wantName:       "web",
		},
		{
			name:           "newest sandbox gone: IPs come from the next, which is not ready",
			gone:           []string{"sb-new"},
			wantSandboxes:  []string{"sb-mid", "sb-old"},
			wantContainers: []string{"c-side", "c-app-2", "c-app-1", "c-app-0"},
			wantIPs:        nil,
			wantName:       "web",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &vanishing{FakeRuntimeService: newRuntime(), gone: map[string]bool{}}
			for _, id := range tt.gone {
				rt.gone[id] = true
			}
			st, err := GetPodStatus(context.Background(), rt, "uid-1", now)
			if err != nil {
				t.Fatalf("GetPodStatus: %v", err)
			}
			if st.ID != "uid-1" || !st.TimeStamp.Equal(now) {
				t.Errorf("ID, TimeStamp = %s, %v; want uid-1, %v", st.ID, st.TimeStamp, now)
			}
			if st.Name != tt.wantName || st.Namespace != "ns" {
				t.Errorf("Name, Namespace = %q, %q; want %q, ns", st.Name, st.Namespace, tt.wantName)
			}
			if got := sandboxIDs(st); !equalStrings(got, tt.wantSandboxes) {
				t.Errorf("sandboxes = %v, want %v", got, tt.wantSandboxes)
			}
			if got := containerIDs(st); !equalStrings(got, tt.wantContainers) {
				t.Errorf("containers = %v, want %v", got, tt.wantContainers)
			}
			if !equalStrings(st.IPs, tt.wantIPs) {
				t.Errorf("IPs = %v, want %v", st.IPs, tt.wantIPs)
			}
		})
	}
}

func TestGetPodStatusDecodesContainers(t *testing.T) {
	rt := newRuntime()
	st, err := GetPodStatus(context.Background(), rt, "uid-1", t0)
	if err != nil {
		t.Fatalf("GetPodStatus: %v", err)
	}
	c := st.FindContainer("app")
	if c == nil {
		t.Fatal("FindContainer(app) = nil")
	}
	want := ContainerStatus{
		ID:           "c-app-2",
		Name:         "app",
		State:        runtimeapi.ContainerState_CONTAINER_RUNNING,
		CreatedAt:    t0.Add(61 * time.Second),
		StartedAt:    t0.Add(62 * time.Second),
		Image:        "nginx:1",
		ImageRef:     "sha256:abc",
		Hash:         "hash-app",
		RestartCount: 2,
		SandboxID:    "sb-new",
		// No io.kubernetes.pod.terminationGracePeriod annotation: unknown.
		PodTerminationGrace: -1,
	}
	if !c.CreatedAt.Equal(want.CreatedAt) || !c.StartedAt.Equal(want.StartedAt) || !c.FinishedAt.IsZero() {
		t.Errorf("times = %v/%v/%v, want %v/%v/zero", c.CreatedAt, c.StartedAt, c.FinishedAt, want.CreatedAt, want.StartedAt)
	}
	c.CreatedAt, c.StartedAt = want.CreatedAt, want.StartedAt
	if *c != want {
		t.Errorf("container = %+v\nwant %+v", *c, want)
	}
	if got := len(st.ContainersNamed("app")); got != 3 {
		t.Errorf("ContainersNamed(app) has %d entries, want 3", got)
	}
	if st.FindContainer("nope") != nil {
		t.Error("FindContainer(nope) != nil")
	}
	var nilStatus *PodStatus
	if nilStatus.FindContainer("app") != nil || len(nilStatus.ContainersNamed("app")) != 0 {
		t.Error("nil PodStatus finds containers")
	}
}

func TestGetPodStatusErrors(t *testing.T) {
	boom := errors.New("boom")
	for _, call := range []string{"ListPodSandbox", "PodSandboxStatus", "ListContainers", "ContainerStatus"} {
		t.Run(call, func(t *testing.T) {
			rt := newRuntime()
			rt.InjectError(call, boom)
			_, err := GetPodStatus(context.Background(), rt, "uid-1", t0)
			if !errors.Is(err, boom) {
				t.Errorf("err = %v, want it to wrap %v", err, boom)
			}
		})
	}
}

func TestGetPodStatusUnknownPod(t *testing.T) {
	st, err := GetPodStatus(context.Background(), newRuntime(), "uid-nope", t0)
	if err != nil {
		t.Fatalf("GetPodStatus: %v", err)
	}
	if st.ID != "uid-nope" || len(st.Sandboxes) != 0 || len(st.Containers) != 0 || st.IPs != nil {
		t.Errorf("status of unknown pod = %+v, want empty", st)
	}
}

func TestSandboxIPs(t *testing.T) {
	tests := []struct {
		name string
		sb   *runtimeapi.PodSandboxStatus
		want []string
	}{
		{"nil", nil, nil},
		{"not ready", &runtimeapi.PodSandboxStatus{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.1"}}, nil},
		{"no network", &runtimeapi.PodSandboxStatus{State: runtimeapi.PodSandboxState_SANDBOX_READY}, nil},
		{"primary and extra", &runtimeapi.PodSandboxStatus{
			State: runtimeapi.PodSandboxState_SANDBOX_READY,
			Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.1", AdditionalIps: []*runtimeapi.PodIP{
				{Ip: "fd00::1"}, {Ip: ""},
			}},
		}, []string{"10.0.0.1", "fd00::1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SandboxIPs(tt.sb); !equalStrings(got, tt.want) {
				t.Errorf("SandboxIPs = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRestartCountFromAnnotations(t *testing.T) {
	tests := []struct {
		value string
		set   bool
		want  int
	}{
		{"3", true, 3},
		{"0", true, 0},
		{"", false, 0},
		{"x", true, 0},
		{"-2", true, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.value), func(t *testing.T) {
			a := map[string]string{}
			if tt.set {
				a[AnnotationRestartCount] = tt.value
			}
			if got := RestartCountFromAnnotations(a); got != tt.want {
				t.Errorf("RestartCountFromAnnotations = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestIsNotFound(t *testing.T) {
	tests := []struct {
		name          string
		err           error
		notFound      bool
		unimplemented bool
	}{
		{"nil", nil, false, false},
		{"plain", errors.New("not found"), false, false},
		{"grpc NotFound", grpcstatus.Error(codes.NotFound, "x"), true, false},
		{"wrapped NotFound", fmt.Errorf("ctx: %w", grpcstatus.Error(codes.NotFound, "x")), true, false},
		{"grpc Unimplemented", grpcstatus.Error(codes.Unimplemented, "x"), false, true},
		{"grpc Unknown", grpcstatus.Error(codes.Unknown, "x"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsNotFound(tt.err); got != tt.notFound {
				t.Errorf("IsNotFound = %v, want %v", got, tt.notFound)
			}
			if got := IsUnimplemented(tt.err); got != tt.unimplemented {
				t.Errorf("IsUnimplemented = %v, want %v", got, tt.unimplemented)
			}
		})
	}
}

func TestLabels(t *testing.T) {
	pod := basePod()
	pod.Labels = map[string]string{"app": "web", LabelPodName: "spoofed"}
	sl := SandboxLabels(pod)
	want := map[string]string{"app": "web", LabelPodName: "web", LabelPodNamespace: "default", LabelPodUID: "uid-1"}
	if len(sl) != len(want) {
		t.Errorf("SandboxLabels = %v, want %v", sl, want)
	}
	for k, v := range want {
		if sl[k] != v {
			t.Errorf("SandboxLabels[%s] = %q, want %q", k, sl[k], v)
		}
	}
	if pod.Labels[LabelPodName] != "spoofed" {
		t.Error("SandboxLabels modified the pod's labels")
	}
	cl := ContainerLabels(pod, "app")
	if cl[LabelContainerName] != "app" || cl[LabelPodUID] != "uid-1" || len(cl) != 4 {
		t.Errorf("ContainerLabels = %v", cl)
	}
	if got := PodUIDFromLabels(cl); got != "uid-1" {
		t.Errorf("PodUIDFromLabels = %q", got)
	}
	if got := PodUIDFromLabels(map[string]string{"x": "y"}); got != "" {
		t.Errorf("PodUIDFromLabels(no label) = %q", got)
	}
}

// TestRefreshPodStatusReusesUnchanged: after a sync that restarted one
// container, only that container's status is asked for; what prev holds of
// objects in the same state is reused, and the result equals a full read.
func TestRefreshPodStatusReusesUnchanged(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime()
	prev, err := GetPodStatus(ctx, rt, "uid-1", t0)
	if err != nil {
		t.Fatal(err)
	}
	// c-side died and was replaced by c-side-1.
	rt.Containers["c-side-1"] = fakeContainer("c-side-1", "sb-new", "uid-1", "side", runtimeapi.ContainerState_CONTAINER_RUNNING, t0.Add(90*time.Second), 1)
	rt.Containers["c-side"].State = runtimeapi.ContainerState_CONTAINER_EXITED
	rt.Called = nil

	got, err := RefreshPodStatus(ctx, rt, "uid-1", prev, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var statusCalls []string
	for _, c := range rt.GetCalls() {
		if c == "PodSandboxStatus" || c == "ContainerStatus" {
			statusCalls = append(statusCalls, c)
		}
	}
	if len(statusCalls) != 2 {
		t.Errorf("status calls = %v, want ContainerStatus of c-side and c-side-1 only", statusCalls)
	}
	full, err := GetPodStatus(ctx, rt, "uid-1", t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !equalStrings(sandboxIDs(got), sandboxIDs(full)) || !equalStrings(containerIDs(got), containerIDs(full)) {
		t.Errorf("refreshed %v %v, full read %v %v", sandboxIDs(got), containerIDs(got), sandboxIDs(full), containerIDs(full))
	}
	if c := got.FindContainer("side"); c == nil || c.ID != "c-side-1" || c.RestartCount != 1 {
		t.Errorf("side = %+v, want c-side-1 with 1 restart", c)
	}
	for _, c := range got.Containers {
		if c.ID == "c-side" && c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			t.Errorf("c-side state %v, want the runtime's EXITED, not prev's RUNNING", c.State)
		}
	}
}
