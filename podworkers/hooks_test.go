package podworkers

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

type fakeExec struct {
	gotID  string
	gotCmd []string
	err    error
}

func (f *fakeExec) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	f.gotID, f.gotCmd = id, cmd
	return []byte("out"), []byte("err"), f.err
}

func TestHookRunner(t *testing.T) {
	var gotPath, gotHeader, gotHost string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotHeader, gotHost = r.URL.Path, r.Header.Get("X-Hook"), r.Host
		if r.URL.Path == "/fail" {
			http.Error(w, "nope", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	port, _ := strconv.Atoi(portStr)
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
	pod := &v1.Pod{}

	tests := []struct {
		name    string
		handler v1.LifecycleHandler
		podIPs  []string
		execErr error
		wantErr string
		check   func(t *testing.T, f *fakeExec)
	}{
		{name: "exec", handler: v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "true"}}}, check: func(t *testing.T, f *fakeExec) {
			if f.gotID != "cid" || len(f.gotCmd) != 3 {
				t.Errorf("exec ran %v in %q", f.gotCmd, f.gotID)
			}
		}},
		{name: "exec failure quotes the output", handler: v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}, execErr: errors.New("exit 1"), wantErr: "outerr"},
		{name: "http get on the pod IP by port name", handler: v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "hook", Port: intstr.FromString("web"), HTTPHeaders: []v1.HTTPHeader{{Name: "X-Hook", Value: "1"}}}}, podIPs: []string{host}, check: func(*testing.T, *fakeExec) {
			if gotPath != "/hook" || gotHeader != "1" {
				t.Errorf("server saw path %q header %q", gotPath, gotHeader)
			}
		}},
		{name: "http get with a Host header", handler: v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(int32(port)), HTTPHeaders: []v1.HTTPHeader{{Name: "Host", Value: "example.test"}}}}, podIPs: []string{host}, check: func(*testing.T, *fakeExec) {
			if gotHost != "example.test" {
				t.Errorf("server saw host %q", gotHost)
			}
		}},
		{name: "http status 503 fails", handler: v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/fail", Port: intstr.FromInt32(int32(port))}}, podIPs: []string{host}, wantErr: "HTTP 503"},
		{name: "unknown named port", handler: v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("nope")}}, podIPs: []string{host}, wantErr: `port "nope"`},
		{name: "tcpSocket is refused", handler: v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(1)}}, wantErr: "not a supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeExec{err: tt.execErr}
			h := newHookRunner(f, testingclock.NewFakeClock(t0), host)
			err := h.run(context.Background(), hookTarget{pod: pod, container: c, containerID: "cid", podIPs: tt.podIPs}, &tt.handler, 5*time.Second)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("run: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("run = %v, want an error containing %q", err, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, f)
			}
		})
	}
}

func TestHookSleepFollowsTheClockAndTheTimeout(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	h := newHookRunner(&fakeExec{}, clk, "127.0.0.1")
	done := make(chan error, 1)
	go func() {
		done <- h.run(context.Background(), hookTarget{pod: &v1.Pod{}, container: &v1.Container{}, containerID: "cid"}, &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}, time.Minute)
	}()
	polltest.True(t, 5*time.Second, "the sleep hook to wait on the clock", clk.HasWaiters)
	clk.Step(5 * time.Second)
	if err := <-done; err != nil {
		t.Fatalf("sleep: %v", err)
	}

	// A sleep longer than the time it may take is cut off.
	err := h.run(context.Background(), hookTarget{pod: &v1.Pod{}, container: &v1.Container{}, containerID: "cid"}, &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 60}}, 10*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("sleep past its timeout = %v, want a deadline error", err)
	}
}

func TestStopSignal(t *testing.T) {
	usr1 := v1.SIGUSR1
	tests := []struct {
		name string
		c    *v1.Container
		want string
	}{
		{"unset: the runtime's default (the image's STOPSIGNAL)", &v1.Container{}, "RUNTIME_DEFAULT"},
		{"lifecycle without stopSignal", &v1.Container{Lifecycle: &v1.Lifecycle{}}, "RUNTIME_DEFAULT"},
		{"SIGUSR1", &v1.Container{Lifecycle: &v1.Lifecycle{StopSignal: &usr1}}, "SIGUSR1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stopSignal(tt.c).String(); got != tt.want {
				t.Errorf("stopSignal = %s, want %s", got, tt.want)
			}
		})
	}
}
