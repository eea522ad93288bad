package podworkers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/events"
	"github.com/minikubelet/minikubelet/internal/imageref"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// Waiting reasons of a container whose image is not there yet, as the
// kubelet names them.
const (
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
	reasonErrImageNeverPull = "ErrImageNeverPull"
	reasonImageInspectError = "ImageInspectError"
	reasonInvalidImageName  = "InvalidImageName"
)

// The kubelet's image pull back-off: 10s doubling to 5 minutes.
const (
	defaultPullBackOffInitial = 10 * time.Second
	defaultPullBackOffMax     = 5 * time.Minute
)

// imageWant is an image a pod needs: a container's, or an image volume's.
type imageWant struct {
	image  string
	policy v1.PullPolicy
	// ref is what the pull's events are about: the container, or, for an
	// image volume, the pod (as the kubelet records them).
	ref *v1.ObjectReference
	// logKey and logName name the container or volume in log lines.
	logKey, logName string
}

// containerImage is the image of container c of pod.
func containerImage(pod *v1.Pod, c *v1.Container) imageWant {
	return imageWant{image: c.Image, policy: c.ImagePullPolicy, ref: events.Container(pod, c), logKey: "container", logName: c.Name}
}

// ensureImage returns the image reference to create a container or mount
// an image volume of pod from, pulling the image when its pull policy asks
// for it (Always: every time; IfNotPresent: when missing; Never: not at
// all).
//
// A failed pull is not an error of the sync: it is reported as
// ErrImagePull, and pulls of that image for that pod then back off (see
// pullBackOff); while they do, the container waits with ImagePullBackOff.
// Either way the result's retryAfter says when the worker should look
// again: at the back-off's end, and no later than the initial back-off, so
// that the remaining time it reports stays current. Errors that no retry
// of the pull can mend (a bad image name, Never with a missing image) are
// returned as errors.
func (s *Syncer) ensureImage(ctx context.Context, pod *v1.Pod, want imageWant, sandboxConfig *runtimeapi.PodSandboxConfig) imageResult {
	logger := klog.FromContext(ctx).WithValues(want.logKey, want.logName, "image", want.image)
	image := want.image
	event := func(eventType, reason, messageFmt string, args ...any) {
		s.cfg.Events.Eventf(want.ref, eventType, reason, messageFmt, args...)
	}
	repo, err := imageRepo(image)
	if err != nil {
		return imageResult{waiting: kubecontainer.Waiting{Reason: reasonInvalidImageName, Message: err.Error()}, err: err}
	}
	spec := &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: image}
	resp, err := s.cfg.Images.ImageStatus(ctx, spec, false)
	if err != nil {
		err = fmt.Errorf("inspect image %q: %w", image, err)
		return imageResult{waiting: kubecontainer.Waiting{Reason: reasonImageInspectError, Message: err.Error()}, err: err}
	}
	present := resp.GetImage() != nil
	switch {
	case want.policy == v1.PullNever && !present:
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
		event(v1.EventTypeWarning, events.ErrImageNeverPull, "%s", msg)
		return imageResult{waiting: kubecontainer.Waiting{Reason: reasonErrImageNeverPull, Message: msg}, err: errors.New(msg)}
	case present && want.policy != v1.PullAlways:
		event(v1.EventTypeNormal, events.Pulled, "Container image %q already present on machine and can be accessed by the pod", image)
		return imageResult{ref: resp.Image.Id, image: resp.Image}
	}

	key := pullKey{uid: pod.UID, image: image}
	if wait, lastErr := s.pulls.remaining(key); wait > 0 {
		msg := fmt.Sprintf("Back-off pulling image %q (next attempt in %s): %s: %s", image, ceilSeconds(wait), reasonErrImagePull, lastErr)
		event(v1.EventTypeNormal, events.BackOff, "Back-off pulling image %q", image)
		return imageResult{waiting: kubecontainer.Waiting{Reason: reasonImagePullBackOff, Message: msg}, retryAfter: min(wait, s.pulls.initial)}
	}
	logger.V(2).Info("Pulling image", "pullPolicy", want.policy, "present", present)
	event(v1.EventTypeNormal, events.Pulling, "Pulling image %q", image)
	start := s.cfg.Clock.Now()
	ref, err := s.pullImage(ctx, pod, spec, repo, sandboxConfig)
	if err != nil {
		if ctx.Err() != nil {
			// The sync was cancelled (the pod is being killed): no
			// verdict on the registry.
			return imageResult{err: fmt.Errorf("pull image %q: %w (%w)", image, ctx.Err(), err)}
		}
		msg := oneLine(err.Error())
		window := s.pulls.failed(key, msg)
		logger.Error(err, "Pulling image failed; backing off", "backOff", window)
		event(v1.EventTypeWarning, events.Failed, "Failed to pull image %q: %s", image, msg)
		event(v1.EventTypeWarning, events.Failed, "Error: %s", reasonErrImagePull)
		return imageResult{
			waiting:    kubecontainer.Waiting{Reason: reasonErrImagePull, Message: fmt.Sprintf("Failed to pull image %q: %s", image, msg)},
			retryAfter: min(window, s.pulls.initial),
		}
	}
	s.pulls.succeeded(key)
	took := s.cfg.Clock.Since(start).Round(time.Millisecond)
	logger.V(2).Info("Pulled image", "imageRef", ref, "duration", took)
	event(v1.EventTypeNormal, events.Pulled, "Successfully pulled image %q in %v", image, took)
	return imageResult{ref: ref}
}

// pullImage pulls spec with the pod's imagePullSecrets' and then the
// node's registry credentials for repo, the image's normalized repository.
// As the kubelet, it tries each matching credential in turn, most specific
// first, and pulls anonymously only when none matches.
func (s *Syncer) pullImage(ctx context.Context, pod *v1.Pod, spec *runtimeapi.ImageSpec, repo string, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	creds, err := readCredentials(s.cfg.RootDir)
	if err != nil {
		return "", err
	}
	matched := append(s.podCredentials(ctx, pod, repo), creds.lookup(repo)...)
	if len(matched) == 0 {
		return s.cfg.Images.PullImage(ctx, spec, nil, sandboxConfig)
	}
	var errs []error
	for _, c := range matched {
		ref, err := s.cfg.Images.PullImage(ctx, spec, &runtimeapi.AuthConfig{Username: c.Username, Password: c.Password}, sandboxConfig)
		if err == nil {
			return ref, nil
		}
		errs = append(errs, fmt.Errorf("with the credentials for %s: %w", c.location, err))
	}
	if len(errs) == 1 {
		return "", errs[0]
	}
	return "", errors.Join(errs...)
}

// pullKey identifies a pull back-off: the kubelet keeps one per pod and
// image.
type pullKey struct {
	uid   types.UID
	image string
}

// pullBackOff spaces out the pulls of an image that failed to pull: after
// a failure the next pull of that image for that pod waits initial, and
// after each further failure twice as long as before, up to max. A
// successful pull forgets the back-off, and so does a failure older than
// twice max (as the kubelet's flowcontrol.Backoff). Safe for concurrent
// use.
type pullBackOff struct {
	clock   clock.PassiveClock
	initial time.Duration
	max     time.Duration

	mu      sync.Mutex
	entries map[pullKey]*pullBackOffEntry
}

type pullBackOffEntry struct {
	// failedAt is when the last pull failed; window is how long after it
	// no pull is tried.
	failedAt time.Time
	window   time.Duration
	// lastErr is that failure's message, repeated while backing off.
	lastErr string
}

// newPullBackOff returns a pullBackOff; zero durations get the kubelet's.
func newPullBackOff(c clock.PassiveClock, initial, maxWait time.Duration) *pullBackOff {
	if initial <= 0 {
		initial = defaultPullBackOffInitial
	}
	if maxWait <= 0 {
		maxWait = defaultPullBackOffMax
	}
	return &pullBackOff{clock: c, initial: initial, max: max(maxWait, initial), entries: map[pullKey]*pullBackOffEntry{}}
}

// remaining returns how long pulls of key must still wait, and the error of
// the failure that started the wait.
func (b *pullBackOff) remaining(key pullKey) (time.Duration, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return 0, ""
	}
	return max(0, e.window-b.clock.Since(e.failedAt)), e.lastErr
}

// failed records a failed pull of key with its error message and returns
// how long the next pull waits.
func (b *pullBackOff) failed(key pullKey, msg string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	for k, e := range b.entries {
		if now.Sub(e.failedAt) > 2*b.max {
			delete(b.entries, k) // expired, as the kubelet's back-off GC
		}
	}
	e, ok := b.entries[key]
	if !ok {
		e = &pullBackOffEntry{window: b.initial}
		b.entries[key] = e
	} else {
		e.window = min(2*e.window, b.max)
	}
	e.failedAt, e.lastErr = now, msg
	return e.window
}

// succeeded forgets the back-off of key.
func (b *pullBackOff) succeeded(key pullKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// forget drops every back-off of the pod uid (the pod is gone).
func (b *pullBackOff) forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if k.uid == uid {
			delete(b.entries, k)
		}
	}
}

// Registry credentials, read as the kubelet reads them for a node: the
// docker config <root-dir>/config.json ({"auths": {location: entry}}), or,
// when that file does not exist, the legacy <root-dir>/.dockercfg
// ({location: entry}). The kubelet also searches its working directory,
// $HOME/.docker and /.docker; the agent reads its root dir only, so that
// what it uses is in one place. Unlike the kubelet, which skips a file it
// cannot parse, a malformed file is an error naming it: a pull with
// credentials silently dropped fails later with a less useful "401".
//
// The files are read at every pull (they are small, and pulls are rare and
// slow), so an edit takes effect at the next attempt.
const (
	dockerConfigJSON   = "config.json"
	legacyDockerConfig = ".dockercfg"
)

// credential is one registry login of the docker config.
type credential struct {
	Username, Password string
	// location is the config's key the credential came from (for errors;
	// never the secret).
	location string
}

// dockerConfigEntry is one location of a docker config: "auth" (base64 of
// user:password) or "username" and "password"; auth wins when both are
// given, as in the kubelet.
type dockerConfigEntry struct {
	Auth     string `json:"auth"`
	Username string `json:"username"`
	Password string `json:"password"`
}

// keyring holds the credentials of a docker config by location key: host
// (with port) and optional path, as the kubelet's BasicDockerKeyring.
type keyring struct {
	// keys are sorted in reverse, so that of two keys where one is a
	// prefix of the other the longer one (the more specific) comes first.
	keys  []string
	creds map[string][]credential
}

// readCredentials reads the node's docker config from rootDir:
// config.json, else .dockercfg. No file is no credentials.
func readCredentials(rootDir string) (*keyring, error) {
	for _, f := range []struct {
		name      string
		withAuths bool
	}{{dockerConfigJSON, true}, {legacyDockerConfig, false}} {
		path := filepath.Join(rootDir, f.name)
		data, err := os.ReadFile(path) //nolint:gosec // G304: the node's own credential files in --root-dir
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read registry credentials: %w", err)
		}
		return parseDockerConfig(path, data, f.withAuths)
	}
	return &keyring{}, nil
}

// parseDockerConfig parses a config.json (withAuths) or a .dockercfg; path
// only names the file in errors.
func parseDockerConfig(path string, data []byte, withAuths bool) (*keyring, error) {
	var entries map[string]dockerConfigEntry
	field := "auths"
	if withAuths {
		var cfg struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("registry credentials %s: %w (want {\"auths\": {\"registry.example:5000\": {\"auth\": \"<base64 of user:password>\"}}}; fix or remove the file)", path, err)
		}
		entries = cfg.Auths
	} else {
		field = "."
		if err := json.Unmarshal(data, &entries); err != nil {
			return nil, fmt.Errorf("registry credentials %s: %w (want {\"registry.example:5000\": {\"auth\": \"<base64 of user:password>\"}}; fix or remove the file)", path, err)
		}
	}
	locations := make([]string, 0, len(entries))
	for loc := range entries {
		locations = append(locations, loc)
	}
	sort.Strings(locations) // a deterministic order for keys several locations share
	k := &keyring{creds: map[string][]credential{}}
	for _, loc := range locations {
		e := entries[loc]
		c := credential{Username: e.Username, Password: e.Password, location: loc}
		if e.Auth != "" {
			user, password, err := decodeAuth(e.Auth)
			if err != nil {
				return nil, fmt.Errorf("registry credentials %s: %s[%q].auth: %w", path, field, loc, err)
			}
			c.Username, c.Password = user, password
		}
		key, err := credentialKey(loc)
		if err != nil {
			return nil, fmt.Errorf("registry credentials %s: %s[%q]: %w", path, field, loc, err)
		}
		if _, seen := k.creds[key]; !seen {
			k.keys = append(k.keys, key)
		}
		k.creds[key] = append(k.creds[key], c)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(k.keys)))
	return k, nil
}

// decodeAuth decodes a docker config "auth": base64 of user:password.
func decodeAuth(auth string) (string, string, error) {
	b, err := base64.StdEncoding.DecodeString(auth)
	if err != nil {
		return "", "", fmt.Errorf("not base64 (want base64 of user:password): %w", err)
	}
	user, password, ok := strings.Cut(string(b), ":")
	if !ok {
		return "", "", errors.New("decodes to no user:password pair")
	}
	return user, password, nil
}

// credentialKey turns a config location ("https://reg:5000/v2/team",
// "reg:5000", "*.example.com/x") into the kubelet's key: host[:port] and
// the path without a /v1 or /v2 prefix.
func credentialKey(loc string) (string, error) {
	value := loc
	if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
		value = "https://" + value
	}
	u, err := url.Parse(value)
	if err != nil {
		return "", fmt.Errorf("not a registry location: %w", err)
	}
	path := u.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path == "" || path == "/" {
		return u.Host, nil
	}
	return u.Host + path, nil
}

// lookup returns the credentials for repo, a normalized repository name
// (host/path, no tag): those of every key whose host matches repo's (with
// the same port; a key's host part may be a glob such as *.example.com)
// and whose path is a prefix of repo's path, most specific first. Docker
// Hub's images also get the credentials of index.docker.io when nothing
// else matches ("docker.io" and "https://index.docker.io/v1/" are both
// what `docker login` writes for it).
func (k *keyring) lookup(repo string) []credential {
	var out []credential
	for _, key := range k.keys {
		if urlsMatch(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && strings.HasPrefix(repo, imageref.DockerHubDomain+"/") {
		out = append(out, k.creds[imageref.DockerHubLegacyDomain]...)
	}
	return out
}

// urlsMatch is the kubelet's credentialprovider.URLsMatchStr: same port,
// same number of host labels, each matching as a glob, and the key's path a
// string prefix of the target's path.
func urlsMatch(key, target string) bool {
	g, err := url.Parse("https://" + key)
	if err != nil {
		return false
	}
	t, err := url.Parse("https://" + target)
	if err != nil {
		return false
	}
	gParts, gPort := splitHost(g.Host)
	tParts, tPort := splitHost(t.Host)
	if gPort != tPort || len(gParts) != len(tParts) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i := range gParts {
		if ok, err := filepath.Match(gParts[i], tParts[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// imageRepo returns the normalized repository of an image reference, as
// the kubelet matches credentials against it: "busybox:1.36" is
// "docker.io/library/busybox", "reg:5000/team/app@sha256:..." is
// "reg:5000/team/app". A reference that does not parse is an error.
func imageRepo(image string) (string, error) {
	r, err := imageref.ParseNormalized(image)
	if err != nil {
		return "", fmt.Errorf("couldn't parse image name %q: %w", image, err)
	}
	return r.Name(), nil
}

// ceilSeconds rounds d up to whole seconds, so a wait is never shown as 0s.
func ceilSeconds(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// oneLine joins the lines of a message (errors.Join makes several).
func oneLine(s string) string {
	return strings.ReplaceAll(s, "\n", "; ")
}
