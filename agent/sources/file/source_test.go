package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/sources"
)

const node = "node1"

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

// badYAML fails validation: the container has no image.
const badYAML = `apiVersion: v1
kind: Pod
metadata:
  name: broken
spec:
  containers:
  - name: app
`

// harness runs one Source against a real directory and a fake clock.
type harness struct {
	t       *testing.T
	dir     string
	clock   *testingclock.FakeClock
	updates chan sources.Update // buffered so that Run never waits on the test; closed by no one
	logs    ktesting.Buffer
}

func start(t *testing.T, dir string, checkFrequency time.Duration) *harness {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(5)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	h := &harness{
		t:       t,
		dir:     dir,
		clock:   testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		updates: make(chan sources.Update, 100),
		logs:    logger.GetSink().(ktesting.Underlier).GetBuffer(),
	}
	src := New(Config{Path: dir, NodeName: node, CheckFrequency: checkFrequency, Clock: h.clock})
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

// next returns the next Update, waiting at most waitLimit of real time. When step
// is not zero it advances the fake clock by step every 10ms while waiting,
// so that quiet-period timers and rescans fire.
func (h *harness) next(step time.Duration) sources.Update {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		select {
		case u := <-h.updates:
			return u
		case <-time.After(10 * time.Millisecond):
			if step > 0 {
				h.clock.Step(step)
			}
		}
	}
	h.t.Fatalf("no Update within %v", waitLimit)
	return sources.Update{}
}

// snap is an Update in short: pods as "name=image" and errors as the base
// name of their file.
type snap struct {
	pods []string
	errs []string
}

func summarize(u sources.Update) snap {
	var s snap
	for _, p := range u.Pods {
		s.pods = append(s.pods, p.Name+"="+p.Spec.Containers[0].Image)
	}
	for _, e := range u.Errors {
		s.errs = append(s.errs, filepath.Base(e.Origin))
	}
	return s
}

func (s snap) String() string { return fmt.Sprintf("pods %q errors %q", s.pods, s.errs) }

func (h *harness) expect(step time.Duration, want snap) sources.Update {
	h.t.Helper()
	u := h.next(step)
	if u.Source != sources.File {
		h.t.Errorf("Update.Source = %q, want %q", u.Source, sources.File)
	}
	if got := summarize(u); !slices.Equal(got.pods, want.pods) || !slices.Equal(got.errs, want.errs) {
		h.t.Fatalf("Update = %v, want %v", got, want)
	}
	return u
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

const (
	// waitLimit bounds the real time a test waits for what must come: an
	// Update, Run's return. It only tells "never" from "eventually" (the
	// decoding of a hostile manifest under the race detector on a loaded
	// machine takes seconds), so it is generous.
	waitLimit = 30 * time.Second
	tick      = 50 * time.Millisecond // fake time per poll: lets the quiet period pass
	long      = time.Hour             // CheckFrequency that never fires unless stepped
)

func TestChanges(t *testing.T) {
	type step struct {
		name string
		do   func(t *testing.T, dir string)
		// clockStep advances the fake clock while waiting; tick when zero.
		clockStep time.Duration
		want      snap
	}
	web1, web2 := podYAML("web", "nginx:1"), podYAML("web", "nginx:2")
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "create, modify, delete", steps: []step{
			{name: "create", do: func(t *testing.T, d string) { write(t, filepath.Join(d, "web.yaml"), web1) },
				want: snap{pods: []string{"web-node1=nginx:1"}}},
			{name: "modify", do: func(t *testing.T, d string) { write(t, filepath.Join(d, "web.yaml"), web2) },
				want: snap{pods: []string{"web-node1=nginx:2"}}},
			{name: "add json", do: func(t *testing.T, d string) {
				write(t, filepath.Join(d, "api.json"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"api"},"spec":{"containers":[{"name":"a","image":"api:1"}]}}`)
			}, want: snap{pods: []string{"api-node1=api:1", "web-node1=nginx:2"}}},
			{name: "delete", do: func(t *testing.T, d string) { remove(t, filepath.Join(d, "web.yaml")) },
				want: snap{pods: []string{"api-node1=api:1"}}},
		}},
		{name: "atomic rename into place", steps: []step{
			{name: "first version", do: func(t *testing.T, d string) {
				write(t, filepath.Join(d, ".web.yaml.partial"), web1)
				rename(t, filepath.Join(d, ".web.yaml.partial"), filepath.Join(d, "web.yaml"))
			}, want: snap{pods: []string{"web-node1=nginx:1"}}},
			{name: "replaced", do: func(t *testing.T, d string) {
				write(t, filepath.Join(d, "web.yaml.tmp"), web2)
				rename(t, filepath.Join(d, "web.yaml.tmp"), filepath.Join(d, "web.yaml"))
			}, want: snap{pods: []string{"web-node1=nginx:2"}}},
		}},
		{name: "in-place rewrite in two writes", steps: []step{
			{name: "create", do: func(t *testing.T, d string) { write(t, filepath.Join(d, "web.yaml"), web1) },
				want: snap{pods: []string{"web-node1=nginx:1"}}},
			{name: "rewrite", do: func(t *testing.T, d string) {
				f, err := os.OpenFile(filepath.Join(d, "web.yaml"), os.O_WRONLY|os.O_TRUNC, 0)
				if err != nil {
					t.Fatal(err)
				}
				cut := strings.Index(web2, "kind: Po") + len("kind: Po") // the first half is no Pod
				for _, part := range []string{web2[:cut], web2[cut:]} {
					if _, err := f.WriteString(part); err != nil {
						t.Fatal(err)
					}
					if err := f.Sync(); err != nil {
						t.Fatal(err)
					}
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			}, want: snap{pods: []string{"web-node1=nginx:2"}}},
		}},
		{name: "ignored names", steps: []step{
			{name: "only ignored files, then one manifest", do: func(t *testing.T, d string) {
				for _, n := range []string{".hidden.yaml", "web.yaml~", "web.yaml.swp", ".web.yaml.swx", "web.yaml.tmp", "4913", "#web.yaml#", "notes.txt", "pod.manifest"} {
					write(t, filepath.Join(d, n), podYAML("ignored", "x:1"))
				}
				if err := os.Mkdir(filepath.Join(d, "dir.yaml"), 0o750); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(d, "web.yaml"), web1)
			}, want: snap{pods: []string{"web-node1=nginx:1"}}},
		}},
		{name: "symlinked file", steps: []step{
			{name: "link", do: func(t *testing.T, d string) {
				target := filepath.Join(filepath.Dir(d), "elsewhere.yaml")
				write(t, target, web1)
				if err := os.Symlink(target, filepath.Join(d, "web.yaml")); err != nil {
					t.Fatal(err)
				}
			}, want: snap{pods: []string{"web-node1=nginx:1"}}},
			{name: "target edited, seen by the rescan", clockStep: long, do: func(t *testing.T, d string) {
				write(t, filepath.Join(filepath.Dir(d), "elsewhere.yaml"), web2)
			}, want: snap{pods: []string{"web-node1=nginx:2"}}},
			{name: "link removed", do: func(t *testing.T, d string) { remove(t, filepath.Join(d, "web.yaml")) },
				want: snap{}},
		}},
		{name: "bad file beside good ones", steps: []step{
			{name: "good", do: func(t *testing.T, d string) { write(t, filepath.Join(d, "a.yaml"), podYAML("a", "a:1")) },
				want: snap{pods: []string{"a-node1=a:1"}}},
			{name: "bad", do: func(t *testing.T, d string) { write(t, filepath.Join(d, "b.yaml"), badYAML) },
				want: snap{pods: []string{"a-node1=a:1"}, errs: []string{"b.yaml"}}},
			{name: "another good", do: func(t *testing.T, d string) { write(t, filepath.Join(d, "c.yml"), podYAML("c", "c:1")) },
				want: snap{pods: []string{"a-node1=a:1", "c-node1=c:1"}, errs: []string{"b.yaml"}}},
			{name: "bad removed", do: func(t *testing.T, d string) { remove(t, filepath.Join(d, "b.yaml")) },
				want: snap{pods: []string{"a-node1=a:1", "c-node1=c:1"}}},
		}},
		{name: "good file turned bad keeps the old pod", steps: []step{
			{name: "good", do: func(t *testing.T, d string) { write(t, filepath.Join(d, "web.yaml"), web1) },
				want: snap{pods: []string{"web-node1=nginx:1"}}},
			{name: "bad", do: func(t *testing.T, d string) {
				write(t, filepath.Join(d, "web.yaml"), strings.Replace(web2, "image:", "imagee:", 1))
			}, want: snap{pods: []string{"web-node1=nginx:1"}, errs: []string{"web.yaml"}}},
			{name: "fixed", do: func(t *testing.T, d string) { write(t, filepath.Join(d, "web.yaml"), web2) },
				want: snap{pods: []string{"web-node1=nginx:2"}}},
			{name: "bad again", do: func(t *testing.T, d string) {
				write(t, filepath.Join(d, "web.yaml"), "kind: Pod\n")
			}, want: snap{pods: []string{"web-node1=nginx:2"}, errs: []string{"web.yaml"}}},
			{name: "deleted", do: func(t *testing.T, d string) { remove(t, filepath.Join(d, "web.yaml")) },
				want: snap{}},
		}},
		{name: "repeated identical writes send nothing", steps: []step{
			{name: "good", do: func(t *testing.T, d string) { write(t, filepath.Join(d, "web.yaml"), web1) },
				want: snap{pods: []string{"web-node1=nginx:1"}}},
			{name: "bad", do: func(t *testing.T, d string) { write(t, filepath.Join(d, "bad.yaml"), badYAML) },
				want: snap{pods: []string{"web-node1=nginx:1"}, errs: []string{"bad.yaml"}}},
			{name: "rewrites, touches, then a new file", do: func(t *testing.T, d string) {
				for range 3 {
					write(t, filepath.Join(d, "web.yaml"), web1)
					write(t, filepath.Join(d, "bad.yaml"), badYAML)
				}
				if err := os.Chmod(filepath.Join(d, "web.yaml"), 0o600); err != nil {
					t.Fatal(err)
				}
				now := time.Now().Add(time.Minute)
				if err := os.Chtimes(filepath.Join(d, "web.yaml"), now, now); err != nil {
					t.Fatal(err)
				}
				// Only this change may produce the next Update.
				write(t, filepath.Join(d, "new.yaml"), podYAML("new", "new:1"))
			}, want: snap{pods: []string{"new-node1=new:1", "web-node1=nginx:1"}, errs: []string{"bad.yaml"}}},
			{name: "rescan of an unchanged directory, then a new file", clockStep: long, do: func(t *testing.T, d string) {
				// The first step of the clock fires the rescan; nothing changed,
				// so the next Update is the one of the file written below.
				write(t, filepath.Join(d, "z.yaml"), podYAML("z", "z:1"))
			}, want: snap{pods: []string{"new-node1=new:1", "web-node1=nginx:1", "z-node1=z:1"}, errs: []string{"bad.yaml"}}},
		}},
		{name: "two files define one pod", steps: []step{
			{name: "first", do: func(t *testing.T, d string) { write(t, filepath.Join(d, "a.yaml"), web1) },
				want: snap{pods: []string{"web-node1=nginx:1"}}},
			{name: "second", do: func(t *testing.T, d string) { write(t, filepath.Join(d, "b.yaml"), web2) },
				want: snap{pods: []string{"web-node1=nginx:1"}, errs: []string{"b.yaml"}}},
			{name: "first removed", do: func(t *testing.T, d string) { remove(t, filepath.Join(d, "a.yaml")) },
				want: snap{pods: []string{"web-node1=nginx:2"}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "manifests")
			if err := os.Mkdir(dir, 0o750); err != nil {
				t.Fatal(err)
			}
			h := start(t, dir, long)
			h.expect(0, snap{})
			for _, s := range tt.steps {
				s.do(t, dir)
				step := s.clockStep
				if step == 0 {
					step = tick
				}
				h.expect(step, s.want)
			}
		})
	}
}

func TestInitialUpdate(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) string // returns the Path
		want  snap
	}{
		{name: "empty directory", setup: func(t *testing.T, root string) string { return root }, want: snap{}},
		{name: "missing directory", setup: func(t *testing.T, root string) string { return filepath.Join(root, "nope") }, want: snap{}},
		{name: "manifests present", setup: func(t *testing.T, root string) string {
			write(t, filepath.Join(root, "b.yaml"), podYAML("b", "b:1"))
			write(t, filepath.Join(root, "a.yml"), podYAML("a", "a:1"))
			write(t, filepath.Join(root, ".c.yaml"), podYAML("c", "c:1"))
			return root
		}, want: snap{pods: []string{"a-node1=a:1", "b-node1=b:1"}}},
		{name: "path is a file", setup: func(t *testing.T, root string) string {
			p := filepath.Join(root, "pod.yaml")
			write(t, p, podYAML("a", "a:1"))
			return p
		}, want: snap{errs: []string{"pod.yaml"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, tt.setup(t, t.TempDir()), long)
			u := h.expect(0, tt.want)
			for _, p := range u.Pods {
				if p.Annotations["kubernetes.io/config.source"] != sources.File || p.Spec.NodeName != node {
					t.Errorf("pod %s lacks its static identity: %v", p.Name, p.Annotations)
				}
			}
		})
	}
}

func TestEditKeepsUID(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir, long)
	h.expect(0, snap{})
	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "nginx:1"))
	first := h.expect(tick, snap{pods: []string{"web-node1=nginx:1"}}).Pods[0]
	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "nginx:2"))
	second := h.expect(tick, snap{pods: []string{"web-node1=nginx:2"}}).Pods[0]
	if first.UID != second.UID {
		t.Errorf("UID changed on edit: %s -> %s", first.UID, second.UID)
	}
	if first.Annotations["kubernetes.io/config.hash"] == second.Annotations["kubernetes.io/config.hash"] {
		t.Errorf("config.hash did not change on edit")
	}
	rename(t, filepath.Join(dir, "web.yaml"), filepath.Join(dir, "web2.yaml"))
	third := h.expect(tick, snap{pods: []string{"web-node1=nginx:2"}}).Pods[0]
	if third.UID == second.UID {
		t.Errorf("UID kept after the manifest moved to another file")
	}
}

func TestMissingDirectoryCreatedLater(t *testing.T) {
	const freq = 10 * time.Second
	dir := filepath.Join(t.TempDir(), "manifests")
	h := start(t, dir, freq)
	h.expect(0, snap{})

	create := func() {
		if err := os.Mkdir(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "nginx:1"))
	}
	create()
	first := h.expect(freq, snap{pods: []string{"web-node1=nginx:1"}})

	// Once watched, a change is seen without a rescan.
	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "nginx:2"))
	h.expect(0, snap{pods: []string{"web-node1=nginx:2"}})

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	h.expect(tick, snap{}) // once RecreateWindow has passed

	create()
	again := h.expect(freq, snap{pods: []string{"web-node1=nginx:1"}})
	if first.Pods[0].UID != again.Pods[0].UID {
		t.Errorf("UID differs after the directory came back: %s, %s", first.Pods[0].UID, again.Pods[0].UID)
	}
	write(t, filepath.Join(dir, "api.yaml"), podYAML("api", "api:1"))
	h.expect(0, snap{pods: []string{"api-node1=api:1", "web-node1=nginx:1"}})
}

func TestDirectoryReplaced(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "manifests")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	const freq = 10 * time.Second
	h := start(t, dir, freq)
	h.expect(0, snap{})

	// Build the new directory aside, then swap it in. The source may see the
	// directory missing in between and wait for it: step the clock by the
	// check frequency.
	staged := filepath.Join(root, "staged")
	if err := os.Mkdir(staged, 0o750); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(staged, "web.yaml"), podYAML("web", "nginx:1"))
	rename(t, dir, filepath.Join(root, "old"))
	rename(t, staged, dir)
	h.expect(freq, snap{pods: []string{"web-node1=nginx:1"}})

	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "nginx:2"))
	h.expect(0, snap{pods: []string{"web-node1=nginx:2"}})
}

func TestChangeSeenWithinOneSecond(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir, long) // the fake clock never moves: only fsnotify can tell
	h.expect(0, snap{})
	for i := range 3 {
		begin := time.Now()
		write(t, filepath.Join(dir, "web.yaml"), podYAML("web", fmt.Sprintf("nginx:%d", i)))
		h.expect(0, snap{pods: []string{fmt.Sprintf("web-node1=nginx:%d", i)}})
		if took := time.Since(begin); took > time.Second {
			t.Errorf("change %d seen after %v, want < 1s", i, took)
		}
	}
}

func TestBadManifestWaitsForQuietPeriod(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir, long)
	h.expect(0, snap{})

	write(t, filepath.Join(dir, "bad.yaml"), badYAML)
	// Without time passing, the bad file is not reported: the next Update
	// is the one of the good file.
	write(t, filepath.Join(dir, "good.yaml"), podYAML("good", "g:1"))
	h.expect(0, snap{pods: []string{"good-node1=g:1"}})

	u := h.expect(tick, snap{pods: []string{"good-node1=g:1"}, errs: []string{"bad.yaml"}})
	e := u.Errors[0]
	if e.Source != sources.File || e.Origin != filepath.Join(dir, "bad.yaml") {
		t.Errorf("error source/origin = %q %q", e.Source, e.Origin)
	}
	if want := "spec.containers[0].image: Required value"; !strings.Contains(e.Err.Error(), want) {
		t.Errorf("error = %q, want it to name %q", e.Err, want)
	}
}

func TestBadManifestLoggedOncePerContent(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir, long)
	h.expect(0, snap{})
	bad := filepath.Join(dir, "bad.yaml")
	count := func() int { return strings.Count(h.logs.String(), "Skipping bad manifest") }

	write(t, bad, badYAML)
	h.expect(tick, snap{errs: []string{"bad.yaml"}})
	if n := count(); n != 1 {
		t.Fatalf("logged %d times, want 1:\n%s", n, h.logs.String())
	}
	if logs := h.logs.String(); !strings.Contains(logs, bad) || !strings.Contains(logs, "spec.containers[0].image") {
		t.Errorf("log line does not name the file and the field:\n%s", logs)
	}

	for range 3 {
		write(t, bad, badYAML)
	}
	write(t, filepath.Join(dir, "good.yaml"), podYAML("good", "g:1"))
	h.expect(tick, snap{pods: []string{"good-node1=g:1"}, errs: []string{"bad.yaml"}})
	// Let the quiet period of any half-written read pass, then check again.
	write(t, filepath.Join(dir, "good2.yaml"), podYAML("good2", "g:2"))
	h.expect(tick, snap{pods: []string{"good-node1=g:1", "good2-node1=g:2"}, errs: []string{"bad.yaml"}})
	if n := count(); n != 1 {
		t.Fatalf("identical rewrites logged again: %d times, want 1", n)
	}

	write(t, bad, strings.Replace(badYAML, "name: broken", "name: Broken", 1))
	// The content changed but the file stays in the errors: no new Update is
	// needed unless the message changed, which it did.
	h.expect(tick, snap{pods: []string{"good-node1=g:1", "good2-node1=g:2"}, errs: []string{"bad.yaml"}})
	if n := count(); n != 2 {
		t.Fatalf("new bad content logged %d times in total, want 2", n)
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		name     string
		ignored  bool
		manifest bool
	}{
		{"web.yaml", false, true},
		{"web.yml", false, true},
		{"web.json", false, true},
		{"WEB.YAML", false, true},
		{"web.txt", false, false},
		{"web", false, false},
		{".web.yaml", true, true},
		{"..data", true, false},
		{"web.yaml~", true, false},
		{"web.yaml.swp", true, false},
		{"web.yaml.swx", true, false},
		{"web.yaml.tmp", true, false},
		{"4913", true, false},
		{"#web.yaml#", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ignored(tt.name); got != tt.ignored {
				t.Errorf("ignored = %v, want %v", got, tt.ignored)
			}
			if got := isManifestName(tt.name); got != tt.manifest {
				t.Errorf("isManifestName = %v, want %v", got, tt.manifest)
			}
		})
	}
}

// A manifest deleted and created again within RecreateWindow is an edit:
// the pod keeps its UID, and the source sends an UPDATE of its content or,
// when the content is the same, nothing. A deletion not followed by a new
// file removes the pod once the window has passed. The fake clock stands
// still unless a step moves it, so every snapshot in between shows the pod
// of the vanished file.
func TestDeleteThenCreateIsAnEdit(t *testing.T) {
	web1, web2 := podYAML("web", "nginx:1"), podYAML("web", "nginx:2")
	marker := func(t *testing.T, d string) { write(t, filepath.Join(d, "marker.yaml"), podYAML("marker", "m:1")) }
	tests := []struct {
		name string
		// replace deletes web.yaml (or its directory) and creates it again.
		replace func(t *testing.T, dir string)
		// clockStep advances the fake clock while waiting for the next
		// Update; the directory swap needs it, as its watch is set up anew.
		clockStep time.Duration
		want      snap
		// sameSeen: the content did not change, so the pod is the one
		// read first, config.seen and all.
		sameSeen bool
	}{
		{name: "rm then write, changed", replace: func(t *testing.T, d string) {
			remove(t, filepath.Join(d, "web.yaml"))
			write(t, filepath.Join(d, "web.yaml"), web2)
		}, want: snap{pods: []string{"web-node1=nginx:2"}}},
		{name: "rm then write, unchanged: nothing sent", replace: func(t *testing.T, d string) {
			remove(t, filepath.Join(d, "web.yaml"))
			write(t, filepath.Join(d, "web.yaml"), web1)
			marker(t, d) // the next Update is the marker's
		}, want: snap{pods: []string{"marker-node1=m:1", "web-node1=nginx:1"}}, sameSeen: true},
		{name: "rm then mv a new file in", replace: func(t *testing.T, d string) {
			write(t, filepath.Join(d, "web.yaml.new"), web2)
			remove(t, filepath.Join(d, "web.yaml"))
			rename(t, filepath.Join(d, "web.yaml.new"), filepath.Join(d, "web.yaml"))
		}, want: snap{pods: []string{"web-node1=nginx:2"}}},
		{name: "rm then written in two parts", replace: func(t *testing.T, d string) {
			remove(t, filepath.Join(d, "web.yaml"))
			cut := strings.Index(web2, "spec:")
			write(t, filepath.Join(d, "web.yaml"), web2[:cut]) // no containers: bad, not reported yet
			write(t, filepath.Join(d, "web.yaml"), web2)
		}, want: snap{pods: []string{"web-node1=nginx:2"}}},
		{name: "directory swapped for a new one", clockStep: RecreateWindow / 20, replace: func(t *testing.T, d string) {
			staged := d + ".new"
			if err := os.Mkdir(staged, 0o750); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(staged, "web.yaml"), web1)
			marker(t, staged)
			if err := os.RemoveAll(d); err != nil {
				t.Fatal(err)
			}
			rename(t, staged, d)
		}, want: snap{pods: []string{"marker-node1=m:1", "web-node1=nginx:1"}}, sameSeen: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "manifests")
			if err := os.Mkdir(dir, 0o750); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "web.yaml"), web1)
			h := start(t, dir, long)
			first := h.expect(0, snap{pods: []string{"web-node1=nginx:1"}}).Pods[0]
			tt.replace(t, dir)
			u := h.expect(tt.clockStep, tt.want)
			var again *v1.Pod
			for _, p := range u.Pods {
				if p.Name == "web-node1" {
					again = p
				}
			}
			if again.UID != first.UID {
				t.Errorf("UID changed from %s to %s: the re-created file must be the same pod", first.UID, again.UID)
			}
			const seen = "kubernetes.io/config.seen"
			if tt.sameSeen && again.Annotations[seen] != first.Annotations[seen] {
				t.Errorf("unchanged content was read as a new pod: %s %q, was %q", seen, again.Annotations[seen], first.Annotations[seen])
			}
			if logs := h.logs.String(); strings.Contains(logs, "Skipping") {
				t.Errorf("the replacement logged a refusal:\n%s", logs)
			}
		})
	}
}

// A deleted manifest's pod stays for RecreateWindow, then goes; a file
// created after the window is a new read (its pod gets a new config.seen).
func TestDeleteRemovesAfterWindow(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "nginx:1"))
	h := start(t, dir, long)
	first := h.expect(0, snap{pods: []string{"web-node1=nginx:1"}}).Pods[0]

	remove(t, filepath.Join(dir, "web.yaml"))
	write(t, filepath.Join(dir, "api.yaml"), podYAML("api", "api:1"))
	// The clock stands still: the pod of web.yaml is still sent.
	h.expect(0, snap{pods: []string{"api-node1=api:1", "web-node1=nginx:1"}})
	// Just short of the window, nothing changes; at the window, the pod goes.
	h.clock.Step(RecreateWindow - time.Millisecond)
	write(t, filepath.Join(dir, "api.yaml"), podYAML("api", "api:2"))
	h.expect(0, snap{pods: []string{"api-node1=api:2", "web-node1=nginx:1"}})
	h.clock.Step(time.Millisecond)
	h.expect(0, snap{pods: []string{"api-node1=api:2"}})

	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "nginx:1"))
	again := h.expect(0, snap{pods: []string{"api-node1=api:2", "web-node1=nginx:1"}}).Pods[1]
	if again.UID != first.UID {
		t.Errorf("UID %s, want the path's %s", again.UID, first.UID)
	}
}

// A manifest renamed to another name defines the same pod from another
// path: while the window of the old name runs, the new file is not
// reported as a duplicate; then the pod moves to the new file (a new UID,
// as the path is part of the identity).
func TestRenameIsNotADuplicate(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), podYAML("web", "nginx:1"))
	h := start(t, dir, long)
	first := h.expect(0, snap{pods: []string{"web-node1=nginx:1"}}).Pods[0]
	rename(t, filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml"))
	moved := h.expect(tick, snap{pods: []string{"web-node1=nginx:1"}}).Pods[0]
	if moved.UID == first.UID {
		t.Errorf("UID kept after the manifest moved to another file")
	}
	if logs := h.logs.String(); strings.Contains(logs, "Skipping duplicate") {
		t.Errorf("the rename was reported as a duplicate:\n%s", logs)
	}
}

// A file whose new content is bad and not reported yet, deleted and
// created again with the same bad content, is reported once the quiet
// period has passed, while the pod of its last good content keeps running.
func TestRecreatedBadContentIsReported(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	write(t, path, podYAML("web", "nginx:1"))
	h := start(t, dir, long)
	h.expect(0, snap{pods: []string{"web-node1=nginx:1"}})
	bad := strings.Replace(podYAML("web", "nginx:2"), "image:", "imagee:", 1)
	write(t, path, bad)
	remove(t, path)
	write(t, path, bad)
	h.expect(tick, snap{pods: []string{"web-node1=nginx:1"}, errs: []string{"web.yaml"}})
}

// A file whose name is not a manifest's is logged once, and only when it
// stays: the temp file `sed -i` writes and renames over a manifest within
// milliseconds is never logged.
func TestNonManifestNameLoggedOnceItStays(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir, long)
	h.expect(0, snap{})
	ignoredLines := func(name string) int {
		n := 0
		for _, l := range strings.Split(h.logs.String(), "\n") {
			if strings.Contains(l, "Ignoring file") && strings.Contains(l, filepath.Join(dir, name)) {
				n++
			}
		}
		return n
	}

	// The temp file is there when the scan for a.yaml lists the directory.
	write(t, filepath.Join(dir, "sedAb12Cd"), podYAML("b", "b:1"))
	write(t, filepath.Join(dir, "a.yaml"), podYAML("a", "a:1"))
	h.expect(0, snap{pods: []string{"a-node1=a:1"}})
	rename(t, filepath.Join(dir, "sedAb12Cd"), filepath.Join(dir, "b.yaml"))
	h.expect(0, snap{pods: []string{"a-node1=a:1", "b-node1=b:1"}})

	write(t, filepath.Join(dir, "notes.txt"), "not a pod")
	write(t, filepath.Join(dir, "c.yaml"), podYAML("c", "c:1"))
	h.expect(0, snap{pods: []string{"a-node1=a:1", "b-node1=b:1", "c-node1=c:1"}})
	deadline := time.Now().Add(5 * time.Second)
	for ignoredLines("notes.txt") == 0 && time.Now().Before(deadline) {
		h.clock.Step(QuietPeriod / 3)
		time.Sleep(10 * time.Millisecond)
	}
	for range 10 { // more rescans must not log it again
		h.clock.Step(QuietPeriod)
		time.Sleep(10 * time.Millisecond)
	}
	write(t, filepath.Join(dir, "d.yaml"), podYAML("d", "d:1"))
	h.expect(0, snap{pods: []string{"a-node1=a:1", "b-node1=b:1", "c-node1=c:1", "d-node1=d:1"}})
	if n := ignoredLines("notes.txt"); n != 1 {
		t.Errorf("notes.txt logged %d times, want once:\n%s", n, h.logs.String())
	}
	if n := ignoredLines("sedAb12Cd"); n != 0 {
		t.Errorf("sed's temp file logged %d times, want never:\n%s", n, h.logs.String())
	}
}
