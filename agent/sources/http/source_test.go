package http

import (
	"bytes"
	"context"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/internal/polltest"
)

const (
	node = "node1"
	freq = time.Minute // CheckFrequency; the fake clock moves only when a test steps it
)

// podYAML is a good manifest of pod name running image.
func podYAML(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: app
    image: %s
`, name, image)
}

// podListJSON is a PodList of the pods given as name=image.
func podListJSON(pods ...string) string {
	items := make([]string, 0, len(pods))
	for _, p := range pods {
		name, image, _ := strings.Cut(p, "=")
		items = append(items, fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"containers":[{"name":"app","image":%q}]}}`, name, image))
	}
	return `{"apiVersion":"v1","kind":"PodList","items":[` + strings.Join(items, ",") + `]}`
}

// answer is what the fake server answers.
type answer struct {
	status int    // 200 when zero
	body   []byte // the body
	// contentLength, when set, is sent as the Content-Length header, and
	// the body is cut to it.
	contentLength int
	// hang makes the server answer nothing until the request is cancelled.
	hang bool
}

// server is an http.Handler that answers what the test sets and records
// the requests it gets.
type server struct {
	mu      sync.Mutex
	answer  answer
	headers []nethttp.Header // of each request, in order
}

func (s *server) set(a answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = a
}

func (s *server) setBody(body string) { s.set(answer{body: []byte(body)}) }

func (s *server) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.headers)
}

func (s *server) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	s.mu.Lock()
	a := s.answer
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	if a.hang {
		<-r.Context().Done()
		return
	}
	body := a.body
	if a.contentLength > 0 {
		w.Header().Set("Content-Length", strconv.Itoa(a.contentLength))
		body = body[:min(len(body), a.contentLength)]
	}
	if a.status != 0 {
		w.WriteHeader(a.status)
	}
	_, _ = w.Write(body)
}

// harness runs one Source against a real HTTP server and a fake clock.
type harness struct {
	t       *testing.T
	srv     *server
	ts      *httptest.Server
	clock   *testingclock.FakeClock
	updates chan sources.Update // buffered so that Run never waits on the test; closed by no one
	logs    ktesting.Buffer
	url     string
}

// start serves first from a new server and runs a Source against it;
// mutate, if not nil, changes the Config first.
func start(t *testing.T, first answer, mutate func(*Config)) *harness {
	t.Helper()
	srv := &server{answer: first}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close) // after Run stopped: cleanups run last in, first out
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(5)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	h := &harness{
		t:       t,
		srv:     srv,
		ts:      ts,
		clock:   testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		updates: make(chan sources.Update, 100),
		logs:    logger.GetSink().(ktesting.Underlier).GetBuffer(),
		url:     ts.URL + "/pods",
	}
	cfg := Config{URL: h.url, NodeName: node, CheckFrequency: freq, Clock: h.clock}
	if mutate != nil {
		mutate(&cfg)
	}
	src, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		src.Run(ctx, h.updates)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitLimit):
			t.Errorf("Run did not return within %v of cancel", waitLimit)
		}
	})
	return h
}

// poll makes the source poll once more and waits until the server got the
// request. The server counts a request before the source has taken in its
// answer, and a tick that comes while a fetch is under way is skipped (by
// design: see Run), so a step right after the previous poll may be lost:
// poll steps again when a step brought no request within stepWait. Under
// heavy load a step that was not lost but slow may then bring a second
// fetch of the same answer, which the tests' checks allow (a body is
// judged, and an error logged, once).
func (h *harness) poll() {
	h.t.Helper()
	const stepWait = 100 * time.Millisecond
	n := h.srv.requests()
	lastStep := time.Time{}
	polltest.True(h.t, 5*time.Second, "the source to poll after a clock step", func() bool {
		if h.srv.requests() > n {
			return true
		}
		if time.Since(lastStep) >= stepWait {
			h.clock.Step(freq)
			lastStep = time.Now()
		}
		return false
	})
}

// waitLimit bounds the real time a test waits for what must come: an
// Update, Run's return. It only tells "never" from "eventually" (taking in
// a body over the cap under the race detector on a loaded machine takes
// seconds), so it is generous.
const waitLimit = 30 * time.Second

// next returns the next Update, waiting at most waitLimit.
func (h *harness) next() sources.Update {
	h.t.Helper()
	select {
	case u := <-h.updates:
		return u
	case <-time.After(waitLimit):
		h.t.Fatalf("no Update within %v", waitLimit)
		return sources.Update{}
	}
}

// quiet fails if an Update arrives within a short while. Used after polls
// that must not send anything: once the server got the last request, the
// source has nothing left to do but judge that body and send.
func (h *harness) quiet() {
	h.t.Helper()
	select {
	case u := <-h.updates:
		h.t.Fatalf("unexpected Update %v", summarize(u))
	case <-time.After(200 * time.Millisecond):
	}
}

// snap is an Update in short: pods as "name=image", and the one error's
// message (empty for none).
type snap struct {
	pods []string
	err  string
}

func summarize(u sources.Update) snap {
	var s snap
	for _, p := range u.Pods {
		s.pods = append(s.pods, p.Name+"="+p.Spec.Containers[0].Image)
	}
	if len(u.Errors) > 0 {
		s.err = u.Errors[0].Error()
	}
	return s
}

func (s snap) String() string { return fmt.Sprintf("pods %q error %q", s.pods, s.err) }

// expect checks the next Update: its pods exactly, and its error by
// substring (none when wantErr is empty).
func (h *harness) expect(pods []string, wantErr string) sources.Update {
	h.t.Helper()
	u := h.next()
	got := summarize(u)
	if u.Source != sources.HTTP {
		h.t.Errorf("Update.Source = %q, want %q", u.Source, sources.HTTP)
	}
	if u.Pods == nil {
		h.t.Errorf("Update.Pods is nil, want an empty set")
	}
	if !slices.Equal(got.pods, pods) {
		h.t.Fatalf("Update = %v, want pods %q", got, pods)
	}
	switch {
	case wantErr == "" && len(u.Errors) > 0:
		h.t.Fatalf("Update = %v, want no error", got)
	case wantErr != "" && (len(u.Errors) != 1 || !strings.Contains(got.err, wantErr)):
		h.t.Fatalf("Update = %v, want one error containing %q", got, wantErr)
	case wantErr != "":
		if e := u.Errors[0]; e.Source != sources.HTTP || e.Origin != h.url {
			h.t.Errorf("error source %q origin %q, want %q %q", e.Source, e.Origin, sources.HTTP, h.url)
		}
	}
	return u
}

// logCount counts the log lines containing s.
func (h *harness) logCount(s string) int { return strings.Count(h.logs.String(), s) }

const logBad = "Cannot use the manifest URL"

func TestNew(t *testing.T) {
	tests := []struct {
		name, url, node string
		wantErr         string
	}{
		{name: "http", url: "http://config.local/pods", node: node},
		{name: "https with a port", url: "https://config.local:8443/pods.yaml", node: node},
		{name: "other scheme", url: "ftp://config.local/pods", node: node, wantErr: `--manifest-url "ftp://config.local/pods": must be an http:// or https:// URL`},
		{name: "path only", url: "/etc/pods.yaml", node: node, wantErr: "--manifest-url"},
		{name: "no host", url: "http:///pods", node: node, wantErr: "with a host"},
		{name: "empty", url: "", node: node, wantErr: "--manifest-url"},
		{name: "unparsable", url: "http://a b/%zz", node: node, wantErr: "--manifest-url"},
		{name: "password not repeated", url: "ftp://user:secret@x/", node: node, wantErr: "user:xxxxx@x"},
		{name: "no node name", url: "http://config.local/pods", wantErr: "node name is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{URL: tt.url, NodeName: tt.node})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if s.checkFrequency != DefaultCheckFrequency || s.client == nil || s.client.Timeout != DefaultTimeout || s.clock == nil {
					t.Errorf("defaults not applied: %+v", s)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("New error shows the password: %v", err)
			}
		})
	}
}

// TestFirstFetch checks the first Update for every kind of body: it always
// comes, with the pods or with the error.
func TestFirstFetch(t *testing.T) {
	big := append([]byte(podYAML("web", "nginx:1")+"#"), bytes.Repeat([]byte("x"), manifest.MaxSize)...)
	tests := []struct {
		name    string
		answer  answer
		pods    []string
		wantErr string
	}{
		{name: "pod yaml", answer: answer{body: []byte(podYAML("web", "nginx:1"))}, pods: []string{"web-node1=nginx:1"}},
		{name: "pod json", answer: answer{body: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"nginx:1"}]}}`)},
			pods: []string{"web-node1=nginx:1"}},
		{name: "pod list json", answer: answer{body: []byte(podListJSON("web=nginx:1", "api=api:1"))}, pods: []string{"web-node1=nginx:1", "api-node1=api:1"}},
		{name: "pod list yaml", answer: answer{body: []byte("apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: web}\n  spec:\n    containers: [{name: app, image: 'nginx:1'}]\n")},
			pods: []string{"web-node1=nginx:1"}},
		{name: "empty pod list", answer: answer{body: []byte(podListJSON())}, pods: []string{}},
		{name: "server error", answer: answer{status: 500, body: []byte("oops")}, wantErr: "server answered 500 Internal Server Error: want 200 OK"},
		{name: "not found", answer: answer{status: 404}, wantErr: "server answered 404 Not Found"},
		{name: "empty body", answer: answer{}, wantErr: "body rejected: manifest is empty"},
		{name: "malformed body", answer: answer{body: []byte(strings.Replace(podYAML("web", "nginx:1"), "image:", "imagee:", 1))},
			wantErr: `body rejected: unknown field "spec.containers[0].imagee"`},
		{name: "not yaml", answer: answer{body: []byte("<html>hello</html>")}, wantErr: "body rejected: manifest is not an object"},
		{name: "invalid item rejects the body", answer: answer{body: []byte(podListJSON("web=nginx:1", "api="))},
			wantErr: "body rejected: invalid pod: items[1].spec.containers[0].image: Required value"},
		{name: "two items define one pod", answer: answer{body: []byte(podListJSON("web=nginx:1", "web=nginx:2"))},
			wantErr: `items[1].metadata.name: Duplicate value: "web"`},
		{name: "static pod restrictions", answer: answer{body: []byte(podYAML("web", "nginx:1") + "  serviceAccountName: default\n")},
			wantErr: "spec.serviceAccountName: Forbidden: static pods may not reference serviceaccounts"},
		{name: "body over the cap", answer: answer{body: big}, wantErr: "body is larger than the cap of 10485760 bytes (10 MiB)"},
		{name: "body over the cap by its length", answer: answer{body: big, contentLength: manifest.MaxSize + 1},
			wantErr: "body is larger than the cap of 10485760 bytes (10 MiB)"},
		{name: "PodList of 3,000,000 empty items", answer: answer{body: []byte(`{"apiVersion":"v1","kind":"PodList","items":[` + strings.Repeat("{},", 3e6) + `{}]}`)},
			wantErr: "body rejected: items: the PodList holds more than 10000 pods"},
		{name: "a YAML string aliased past MaxSize", answer: answer{body: []byte("apiVersion: v1\nkind: PodList\nitems:\n- &p {metadata: {name: " +
			strings.Repeat("w", 1<<20) + "}}\n" + strings.Repeat("- *p\n", 11))},
			wantErr: "body rejected: YAML document 1: the YAML's aliases (*name) expand it to more than 10485760 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, tt.answer, nil)
			u := h.expect(tt.pods, tt.wantErr)
			for _, p := range u.Pods {
				if p.Annotations[manifest.AnnotationConfigSource] != sources.HTTP || p.Spec.NodeName != node || p.UID == "" {
					t.Errorf("pod %s lacks its static identity: %v", p.Name, p.Annotations)
				}
			}
			if tt.wantErr != "" && h.logCount(logBad) != 1 {
				t.Errorf("error logged %d times, want once:\n%s", h.logCount(logBad), h.logs.String())
			}
		})
	}
}

func TestHeadersOnEveryRequest(t *testing.T) {
	header := nethttp.Header{"Authorization": {"Bearer t0k3n"}, "X-Node": {"a", "b"}}
	h := start(t, answer{body: []byte(podYAML("web", "nginx:1"))}, func(c *Config) { c.Header = header })
	header.Set("X-Node", "changed after New") // New keeps its own copy
	h.expect([]string{"web-node1=nginx:1"}, "")
	h.poll()
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	if len(h.srv.headers) != 2 {
		t.Fatalf("server got %d requests, want 2", len(h.srv.headers))
	}
	for i, got := range h.srv.headers {
		if got.Get("Authorization") != "Bearer t0k3n" || !slices.Equal(got.Values("X-Node"), []string{"a", "b"}) {
			t.Errorf("request %d headers = %v", i, got)
		}
	}
}

func TestUnchangedBodySendsNothing(t *testing.T) {
	h := start(t, answer{body: []byte(podYAML("web", "nginx:1"))}, nil)
	h.expect([]string{"web-node1=nginx:1"}, "")
	for range 3 {
		h.poll()
	}
	h.quiet()
	if n := h.logCount("Read pods from the manifest URL"); n != 1 {
		t.Errorf("body judged %d times, want once", n)
	}
	h.srv.setBody(podYAML("web", "nginx:2"))
	h.poll()
	h.expect([]string{"web-node1=nginx:2"}, "")
}

func TestEditKeepsUID(t *testing.T) {
	h := start(t, answer{body: []byte(podListJSON("web=nginx:1", "api=api:1"))}, nil)
	first := h.expect([]string{"web-node1=nginx:1", "api-node1=api:1"}, "")

	// web edited, api dropped, db added.
	h.srv.setBody(podListJSON("db=db:1", "web=nginx:2"))
	h.poll()
	second := h.expect([]string{"db-node1=db:1", "web-node1=nginx:2"}, "")
	if first.Pods[0].UID != second.Pods[1].UID {
		t.Errorf("UID of web changed with its image: %s -> %s", first.Pods[0].UID, second.Pods[1].UID)
	}
	if first.Pods[0].Annotations[manifest.AnnotationConfigHash] == second.Pods[1].Annotations[manifest.AnnotationConfigHash] {
		t.Errorf("config.hash of web did not change with its image")
	}
	if second.Pods[0].UID == first.Pods[1].UID {
		t.Errorf("db got the UID of api")
	}
}

func TestErrorsKeepLastGoodSet(t *testing.T) {
	good := podYAML("web", "nginx:1")
	h := start(t, answer{body: []byte(good)}, nil)
	want := []string{"web-node1=nginx:1"}
	h.expect(want, "")

	h.srv.set(answer{status: 500})
	h.poll()
	h.expect(want, "server answered 500 Internal Server Error")
	for range 3 {
		h.poll()
	}
	h.quiet()
	if n := h.logCount(logBad); n != 1 {
		t.Fatalf("500 logged %d times over 4 polls, want once:\n%s", n, h.logs.String())
	}

	h.srv.set(answer{status: 503})
	h.poll()
	h.expect(want, "server answered 503 Service Unavailable")
	if n := h.logCount(logBad); n != 2 {
		t.Fatalf("a new error was not logged: %d lines, want 2", n)
	}

	// The same good body again: no decode, the error clears.
	h.srv.setBody(good)
	h.poll()
	h.expect(want, "")
	if n := h.logCount("Manifest URL is good again"); n != 1 {
		t.Errorf("recovery logged %d times, want once", n)
	}

	// A bad body, fetched again and again, is judged and logged once.
	bad := strings.Replace(good, "image:", "imagee:", 1)
	h.srv.setBody(bad)
	h.poll()
	h.expect(want, `unknown field "spec.containers[0].imagee"`)
	for range 2 {
		h.poll()
	}
	h.quiet()
	if n := h.logCount(logBad); n != 3 {
		t.Errorf("bad body logged %d times in all, want 3 (500, 503, bad body)", n)
	}

	h.srv.setBody(podYAML("web", "nginx:2"))
	h.poll()
	h.expect([]string{"web-node1=nginx:2"}, "")
}

func TestTimeout(t *testing.T) {
	client := &nethttp.Client{Timeout: 100 * time.Millisecond}
	h := start(t, answer{hang: true}, func(c *Config) { c.Client = client })
	h.expect([]string{}, "Client.Timeout exceeded")

	h.srv.setBody(podYAML("web", "nginx:1"))
	h.poll()
	h.expect([]string{"web-node1=nginx:1"}, "")

	h.srv.set(answer{hang: true})
	h.poll()
	h.expect([]string{"web-node1=nginx:1"}, "Client.Timeout exceeded")
}

func TestServerGone(t *testing.T) {
	h := start(t, answer{body: []byte(podYAML("web", "nginx:1"))}, nil)
	h.expect([]string{"web-node1=nginx:1"}, "")
	h.ts.Close()
	h.clock.Step(freq) // the server cannot count this request
	h.expect([]string{"web-node1=nginx:1"}, "fetch: Get \""+h.url+"\"")
}

func TestCancelDuringFetch(t *testing.T) {
	srv := &server{answer: answer{hang: true}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	src, err := New(Config{URL: ts.URL, NodeName: node, Clock: testingclock.NewFakeClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	updates := make(chan sources.Update, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		src.Run(ctx, updates)
	}()
	polltest.True(t, 5*time.Second, "a request", func() bool { return srv.requests() > 0 })
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of cancel while fetching (the default timeout is 10s)")
	}
	if len(updates) != 0 {
		t.Errorf("a cancelled fetch sent an Update: %v", summarize(<-updates))
	}
}

// The snapshot of one fetch goes out while the next fetch waits on a URL
// that does not answer: a fetch never holds up a send. (Were the fetch
// made on Run's loop, the snapshot would wait for the client's timeout,
// and then for its turn against the next tick, fetch after fetch.)
func TestSendWhileFetching(t *testing.T) {
	srv := &server{answer: answer{status: nethttp.StatusInternalServerError}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	clk := testingclock.NewFakeClock(time.Now())
	src, err := New(Config{URL: ts.URL, NodeName: node, CheckFrequency: freq, Clock: clk, Client: &nethttp.Client{Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	updates := make(chan sources.Update) // unbuffered: the test takes each when it wants
	done := make(chan struct{})
	go func() {
		defer close(done)
		src.Run(ctx, updates)
	}()
	defer func() { cancel(); <-done }()
	polltest.Until(t, 5*time.Second, "the first request", func() (bool, string) {
		return srv.requests() >= 1, fmt.Sprintf("%d requests", srv.requests())
	})
	// The first fetch's snapshot waits to be sent; the next fetch hangs.
	srv.set(answer{hang: true})
	polltest.Until(t, 5*time.Second, "the second request, the clock stepped at each poll", func() (bool, string) {
		if n := srv.requests(); n >= 2 {
			return true, ""
		}
		clk.Step(freq)
		return false, fmt.Sprintf("%d requests", srv.requests())
	})
	select {
	case u := <-updates:
		if got := summarize(u); !strings.Contains(got.err, "500") {
			t.Errorf("Update = %v, want the 500", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first fetch's snapshot was not sent while the second fetch hangs")
	}
}
