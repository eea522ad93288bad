package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/probe"
)

func TestProbes(t *testing.T) {
	p := NewProbes()
	web := ProbeTarget{Namespace: "ns", Pod: "web", PodUID: "u1", Container: "app", Type: "Readiness"}
	db := ProbeTarget{Namespace: "ns", Pod: "db", PodUID: "u2", Container: "pg", Type: "Liveness"}
	p.Observe(web, probe.Success, 10*time.Millisecond)
	p.Observe(web, probe.Success, 20*time.Millisecond)
	p.Observe(web, probe.Failure, 30*time.Millisecond)
	p.Observe(db, probe.Unknown, time.Second)
	scrapeProbes := func() string {
		rec := httptest.NewRecorder()
		p.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics/probes", nil))
		b, _ := io.ReadAll(rec.Body)
		return string(b)
	}
	body := scrapeProbes()
	for _, l := range []string{
		`prober_probe_total{container="app",namespace="ns",pod="web",pod_uid="u1",probe_type="Readiness",result="successful"} 2`,
		`prober_probe_total{container="app",namespace="ns",pod="web",pod_uid="u1",probe_type="Readiness",result="failed"} 1`,
		`prober_probe_total{container="pg",namespace="ns",pod="db",pod_uid="u2",probe_type="Liveness",result="unknown"} 1`,
		`prober_probe_duration_seconds_count{container="app",namespace="ns",pod="web",probe_type="Readiness"} 3`,
		`prober_probe_duration_seconds_sum{container="app",namespace="ns",pod="web",probe_type="Readiness"} 0.06`,
	} {
		if !strings.Contains(body, "\n"+l+"\n") {
			t.Errorf("no line %q in:\n%s", l, body)
		}
	}
	p.Forget(web)
	body = scrapeProbes()
	if strings.Contains(body, `pod="web"`) || !strings.Contains(body, `pod="db"`) {
		t.Errorf("after forgetting web's probe:\n%s", body)
	}
}
