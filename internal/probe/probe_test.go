package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	criclient "k8s.io/cri-client/pkg"
	utilexec "k8s.io/utils/exec"
)

// hostPort splits a test server's address.
func hostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return h, n
}

func TestHTTPGet(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError) // never reached: not followed
	}))
	defer other.Close()
	var (
		mu                        sync.Mutex
		gotUA, gotHost, gotHeader string
	)
	seen := func() (string, string, string) {
		mu.Lock()
		defer mu.Unlock()
		return gotUA, gotHost, gotHeader
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			mu.Lock()
			gotUA, gotHost, gotHeader = r.UserAgent(), r.Host, r.Header.Get("X-Probe")
			mu.Unlock()
		}
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, "ok")
		case "/fail":
			http.Error(w, strings.Repeat("x", 5000), http.StatusServiceUnavailable)
		case "/here":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/fail", http.StatusMovedPermanently)
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/slow":
			time.Sleep(300 * time.Millisecond)
		case "/notmodified":
			w.WriteHeader(http.StatusNotModified)
		}
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr().String())
	h := NewHTTP("kube-probe/test")

	tests := []struct {
		name    string
		get     v1.HTTPGetAction
		timeout time.Duration
		want    Result
	}{
		{"200 succeeds", v1.HTTPGetAction{Path: "/ok"}, time.Second, Success},
		{"path without slash", v1.HTTPGetAction{Path: "ok"}, time.Second, Success},
		{"304 succeeds", v1.HTTPGetAction{Path: "/notmodified"}, time.Second, Success},
		{"503 fails", v1.HTTPGetAction{Path: "/fail"}, time.Second, Failure},
		{"redirect to the same host is followed", v1.HTTPGetAction{Path: "/here"}, time.Second, Success},
		{"followed redirect to a failure fails", v1.HTTPGetAction{Path: "/loop"}, time.Second, Failure},
		{"redirect to another host is not followed", v1.HTTPGetAction{Path: "/away"}, time.Second, Success},
		{"timeout fails", v1.HTTPGetAction{Path: "/slow"}, 50 * time.Millisecond, Failure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			got, detail, err := h.Get(ctx, &tt.get, host, port)
			if err != nil || got != tt.want {
				t.Fatalf("Get = %v, %q, %v; want %v", got, detail, err, tt.want)
			}
			if len(detail) > maxDetail+100 {
				t.Errorf("detail not clipped: %d bytes", len(detail))
			}
		})
	}

	t.Run("headers", func(t *testing.T) {
		get := v1.HTTPGetAction{Path: "/ok", HTTPHeaders: []v1.HTTPHeader{{Name: "Host", Value: "example.test"}, {Name: "X-Probe", Value: "yes"}, {Name: "User-Agent", Value: "mine"}}}
		if got, detail, _ := h.Get(context.Background(), &get, host, port); got != Success {
			t.Fatalf("Get = %v %q", got, detail)
		}
		if ua, hst, hdr := seen(); hst != "example.test" || hdr != "yes" || ua != "mine" {
			t.Errorf("server saw Host %q X-Probe %q User-Agent %q", hst, hdr, ua)
		}
		get.HTTPHeaders = nil
		h.Get(context.Background(), &get, host, port)
		if ua, _, _ := seen(); ua != "kube-probe/test" {
			t.Errorf("default User-Agent %q", ua)
		}
	})

	t.Run("refused connection fails", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		_, p := hostPort(t, ln.Addr().String())
		ln.Close()
		if got, _, err := h.Get(context.Background(), &v1.HTTPGetAction{Path: "/"}, "127.0.0.1", p); got != Failure || err != nil {
			t.Fatalf("Get = %v, %v; want failure", got, err)
		}
	})
}

func TestHTTPSSkipsVerification(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr().String())
	got, detail, err := NewHTTP("t").Get(context.Background(), &v1.HTTPGetAction{Path: "/", Scheme: v1.URISchemeHTTPS}, host, port)
	if got != Success || err != nil {
		t.Fatalf("Get = %v %q %v", got, detail, err)
	}
}

func TestTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, port := hostPort(t, ln.Addr().String())
	if got, detail := TCP(context.Background(), host, port); got != Success {
		t.Fatalf("open port: %v %q", got, detail)
	}
	ln.Close()
	if got, _ := TCP(context.Background(), host, port); got != Failure {
		t.Fatalf("closed port: %v", got)
	}
}

func TestGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	go gs.Serve(ln)
	defer gs.Stop()
	host, port := hostPort(t, ln.Addr().String())

	bare := grpc.NewServer() // no health service
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	go bare.Serve(ln2)
	defer bare.Stop()
	_, port2 := hostPort(t, ln2.Addr().String())

	tests := []struct {
		name    string
		port    int
		service string
		want    Result
		detail  string
	}{
		{"serving", port, "", Success, ""},
		{"not serving", port, "down", Failure, "NOT_SERVING"},
		{"unknown service", port, "nope", Failure, ""},
		{"no health service", port2, "", Failure, "does not implement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			got, detail := GRPC(ctx, host, tt.port, tt.service, "t")
			if got != tt.want || !strings.Contains(detail, tt.detail) {
				t.Fatalf("GRPC = %v %q; want %v containing %q", got, detail, tt.want, tt.detail)
			}
		})
	}
}

type fakeExec struct {
	stdout []byte
	err    error
}

func (f fakeExec) ExecSync(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
	return f.stdout, nil, f.err
}

func TestExec(t *testing.T) {
	tests := []struct {
		name    string
		exec    fakeExec
		want    Result
		wantErr bool
	}{
		{"exit 0", fakeExec{stdout: []byte("fine")}, Success, false},
		{"exit 1", fakeExec{err: utilexec.CodeExitError{Err: errors.New("exit 1"), Code: 1}}, Failure, false},
		{"timeout from cri-client", fakeExec{err: fmt.Errorf("%w: x", criclient.ErrCommandTimedOut)}, Failure, false},
		{"deadline from grpc", fakeExec{err: status.Error(codes.DeadlineExceeded, "deadline")}, Failure, false},
		{"runtime error", fakeExec{err: status.Error(codes.NotFound, "no such container")}, Unknown, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := Exec(context.Background(), tt.exec, "c1", []string{"true"}, time.Second)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("Exec = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// slowStartExec is a runtime whose exec starts late: it takes start to
// begin running the command, which then succeeds at once.
type slowStartExec struct {
	start   time.Duration
	timeout time.Duration // the timeout it was asked to enforce
}

func (f *slowStartExec) ExecSync(ctx context.Context, _ string, _ []string, timeout time.Duration) ([]byte, []byte, error) {
	f.timeout = timeout
	select {
	case <-time.After(f.start):
		return []byte("ok"), nil, nil
	case <-ctx.Done():
		return nil, nil, status.Error(codes.DeadlineExceeded, ctx.Err().Error())
	}
}

// TestExecLeavesTheTimeoutToTheRuntime: the runtime counts the probe's
// timeout from the moment the command runs; an exec that is slow to start
// (a busy runtime, runc) but whose command answers in time passes, as in
// the kubelet, instead of failing on a deadline of the agent's own.
func TestExecLeavesTheTimeoutToTheRuntime(t *testing.T) {
	f := &slowStartExec{start: 1300 * time.Millisecond}
	got, _, err := Exec(context.Background(), f, "c1", []string{"true"}, 100*time.Millisecond)
	if got != Success || err != nil {
		t.Fatalf("exec that starts 1.3s late and answers at once, timeout 100ms: %v, %v; want success", got, err)
	}
	if f.timeout != 100*time.Millisecond {
		t.Errorf("runtime asked to enforce %v, want the probe's 100ms", f.timeout)
	}
}

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	for in, want := range map[string]int{"http": 8080, "9090": 9090} {
		if got, err := ResolvePort(intstr.FromString(in), c); err != nil || got != want {
			t.Errorf("ResolvePort(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if got, _ := ResolvePort(intstr.FromInt32(81), c); got != 81 {
		t.Errorf("ResolvePort(81) = %d", got)
	}
	if _, err := ResolvePort(intstr.FromString("grpc"), c); err == nil || !strings.Contains(err.Error(), `"grpc"`) {
		t.Errorf("unknown name: %v", err)
	}
}
