package podconfig

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/sources"
)

// pod returns a static-looking pod; opts change it.
func pod(name string, opts ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: "default",
			UID:       types.UID("uid-" + name),
			Annotations: map[string]string{
				manifest.AnnotationConfigSource: sources.File,
				manifest.AnnotationConfigHash:   "h1",
				manifest.AnnotationConfigSeen:   "2026-01-01T00:00:00Z",
			},
		},
		Spec:   v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "nginx:1"}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func image(img string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Image = img }
}

func label(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func annotation(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Annotations[k] = v }
}

func deleted(at time.Time, grace int64) func(*v1.Pod) {
	return func(p *v1.Pod) {
		ts := metav1.NewTime(at)
		p.DeletionTimestamp = &ts
		p.DeletionGracePeriodSeconds = &grace
	}
}

func uid(u types.UID) func(*v1.Pod) {
	return func(p *v1.Pod) { p.UID = u }
}

func namespace(ns string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Namespace = ns }
}

func phase(ph v1.PodPhase) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Status.Phase = ph }
}

func update(src string, pods ...*v1.Pod) sources.Update {
	return sources.Update{Source: src, Pods: pods}
}

// describe renders ops as "OP source: name,name" lines, to compare.
func describe(ops []PodUpdate) []string {
	var out []string
	for _, op := range ops {
		var names []string
		for _, p := range op.Pods {
			names = append(names, p.Name)
		}
		out = append(out, fmt.Sprintf("%s %s: %s", op.Op, op.Source, strings.Join(names, ",")))
	}
	return out
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestMergeTransitions(t *testing.T) {
	samePod := pod("a")
	tests := []struct {
		name   string
		before []sources.Update // merged first; their ops are not checked
		next   sources.Update
		want   []string
	}{
		{name: "first empty update", next: update("file"), want: nil},
		{name: "new pods are added in source order", next: update("file", pod("b"), pod("a")), want: []string{"ADD file: b,a"}},
		{
			name:   "identical set is no op",
			before: []sources.Update{update("file", pod("a"))},
			next:   update("file", pod("a")),
		},
		{
			name:   "the same pod sent again is no op",
			before: []sources.Update{update("file", samePod)},
			next:   update("file", samePod),
		},
		{
			name:   "only config.seen changed is no op",
			before: []sources.Update{update("file", pod("a"))},
			next:   update("file", pod("a", annotation(manifest.AnnotationConfigSeen, "2026-02-02T00:00:00Z"))),
		},
		{
			name:   "other metadata is no op",
			before: []sources.Update{update("file", pod("a"))},
			next:   update("file", pod("a", func(p *v1.Pod) { p.ResourceVersion = "7" })),
		},
		{
			name:   "spec change is update",
			before: []sources.Update{update("file", pod("a"), pod("b"))},
			next:   update("file", pod("a", image("nginx:2")), pod("b")),
			want:   []string{"UPDATE file: a"},
		},
		{
			name:   "label change is update",
			before: []sources.Update{update("file", pod("a"))},
			next:   update("file", pod("a", label("tier", "web"))),
			want:   []string{"UPDATE file: a"},
		},
		{
			name:   "annotation change is update",
			before: []sources.Update{update("file", pod("a"))},
			next:   update("file", pod("a", annotation(manifest.AnnotationConfigHash, "h2"))),
			want:   []string{"UPDATE file: a"},
		},
		{
			name:   "annotation removed is update",
			before: []sources.Update{update("file", pod("a", annotation("x", "1")))},
			next:   update("file", pod("a")),
			want:   []string{"UPDATE file: a"},
		},
		{
			name:   "generation change is update",
			before: []sources.Update{update("api", pod("a"))},
			next:   update("api", pod("a", func(p *v1.Pod) { p.Generation = 2 })),
			want:   []string{"UPDATE api: a"},
		},
		{
			name:   "deletion timestamp newly set is delete",
			before: []sources.Update{update("api", pod("a"), pod("b"))},
			next:   update("api", pod("a", deleted(t0, 30)), pod("b")),
			want:   []string{"DELETE api: a"},
		},
		{
			name:   "deletion grace shrinking after deletion is update",
			before: []sources.Update{update("api", pod("a", deleted(t0, 30)))},
			next:   update("api", pod("a", deleted(t0, 5))),
			want:   []string{"UPDATE api: a"},
		},
		{
			name:   "same deletion again is no op",
			before: []sources.Update{update("api", pod("a", deleted(t0, 30)))},
			next:   update("api", pod("a", deleted(t0, 30))),
		},
		{
			name:   "deletion timestamp in another zone is the same",
			before: []sources.Update{update("api", pod("a", deleted(t0, 30)))},
			next:   update("api", pod("a", deleted(t0.In(time.FixedZone("x", 3600)), 30))),
		},
		{
			name:   "status only change is reconcile",
			before: []sources.Update{update("api", pod("a"))},
			next:   update("api", pod("a", phase(v1.PodRunning))),
			want:   []string{"RECONCILE api: a"},
		},
		{
			name:   "spec and status change is update only",
			before: []sources.Update{update("api", pod("a"))},
			next:   update("api", pod("a", image("x:2"), phase(v1.PodRunning))),
			want:   []string{"UPDATE api: a"},
		},
		{
			name:   "pod gone is remove",
			before: []sources.Update{update("file", pod("a"), pod("b"), pod("c"))},
			next:   update("file", pod("b")),
			want:   []string{"REMOVE file: a,c"},
		},
		{
			name:   "empty set removes all",
			before: []sources.Update{update("file", pod("a"))},
			next:   update("file"),
			want:   []string{"REMOVE file: a"},
		},
		{
			name:   "same name new UID is remove then add",
			before: []sources.Update{update("file", pod("a"))},
			next:   update("file", pod("a", func(p *v1.Pod) { p.UID = "other" })),
			want:   []string{"REMOVE file: a", "ADD file: a"},
		},
		{
			name: "every op at once, in order",
			before: []sources.Update{update("api",
				pod("keep"), pod("upd"), pod("del"), pod("rec"), pod("gone"))},
			next: update("api",
				pod("rec", phase(v1.PodRunning)), pod("del", deleted(t0, 1)), pod("upd", image("x:9")),
				pod("new"), pod("keep")),
			want: []string{"REMOVE api: gone", "ADD api: new", "UPDATE api: upd", "DELETE api: del", "RECONCILE api: rec"},
		},
		{
			name:   "sources are independent",
			before: []sources.Update{update("file", pod("a")), update("http", pod("h"))},
			next:   update("file"),
			want:   []string{"REMOVE file: a"},
		},
		{
			name:   "same UID in another source is another pod",
			before: []sources.Update{update("file", pod("a"))},
			next:   update("http", pod("b", uid("uid-a"))),
			want:   []string{"ADD http: b"},
		},
		{
			name:   "same name from another source is refused",
			before: []sources.Update{update("file", pod("a"))},
			next:   update("http", pod("a", uid("http-a")), pod("b")),
			want:   []string{"ADD http: b"},
		},
		{
			name:   "the first seen keeps its name whatever the source",
			before: []sources.Update{update("http", pod("a", uid("http-a")))},
			next:   update("file", pod("a")),
		},
		{
			name:   "same name in another namespace is another pod",
			before: []sources.Update{update("file", pod("a"))},
			next:   update("http", pod("a", uid("http-a"), namespace("ops"))),
			want:   []string{"ADD http: a"},
		},
		{
			name:   "refused pod is admitted at once when the first goes away",
			before: []sources.Update{update("file", pod("a"), pod("b")), update("http", pod("a", uid("http-a"), image("x:2")))},
			next:   update("file", pod("b")),
			want:   []string{"REMOVE file: a", "ADD http: a"},
		},
		{
			name: "refused pod stays refused while the first runs",
			before: []sources.Update{
				update("file", pod("a")),
				update("http", pod("a", uid("http-a"))),
			},
			next: update("file", pod("a", image("x:2"))),
			want: []string{"UPDATE file: a"},
		},
		{
			name:   "an edit of a refused pod is no op",
			before: []sources.Update{update("file", pod("a")), update("http", pod("a", uid("http-a")))},
			next:   update("http", pod("a", uid("http-a"), image("x:3"))),
		},
		{
			name:   "refused pod leaves with its source's update",
			before: []sources.Update{update("file", pod("a")), update("http", pod("a", uid("http-a")))},
			next:   update("http"),
		},
		{
			name:   "a source's admitted pod keeps its name over its new one",
			before: []sources.Update{update("api", pod("a"))},
			next:   update("api", pod("a", uid("api-a2")), pod("a")),
		},
		{
			name: "two new pods of one name in one update: the first is admitted",
			next: update("api", pod("a", uid("api-a1")), pod("a", uid("api-a2"), image("x:2"))),
			want: []string{"ADD api: a"},
		},
		{
			name: "duplicate UID in one update keeps the first",
			next: update("file", pod("a"), pod("a", image("x:2"))),
			want: []string{"ADD file: a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New([]string{"file"})
			logger := klog.Background()
			for _, u := range tt.before {
				m.merge(logger, u)
			}
			got := describe(m.merge(logger, tt.next))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ops = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUpdateCarriesNewPodAndKeepsFirstSeen(t *testing.T) {
	m := New([]string{"file"})
	logger := klog.Background()
	m.merge(logger, update("file", pod("a")))

	edited := pod("a", image("nginx:2"), annotation(manifest.AnnotationConfigSeen, "2026-05-05T00:00:00Z"))
	ops := m.merge(logger, update("file", edited))
	if len(ops) != 1 || ops[0].Op != UPDATE {
		t.Fatalf("ops = %q, want one UPDATE", describe(ops))
	}
	got := ops[0].Pods[0]
	if img := got.Spec.Containers[0].Image; img != "nginx:2" {
		t.Errorf("UPDATE carries image %q, want the new nginx:2", img)
	}
	if s := got.Annotations[manifest.AnnotationConfigSeen]; s != "2026-01-01T00:00:00Z" {
		t.Errorf("config.seen = %q, want the first one", s)
	}
	if s := edited.Annotations[manifest.AnnotationConfigSeen]; s != "2026-05-05T00:00:00Z" {
		t.Errorf("the source's pod was modified: config.seen = %q", s)
	}
	if pods := m.Pods(); len(pods) != 1 || pods[0] != got {
		t.Errorf("Pods() does not hold the updated pod")
	}
}

func TestAllSourcesSeen(t *testing.T) {
	tests := []struct {
		name       string
		configured []string
		updates    []string
		want       bool
	}{
		{name: "none configured", want: true},
		{name: "nothing sent", configured: []string{"file", "http"}, want: false},
		{name: "one of two", configured: []string{"file", "http"}, updates: []string{"file"}, want: false},
		{name: "unconfigured source does not count", configured: []string{"file", "http"}, updates: []string{"file", "api"}, want: false},
		{name: "all", configured: []string{"file", "http"}, updates: []string{"http", "file"}, want: true},
		{name: "duplicates in config", configured: []string{"file", "file"}, updates: []string{"file"}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(tt.configured)
			for _, s := range tt.updates {
				m.merge(klog.Background(), update(s))
			}
			if got := m.AllSourcesSeen(); got != tt.want {
				t.Fatalf("AllSourcesSeen = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestErrorsAndPods(t *testing.T) {
	m := New([]string{"file", "http"})
	logger := klog.Background()
	errB := sources.ManifestError{Source: "file", Origin: "/m/b.yaml", Err: errors.New("bad b")}
	errA := sources.ManifestError{Source: "file", Origin: "/m/a.yaml", Err: errors.New("bad a")}
	errH := sources.ManifestError{Source: "http", Origin: "http://x", Err: errors.New("bad h")}
	m.merge(logger, sources.Update{Source: "http", Pods: []*v1.Pod{pod("z")}, Errors: []sources.ManifestError{errH}})
	m.merge(logger, sources.Update{Source: "file", Pods: []*v1.Pod{pod("y"), pod("x")}, Errors: []sources.ManifestError{errB, errA}})

	var got []string
	for _, e := range m.Errors() {
		got = append(got, e.Error())
	}
	want := []string{"/m/a.yaml: bad a", "/m/b.yaml: bad b", "http://x: bad h"}
	if !slices.Equal(got, want) {
		t.Errorf("Errors = %q, want %q", got, want)
	}
	var names []string
	for _, p := range m.Pods() {
		names = append(names, p.Name)
	}
	if want := []string{"x", "y", "z"}; !slices.Equal(names, want) {
		t.Errorf("Pods = %q, want %q", names, want)
	}

	// A fixed manifest clears its error; other sources keep theirs.
	m.merge(logger, sources.Update{Source: "file", Pods: []*v1.Pod{pod("x")}})
	if errs := m.Errors(); len(errs) != 1 || errs[0].Origin != "http://x" {
		t.Errorf("after fix, Errors = %v, want only the http one", errs)
	}
}

func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := New([]string{"file"})
	in := make(chan sources.Update) // unbuffered: the test is the only sender
	out := make(chan PodUpdate, 10) // owned by the test, never closed
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx, in, out)
	}()

	send := func(u sources.Update) {
		t.Helper()
		select {
		case in <- u:
		case <-time.After(5 * time.Second):
			t.Fatal("Run does not receive")
		}
	}
	recv := func() PodUpdate {
		t.Helper()
		select {
		case op := <-out:
			return op
		case <-time.After(5 * time.Second):
			t.Fatal("no PodUpdate within 5s")
			return PodUpdate{}
		}
	}

	send(update("file", pod("a")))
	if op := recv(); op.Op != ADD || op.Pods[0].Name != "a" {
		t.Fatalf("got %v, want ADD a", describe([]PodUpdate{op}))
	}
	send(update("file", pod("b")))
	if got := []string{describe([]PodUpdate{recv()})[0], describe([]PodUpdate{recv()})[0]}; !slices.Equal(got, []string{"REMOVE file: a", "ADD file: b"}) {
		t.Fatalf("got %q", got)
	}
	if !m.AllSourcesSeen() {
		t.Error("AllSourcesSeen = false after an update from file")
	}

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestRunReturnsWhenInputCloses(t *testing.T) {
	in := make(chan sources.Update)
	close(in)
	done := make(chan struct{})
	go func() {
		defer close(done)
		New(nil).Run(context.Background(), in, make(chan PodUpdate))
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its input closed")
	}
}

func TestOpString(t *testing.T) {
	for op, want := range map[Op]string{ADD: "ADD", UPDATE: "UPDATE", DELETE: "DELETE", REMOVE: "REMOVE", RECONCILE: "RECONCILE", 0: "Op(0)"} {
		if got := op.String(); got != want {
			t.Errorf("Op(%d).String() = %q, want %q", int(op), got, want)
		}
	}
}

func TestConflictReportedAndLoggedOnce(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	logs := logger.GetSink().(ktesting.Underlier).GetBuffer()
	m := New([]string{"file", "http"})
	fileErr := sources.ManifestError{Source: "file", Origin: "/m/bad.yaml", Err: errors.New("bad")}
	m.merge(logger, sources.Update{Source: "file", Pods: []*v1.Pod{pod("web")}, Errors: []sources.ManifestError{fileErr}})
	for range 3 { // the same refused pod, sent again and again
		m.merge(logger, update("http", pod("web", uid("http-web")), pod("api")))
	}

	errs := m.Errors()
	if len(errs) != 2 || errs[0] != fileErr {
		t.Fatalf("Errors = %v, want the file error and one conflict", errs)
	}
	e := errs[1]
	want := "default/web from http (UID http-web) conflicts with the same pod from file (UID uid-web); keeping the first"
	if e.Source != "http" || e.Origin != "default/web" || !strings.HasPrefix(e.Err.Error(), want) {
		t.Errorf("conflict = %+v (%v), want source http, origin default/web, error %q", e, e.Err, want)
	}
	var conflict *ConflictError
	if !errors.As(e, &conflict) || conflict.KeptSource != "file" || conflict.UID != "http-web" {
		t.Errorf("errors.As(*ConflictError) = %+v", conflict)
	}
	if n := strings.Count(logs.String(), "Refusing pod"); n != 1 {
		t.Errorf("conflict logged %d times, want once:\n%s", n, logs.String())
	}
	var names []string
	for _, p := range m.Pods() {
		names = append(names, string(p.UID))
	}
	if want := []string{"uid-web", "uid-api"}; !slices.Equal(names, want) {
		t.Errorf("Pods = %q, want %q (the refused pod is not merged)", names, want)
	}

	// The first goes away: the refused one runs, and its error is gone.
	ops := m.merge(logger, update("file"))
	if got, want := describe(ops), []string{"REMOVE file: web", "ADD http: web"}; !slices.Equal(got, want) {
		t.Fatalf("ops = %q, want %q", got, want)
	}
	if errs := m.Errors(); len(errs) != 0 {
		t.Errorf("Errors = %v after the conflict ended, want none", errs)
	}
	if !strings.Contains(logs.String(), "Admitting pod") {
		t.Errorf("admission not logged:\n%s", logs.String())
	}

	// The file pod comes back: now it is the later one.
	m.merge(logger, update("file", pod("web")))
	if errs := m.Errors(); len(errs) != 1 || errs[0].Source != "file" || !strings.Contains(errs[0].Err.Error(), "from file (UID uid-web) conflicts with the same pod from http") {
		t.Errorf("Errors = %v, want the file pod refused", errs)
	}
}

func TestConflictNamesBothOrigins(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig())
	var counted []string
	m := New([]string{"file", "http"}, WithErrorCounter(func(source string) { counted = append(counted, source) }))
	web := pod("web")
	m.merge(logger, sources.Update{Source: "file", Pods: []*v1.Pod{web}, Origins: map[types.UID]string{web.UID: "/etc/kubernetes/manifests/web.yaml"}})
	other := pod("web", uid("http-web"))
	for range 2 { // the same refusal twice counts once
		m.merge(logger, sources.Update{Source: "http", Pods: []*v1.Pod{other}, Origins: map[types.UID]string{other.UID: "http://10.0.0.1/pods"}})
	}
	errs := m.Errors()
	if len(errs) != 1 {
		t.Fatalf("Errors = %v, want one conflict", errs)
	}
	want := "default/web from http http://10.0.0.1/pods conflicts with the same pod from file /etc/kubernetes/manifests/web.yaml; keeping the first"
	if errs[0].Origin != "http://10.0.0.1/pods" || !strings.HasPrefix(errs[0].Err.Error(), want) {
		t.Errorf("conflict = %q at %q, want %q at the URL", errs[0].Err, errs[0].Origin, want)
	}
	if !slices.Equal(counted, []string{"http"}) {
		t.Errorf("errors counted %v, want one for http", counted)
	}
	// A new error of the file source counts for it.
	bad := sources.ManifestError{Source: "file", Origin: "/m/bad.yaml", Err: errors.New("bad")}
	m.merge(logger, sources.Update{Source: "file", Pods: []*v1.Pod{web}, Origins: map[types.UID]string{web.UID: "/etc/kubernetes/manifests/web.yaml"}, Errors: []sources.ManifestError{bad}})
	if !slices.Equal(counted, []string{"http", "file"}) {
		t.Errorf("errors counted %v, want http then file", counted)
	}
}

// A source whose first Update is incomplete (its URL failed) has not
// reported its pods: the agent must not yet delete pods it does not know.
func TestAllSourcesSeenWaitsForCompleteUpdates(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig())
	m := New([]string{"file", "http"})
	m.merge(logger, update("file", pod("web")))
	failing := sources.Update{Source: "http", Pods: []*v1.Pod{}, Incomplete: true,
		Errors: []sources.ManifestError{{Source: "http", Origin: "http://x/pods", Err: errors.New("HTTP 503")}}}
	m.merge(logger, failing)
	if m.AllSourcesSeen() {
		t.Fatal("AllSourcesSeen after the URL source's only Update failed")
	}
	m.merge(logger, update("http", pod("api")))
	if !m.AllSourcesSeen() {
		t.Fatal("not AllSourcesSeen after both sources sent complete Updates")
	}
	m.merge(logger, failing)
	if !m.AllSourcesSeen() {
		t.Error("AllSourcesSeen went back to false after a later failure")
	}
}
