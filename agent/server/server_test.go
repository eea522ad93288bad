package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/sources"
)

type fakePods []*v1.Pod

func (f fakePods) PodsWithStatus() []*v1.Pod { return f }

type fakeErrors []sources.ManifestError

func (f fakeErrors) Errors() []sources.ManifestError { return f }

func serve(t *testing.T, cfg Config) (readOnly, healthz string) {
	t.Helper()
	cfg.Address, cfg.HealthzAddress = "127.0.0.1", "127.0.0.1"
	s, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	port := func(i int) string {
		if s.listeners[i] == nil {
			return ""
		}
		return "http://" + s.listeners[i].Addr().String()
	}
	return port(0), port(1)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// fakeStats serves fixed stats.
type fakeStats struct{}

func (fakeStats) SummaryHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"node":{}}`)) })
}

func (fakeStats) CadvisorHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("container_cpu_usage_seconds_total 1\n"))
	})
}

func (fakeStats) ResourceHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("node_cpu_usage_seconds_total 1 1700000000000\n"))
	})
}

// Until there are stats to serve (the runtime has not answered), the
// stats endpoints answer 503; without Stats they are not served.
func TestStatsUnavailable(t *testing.T) {
	ro, _ := serve(t, Config{ReadOnlyPort: freePort(t), Pods: fakePods{}, Stats: func() Stats { return nil }})
	for _, path := range []string{"/stats/summary", "/metrics/cadvisor", "/metrics/resource"} {
		if code, body := get(t, ro+path); code != http.StatusServiceUnavailable || !strings.Contains(body, "container runtime") {
			t.Errorf("%s before the runtime answered: %d %q, want 503 saying why", path, code, body)
		}
	}
	none, _ := serve(t, Config{ReadOnlyPort: freePort(t), Pods: fakePods{}})
	if code, _ := get(t, none+"/stats/summary"); code != http.StatusNotFound {
		t.Errorf("/stats/summary without Stats: %d, want 404", code)
	}
}

func TestEndpoints(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-n1", Namespace: "default"}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	healthy := true
	cfg := Config{
		ReadOnlyPort: freePort(t),
		HealthzPort:  freePort(t),
		Pods:         fakePods{pod},
		Checks: []Check{{Name: "pleg", Check: func() error {
			if healthy {
				return nil
			}
			return errors.New("pleg was last seen active 4m0s ago")
		}}},
		ManifestErrors: fakeErrors{{Source: "file", Origin: "/m/bad.yaml", Err: errors.New(`spec.containers[0].image: Required value`)}},
		Metrics:        http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metric 1\n")) }),
		ProbeMetrics:   http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("prober_probe_total 1\n")) }),
		Stats:          func() Stats { return fakeStats{} },
	}
	ro, hz := serve(t, cfg)

	tests := []struct {
		name     string
		url      string
		wantCode int
		check    func(t *testing.T, body string)
	}{
		{"pods", ro + "/pods", 200, func(t *testing.T, body string) {
			var list v1.PodList
			if err := json.Unmarshal([]byte(body), &list); err != nil {
				t.Fatal(err)
			}
			if list.Kind != "PodList" || list.APIVersion != "v1" || len(list.Items) != 1 || list.Items[0].Name != "web-n1" || list.Items[0].Status.Phase != v1.PodRunning {
				t.Errorf("PodList = %+v", list)
			}
		}},
		{"healthz on read-only port", ro + "/healthz", 200, func(t *testing.T, body string) {
			if body != "ok" {
				t.Errorf("body %q, want ok", body)
			}
		}},
		{"healthz port", hz + "/healthz", 200, nil},
		{"manifest errors", ro + "/manifests/errors", 200, func(t *testing.T, body string) {
			var out struct {
				Errors []map[string]string `json:"errors"`
			}
			if err := json.Unmarshal([]byte(body), &out); err != nil {
				t.Fatal(err)
			}
			if len(out.Errors) != 1 || out.Errors[0]["origin"] != "/m/bad.yaml" || out.Errors[0]["source"] != "file" || !strings.Contains(out.Errors[0]["error"], "spec.containers[0].image") {
				t.Errorf("errors = %v", out.Errors)
			}
		}},
		{"metrics", ro + "/metrics", 200, func(t *testing.T, body string) {
			if body != "metric 1\n" {
				t.Errorf("body %q", body)
			}
		}},
		{"stats summary", ro + "/stats/summary", 200, func(t *testing.T, body string) {
			if body != `{"node":{}}` {
				t.Errorf("body %q", body)
			}
		}},
		{"cadvisor metrics", ro + "/metrics/cadvisor", 200, func(t *testing.T, body string) {
			if !strings.HasPrefix(body, "container_cpu_usage_seconds_total") {
				t.Errorf("body %q", body)
			}
		}},
		{"resource metrics", ro + "/metrics/resource", 200, func(t *testing.T, body string) {
			if !strings.HasPrefix(body, "node_cpu_usage_seconds_total") {
				t.Errorf("body %q", body)
			}
		}},
		{"probe metrics", ro + "/metrics/probes", 200, func(t *testing.T, body string) {
			if body != "prober_probe_total 1\n" {
				t.Errorf("body %q", body)
			}
		}},
		{"pods not on healthz port", hz + "/pods", 404, nil},
		{"pprof index", ro + "/debug/pprof/", 200, func(t *testing.T, body string) {
			if !strings.Contains(body, "goroutine") {
				t.Errorf("pprof index lacks the goroutine profile")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, tt.url)
			if code != tt.wantCode {
				t.Fatalf("HTTP %d, want %d: %s", code, tt.wantCode, body)
			}
			if tt.check != nil {
				tt.check(t, body)
			}
		})
	}

	healthy = false
	code, body := get(t, hz+"/healthz")
	if code != 500 || !strings.Contains(body, "pleg: pleg was last seen active") {
		t.Errorf("unhealthy /healthz = %d %q, want 500 naming the failed check", code, body)
	}
}

func TestDisabledPortsAndPortInUse(t *testing.T) {
	ro, hz := serve(t, Config{ReadOnlyPort: 0, HealthzPort: freePort(t), Pods: fakePods{}})
	if ro != "" || hz == "" {
		t.Fatalf("read-only %q healthz %q: want only healthz served", ro, hz)
	}
	ro2, _ := serve(t, Config{ReadOnlyPort: freePort(t), Pods: fakePods{}})
	if code, _ := get(t, ro2+"/stats/summary"); code != 404 {
		t.Errorf("/stats/summary without a handler: HTTP %d, want 404", code)
	}
	port, _ := strconv.Atoi(hz[strings.LastIndexByte(hz, ':')+1:])
	_, err := Listen(Config{Address: "127.0.0.1", ReadOnlyPort: port, Pods: fakePods{}})
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Errorf("Listen on a port in use: %v, want an error naming the port", err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
