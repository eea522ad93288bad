package fakecri

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	criclient "k8s.io/cri-client/pkg"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// serve starts a Server on a socket in a temp dir and returns cri-client's
// services connected to it, as an agent connects.
func serve(t *testing.T, cidr string) (*Server, internalapi.RuntimeService, internalapi.ImageManagerService, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := New(Config{PodCIDR: netip.MustParsePrefix(cidr), StateDir: dir, EventBuffer: 64})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sock := filepath.Join(dir, "cri.sock")
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, sock) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(sock); !os.IsNotExist(err) {
			t.Errorf("socket left behind: %v", err)
		}
	})
	// The socket appears once Serve listens.
	polltest.True(t, 10*time.Second, "the socket", func() bool { _, err := os.Stat(sock); return err == nil })
	rs, err := criclient.NewRemoteRuntimeService(ctx, "unix://"+sock, 5*time.Second, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	is, err := criclient.NewRemoteImageService(ctx, "unix://"+sock, 5*time.Second, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return s, rs, is, dir
}

func sandboxConfig(name string, hostNetwork bool, logDir string) *runtimeapi.PodSandboxConfig {
	mode := runtimeapi.NamespaceMode_POD
	if hostNetwork {
		mode = runtimeapi.NamespaceMode_NODE
	}
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: "uid-" + name},
		Labels:       map[string]string{"io.kubernetes.pod.uid": "uid-" + name},
		LogDirectory: logDir,
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: mode},
		}},
	}
}

// A pod's life as an agent drives it: addresses of the pod CIDR, one per
// sandbox, none on the host network; the log file made at start; every
// change published as an event with the sandbox's state; stop and remove
// of the sandbox taking its containers along; the address reused only
// after the others.
func TestPodLifecycle(t *testing.T) {
	s, rs, is, dir := serve(t, "10.200.3.0/29")
	ctx := context.Background()
	events := make(chan *runtimeapi.ContainerEventResponse, 64)
	subscribed := make(chan struct{})
	ectx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	go func() {
		_ = rs.GetContainerEvents(ectx, events, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(subscribed) })
	}()
	<-subscribed
	// The server registers the subscriber when the stream's handler runs,
	// which the callback does not wait for.
	waitSubscribed(t, s)

	logDir := filepath.Join(dir, "logs")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := sandboxConfig("web", false, logDir)
	id, err := rs.RunPodSandbox(ctx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := rs.PodSandboxStatus(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if ip := st.GetStatus().GetNetwork().GetIp(); ip != "10.200.3.2" {
		t.Errorf("first sandbox IP %q, want 10.200.3.2", ip)
	}
	hn, err := rs.RunPodSandbox(ctx, sandboxConfig("hn", true, logDir), "")
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := rs.PodSandboxStatus(ctx, hn, false); st.GetStatus().GetNetwork().GetIp() != "" {
		t.Errorf("host-network sandbox got IP %q", st.GetStatus().GetNetwork().GetIp())
	}
	expectEvents(t, events, []want{
		{id, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, 0},
		{id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, 0},
		{hn, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, 0},
		{hn, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, 0},
	})

	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "registry.k8s.io/pause:3.10"}, nil, cfg); err != nil {
		t.Fatal(err)
	}
	img, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "registry.k8s.io/pause:3.10"}, false)
	if err != nil || img.GetImage().GetSize() == 0 {
		t.Fatalf("image status %v, %v: want the image with a size", img, err)
	}
	fs, err := is.ImageFsInfo(ctx)
	if err != nil || len(fs.GetImageFilesystems()) != 1 || fs.GetImageFilesystems()[0].GetUsedBytes().GetValue() != imageSize {
		t.Errorf("image fs info %v, %v: want one filesystem using one image's size", fs, err)
	}
	ctr, err := rs.CreateContainer(ctx, id, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image:    &runtimeapi.ImageSpec{Image: "registry.k8s.io/pause:3.10"},
		LogPath:  "c/0.log",
		Labels:   map[string]string{"io.kubernetes.pod.uid": "uid-web"},
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(logDir, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rs.StartContainer(ctx, ctr); err != nil {
		t.Fatal(err)
	}
	cs, err := rs.ContainerStatus(ctx, ctr, false)
	if err != nil {
		t.Fatal(err)
	}
	if cs.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || cs.GetStatus().GetLogPath() != filepath.Join(logDir, "c/0.log") {
		t.Errorf("container status %v, want running with its log path", cs.GetStatus())
	}
	if _, err := os.Stat(filepath.Join(logDir, "c/0.log")); err != nil {
		t.Errorf("log file: %v", err)
	}
	expectEvents(t, events, []want{
		{ctr, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, 1},
		{ctr, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, 1},
	})

	stats, err := rs.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{Id: id})
	if err != nil || len(stats) != 1 || len(stats[0].GetLinux().GetContainers()) != 1 || stats[0].GetLinux().GetMemory().GetTimestamp() == 0 {
		t.Errorf("sandbox stats %v, %v: want the sandbox with its container", stats, err)
	}
	if cstats, err := rs.ListContainerStats(ctx, nil); err != nil || len(cstats) != 1 || cstats[0].GetAttributes().GetId() != ctr {
		t.Errorf("container stats %v, %v", cstats, err)
	}

	if err := rs.StopPodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, events, []want{
		{ctr, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, 1},
		{id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, 1},
	})
	if cs, _ := rs.ContainerStatus(ctx, ctr, false); cs.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("container after the sandbox stopped: %v", cs.GetStatus().GetState())
	}
	if err := rs.RemovePodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, events, []want{
		{ctr, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, 0},
		{id, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, 0},
	})
	if list, _ := rs.ListContainers(ctx, nil); len(list) != 0 {
		t.Errorf("containers left after the sandbox was removed: %v", list)
	}
	if err := rs.RemovePodSandbox(ctx, id); err != nil {
		t.Errorf("removing a removed sandbox: %v", err)
	}
	if _, err := rs.PodSandboxStatus(ctx, id, false); status.Code(err) != codes.NotFound {
		t.Errorf("status of a removed sandbox: %v, want NotFound", err)
	}
	if err := rs.StartContainer(ctx, ctr); status.Code(err) != codes.NotFound {
		t.Errorf("start of a removed container: %v, want NotFound", err)
	}

	// The /29 has addresses .2 to .6: the next ones come after .2, which
	// was released, and .2 comes again only after the rest.
	var ips []string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		sid, err := rs.RunPodSandbox(ctx, sandboxConfig(name, false, logDir), "")
		if err != nil {
			t.Fatalf("sandbox %s: %v", name, err)
		}
		st, _ := rs.PodSandboxStatus(ctx, sid, false)
		ips = append(ips, st.GetStatus().GetNetwork().GetIp())
	}
	if got, want := ips, []string{"10.200.3.3", "10.200.3.4", "10.200.3.5", "10.200.3.6", "10.200.3.2"}; !slices.Equal(got, want) {
		t.Errorf("addresses %v, want %v", got, want)
	}
	if _, err := rs.RunPodSandbox(ctx, sandboxConfig("f", false, logDir), ""); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("sandbox beyond the pool: %v, want ResourceExhausted", err)
	}

	s.rt.Lock()
	calls := len(s.rt.Called)
	s.rt.Unlock()
	if calls != 0 {
		t.Errorf("the fake keeps %d calls, want none", calls)
	}
}

// waitSubscribed waits until the server has a subscriber.
func waitSubscribed(t *testing.T, s *Server) {
	t.Helper()
	polltest.True(t, 10*time.Second, "an event subscriber", func() bool {
		s.events.mu.Lock()
		defer s.events.mu.Unlock()
		return len(s.events.subs) > 0
	})
}

// want is one expected event: its object, type and how many container
// statuses it carries.
type want struct {
	id         string
	t          runtimeapi.ContainerEventType
	containers int
}

func expectEvents(t *testing.T, ch <-chan *runtimeapi.ContainerEventResponse, wants []want) {
	t.Helper()
	for _, w := range wants {
		select {
		case ev := <-ch:
			if ev.GetContainerId() != w.id || ev.GetContainerEventType() != w.t || len(ev.GetContainersStatuses()) != w.containers ||
				ev.GetPodSandboxStatus().GetId() == "" || ev.GetCreatedAt() == 0 {
				t.Errorf("event %s %v with %d containers (sandbox %q, at %d), want %s %v with %d", ev.GetContainerId(), ev.GetContainerEventType(),
					len(ev.GetContainersStatuses()), ev.GetPodSandboxStatus().GetId(), ev.GetCreatedAt(), w.id, w.t, w.containers)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event %s %v within 10s", w.id, w.t)
		}
	}
}

// A subscriber that does not read loses what its buffer cannot hold, and
// the others do not wait for it.
func TestSlowSubscriberDrops(t *testing.T) {
	b := newBroadcaster(2)
	slow, cancelSlow := b.subscribe()
	defer cancelSlow()
	fast, cancelFast := b.subscribe()
	defer cancelFast()
	for i := range 3 {
		b.publish(&runtimeapi.ContainerEventResponse{ContainerId: string(rune('a' + i))})
		<-fast
	}
	if got := b.dropped.Load(); got != 1 {
		t.Errorf("dropped %d, want 1", got)
	}
	if len(slow) != 2 {
		t.Errorf("slow subscriber holds %d events, want 2", len(slow))
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, cfg := range []Config{
		{StateDir: "/tmp"},
		{PodCIDR: netip.MustParsePrefix("10.0.0.0/31"), StateDir: "/tmp"},
		{PodCIDR: netip.MustParsePrefix("fd00::/64"), StateDir: "/tmp"},
		{PodCIDR: netip.MustParsePrefix("10.0.0.0/24")},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
