package stats

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/cgroups"
)

// richProvider serves many pods of every kind: with and without a cgroup
// of their own, on the host's network or their own, with label values
// the text format must escape, block I/O on named and unnamed disks, CFS
// quotas, filesystems.
func richProvider(t *testing.T) *Provider {
	t.Helper()
	cg := &fakeCgroups{
		stats: map[string]*cgroups.Stats{
			"/":         {CPU: cgroups.CPUStats{UsageNanos: 9e9, UserNanos: 5e9, SystemNanos: 4e9}, Memory: cgroups.MemoryStats{Usage: 3 << 30, WorkingSet: 2 << 30}, Pids: cgroups.PidsStats{Current: 300}},
			"/kubepods": {CPU: cgroups.CPUStats{UsageNanos: 5e9}, Memory: cgroups.MemoryStats{WorkingSet: 1 << 30}},
		},
		procs: map[string][]int{},
		specs: map[string]cgroups.CPUSpec{"/": {Shares: 1024, PeriodMicros: 100000}, "/kubepods": {Shares: 2048}},
	}
	var pods fakePods
	for i := range 40 {
		pod := Pod{
			Name: fmt.Sprintf("pod-%02d", i), Namespace: []string{"default", "kube-system", "ns"}[i%3],
			UID: types.UID(fmt.Sprintf("u%d", i)), StartTime: time.Unix(1700000000+int64(i), 500_000_000), HostNetwork: i%4 == 0,
		}
		if i%5 != 0 { // every fifth has no cgroup of its own
			pod.Cgroup = fmt.Sprintf("/kubepods/pod%s", pod.UID)
			cg.stats[pod.Cgroup] = &cgroups.Stats{
				CPU:    cgroups.CPUStats{UsageNanos: uint64(i) * 123456789, Periods: uint64(i % 2 * 10), ThrottledPeriods: uint64(i % 2), ThrottledNanos: uint64(i) * 1000},
				Memory: cgroups.MemoryStats{Usage: uint64(i) << 20, WorkingSet: uint64(i) << 19, RSS: uint64(i) << 18, Cache: 4096, PageFaults: uint64(i) * 7, MajorPageFaults: uint64(i), Limit: 1 << 30, OOMKills: uint64(i % 3)},
				Pids:   cgroups.PidsStats{Current: uint64(i), Limit: 1024},
			}
			cg.procs[pod.Cgroup] = []int{4242}
			cg.specs[pod.Cgroup] = cgroups.CPUSpec{Shares: uint64(2 + i), QuotaMicros: uint64(i%2) * 50000, PeriodMicros: 100000}
		}
		for j := range 1 + i%3 {
			c := Container{
				Name: fmt.Sprintf("c%d", j), ID: fmt.Sprintf("cid-%d-%d", i, j),
				Image:     []string{"busybox", `we"ird\image` + "\nname", "registry.example/app:v1.2"}[j%3],
				StartTime: time.Unix(1700000100+int64(i*10+j), 0),
			}
			parent := pod.Cgroup
			if parent == "" {
				parent = "/kubepods/besteffort"
			}
			c.Cgroup = parent + "/" + c.ID
			cg.stats[c.Cgroup] = &cgroups.Stats{
				CPU: cgroups.CPUStats{UsageNanos: uint64(i*10+j) * 1e8, UserNanos: uint64(i+1) * 1e8, SystemNanos: uint64(j+1) * 2e8,
					Periods: uint64(j * 7), ThrottledPeriods: uint64(j * 3), ThrottledNanos: uint64(j) * 1e6},
				Memory: cgroups.MemoryStats{Usage: 1<<20 + uint64(i), WorkingSet: uint64(j+1) << 19, RSS: 1<<18 + uint64(j), Cache: uint64(i) << 12,
					PageFaults: uint64(i*10+j) * 3, MajorPageFaults: uint64(j + 1), Limit: uint64(j) << 28, OOMKills: uint64(j)},
				Pids: cgroups.PidsStats{Current: uint64(j + 1), Limit: uint64(i % 2 * 100)},
				IO:   []cgroups.IOStats{{Major: 254, Minor: 0, ReadBytes: uint64(i) << 10, WriteBytes: 3e7, ReadOps: 1, WriteOps: 2}, {Major: 7, Minor: uint64(j), WriteBytes: 0.5e6}},
			}
			cg.procs[c.Cgroup] = []int{4242}
			cg.specs[c.Cgroup] = cgroups.CPUSpec{Shares: 2, PeriodMicros: 100000}
			pod.Containers = append(pod.Containers, c)
		}
		pods = append(pods, pod)
	}
	root := t.TempDir()
	return New(Config{
		NodeName:      "node-a",
		Pods:          pods,
		Cgroups:       cg,
		Clock:         clocktesting.NewFakeClock(time.Unix(1700001000, 123_000_000)),
		PodsCgroup:    "/kubepods",
		ProcRoot:      writeProc(t),
		MachineCores:  2,
		MachineMemory: 4 << 30,
		Fs:            FsConfig{RootDir: root, Runtime: fakeFsRuntime{dir: root}},
	})
}

// response is one GET of h.
func response(t *testing.T, h http.Handler, header http.Header) (*http.Response, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for k, v := range header {
		req.Header[k] = v
	}
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// families parses a text-format body into its families, each metric as
// one line: name, labels sorted, value and timestamp; sorted.
func families(t *testing.T, body []byte) map[string][]string {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	out := map[string][]string{}
	for name, f := range fams {
		lines := []string{fmt.Sprintf("# %s %s %q", f.GetType(), name, f.GetHelp())}
		for _, m := range f.GetMetric() {
			lines = append(lines, metricLine(name, m))
		}
		sort.Strings(lines[1:])
		out[name] = lines
	}
	return out
}

func metricLine(name string, m *dto.Metric) string {
	labels := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	sort.Strings(labels)
	var v float64
	switch {
	case m.Counter != nil:
		v = m.GetCounter().GetValue()
	case m.Gauge != nil:
		v = m.GetGauge().GetValue()
	default:
		v = m.GetUntyped().GetValue()
	}
	return fmt.Sprintf("%s{%s} %v @%d", name, strings.Join(labels, ","), v, m.GetTimestampMs())
}

// familyOrder is the families' names in the order the body has them.
func familyOrder(body []byte) []string {
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, _, _ = strings.Cut(name, " ")
			out = append(out, name)
		}
	}
	return out
}

// The metrics endpoints write what client_golang wrote for the same
// snapshot (reference_test.go): the same families, help, types, series,
// label values (escaped where they must be) and values, families sorted
// by name, and the same Content-Type; gzip-compressed when asked.
func TestMetricsMatchClientGolang(t *testing.T) {
	for _, tc := range []struct {
		name     string
		provider func(t *testing.T) *Provider
		handlers func(p *Provider) (got, want http.Handler)
		minimum  int
	}{
		{"cadvisor", richProvider, func(p *Provider) (http.Handler, http.Handler) {
			return p.CadvisorHandler(), p.refCadvisorHandler()
		}, 2500},
		{"resource", richProvider, func(p *Provider) (http.Handler, http.Handler) {
			return p.ResourceHandler(), p.refResourceHandler()
		}, 200},
		{"cadvisor small", func(t *testing.T) *Provider { p, _, _ := testProvider(t); return p }, func(p *Provider) (http.Handler, http.Handler) {
			return p.CadvisorHandler(), p.refCadvisorHandler()
		}, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.provider(t)
			gotH, wantH := tc.handlers(p)
			// The second handler is served the first's snapshot (MaxAge).
			wantResp, wantBody := response(t, wantH, nil)
			gotResp, gotBody := response(t, gotH, nil)
			got, want := families(t, gotBody), families(t, wantBody)
			series := 0
			for name, w := range want {
				series += len(w) - 1
				g, ok := got[name]
				if !ok {
					t.Errorf("family %s missing", name)
					continue
				}
				if strings.Join(g, "\n") != strings.Join(w, "\n") {
					t.Errorf("family %s differs:\n got %s\nwant %s", name, strings.Join(g, "\n     "), strings.Join(w, "\n     "))
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("family %s is new", name)
				}
			}
			if series < tc.minimum {
				t.Errorf("the reference has %d series, want at least %d: the test data shrank", series, tc.minimum)
			}
			if g, w := familyOrder(gotBody), familyOrder(wantBody); strings.Join(g, ",") != strings.Join(w, ",") {
				t.Errorf("families in the order %v, want %v", g, w)
			}
			if g, w := gotResp.Header.Get("Content-Type"), wantResp.Header.Get("Content-Type"); g != w {
				t.Errorf("Content-Type %q, want %q", g, w)
			}

			zResp, zBody := response(t, gotH, http.Header{"Accept-Encoding": {"gzip, deflate"}})
			if ce := zResp.Header.Get("Content-Encoding"); ce != "gzip" {
				t.Fatalf("Content-Encoding with gzip accepted = %q", ce)
			}
			zr, err := gzip.NewReader(bytes.NewReader(zBody))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(plain, gotBody) {
				t.Errorf("the gzip body differs from the plain one")
			}
			if resp, _ := response(t, gotH, http.Header{"Accept-Encoding": {"gzip;q=0, identity"}}); resp.Header.Get("Content-Encoding") != "" {
				t.Errorf("gzip;q=0 got Content-Encoding %q", resp.Header.Get("Content-Encoding"))
			}
		})
	}
}

// Label values and help texts are escaped as the format says.
func TestTextEscaping(t *testing.T) {
	var b bytes.Buffer
	w := newTextWriter(&b, newKept[[]byte](1))
	w.family("m", "help with \\ and\nnewline and \"quotes\"", gauge)
	w.sample(1.5, -1, pair("a", "back\\slash \"quoted\"\nline"))
	w.sample(2e21, 1700000000123, pair("a", ""))
	w.family("empty", "no samples: no header", counter)
	w.family("n", "h", counter)
	w.sample(0, -1)
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	want := `# HELP m help with \\ and\nnewline and "quotes"
# TYPE m gauge
m{a="back\\slash \"quoted\"\nline"} 1.5
m{a=""} 2e+21 1700000000123
# HELP n h
# TYPE n counter
n 0
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := parser.TextToMetricFamilies(strings.NewReader(b.String())); err != nil {
		t.Errorf("the output does not parse: %v", err)
	}
}

// The gzip writers are kept between responses, up to their count, and a
// writer used again compresses the next body whole: three responses at
// once, then three in turn.
func TestGzipWritersKept(t *testing.T) {
	gz := newGzipWriters(2)
	bodies := []string{"first\n", strings.Repeat("second 12345\n", 5000), "third\n"}
	for round := range 2 {
		var recs []*httptest.ResponseRecorder
		var ends []func()
		for i, body := range bodies {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			out, end := metricsResponse(rec, req, gz)
			if _, err := io.WriteString(out, body); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
			if round == 0 {
				ends = append(ends, end) // all open at once
			} else {
				end()
			}
			if round == 1 && len(gz.zw.free) != 2 {
				t.Errorf("response %d in turn: %d writers kept, want 2", i, len(gz.zw.free))
			}
		}
		for _, end := range ends {
			end()
		}
		if round == 0 && len(gz.zw.free) != 2 {
			t.Errorf("after three responses at once: %d writers kept, want 2", len(gz.zw.free))
		}
		for i, rec := range recs {
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil || string(got) != bodies[i] {
				t.Errorf("round %d, response %d: read %d bytes (%v), want %d", round, i, len(got), err, len(bodies[i]))
			}
		}
	}
}
