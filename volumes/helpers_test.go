package volumes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"golang.org/x/sys/unix"
)

// t0 is the fake clock's time: version directories are named
// ..2026_11_21_10_04_05.<random>.
var t0 = time.Date(2026, 11, 21, 10, 4, 5, 0, time.UTC)

// requireRoot skips a test that mounts filesystems when it cannot.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs or a bind mount needs root (CAP_SYS_ADMIN); run the unit tests as root, as `make unit` does on the project's machines")
	}
}

// testCtx is a context with a test logger.
func testCtx(t *testing.T) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	return ctx
}

// newTestManager returns a Manager rooted in a fresh temp dir whose pods
// are torn down when the test ends (before the temp dir is removed, so
// that no mount is left under it).
func newTestManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	if cfg.RootDir == "" {
		cfg.RootDir = t.TempDir()
	}
	if cfg.Clock == nil {
		cfg.Clock = testingclock.NewFakeClock(t0)
	}
	m := New(cfg)
	t.Cleanup(func() {
		entries, _ := os.ReadDir(filepath.Join(cfg.RootDir, "pods"))
		for _, e := range entries {
			if err := m.TearDownPod(context.Background(), types.UID(e.Name())); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	return m
}

// testPod is a pod with the given volumes and one container "main" that
// mounts none; opts change it.
func testPod(uid string, vols []v1.Volume, opts ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: types.UID(uid)},
		Spec: v1.PodSpec{
			Volumes:    vols,
			Containers: []v1.Container{{Name: "main", Image: "busybox"}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func emptyDirVolume(name string, medium v1.StorageMedium) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: medium}}}
}

func hostPathVolume(name, path string, t v1.HostPathType) v1.Volume {
	hp := &v1.HostPathVolumeSource{Path: path}
	if t != v1.HostPathUnset {
		hp.Type = &t
	}
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{HostPath: hp}}
}

// mountsAt counts the mounts on path in this process's mount table, and
// returns the super options of the last.
func mountsAt(t *testing.T, path string) (int, string) {
	t.Helper()
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n, opts := 0, ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || unescapeMountPath(f[4]) != real {
			continue
		}
		n++
		opts = f[len(f)-1]
	}
	return n, opts
}

// mountsUnder lists the mount points at or under dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	points, err := mountPointsUnder(real)
	if err != nil {
		t.Fatal(err)
	}
	return points
}

// fakeObjects is an objectSource over maps keyed by namespace/name.
type fakeObjects struct {
	mu         sync.Mutex
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	token      string
	tokenReqs  []*authenticationv1.TokenRequest
}

var _ objectSource = (*fakeObjects)(nil)

func (f *fakeObjects) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cm, ok := f.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f *fakeObjects) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (f *fakeObjects) GetServiceAccountToken(_ context.Context, ns, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokenReqs = append(f.tokenReqs, req)
	out := req.DeepCopy()
	out.Status.Token = f.token + ":" + ns + "/" + name
	return out, nil
}

// readVolumeFile reads a file of a content volume through its
// user-visible path.
func readVolumeFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// umask sets the process's umask and returns the old one.
func umask(mask int) int { return unix.Umask(mask) }
