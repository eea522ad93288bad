package podworkers

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"
)

func TestPullBackOff(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	b := newPullBackOff(clk, 10*time.Second, 5*time.Minute)
	key := pullKey{uid: "uid-a", image: "reg:5000/app:1"}

	if wait, _ := b.remaining(key); wait != 0 {
		t.Fatalf("remaining before any failure = %v, want 0", wait)
	}
	// Each failure, once its wait is over, doubles the next wait, up to max.
	for i, want := range []time.Duration{10, 20, 40, 80, 160, 300, 300} {
		want *= time.Second
		if got := b.failed(key, "boom"); got != want {
			t.Fatalf("failure %d: wait = %v, want %v", i+1, got, want)
		}
		clk.SetTime(clk.Now().Add(time.Second))
		wait, msg := b.remaining(key)
		if wait != want-time.Second || msg != "boom" {
			t.Fatalf("failure %d: remaining 1s later = %v, %q; want %v, boom", i+1, wait, msg, want-time.Second)
		}
		clk.SetTime(clk.Now().Add(want - time.Second))
		if wait, _ := b.remaining(key); wait != 0 {
			t.Fatalf("failure %d: remaining at the end of the wait = %v", i+1, wait)
		}
	}

	// Another pod's pulls of the same image, and this pod's pulls of
	// another image, have their own back-off.
	other := pullKey{uid: "uid-b", image: key.image}
	if got := b.failed(other, "x"); got != 10*time.Second {
		t.Errorf("another pod's first failure waits %v, want 10s", got)
	}
	if wait, _ := b.remaining(pullKey{uid: key.uid, image: "reg:5000/other:1"}); wait != 0 {
		t.Errorf("another image waits %v", wait)
	}

	// A success starts over.
	b.succeeded(key)
	if got := b.failed(key, "again"); got != 10*time.Second {
		t.Errorf("failure after a success waits %v, want 10s", got)
	}

	// A failure older than twice max is forgotten.
	b.failed(key, "again")
	clk.SetTime(clk.Now().Add(10*time.Minute + time.Second))
	if got := b.failed(key, "much later"); got != 10*time.Second {
		t.Errorf("failure long after the last waits %v, want 10s", got)
	}

	// forget drops a pod's entries only.
	b.failed(other, "x")
	b.forget(key.uid)
	if wait, _ := b.remaining(key); wait != 0 {
		t.Errorf("forgotten pod still waits %v", wait)
	}
	if wait, _ := b.remaining(other); wait == 0 {
		t.Error("forget dropped another pod's back-off")
	}
}

func TestPullBackOffDefaults(t *testing.T) {
	b := newPullBackOff(testingclock.NewFakePassiveClock(t0), 0, 0)
	if b.initial != 10*time.Second || b.max != 5*time.Minute {
		t.Errorf("defaults = %v..%v, want the kubelet's 10s..5m", b.initial, b.max)
	}
}

func TestImageRepo(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		image, want string
	}{
		{"busybox", "docker.io/library/busybox"},
		{"busybox:1.36", "docker.io/library/busybox"},
		{"library/busybox", "docker.io/library/busybox"},
		{"team/app:v1", "docker.io/team/app"},
		{"docker.io/busybox", "docker.io/library/busybox"},
		{"index.docker.io/team/app", "docker.io/team/app"},
		{"127.0.0.1:5000/minikubelet/busybox:pull-test", "127.0.0.1:5000/minikubelet/busybox"},
		{"localhost/minikubelet/busybox:1.35", "localhost/minikubelet/busybox"},
		{"localhost:5000/app", "localhost:5000/app"},
		{"reg.example.com/a/b/c@" + digest, "reg.example.com/a/b/c"},
		{"reg.example.com/a:v1@" + digest, "reg.example.com/a"},
		{"Reg.Example.com/app", "Reg.Example.com/app"},
		{"[::1]:5000/app", "[::1]:5000/app"},
		{"my-reg/team_a/app.x", "docker.io/my-reg/team_a/app.x"},
	}
	for _, tt := range tests {
		got, err := imageRepo(tt.image)
		if err != nil || got != tt.want {
			t.Errorf("imageRepo(%q) = %q, %v; want %q", tt.image, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "Busybox", "team/App", "a b", "busybox:", "-app", "reg:5000/", "app@sha256:short", strings.Repeat("a", 256)} {
		if got, err := imageRepo(bad); err == nil {
			t.Errorf("imageRepo(%q) = %q, want an error", bad, got)
		}
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestCredentialLookup(t *testing.T) {
	tests := []struct {
		name string
		// files maps file names in the root dir to their content.
		files map[string]string
		image string
		// want are the usernames offered, in order.
		want []string
	}{
		{
			name:  "no file",
			image: "127.0.0.1:5000/app",
		},
		{
			name:  "host with port",
			files: map[string]string{"config.json": `{"auths": {"127.0.0.1:5000": {"auth": "` + b64("u5000:p") + `"}, "127.0.0.1:5001": {"auth": "` + b64("u5001:p") + `"}, "127.0.0.1": {"auth": "` + b64("unoport:p") + `"}}}`},
			image: "127.0.0.1:5000/minikubelet/busybox:pull-test",
			want:  []string{"u5000"},
		},
		{
			name:  "a host without port does not match a registry with one",
			files: map[string]string{"config.json": `{"auths": {"reg.example.com": {"auth": "` + b64("u:p") + `"}}}`},
			image: "reg.example.com:443/app",
		},
		{
			name:  "longest path prefix first, then the host",
			files: map[string]string{"config.json": `{"auths": {"reg.example.com": {"auth": "` + b64("host:p") + `"}, "reg.example.com/team": {"auth": "` + b64("team:p") + `"}, "reg.example.com/team/app": {"auth": "` + b64("app:p") + `"}, "reg.example.com/other": {"auth": "` + b64("other:p") + `"}}}`},
			image: "reg.example.com/team/app:v1",
			want:  []string{"app", "team", "host"},
		},
		{
			name:  "a path that is no prefix does not match",
			files: map[string]string{"config.json": `{"auths": {"reg.example.com/team": {"auth": "` + b64("team:p") + `"}}}`},
			image: "reg.example.com/other/app",
		},
		{
			name:  "scheme and /v2/ are ignored",
			files: map[string]string{"config.json": `{"auths": {"https://reg.example.com/v2/": {"auth": "` + b64("u:p") + `"}}}`},
			image: "reg.example.com/app",
			want:  []string{"u"},
		},
		{
			name:  "a host glob matches one label",
			files: map[string]string{"config.json": `{"auths": {"*.example.com": {"auth": "` + b64("glob:p") + `"}}}`},
			image: "reg.example.com/app",
			want:  []string{"glob"},
		},
		{
			name:  "a host glob does not match more labels",
			files: map[string]string{"config.json": `{"auths": {"*.example.com": {"auth": "` + b64("glob:p") + `"}}}`},
			image: "a.reg.example.com/app",
		},
		{
			name:  "docker login's index.docker.io serves Docker Hub images",
			files: map[string]string{"config.json": `{"auths": {"https://index.docker.io/v1/": {"auth": "` + b64("hub:p") + `"}}}`},
			image: "busybox:1.36",
			want:  []string{"hub"},
		},
		{
			name:  "docker.io serves Docker Hub images",
			files: map[string]string{"config.json": `{"auths": {"docker.io": {"auth": "` + b64("hub:p") + `"}}}`},
			image: "index.docker.io/team/app",
			want:  []string{"hub"},
		},
		{
			name:  "index.docker.io serves no other registry",
			files: map[string]string{"config.json": `{"auths": {"index.docker.io": {"auth": "` + b64("hub:p") + `"}}}`},
			image: "reg.example.com/app",
		},
		{
			name:  "username and password",
			files: map[string]string{"config.json": `{"auths": {"reg.example.com": {"username": "plain", "password": "p"}}}`},
			image: "reg.example.com/app",
			want:  []string{"plain"},
		},
		{
			name:  "auth wins over username and password",
			files: map[string]string{"config.json": `{"auths": {"reg.example.com": {"auth": "` + b64("fromauth:p") + `", "username": "plain", "password": "p"}}}`},
			image: "reg.example.com/app",
			want:  []string{"fromauth"},
		},
		{
			name:  "two locations of one key",
			files: map[string]string{"config.json": `{"auths": {"https://reg.example.com": {"auth": "` + b64("a:p") + `"}, "reg.example.com": {"auth": "` + b64("b:p") + `"}}}`},
			image: "reg.example.com/app",
			want:  []string{"a", "b"},
		},
		{
			name:  "legacy .dockercfg",
			files: map[string]string{".dockercfg": `{"reg.example.com": {"auth": "` + b64("legacy:p") + `", "email": "x@example.com"}}`},
			image: "reg.example.com/app",
			want:  []string{"legacy"},
		},
		{
			name: "config.json wins over .dockercfg",
			files: map[string]string{
				"config.json": `{"auths": {"reg.example.com": {"auth": "` + b64("new:p") + `"}}}`,
				".dockercfg":  `{"reg.example.com": {"auth": "` + b64("legacy:p") + `"}}`,
			},
			image: "reg.example.com/app",
			want:  []string{"new"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			k, err := readCredentials(root)
			if err != nil {
				t.Fatalf("readCredentials: %v", err)
			}
			repo, err := imageRepo(tt.image)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range k.lookup(repo) {
				got = append(got, c.Username)
				if c.Password != "p" {
					t.Errorf("%s: password %q, want p", c.Username, c.Password)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("credentials for %s = %v, want %v", tt.image, got, tt.want)
			}
		})
	}
}

func TestCredentialFileErrors(t *testing.T) {
	tests := []struct {
		name, file, content string
		// want are parts of the error message.
		want []string
	}{
		{"not JSON", "config.json", `{"auths": {`, []string{"config.json", "unexpected end of JSON input", "fix or remove the file"}},
		{"auths not an object", "config.json", `{"auths": []}`, []string{"config.json", "cannot unmarshal array"}},
		{"auth not base64", "config.json", `{"auths": {"reg:5000": {"auth": "%%%"}}}`, []string{"config.json", `auths["reg:5000"].auth`, "not base64"}},
		{"auth without a colon", "config.json", `{"auths": {"reg:5000": {"auth": "` + b64("justuser") + `"}}}`, []string{"config.json", `auths["reg:5000"].auth`, "no user:password"}},
		{"bad location", "config.json", `{"auths": {"reg:port/x": {"auth": "` + b64("u:p") + `"}}}`, []string{"config.json", `auths["reg:port/x"]`}},
		{"legacy not JSON", ".dockercfg", `nope`, []string{".dockercfg", "invalid character"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, tt.file)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := readCredentials(root)
			if err == nil {
				t.Fatal("readCredentials: no error")
			}
			for _, w := range append(tt.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// pullRecorder is the fake image service with the credentials of every
// pull attempt recorded; failures makes that many pulls fail first.
type pullRecorder struct {
	*critest.FakeImageService
	mu       sync.Mutex
	auths    []*runtimeapi.AuthConfig
	failures int
}

func (p *pullRecorder) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sb *runtimeapi.PodSandboxConfig) (string, error) {
	p.mu.Lock()
	p.auths = append(p.auths, auth)
	fail := p.failures > 0
	p.failures--
	p.mu.Unlock()
	if fail {
		return "", errors.New("rpc error: code = Unknown desc = 401 Unauthorized")
	}
	return p.FakeImageService.PullImage(ctx, image, auth, sb)
}

func (p *pullRecorder) users() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, a := range p.auths {
		if a == nil {
			out = append(out, "<anonymous>")
		} else {
			out = append(out, a.Username+":"+a.Password)
		}
	}
	return out
}

// withPullRecorder replaces the fixture's syncer with one whose image
// service records pulls.
func withPullRecorder(f *syncerFixture) *pullRecorder {
	rec := &pullRecorder{FakeImageService: f.img}
	cfg := f.s.cfg
	cfg.Images = rec
	f.s = NewSyncer(cfg)
	return rec
}

func writeDockerConfig(t *testing.T, root, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A failed pull reports ErrImagePull and asks for a sync when the back-off
// ends; a sync within it reports ImagePullBackOff with the time left and
// pulls nothing; the pod's other containers start regardless.
func TestSyncPodImagePullBackOff(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-side"})
	pod := newPod("web", []string{"app", "side"})
	f.img.InjectError("PullImage", errors.New("not found"))

	res, err := f.sync(t, pod)
	if err != nil || res.RequeueAfter != 10*time.Second {
		t.Fatalf("first sync = %+v, %v; want no error, requeue after 10s", res, err)
	}
	w := f.status.last(t).waiting["app"]
	if w.Reason != "ErrImagePull" || !strings.Contains(w.Message, `"img-app"`) || !strings.Contains(w.Message, "not found") {
		t.Errorf("after the failure: waiting = %+v, want ErrImagePull naming the image and the error", w)
	}
	if got := runningNames(f.cached(t, pod)); !slices.Equal(got, []string{"side"}) {
		t.Errorf("running = %v, want the other container running", got)
	}

	// 3s later (f.sync steps 1s): backing off, 6s to go.
	f.clock.Step(2 * time.Second)
	f.resetCalls()
	res = f.mustSync(t, pod)
	if slices.Contains(f.imageCalls(), "PullImage") {
		t.Error("pulled while backing off")
	}
	w = f.status.last(t).waiting["app"]
	if w.Reason != "ImagePullBackOff" || !strings.HasPrefix(w.Message, `Back-off pulling image "img-app"`) ||
		!strings.Contains(w.Message, "next attempt in 7s") || !strings.Contains(w.Message, "not found") {
		t.Errorf("while backing off: waiting = %+v", w)
	}
	if res.RequeueAfter != 7*time.Second {
		t.Errorf("requeue after %v, want the 7s left", res.RequeueAfter)
	}

	// At the end of the back-off it pulls again; a second failure waits 20s,
	// and the worker looks in after 10s to report the back-off.
	f.clock.Step(6 * time.Second)
	f.resetCalls()
	f.img.InjectError("PullImage", errors.New("not found"))
	res = f.mustSync(t, pod)
	if !slices.Contains(f.imageCalls(), "PullImage") {
		t.Error("no pull at the end of the back-off")
	}
	if w := f.status.last(t).waiting["app"]; w.Reason != "ErrImagePull" || res.RequeueAfter != 10*time.Second {
		t.Errorf("second failure: waiting = %+v, requeue %v; want ErrImagePull, 10s", w, res.RequeueAfter)
	}
	f.clock.Step(9 * time.Second)
	res = f.mustSync(t, pod)
	if w := f.status.last(t).waiting["app"]; w.Reason != "ImagePullBackOff" || !strings.Contains(w.Message, "in 10s") || res.RequeueAfter != 10*time.Second {
		t.Errorf("10s into the 20s back-off: waiting = %+v, requeue %v", w, res.RequeueAfter)
	}

	// Once the back-off is over and the pull works, the container runs.
	f.clock.Step(9 * time.Second)
	res = f.mustSync(t, pod)
	if got := runningNames(f.cached(t, pod)); !slices.Equal(got, []string{"app", "side"}) {
		t.Errorf("running = %v, want both", got)
	}
	if w, ok := f.status.last(t).waiting["app"]; ok || res.RequeueAfter != 0 {
		t.Errorf("after the pull: waiting = %+v, requeue %v", w, res.RequeueAfter)
	}
}

// Never with a missing image and a malformed image name are errors no
// pull mends: no pull is tried, and the sync fails.
func TestSyncPodImageErrors(t *testing.T) {
	tests := []struct {
		name, image string
		policy      v1.PullPolicy
		wantReason  string
	}{
		{"never pull", "img-app", v1.PullNever, "ErrImageNeverPull"},
		{"invalid name", "Img-App:", v1.PullIfNotPresent, "InvalidImageName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSyncer(t)
			pod := newPod("web", []string{"app"})
			pod.Spec.Containers[0].Image, pod.Spec.Containers[0].ImagePullPolicy = tt.image, tt.policy
			if _, err := f.sync(t, pod); err == nil {
				t.Error("SyncPod: no error")
			}
			if slices.Contains(f.imageCalls(), "PullImage") {
				t.Error("pulled")
			}
			if w := f.status.last(t).waiting["app"]; w.Reason != tt.wantReason || !strings.Contains(w.Message, tt.image) {
				t.Errorf("waiting = %+v, want %s naming %s", w, tt.wantReason, tt.image)
			}
		})
	}
}

// The pull gets the credentials of <root-dir>/config.json for the image's
// registry, tries the next match when one fails, reads the file again at
// each attempt, and reports a malformed file by name.
func TestSyncPodPullCredentials(t *testing.T) {
	image := "reg.example.com:5000/team/app:v1"
	newApp := func() *v1.Pod {
		pod := newPod("web", []string{"app"})
		pod.Spec.Containers[0].Image = image
		return pod
	}

	t.Run("no config pulls anonymously", func(t *testing.T) {
		f := newSyncer(t)
		rec := withPullRecorder(f)
		f.mustSync(t, newApp())
		if got := rec.users(); !slices.Equal(got, []string{"<anonymous>"}) {
			t.Errorf("pulls = %v", got)
		}
	})

	t.Run("most specific first, then the next", func(t *testing.T) {
		f := newSyncer(t)
		rec := withPullRecorder(f)
		rec.failures = 1
		writeDockerConfig(t, f.root, `{"auths": {
			"reg.example.com:5000": {"auth": "`+b64("host:hp")+`"},
			"reg.example.com:5000/team": {"username": "team", "password": "tp"},
			"other.example.com": {"auth": "`+b64("other:op")+`"}}}`)
		pod := newApp()
		f.mustSync(t, pod)
		if got := rec.users(); !slices.Equal(got, []string{"team:tp", "host:hp"}) {
			t.Errorf("pulls = %v, want the team's credentials, then the host's", got)
		}
		if got := runningNames(f.cached(t, pod)); !slices.Equal(got, []string{"app"}) {
			t.Errorf("running = %v", got)
		}
	})

	t.Run("malformed file, then fixed", func(t *testing.T) {
		f := newSyncer(t)
		rec := withPullRecorder(f)
		writeDockerConfig(t, f.root, `{"auths": {"reg.example.com:5000": {"auth": "`)
		pod := newApp()
		res := f.mustSync(t, pod)
		w := f.status.last(t).waiting["app"]
		if w.Reason != "ErrImagePull" || !strings.Contains(w.Message, filepath.Join(f.root, "config.json")) || res.RequeueAfter != 10*time.Second {
			t.Errorf("waiting = %+v, requeue %v; want ErrImagePull naming the file, retry in 10s", w, res.RequeueAfter)
		}
		if got := rec.users(); len(got) != 0 {
			t.Errorf("pulled %v with a malformed config", got)
		}

		writeDockerConfig(t, f.root, `{"auths": {"reg.example.com:5000": {"auth": "`+b64("fixed:fp")+`"}}}`)
		f.clock.Step(10 * time.Second)
		f.mustSync(t, pod)
		if got := rec.users(); !slices.Equal(got, []string{"fixed:fp"}) {
			t.Errorf("pulls = %v, want one with the fixed file's credentials", got)
		}
		if got := runningNames(f.cached(t, pod)); !slices.Equal(got, []string{"app"}) {
			t.Errorf("running = %v", got)
		}
	})
}
